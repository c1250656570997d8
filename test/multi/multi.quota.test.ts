/**
 * Quota reservations across two machines in PostgreSQL mode: a recipient admitted at RCPT TO
 * on either machine holds one unit of the monthly quota and both bursts in the database, so
 * the limits are exact across machines for mail in flight as for stored mail. A unit goes back
 * at RSET, QUIT or a dropped connection on the machine that took it; storing converts it in the
 * storing transaction; a machine that dies leaves its units to run out with their lease, and
 * a machine that stops gives them back at once.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { type RunningApp, startApp } from '../../src/app.ts'
import { ManualClock } from '../../src/clock.ts'
import { loadConfig } from '../../src/config.ts'
import type { Principal } from '../../src/core/api-keys/authenticate.ts'
import { CLI_ACTOR } from '../../src/core/audit/audit.ts'
import { createInbox } from '../../src/core/inboxes/create-inbox.ts'
import { deleteInbox } from '../../src/core/inboxes/delete-inbox.ts'
import { LOCAL_TESTING_LIMITS } from '../../src/core/limits/organization-limits.ts'
import { changeLimits, createOrganization } from '../../src/core/organizations/organizations.ts'
import { newId } from '../../src/ids.ts'
import { createLogger } from '../../src/log.ts'
import { openPostgres, type Sql } from '../../src/storage/postgres/client.ts'
import { createQuotaReservations } from '../../src/storage/postgres/quota-reservations.ts'
import { SmtpClient, simpleMessage } from '../support/smtp.ts'
import { describeWithPostgres, migratedDatabase } from '../support/postgres.ts'
import { scratchDir } from '../support/scratch.ts'
import { layDownSelfSigned } from '../support/tls-seed.ts'
import { until } from '../support/wait.ts'

setDefaultTimeout(60_000)

interface Machine {
  app: RunningApp
  dir: string
}

async function startMachine(url: string, clock: ManualClock): Promise<Machine> {
  const dir = scratchDir('pigeonhole-quota-')
  const databasePath = join(dir, 'pigeonhole.db')
  const config = loadConfig({
    PORT: '0',
    SMTP_PORT: '0',
    HOST: '127.0.0.1',
    DATABASE_PATH: databasePath,
    DATABASE_URL: url,
    DATABASE_POOL_SIZE: '4',
    RECEIVING_DOMAIN: 'inbox.test',
  })
  await layDownSelfSigned(databasePath, config.receivingDomain)
  const app = await startApp({ config, clock, logger: createLogger('error', () => {}) })
  return { app, dir }
}

describeWithPostgres('quota reservations across two machines', () => {
  const clock = new ManualClock('2026-03-10T09:15:20.000Z')
  let url: string
  let a: Machine
  let b: Machine
  let sql: Sql
  const open: SmtpClient[] = []

  beforeAll(async () => {
    url = await migratedDatabase()
    ;[a, b] = await Promise.all([startMachine(url, clock), startMachine(url, clock)])
    sql = openPostgres(url, { max: 2 })
  })
  afterAll(async () => {
    for (const client of open) client.destroy()
    await Promise.all([a?.app.stop(), b?.app.stop()])
    await sql?.end()
    for (const machine of [a, b]) if (machine) rmSync(machine.dir, { recursive: true, force: true })
  })

  /** An organisation with `limits` and one inbox in it, made on machine A. */
  async function inboxWith(limits: { monthlyEmails?: number; inboxBurst?: number; orgBurst?: number }) {
    const s = a.app.services
    const org = await createOrganization(s, CLI_ACTOR, { name: `quota ${newId('org').slice(-8)}`, preset: 'hosted' })
    await changeLimits(s, CLI_ACTOR, { organizationId: org.id, overrides: limits })
    const principal: Principal = { organizationId: org.id, keyPublicId: 'quota', limits: LOCAL_TESTING_LIMITS }
    const { body } = await createInbox(s, principal, { body: '', idempotencyKey: null })
    return { organizationId: org.id, inboxId: body.data.id, address: body.data.address, principal }
  }

  /** An SMTP session on `machine` with MAIL FROM given, ready for RCPT TO. */
  async function session(machine: Machine): Promise<SmtpClient> {
    const { client } = await SmtpClient.open(machine.app.smtpPort)
    open.push(client)
    expect((await client.command('EHLO tester.example')).code).toBe(250)
    expect((await client.command('MAIL FROM:<sender@example.com>')).code).toBe(250)
    return client
  }

  const held = async (organizationId: string) =>
    Number((await sql`select count(*) as n from quota_reservations where organization_id = ${organizationId}`)[0]!.n)
  const stored = async (inboxId: string) =>
    Number((await sql`select count(*) as n from messages where inbox_id = ${inboxId}`)[0]!.n)

  test('a monthly quota of 3 admits exactly 3 recipients in flight across A and B, and the 4th gets the spec reply; the stored 3 still fill it', async () => {
    const target = await inboxWith({ monthlyEmails: 3 })
    const [a1, b1, a2, b2] = await Promise.all([session(a), session(b), session(a), session(b)])
    expect((await a1.command(`RCPT TO:<${target.address}>`)).code).toBe(250)
    expect((await b1.command(`RCPT TO:<${target.address}>`)).code).toBe(250)
    expect((await a2.command(`RCPT TO:<${target.address}>`)).code).toBe(250)
    expect(await b2.command(`RCPT TO:<${target.address}>`)).toEqual({
      code: 550,
      text: 'Monthly recipient quota exceeded (limit 3 per UTC month)',
    })
    expect(await held(target.organizationId)).toBe(3)

    // Stored on both machines: each unit becomes a stored count in its storing transaction.
    for (const client of [a1, b1, a2])
      expect((await client.data(simpleMessage({ to: target.address, subject: 'counted once' }))).code).toBe(250)
    expect(await held(target.organizationId)).toBe(0)
    expect(await stored(target.inboxId)).toBe(3)
    const [usage] = await sql`select received from monthly_email_usage where organization_id = ${target.organizationId}`
    expect(Number(usage!.received)).toBe(3)

    expect(await b2.command(`RCPT TO:<${target.address}>`)).toEqual({
      code: 550,
      text: 'Monthly recipient quota exceeded (limit 3 per UTC month)',
    })
    const fresh = await session(a)
    expect((await fresh.command(`RCPT TO:<${target.address}>`)).code).toBe(550)
  })

  test('an inbox deleted between RCPT TO and DATA: nothing is stored or counted, and its unit is no longer held', async () => {
    const target = await inboxWith({ monthlyEmails: 5 })
    const client = await session(a)
    expect((await client.command(`RCPT TO:<${target.address}>`)).code).toBe(250)
    expect(await held(target.organizationId)).toBe(1)
    await deleteInbox(b.app.services, target.principal, target.inboxId)
    expect((await client.data(simpleMessage({ to: target.address, subject: 'too late' }))).code).toBe(550)
    expect(await held(target.organizationId)).toBe(0)
    expect(await stored(target.inboxId)).toBe(0)
    expect(
      await sql`select received from monthly_email_usage where organization_id = ${target.organizationId}`,
    ).toHaveLength(0)
  })

  test('the inbox burst counts units held on both machines, with its own reply', async () => {
    const target = await inboxWith({ inboxBurst: 2 })
    const [a1, b1, a2] = await Promise.all([session(a), session(b), session(a)])
    expect((await a1.command(`RCPT TO:<${target.address}>`)).code).toBe(250)
    expect((await b1.command(`RCPT TO:<${target.address}>`)).code).toBe(250)
    expect(await a2.command(`RCPT TO:<${target.address}>`)).toEqual({
      code: 450,
      text: 'Inbox receive rate exceeded, try again later (limit 2 per inbox per 5 minutes)',
    })
  })

  test('RSET on A gives its unit back at once for B; so do QUIT and a dropped connection', async () => {
    const target = await inboxWith({ monthlyEmails: 1 })
    const onA = await session(a)
    const onB = await session(b)
    expect((await onA.command(`RCPT TO:<${target.address}>`)).code).toBe(250)
    expect((await onB.command(`RCPT TO:<${target.address}>`)).code).toBe(550)

    // A's session stays open and idle after RSET: only the reset itself can free the unit.
    expect((await onA.command('RSET')).code).toBe(250)
    await until(async () => (await held(target.organizationId)) === 0, 'the RSET to release the unit')
    expect((await onB.command(`RCPT TO:<${target.address}>`)).code).toBe(250)
    expect((await onA.command('MAIL FROM:<sender@example.com>')).code).toBe(250)
    expect((await onA.command(`RCPT TO:<${target.address}>`)).code).toBe(550)

    await onB.quit()
    await until(async () => (await held(target.organizationId)) === 0, 'QUIT to release the unit')
    expect((await onA.command(`RCPT TO:<${target.address}>`)).code).toBe(250)

    onA.destroy()
    await until(async () => (await held(target.organizationId)) === 0, 'the dropped connection to release the unit')
    const again = await session(b)
    expect((await again.command(`RCPT TO:<${target.address}>`)).code).toBe(250)
  })

  test('a machine that dies keeps its units only until their lease runs out; one that stops holds none', async () => {
    const target = await inboxWith({ monthlyEmails: 1 })
    // What a machine does at RCPT TO, by a holder that then dies: it never renews nor releases.
    const dead = createQuotaReservations(sql, { holder: 'dead-machine', clock, leaseMs: 30_000 })
    const limits = { monthlyEmails: 1, inboxBurst: 10, orgBurst: 25 }
    expect(
      (await dead.reserve({ organizationId: target.organizationId, inboxId: target.inboxId }, limits)).reserved,
    ).toBe(true)

    const onA = await session(a)
    expect((await onA.command(`RCPT TO:<${target.address}>`)).code).toBe(550)
    clock.advance(29_000)
    expect((await onA.command(`RCPT TO:<${target.address}>`)).code).toBe(550)
    clock.advance(1_000)
    expect((await onA.command(`RCPT TO:<${target.address}>`)).code).toBe(250)

    // A third machine whose client drops mid-transaction, then stops: nothing of it stays held.
    const other = await inboxWith({ monthlyEmails: 1 })
    const c = await startMachine(url, clock)
    let running = true
    try {
      const onC = await session(c)
      expect((await onC.command(`RCPT TO:<${other.address}>`)).code).toBe(250)
      const onB = await session(b)
      expect((await onB.command(`RCPT TO:<${other.address}>`)).code).toBe(550)
      onC.destroy()
      await c.app.stop()
      running = false
      expect(await held(other.organizationId)).toBe(0)
      expect((await onB.command(`RCPT TO:<${other.address}>`)).code).toBe(250)
    } finally {
      if (running) await c.app.stop()
      rmSync(c.dir, { recursive: true, force: true })
    }
  })

  test("a stopping machine gives back what it still holds: quota units and createInbox's claims in progress, at once", async () => {
    const target = await inboxWith({ monthlyEmails: 1 })
    const c = await startMachine(url, clock)
    let running = true
    try {
      const sc = c.app.services
      // Held with no SMTP session to release it: only the machine's close can.
      const facts = {
        inboxId: target.inboxId,
        organizationId: target.organizationId,
        limits: { monthlyEmails: null, inboxBurst: null, orgBurst: null },
        counts: { monthReceived: 0, inboxAccepted: 0, orgAccepted: 0 },
      }
      await sc.reservations.hold({
        facts,
        periods: { month: '2026-03', bucket: '2026-03-10T09:15:00.000Z' },
        limits: { monthlyEmails: 1, inboxBurst: 10, orgBurst: 25 },
        isLive: () => true,
      })
      const claim = {
        organizationId: target.organizationId,
        key: 'stopping-key',
        fingerprint: 'f1',
        now: new Date(clock.now()).toISOString(),
        expiresAt: new Date(clock.now() + 86_400_000).toISOString(),
      }
      expect((await sc.store.inboxes.claimIdempotencyKey(claim)).outcome).toBe('claimed')
      expect((await b.app.services.store.inboxes.claimIdempotencyKey(claim)).outcome).toBe('in_progress')
      expect(await held(target.organizationId)).toBe(1)

      await c.app.stop()
      running = false
      expect(await held(target.organizationId)).toBe(0)
      // Without the stopped machine's lease, the key is taken over now rather than after 30 s.
      expect((await b.app.services.store.inboxes.claimIdempotencyKey(claim)).outcome).toBe('claimed')
    } finally {
      if (running) await c.app.stop()
      rmSync(c.dir, { recursive: true, force: true })
    }
  })
})
