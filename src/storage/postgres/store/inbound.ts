/**
 * The PostgreSQL side of InboundStore (../../port/inbound.ts). Unlike SQLite, writers from any
 * number of machines run at once, so the store serialises what must be exact itself:
 * - received_at only moves forward inside an inbox: a transaction-scoped advisory lock per
 *   inbox orders the stores of one inbox, so the newest received_at read under it is final.
 * - the inbox row is read FOR SHARE: deleting it waits for the store to commit (and then takes
 *   its messages along) instead of the store inserting under an inbox already gone.
 * - counters are increments in place (INSERT … ON CONFLICT DO UPDATE), never read-then-write.
 * - locks are taken in one order (inboxes sorted, then counter rows by organisation and inbox),
 *   so two stores naming the same inboxes in another order cannot deadlock.
 * A delivery admitted in PostgreSQL mode carries its hold: a unit of quota held in the database
 * since RCPT TO (../quota-reservations.ts), which every machine counts. The store converts it
 * in this transaction (the row goes, the stored counts go up), so across machines admission is
 * exact for stored mail and for mail in flight alike. countStoredMessage is the one place that
 * counts, for held deliveries and for deliveries without a hold.
 * Stores are group-committed (../group-store.ts): the deliveries of every message queued while
 * earlier ones commit share one transaction, taking every inbox lock first, in one order.
 * The transaction sends no NOTIFY: PostgreSQL serialises the commits of notifying transactions
 * on one database-wide lock held through the commit's flush, so every store of every machine
 * would commit one behind another. Wake-ups go out after the commit, coalesced per machine
 * (../wake-publisher.ts).
 */
import { asc, inArray, lt, lte, sql } from 'drizzle-orm'
import type postgres from 'postgres'
import type { AdmissionFacts, InboundDelivery, InboundPeriods, InboundStore, StoreInboundInput } from '../../port/inbound.ts'
import { type PostgresDb, type PostgresDbOrTx, type PostgresTx, rawTransaction } from '../db.ts'
import { countStoredMessage, type PendingConversion, type QuotaReservations } from '../quota-reservations.ts'
import type { Queryable, Sql } from '../client.ts'
import { inboundBursts, messages, settings } from '../schema.ts'
import { groupStore } from '../group-store.ts'
import { sendMessageRows } from './inbound-rows.ts'
import { rfc3339FromPostgres } from '../time.ts'

/** How long the /ready probe waits for another machine's transaction on the heartbeat row before answering busy. */
const HEARTBEAT_LOCK_WAIT = '1s'
/** lock_not_available: a lock wait ran past lock_timeout. */
const LOCK_NOT_AVAILABLE = '55P03'

interface FactsRow {
  inboxId: string
  organizationId: string
  monthlyEmails: number | null
  inboxBurst: number | null
  orgBurst: number | null
  monthReceived: number
  inboxAccepted: number
  orgAccepted: number
}

/**
 * Counts and limits for the active inbox with this local part (RCPT TO) or id (the store's
 * re-check), in `periods`: one statement, hand-written (it runs for every recipient).
 */
async function factsOf(db: Queryable, by: { localPart: string } | { inboxId: string }, periods: InboundPeriods): Promise<AdmissionFacts | null> {
  const match = 'localPart' in by ? db`i.local_part = ${by.localPart}` : db`i.id = ${by.inboxId}`
  const [row] = await db<FactsRow[]>`
    select i.id as "inboxId", i.organization_id as "organizationId",
      o.limit_monthly_emails as "monthlyEmails", o.limit_inbox_burst as "inboxBurst", o.limit_org_burst as "orgBurst",
      coalesce((select received from monthly_email_usage where organization_id = i.organization_id and month = ${periods.month}), 0)::int as "monthReceived",
      coalesce((select accepted from inbound_bursts where subject_id = i.id and bucket_starts_at = ${periods.bucket}), 0)::int as "inboxAccepted",
      coalesce((select accepted from inbound_bursts where subject_id = i.organization_id and bucket_starts_at = ${periods.bucket}), 0)::int as "orgAccepted"
    from inboxes i left join organizations o on o.id = i.organization_id
    where ${match} and i.state = 'active'
    limit 1`
  if (!row) return null
  return {
    inboxId: row.inboxId,
    organizationId: row.organizationId,
    limits: { monthlyEmails: row.monthlyEmails, inboxBurst: row.inboxBurst, orgBurst: row.orgBurst },
    counts: { monthReceived: row.monthReceived, inboxAccepted: row.inboxAccepted, orgAccepted: row.orgAccepted },
  }
}

/**
 * Whether a batch's failure may be one job's: an error the server raised about the statements
 * (a constraint, a deadlock), not one about the database as a whole: a connection lost or never
 * made (the client's CONNECTION_* codes, SQLSTATE class 08), too many connections or no room
 * (53), a server stopping or a statement past its timeout (57).
 */
const mayBeOneJob = (error: unknown): boolean => {
  const code = (error as { code?: unknown; cause?: { code?: unknown } } | null)?.code ?? (error as { cause?: { code?: unknown } } | null)?.cause?.code
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && !/^(08|53|57)/.test(code)
}

const byOrganizationThenInbox = (a: InboundDelivery, b: InboundDelivery) =>
  a.organizationId < b.organizationId ? -1 : a.organizationId > b.organizationId ? 1 : a.inboxId < b.inboxId ? -1 : a.inboxId > b.inboxId ? 1 : 0

/** What converts a held unit inside the storing transaction: createQuotaReservations. */
export type HoldConverter = Pick<QuotaReservations, 'beginConvert'>

/**
 * What storing one delivery must read first, under its inbox's lock: the inbox row FOR SHARE,
 * the inbox's newest received_at, and for a held delivery the first half of its conversion
 * (the organisation's quota lock and the hold's delete). Every statement is sent at the call,
 * raw (postgres.js sends a statement one microtask after `execute()`; Drizzle's builders take
 * more hops, so mixing the two could reorder what is sent), so they go out in one round trip,
 * with the inbox locks before them for the first delivery.
 */
interface DeliveryReads {
  inbox: Promise<{ address: string }[]>
  newest: Promise<{ at: string }[]>
  conversion: PendingConversion | null
}

function readFor(raw: postgres.TransactionSql, delivery: InboundDelivery, quota: HoldConverter | null): DeliveryReads {
  const { inboxId, hold } = delivery
  if (hold && !quota) throw new Error('a held delivery reached a PostgreSQL store without quota reservations')
  return {
    inbox: raw<{ address: string }[]>`select address from inboxes where id = ${inboxId} and state = 'active' for share`.execute(),
    // As text, whatever the client's type parsers: the same text Drizzle's column reads.
    newest: raw<{ at: string }[]>`select received_at::text as at from messages where inbox_id = ${inboxId} order by received_at desc limit 1`.execute(),
    conversion: hold && quota ? quota.beginConvert(raw, hold) : null,
  }
}

const answered = (reads: DeliveryReads): Promise<unknown>[] => [reads.inbox, reads.newest, ...(reads.conversion ? [reads.conversion.answered] : [])]

/**
 * Stores one delivery of a batch: its statements are pushed onto `pipelined` (sent, awaited by
 * the caller with every other delivery's). `newestWritten` holds the received_at this batch
 * gave each inbox so far: the newest read for a later delivery into the same inbox was sent
 * before those rows were.
 */
async function storeOne<D extends InboundDelivery>(
  tx: PostgresTx,
  input: StoreInboundInput<D>,
  delivery: D,
  reads: DeliveryReads,
  periods: InboundPeriods,
  pipelined: Promise<unknown>[],
  newestWritten: Map<string, string>,
): Promise<boolean> {
  const { message, decide } = input
  const [[inbox], [newestRead]] = await Promise.all([reads.inbox, reads.newest, ...answered(reads)])
  // Deleted since RCPT TO: its hold's row is already deleted, nothing counted (core's release
  // of the hold then finds it gone).
  if (!inbox) return false
  // The counters and the rows go out together and are awaited once: postgres.js
  // pipelines what is sent on one connection, the server runs it in the order sent, and a
  // failing statement aborts the transaction, so Promise.all rejects and nothing commits.
  // Rows another row references are sent first: the message, the attachments before their
  // contents. Only a re-check (a period turned since RCPT TO) waits for an answer before them.
  const { hold } = delivery
  if (hold && reads.conversion) {
    // Converted first: when its period turned and the new one is full, nothing is written.
    // Its counting statements are sent, and awaited with the rows below.
    const converted = await reads.conversion.finish(hold.limits, pipelined)
    if (!converted.counted) {
      decide.refused(delivery, converted.refusal, converted.limit)
      return false
    }
  } else if (decide.recheckNeeded(delivery)) {
    const facts = await factsOf(rawTransaction(tx), { inboxId: delivery.inboxId }, periods)
    if (!facts || !decide.recheck(delivery, facts)) return false
  }
  // Read under the inbox's lock, which this transaction holds until it commits: no other
  // store of this inbox can have written a newer one since.
  const newest = newestWritten.get(delivery.inboxId) ?? (newestRead ? rfc3339FromPostgres(newestRead.at) : undefined)
  const { receivedAt, expiresAt } = decide.times(delivery, newest)
  newestWritten.set(delivery.inboxId, receivedAt)
  pipelined.push(...sendMessageRows(rawTransaction(tx), delivery, message, { toAddress: inbox.address, receivedAt, expiresAt }))
  // A held unit was counted by its conversion; otherwise the counters here (quota-reservations.ts
  // counts in the file's lock order: the organisation's month, then the inbox's and the organisation's bursts).
  if (!hold) pipelined.push(countStoredMessage(rawTransaction(tx), delivery, periods.month, periods.bucket))
  decide.stored(delivery)
  return true
}

/** One delivery of one job of a batch. */
interface BatchEntry {
  job: number
  input: StoreInboundInput<InboundDelivery>
  delivery: InboundDelivery
}

/**
 * Stores the messages of several jobs (../group-store.ts) in one transaction; answers each
 * job's stored deliveries, in its caller's (RCPT) order. Round trips, however many jobs:
 * BEGIN; every inbox's lock, then every delivery's reads (and held units' first half of the
 * conversion); every row and counter; COMMIT.
 */
async function storeBatch(db: PostgresDb, quota: HoldConverter | null, inputs: StoreInboundInput<InboundDelivery>[]): Promise<InboundDelivery[][]> {
  return db.transaction(async (tx) => {
    const raw = rawTransaction(tx)
    // Locks in one order (see the file's comment): every inbox's first, then deliveries by
    // organisation and inbox, so two batches naming the same inboxes cannot deadlock.
    const entries: BatchEntry[] = inputs.flatMap((input, job) => input.deliveries.map((delivery) => ({ job, input, delivery })))
    entries.sort((a, b) => byOrganizationThenInbox(a.delivery, b.delivery) || a.job - b.job)
    const inboxIds = [...new Set(entries.map((entry) => entry.delivery.inboxId))].sort()
    const locks = inboxIds.map((inboxId) => raw`select pg_advisory_xact_lock(hashtextextended(${`pigeonhole:inbound:${inboxId}`}, 0))`.execute())
    const reads = entries.map((entry) => readFor(raw, entry.delivery, quota))
    const sent = [...locks, ...reads.flatMap(answered)]
    // A failure aborts the transaction and rejects every later answer too: those are awaited
    // one by one below (or never, past the failure), so each is marked handled here.
    for (const promise of sent) promise.catch(() => {})
    await Promise.all(sent)
    const periods = inputs.map((input) => input.decide.begin())
    const done = new Set<InboundDelivery>()
    const pipelined: Promise<unknown>[] = []
    const newestWritten = new Map<string, string>()
    for (const [i, entry] of entries.entries()) {
      const from = pipelined.length
      const stored = await storeOne(tx, entry.input, entry.delivery, reads[i]!, periods[entry.job]!, pipelined, newestWritten)
      // Awaited together below; a later delivery's wait (a re-check) may throw first, so each is marked handled now.
      for (const promise of pipelined.slice(from)) promise.catch(() => {})
      if (stored) done.add(entry.delivery)
    }
    await Promise.all(pipelined)
    return inputs.map((input) => input.deliveries.filter((delivery) => done.has(delivery)))
  })
}

async function upsertSetting(db: PostgresDbOrTx, name: string, value: string): Promise<void> {
  await db.insert(settings).values({ name, value }).onConflictDoUpdate({ target: settings.name, set: { value } })
}

/** `quota` converts held units (PostgreSQL mode's assembly); without it only deliveries without a hold can be stored. */
export function postgresInbound(db: PostgresDb, pool: Sql, quota: HoldConverter | null = null): InboundStore {
  // Deliveries from many SMTP connections share a transaction (../group-store.ts).
  const store = groupStore((inputs: StoreInboundInput<InboundDelivery>[]) => storeBatch(db, quota, inputs), mayBeOneJob)
  return {
    admissionFacts: (localPart, periods) => factsOf(pool, { localPart }, periods),

    storeMessage: <D extends InboundDelivery>(input: StoreInboundInput<D>) => store(input as unknown as StoreInboundInput<InboundDelivery>) as Promise<D[]>,

    async deleteExpiredMessages(now, limit) {
      // SKIP LOCKED: a second sweeper (another machine) takes other rows instead of waiting
      // for these or failing; contents, sources, search texts and attachments go by cascade.
      const batch = db.select({ id: messages.id }).from(messages).where(lte(messages.expiresAt, now)).orderBy(asc(messages.expiresAt)).limit(limit).for('update', { skipLocked: true })
      const deleted = await db.delete(messages).where(inArray(messages.id, batch)).returning({ inboxId: messages.inboxId })
      return { inboxIds: deleted.map((row) => row.inboxId) }
    },

    async deleteBurstBucketsBefore(before) {
      // Two sweepers deleting the same old buckets: the second waits for the first and finds them gone.
      await db.delete(inboundBursts).where(lt(inboundBursts.bucketStartsAt, before))
    },

    recordHeartbeat: (name, value) => upsertSetting(db, name, value),

    async probeHeartbeat(name, value) {
      // Every machine writes the same row, so another machine's heartbeat holds its lock for
      // a moment: waited for up to HEARTBEAT_LOCK_WAIT, then 'busy'. Anything else is 'failed'.
      try {
        await db.transaction(async (tx) => {
          await tx.execute(sql.raw(`set local lock_timeout = '${HEARTBEAT_LOCK_WAIT}'`))
          await upsertSetting(tx, name, value)
        })
        return { outcome: 'committed' }
      } catch (error) {
        // Drizzle wraps the driver's error; the SQLSTATE is on it or on its cause.
        const code = (error as { code?: string }).code ?? (error as { cause?: { code?: string } }).cause?.code
        if (code === LOCK_NOT_AVAILABLE) return { outcome: 'busy' }
        return { outcome: 'failed', error }
      }
    },

    async touch() {
      await db.execute(sql`select 1`)
    },
  }
}
