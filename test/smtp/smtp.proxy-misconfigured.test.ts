/**
 * A TRUSTED_PROXIES that misses the real proxy is loud: every PROXY line it sends is refused,
 * counted in `pigeonhole_smtp_proxy_lines_total`, warned about (naming the peer) at most once
 * a minute, and /ready fails while every PROXY line of the last minute was refused. One
 * accepted line in that minute keeps the server ready.
 *
 * TRUSTED_PROXIES names 127.0.0.9; the "real proxy" connects from 127.0.0.8 (Linux loopback
 * answers all of 127/8). Time is a ManualClock the test moves.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { ManualClock } from '../../src/clock.ts'
import { describeForBackends, startTestServer, type TestServer } from '../support/harness.ts'
import { SmtpClient } from '../support/smtp.ts'
import { until } from '../support/wait.ts'

const CONFIGURED_PROXY = '127.0.0.9'
const REAL_PROXY = '127.0.0.8'
const TOKEN = 'metrics-token-0123456789abcdef'
const proxyLine = (client: string) => `PROXY TCP4 ${client} 127.0.0.1 40000 25\r\n`

let server: TestServer
const clock = new ManualClock('2026-03-01T10:00:00.000Z')

/** One connection from `from` that opens with a PROXY line for `client`; resolves once the server has closed it or greeted it. */
async function connectWithLine(from: string, client = '203.0.113.7') {
  const { client: smtp, greeting } = await SmtpClient.open(server.app.smtpPort, from, '127.0.0.1', proxyLine(client))
  if (greeting.code === 220) {
    // Greeted before the line was read: the line is answered now.
    const reply = await smtp.next()
    await smtp.closed()
    return [greeting, reply]
  }
  await smtp.closed()
  return [greeting]
}

async function proxyLines(): Promise<Record<string, number>> {
  const text = await (await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).text()
  const counts: Record<string, number> = {}
  for (const [, outcome, n] of text.matchAll(/^pigeonhole_smtp_proxy_lines_total\{outcome="(\w+)"\} (\d+)$/gm))
    counts[outcome!] = Number(n)
  return counts
}

const ready = async () => {
  const response = await fetch(`${server.url}/ready`)
  return {
    status: response.status,
    check: ((await response.json()) as { checks: Record<string, string> }).checks.proxy_lines,
  }
}
const warnings = () => server.logs.filter((line) => line.event === 'smtp_proxy_line_refused')

describeForBackends(
  ['sqlite', 'postgres'],
  "its clients connect from chosen loopback addresses, which the pair's proxy replaces with its own, and PROXY-line trust is per machine",
  'a proxy missing from TRUSTED_PROXIES',
  () => {
    beforeAll(async () => {
      server = await startTestServer({
        clock,
        env: {
          SMTP_PROXY_PROTOCOL: 'on',
          TRUSTED_PROXIES: `${CONFIGURED_PROXY}/32`,
          METRICS_TOKEN: TOKEN,
          SMTP_MAX_CLIENTS_PER_ADDRESS: '50',
        },
      })
    })
    afterAll(() => server.stop())

    test('before any PROXY line: ready, every outcome at 0', async () => {
      expect(await ready()).toEqual({ status: 200, check: 'ok' })
      expect(await proxyLines()).toEqual({ accepted: 0, refused: 0, refused_repeated: 0 })
    })

    test('its lines are refused with 421, counted, warned about once a minute naming the peer, and /ready fails', async () => {
      for (let i = 0; i < 3; i++) {
        const replies = await connectWithLine(REAL_PROXY)
        expect(replies.at(-1)!.code).toBe(421)
      }
      await until(async () => (await proxyLines()).refused === 3, 'three refused lines counted')
      // One warning for the three: the peer, how many, and what to change.
      expect(warnings()).toHaveLength(1)
      expect(warnings()[0]).toMatchObject({
        level: 'warn',
        remote: REAL_PROXY,
        refused: 1,
        trusted_proxies: `${CONFIGURED_PROXY}/32`,
      })
      expect(await ready()).toEqual({ status: 503, check: 'failed' })

      // Within the minute: counted, not warned again.
      clock.advance(59_000)
      await connectWithLine(REAL_PROXY)
      await until(async () => (await proxyLines()).refused === 4, 'the fourth refusal counted')
      expect(warnings()).toHaveLength(1)

      // A minute after the last warning: one more, carrying the refusals since.
      clock.advance(1_000)
      await connectWithLine(REAL_PROXY)
      await until(() => warnings().length === 2, 'the second warning')
      expect(warnings()[1]).toMatchObject({ remote: REAL_PROXY, refused: 4 }) // the three since the first warning, and this one

      // A minute with no PROXY line at all: nothing to judge by, ready again.
      clock.advance(60_000)
      expect(await ready()).toEqual({ status: 200, check: 'ok' })
    })

    test('one accepted line in the minute keeps it ready: a stranger sending a PROXY line is not a broken deployment', async () => {
      clock.advance(120_000)
      const { client, greeting } = await SmtpClient.open(
        server.app.smtpPort,
        CONFIGURED_PROXY,
        '127.0.0.1',
        proxyLine('203.0.113.8'),
      )
      expect(greeting.code).toBe(220)
      // The client behind the proxy tries a line of its own: refused, counted apart, no warning.
      expect((await client.command(proxyLine('198.51.100.1').trimEnd())).code).toBe(421)
      await client.closed()
      const warned = warnings().length
      await connectWithLine('127.0.0.6')
      await until(async () => (await proxyLines()).refused === 6, 'the stranger counted')
      expect(await proxyLines()).toMatchObject({ accepted: 1, refused_repeated: 1 })
      expect(warnings()).toHaveLength(warned + 1) // the stranger is named
      expect(await ready()).toEqual({ status: 200, check: 'ok' })
    })
  },
)

test('with SMTP_PROXY_PROTOCOL off the check is not configured', async () => {
  const plain = await startTestServer()
  try {
    const body = (await (await fetch(`${plain.url}/ready`)).json()) as { checks: Record<string, string> }
    expect(body.checks.proxy_lines).toBe('not_configured')
  } finally {
    await plain.stop()
  }
})

describeForBackends(
  ['sqlite', 'postgres'],
  "its client connects from a chosen loopback address, which the pair's proxy replaces with its own",
  'a PROXY line before a held greeting',
  () => {
    test('a line that arrives before the greeting (SMTP_GREETING_DELAY_MS) is a refused line too', async () => {
      const delayed = await startTestServer({
        env: {
          SMTP_PROXY_PROTOCOL: 'on',
          TRUSTED_PROXIES: `${CONFIGURED_PROXY}/32`,
          METRICS_TOKEN: TOKEN,
          SMTP_GREETING_DELAY_MS: '300',
        },
      })
      try {
        const { client, greeting } = await SmtpClient.open(
          delayed.app.smtpPort,
          REAL_PROXY,
          '127.0.0.1',
          proxyLine('203.0.113.7'),
        )
        expect(greeting).toEqual({ code: 421, text: 'inbox.test You talk too soon' })
        await client.closed()
        const text = await (
          await fetch(`${delayed.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })
        ).text()
        expect(text).toContain('pigeonhole_smtp_proxy_lines_total{outcome="refused"} 1\n')
        expect(
          delayed.logs.filter((line) => line.event === 'smtp_proxy_line_refused').map((line) => line.remote),
        ).toEqual([REAL_PROXY])
        expect((await fetch(`${delayed.url}/ready`)).status).toBe(503)
      } finally {
        await delayed.stop()
      }
    })
  },
)
