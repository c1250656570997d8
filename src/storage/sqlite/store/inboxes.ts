/**
 * The SQLite side of InboxStore (../../port/inboxes.ts). One process serves the API and SQLite
 * serialises writers, so each check-then-write below is exact inside its IMMEDIATE
 * transaction, and an 'in_progress' idempotency record always belongs to a running request
 * (records left by a crash are released at boot).
 */
import { and, count, eq, gt, inArray, lte, max, sql } from 'drizzle-orm'
import type { IdempotencyClaimOutcome, InboxStore } from '../../port/inboxes.ts'
import { newestFirst, olderThan } from '../../keyset.ts'
import { preparedPerDatabase } from '../../prepared.ts'
import { idempotencyRecords, inboxes, messages, settings } from '../schema.ts'
import type { Db, Storage, Tx } from '../../types.ts'
import { transaction } from '../transaction.ts'

const activeInbox = preparedPerDatabase((db) =>
  db
    .select()
    .from(inboxes)
    .where(
      and(
        eq(inboxes.id, sql.placeholder('inboxId')),
        eq(inboxes.organizationId, sql.placeholder('organizationId')),
        eq(inboxes.state, 'active'),
      ),
    )
    .prepare(),
)

const keyset = { at: inboxes.createdAt, id: inboxes.id }

/** The console's grouped stats read over `messages_by_inbox_newest` (exported so a test can check its query plan). */
export const inboxStatsQuery = (db: Db, inboxIds: string[], now: string) =>
  db
    .select({
      inboxId: messages.inboxId,
      messages: count(),
      unread: sql<number>`count(*) - count(${messages.readAt})`,
      lastReceivedAt: max(messages.receivedAt),
    })
    .from(messages)
    .where(and(inArray(messages.inboxId, inboxIds), gt(messages.expiresAt, now)))
    .groupBy(messages.inboxId)

function deleteRecord(tx: Tx, organizationId: string, key: string): void {
  tx.delete(idempotencyRecords)
    .where(and(eq(idempotencyRecords.organizationId, organizationId), eq(idempotencyRecords.idempotencyKey, key)))
    .run()
}

export function sqliteInboxes(storage: Storage): InboxStore {
  return {
    async reserveInbox({ organizationId, activeInboxLimit, candidates, createdAt }) {
      return transaction(storage, (tx) => {
        const held = tx
          .select({ n: sql<number>`count(*)` })
          .from(inboxes)
          .where(and(eq(inboxes.organizationId, organizationId), inArray(inboxes.state, ['active', 'creating'])))
          .get()!.n
        if (held >= activeInboxLimit) return { refused: 'quota' as const }
        for (const candidate of candidates) {
          const taken = tx
            .select({ id: inboxes.id })
            .from(inboxes)
            .where(eq(inboxes.localPart, candidate.localPart))
            .get()
          if (taken) continue
          const row = tx
            .insert(inboxes)
            .values({ ...candidate, organizationId, state: 'creating', createdAt })
            .returning()
            .get()
          return { row }
        }
        return { refused: 'taken' as const }
      })
    },

    async activateInbox({ inboxId, routingRuleId, idempotency }) {
      return transaction(storage, (tx) => {
        const activated = tx
          .update(inboxes)
          .set({ state: 'active', routingRuleId })
          .where(eq(inboxes.id, inboxId))
          .returning()
          .get()
        if (!activated) return null
        if (idempotency) {
          const { claim, responseBody } = idempotency
          tx.update(idempotencyRecords)
            .set({ state: 'completed', responseBody })
            .where(
              and(
                eq(idempotencyRecords.organizationId, claim.organizationId),
                eq(idempotencyRecords.idempotencyKey, claim.key),
              ),
            )
            .run()
        }
        return activated
      })
    },

    async discardReservation(inboxId) {
      transaction(storage, (tx) => tx.delete(inboxes).where(eq(inboxes.id, inboxId)).run())
    },

    // One process serves the API: at boot nothing is running, so every unfinished row is stale.
    async discardUnfinished() {
      return transaction(storage, (tx) => {
        const discarded = tx.delete(inboxes).where(eq(inboxes.state, 'creating')).returning().all()
        const releasedClaims = tx
          .delete(idempotencyRecords)
          .where(eq(idempotencyRecords.state, 'in_progress'))
          .returning()
          .all().length
        return { inboxes: discarded, releasedClaims }
      })
    },

    async findActiveInbox(organizationId, inboxId) {
      return activeInbox(storage.db).get({ inboxId, organizationId })
    },

    async listActiveInboxes({ organizationId, after, limit, addressContains }) {
      return storage.db
        .select()
        .from(inboxes)
        .where(
          and(
            eq(inboxes.organizationId, organizationId),
            eq(inboxes.state, 'active'),
            addressContains ? sql`instr(${inboxes.address}, ${addressContains}) > 0` : undefined,
            after ? olderThan(keyset, after) : undefined,
          ),
        )
        .orderBy(...newestFirst(keyset))
        .limit(limit)
        .all()
    },

    async deleteInbox(inboxId) {
      const deleted = transaction(storage, (tx) =>
        tx.delete(inboxes).where(eq(inboxes.id, inboxId)).returning({ id: inboxes.id }).all(),
      )
      return deleted.length > 0
    },

    async inboxStats({ inboxIds, now }) {
      if (inboxIds.length === 0) return []
      return inboxStatsQuery(storage.db, inboxIds, now).all()
    },

    async claimIdempotencyKey({ organizationId, key, fingerprint, now, expiresAt }) {
      return transaction(storage, (tx): IdempotencyClaimOutcome => {
        const record = tx
          .select()
          .from(idempotencyRecords)
          .where(and(eq(idempotencyRecords.organizationId, organizationId), eq(idempotencyRecords.idempotencyKey, key)))
          .get()
        // An in-progress record always belongs to a running request: one process serves the API,
        // a failed request deletes its record, and records left by a crash are released at boot.
        const expired = record && Date.parse(record.expiresAt) <= Date.parse(now)
        if (record && !expired) {
          if (record.requestFingerprint !== fingerprint) return { outcome: 'reused' }
          if (record.state === 'in_progress') return { outcome: 'in_progress' }
          return { outcome: 'cached', responseBody: record.responseBody }
        }
        if (record) deleteRecord(tx, organizationId, key)
        tx.insert(idempotencyRecords)
          .values({
            organizationId,
            idempotencyKey: key,
            requestFingerprint: fingerprint,
            state: 'in_progress',
            createdAt: now,
            expiresAt,
          })
          .run()
        return { outcome: 'claimed', claim: { organizationId, key, claimId: null } }
      })
    },

    async releaseIdempotencyClaim(claim) {
      transaction(storage, (tx) => deleteRecord(tx, claim.organizationId, claim.key))
    },

    async sweepExpiredIdempotencyRecords({ now, batch }) {
      return transaction(storage, (tx) => {
        const rows = tx
          .select({ organizationId: idempotencyRecords.organizationId, key: idempotencyRecords.idempotencyKey })
          .from(idempotencyRecords)
          .where(lte(idempotencyRecords.expiresAt, now))
          .limit(batch)
          .all()
        for (const row of rows) deleteRecord(tx, row.organizationId, row.key)
        return rows.length
      })
    },

    async cursorSecret(candidate) {
      storage.db.insert(settings).values({ name: 'cursor_secret', value: candidate }).onConflictDoNothing().run()
      return storage.db.select().from(settings).where(eq(settings.name, 'cursor_secret')).get()!.value
    },
  }
}
