/**
 * Replication lag from Litestream 0.3's shadow WAL on disk and the replica position its
 * metrics listener reports. The folder is laid out as Litestream lays it out; the listener is
 * a local stand-in serving Litestream's exposition lines (the real binary runs in
 * test/deploy/deploy.replication-lag.test.ts). Time is a number the test moves.
 */
import { afterAll, expect, test } from 'bun:test'
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createLogger } from '../../src/log.ts'
import {
  litestreamDir,
  litestreamLocalBytes,
  ReplicationMonitor,
  replicaPosition,
  shadowWalPosition,
} from '../../src/core/runtime/replication.ts'
import { scratchDir } from '../support/scratch.ts'

const PAGE = 4096
const FRAME = PAGE + 24
const dir = scratchDir('pigeonhole-lag-')
const databasePath = join(dir, 'pigeonhole.db')
const walDir = join(litestreamDir(databasePath), 'generations', 'abc123', 'wal')
mkdirSync(walDir, { recursive: true })
writeFileSync(join(litestreamDir(databasePath), 'generation'), 'abc123\n')
const shadow = (index: number, frames: number, extra = 0) =>
  writeFileSync(join(walDir, `${index.toString(16).padStart(8, '0')}.wal`), Buffer.alloc(32 + frames * FRAME + extra))

let replica = { index: 0, offset: 0 }
let answering = true
const listener = Bun.serve({
  port: 0,
  hostname: '127.0.0.1',
  fetch: () =>
    answering
      ? new Response(
          [
            '# TYPE litestream_replica_wal_index gauge',
            `litestream_replica_wal_index{db="${databasePath}",name="primary"} ${replica.index}`,
            `litestream_replica_wal_offset{db="${databasePath}",name="primary"} ${replica.offset}`,
          ].join('\n'),
        )
      : new Response('stopped', { status: 503 }),
})
afterAll(() => {
  listener.stop(true)
  rmSync(dir, { recursive: true, force: true })
})

test('the shadow WAL position is the highest index and its whole frames', () => {
  shadow(0, 10)
  shadow(2, 3, 100) // a frame being written is not counted
  expect(shadowWalPosition(databasePath, PAGE)).toEqual({ generation: 'abc123', index: 2, offset: 32 + 3 * FRAME })
  expect(shadowWalPosition(join(dir, 'other.db'), PAGE)).toBeNull()
  expect(litestreamLocalBytes(databasePath)).toBe(32 + 10 * FRAME + 32 + 3 * FRAME + 100 + 'abc123\n'.length)
})

test("the replica position is read from Litestream's lines for this database, lowest over replicas", () => {
  const text = [
    'litestream_replica_wal_index{db="/data/pigeonhole.db",name="primary"} 7',
    'litestream_replica_wal_offset{db="/data/pigeonhole.db",name="primary"} 4152',
    'litestream_replica_wal_index{db="/data/pigeonhole.db",name="second"} 7',
    'litestream_replica_wal_offset{db="/data/pigeonhole.db",name="second"} 32',
  ].join('\n')
  expect(replicaPosition(text, '/data/pigeonhole.db')).toEqual({ index: 7, offset: 32 })
  // Litestream resolved a symlink: with one database only, it is ours.
  expect(replicaPosition(text.split('\n').slice(0, 2).join('\n'), '/link/pigeonhole.db')).toEqual({
    index: 7,
    offset: 4152,
  })
  expect(replicaPosition('litestream_db_size{db="/data/pigeonhole.db"} 1', '/data/pigeonhole.db')).toBeNull()
})

test('lag is the age of the oldest write the replica has not confirmed; 0 when it has all', async () => {
  let now = 0
  const lines: Record<string, unknown>[] = []
  const monitor = new ReplicationMonitor({
    databasePath,
    pageSize: PAGE,
    metricsUrl: `http://127.0.0.1:${listener.port}/metrics`,
    maxLagSeconds: 10,
    localWarn: { bytes: 200_000 },
    logger: createLogger('debug', (line) => lines.push(JSON.parse(line))),
    now: () => now,
  })
  replica = { index: 2, offset: 32 + 3 * FRAME }
  await monitor.sample()
  expect(monitor.lagSeconds()).toBe(0)

  // Writes arrive; the replica stops confirming them.
  now = 1_000
  shadow(2, 5)
  await monitor.sample()
  now = 6_000
  shadow(3, 40)
  await monitor.sample()
  expect(monitor.lagSeconds()).toBe(5)
  expect(monitor.current()).toBe(true)
  now = 12_000
  await monitor.sample()
  expect(monitor.lagSeconds()).toBe(11)
  expect(monitor.current()).toBe(false)
  expect(lines.filter((line) => line.event === 'replication_lagging')).toHaveLength(1)
  expect(lines.filter((line) => line.event === 'litestream_local_files_large')).toHaveLength(1)

  // The replica confirms the first write only: the lag is now the second one's age.
  replica = { index: 2, offset: 32 + 5 * FRAME }
  now = 13_000
  await monitor.sample()
  expect(monitor.lagSeconds()).toBe(7)
  expect(monitor.current()).toBe(true)
  expect(lines.filter((line) => line.event === 'replication_caught_up')).toHaveLength(1)
  replica = { index: 3, offset: 32 + 40 * FRAME }
  await monitor.sample()
  expect(monitor.lagSeconds()).toBe(0)

  // A listener that stops answering confirms nothing: past the bound the replica is not current.
  answering = false
  now = 30_000
  await monitor.sample()
  expect(monitor.lagSeconds()).toBe(0)
  expect(monitor.current()).toBe(false)
  expect(lines.filter((line) => line.event === 'litestream_metrics_unreadable')).toHaveLength(1)
  answering = true
  await monitor.sample()
  expect(monitor.current()).toBe(true)
})

test('a new generation is not confirmed by the position of the old one, which Litestream still reports until its first upload', async () => {
  let now = 0
  const monitor = new ReplicationMonitor({
    databasePath,
    pageSize: PAGE,
    metricsUrl: `http://127.0.0.1:${listener.port}/metrics`,
    maxLagSeconds: 10,
    localWarn: { bytes: 0 },
    logger: createLogger('error', () => {}),
    now: () => now,
  })
  replica = { index: 3, offset: 32 + 40 * FRAME }
  await monitor.sample()
  expect(monitor.lagSeconds()).toBe(0)
  // Litestream begins a new generation; its gauges still hold the old generation's position.
  const newWal = join(litestreamDir(databasePath), 'generations', 'def456', 'wal')
  mkdirSync(newWal, { recursive: true })
  writeFileSync(join(newWal, '00000000.wal'), Buffer.alloc(32 + 2 * FRAME))
  writeFileSync(join(litestreamDir(databasePath), 'generation'), 'def456\n')
  try {
    now = 1_000
    await monitor.sample()
    now = 12_000
    await monitor.sample()
    expect(monitor.lagSeconds()).toBe(11)
    expect(monitor.current()).toBe(false)
    // Its first upload moves the gauges: now they confirm.
    replica = { index: 0, offset: 32 + 2 * FRAME }
    await monitor.sample()
    expect(monitor.lagSeconds()).toBe(0)
  } finally {
    writeFileSync(join(litestreamDir(databasePath), 'generation'), 'abc123\n')
  }
})
