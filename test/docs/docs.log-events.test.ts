/**
 * Every warning and error the server logs is in the operator's table (docs/operations.md,
 * "Warnings and errors in the log") with what it means and what to do, and the table names
 * no event the code no longer writes. Events are found in src/ as the first argument of a
 * logger's `warn(...)` or `error(...)`: an event name is always a string literal.
 */
import { expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { documentedEvents } from '../support/log-events.ts'

const ROOT = join(import.meta.dir, '..', '..')

/** Event names written at warn or error level, from the sources. */
function loggedEvents(): Set<string> {
  const events = new Set<string>()
  const sources = new Bun.Glob('src/**/*.{ts,tsx}')
  for (const file of sources.scanSync({ cwd: ROOT })) {
    const text = readFileSync(join(ROOT, file), 'utf8')
    for (const [, name] of text.matchAll(/\.(?:warn|error)\(\s*'([a-z][a-z0-9_]*)'/g)) events.add(name!)
  }
  return events
}

test('every warn and error event of the server is in the operations table, and the table lists no other', () => {
  const logged = loggedEvents()
  const documented = documentedEvents()
  // The scan itself works: events known to be logged at these levels are found.
  for (const known of ['storage_failing', 'quota_release_failed', 'sign_in_count_failed', 'unhandled_error'])
    expect(logged).toContain(known)
  expect([...logged].filter((event) => !documented.has(event)).sort()).toEqual([])
  expect([...documented].filter((event) => !logged.has(event)).sort()).toEqual([])
})
