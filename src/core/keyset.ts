/**
 * Keyset paging, newest first, on (timestamp, id): a page starts strictly after the last
 * row of the previous one, so pages never overlap or skip whatever is inserted meanwhile.
 * The position travels in a signed cursor (cursor.ts).
 */
import { and, desc, eq, lt, or, type SQL } from 'drizzle-orm'
import type { SQLiteColumn } from 'drizzle-orm/sqlite-core'

/** The columns a listing is ordered by: a timestamp, and the id that breaks its ties. */
interface KeysetColumns {
  at: SQLiteColumn
  id: SQLiteColumn
}

export const newestFirst = (columns: KeysetColumns): SQL[] => [desc(columns.at), desc(columns.id)]

/** Rows older than a position; its parts may be values or statement placeholders. */
export const olderThan = (columns: KeysetColumns, position: { at: unknown; id: unknown }): SQL | undefined =>
  or(lt(columns.at, position.at), and(eq(columns.at, position.at), lt(columns.id, position.id)))

/** A page from the `limit + 1` rows read: the extra row only says whether another page follows. */
export function cutPage<R>(rows: R[], limit: number, cursorAfter: (last: R) => string): { rows: R[]; nextCursor: string | null } {
  const page = rows.slice(0, limit)
  const last = page.at(-1)
  return { rows: page, nextCursor: rows.length > limit && last !== undefined ? cursorAfter(last) : null }
}
