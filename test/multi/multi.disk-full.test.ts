/**
 * The database's disk full under the tables mail writes, on a real server process: the
 * stored message tables live in a tablespace on a small tmpfs that a filler table fills
 * (root and mount(8) needed; skipped with one line otherwise). Every message then gets 451
 * while the database still answers, and commits a small row (its WAL is elsewhere): /ready
 * must fail all the same, naming the full disk, and the log must say so once, not flap at
 * every probe, and end once mail is stored again.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { chownSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { openPostgres, type Sql } from '../../src/storage/postgres/client.ts'
import { RECOVERY_QUIET_MS } from '../../src/core/runtime/storage-health.ts'
import { expectDocumentedEvents } from '../support/log-events.ts'
import { type MachineProcess, machineApi, pgMachine } from '../support/pg-processes.ts'
import {
  describeWithPostgres,
  migratedDatabase,
  ownCluster,
  postgresAvailable,
  type TestCluster,
} from '../support/postgres.ts'
import { scratchDir } from '../support/scratch.ts'
import { sendMail, simpleMessage } from '../support/smtp.ts'
import { until } from '../support/wait.ts'

setDefaultTimeout(90_000)

/** A tmpfs for the tablespace, or why there cannot be one here. */
function smallDisk(): { dir: string; unmount(): void } | string {
  if (process.getuid?.() !== 0) return 'not running as root'
  const dir = scratchDir('pigeonhole-full-')
  const mounted = Bun.spawnSync(['mount', '-t', 'tmpfs', '-o', 'size=4m', 'tmpfs', dir])
  if (mounted.exitCode !== 0) return `mount failed: ${mounted.stderr.toString().trim()}`
  const space = join(dir, 'space')
  mkdirSync(space)
  const uid = Number(Bun.spawnSync(['id', '-u', 'postgres']).stdout.toString().trim())
  const gid = Number(Bun.spawnSync(['id', '-g', 'postgres']).stdout.toString().trim())
  chownSync(space, uid, gid)
  return { dir: space, unmount: () => void Bun.spawnSync(['umount', '-l', dir]) }
}

// Mounted only where the tests will run: a skipped describe has no afterAll to unmount it, and
// a folder left mounted cannot be removed.
const disk = postgresAvailable() ? smallDisk() : null
const events = (machine: MachineProcess, name: string) =>
  machine
    .output()
    .split('\n')
    .filter((line) => line.includes(`"event":"${name}"`))

const body = () => {
  let sql: Sql
  let machine: MachineProcess
  let key: string
  let address: string
  const space = `full_${process.pid}`
  // A cluster of its own: the tablespace's dirty pages sit in the cluster's shared buffers, and
  // once its volume is gone any backend that must evict one fails its statement ("could not
  // open file pg_tblspc/…"), whatever database it serves. On the run's shared cluster that
  // broke other files' migrations.
  let cluster: TestCluster

  beforeAll(async () => {
    cluster = ownCluster()
    const url = await migratedDatabase(cluster)
    sql = openPostgres(url, { max: 2 })
    const { dir } = disk as { dir: string }
    await sql.unsafe(`create tablespace ${space} location '${dir}'`)
    for (const table of [
      'messages',
      'message_contents',
      'message_search_texts',
      'message_sources',
      'attachments',
      'attachment_contents',
    ]) {
      await sql.unsafe(`alter table ${table} set tablespace ${space}`)
    }
    machine = pgMachine('full', url, { DATABASE_STATEMENT_TIMEOUT_MS: '3000' })
    await machine.start({ PG_MACHINE_TENANTS: 'local:1' })
    key = machine.tenants[0]!.keys[0]!
    const created = await machineApi(machine, 'POST', '/v1/inboxes', key)
    expect(created.status).toBe(201)
    address = created.body.data.address
    // Fill the tablespace: the next page any of its tables needs is refused (53100).
    await sql.unsafe(`create table filler (b bytea) tablespace ${space}`)
    for (;;) {
      try {
        await sql`insert into filler select decode(string_agg(md5(random()::text), ''), 'hex') from generate_series(1, 4096)`
      } catch (error) {
        if ((error as { code?: string }).code === '53100') break
        throw error
      }
    }
  })
  afterAll(async () => {
    await machine?.remove()
    await sql?.unsafe('drop table if exists filler').catch(() => {})
    await sql?.end()
    // The server first, then its volume: no write may still be owed to the tablespace.
    await cluster?.stop()
    ;(disk as { unmount(): void }).unmount()
  })

  test('mail gets 451 and /ready fails naming the full disk; one storage_failing, and one storage_recovered once mail is stored again', async () => {
    const send = (subject: string) =>
      sendMail(machine.smtp, { to: [address] }, simpleMessage({ to: address, subject, text: 'x'.repeat(20_000) }))
    const first = await send('refused 1')
    expect(first.data?.code, JSON.stringify(first)).toBe(451)
    // For a while: more refusals, and probes that commit their small row.
    for (let i = 2; i <= 4; i++) {
      const ready = await machineApi(machine, 'GET', '/ready')
      expect(ready.status, ready.text).toBe(503)
      expect(ready.body.checks.database).toBe('failed')
      expect(ready.body.failing.database).toContain('disk full')
      expect((await send(`refused ${i}`)).data?.code).toBe(451)
      await Bun.sleep(1_000)
    }
    expect(events(machine, 'storage_failing')).toHaveLength(1)
    expect(events(machine, 'storage_failing')[0]).toContain('"kind":"full"')
    expect(events(machine, 'storage_recovered')).toEqual([])
    // Space again: once nothing has failed for the quiet time, mail stored ends the state.
    await sql`drop table filler`
    await Bun.sleep(RECOVERY_QUIET_MS)
    expect((await send('stored after')).data?.code).toBe(250)
    await until(async () => (await machineApi(machine, 'GET', '/ready')).status === 200, '/ready to answer 200', {
      timeoutMs: 10_000,
      intervalMs: 200,
    })
    expect(events(machine, 'storage_failing')).toHaveLength(1)
    expect(events(machine, 'storage_recovered')).toHaveLength(1)
    expectDocumentedEvents(machine.output(), machine.name)
  })
}

if (typeof disk === 'string') describe.skip(`the database's disk full: ${disk}`, body)
else describeWithPostgres("the database's disk full under the tables mail writes", body)
