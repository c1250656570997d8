/**
 * PostgreSQL array literals for statements that pass a batch's rows as one array per column
 * (read back with `unnest`, cast in the statement to the column's type). Built here rather than
 * with postgres.js's `sql.array`, whose encoding needs the array types it reads from the server
 * when a connection opens: a statement built before that (the first on a new pool) went out as
 * a comma-joined string. Syntax: https://www.postgresql.org/docs/15/arrays.html#ARRAYS-IO
 */

/** One element: quoted, with `"` and `\` escaped; null as NULL. */
const element = (value: string | null): string => (value === null ? 'NULL' : `"${value.replace(/["\\]/g, '\\$&')}"`)

/** A text[] literal; numbers as their decimal text (cast in the statement). */
export const textArray = (values: readonly (string | number | null)[]): string =>
  `{${values.map((value) => element(value === null ? null : String(value))).join(',')}}`

/** A bytea[] literal: each value in bytea's hex format (its backslash escaped for the array). */
export const byteaArray = (values: readonly Buffer[]): string =>
  `{${values.map((value) => `"\\\\x${value.toString('hex')}"`).join(',')}}`
