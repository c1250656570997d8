/**
 * Keyset paging's SQL, newest first, on (timestamp, id), in either dialect: a page starts
 * strictly after the last row of the previous one, so pages never overlap or skip whatever is
 * inserted meanwhile. Core holds the rest (src/core/common/keyset.ts: the page cut, the cursor).
 */
import { type AnyColumn, and, desc, eq, lt, or, type SQL } from 'drizzle-orm'

/** The columns a listing is ordered by: a timestamp, and the id that breaks its ties. */
export interface KeysetColumns {
  at: AnyColumn
  id: AnyColumn
}

export const newestFirst = (columns: KeysetColumns): SQL[] => [desc(columns.at), desc(columns.id)]

/** Rows older than a position; its parts may be values or statement placeholders. */
export const olderThan = (columns: KeysetColumns, position: { at: unknown; id: unknown }): SQL | undefined =>
  or(lt(columns.at, position.at), and(eq(columns.at, position.at), lt(columns.id, position.id)))
