/** /metrics: Prometheus text exposition behind METRICS_TOKEN; the counters follow real traffic. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { operationOf } from '../../src/metrics/log-observer.ts'
import { newInbox } from '../support/messages.ts'
import { startTestServer, type Tenant, type TestServer } from '../support/harness.ts'
import { SmtpClient, sendMail, simpleMessage } from '../support/smtp.ts'
import { startTls } from '../support/starttls-client.ts'
import { until } from '../support/wait.ts'

const TOKEN = 'metrics-token-0123456789abcdef'
let server: TestServer
let tenant: Tenant

beforeAll(async () => {
  server = await startTestServer({
    env: {
      METRICS_TOKEN: TOKEN,
      LIMIT_MONTHLY_EMAILS: '1000',
      LIMIT_REQUESTS_PER_KEY: '10000',
      LIMIT_REQUESTS_PER_ORG: '10000',
      LIMIT_LONG_POLLS_PER_KEY: '1',
    },
  })
  tenant = await server.tenant()
})
afterAll(() => server.stop())

/** Every sample of one scrape, by its full series name (`name{labels}`). */
async function scrape(): Promise<Map<string, number>> {
  const response = await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })
  expect(response.status).toBe(200)
  expect(response.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8')
  const samples = new Map<string, number>()
  for (const line of (await response.text()).split('\n')) {
    if (line === '' || line.startsWith('#')) continue
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{.*\})?) (\S+)$/.exec(line)
    if (!match) throw new Error(`not an exposition line: ${line}`)
    samples.set(match[1]!, Number(match[2]))
  }
  return samples
}

const value = (samples: Map<string, number>, series: string) => samples.get(series) ?? 0

/** Scrapes until a scrape satisfies `condition`, and returns that scrape. */
async function scrapeUntil(
  condition: (samples: Map<string, number>) => boolean,
  what: string,
): Promise<Map<string, number>> {
  let samples = new Map<string, number>()
  await until(async () => {
    samples = await scrape()
    return condition(samples)
  }, what)
  return samples
}

describe('/metrics with METRICS_TOKEN set', () => {
  test('a stored message and a refused one move their counters', async () => {
    const inbox = await newInbox(server, tenant.key)
    const before = await scrape()
    const stored = await sendMail(server.app.smtpPort, { to: [inbox.address] }, simpleMessage({ to: inbox.address }))
    expect(stored.data?.code).toBe(250)
    const refused = await sendMail(
      server.app.smtpPort,
      { to: ['nobody-at-all@inbox.test'] },
      simpleMessage({ to: 'x' }),
    )
    expect(refused.rcpt[0]!.code).toBe(550)
    const after = await scrape()
    expect(value(after, 'pigeonhole_messages_stored_total') - value(before, 'pigeonhole_messages_stored_total')).toBe(1)
    const refusedSeries = 'pigeonhole_messages_refused_total{reason="unknown_recipient"}'
    expect(value(after, refusedSeries) - value(before, refusedSeries)).toBe(1)
    expect(value(after, 'pigeonhole_database_bytes{file="database"}')).toBeGreaterThan(0)
    expect(value(after, 'process_resident_memory_bytes')).toBeGreaterThan(1024 * 1024)
    // The sampler's first reading comes 100 ms after start-up, which this test may beat: wait for it.
    const sampled = await scrapeUntil(
      (samples) => value(samples, 'pigeonhole_event_loop_delay_seconds_count') > 0,
      "the event-loop sampler's first reading",
    )
    expect(value(sampled, 'pigeonhole_event_loop_delay_seconds_count')).toBeGreaterThan(0)
  })

  test('HTTP requests are counted by operation and status, 429 refusals by code', async () => {
    const before = await scrape()
    await server.get('/v1/usage', tenant.key)
    await server.get('/v1/inboxes/inbox_00000000000000000000000000000000', tenant.key)
    const inbox = await newInbox(server, tenant.key)
    const waiting = server.get(`/v1/inboxes/${inbox.id}/messages?wait_seconds=30`, tenant.key)
    await scrapeUntil(
      (samples) => samples.get('pigeonhole_long_polls_waiting') === 1,
      'the poll to be counted as waiting',
    )
    expect((await server.get(`/v1/inboxes/${inbox.id}/messages?wait_seconds=30`, tenant.key)).status).toBe(429)
    expect(
      (await sendMail(server.app.smtpPort, { to: [inbox.address] }, simpleMessage({ to: inbox.address }))).data?.code,
    ).toBe(250)
    expect((await waiting).status).toBe(200)
    const after = await scrape()
    const delta = (series: string) => value(after, series) - value(before, series)
    expect(delta('pigeonhole_http_requests_total{operation="getUsage",status="200"}')).toBe(1)
    expect(delta('pigeonhole_http_requests_total{operation="getInbox",status="404"}')).toBe(1)
    expect(delta('pigeonhole_http_requests_total{operation="listOrWaitForMessages",status="429"}')).toBe(1)
    expect(delta('pigeonhole_http_refusals_total{code="long_poll_limit_exceeded"}')).toBe(1)
    expect(delta('pigeonhole_long_poll_wake_seconds_count')).toBe(1)
    expect(delta('pigeonhole_routing_calls_total{provider="none",operation="create_rule",outcome="ok"}')).toBe(1)
    expect(value(after, 'pigeonhole_long_polls_waiting')).toBe(0)
  })

  test('open SMTP sessions and buffered DATA bytes are visible while a message is in flight, and drop to 0 after', async () => {
    const inbox = await newInbox(server, tenant.key)
    const client = await SmtpClient.connect(server.app.smtpPort)
    await client.command('EHLO gauges.test')
    await client.command('MAIL FROM:<sender@example.com>')
    await client.command(`RCPT TO:<${inbox.address}>`)
    await client.command('DATA')
    client.writeBody('Subject: partial\r\n\r\n' + 'x'.repeat(50_000) + '\r\n')
    const during = await scrapeUntil(
      (samples) => value(samples, 'pigeonhole_smtp_data_buffered_bytes') >= 50_000,
      'the partial DATA to be buffered',
    )
    expect(value(during, 'pigeonhole_smtp_sessions_open')).toBeGreaterThanOrEqual(1)
    client.destroy() // leaves mid-DATA
    const settled = (samples: Map<string, number>) =>
      value(samples, 'pigeonhole_smtp_sessions_open') === 0 &&
      value(samples, 'pigeonhole_smtp_data_buffered_bytes') === 0
    const after = await scrapeUntil(settled, 'the dropped session to close and give its bytes back')
    expect(value(after, 'pigeonhole_smtp_data_buffered_bytes')).toBe(0)
  })

  test('a failed STARTTLS handshake leaves no session open', async () => {
    const { tls } = await startTls(server.app.smtpPort, { maxVersion: 'TLSv1.1', minVersion: 'TLSv1' }).then(
      () => {
        throw new Error('TLS 1.1 was accepted')
      },
      () => ({ tls: null }),
    )
    expect(tls).toBeNull()
    await scrapeUntil((samples) => value(samples, 'pigeonhole_smtp_sessions_open') === 0, 'the failed session to close')
  })

  test('a missing or wrong token is 401; the route is not in the OpenAPI document', async () => {
    for (const authorization of [
      undefined,
      'Bearer wrong-token-0123456789abcdef',
      `Basic ${TOKEN}`,
      `Bearer ${TOKEN}x`,
    ]) {
      const response = await fetch(`${server.url}/metrics`, { headers: authorization ? { authorization } : {} })
      expect(response.status).toBe(401)
      expect(response.headers.get('www-authenticate')).toBe('Bearer realm="metrics"')
      expect(await response.text()).not.toContain('pigeonhole_')
    }
    const document = (await (await fetch(`${server.url}/openapi/json`)).json()) as { paths: Record<string, unknown> }
    expect(Object.keys(document.paths)).not.toContain('/metrics')
    expect(Object.keys(document.paths)).not.toContain('/ready')
  })
})

test('without METRICS_TOKEN /metrics answers the same 404 as an unknown path', async () => {
  const plain = await startTestServer()
  try {
    const metrics = await plain.get('/metrics', null, { authorization: `Bearer ${TOKEN}` })
    expect(metrics.status).toBe(404)
    expect(metrics.body.error.code).toBe((await plain.get('/no-such-path')).body.error.code)
  } finally {
    await plain.stop()
  }
})

test('operation labels come from the spec names; unknown paths share one label', () => {
  expect(operationOf('GET', '/v1/inboxes/inbox_1/messages')).toBe('listOrWaitForMessages')
  expect(operationOf('DELETE', '/v1/messages/msg_1')).toBe('deleteMessage')
  expect(operationOf('GET', '/v1/inboxes/a/b/c')).toBe('other')
  expect(operationOf('PATCH', '/v1/usage')).toBe('other')
})

test('METRICS_PORT serves /metrics without a token on its own listener only', async () => {
  const scraped = await startTestServer({ env: { METRICS_PORT: '0' } })
  try {
    const port = scraped.app.metricsPort!
    const response = await fetch(`http://127.0.0.1:${port}/metrics`)
    expect(response.status).toBe(200)
    expect(await response.text()).toContain('\npigeonhole_smtp_sessions_open 0\n')
    expect((await fetch(`http://127.0.0.1:${port}/v1/usage`)).status).toBe(404)
    expect((await scraped.get('/metrics')).status).toBe(404) // the public port still needs METRICS_TOKEN
  } finally {
    await scraped.stop()
  }
})

test('METRICS_PORT listens on loopback even when HOST is left at every interface', async () => {
  const scraped = await startTestServer({ env: { HOST: '0.0.0.0', METRICS_PORT: '0' } })
  try {
    const port = scraped.app.metricsPort!
    expect((await fetch(`http://127.0.0.1:${port}/metrics`)).status).toBe(200)
    // Another address of this machine (any 127.x on Linux) reaches a listener on 0.0.0.0, not one on 127.0.0.1.
    const elsewhere = await fetch(`http://127.0.0.2:${port}/metrics`).then(
      (response) => response.status,
      (error: Error) => error.name,
    )
    expect(elsewhere).not.toBe(200)
    expect(scraped.logs.find((line) => line.event === 'metrics_listening')).toMatchObject({ port, host: '127.0.0.1' })
  } finally {
    await scraped.stop()
  }
})

test('every metric the sample Grafana dashboard queries is exposed', async () => {
  const dashboard = await Bun.file(new URL('../../docs/grafana-dashboard.json', import.meta.url)).text()
  JSON.parse(dashboard)
  const queried = new Set(
    [...dashboard.matchAll(/\b((?:pigeonhole|process)_[a-z_]+?)(?:_bucket|_sum|_count)?\{/g)].map((match) => match[1]!),
  )
  expect(queried.size).toBeGreaterThan(10)
  const response = await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })
  const exposed = new Set([...(await response.text()).matchAll(/^# TYPE (\S+) /gm)].map((match) => match[1]!))
  for (const name of queried) expect(exposed).toContain(name)
})
