/**
 * When a failing storage state ends (core/runtime/storage-health.ts). PostgreSQL mode: only a success
 * of the kind of work that failed ends it, once nothing has failed for RECOVERY_QUIET_MS, so
 * interleaved successes and failures (too few connections) log one pair, a small write does
 * not end a full disk, and a success of the probe ends what the probe also saw. SQLite mode:
 * any commit of the one file ends it, as before.
 */
import { expect, test } from 'bun:test'
import { RECOVERY_QUIET_MS, StorageHealth } from '../../src/core/runtime/storage-health.ts'
import { createLogger } from '../../src/log.ts'

const busy = () => Object.assign(new Error('too many connections'), { code: '53300' })
const full = () => Object.assign(new Error('could not extend file'), { code: '53100' })

function health(dialect: 'postgres' | 'sqlite') {
  const lines: string[] = []
  let now = 0
  const h = new StorageHealth(
    createLogger('warn', (line) => lines.push(JSON.parse(line).event)),
    () => {},
    dialect,
    () => now,
  )
  return { h, lines, advance: (ms: number) => (now += ms) }
}

test('interleaved failures and successes of the same work log one failing and one recovered', () => {
  const { h, lines, advance } = health('postgres')
  for (let i = 0; i < 30; i++) {
    h.failed(busy(), 'request')
    advance(300)
    h.committed('request')
    advance(700)
  }
  expect(lines).toEqual(['storage_failing'])
  advance(RECOVERY_QUIET_MS)
  h.committed('request')
  expect(lines).toEqual(['storage_failing', 'storage_recovered'])
  expect(h.failing).toBeNull()
})

test('a full disk met by mail is not ended by the probe or a read, only by mail stored again', () => {
  const { h, lines, advance } = health('postgres')
  h.failed(full(), 'mail')
  advance(RECOVERY_QUIET_MS + 1)
  h.committed('probe')
  h.committed('request')
  expect(h.failing).toBe('full')
  expect(h.full).toBe(true)
  h.committed('mail')
  expect(lines).toEqual(['storage_failing', 'storage_recovered'])
  expect(h.full).toBe(false)
})

test('a probe that failed too ends the state when it succeeds again', () => {
  const { h, lines, advance } = health('postgres')
  h.failed(busy(), 'mail')
  h.failed(Object.assign(new Error('lock timeout'), { code: '55P03' }), 'probe')
  advance(RECOVERY_QUIET_MS)
  h.committed('probe')
  expect(lines).toEqual(['storage_failing', 'storage_recovered'])
})

test('SQLite mode: the first commit ends the state; a success named by work does not', () => {
  const { h, lines } = health('sqlite')
  h.failed(Object.assign(new Error('readonly'), { code: 'SQLITE_READONLY' }), 'request')
  h.committed('request')
  expect(h.failing).toBe('read_only')
  h.committed()
  expect(lines).toEqual(['storage_failing', 'storage_recovered'])
})
