/**
 * PostgreSQL advisory locks named by text. A lock's 64-bit key is `hashtextextended(name, 0)`,
 * computed by the server, so every machine derives the same key from the same name. Session
 * locks belong to one connection: they are taken on a reserved connection (or a pool of one)
 * and released explicitly, and the server releases them by itself when that connection dies
 * (a killed machine never leaves a lock held).
 */
import type { Sql } from './client.ts'

/** Runs `work` holding the lock on `name` if it is free; `{ ran: false }` when another session holds it. */
export async function tryAdvisoryLock<T>(
  sql: Sql,
  name: string,
  work: () => Promise<T>,
): Promise<{ ran: true; result: T } | { ran: false }> {
  const connection = await sql.reserve()
  try {
    const [row] = await connection<
      { locked: boolean }[]
    >`select pg_try_advisory_lock(hashtextextended(${name}, 0)) as locked`
    if (!row?.locked) return { ran: false }
    try {
      return { ran: true, result: await work() }
    } finally {
      await connection`select pg_advisory_unlock(hashtextextended(${name}, 0))`
    }
  } finally {
    connection.release()
  }
}
