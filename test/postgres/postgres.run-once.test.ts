/** Jobs such as the retention sweep run on one machine at a time (two pools as two machines). */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { openPostgres, type Sql } from '../../src/storage/postgres/client.ts'
import { runOnce } from '../../src/storage/postgres/run-once.ts'
import { describeWithPostgres, freshDatabase } from '../support/postgres.ts'
import { until } from '../support/wait.ts'

setDefaultTimeout(60_000)

/** A job that runs until `finish()` is called. */
function heldJob() {
  let finish!: () => void
  let started!: () => void
  const running = new Promise<void>((r) => {
    started = r
  })
  const done = new Promise<void>((r) => {
    finish = r
  })
  return {
    running,
    finish,
    job: async () => {
      started()
      await done
      return 'swept'
    },
  }
}

describeWithPostgres('runOnce', () => {
  let url: string
  let machineA: Sql
  let machineB: Sql

  beforeAll(async () => {
    url = await freshDatabase()
    machineA = openPostgres(url, { max: 2 })
    machineB = openPostgres(url, { max: 2 })
  })
  afterAll(async () => {
    await Promise.all([machineA.end(), machineB.end()])
  })

  test('while one machine runs the job the other skips it; afterwards it runs again', async () => {
    const held = heldJob()
    const first = runOnce(machineA, 'retention', held.job)
    await held.running
    let ranOnB = false
    expect(
      await runOnce(machineB, 'retention', async () => {
        ranOnB = true
      }),
    ).toEqual({ ran: false })
    expect(ranOnB).toBe(false)
    // Another job's name is another lock.
    expect(await runOnce(machineB, 'other-job', async () => 1)).toEqual({ ran: true, result: 1 })
    held.finish()
    expect(await first).toEqual({ ran: true, result: 'swept' })
    expect(await runOnce(machineB, 'retention', async () => 2)).toEqual({ ran: true, result: 2 })
  })

  test('ten machines firing together: exactly one runs', async () => {
    const pools = Array.from({ length: 10 }, () => openPostgres(url, { max: 1 }))
    try {
      let runs = 0
      let settled = 0
      // The job runs until every other machine has had its try (or 10 s pass), so "together"
      // holds however slowly a busy machine opens the other connections.
      const job = async () => {
        runs += 1
        // A bounded hold, not a wait that fails: past 10 s the job simply ends.
        for (const deadline = Date.now() + 10_000; settled < pools.length - 1 && Date.now() < deadline; )
          await Bun.sleep(20)
      }
      const results = await Promise.all(
        pools.map((pool) =>
          runOnce(pool, 'sweep-together', job).finally(() => {
            settled += 1
          }),
        ),
      )
      expect(runs).toBe(1)
      expect(results.filter((r) => r.ran).length).toBe(1)
    } finally {
      await Promise.all(pools.map((pool) => pool.end()))
    }
  })

  test('a machine that dies while running the job releases it with its connection', async () => {
    const dying = openPostgres(url, { max: 1 })
    const held = heldJob()
    const orphan = runOnce(dying, 'retention', held.job).catch(() => 'connection gone')
    await held.running
    expect(await runOnce(machineB, 'retention', async () => 0)).toEqual({ ran: false })
    await dying.end({ timeout: 0 })
    held.finish()
    await orphan
    // The server frees the lock when it notices the closed connection, a moment after the close.
    let after = { ran: false } as Awaited<ReturnType<typeof runOnce<number>>>
    const ranAgain = async () => {
      after = await runOnce(machineB, 'retention', async () => 3)
      return after.ran
    }
    await until(ranAgain, 'another machine to run the released job', { timeoutMs: 10_000, intervalMs: 50 })
    expect(after).toEqual({ ran: true, result: 3 })
  })
})
