/**
 * The inbox page lists the deliveries refused for its address at RCPT TO (time, sender,
 * reply), so a test whose mail never came can see a limit or an early send at work, on
 * whichever machine refused it and whichever shows the page; an empty inbox offers a curl
 * line as well as swaks, and the first-run page's "Try it" is curl alone and runs as shown.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { ConsoleClient, PASSWORD, setUp, setupPath } from '../support/console-client.ts'
import { ManualClock } from '../../src/clock.ts'
import { startTestServer, type TestServer } from '../support/harness.ts'
import { sendMail } from '../support/smtp.ts'
import { testNeeding } from '../support/tools.ts'
import { until } from '../support/wait.ts'

setDefaultTimeout(30_000)

const clock = new ManualClock('2026-04-02T08:15:00.000Z')
let server: TestServer
let owner: ConsoleClient
let org: string
beforeAll(async () => {
  server = await startTestServer({ clock, env: { LIMIT_INBOX_BURST: '1' } })
  ;({ client: owner, organizationId: org } = await setUp(server, { email: 'owner@example.com' }))
  await owner.get(`/console/orgs/${org}`)
})
afterAll(() => server.stop())

const mail = (from: string, to: string) =>
  sendMail(server.app.smtpPort, { from, to: [to] }, `From: ${from}\r\nTo: ${to}\r\nSubject: hi\r\n\r\nhi\r\n`)

/**
 * Every machine keeps the refusal for `address`, which no inbox has yet: on two machines the
 * one that refused it tells the other a moment later, and an inbox made before that would
 * not find it there.
 */
const keptEverywhere = (address: string) =>
  until(
    () => server.machines.every((machine) => machine.services.refusedDeliveries.waiting(address) > 0),
    `every machine to keep the refusal for ${address}`,
  )

/**
 * The inbox page once its refused deliveries list `text` (on two machines, a moment after the
 * refusal); then as many reads again as there are machines, each a new connection and so each
 * from the next machine, must list it too.
 */
async function pageListing(page: string, text: string): Promise<string> {
  let html = ''
  await until(async () => {
    html = (await owner.get(page)).html
    return html.includes(text)
  }, `the inbox page to list ${text}`)
  for (const _ of server.machines) expect((await owner.get(page)).html).toContain(text)
  return html
}

async function createInbox(prefix: string): Promise<string> {
  const made = await owner.post(`/console/orgs/${org}/inboxes`, { prefix })
  expect(made.status).toBe(303)
  return made.location!
}

test('an inbox over its burst lists the refused delivery with time, sender and reply', async () => {
  const page = await createInbox('burst-test')
  expect((await owner.get(page)).html).not.toContain('Refused deliveries')
  expect((await mail('app@shop.example', 'burst-test@inbox.test')).data?.code).toBe(250)
  clock.advance(1_000)
  expect((await mail('billing@shop.example', 'Burst-Test@inbox.test')).rcpt[0]!.code).toBe(450)
  const html = await pageListing(page, 'billing@shop.example')
  const section = html.slice(html.indexOf('id="refused-deliveries"'))
  expect(section).toContain('Refused deliveries')
  expect(section).toContain('billing@shop.example')
  expect(section).toContain('450 Inbox receive rate exceeded, try again later')
  expect(section).toContain('2026-04-02T08:15:01.000Z')
  expect(section).not.toContain('app@shop.example')
})

test('mail sent before the inbox existed shows on its page as refused, unknown address', async () => {
  expect((await mail('early@shop.example', 'too-early@inbox.test')).rcpt[0]!.code).toBe(550)
  await keptEverywhere('too-early@inbox.test')
  const html = await pageListing(await createInbox('too-early'), 'early@shop.example')
  expect(html).toContain('early@shop.example')
  expect(html).toContain('550 Recipient address rejected')
})

testNeeding('curl')('an empty inbox offers a curl line that sends it mail', async () => {
  const page = await createInbox('curl-offer')
  const html = (await owner.get(page)).html
  const line = /<pre>(printf [^<]*curl[^<]*)<\/pre>/.exec(html)?.[1]?.replaceAll('&#39;', "'").replaceAll('&amp;', '&')
  expect(line).toContain(
    `smtp://localhost:${server.app.smtpPort} --mail-from app@example.com --mail-rcpt curl-offer@inbox.test -T -`,
  )
  // The server runs in this process: the child is awaited, never run synchronously.
  const run = Bun.spawn(['bash', '-c', line!.replace('smtp://localhost:', 'smtp://127.0.0.1:')], {
    stdout: 'ignore',
    stderr: 'inherit',
  })
  expect(await run.exited).toBe(0)
  expect(await owner.get(page).then((p) => p.html)).toContain('Hello from curl')
  expect(html).toContain('swaks --server')
})

testNeeding('curl')(
  'the first-run page\'s "Try it" runs as shown: it sends with curl and reads the message back with 200',
  async () => {
    const fresh = await startTestServer()
    try {
      const client = ConsoleClient.for(fresh)
      const path = setupPath(fresh)
      expect((await client.get(path)).status).toBe(200)
      const token = new URL(path, 'http://x').searchParams.get('token')!
      const made = await client.post('/setup', {
        token,
        email: 'first@example.com',
        password: PASSWORD,
        organization: 'First',
        preset: 'local',
      })
      expect(made.status).toBe(303) // to the first-steps page (post/redirect/get)
      const done = await client.get(made.location!)
      expect(done.status).toBe(200)
      const block = /<pre id="try-it">([^<]*)<\/pre>/
        .exec(done.html)![1]!
        .replaceAll('&#39;', "'")
        .replaceAll('&quot;', '"')
        .replaceAll('&amp;', '&')
        .replaceAll('&lt;', '<')
        .replaceAll('&gt;', '>')
      expect(block).not.toContain('swaks')
      const script = block.replace(`smtp://localhost:${fresh.app.smtpPort}`, `smtp://127.0.0.1:${fresh.app.smtpPort}`)
      // The server runs in this process: the child is awaited, never run synchronously.
      const run = Bun.spawn(['bash', '-euo', 'pipefail', '-c', script], { stdout: 'pipe', stderr: 'pipe' })
      const [code, stdout, stderr] = await Promise.all([
        run.exited,
        new Response(run.stdout).text(),
        new Response(run.stderr).text(),
      ])
      expect(stderr).toBe('')
      expect(code).toBe(0)
      const lines = stdout.trim().split('\n')
      expect(lines.at(-1)).toBe('200')
      expect(lines.at(-2)).toContain('"subject":"Hello"')
    } finally {
      await fresh.stop()
    }
  },
)

test("an address handed on shows none of the earlier owner's refusals, early sends included", async () => {
  // Another organisation had the address first: an early send, then a burst refusal that names its sender and its limit.
  const other = await server.tenant('other-org')
  expect((await mail('early@other.example', 'handed-on@inbox.test')).rcpt[0]!.code).toBe(550)
  await keptEverywhere('handed-on@inbox.test')
  const theirs = (await server.post('/v1/inboxes', other.key, { prefix: 'handed-on' })).body.data
  expect((await mail('first@other.example', 'handed-on@inbox.test')).data?.code).toBe(250)
  expect((await mail('app@other.example', 'handed-on@inbox.test')).rcpt[0]!.code).toBe(450)
  expect((await server.delete(`/v1/inboxes/${theirs.id}`, other.key)).status).toBe(204)
  // Mail for the free address before the next owner takes it is the next owner's to see.
  expect((await mail('late@shop.example', 'handed-on@inbox.test')).rcpt[0]!.code).toBe(550)
  await keptEverywhere('handed-on@inbox.test')
  const html = await pageListing(await createInbox('handed-on'), 'late@shop.example')
  expect(html).not.toContain('other.example')
  expect(html).toContain('late@shop.example')
})
