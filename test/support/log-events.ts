/**
 * The operator's table of log events (docs/operations.md, "Warnings and errors in the log"),
 * read by the docs test and by the fault tests: every warning or error a server process wrote
 * during a fault must be one the table explains.
 */
import { expect } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'

const ROOT = join(import.meta.dir, '..', '..')
export const EVENTS_SECTION = '## Warnings and errors in the log'

/** Event names in the first column of the section's table (a row may name two). */
export function documentedEvents(): Set<string> {
  const doc = readFileSync(join(ROOT, 'docs', 'operations.md'), 'utf8')
  const start = doc.indexOf(EVENTS_SECTION)
  if (start < 0) throw new Error(`docs/operations.md has no "${EVENTS_SECTION}"`)
  const next = doc.indexOf('\n## ', start + EVENTS_SECTION.length)
  const section = doc.slice(start, next === -1 ? undefined : next)
  const events = new Set<string>()
  for (const line of section.split('\n')) {
    const first = /^\| ([^|]+) \| (warn|error) \|/.exec(line)
    if (!first) continue
    for (const [, name] of first[1]!.matchAll(/`([a-z][a-z0-9_]*)`/g)) events.add(name!)
  }
  return events
}

/** Asserts that every warn and error line in `output` (a process's JSON log lines) names a documented event. */
export function expectDocumentedEvents(output: string, who: string): void {
  const documented = documentedEvents()
  const undocumented = output
    .split('\n')
    .filter((line) => line.startsWith('{"time"'))
    .map((line) => JSON.parse(line) as { level: string; event: string })
    .filter((line) => (line.level === 'warn' || line.level === 'error') && !documented.has(line.event))
    .map((line) => line.event)
  expect(undocumented, `${who}: warnings or errors the operator's table does not explain`).toEqual([])
}
