/**
 * PostgreSQL mode's building blocks (src/storage/postgres/), measured on a throwaway local
 * cluster (the one the tests start: test/support/postgres.ts). The server does not run on
 * PostgreSQL yet, so this measures the coordination each machine will do, not a request end to
 * end. Two pools on one database stand for two machines: each has its own connections and,
 * for the wake-ups, its own LISTEN connection, which is all a second machine adds on the
 * database's side; they share this process's CPU, so the client cost per operation is the
 * two machines' together.
 *
 * - Wake-up across machines: pool B's wake bus is subscribed to an inbox, pool A commits a
 *   transaction that notifies it; the sample is from A's commit returning to B's waiter
 *   being woken.
 * - Per operation (admission, slot lease, quota reservation, createInbox with an
 *   Idempotency-Key through the inboxes adapter): latency one
 *   at a time, then throughput with `concurrency` operations in flight from each pool, and the
 *   CPU per operation of this process and of the PostgreSQL server's processes.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { systemClock } from '../../src/clock.ts'
import { openPostgres, type Sql } from '../../src/storage/postgres/client.ts'
import { postgresDb } from '../../src/storage/postgres/db.ts'
import { postgresInboxes } from '../../src/storage/postgres/store/inboxes.ts'
import { createQuotaReservations } from '../../src/storage/postgres/quota-reservations.ts'
import { admitRequest } from '../../src/storage/postgres/request-counter.ts'
import { createSlotLeases } from '../../src/storage/postgres/slot-leases.ts'
import { createWakeBus, notifyInbox } from '../../src/storage/postgres/wake-bus.ts'
import { migratedDatabase, testCluster, useDurableCluster } from '../../test/support/postgres.ts'
import { cpuMs } from '../lib/proc.ts'
import { percentile, round } from '../lib/stats.ts'

export interface PostgresSettings {
  wakeSamples: number
  opSamples: number
  /** Operations in flight from each pool during the throughput run. */
  concurrency: number
  durationMs: number
  log: (message: string) => void
}

/** `bun run bench`: about half a minute on an idle machine. */
export const POSTGRES_FULL = { wakeSamples: 1000, opSamples: 500, concurrency: 8, durationMs: 3000 }
/** `--quick` (CI): a few seconds, cluster start included. */
export const POSTGRES_QUICK = { wakeSamples: 100, opSamples: 50, concurrency: 8, durationMs: 300 }

export interface LatencyFigures {
  samples: number
  p50Ms: number
  p99Ms: number
  maxMs: number
}

export interface OperationFigures {
  /** One at a time, alternating pools. */
  alone: LatencyFigures
  /** `concurrency` in flight from each pool at once. */
  loaded: LatencyFigures & { perSecond: number; benchCpuMsPerOp: number; serverCpuMsPerOp: number }
}

export type PostgresResult =
  | { skipped: string }
  | {
      postgresVersion: string
      concurrency: number
      /** From A's commit returning; and from A starting the transaction (BEGIN, NOTIFY, COMMIT: three round trips). */
      wake: LatencyFigures & { wokenBeforeCommitReply: number; fromTransactionStart: LatencyFigures }
      operations: Record<
        'admit_request' | 'slot_lease' | 'quota_reservation' | 'quota_reservation_8_orgs' | 'idempotency_claim',
        OperationFigures
      >
    }

const figures = (samples: number[]): LatencyFigures => ({
  samples: samples.length,
  p50Ms: round(percentile(samples, 50), 3),
  p99Ms: round(percentile(samples, 99), 3),
  maxMs: round(Math.max(...samples), 3),
})

/** User + system CPU of the cluster's processes (the postmaster and every child: backends, walwriter…). */
export function serverCpuMs(port: number): number {
  const pids = readdirSync('/proc').filter((name) => /^\d+$/.test(name))
  const statOf = (pid: string) => {
    try {
      return readFileSync(`/proc/${pid}/stat`, 'utf8')
    } catch {
      return '' // gone meanwhile
    }
  }
  const postmaster = pids.find((pid) => {
    try {
      const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')
      return args.some((arg, i) => arg === '-p' && args[i + 1] === String(port))
    } catch {
      return false
    }
  })
  if (!postmaster) return Number.NaN
  let total = 0
  for (const pid of pids) {
    const stat = statOf(pid)
    if (!stat) continue
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    if (pid !== postmaster && fields[1] !== postmaster) continue // fields[1] is the parent's pid
    total += cpuMs(Number(pid))
  }
  return total
}

/** Runs `op` `samples` times, one at a time, alternating the two machines. */
async function alone(op: (machine: 0 | 1, i: number) => Promise<void>, samples: number): Promise<LatencyFigures> {
  const times: number[] = []
  for (let i = 0; i < samples; i++) {
    const start = performance.now()
    await op((i % 2) as 0 | 1, i)
    times.push(performance.now() - start)
  }
  return figures(times)
}

/** Keeps `concurrency` operations in flight from each machine for `durationMs`. */
async function loaded(
  op: (machine: 0 | 1, i: number) => Promise<void>,
  settings: PostgresSettings,
  port: number,
): Promise<OperationFigures['loaded']> {
  const times: number[] = []
  let next = 1_000_000 // apart from the numbers `alone` used
  const benchBefore = cpuMs(process.pid)
  const serverBefore = serverCpuMs(port)
  const started = performance.now()
  const deadline = started + settings.durationMs
  await Promise.all(
    Array.from({ length: settings.concurrency * 2 }, async (_, worker) => {
      while (performance.now() < deadline) {
        const start = performance.now()
        await op((worker % 2) as 0 | 1, next++)
        times.push(performance.now() - start)
      }
    }),
  )
  const seconds = (performance.now() - started) / 1000
  const ops = times.length
  return {
    ...figures(times),
    perSecond: round(ops / seconds, 0),
    benchCpuMsPerOp: round((cpuMs(process.pid) - benchBefore) / ops, 4),
    serverCpuMsPerOp: round((serverCpuMs(port) - serverBefore) / ops, 4),
  }
}

export async function postgresPhase(settings: PostgresSettings): Promise<PostgresResult> {
  let port: number
  let url: string
  try {
    // PostgreSQL's default durability (every commit flushed), as the server phase after it.
    useDurableCluster()
    port = testCluster().port
    url = await migratedDatabase()
  } catch (error) {
    return { skipped: error instanceof Error ? error.message : String(error) }
  }
  const pools: [Sql, Sql] = [
    openPostgres(url, { max: settings.concurrency }),
    openPostgres(url, { max: settings.concurrency }),
  ]
  const [a, b] = pools
  try {
    const [{ server_version: postgresVersion }] = (await a`show server_version`) as unknown as [
      { server_version: string },
    ]
    const org = 'org_bench'
    const spreadOrgs = Array.from({ length: 8 }, (_, i) => `org_bench_${i}`)
    for (const id of [org, ...spreadOrgs])
      await a`insert into organizations (id, name, created_at) values (${id}, ${id}, ${new Date().toISOString()})`

    // Wake-ups across machines, one at a time: B listens, A's transaction notifies.
    const bus = createWakeBus(b)
    const wakeTimes: number[] = []
    const fromBegin: number[] = []
    let beforeReply = 0
    for (let i = 0; i < settings.wakeSamples + 10; i++) {
      const inboxId = `inb_wake_${i}`
      const subscription = await bus.subscribe(inboxId)
      let wokenAt = 0
      const woken = subscription.woken.then(() => {
        wokenAt = performance.now()
      })
      const beganAt = performance.now()
      await a.begin((tx) => notifyInbox(tx, inboxId))
      const committedAt = performance.now()
      // A lost notification would otherwise hang the bench; the bus should make that impossible.
      let timer: ReturnType<typeof setTimeout> | undefined
      const lost = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no wake-up for ${inboxId} within 10 s of its commit`)), 10_000)
      })
      await Promise.race([woken, lost]).finally(() => clearTimeout(timer))
      subscription.close()
      // The first ten warm up the connections. B's notification and A's commit reply leave the
      // server together, so B is often woken before A has read its reply: that counts as 0.
      if (i < 10) continue
      if (wokenAt < committedAt) beforeReply++
      wakeTimes.push(Math.max(0, wokenAt - committedAt))
      fromBegin.push(wokenAt - beganAt)
    }
    await bus.close()
    const wake = {
      ...figures(wakeTimes),
      wokenBeforeCommitReply: beforeReply,
      fromTransactionStart: figures(fromBegin),
    }
    settings.log(
      `postgres wake across pools: p50 ${wake.p50Ms} ms, p99 ${wake.p99Ms} ms, max ${wake.maxMs} ms (n=${wake.samples}, ${beforeReply} before A's commit reply); from A's BEGIN p50 ${wake.fromTransactionStart.p50Ms}, p99 ${wake.fromTransactionStart.p99Ms} ms`,
    )

    // Each request counts against its key and its organisation, as the API's limits do; eight
    // keys of one organisation, so concurrent requests meet on the organisation's row.
    const many = 1_000_000_000
    const admit = async (m: 0 | 1, i: number) => {
      const result = await admitRequest(pools[m], systemClock, [
        { id: `key:k${i % 8}`, limit: many },
        { id: `org:${org}`, limit: many },
      ])
      if (!result.admitted) throw new Error(`admission refused: ${result.full}`)
    }
    // A long poll holds a slot of its key and of its organisation (advisory lock per subject).
    const slots = pools.map((sql, m) => createSlotLeases(sql, { holder: `bench-${m}`, clock: systemClock }))
    const lease = async (m: 0 | 1, i: number) => {
      const result = await slots[m]!.acquire([
        { id: `key:k${i % 8}`, limit: many },
        { id: `org:${org}`, limit: many },
      ])
      if (!result.acquired) throw new Error(`slot refused: ${result.full}`)
      await result.lease.release()
    }
    // An admitted recipient: reserve at RCPT, convert in the storing transaction.
    const quotas = pools.map((sql, m) => createQuotaReservations(sql, { holder: `bench-${m}`, clock: systemClock }))
    const limits = { monthlyEmails: many, inboxBurst: many, orgBurst: many }
    const reserve = async (m: 0 | 1, i: number) => {
      const target = { organizationId: org, inboxId: `inb_q${i % 8}` }
      const result = await quotas[m]!.reserve(target, limits)
      if (!result.reserved) throw new Error(`reservation refused: ${result.refusal}`)
      const converted = await pools[m].begin((tx) => quotas[m]!.convert(tx, result.reservation, limits))
      if (!converted.counted) throw new Error(`conversion refused: ${converted.refusal}`)
    }
    // The same over eight organisations: their advisory locks do not meet.
    const reserveSpread = async (m: 0 | 1, i: number) => {
      const target = { organizationId: spreadOrgs[i % 8]!, inboxId: `inb_s${i % 8}` }
      const result = await quotas[m]!.reserve(target, limits)
      if (!result.reserved) throw new Error(`reservation refused: ${result.refusal}`)
      const converted = await pools[m].begin((tx) => quotas[m]!.convert(tx, result.reservation, limits))
      if (!converted.counted) throw new Error(`conversion refused: ${converted.refusal}`)
    }
    // createInbox with an Idempotency-Key, as the server runs it (the inboxes adapter): claim the
    // key, reserve the inbox, activate it and complete the claim in the activating transaction.
    const inboxStores = pools.map((sql) => postgresInboxes(postgresDb(sql)))
    const claim = async (m: 0 | 1, i: number) => {
      const store = inboxStores[m]!
      const now = new Date().toISOString()
      const key = `key-${m}-${i}`
      const outcome = await store.claimIdempotencyKey({
        organizationId: org,
        key,
        fingerprint: 'fingerprint',
        now,
        expiresAt: new Date(Date.now() + 24 * 3_600_000).toISOString(),
      })
      if (outcome.outcome !== 'claimed') throw new Error(`claim not taken: ${outcome.outcome}`)
      const local = `idem-${m}-${i}`
      const reserved = await store.reserveInbox({
        organizationId: org,
        activeInboxLimit: many,
        candidates: [{ id: `inb_idem_${m}_${i}`, localPart: local, address: `${local}@bench.test` }],
        createdAt: now,
      })
      if (!('row' in reserved)) throw new Error(`inbox not reserved: ${reserved.refused}`)
      const active = await store.activateInbox({
        inboxId: reserved.row.id,
        routingRuleId: null,
        idempotency: { claim: outcome.claim, responseBody: `{"id":"${reserved.row.id}"}` },
      })
      if (!active) throw new Error('inbox not activated')
    }

    const operations = {} as Extract<PostgresResult, { operations: unknown }>['operations']
    const list = [
      ['admit_request', admit],
      ['slot_lease', lease],
      ['quota_reservation', reserve],
      ['quota_reservation_8_orgs', reserveSpread],
      ['idempotency_claim', claim],
    ] as const
    for (const [name, op] of list) {
      // Warm-up with every connection of both pools in use, so the timed runs open none (a
      // new connection forks a server process: milliseconds of CPU that would land on the first ops).
      let warm = 2_000_000
      await Promise.all(
        Array.from({ length: settings.concurrency * 2 }, async (_, w) => {
          for (let i = 0; i < 5; i++) await op((w % 2) as 0 | 1, warm++)
        }),
      )
      const figuresAlone = await alone(op, settings.opSamples)
      const figuresLoaded = await loaded(op, settings, port)
      operations[name] = { alone: figuresAlone, loaded: figuresLoaded }
      settings.log(
        `postgres ${name}: alone p50 ${figuresAlone.p50Ms} / p99 ${figuresAlone.p99Ms} ms; ${settings.concurrency}+${settings.concurrency} in flight: ${figuresLoaded.perSecond}/s, p50 ${figuresLoaded.p50Ms} / p99 ${figuresLoaded.p99Ms} ms, CPU ${figuresLoaded.benchCpuMsPerOp} ms bench + ${figuresLoaded.serverCpuMsPerOp} ms server per op`,
      )
    }
    await Promise.all(inboxStores.map((store) => store.close()))
    return { postgresVersion, concurrency: settings.concurrency, wake, operations }
  } finally {
    await Promise.all(pools.map((sql) => sql.end({ timeout: 5 })))
  }
}
