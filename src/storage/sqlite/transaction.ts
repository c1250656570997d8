/**
 * How the SQLite adapter writes. `transaction(storage, work)` runs `work` in one IMMEDIATE
 * transaction, or, when a transaction is already open on this connection (an operation
 * called from inside another's transaction, or a job of the inbound group commit), inside
 * that one: the caller's commit then covers both, and a throw anywhere rolls back both.
 *
 * `work` must be synchronous (see Storage.write): an await inside would let the rest of it
 * run after the commit. The server has one connection and one thread, so the statements of a
 * synchronous read see one state of the database without a transaction of their own.
 */
import type { Storage, Tx } from '../types.ts'

/** The transaction open on each storage handle while its work runs (at most one: `work` is synchronous). */
const open = new WeakMap<Storage, Tx>()

function within<T>(storage: Storage, tx: Tx, work: (tx: Tx) => T): T {
  open.set(storage, tx)
  try {
    return work(tx)
  } finally {
    open.delete(storage)
  }
}

/** Runs `work` in the open transaction, or in a new IMMEDIATE one that commits when it returns. */
export function transaction<T>(storage: Storage, work: (tx: Tx) => T): T {
  const outer = open.get(storage)
  if (outer) return work(outer)
  return storage.write((tx) => within(storage, tx, work))
}

/**
 * `work` as a job of the group commit (Storage.writeInGroup: it shares one COMMIT and one
 * fsync with the other jobs of its event-loop turn, and settles after the WAL is durable).
 * Operations it calls reuse the batch's transaction through `transaction`.
 */
export function transactionInGroup<T>(
  storage: Storage,
  work: (tx: Tx) => T,
  bytes?: number,
  /** Called once committed, before the sync (Storage.writeInGroup). */
  committed?: () => void,
): Promise<T> {
  return storage.writeInGroup((tx) => within(storage, tx, work), bytes, committed)
}
