/**
 * Timestamps between the core and PostgreSQL. The core speaks RFC 3339 UTC with milliseconds
 * (`2026-01-15T12:00:00.120Z`); PostgreSQL parses that as it is, but a `timestamptz` read back
 * as text comes in its own form (`2026-01-15 12:00:00.12+00`: a space, trailing zeros of the
 * fraction dropped, the offset of the session's time zone). Sessions run in UTC (client.ts),
 * so the offset is always +00 and this turns the text back into the core's form exactly.
 */
const POSTGRES_UTC = /^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2})(?:\.(\d{1,6}))?\+00$/

/** A `timestamptz` column's text in a UTC session → RFC 3339 with milliseconds. */
export function rfc3339FromPostgres(value: string): string {
  const match = POSTGRES_UTC.exec(value)
  if (!match) throw new Error(`not a UTC timestamp from PostgreSQL: ${value}`)
  const [, date, time, fraction = ''] = match
  return `${date}T${time}.${fraction.padEnd(3, '0').slice(0, 3)}Z`
}
