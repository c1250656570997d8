/**
 * Every inbound limit of the spec, each refused with its reply code and text, storing
 * nothing and leaving usage as it was. Bucket and month rules run on a ManualClock.
 */
import { afterEach, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { ManualClock } from '../../src/clock.ts'
import { startTestServer, type TestServer, type Tenant } from '../support/harness.ts'
import { SmtpClient, simpleMessage } from '../support/smtp.ts'

// A hang's deadline, not a speed: on a busy machine this file's servers, processes or
// generated cases take well over Bun's default of 5 s.
setDefaultTimeout(30_000)

const MiB = 1024 * 1024
let server: TestServer
afterEach(() => server?.stop())

async function setUp(env: Record<string, string> = {}, clock?: ManualClock) {
  server = await startTestServer({ env, clock })
  const tenant = await server.tenant()
  const client = await SmtpClient.connect(server.app.smtpPort)
  await client.command('EHLO test')
  return { tenant, client }
}
const newInbox = async (tenant: Tenant) => (await server.post('/v1/inboxes', tenant.key)).body.data
const usage = async (tenant: Tenant) => (await server.get('/v1/usage', tenant.key)).body
const count = async (tenant: Tenant, inboxId: string) =>
  (await server.get(`/v1/inboxes/${inboxId}/messages`, tenant.key)).body.data.length

function withAttachments(
  to: string,
  parts: Array<{ bytes: number; encoding?: 'base64' | '8bit' }>,
  body = 'see attached',
): string {
  const sections = parts.map((part, i) => {
    const content =
      part.encoding === '8bit'
        ? 'a'.repeat(part.bytes)
        : Buffer.alloc(part.bytes, i % 250)
            .toString('base64')
            .replace(/.{76}/g, '$&\r\n')
    return [
      `--b`,
      `Content-Type: application/octet-stream`,
      `Content-Disposition: attachment; filename="f${i}.bin"`,
      `Content-Transfer-Encoding: ${part.encoding ?? 'base64'}`,
      '',
      content,
    ].join('\r\n')
  })
  return [
    `From: a@example.com`,
    `To: ${to}`,
    'Subject: files',
    'MIME-Version: 1.0',
    'Content-Type: multipart/mixed; boundary="b"',
    '',
    '--b',
    'Content-Type: text/plain',
    '',
    body,
    ...sections,
    '--b--',
    '',
  ].join('\r\n')
}

describe('size limits (permanent 552)', () => {
  test('a SIZE declaration over 10 MiB is refused at MAIL FROM', async () => {
    const { client } = await setUp()
    const reply = await client.command(`MAIL FROM:<a@example.com> SIZE=${10 * MiB + 1}`)
    expect(reply.code).toBe(552)
    await client.quit()
  })

  test('actual data over 10 MiB is refused after DATA, nothing stored, usage unchanged, connection still usable', async () => {
    const { tenant, client } = await setUp()
    const inbox = await newInbox(tenant)
    const huge = simpleMessage({
      to: inbox.address,
      text: ('x'.repeat(998) + '\r\n').repeat(Math.ceil((10 * MiB) / 1000) + 10),
    })
    const refused = await client.transaction({ to: [inbox.address] }, huge)
    expect(refused.data!.code).toBe(552)
    expect(refused.data!.text).toContain('Message size exceeds fixed maximum message size')
    expect(await count(tenant, inbox.id)).toBe(0)
    expect((await usage(tenant)).emails.received).toBe(0)
    const ok = await client.transaction({ to: [inbox.address] }, simpleMessage({ to: inbox.address }))
    expect(ok.data!.code).toBe(250)
    await client.quit()
  })

  test('25 attachments are accepted, 26 are refused', async () => {
    const { tenant, client } = await setUp()
    const inbox = await newInbox(tenant)
    const ok = await client.transaction(
      { to: [inbox.address] },
      withAttachments(
        inbox.address,
        Array.from({ length: 25 }, () => ({ bytes: 10 })),
      ),
    )
    expect(ok.data!.code).toBe(250)
    const refused = await client.transaction(
      { to: [inbox.address] },
      withAttachments(
        inbox.address,
        Array.from({ length: 26 }, () => ({ bytes: 10 })),
      ),
    )
    expect(refused.data!.code).toBe(552)
    expect(refused.data!.text).toContain('Too many attachments')
    expect(await count(tenant, inbox.id)).toBe(1)
    expect((await usage(tenant)).emails.received).toBe(1)
    await client.quit()
  })

  test('an attachment of exactly 5 MiB is accepted, one byte more is refused', async () => {
    const { tenant, client } = await setUp()
    const inbox = await newInbox(tenant)
    expect(
      (await client.transaction({ to: [inbox.address] }, withAttachments(inbox.address, [{ bytes: 5 * MiB }]))).data!
        .code,
    ).toBe(250)
    const refused = await client.transaction(
      { to: [inbox.address] },
      withAttachments(inbox.address, [{ bytes: 5 * MiB + 1 }]),
    )
    expect(refused.data!.code).toBe(552)
    expect(refused.data!.text).toContain('Attachment too large')
    expect(await count(tenant, inbox.id)).toBe(1)
    await client.quit()
  })

  test('decoded attachments over the total limit are refused', async () => {
    // With the default limits a 10 MiB raw message cannot decode to more than 10 MiB, so
    // the total is exercised with a lowered limit; the check is the same code path.
    const { tenant, client } = await setUp({ LIMIT_ATTACHMENTS_TOTAL_BYTES: '1000' })
    const inbox = await newInbox(tenant)
    expect(
      (
        await client.transaction(
          { to: [inbox.address] },
          withAttachments(inbox.address, [{ bytes: 500 }, { bytes: 500 }]),
        )
      ).data!.code,
    ).toBe(250)
    const refused = await client.transaction(
      { to: [inbox.address] },
      withAttachments(inbox.address, [{ bytes: 500 }, { bytes: 501 }]),
    )
    expect(refused.data!.code).toBe(552)
    expect(refused.data!.text).toContain('Attachments too large in total')
    await client.quit()
  })

  test('a text body over 1 MiB is refused; exactly 1 MiB is accepted', async () => {
    const { tenant, client } = await setUp()
    const inbox = await newInbox(tenant)
    const body = (bytes: number) =>
      [
        `From: a@example.com`,
        `To: ${inbox.address}`,
        'Subject: big',
        'Content-Type: text/plain; charset=utf-8',
        'Content-Transfer-Encoding: base64',
        '',
        Buffer.alloc(bytes, 'y').toString('base64').replace(/.{76}/g, '$&\r\n'),
      ].join('\r\n')
    expect((await client.transaction({ to: [inbox.address] }, body(MiB))).data!.code).toBe(250)
    const refused = await client.transaction({ to: [inbox.address] }, body(MiB + 1))
    expect(refused.data!.code).toBe(552)
    expect(refused.data!.text).toContain('Message body too large')
    await client.quit()
  })

  test('an html body over 1 MiB is refused', async () => {
    const { tenant, client } = await setUp()
    const inbox = await newInbox(tenant)
    const html = [
      `From: a@example.com`,
      `To: ${inbox.address}`,
      'Subject: big',
      'Content-Type: text/html; charset=utf-8',
      'Content-Transfer-Encoding: base64',
      '',
      Buffer.from('<p>' + 'z'.repeat(MiB) + '</p>')
        .toString('base64')
        .replace(/.{76}/g, '$&\r\n'),
    ].join('\r\n')
    const refused = await client.transaction({ to: [inbox.address] }, html)
    expect(refused.data!.code).toBe(552)
    expect(refused.data!.text).toContain('Message body too large')
    expect((await usage(tenant)).emails.received).toBe(0)
    await client.quit()
  })
})

describe('line guard (not a spec limit; protects the parser)', () => {
  test('a message with more lines than LIMIT_MESSAGE_LINES (300,000) is refused before parsing, nothing stored', async () => {
    const { tenant, client } = await setUp()
    const inbox = await newInbox(tenant)
    const refused = await client.transaction(
      { to: [inbox.address] },
      simpleMessage({ to: inbox.address, text: '\r\n'.repeat(300_010) }),
    )
    expect(refused.data!.code).toBe(552)
    expect(refused.data!.text).toContain('Message has too many lines')
    expect(await count(tenant, inbox.id)).toBe(0)
    expect((await usage(tenant)).emails.received).toBe(0)
    expect((await server.get('/health')).status).toBe(200)
    await client.quit()
  })

  test('the guard is configurable and counts raw lines', async () => {
    const { tenant, client } = await setUp({ LIMIT_MESSAGE_LINES: '100' })
    const inbox = await newInbox(tenant)
    const lines = (n: number) =>
      simpleMessage({ to: inbox.address, text: Array.from({ length: n }, (_, i) => `line ${i}`).join('\r\n') })
    expect((await client.transaction({ to: [inbox.address] }, lines(80))).data!.code).toBe(250)
    expect((await client.transaction({ to: [inbox.address] }, lines(120))).data!.code).toBe(552)
    await client.quit()
  })
})

describe('rate and quota limits', () => {
  test('10 messages per inbox per five-minute bucket, then 450 until the next bucket', async () => {
    const clock = new ManualClock('2026-03-10T10:00:00.000Z')
    const { tenant, client } = await setUp({}, clock)
    const inbox = await newInbox(tenant)
    for (let i = 0; i < 10; i++)
      expect((await client.transaction({ to: [inbox.address] }, simpleMessage({ to: inbox.address }))).data!.code).toBe(
        250,
      )
    clock.set('2026-03-10T10:04:59.999Z')
    const refused = await client.transaction({ to: [inbox.address] }, simpleMessage({ to: inbox.address }))
    expect(refused.rcpt[0]!.code).toBe(450)
    expect(refused.rcpt[0]!.text).toContain('Inbox receive rate exceeded')
    clock.set('2026-03-10T10:05:00.000Z')
    expect((await client.transaction({ to: [inbox.address] }, simpleMessage({ to: inbox.address }))).data!.code).toBe(
      250,
    )
    expect(await count(tenant, inbox.id)).toBe(11)
    await client.quit()
  })

  test('25 messages per organisation per bucket across its inboxes, then 450; other organisations unaffected', async () => {
    const clock = new ManualClock('2026-03-10T10:00:00.000Z')
    const { tenant, client } = await setUp({}, clock)
    const inboxes = [await newInbox(tenant), await newInbox(tenant), await newInbox(tenant), await newInbox(tenant)]
    for (let i = 0; i < 25; i++) {
      const inbox = inboxes[Math.floor(i / 10)]!
      expect((await client.transaction({ to: [inbox.address] }, simpleMessage({ to: inbox.address }))).data!.code).toBe(
        250,
      )
    }
    const refused = await client.transaction({ to: [inboxes[3]!.address] }, simpleMessage({ to: inboxes[3]!.address }))
    expect(refused.rcpt[0]!.code).toBe(450)
    expect(refused.rcpt[0]!.text).toContain('Organization receive rate exceeded')
    const other = await server.tenant('other')
    const otherInbox = await newInbox(other)
    expect(
      (await client.transaction({ to: [otherInbox.address] }, simpleMessage({ to: otherInbox.address }))).data!.code,
    ).toBe(250)
    clock.advance(5 * 60_000)
    expect(
      (await client.transaction({ to: [inboxes[3]!.address] }, simpleMessage({ to: inboxes[3]!.address }))).data!.code,
    ).toBe(250)
    await client.quit()
  })

  test('33 emails per UTC month, then "Monthly recipient quota exceeded"; the next month starts over', async () => {
    const clock = new ManualClock('2026-03-31T23:40:00.000Z')
    const { tenant, client } = await setUp({}, clock)
    const inboxes = [await newInbox(tenant), await newInbox(tenant), await newInbox(tenant), await newInbox(tenant)]
    for (let i = 0; i < 33; i++) {
      if (i === 25) clock.advance(5 * 60_000) // stay within the organisation's burst bucket
      const inbox = inboxes[i < 25 ? Math.floor(i / 10) : 3]!
      expect((await client.transaction({ to: [inbox.address] }, simpleMessage({ to: inbox.address }))).data!.code).toBe(
        250,
      )
    }
    expect((await usage(tenant)).emails).toEqual({ received: 33, limit: 33, remaining: 0 })
    const refused = await client.transaction({ to: [inboxes[3]!.address] }, simpleMessage({ to: inboxes[3]!.address }))
    expect(refused.rcpt[0]!.code).toBe(550)
    expect(refused.rcpt[0]!.text).toContain('Monthly recipient quota exceeded')
    expect((await usage(tenant)).emails.received).toBe(33)
    // Deleting messages or inboxes does not give quota back.
    await server.delete(`/v1/inboxes/${inboxes[0]!.id}`, tenant.key)
    expect(
      (await client.transaction({ to: [inboxes[3]!.address] }, simpleMessage({ to: inboxes[3]!.address }))).rcpt[0]!
        .code,
    ).toBe(550)
    clock.set('2026-04-01T00:00:00.000Z')
    expect(
      (await client.transaction({ to: [inboxes[3]!.address] }, simpleMessage({ to: inboxes[3]!.address }))).data!.code,
    ).toBe(250)
    const april = await usage(tenant)
    expect(april.period).toEqual({ starts_at: '2026-04-01T00:00:00.000Z', ends_at: '2026-05-01T00:00:00.000Z' })
    expect(april.emails.received).toBe(1)
    await client.quit()
  })

  test('each recipient of one message takes one unit: the second is refused when one unit is left', async () => {
    const { tenant, client } = await setUp({ LIMIT_MONTHLY_EMAILS: '1' })
    const [a, b] = [await newInbox(tenant), await newInbox(tenant)]
    const result = await client.transaction({ to: [a.address, b.address] }, simpleMessage({ to: a.address }))
    expect(result.rcpt.map((r) => r.code)).toEqual([250, 550])
    expect(result.rcpt[1]!.text).toContain('Monthly recipient quota exceeded')
    expect(result.data!.code).toBe(250)
    expect([await count(tenant, a.id), await count(tenant, b.id)]).toEqual([1, 0])
    await client.quit()
  })
})

describe('a transaction that spans a period boundary', () => {
  test('a recipient admitted in one month is refused at DATA when the next month is already full', async () => {
    const clock = new ManualClock('2026-11-30T23:59:50.000Z')
    const { tenant, client } = await setUp({ LIMIT_MONTHLY_EMAILS: '3' }, clock)
    const inbox = await newInbox(tenant)
    await client.command(`MAIL FROM:<a@example.com>`)
    expect((await client.command(`RCPT TO:<${inbox.address}>`)).code).toBe(250) // admitted in November
    clock.set('2026-12-01T00:00:10.000Z')
    const other = await SmtpClient.connect(server.app.smtpPort)
    await other.command('EHLO other')
    for (let i = 0; i < 3; i++)
      expect((await other.transaction({ to: [inbox.address] }, simpleMessage({ to: inbox.address }))).data!.code).toBe(
        250,
      )
    await other.quit()
    const reply = await client.data(simpleMessage({ to: inbox.address, subject: 'late' }))
    expect(reply.code).toBe(550)
    expect(reply.text).toContain('Monthly recipient quota exceeded')
    expect((await usage(tenant)).emails).toEqual({ received: 3, limit: 3, remaining: 0 })
    expect(await count(tenant, inbox.id)).toBe(3)
    await client.quit()
  })

  test('a recipient admitted in one five-minute bucket is refused at DATA when the next bucket is full', async () => {
    const clock = new ManualClock('2026-03-10T10:04:59.000Z')
    const { tenant, client } = await setUp({}, clock)
    const inbox = await newInbox(tenant)
    await client.command(`MAIL FROM:<a@example.com>`)
    expect((await client.command(`RCPT TO:<${inbox.address}>`)).code).toBe(250)
    clock.set('2026-03-10T10:05:00.000Z')
    const other = await SmtpClient.connect(server.app.smtpPort)
    await other.command('EHLO other')
    for (let i = 0; i < 10; i++)
      expect((await other.transaction({ to: [inbox.address] }, simpleMessage({ to: inbox.address }))).data!.code).toBe(
        250,
      )
    await other.quit()
    const reply = await client.data(simpleMessage({ to: inbox.address }))
    expect(reply.code).toBe(450)
    expect(reply.text).toContain('Inbox receive rate exceeded')
    expect(await count(tenant, inbox.id)).toBe(10)
    await client.quit()
  })

  test('a recipient admitted in one month is stored in the next when there is room, and counted there', async () => {
    const clock = new ManualClock('2026-11-30T23:59:50.000Z')
    const { tenant, client } = await setUp({ LIMIT_MONTHLY_EMAILS: '3' }, clock)
    const inbox = await newInbox(tenant)
    await client.command(`MAIL FROM:<a@example.com>`)
    await client.command(`RCPT TO:<${inbox.address}>`)
    clock.set('2026-12-01T00:00:10.000Z')
    expect((await client.data(simpleMessage({ to: inbox.address }))).code).toBe(250)
    const december = await usage(tenant)
    expect(december.period.starts_at).toBe('2026-12-01T00:00:00.000Z')
    expect(december.emails.received).toBe(1)
    await client.quit()
  })
})
