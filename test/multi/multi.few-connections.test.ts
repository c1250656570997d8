/**
 * Too few database connections, on a real server process: its role may hold fewer
 * connections than its pool wants (CONNECTION LIMIT), so under load some queries fail with
 * 53300 while others succeed on the connections it has. The log used to flap, a
 * storage_failing and storage_recovered pair every other second; it now says storage_failing
 * once while the partial failure lasts and storage_recovered once after it (recovered means
 * nothing failed for 5 s, not that one query got through).
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { RECOVERY_QUIET_MS } from '../../src/core/runtime/storage-health.ts'
import { openPostgres, type Sql } from '../../src/storage/postgres/client.ts'
import { expectDocumentedEvents } from '../support/log-events.ts'
import { type MachineProcess, machineApi, pgMachine } from '../support/pg-processes.ts'
import { describeWithPostgres, migratedDatabase } from '../support/postgres.ts'
import { until } from '../support/wait.ts'

setDefaultTimeout(90_000)

const LOAD_MS = 8_000
/**
 * The load comes in waves: WAVE requests at once, each wave after the last has answered and
 * a pause. A wave wants more connections than the role may hold (WAVE over the pool of 8,
 * the pool over the role's 3), so every wave fails some requests and answers others, and the
 * partial failure lasts the whole LOAD_MS with failures far closer together than the 5 s a
 * recovery waits for. Twelve clients asking back to back did the same with six times the
 * requests, which only kept both cores busy for the eight seconds.
 */
const WAVE = 12
const BETWEEN_WAVES_MS = 100
const events = (machine: MachineProcess, name: string) =>
  machine
    .output()
    .split('\n')
    .filter((line) => line.includes(`"event":"${name}"`))

describeWithPostgres('a machine whose database role may hold too few connections', () => {
  let admin: Sql
  let machine: MachineProcess
  const role = `scarce_${process.pid}`

  beforeAll(async () => {
    const url = new URL(await migratedDatabase())
    admin = openPostgres(url.href, { max: 1 })
    const database = url.pathname.slice(1)
    await admin.unsafe(`create role ${role} login connection limit 3`)
    await admin.unsafe(`grant all privileges on database ${database} to ${role}`)
    for (const schema of ['public', 'drizzle']) {
      await admin.unsafe(`grant all on schema ${schema} to ${role}`)
      await admin.unsafe(`grant all on all tables in schema ${schema} to ${role}`)
      await admin.unsafe(`grant all on all sequences in schema ${schema} to ${role}`)
    }
    const scarce = new URL(url)
    scarce.username = role
    machine = pgMachine('scarce', scarce.href, { DATABASE_POOL_SIZE: '8' })
    await machine.start({ PG_MACHINE_TENANTS: 'local:1' })
  })
  afterAll(async () => {
    await machine?.remove()
    await admin?.end()
  })

  test('under load some requests fail and some succeed; the log says so once each way', async () => {
    const key = machine.tenants[0]!.keys[0]!
    const statuses: number[] = []
    const until_ = performance.now() + LOAD_MS
    while (performance.now() < until_) {
      const wave = await Promise.all(Array.from({ length: WAVE }, () => machineApi(machine, 'GET', '/v1/usage', key)))
      statuses.push(...wave.map((answer) => answer.status))
      // Part of the scenario: the pause between two waves of the load.
      await Bun.sleep(BETWEEN_WAVES_MS)
    }
    const failed = statuses.filter((status) => status === 500).length
    const succeeded = statuses.filter((status) => status === 200).length
    console.info(
      `${statuses.length} requests: ${succeeded} answered 200, ${failed} 500 with Retry-After; storage_failing ${events(machine, 'storage_failing').length}, storage_recovered ${events(machine, 'storage_recovered').length}`,
    )
    expect(failed).toBeGreaterThan(0)
    expect(succeeded).toBeGreaterThan(0)
    expect(events(machine, 'storage_failing')).toHaveLength(1)
    expect(events(machine, 'storage_recovered').length).toBeLessThanOrEqual(1)
    // Calm again: the next successes after the quiet time end it, once.
    await Bun.sleep(RECOVERY_QUIET_MS)
    await until(
      async () => {
        await machineApi(machine, 'POST', '/v1/inboxes', key)
        return events(machine, 'storage_recovered').length === 1
      },
      'one storage_recovered',
      { timeoutMs: 15_000, intervalMs: 500 },
    )
    expect(events(machine, 'storage_failing')).toHaveLength(1)
    expectDocumentedEvents(machine.output(), machine.name)
  })
})
