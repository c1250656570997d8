/**
 * How the PostgreSQL adapter writes, beside SQLite's ../sqlite/transaction.ts. An operation is
 * one transaction; when its work finds it must not go on (a limit reached, an address taken,
 * a claim lost to a takeover) it rolls back and answers what happened, as the port's
 * conventions ask (`{ refused: … }`, null), rather than throw.
 *
 * `work` gets the transaction and `rollBackWith(answer)`: calling it ends the work, rolls back
 * everything the transaction wrote, and the operation resolves with `answer`. Any other throw
 * rolls back and rejects as usual. SQLite has no need of this: its synchronous work decides
 * before it writes, on the one connection no other writer shares.
 */
import type postgres from 'postgres'
import type { Sql } from './client.ts'
import type { PostgresDb, PostgresTx } from './db.ts'

export type RollBackWith<A> = (answer: A) => never

/**
 * What rollBackWith throws: private to this module, and to one
 * transaction (an inner one's answer is not an outer one's).
 */
class Answered {
  constructor(
    readonly transaction: object,
    readonly answer: unknown,
  ) {}
}

async function answering<T, A>(run: (rollBackWith: RollBackWith<A>) => Promise<T>): Promise<T | A> {
  const transaction = {}
  const rollBackWith: RollBackWith<A> = (answer) => {
    throw new Answered(transaction, answer)
  }
  try {
    return await run(rollBackWith)
  } catch (error) {
    if (error instanceof Answered && error.transaction === transaction) return error.answer as A
    throw error
  }
}

/** `work` in one Drizzle transaction; resolves with its result, or with what it rolled back with. */
export function transaction<T, A = never>(
  db: PostgresDb,
  work: (tx: PostgresTx, rollBackWith: RollBackWith<A>) => Promise<T>,
): Promise<T | A> {
  return answering<T, A>((rollBackWith) => db.transaction((tx) => work(tx, rollBackWith)))
}

/** The same on postgres.js's own transaction, for the coordination tables' raw SQL (leases, counts). */
export function sqlTransaction<T, A = never>(
  sql: Sql,
  work: (tx: postgres.TransactionSql, rollBackWith: RollBackWith<A>) => Promise<T>,
): Promise<T | A> {
  return answering<T, A>((rollBackWith) => sql.begin((tx) => work(tx, rollBackWith)) as Promise<T>)
}
