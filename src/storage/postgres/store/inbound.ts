/**
 * The PostgreSQL side of InboundStore (../../port/inbound.ts). Unlike SQLite, writers from any
 * number of machines run at once, so the store serialises what must be exact itself:
 * - received_at only moves forward inside an inbox: a transaction-scoped advisory lock per
 *   inbox orders the stores of one inbox, so the newest received_at read under it is final.
 * - the inbox row is read FOR SHARE: deleting it waits for the store to commit (and then takes
 *   its messages along) instead of the store inserting under an inbox already gone.
 * - counters are increments in place (INSERT … ON CONFLICT DO UPDATE), never read-then-write.
 * - locks are taken in one order (inboxes sorted, then, only for units re-checked, organisations'
 *   quota locks sorted, then counter rows sorted, in one statement), so two stores naming the same
 *   inboxes in another order cannot deadlock. A unit still held takes no quota lock: holds of
 *   its organisation do not wait for this transaction's commit flush.
 * A delivery admitted in PostgreSQL mode carries its hold: a unit of quota held in the database
 * since RCPT TO (../quota-reservations.ts), which every machine counts. The store converts it
 * in this transaction (the row goes, the stored counts go up), so across machines admission is
 * exact for stored mail and for mail in flight alike. StoredCounts is the one place that
 * counts, for held deliveries and for deliveries without a hold.
 * Stores are group-committed (../group-store.ts): the deliveries of every message queued while
 * earlier ones commit share one transaction, taking every inbox lock first, in one order. What
 * a batch sends does not grow with its size in statements: its locks, reads, rows and counts
 * are a statement each for all its deliveries (store/inbound-rows.ts).
 * The transaction sends no NOTIFY: PostgreSQL serialises the commits of notifying transactions
 * on one database-wide lock held through the commit's flush, so every store of every machine
 * would commit one behind another. Wake-ups go out after the commit, coalesced per machine
 * (../wake-publisher.ts).
 */
import { asc, inArray, lt, lte, sql } from 'drizzle-orm'
import type postgres from 'postgres'
import type {
  AdmissionFacts,
  InboundDelivery,
  InboundPeriods,
  InboundStore,
  StoreInboundInput,
} from '../../port/inbound.ts'
import type { PostgresDb, PostgresDbOrTx } from '../db.ts'
import { type PendingConversion, type QuotaReservations, StoredCounts } from '../quota-reservations.ts'
import type { Queryable, Sql } from '../client.ts'
import { inboundBursts, messages, settings } from '../schema.ts'
import { groupStore } from '../group-store.ts'
import { MessageRows } from './inbound-rows.ts'
import { textArray } from '../array-literal.ts'
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
async function factsOf(
  db: Queryable,
  by: { localPart: string } | { inboxId: string },
  periods: InboundPeriods,
): Promise<AdmissionFacts | null> {
  const match = 'localPart' in by ? db`i.local_part = ${by.localPart}` : db`i.id = ${by.inboxId}`
  const [row] = await db<FactsRow[]>`
    select i.id as "inboxId", i.organization_id as "organizationId",
      o.limit_monthly_emails as "monthlyEmails", o.limit_inbox_burst as "inboxBurst", o.limit_org_burst as "orgBurst",
      coalesce((select received from monthly_email_usage
                where organization_id = i.organization_id and month = ${periods.month}), 0)::int as "monthReceived",
      coalesce((select accepted from inbound_bursts
                where subject_id = i.id and bucket_starts_at = ${periods.bucket}), 0)::int as "inboxAccepted",
      coalesce((select accepted from inbound_bursts
                where subject_id = i.organization_id and bucket_starts_at = ${periods.bucket}), 0)::int as "orgAccepted"
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
  const code =
    (error as { code?: unknown; cause?: { code?: unknown } } | null)?.code ??
    (error as { cause?: { code?: unknown } } | null)?.cause?.code
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && !/^(08|53|57)/.test(code)
}

const byOrganizationThenInbox = (a: InboundDelivery, b: InboundDelivery) =>
  a.organizationId < b.organizationId
    ? -1
    : a.organizationId > b.organizationId
      ? 1
      : a.inboxId < b.inboxId
        ? -1
        : a.inboxId > b.inboxId
          ? 1
          : 0

/** What converts a held unit inside the storing transaction: createQuotaReservations. */
export type HoldConverter = Pick<QuotaReservations, 'beginConvert'>

/**
 * `work` in postgres.js's transaction, its COMMIT sent behind the statements it answers
 * unawaited in `sent`, without waiting for their answers: the counter rows those statements
 * update stay locked from their update to the commit, and every other store of the same
 * organisation waits for that lock (the monthly usage, the organisation's burst). Awaited
 * first, the lock was held a round trip longer, and on a busy machine our process's turn to
 * read the answers and send the COMMIT. A statement of `sent` that fails aborts the
 * transaction, and PostgreSQL answers the COMMIT behind it with a rollback (its tag, not an
 * error): `sent` is awaited after the COMMIT, so the call still rejects, with the failing
 * statement's error, and nothing counts as stored unless every statement succeeded and the
 * COMMIT answered. Not on a reserved connection, which would let the BEGIN go out with the
 * reads too (one round trip fewer): a reservation waits for an idle connection, where `begin`
 * hands its BEGIN to a busy one too, and under load a connection is rarely idle
 * (bench/README.md, "CPU per message").
 */
async function inTransaction<T>(
  pool: Sql,
  work: (tx: postgres.TransactionSql) => Promise<{ result: T; sent: Promise<unknown>[] }>,
): Promise<T> {
  let sent: Promise<unknown>[] = []
  const [result] = (await pool.begin(async (tx) => {
    const done = await work(tx)
    sent = done.sent
    return [done.result]
  })) as [T]
  // The first failure in the order sent is the cause; every statement behind it only reports
  // the aborted transaction (25P02), and may settle first.
  const failed = (await Promise.allSettled(sent)).find((answer) => answer.status === 'rejected')
  if (failed) throw failed.reason
  return result
}

/**
 * The batch's active inboxes (only those are stored to), FOR SHARE, each with its newest
 * received_at as text whatever the client's type parsers (the same text Drizzle's column
 * reads); $1: the inbox ids, sorted. The subquery orders by `m.received_at`, qualified: a bare
 * `received_at` there names the output column, the text, which no index orders, so every store
 * read and sorted all its inbox's messages. Exported for the test of its plan.
 */
export const INBOXES_FOR_STORE = `
    select id, address,
      (select m.received_at from messages m where m.inbox_id = i.id order by m.received_at desc limit 1)::text as at
    from inboxes i
    where id = any($1::text[]) and state = 'active'
    order by id for share of i`

/** One delivery of one job of a batch. */
interface BatchEntry {
  job: number
  input: StoreInboundInput<InboundDelivery>
  delivery: InboundDelivery
}

/**
 * What a batch reads first, sent at the call in one go (after its BEGIN): every inbox's lock
 * (sorted; one statement), the inbox rows FOR SHARE with each one's newest received_at, and for
 * held deliveries the first half of their conversion (the holds' delete; the quota locks of
 * units to re-check, once it answers). Each is one statement for the whole batch.
 */
function sendReads(tx: postgres.TransactionSql, entries: BatchEntry[], quota: HoldConverter | null) {
  const inboxIds = textArray([...new Set(entries.map((entry) => entry.delivery.inboxId))].sort())
  const held = entries.filter((entry) => entry.delivery.hold)
  if (held.length > 0 && !quota)
    throw new Error('a held delivery reached a PostgreSQL store without quota reservations')
  const locked = tx`
    select count(pg_advisory_xact_lock(hashtextextended('pigeonhole:inbound:' || i, 0)))
    from unnest(${inboxIds}::text[]) as t(i)`.execute()
  const inboxes = tx
    .unsafe<{ id: string; address: string; at: string | null }[]>(INBOXES_FOR_STORE, [inboxIds], { prepare: true })
    .execute()
  const conversion =
    quota && held.length > 0
      ? quota.beginConvert(
          tx,
          held.map((entry) => entry.delivery.hold!),
        )
      : null
  const units = new Map<InboundDelivery, PendingConversion>(
    held.map((entry, i) => [entry.delivery, conversion!.units[i]!]),
  )
  const answered = [locked, inboxes, ...(conversion ? [conversion.answered] : [])]
  return { inboxes, units, answered }
}

/**
 * Stores the messages of several jobs (../group-store.ts) in one transaction; answers each
 * job's stored deliveries, in its caller's (RCPT) order. Four round trips however many jobs:
 * BEGIN; the batch's locks and reads; its rows and counts; COMMIT. A re-check (a period turned
 * since RCPT TO, rare) waits for its counts in between.
 */
async function storeBatch(
  pool: Sql,
  quota: HoldConverter | null,
  inputs: StoreInboundInput<InboundDelivery>[],
): Promise<InboundDelivery[][]> {
  // Locks in one order (see the file's comment): every inbox's first, then organisations', then
  // counter rows, each sorted, so two batches naming the same inboxes cannot deadlock.
  const entries: BatchEntry[] = inputs.flatMap((input, job) =>
    input.deliveries.map((delivery) => ({ job, input, delivery })),
  )
  entries.sort((a, b) => byOrganizationThenInbox(a.delivery, b.delivery) || a.job - b.job)
  return inTransaction(pool, async (tx) => {
    const reads = sendReads(tx, entries, quota)
    // A failure aborts the transaction and rejects every later answer too: each is marked handled here.
    for (const promise of reads.answered) promise.catch(() => {})
    await Promise.all(reads.answered)
    const inboxRows = await reads.inboxes
    const addressOf = new Map(inboxRows.map((row) => [row.id, row.address]))
    // Read under the inboxes' locks, which this transaction holds until it commits: no other
    // store of these inboxes can write a newer one meanwhile; this batch's own go in as written.
    const newestOf = new Map(
      inboxRows.flatMap((row) => (row.at === null ? [] : [[row.id, rfc3339FromPostgres(row.at)] as const])),
    )
    const periods = inputs.map((input) => input.decide.begin())
    const rows = new MessageRows()
    const counts = new StoredCounts()
    const sent: Promise<unknown>[] = []
    const done = new Set<InboundDelivery>()
    for (const { job, input, delivery } of entries) {
      const { decide } = input
      const toAddress = addressOf.get(delivery.inboxId)
      // Deleted since RCPT TO: its hold's row is already deleted, nothing counted (core's release
      // of the hold then finds it gone).
      if (toAddress === undefined) continue
      const unit = reads.units.get(delivery)
      if (delivery.hold && unit) {
        // Converted first: when its period turned and the new one is full, nothing is written.
        const converted = await unit.finish(delivery.hold.limits, counts)
        if (!converted.counted) {
          decide.refused(delivery, converted.refusal, converted.limit)
          continue
        }
      } else if (decide.recheckNeeded(delivery)) {
        // The counts read must include this batch's earlier messages: sent first.
        sent.push(counts.send(tx))
        const facts = await factsOf(tx, { inboxId: delivery.inboxId }, periods[job]!)
        if (!facts || !decide.recheck(delivery, facts)) continue
        counts.add(delivery, periods[job]!.month, periods[job]!.bucket)
      } else counts.add(delivery, periods[job]!.month, periods[job]!.bucket)
      const { receivedAt, expiresAt } = decide.times(delivery, newestOf.get(delivery.inboxId))
      newestOf.set(delivery.inboxId, receivedAt)
      rows.add(delivery, input.message, { toAddress, receivedAt, expiresAt })
      decide.stored(delivery)
      done.add(delivery)
    }
    // The rows before the counts: a failing row (a constraint) aborts the transaction before them.
    sent.push(...rows.send(tx), counts.send(tx))
    for (const promise of sent) promise.catch(() => {})
    return { result: inputs.map((input) => input.deliveries.filter((delivery) => done.has(delivery))), sent }
  })
}

async function upsertSetting(db: PostgresDbOrTx, name: string, value: string): Promise<void> {
  await db.insert(settings).values({ name, value }).onConflictDoUpdate({ target: settings.name, set: { value } })
}

/**
 * `quota` converts held units (PostgreSQL mode's assembly); without it only deliveries without a
 * hold can be stored.
 */
export function postgresInbound(db: PostgresDb, pool: Sql, quota: HoldConverter | null = null): InboundStore {
  // Deliveries from many SMTP connections share a transaction (../group-store.ts).
  const store = groupStore(
    (inputs: StoreInboundInput<InboundDelivery>[]) => storeBatch(pool, quota, inputs),
    mayBeOneJob,
    // Every store of an organisation updates its monthly usage and burst rows.
    (input) => input.deliveries.map((delivery) => delivery.organizationId),
  )
  return {
    admissionFacts: (localPart, periods) => factsOf(pool, { localPart }, periods),

    storeMessage: <D extends InboundDelivery>(input: StoreInboundInput<D>) =>
      store(input as unknown as StoreInboundInput<InboundDelivery>) as Promise<D[]>,

    async deleteExpiredMessages(now, limit) {
      // SKIP LOCKED: a second sweeper (another machine) takes other rows instead of waiting
      // for these or failing; contents, sources, search texts and attachments go by cascade.
      const batch = db
        .select({ id: messages.id })
        .from(messages)
        .where(lte(messages.expiresAt, now))
        .orderBy(asc(messages.expiresAt))
        .limit(limit)
        .for('update', { skipLocked: true })
      const deleted = await db
        .delete(messages)
        .where(inArray(messages.id, batch))
        .returning({ inboxId: messages.inboxId })
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
