/**
 * InboundStore's contract: core's inbound verbs (admitRecipient at RCPT TO, storeInboundMessage
 * at the end of DATA, the retention sweep, the readiness heartbeat) behave alike on SQLite and
 * on PostgreSQL: what a stored message is made of, the usage and burst counters, the monthly
 * quota and both bursts at their period boundaries, received_at order, retention, and the
 * heartbeat's answers, including stores and sweeps that run at the same time.
 */
import { Database } from 'bun:sqlite'
import { expect, setDefaultTimeout, test } from 'bun:test'
import { and, asc, eq } from 'drizzle-orm'
import { isoTime, ManualClock } from '../../src/clock.ts'
import { CLI_ACTOR } from '../../src/core/audit/audit.ts'
import {
  HEARTBEAT_SETTING,
  probeHeartbeatWrite,
  recordHeartbeat,
  touchDatabase,
} from '../../src/core/runtime/heartbeat.ts'
import { admitRecipient } from '../../src/core/inbound/admission.ts'
import { parseMail } from '../../src/core/inbound/parse.ts'
import { InboundRefusal } from '../../src/core/inbound/refusal.ts'
import type { Reservation } from '../../src/core/inbound/reservations.ts'
import { storeInboundMessage } from '../../src/core/inbound/store.ts'
import { changeLimits, createOrganization } from '../../src/core/organizations/organizations.ts'
import { sweepOnce } from '../../src/core/runtime/retention.ts'
import { createInbox } from '../../src/core/inboxes/create-inbox.ts'
import { deleteInbox } from '../../src/core/inboxes/delete-inbox.ts'
import { LOCAL_TESTING_LIMITS } from '../../src/core/limits/organization-limits.ts'
import type { Principal } from '../../src/core/api-keys/authenticate.ts'
import type { Services } from '../../src/core/common/services.ts'
import { sha256Hex } from '../../src/core/common/stored-bytes.ts'
import { newId } from '../../src/ids.ts'
import { postgresDb } from '../../src/storage/postgres/db.ts'
import * as pg from '../../src/storage/postgres/schema.ts'
import * as lite from '../../src/storage/sqlite/schema.ts'
import { type Backend, describeEachBackend } from '../support/backends.ts'

setDefaultTimeout(60_000)

const clock = new ManualClock('2026-03-01T10:00:00.000Z')
const DAY = 86_400_000

type Overrides = { monthlyEmails?: number; inboxBurst?: number; orgBurst?: number }

/** An organisation through the organisations area's verbs, with `limits` set by the operator. */
async function organization(backend: Backend, limits: Overrides = {}): Promise<string> {
  const s = backend.services()
  const org = await createOrganization(s, CLI_ACTOR, { name: `contract ${newId('org').slice(-8)}`, preset: 'hosted' })
  if (Object.keys(limits).length > 0) await changeLimits(s, CLI_ACTOR, { organizationId: org.id, overrides: limits })
  return org.id
}

interface Inbox {
  id: string
  organizationId: string
  address: string
}

const principalOf = (organizationId: string): Principal => ({
  organizationId,
  keyPublicId: 'contract',
  limits: LOCAL_TESTING_LIMITS,
})

/** An active inbox through createInbox; a 'creating' one (no verb leaves one behind at will) as a fixture row. */
async function inbox(
  backend: Backend,
  organizationId: string,
  state: 'active' | 'creating' = 'active',
): Promise<Inbox> {
  if (state === 'active') {
    const { body } = await createInbox(backend.services(), principalOf(organizationId), {
      body: '',
      idempotencyKey: null,
    })
    return { id: body.data.id, organizationId, address: body.data.address }
  }
  const localPart = `c${newId('inbox').slice(-12)}`
  const row = {
    id: newId('inbox'),
    organizationId,
    localPart,
    address: `${localPart}@inbox.test`,
    state,
    createdAt: isoTime(clock.now()),
  }
  const sql = backend.postgres()
  if (sql) await postgresDb(sql).insert(pg.inboxes).values(row)
  else backend.storage().db.insert(lite.inboxes).values(row).run()
  return { id: row.id, organizationId, address: row.address }
}

/** Every stored row of the inbox's messages, oldest first, with contents, source and attachments. */
async function stored(backend: Backend, inboxId: string) {
  const sql = backend.postgres()
  if (sql) {
    const db = postgresDb(sql)
    const rows = await db
      .select()
      .from(pg.messages)
      .where(eq(pg.messages.inboxId, inboxId))
      .orderBy(asc(pg.messages.receivedAt))
    return Promise.all(
      rows.map(async (message) => ({
        message,
        content: (await db.select().from(pg.messageContents).where(eq(pg.messageContents.messageId, message.id)))[0],
        search: (
          await db.select().from(pg.messageSearchTexts).where(eq(pg.messageSearchTexts.messageId, message.id))
        )[0],
        source: (await db.select().from(pg.messageSources).where(eq(pg.messageSources.messageId, message.id)))[0],
        attachments: await Promise.all(
          (
            await db
              .select()
              .from(pg.attachments)
              .where(eq(pg.attachments.messageId, message.id))
              .orderBy(asc(pg.attachments.position))
          ).map(async (row) => ({
            row,
            content: (
              await db.select().from(pg.attachmentContents).where(eq(pg.attachmentContents.attachmentId, row.id))
            )[0],
          })),
        ),
      })),
    )
  }
  const db = backend.storage().db
  return db
    .select()
    .from(lite.messages)
    .where(eq(lite.messages.inboxId, inboxId))
    .orderBy(asc(lite.messages.receivedAt))
    .all()
    .map((message) => ({
      message,
      content: db.select().from(lite.messageContents).where(eq(lite.messageContents.messageId, message.id)).get(),
      search: db.select().from(lite.messageSearchTexts).where(eq(lite.messageSearchTexts.messageId, message.id)).get(),
      source: db.select().from(lite.messageSources).where(eq(lite.messageSources.messageId, message.id)).get(),
      attachments: db
        .select()
        .from(lite.attachments)
        .where(eq(lite.attachments.messageId, message.id))
        .orderBy(asc(lite.attachments.position))
        .all()
        .map((row) => ({
          row,
          content: db
            .select()
            .from(lite.attachmentContents)
            .where(eq(lite.attachmentContents.attachmentId, row.id))
            .get(),
        })),
    }))
}

/** Rows left in the tables a message's parts live in, for the given message ids. */
async function partsLeft(backend: Backend, messageIds: string[]): Promise<number> {
  let n = 0
  for (const id of messageIds) {
    const sql = backend.postgres()
    if (sql) {
      const db = postgresDb(sql)
      n += (await db.select().from(pg.messageContents).where(eq(pg.messageContents.messageId, id))).length
      n += (await db.select().from(pg.messageSources).where(eq(pg.messageSources.messageId, id))).length
      n += (await db.select().from(pg.messageSearchTexts).where(eq(pg.messageSearchTexts.messageId, id))).length
      n += (await db.select().from(pg.attachments).where(eq(pg.attachments.messageId, id))).length
    } else {
      const db = backend.storage().db
      n += db.select().from(lite.messageContents).where(eq(lite.messageContents.messageId, id)).all().length
      n += db.select().from(lite.messageSources).where(eq(lite.messageSources.messageId, id)).all().length
      n += db.select().from(lite.messageSearchTexts).where(eq(lite.messageSearchTexts.messageId, id)).all().length
      n += db.select().from(lite.attachments).where(eq(lite.attachments.messageId, id)).all().length
    }
  }
  return n
}

async function monthlyCount(backend: Backend, organizationId: string, month: string): Promise<number> {
  const sql = backend.postgres()
  const where = (t: typeof pg.monthlyEmailUsage | typeof lite.monthlyEmailUsage) =>
    and(eq(t.organizationId, organizationId), eq(t.month, month))
  if (sql)
    return (
      (await postgresDb(sql).select().from(pg.monthlyEmailUsage).where(where(pg.monthlyEmailUsage)))[0]?.received ?? 0
    )
  return (
    backend.storage().db.select().from(lite.monthlyEmailUsage).where(where(lite.monthlyEmailUsage)).get()?.received ?? 0
  )
}

/** Every burst bucket of `subjectId`: bucket start → accepted. */
async function bursts(backend: Backend, subjectId: string): Promise<Record<string, number>> {
  const sql = backend.postgres()
  const rows = sql
    ? await postgresDb(sql).select().from(pg.inboundBursts).where(eq(pg.inboundBursts.subjectId, subjectId))
    : backend.storage().db.select().from(lite.inboundBursts).where(eq(lite.inboundBursts.subjectId, subjectId)).all()
  return Object.fromEntries(rows.map((row) => [row.bucketStartsAt, row.accepted]))
}

async function heartbeatValue(backend: Backend): Promise<string | undefined> {
  const sql = backend.postgres()
  if (sql)
    return (await postgresDb(sql).select().from(pg.settings).where(eq(pg.settings.name, HEARTBEAT_SETTING)))[0]?.value
  return backend.storage().db.select().from(lite.settings).where(eq(lite.settings.name, HEARTBEAT_SETTING)).get()?.value
}

const live = () => true
const admit = (s: Services, address: string, admitted: Reservation[] = []) =>
  admitRecipient(s, { address, isLive: live, admitted })

const mime = (subject: string, attachments: { name: string; type: string; bytes: Buffer }[] = []) => {
  const boundary = 'contract-boundary'
  const parts = [
    `--${boundary}\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nHello from the contract, ${subject}.\r\n`,
  ]
  for (const a of attachments)
    parts.push(
      `--${boundary}\r\nContent-Type: ${a.type}; name="${a.name}"\r\nContent-Disposition: attachment; filename="${a.name}"\r\nContent-Transfer-Encoding: base64\r\n\r\n${a.bytes.toString('base64')}\r\n`,
    )
  return Buffer.from(
    [
      'From: Sender Name <Sender@Example.COM>',
      'To: someone@inbox.test',
      `Subject: ${subject}`,
      'Message-ID: <contract@example.com>',
      'MIME-Version: 1.0',
      `Content-Type: multipart/mixed; boundary="${boundary}"`,
      '',
      `${parts.join('')}--${boundary}--`,
      '',
    ].join('\r\n'),
  )
}

/** Parses and stores `raw` for the admitted recipients, as receive.ts does after DATA. */
async function deliver(s: Services, recipients: Reservation[], raw = mime('plain')) {
  const mail = await parseMail(raw, 'sender@example.com', s.config.limits)
  return storeInboundMessage(s, raw, mail, recipients)
}

/** The refusal a promise rejects with (null when it resolves). */
async function refusalOf(promise: Promise<unknown>): Promise<string | null> {
  try {
    await promise
    return null
  } catch (error) {
    if (error instanceof InboundRefusal) return error.reason
    throw error
  }
}

describeEachBackend(
  'the inbound verbs',
  (backend) => {
    test('a message with attachments is stored once per inbox with every part, counted once per copy', async () => {
      clock.set('2026-03-01T10:00:00.000Z')
      const s = backend.services()
      const org = await organization(backend)
      const a = await inbox(backend, org)
      const b = await inbox(backend, org)
      const first = await admit(s, a.address.toUpperCase())
      // The same inbox named twice uses one unit and gets one copy.
      const again = await admit(s, a.address, [first])
      expect(again).toBe(first)
      const second = await admit(s, b.address, [first])
      const pdf = Buffer.from('%PDF-1.4 contract bytes')
      const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 1, 2, 3, 255])
      const raw = mime('Invoice 42', [
        { name: 'invoice.pdf', type: 'application/pdf', bytes: pdf },
        { name: 'logo.png', type: 'image/png', bytes: png },
      ])
      const result = await deliver(s, [first, first, second], raw)
      expect(result.map((m) => m.inboxId).sort()).toEqual([a.id, b.id].sort())
      expect(s.reservations.size).toBe(0)

      for (const target of [a, b]) {
        const rows = await stored(backend, target.id)
        expect(rows).toHaveLength(1)
        const { message, content, search, source, attachments } = rows[0]!
        expect(message.id).toBe(result.find((m) => m.inboxId === target.id)!.messageId)
        expect(message).toMatchObject({
          organizationId: org,
          fromName: 'Sender Name',
          fromAddress: 'Sender@Example.COM',
          toAddress: target.address,
          subject: 'Invoice 42',
          sizeBytes: raw.byteLength,
          receivedAt: '2026-03-01T10:00:00.000Z',
          expiresAt: isoTime(clock.now() + s.config.limits.retentionDays * DAY),
          searchSubject: 'invoice 42',
          searchSender: 'sender@example.com',
          searchSenderDomain: 'example.com',
          internetMessageId: '<contract@example.com>',
        })
        expect(message.preview).toContain('Hello from the contract')
        expect(content?.textBody).toContain('Hello from the contract, Invoice 42.')
        expect(JSON.parse(content!.headersJson)).toContainEqual(['Subject', 'Invoice 42'])
        expect(search?.text).toContain('invoice 42')
        expect(Buffer.compare(source!.raw, raw)).toBe(0)
        expect(source!.sha256).toBe(sha256Hex(raw))
        expect(
          attachments.map(({ row }) => [
            row.position,
            row.filename,
            row.contentType,
            row.sizeBytes,
            row.disposition,
            row.organizationId,
          ]),
        ).toEqual([
          [0, 'invoice.pdf', 'application/pdf', pdf.byteLength, 'attachment', org],
          [1, 'logo.png', 'image/png', png.byteLength, 'attachment', org],
        ])
        expect(Buffer.compare(attachments[1]!.content!.content, png)).toBe(0)
        expect(attachments[1]!.content!.sha256).toBe(sha256Hex(png))
      }
      expect(await monthlyCount(backend, org, '2026-03')).toBe(2)
      expect(await bursts(backend, a.id)).toEqual({ '2026-03-01T10:00:00.000Z': 1 })
      expect(await bursts(backend, org)).toEqual({ '2026-03-01T10:00:00.000Z': 2 })
    })

    test('unknown addresses, other domains and inboxes not yet active are refused at RCPT TO', async () => {
      const s = backend.services()
      const org = await organization(backend)
      const creating = await inbox(backend, org, 'creating')
      expect(await refusalOf(admit(s, 'nobody-here@inbox.test'))).toBe('unknown_recipient')
      expect(await refusalOf(admit(s, creating.address))).toBe('unknown_recipient')
      const active = await inbox(backend, org)
      expect(await refusalOf(admit(s, active.address.replace('inbox.test', 'elsewhere.test')))).toBe(
        'unknown_recipient',
      )
      const reservation = await admit(s, active.address)
      expect(reservation).toMatchObject({ inboxId: active.id, organizationId: org })
      s.reservations.release(reservation)
    })

    test('an inbox gone since RCPT TO is skipped; the others are stored', async () => {
      clock.set('2026-03-01T11:00:00.000Z')
      const s = backend.services()
      const org = await organization(backend)
      const kept = await inbox(backend, org)
      const gone = await inbox(backend, org)
      const recipients = [await admit(s, kept.address), await admit(s, gone.address)]
      await deleteInbox(s, principalOf(org), gone.id)
      const result = await deliver(s, recipients)
      expect(result.map((m) => m.inboxId)).toEqual([kept.id])
      expect(await monthlyCount(backend, org, '2026-03')).toBe(1)
      expect(await bursts(backend, org)).toEqual({ '2026-03-01T11:00:00.000Z': 1 })
      // The skipped one's unit stays held until its SMTP transaction ends (here: by hand).
      expect(s.reservations.size).toBe(1)
      s.reservations.release(recipients[1]!)
    })

    test('the monthly quota counts stored and reserved mail, and starts over at the UTC month boundary', async () => {
      clock.set('2026-03-31T23:59:59.000Z')
      const s = backend.services()
      const org = await organization(backend, { monthlyEmails: 2 })
      const x = await inbox(backend, org)
      const y = await inbox(backend, org)
      await deliver(s, [await admit(s, x.address)])
      // One unit left: a live reservation holds it, so another recipient is refused.
      const held = await admit(s, y.address)
      expect(await refusalOf(admit(s, x.address))).toBe('monthly_quota_exceeded')
      await deliver(s, [held])
      expect(await refusalOf(admit(s, x.address))).toBe('monthly_quota_exceeded')
      expect(await monthlyCount(backend, org, '2026-03')).toBe(2)
      clock.set('2026-04-01T00:00:00.000Z')
      await deliver(s, [await admit(s, x.address)])
      expect(await monthlyCount(backend, org, '2026-04')).toBe(1)
      expect(await monthlyCount(backend, org, '2026-03')).toBe(2)
    })

    test('both five-minute bursts fill within a bucket and free at its boundary', async () => {
      clock.set('2026-03-02T10:04:59.998Z')
      const s = backend.services()
      const org = await organization(backend, { inboxBurst: 2, orgBurst: 3 })
      const x = await inbox(backend, org)
      const y = await inbox(backend, org)
      await deliver(s, [await admit(s, x.address)])
      await deliver(s, [await admit(s, x.address)])
      expect(await refusalOf(admit(s, x.address))).toBe('inbox_burst_exceeded')
      await deliver(s, [await admit(s, y.address)])
      expect(await refusalOf(admit(s, y.address))).toBe('organization_burst_exceeded')
      expect(await bursts(backend, x.id)).toEqual({ '2026-03-02T10:00:00.000Z': 2 })
      expect(await bursts(backend, org)).toEqual({ '2026-03-02T10:00:00.000Z': 3 })
      clock.set('2026-03-02T10:05:00.000Z')
      await deliver(s, [await admit(s, x.address)])
      expect(await bursts(backend, x.id)).toEqual({ '2026-03-02T10:00:00.000Z': 2, '2026-03-02T10:05:00.000Z': 1 })
    })

    test('a recipient admitted in one bucket is checked again in the next at the store, without counting itself', async () => {
      clock.set('2026-03-03T10:04:59.999Z')
      const s = backend.services()
      const org = await organization(backend, { inboxBurst: 1 })
      const x = await inbox(backend, org)
      const y = await inbox(backend, org)
      const early = await admit(s, x.address)
      const alsoEarly = await admit(s, y.address)
      clock.set('2026-03-03T10:05:00.000Z')
      // Another transaction fills x's next bucket before the early one's DATA ends.
      await deliver(s, [await admit(s, x.address)])
      expect(await refusalOf(deliver(s, [early]))).toBe('inbox_burst_exceeded')
      // y's next bucket has room: stored there, its own unit not counted against it.
      const result = await deliver(s, [alsoEarly])
      expect(result.map((m) => m.inboxId)).toEqual([y.id])
      expect(await bursts(backend, y.id)).toEqual({ '2026-03-03T10:05:00.000Z': 1 })
      expect(await bursts(backend, x.id)).toEqual({ '2026-03-03T10:05:00.000Z': 1 })
      expect(s.reservations.size).toBe(0)
    })

    test('stores committed together, re-checked in a turned bucket one after another: exactly the room left is stored, in every organisation', async () => {
      clock.set('2026-03-03T11:04:59.999Z')
      const s = backend.services()
      const [one, two] = [await organization(backend, { inboxBurst: 3, orgBurst: 5 }), await organization(backend)]
      const [x, y] = [await inbox(backend, one), await inbox(backend, one)]
      const z = await inbox(backend, two)
      const early: Reservation[] = []
      for (const target of [x, x, x, y, y]) early.push(await admit(s, target.address))
      const other = [await admit(s, z.address), await admit(s, z.address)]
      clock.set('2026-03-03T11:05:00.000Z')
      // The next bucket already holds one copy for x and one for y: the organisation has 3 left.
      await deliver(s, [await admit(s, x.address)], mime('fresh x'))
      await deliver(s, [await admit(s, y.address)], mime('fresh y'))
      // Stored at once, so several share a transaction: each re-check must see the copies
      // stored before it in the same one.
      const outcomes = await Promise.all(
        [...early, ...other].map((recipient, i) => refusalOf(deliver(s, [recipient], mime(`batched ${i}`)))),
      )
      const earlyOutcomes = outcomes.slice(0, 5)
      expect(earlyOutcomes.filter((outcome) => outcome === null)).toHaveLength(3)
      for (const outcome of earlyOutcomes)
        expect([null, 'inbox_burst_exceeded', 'organization_burst_exceeded']).toContain(outcome)
      expect(outcomes.slice(5)).toEqual([null, null])
      const inX = (await stored(backend, x.id)).length
      const inY = (await stored(backend, y.id)).length
      expect(inX + inY).toBe(5)
      expect(inX).toBeLessThanOrEqual(3)
      expect(inY).toBeLessThanOrEqual(3)
      expect(await bursts(backend, x.id)).toEqual({ '2026-03-03T11:05:00.000Z': inX })
      expect(await bursts(backend, y.id)).toEqual({ '2026-03-03T11:05:00.000Z': inY })
      expect(await bursts(backend, one)).toEqual({ '2026-03-03T11:05:00.000Z': 5 })
      expect(await monthlyCount(backend, one, '2026-03')).toBe(5)
      expect(await bursts(backend, z.id)).toEqual({ '2026-03-03T11:05:00.000Z': 2 })
      expect(await bursts(backend, two)).toEqual({ '2026-03-03T11:05:00.000Z': 2 })
      expect(await monthlyCount(backend, two, '2026-03')).toBe(2)
      // received_at strictly increasing in each inbox, whichever transaction stored the copy.
      for (const target of [x, y]) {
        const times = (await stored(backend, target.id)).map((row) => Date.parse(row.message.receivedAt))
        for (let i = 1; i < times.length; i++) expect(times[i]!).toBeGreaterThan(times[i - 1]!)
      }
      expect(s.reservations.size).toBe(0)
    })

    test('stores committed together that mix a large message with small ones keep every part byte for byte', async () => {
      clock.set('2026-03-04T08:00:00.000Z')
      const s = backend.services()
      const org = await organization(backend)
      const [x, y] = [await inbox(backend, org), await inbox(backend, org)]
      const big = Buffer.alloc(1536 * 1024, 7)
      big.write('the large one', 0)
      const raws = [
        mime('small 0'),
        mime('large', [{ name: 'big.bin', type: 'application/octet-stream', bytes: big }]),
        mime('small 1'),
        mime('small 2 with "quotes" and \\ backslashes'),
      ]
      const recipients: Reservation[] = []
      for (let i = 0; i < raws.length; i++) recipients.push(await admit(s, (i % 2 ? y : x).address))
      // Copies go in: the port hands a message's bytes over to the store, which may move them to
      // another thread (SQLite's blob stager), so a caller must not read them after.
      const results = await Promise.all(raws.map((raw, i) => deliver(s, [recipients[i]!], Buffer.from(raw))))
      expect(results.flat()).toHaveLength(4)
      const rows = [...(await stored(backend, x.id)), ...(await stored(backend, y.id))]
      for (const raw of raws) {
        const row = rows.find((candidate) => candidate.source && Buffer.compare(candidate.source.raw, raw) === 0)
        expect(row?.source?.sha256).toBe(sha256Hex(raw))
        expect(row?.content?.textBody).toContain('Hello from the contract')
      }
      expect(rows.map((row) => row.message.subject).sort()).toEqual([
        'large',
        'small 0',
        'small 1',
        'small 2 with "quotes" and \\ backslashes',
      ])
      const attachment = rows.find((row) => row.message.subject === 'large')!.attachments[0]!
      expect(Buffer.compare(attachment.content!.content, big)).toBe(0)
      expect(await monthlyCount(backend, org, '2026-03')).toBe(4)
    })

    test('concurrent stores into one inbox get distinct, increasing received_at and are all counted', async () => {
      clock.set('2026-03-04T09:00:00.000Z')
      const s = backend.services()
      const org = await organization(backend)
      const x = await inbox(backend, org)
      const recipients: Reservation[] = []
      for (let i = 0; i < 6; i++) recipients.push(await admit(s, x.address))
      // The clock does not move: every copy asks for the same millisecond.
      const results = await Promise.all(recipients.map((r, i) => deliver(s, [r], mime(`concurrent ${i}`))))
      expect(results.flat()).toHaveLength(6)
      const times = (await stored(backend, x.id)).map((row) => row.message.receivedAt)
      expect(new Set(times).size).toBe(6)
      expect(times).toEqual([0, 1, 2, 3, 4, 5].map((ms) => isoTime(Date.parse('2026-03-04T09:00:00.000Z') + ms)))
      expect(await bursts(backend, x.id)).toEqual({ '2026-03-04T09:00:00.000Z': 6 })
      expect(await monthlyCount(backend, org, '2026-03')).toBe(6)
    })

    test('stores naming inboxes of two organisations in opposite orders all succeed (no deadlock)', async () => {
      clock.set('2026-03-06T09:00:00.000Z')
      const s = backend.services()
      const [one, two] = [await organization(backend), await organization(backend)]
      const pairs: Promise<unknown>[] = []
      for (let round = 0; round < 4; round++) {
        const [x, y] = [await inbox(backend, one), await inbox(backend, two)]
        const [x2, y2] = [await inbox(backend, one), await inbox(backend, two)]
        const forward = [await admit(s, x.address), await admit(s, y.address)]
        const backward = [await admit(s, y2.address), await admit(s, x2.address)]
        pairs.push(deliver(s, forward), deliver(s, backward))
      }
      const results = await Promise.all(pairs)
      expect(results.flat()).toHaveLength(16)
      expect(await monthlyCount(backend, one, '2026-03')).toBe(8)
      expect(await monthlyCount(backend, two, '2026-03')).toBe(8)
    })

    test('the stored copies come back in the order the recipients were given (the 250 lists ids in RCPT order)', async () => {
      clock.set('2026-03-06T10:00:00.000Z')
      const s = backend.services()
      const [one, two] = [await organization(backend), await organization(backend)]
      const boxes = [
        await inbox(backend, one),
        await inbox(backend, two),
        await inbox(backend, one),
        await inbox(backend, two),
      ]
      // Both this order and its reverse: whatever order the store locks in, the answer follows the caller's.
      for (const order of [boxes, [...boxes].reverse()]) {
        const recipients: Reservation[] = []
        for (const box of order) recipients.push(await admit(s, box.address))
        const stored = await deliver(s, recipients)
        expect(stored.map((copy) => copy.inboxId)).toEqual(order.map((box) => box.id))
      }
    })

    test('a message stored after the clock stepped back is still the newest of its inbox', async () => {
      clock.set('2026-03-05T12:00:00.000Z')
      const s = backend.services()
      const org = await organization(backend)
      const x = await inbox(backend, org)
      await deliver(s, [await admit(s, x.address)])
      clock.set('2026-03-05T11:59:00.000Z')
      await deliver(s, [await admit(s, x.address)])
      expect((await stored(backend, x.id)).map((row) => row.message.receivedAt)).toEqual([
        '2026-03-05T12:00:00.000Z',
        '2026-03-05T12:00:00.001Z',
      ])
    })

    test('retention deletes expired messages with their parts, keeps the rest, and drops old burst buckets', async () => {
      clock.set('2026-05-01T08:00:00.000Z')
      const s = backend.services()
      const org = await organization(backend)
      const x = await inbox(backend, org)
      const raw = mime('expiring', [{ name: 'a.txt', type: 'text/plain', bytes: Buffer.from('attached') }])
      const old = await deliver(s, [await admit(s, x.address)], raw)
      clock.advance(DAY)
      const recent = await deliver(s, [await admit(s, x.address)], raw)
      const retention = s.config.limits.retentionDays * DAY
      // One millisecond before the first expires: nothing of this inbox goes.
      clock.set(Date.parse('2026-05-01T08:00:00.000Z') + retention - 1)
      await sweepOnce(s)
      expect(await stored(backend, x.id)).toHaveLength(2)
      clock.advance(1)
      const swept = await sweepOnce(s)
      expect(swept.messages).toBeGreaterThanOrEqual(1)
      expect((await stored(backend, x.id)).map((row) => row.message.id)).toEqual([recent[0]!.messageId])
      expect(await partsLeft(backend, [old[0]!.messageId])).toBe(0)
      expect(await partsLeft(backend, [recent[0]!.messageId])).toBe(4)
      // Usage is what was received this month, deleted or not.
      expect(await monthlyCount(backend, org, '2026-05')).toBe(2)
      // Burst buckets older than an hour are gone; they limit nothing any more.
      expect(await bursts(backend, x.id)).toEqual({})
    })

    test('two sweeps at once delete each expired message exactly once and both succeed', async () => {
      clock.set('2026-06-01T08:00:00.000Z')
      const s = backend.services()
      const org = await organization(backend)
      const x = await inbox(backend, org)
      for (let i = 0; i < 12; i++) {
        await deliver(s, [await admit(s, x.address)])
        clock.advance(60_000) // within the inbox's burst
      }
      clock.advance(s.config.limits.retentionDays * DAY + 1)
      const [one, two] = await Promise.all([sweepOnce(s), sweepOnce(s)])
      expect(await stored(backend, x.id)).toHaveLength(0)
      expect(one.messages + two.messages).toBeGreaterThanOrEqual(12)
    })

    test('the heartbeat is written, probed and read', async () => {
      clock.set('2026-07-01T00:00:00.000Z')
      const s = backend.services()
      await recordHeartbeat(s)
      expect(await heartbeatValue(backend)).toBe('2026-07-01T00:00:00.000Z')
      clock.advance(5_000)
      expect(await probeHeartbeatWrite(s)).toBe('committed')
      expect(await heartbeatValue(backend)).toBe('2026-07-01T00:00:05.000Z')
      await touchDatabase(s)
    })

    test('the heartbeat probe answers busy while another writer holds the lock, and does not wait for it', async () => {
      clock.set('2026-07-02T00:00:00.000Z')
      const s = backend.services()
      await recordHeartbeat(s)
      const sql = backend.postgres()
      if (sql) {
        // Another machine's transaction holding the heartbeat row.
        const holder = await sql.reserve()
        try {
          await holder`begin`
          await holder`update settings set value = 'held' where name = ${HEARTBEAT_SETTING}`
          const started = performance.now()
          expect(await probeHeartbeatWrite(s)).toBe('busy')
          expect(performance.now() - started).toBeLessThan(30_000)
          await holder`rollback`
        } finally {
          holder.release()
        }
      } else {
        // Another process's write transaction (the CLI) on the same file.
        const other = new Database(backend.storage().sqlite.filename)
        try {
          other.exec('BEGIN IMMEDIATE')
          expect(await probeHeartbeatWrite(s)).toBe('busy')
          other.exec('ROLLBACK')
        } finally {
          other.close()
        }
      }
      clock.advance(1_000)
      expect(await probeHeartbeatWrite(s)).toBe('committed')
      expect(await heartbeatValue(backend)).toBe('2026-07-02T00:00:01.000Z')
    })
  },
  { clock },
)
