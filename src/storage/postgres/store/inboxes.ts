/**
 * The PostgreSQL side of InboxStore (../../port/inboxes.ts). Any number of machines write at
 * once, so every check-then-write that must be exact holds a lock, named at each operation:
 * - the active-inbox quota: a transaction-scoped advisory lock on the organisation;
 * - a taken local part: the unique index, with ON CONFLICT DO NOTHING;
 * - an idempotency key: a transaction-scoped advisory lock on (organisation, key), and a lease
 *   per 'in_progress' record (`idempotency_leases`) that this machine's heartbeat renews. A
 *   request on another machine that finds a live lease answers in_progress; once a dead
 *   machine's lease has run out, the next request with that key takes it over, and the old
 *   holder can no longer complete it.
 * Leases run on the database's clock (`now()`), which every machine shares: they measure
 * whether a machine is alive, not the service's (injectable) time. The heartbeat renews only
 * the claims of requests still running here; a claim whose release failed (the database away)
 * is released again until the database answers (lease-book.ts), so a retry with the same key
 * is not answered in_progress for longer than the outage.
 */
import { randomBytes } from 'node:crypto'
import { and, count, eq, gt, inArray, lte, max, sql } from 'drizzle-orm'
import { newestFirst, olderThan } from '../../keyset.ts'
import type { IdempotencyClaim, IdempotencyClaimOutcome, InboxStore } from '../../port/inboxes.ts'
import type { InboxRow } from '../../rows.ts'
import { idempotencyLeases } from '../coordination-schema.ts'
import type { PostgresDb, PostgresDbOrTx } from '../db.ts'
import { createLeaseBook } from '../lease-book.ts'
import { newLeaseHolder } from '../lease-holder.ts'
import { transaction } from '../transaction.ts'
import { idempotencyRecords, inboxes, messages, settings } from '../schema.ts'

/** How long a dead machine's request still blocks its key; renewed every third of it. */
const LEASE_SECONDS = 30

const keyset = { at: inboxes.createdAt, id: inboxes.id }

const lockOrganizationQuota = (tx: PostgresDbOrTx, organizationId: string) =>
  tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${`pigeonhole.inbox-quota.${organizationId}`}, 0))`)

// One lock per (organisation, key): claim, completion and release of a key serialise on it.
const lockIdempotencyKey = (tx: PostgresDbOrTx, organizationId: string, key: string) =>
  tx.execute(
    sql`select pg_advisory_xact_lock(hashtextextended(${`pigeonhole.idempotency.${organizationId}\n${key}`}, 0))`,
  )

const recordOf = (organizationId: string, key: string) =>
  and(eq(idempotencyRecords.organizationId, organizationId), eq(idempotencyRecords.idempotencyKey, key))
const leaseOf = (organizationId: string, key: string) =>
  and(eq(idempotencyLeases.organizationId, organizationId), eq(idempotencyLeases.idempotencyKey, key))

/** Deletes our lease on a claim; false when the claim was taken over (or already finished). */
async function dropOwnLease(tx: PostgresDbOrTx, claim: IdempotencyClaim): Promise<boolean> {
  if (claim.claimId === null) return false
  const ours = await tx
    .delete(idempotencyLeases)
    .where(and(leaseOf(claim.organizationId, claim.key), eq(idempotencyLeases.claimId, claim.claimId)))
    .returning({ key: idempotencyLeases.idempotencyKey })
  return ours.length > 0
}

/** Thrown inside a transaction to roll it back and answer "not done" (never leaves the adapter). */
/**
 * InboxStore with close(): the lease heartbeat stops and this holder's idempotency leases go.
 * `holder` is the process's one name in lease rows (../lease-holder.ts).
 */
export function postgresInboxes(db: PostgresDb, holder = newLeaseHolder()): InboxStore & { close(): Promise<void> } {
  const releaseClaim = (claim: IdempotencyClaim) =>
    db.transaction(async (tx) => {
      await lockIdempotencyKey(tx, claim.organizationId, claim.key)
      // Only our own record: after a takeover the row belongs to the request that took it.
      if (await dropOwnLease(tx, claim)) {
        await tx
          .delete(idempotencyRecords)
          .where(and(recordOf(claim.organizationId, claim.key), eq(idempotencyRecords.state, 'in_progress')))
      }
    })
  // Claims of requests running here, by claim id.
  const claims = createLeaseBook<IdempotencyClaim>({
    leaseMs: LEASE_SECONDS * 1000,
    async renew(held) {
      await db
        .update(idempotencyLeases)
        .set({ expiresAt: sql`now() + make_interval(secs => ${LEASE_SECONDS})` })
        .where(inArray(idempotencyLeases.claimId, [...held.keys()]))
    },
    async release(owed) {
      for (const claim of owed.values()) await releaseClaim(claim)
    },
  })

  return {
    async close() {
      claims.stop()
      // A request of this machine still in progress is over once it stops: without its lease,
      // the next request with that key on another machine takes the key over at once.
      await db.delete(idempotencyLeases).where(eq(idempotencyLeases.holder, holder))
    },

    reserveInbox({ organizationId, activeInboxLimit, candidates, createdAt }) {
      return db.transaction(async (tx) => {
        // Two machines creating the organisation's last allowed inbox: the second waits here and
        // then counts the first's 'creating' row.
        await lockOrganizationQuota(tx, organizationId)
        const [held] = await tx
          .select({ n: count() })
          .from(inboxes)
          .where(and(eq(inboxes.organizationId, organizationId), inArray(inboxes.state, ['active', 'creating'])))
        if ((held?.n ?? 0) >= activeInboxLimit) return { refused: 'quota' as const }
        for (const candidate of candidates) {
          // The unique index on local_part decides a race for one address across organisations.
          const [row] = await tx
            .insert(inboxes)
            .values({ ...candidate, organizationId, state: 'creating', createdAt })
            .onConflictDoNothing({ target: inboxes.localPart })
            .returning()
          if (row) return { row }
        }
        return { refused: 'taken' as const }
      })
    },

    async activateInbox({ inboxId, routingRuleId, idempotency }) {
      // Rolled back with null: the reserved row is gone, or the claim was taken over.
      const activated = await transaction<InboxRow, null>(db, async (tx, rollBackWith) => {
        const [activated] = await tx
          .update(inboxes)
          .set({ state: 'active', routingRuleId })
          .where(eq(inboxes.id, inboxId))
          .returning()
        if (!activated) return rollBackWith(null)
        if (idempotency) {
          const { claim, responseBody } = idempotency
          // Ordered against a takeover by the key's lock: if our lease is gone, another request
          // owns the key now, and this inbox must not become active.
          await lockIdempotencyKey(tx, claim.organizationId, claim.key)
          if (!(await dropOwnLease(tx, claim))) return rollBackWith(null)
          await tx
            .update(idempotencyRecords)
            .set({ state: 'completed', responseBody })
            .where(recordOf(claim.organizationId, claim.key))
        }
        return activated
      })
      // Completed with the inbox: the lease went in the same transaction.
      if (activated && idempotency?.claim.claimId) claims.forget(idempotency.claim.claimId)
      return activated
    },

    async discardReservation(inboxId) {
      await db.delete(inboxes).where(eq(inboxes.id, inboxId))
    },

    // Other machines keep serving while this one boots: only rows older than any running
    // createInbox, and claims whose lease ran out (or that have none), are abandoned.
    discardUnfinished({ staleBefore }) {
      return db.transaction(async (tx) => {
        const discarded = await tx
          .delete(inboxes)
          .where(and(eq(inboxes.state, 'creating'), lte(inboxes.createdAt, staleBefore)))
          .returning()
        const released = await tx.execute<{ organization_id: string }>(sql`
          delete from idempotency_records r
          where r.state = 'in_progress' and not exists (
            select 1 from idempotency_leases l
            where l.organization_id = r.organization_id and l.idempotency_key = r.idempotency_key
              and l.expires_at > now())
          returning r.organization_id`)
        await tx.delete(idempotencyLeases).where(lte(idempotencyLeases.expiresAt, sql`now()`))
        return { inboxes: discarded, releasedClaims: released.length }
      })
    },

    async findActiveInbox(organizationId, inboxId) {
      const [row] = await db
        .select()
        .from(inboxes)
        .where(and(eq(inboxes.id, inboxId), eq(inboxes.organizationId, organizationId), eq(inboxes.state, 'active')))
        .limit(1)
      return row
    },

    listActiveInboxes({ organizationId, after, limit, addressContains }) {
      return db
        .select()
        .from(inboxes)
        .where(
          and(
            eq(inboxes.organizationId, organizationId),
            eq(inboxes.state, 'active'),
            addressContains ? sql`strpos(${inboxes.address}, ${addressContains}) > 0` : undefined,
            after ? olderThan(keyset, after) : undefined,
          ),
        )
        .orderBy(...newestFirst(keyset))
        .limit(limit)
    },

    async deleteInbox(inboxId) {
      const deleted = await db.delete(inboxes).where(eq(inboxes.id, inboxId)).returning({ id: inboxes.id })
      return deleted.length > 0
    },

    async inboxStats({ inboxIds, now }) {
      if (inboxIds.length === 0) return []
      return db
        .select({
          inboxId: messages.inboxId,
          messages: count(),
          unread: sql<number>`(count(*) - count(${messages.readAt}))::int`,
          lastReceivedAt: max(messages.receivedAt),
        })
        .from(messages)
        .where(and(inArray(messages.inboxId, inboxIds), gt(messages.expiresAt, now)))
        .groupBy(messages.inboxId)
    },

    async claimIdempotencyKey({ organizationId, key, fingerprint, now, expiresAt }) {
      // Chosen before the transaction: if its outcome is unknown (the connection dropped around
      // the commit), this claim is released in the background like any failed release.
      const claim: IdempotencyClaim = { organizationId, key, claimId: `idem_${randomBytes(16).toString('hex')}` }
      claims.hold(claim.claimId!, claim)
      claims.start()
      let outcome: IdempotencyClaimOutcome
      try {
        outcome = await db.transaction(async (tx): Promise<IdempotencyClaimOutcome> => {
          await lockIdempotencyKey(tx, organizationId, key)
          const [existing] = await tx
            .select({
              fingerprint: idempotencyRecords.requestFingerprint,
              state: idempotencyRecords.state,
              responseBody: idempotencyRecords.responseBody,
              expiresAt: idempotencyRecords.expiresAt,
              leaseLive: sql<boolean | null>`${idempotencyLeases.expiresAt} > now()`,
            })
            .from(idempotencyRecords)
            .leftJoin(
              idempotencyLeases,
              and(
                eq(idempotencyLeases.organizationId, idempotencyRecords.organizationId),
                eq(idempotencyLeases.idempotencyKey, idempotencyRecords.idempotencyKey),
              ),
            )
            .where(recordOf(organizationId, key))
          if (existing && Date.parse(existing.expiresAt) > Date.parse(now)) {
            if (existing.fingerprint !== fingerprint) return { outcome: 'reused' }
            if (existing.state === 'completed') return { outcome: 'cached', responseBody: existing.responseBody }
            if (existing.leaseLive) return { outcome: 'in_progress' }
            // In progress, but its machine stopped renewing: that request is dead; take the key over.
          }
          await tx.delete(idempotencyLeases).where(leaseOf(organizationId, key))
          await tx.delete(idempotencyRecords).where(recordOf(organizationId, key))
          await tx.insert(idempotencyRecords).values({
            organizationId,
            idempotencyKey: key,
            requestFingerprint: fingerprint,
            state: 'in_progress',
            createdAt: now,
            expiresAt,
          })
          await tx.insert(idempotencyLeases).values({
            organizationId,
            idempotencyKey: key,
            claimId: claim.claimId!,
            holder,
            expiresAt: sql`now() + make_interval(secs => ${LEASE_SECONDS})`,
          })
          return { outcome: 'claimed', claim }
        })
      } catch (error) {
        claims.orphan(claim.claimId!, claim)
        throw error
      }
      if (outcome.outcome !== 'claimed') claims.forget(claim.claimId!)
      return outcome
    },

    async releaseIdempotencyClaim(claim) {
      if (claim.claimId === null) return
      await claims.release(claim.claimId, claim)
    },

    async sweepExpiredIdempotencyRecords({ now, batch }) {
      // One statement: the batch is chosen and deleted together, so two machines sweeping at
      // once delete disjoint rows (a row the other already deleted is simply not there).
      const expired = db
        .select({ organizationId: idempotencyRecords.organizationId, key: idempotencyRecords.idempotencyKey })
        .from(idempotencyRecords)
        .where(lte(idempotencyRecords.expiresAt, now))
        .limit(batch)
      const deleted = await db
        .delete(idempotencyRecords)
        .where(sql`(${idempotencyRecords.organizationId}, ${idempotencyRecords.idempotencyKey}) in ${expired}`)
        .returning({ key: idempotencyRecords.idempotencyKey })
      return deleted.length
    },

    async cursorSecret(candidate) {
      // The first machine to start stores its candidate; every later one (and every restart) reads it.
      await db
        .insert(settings)
        .values({ name: 'cursor_secret', value: candidate })
        .onConflictDoNothing({ target: settings.name })
      const [row] = await db.select().from(settings).where(eq(settings.name, 'cursor_secret')).limit(1)
      return row!.value
    },
  }
}
