/**
 * The column selections both adapters make, written once. Each dialect's table has the same
 * columns under the same property names (test/postgres/postgres.schema-parity.test.ts), so a
 * list of names from the port picks the same selection from either table.
 */
import { SUMMARY_COLUMN_NAMES } from './port/messages.ts'
import { LIMIT_COLUMN_NAMES } from './port/organizations.ts'

type Named<Names extends readonly string[]> = { [K in Names[number]]: unknown }

function pick<T extends object, K extends keyof T>(table: T, names: readonly K[]): Pick<T, K> {
  return Object.fromEntries(names.map((name) => [name, table[name]])) as Pick<T, K>
}

/** An organisation's limit columns, for a select (alone, or joined with the key that authenticates a request). */
export const limitColumnsOf = <T extends Named<typeof LIMIT_COLUMN_NAMES>>(organizations: T) =>
  pick(organizations, LIMIT_COLUMN_NAMES)

/** A message summary's columns, for a listing or a search. */
export const summaryColumnsOf = <T extends Named<typeof SUMMARY_COLUMN_NAMES>>(messages: T) =>
  pick(messages, SUMMARY_COLUMN_NAMES)
