/**
 * The SQLite transaction helpers (src/storage/sqlite/transaction.ts) for the verbs that still
 * query `s.storage` directly rather than through the storage port; they share one record of
 * the open transaction with the SQLite adapter, so a verb and an operation it calls join.
 */
import type { Tx } from '../storage/database.ts'
import { transaction as sqliteTransaction, transactionInGroup as sqliteTransactionInGroup } from '../storage/sqlite/transaction.ts'
import type { Services } from './services.ts'

/** Runs `work` in the open transaction, or in a new IMMEDIATE one that commits when it returns. */
export const transaction = <T>(s: Pick<Services, 'storage'>, work: (tx: Tx) => T): T => sqliteTransaction(s.storage, work)

/** `work` as a job of the group commit; verbs it calls reuse the batch's transaction. */
export const transactionInGroup = <T>(s: Pick<Services, 'storage'>, work: (tx: Tx) => T, bytes?: number): Promise<T> => sqliteTransactionInGroup(s.storage, work, bytes)
