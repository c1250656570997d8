/**
 * The stop list start() keeps: parts stop last-started first, each stop finishing (awaited)
 * before the one below it begins, and a stop that throws is logged without keeping the parts
 * below it running. The real start failures are proven in ops/ops.start-failures.test.ts.
 */
import { expect, test } from 'bun:test'
import { StopList } from '../../src/app/stop-list.ts'
import { createLogger } from '../../src/log.ts'

function listWithLog() {
  const logs: Array<Record<string, unknown>> = []
  return { parts: new StopList(createLogger('debug', (line) => logs.push(JSON.parse(line)))), logs }
}

test('parts stop in reverse, each async stop finishing before the next begins', async () => {
  const { parts } = listWithLog()
  const events: string[] = []
  for (const name of ['first', 'second', 'third']) {
    events.push(`start ${name}`)
    parts.started(name, async () => {
      events.push(`stop ${name} begins`)
      await Bun.sleep(5) // yields to the event loop: the next stop must still wait for it
      events.push(`stop ${name} ends`)
    })
  }
  await parts.stopAll()
  expect(events).toEqual([
    'start first',
    'start second',
    'start third',
    'stop third begins',
    'stop third ends',
    'stop second begins',
    'stop second ends',
    'stop first begins',
    'stop first ends',
  ])
})

test('a stop that throws is logged and the parts below it still stop; a second stopAll stops nothing again', async () => {
  const { parts, logs } = listWithLog()
  const stopped: string[] = []
  parts.started('database', () => stopped.push('database'))
  parts.started('broken', () => {
    throw new Error('cannot clear')
  })
  parts.started('listener', () => stopped.push('listener'))
  await parts.stopAll()
  expect(stopped).toEqual(['listener', 'database'])
  expect(logs.filter((line) => line.event === 'part_stop_failed')).toMatchObject([
    { level: 'error', part: 'broken', error: 'cannot clear' },
  ])
  expect(logs.filter((line) => line.event === 'part_stopped').map((line) => line.part)).toEqual([
    'listener',
    'broken',
    'database',
  ])
  await parts.stopAll()
  expect(stopped).toEqual(['listener', 'database'])
})
