/**
 * A log line's own keys (time, level, event) come first and cannot be replaced by a field:
 * a field named `event` once turned `wake_notify_failed` into `"event":"inbox_deleted"`, and
 * the operator's alert on the event never fired.
 */
import { expect, test } from 'bun:test'
import { createLogger } from '../../src/log.ts'

test('a field named like the line’s own keys does not replace them', () => {
  const lines: string[] = []
  createLogger('debug', (line) => lines.push(line)).warn('wake_notify_failed', {
    event: 'inbox_deleted',
    level: 'debug',
    inbox_id: 'inbox_1',
  })
  const line = JSON.parse(lines[0]!)
  expect(line.event).toBe('wake_notify_failed')
  expect(line.level).toBe('warn')
  expect(line.inbox_id).toBe('inbox_1')
  expect(lines[0]!.startsWith('{"time"')).toBe(true)
})
