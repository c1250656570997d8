/**
 * getUsage (spec getUsage, Resources: Usage): the counters, the UTC calendar month, the
 * limits from the environment, and emails counted from real SMTP mail, which deleting an
 * inbox does not give back.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ManualClock } from '../../src/clock.ts'
import { startTestServer, type TestServer } from '../support/harness.ts'
import { sendMail, simpleMessage } from '../support/smtp.ts'
import { expectError, TIMESTAMP } from '../support/shapes.ts'

let server: TestServer
const clock = new ManualClock(Date.parse('2026-01-15T12:00:00.000Z'))
beforeAll(async () => {
  server = await startTestServer({ clock })
})
afterAll(() => server.stop())

/**
 * Seeds the monthly counter directly: real mail can never push it past the limit (SMTP refuses
 * it), but a lowered LIMIT_MONTHLY_EMAILS can. The tests at the end of this file count real SMTP mail.
 */
async function seedReceived(organizationId: string, month: string, received: number): Promise<void> {
  await server.query(
    'INSERT INTO monthly_email_usage (organization_id, month, received) VALUES (?, ?, ?)',
    organizationId,
    month,
    received,
  )
}

test('a new organisation: the bare Usage object with every counter', async () => {
  const { key } = await server.tenant()
  const response = await server.get('/v1/usage', key)
  expect(response.status).toBe(200)
  expect(response.body).toEqual({
    plan: 'free',
    period: { starts_at: '2026-01-01T00:00:00.000Z', ends_at: '2026-02-01T00:00:00.000Z' },
    inboxes: { active: 0, limit: 11, remaining: 11 },
    emails: { received: 0, limit: 33, remaining: 33 },
  })
  expect(response.body.period.starts_at).toMatch(TIMESTAMP)
  expect(response.body.period.ends_at).toMatch(TIMESTAMP)
})

test('inboxes.active follows create and delete, per organisation', async () => {
  const { key } = await server.tenant()
  const other = await server.tenant()
  const ids: string[] = []
  for (let i = 0; i < 3; i++) ids.push((await server.post('/v1/inboxes', key)).body.data.id)
  await server.post('/v1/inboxes', other.key)
  expect((await server.get('/v1/usage', key)).body.inboxes).toEqual({ active: 3, limit: 11, remaining: 8 })
  await server.delete(`/v1/inboxes/${ids[0]}`, key)
  expect((await server.get('/v1/usage', key)).body.inboxes).toEqual({ active: 2, limit: 11, remaining: 9 })
  expect((await server.get('/v1/usage', other.key)).body.inboxes.active).toBe(1)
})

describe('the period is the UTC calendar month', () => {
  const cases: Array<[string, string, string]> = [
    ['2026-01-31T23:59:59.999Z', '2026-01-01T00:00:00.000Z', '2026-02-01T00:00:00.000Z'],
    ['2026-02-01T00:00:00.000Z', '2026-02-01T00:00:00.000Z', '2026-03-01T00:00:00.000Z'],
    ['2026-02-28T23:59:59.999Z', '2026-02-01T00:00:00.000Z', '2026-03-01T00:00:00.000Z'],
    ['2028-02-29T12:00:00.000Z', '2028-02-01T00:00:00.000Z', '2028-03-01T00:00:00.000Z'],
    ['2026-12-31T23:59:59.999Z', '2026-12-01T00:00:00.000Z', '2027-01-01T00:00:00.000Z'],
    ['2027-01-01T00:00:00.000Z', '2027-01-01T00:00:00.000Z', '2027-02-01T00:00:00.000Z'],
  ]
  for (const [now, startsAt, endsAt] of cases) {
    test(`at ${now}`, async () => {
      const { key } = await server.tenant()
      const before = clock.now()
      clock.set(now)
      try {
        expect((await server.get('/v1/usage', key)).body.period).toEqual({ starts_at: startsAt, ends_at: endsAt })
      } finally {
        clock.set(before)
      }
    })
  }
})

test('emails count only the current UTC month and switch at the boundary', async () => {
  const { key, organizationId } = await server.tenant()
  await seedReceived(organizationId, '2026-03', 5)
  await seedReceived(organizationId, '2026-04', 40)
  const before = clock.now()
  try {
    clock.set('2026-03-31T23:59:59.999Z')
    expect((await server.get('/v1/usage', key)).body.emails).toEqual({ received: 5, limit: 33, remaining: 28 })
    clock.set('2026-04-01T00:00:00.000Z')
    // More than the limit (e.g. after LIMIT_MONTHLY_EMAILS was lowered): remaining stops at 0.
    expect((await server.get('/v1/usage', key)).body.emails).toEqual({ received: 40, limit: 33, remaining: 0 })
    clock.set('2026-05-01T00:00:00.000Z')
    expect((await server.get('/v1/usage', key)).body.emails).toEqual({ received: 0, limit: 33, remaining: 33 })
  } finally {
    clock.set(before)
  }
})

test('limits come from LIMIT_ACTIVE_INBOXES and LIMIT_MONTHLY_EMAILS', async () => {
  const other = await startTestServer({ clock, env: { LIMIT_ACTIVE_INBOXES: '3', LIMIT_MONTHLY_EMAILS: '500' } })
  try {
    const body = (await other.get('/v1/usage', (await other.tenant()).key)).body
    expect(body.inboxes).toEqual({ active: 0, limit: 3, remaining: 3 })
    expect(body.emails).toEqual({ received: 0, limit: 500, remaining: 500 })
  } finally {
    await other.stop()
  }
})

describe('emails received over SMTP', () => {
  async function deliver(address: string, subject = 'Hello'): Promise<void> {
    const result = await sendMail(server.app.smtpPort, { to: [address] }, simpleMessage({ to: address, subject }))
    expect(result.data?.code).toBe(250)
  }

  const usage = async (key: string) => (await server.get('/v1/usage', key)).body

  test('emails.received counts accepted mail in the UTC month it arrived', async () => {
    clock.set('2026-01-31T23:59:59.999Z')
    const { key } = await server.tenant()
    const { address } = (await server.post('/v1/inboxes', key)).body.data
    await deliver(address)
    await deliver(address)
    expect((await usage(key)).emails).toEqual({ received: 2, limit: 33, remaining: 31 })

    clock.set('2026-02-01T00:00:00.000Z')
    expect((await usage(key)).emails).toEqual({ received: 0, limit: 33, remaining: 33 })
    await deliver(address)
    expect((await usage(key)).emails).toEqual({ received: 1, limit: 33, remaining: 32 })
    expect((await usage(key)).period).toEqual({
      starts_at: '2026-02-01T00:00:00.000Z',
      ends_at: '2026-03-01T00:00:00.000Z',
    })
  })

  test('deleteInbox removes its messages but does not restore the monthly email quota', async () => {
    clock.set('2026-03-10T10:00:00.000Z')
    const { key } = await server.tenant()
    const { id, address } = (await server.post('/v1/inboxes', key)).body.data
    await deliver(address, 'to be deleted')
    const listed = await server.get(`/v1/inboxes/${id}/messages`, key)
    expect(listed.body.data.length).toBe(1)
    const messageId = listed.body.data[0].id

    expect((await server.delete(`/v1/inboxes/${id}`, key)).status).toBe(204)
    expectError(await server.get(`/v1/messages/${messageId}`, key), 404, 'message_not_found')
    expectError(await server.get(`/v1/inboxes/${id}/messages`, key), 404, 'inbox_not_found')
    const after = await usage(key)
    expect(after.emails).toEqual({ received: 1, limit: 33, remaining: 32 })
    expect(after.inboxes.active).toBe(0)
    // Mail to the deleted address is refused at RCPT time.
    const refused = await sendMail(server.app.smtpPort, { to: [address] }, simpleMessage({ to: address }))
    expect(refused.rcpt[0]!.code).toBeGreaterThanOrEqual(500)
    expect(refused.rcpt[0]!.text).toContain('Recipient address rejected')
  })
})
