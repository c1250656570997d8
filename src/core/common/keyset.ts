/**
 * Keyset paging, newest first, on (timestamp, id): a page starts strictly after the last
 * row of the previous one, so pages never overlap or skip whatever is inserted meanwhile.
 * The position travels in a signed cursor (cursor.ts); the SQL of the order and the bound
 * lives with storage (src/storage/keyset.ts), which both dialects' adapters use.
 */

/** A page from the `limit + 1` rows read: the extra row only says whether another page follows. */
export function cutPage<R>(
  rows: R[],
  limit: number,
  cursorAfter: (last: R) => string,
): { rows: R[]; nextCursor: string | null } {
  const page = rows.slice(0, limit)
  const last = page.at(-1)
  return { rows: page, nextCursor: rows.length > limit && last !== undefined ? cursorAfter(last) : null }
}
