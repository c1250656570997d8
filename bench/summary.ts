/**
 * Medians across rounds, ratios from the same run, the performance goals, and the table.
 */
import { fmt, goal, markdown, table, type Goal, type Row } from './lib/report.ts'
import { median, ratio } from './lib/stats.ts'
import type { CapacityResult } from './phases/capacity.ts'
import type { EndToEndSamples } from './phases/end-to-end.ts'
import type { IngestRound } from './phases/ingest.ts'
import { summarize as latencySummary } from './phases/latency.ts'
import type { MemoryResult } from './phases/memory.ts'
import type { PostgresResult } from './phases/postgres.ts'
import type { PostgresIngest, PostgresServersResult } from './phases/postgres-servers.ts'
import type { ReadRound } from './phases/reads.ts'

interface Results {
  mode: string
  command: string
  machine: { nproc: number; cpu: string; memory_gib: number; bun: string; node: string; maildev: string }
  shapes: Record<string, { label: string; bytes: number }>
  idle_rss_mib: { pigeonhole: number; maildev: number }
  ingest: IngestRound[]
  latency: { pigeonhole: number[]; maildev: number[] }
  end_to_end: Record<string, { pigeonhole: EndToEndSamples; maildev: EndToEndSamples }>
  reads: ReadRound[]
  memory: MemoryResult
  capacity: CapacityResult
  postgres: PostgresResult
  postgres_servers: PostgresServersResult
}

const pct = (value: number) => `${fmt(value * 100)}%`
const times = (value: number) => `${fmt(value, 1)}x`

export function summarize(results: Results) {
  const ingestOf = (
    target: string,
    shape: string,
    field: 'perSecond' | 'cpuMsPerMessage' | 'mainThreadCpuMsPerMessage',
  ) => median(results.ingest.filter((r) => r.target === target && r.shape === shape).map((r) => r[field]))
  const readOf = (target: string, endpoint: string, field: 'perSecond' | 'p50Ms' | 'p99Ms') =>
    median(results.reads.filter((r) => r.target === target && r.endpoint === endpoint).map((r) => r[field]))

  const rows: Row[] = []
  const goals: Goal[] = []
  const ingest: Record<string, unknown> = {}
  for (const [shape, { label }] of Object.entries(results.shapes)) {
    const [ph, md, sink] = ['pigeonhole', 'maildev', 'smtp_sink'].map((t) => ingestOf(t, shape, 'perSecond')) as [
      number,
      number,
      number,
    ]
    const [phCpu, mdCpu, sinkCpu] = ['pigeonhole', 'maildev', 'smtp_sink'].map((t) =>
      ingestOf(t, shape, 'cpuMsPerMessage'),
    ) as [number, number, number]
    const vsMaildev = ratio(ph, md)
    const [phMain, mdMain, sinkMain] = ['pigeonhole', 'maildev', 'smtp_sink'].map((t) =>
      ingestOf(t, shape, 'mainThreadCpuMsPerMessage'),
    ) as [number, number, number]
    goals.push(goal(`ingest ${label}: x maildev`, vsMaildev, '>=', 3, 'x'))
    ingest[shape] = {
      pigeonhole: ph,
      maildev: md,
      smtp_sink: sink,
      vs_maildev: vsMaildev,
      vs_sink: ratio(ph, sink),
      cpu_ms_per_message: { pigeonhole: phCpu, maildev: mdCpu, smtp_sink: sinkCpu },
      main_thread_cpu_ms_per_message: { pigeonhole: phMain, maildev: mdMain, smtp_sink: sinkMain },
    }
    rows.push([
      `Ingest ${label} (msg/s)`,
      fmt(ph),
      fmt(md),
      fmt(sink),
      `${times(vsMaildev)} / ${pct(ratio(ph, sink))}`,
      '>= 3x maildev',
      mark(goals.at(-1)!),
    ])
    rows.push([`  server CPU per message (ms)`, fmt(phCpu, 2), fmt(mdCpu, 2), fmt(sinkCpu, 2), '', '', ''])
    rows.push([`    of it on the main thread (ms)`, fmt(phMain, 2), fmt(mdMain, 2), fmt(sinkMain, 2), '', '', ''])
  }

  const wake = {
    pigeonhole: latencySummary('pigeonhole', results.latency.pigeonhole),
    maildev: latencySummary('maildev', results.latency.maildev),
  }
  goals.push(goal('wake latency p50 (ms)', wake.pigeonhole.p50Ms, '<=', 1, ' ms'))
  goals.push(goal('wake latency p99 (ms)', wake.pigeonhole.p99Ms, '<=', 5, ' ms'))
  const n = wake.pigeonhole.samples
  rows.push([
    `Wake latency p50 (ms, n=${n})`,
    fmt(wake.pigeonhole.p50Ms, 2),
    fmt(wake.maildev.p50Ms, 2),
    '',
    times(ratio(wake.maildev.p50Ms, wake.pigeonhole.p50Ms)),
    '<= 1 ms',
    mark(goals.at(-2)!),
  ])
  rows.push(['Wake latency p90 (ms)', fmt(wake.pigeonhole.p90Ms, 2), fmt(wake.maildev.p90Ms, 2), '', '', '', ''])
  rows.push([
    'Wake latency p99 (ms)',
    fmt(wake.pigeonhole.p99Ms, 2),
    fmt(wake.maildev.p99Ms, 2),
    '',
    '',
    '<= 5 ms',
    mark(goals.at(-1)!),
  ])

  // New connection per message; each span ends when the waiter holds the message's content.
  const endToEnd: Record<string, unknown> = {}
  const spread = (l: { p50Ms: number; p90Ms: number; p99Ms: number }) =>
    `${fmt(l.p50Ms, 1)} / ${fmt(l.p90Ms, 1)} / ${fmt(l.p99Ms, 1)}`
  for (const [shape, targets] of Object.entries(results.end_to_end)) {
    const label = results.shapes[shape]!.label
    const figures: Record<string, unknown> = {}
    for (const [span, from] of [
      ['connect', 'TCP connect'],
      ['mail', 'MAIL FROM'],
    ] as const) {
      const ph = latencySummary('pigeonhole', targets.pigeonhole[span])
      const md = latencySummary('maildev', targets.maildev[span])
      figures[span] = { pigeonhole: ph, maildev: md }
      const name = `${from} → content, ${label} (ms p50 / p90 / p99, n=${ph.samples})`
      if (span === 'connect' && shape === 'text_2kb') {
        goals.push(goal(`connect to content ${label} p50 (ms)`, ph.p50Ms, '<=', 10, ' ms'))
        goals.push(goal(`connect to content ${label} p99 (ms)`, ph.p99Ms, '<=', 20, ' ms'))
        rows.push([
          name,
          spread(ph),
          spread(md),
          '',
          times(ratio(md.p50Ms, ph.p50Ms)),
          '<= 10 / - / <= 20',
          mark(goals.at(-2)!, goals.at(-1)!),
        ])
      } else rows.push([name, spread(ph), spread(md), '', times(ratio(md.p50Ms, ph.p50Ms)), '', ''])
    }
    endToEnd[shape] = figures
  }

  const list = {
    pigeonhole: readOf('pigeonhole', 'list', 'perSecond'),
    maildev: readOf('maildev', 'list', 'perSecond'),
    bare: readOf('bare_bun_serve', 'list', 'perSecond'),
  }
  const get = {
    pigeonhole: readOf('pigeonhole', 'get_inbox', 'perSecond'),
    bare: readOf('bare_bun_serve', 'get_inbox', 'perSecond'),
  }
  goals.push(goal('list reads: x maildev', ratio(list.pigeonhole, list.maildev), '>=', 25, 'x'))
  goals.push(goal('list reads: share of bare Bun.serve', ratio(list.pigeonhole, list.bare), '>=', 0.3))
  rows.push([
    'List 50 messages (req/s)',
    fmt(list.pigeonhole),
    fmt(list.maildev),
    fmt(list.bare),
    `${times(ratio(list.pigeonhole, list.maildev))} / ${pct(ratio(list.pigeonhole, list.bare))}`,
    '>= 25x / >= 30%',
    mark(goals.at(-2)!, goals.at(-1)!),
  ])
  const lat = (t: string, e: string) => `${fmt(readOf(t, e, 'p50Ms'), 2)} / ${fmt(readOf(t, e, 'p99Ms'), 2)}`
  rows.push([
    '  p50 / p99 (ms)',
    lat('pigeonhole', 'list'),
    lat('maildev', 'list'),
    lat('bare_bun_serve', 'list'),
    '',
    '',
    '',
  ])
  rows.push(['getInbox (req/s)', fmt(get.pigeonhole), '', fmt(get.bare), pct(ratio(get.pigeonhole, get.bare)), '', ''])
  rows.push(['  p50 / p99 (ms)', lat('pigeonhole', 'get_inbox'), '', lat('bare_bun_serve', 'get_inbox'), '', '', ''])

  const m = results.memory
  goals.push(goal('idle RSS (MiB)', m.idleRssMiB, '<=', 60, ' MB'))
  goals.push(goal(`RSS after ${m.messages} messages (MiB)`, m.afterMessagesRssMiB, '<=', 120, ' MB'))
  goals.push(goal(`${m.longPolls} long polls add (MiB)`, m.longPollsAddMiB, '<=', 20, ' MB'))
  goals.push(goal('start-up to first /health 200 (ms)', m.startupMs, '<=', 250, ' ms'))
  const [idleGoal, filledGoal, pollsGoal, startGoal] = goals.slice(-4) as [Goal, Goal, Goal, Goal]
  rows.push([
    'Idle RSS (MiB)',
    fmt(m.idleRssMiB, 1),
    fmt(results.idle_rss_mib.maildev, 1),
    '',
    '',
    '<= 60',
    mark(idleGoal),
  ])
  const split = (p: { anonMiB: number; fileMiB: number }) => `${fmt(p.anonMiB, 1)} + ${fmt(p.fileMiB, 1)}`
  rows.push(['  anonymous + file-backed (MiB)', split(m.parts.idle), '', '', '', '', ''])
  rows.push([
    `RSS after ${fmt(m.messages)} x 30 KB messages (MiB)`,
    fmt(m.afterMessagesRssMiB, 1),
    '',
    '',
    '',
    '<= 120',
    mark(filledGoal),
  ])
  rows.push(['  anonymous + file-backed (MiB)', split(m.parts.afterMessages), '', '', '', '', ''])
  rows.push([
    `${fmt(m.longPolls)} open long polls add (MiB, vs idle)`,
    fmt(m.longPollsAddMiB, 1),
    '',
    '',
    '',
    '<= 20',
    mark(pollsGoal),
  ])
  rows.push([
    `Start-up to /health 200 (ms, ${fmt(m.messages)} msgs)`,
    fmt(m.startupMs, 0),
    '',
    '',
    '',
    '<= 250',
    mark(startGoal),
  ])

  const c = results.capacity
  for (const step of c.steps) {
    rows.push([`At ${fmt(step.messages)} stored msgs (${fmt(step.databaseMiB)} MiB db)`, '', '', '', '', '', ''])
    rows.push(['  ingest 2 KB (msg/s, 8 connections)', fmt(step.ingestPerSecond), '', '', '', '', ''])
    rows.push(['  wake p50 / p99 (ms)', `${fmt(step.wakeP50Ms, 2)} / ${fmt(step.wakeP99Ms, 2)}`, '', '', '', '', ''])
    rows.push([
      '  RSS idle / after ingest (MiB)',
      `${fmt(step.idleRssMiB, 1)} / ${fmt(step.rssAfterMiB, 1)}`,
      '',
      '',
      '',
      '',
      '',
    ])
    rows.push(['  start-up to /health 200 (ms)', fmt(step.startupMs, 0), '', '', '', '', ''])
  }
  rows.push([`${fmt(c.smtpSessions)} idle SMTP sessions add (MiB)`, fmt(c.smtpSessionsAddMiB, 1), '', '', '', '', ''])

  const pg = results.postgres
  // A skip is one line under the table, not a row: its reason would widen the first column.
  const postgresSkipped = 'skipped' in pg ? `PostgreSQL phase skipped: ${pg.skipped}` : ''
  if (!('skipped' in pg)) {
    const pair = (f: { p50Ms: number; p99Ms: number }) => `${fmt(f.p50Ms, 2)} / ${fmt(f.p99Ms, 2)}`
    goals.push(goal('postgres wake across machines p99 (ms)', pg.wake.p99Ms, '<=', 20, ' ms'))
    rows.push([
      `PostgreSQL ${pg.postgresVersion.split(' ')[0]} (local cluster, two pools as two machines)`,
      '',
      '',
      '',
      '',
      '',
      '',
    ])
    rows.push([
      `  wake across pools p50 / p99 (ms, n=${pg.wake.samples})`,
      pair(pg.wake),
      '',
      '',
      '',
      '<= 20 (p99)',
      mark(goals.at(-1)!),
    ])
    rows.push(['    from BEGIN on A p50 / p99 (ms)', pair(pg.wake.fromTransactionStart), '', '', '', '', ''])
    const names = {
      admit_request: 'request admission',
      slot_lease: 'slot lease acquire+release',
      quota_reservation: 'quota reserve+convert',
      quota_reservation_8_orgs: 'the same over 8 organisations',
      idempotency_claim: 'createInbox with Idempotency-Key (claim, reserve, activate)',
    }
    for (const [name, op] of Object.entries(pg.operations)) {
      rows.push([`  ${names[name as keyof typeof names]} alone p50 / p99 (ms)`, pair(op.alone), '', '', '', '', ''])
      rows.push([
        `    ${pg.concurrency}+${pg.concurrency} in flight (ops/s; p50 / p99 ms)`,
        `${fmt(op.loaded.perSecond)}; ${pair(op.loaded)}`,
        '',
        '',
        '',
        '',
        '',
      ])
      rows.push([
        '    CPU per op, bench / server (ms)',
        `${fmt(op.loaded.benchCpuMsPerOp, 2)} / ${fmt(op.loaded.serverCpuMsPerOp, 2)}`,
        '',
        '',
        '',
        '',
        '',
      ])
    }
  }

  const pgs = results.postgres_servers
  let postgresServers: Record<string, unknown> = {}
  if (!('skipped' in pgs)) {
    const per = (
      rounds: PostgresIngest[],
      machine: 'A' | 'B',
      field: 'perSecond' | 'cpuMsPerMessage' | 'mainThreadCpuMsPerMessage' | 'databaseCpuMsPerMessage',
    ) => median(rounds.filter((r) => r.machine === machine).map((r) => r[field]))
    const ingestRow = (rounds: PostgresIngest[], machine: 'A' | 'B') => ({
      perSecond: per(rounds, machine, 'perSecond'),
      cpuMsPerMessage: per(rounds, machine, 'cpuMsPerMessage'),
      mainThreadCpuMsPerMessage: per(rounds, machine, 'mainThreadCpuMsPerMessage'),
      databaseCpuMsPerMessage: per(rounds, machine, 'databaseCpuMsPerMessage'),
    })
    const one = ingestRow(pgs.ingest.one, 'A')
    const two = { A: ingestRow(pgs.ingest.two, 'A'), B: ingestRow(pgs.ingest.two, 'B') }
    const c2c = pgs.connectToContent
    const wakeX = pgs.wakeAcrossMachines
    goals.push(goal('postgres connect to content p50 (ms)', c2c.p50Ms, '<=', 8, ' ms'))
    goals.push(goal('postgres connect to content p99 (ms)', c2c.p99Ms, '<=', 20, ' ms'))
    goals.push(goal('postgres wake-up across machines p99 (ms)', wakeX.p99Ms, '<=', 10, ' ms'))
    const [c2cP50, c2cP99, wakeGoal] = goals.slice(-3) as [Goal, Goal, Goal]
    const cpu = (r: ReturnType<typeof ingestRow>) =>
      `${fmt(r.cpuMsPerMessage, 2)}, ${fmt(r.mainThreadCpuMsPerMessage, 2)}; ${fmt(r.databaseCpuMsPerMessage, 2)}`
    rows.push([
      `PostgreSQL mode servers (${pgs.entry}, pool ${pgs.poolSize} per machine, fsync ${pgs.durability.fsync}, synchronous_commit ${pgs.durability.synchronousCommit})`,
      '',
      '',
      '',
      '',
      '',
      '',
    ])
    rows.push([
      `  ingest ${results.shapes.text_2kb?.label ?? '2 KB'}, one machine (msg/s)`,
      fmt(one.perSecond),
      '',
      '',
      '',
      '',
      '',
    ])
    rows.push(['    CPU per message: server, its main thread; database (ms)', cpu(one), '', '', '', '', ''])
    rows.push([
      '  ingest, two machines at once: A + B (msg/s)',
      `${fmt(two.A.perSecond)} + ${fmt(two.B.perSecond)}`,
      '',
      '',
      '',
      '',
      '',
    ])
    rows.push(['    CPU per message on A: server, main thread; database (ms)', cpu(two.A), '', '', '', '', ''])
    rows.push(['    CPU per message on B: server, main thread; database (ms)', cpu(two.B), '', '', '', '', ''])
    rows.push([
      `  TCP connect → content (ms p50 / p90 / p99, n=${c2c.samples})`,
      spread(c2c),
      '',
      '',
      '',
      '<= 8 / - / <= 20',
      mark(c2cP50, c2cP99),
    ])
    rows.push([
      `  wake-up, A's 250 → B's answer (ms p50 / p90 / p99, n=${wakeX.samples})`,
      spread(wakeX),
      '',
      '',
      '',
      '<= 10 (p99)',
      mark(wakeGoal),
    ])
    const cpuGoals = [
      goal('postgres server CPU per message, one machine (ms)', one.cpuMsPerMessage, '<=', 1.2, ' ms'),
      goal('postgres database CPU per message, one machine (ms)', one.databaseCpuMsPerMessage, '<=', 1, ' ms'),
    ]
    goals.push(...cpuGoals)
    rows.push([
      '  CPU per message, one machine: server; database (ms)',
      `${fmt(one.cpuMsPerMessage, 2)}; ${fmt(one.databaseCpuMsPerMessage, 2)}`,
      '',
      '',
      '',
      '<= 1.2; <= 1.0',
      mark(...cpuGoals),
    ])
    // The SQLite server in the same phase, same shape and connections: the rate one PostgreSQL machine is held to.
    const sqliteRate = median(pgs.sqlite.map((r) => r.perSecond))
    const share = ratio(one.perSecond, sqliteRate)
    goals.push(goal('postgres one machine: share of the SQLite server in the same run', share, '>=', 0.5))
    rows.push([
      '  one machine against the SQLite server in the same run (msg/s)',
      `${fmt(one.perSecond)} / ${fmt(sqliteRate)}`,
      '',
      '',
      pct(share),
      '>= 50%',
      mark(goals.at(-1)!),
    ])
    // The sweep: rate of both machines together, wake-ups on and off, at 4, 16 and 64 connections;
    // each mode's runs (two, alternated) averaged.
    const level = (wakeUps: 'on' | 'off', connections: number) => {
      const runs = pgs.sweep.filter((l) => l.wakeUps === wakeUps && l.connections === connections)
      if (runs.length === 0) return undefined
      const mean = (pick: (l: (typeof runs)[number]) => number) =>
        runs.reduce((sum, l) => sum + pick(l), 0) / runs.length
      return {
        perSecond: mean((l) => l.perSecond),
        serverCpuMsPerMessage: mean((l) => l.serverCpuMsPerMessage),
        databaseCpuMsPerMessage: mean((l) => l.databaseCpuMsPerMessage),
      }
    }
    const levels = [...new Set(pgs.sweep.map((l) => l.connections))].sort((a, b) => a - b)
    const sweepGoals: Goal[] = []
    for (const [i, connections] of levels.entries()) {
      const on = level('on', connections)
      const off = level('off', connections)
      const before = i > 0 ? level('on', levels[i - 1]!) : undefined
      sweepGoals.push(
        goal(
          `postgres sweep ${connections}: wake-ups on / off`,
          ratio(on?.perSecond ?? Number.NaN, off?.perSecond ?? Number.NaN),
          '>=',
          0.9,
        ),
      )
      if (before)
        sweepGoals.push(
          goal(
            `postgres sweep ${connections}: on / the level before`,
            ratio(on?.perSecond ?? Number.NaN, before.perSecond),
            '>=',
            1,
          ),
        )
      const cell = (l: typeof on) =>
        l ? `${fmt(l.perSecond)} (${fmt(l.serverCpuMsPerMessage, 2)}; ${fmt(l.databaseCpuMsPerMessage, 2)})` : 'n/a'
      rows.push([
        `  sweep, ${connections} connections over two machines: on / off (mean of runs), msg/s (CPU/msg servers; database)`,
        `${cell(on)} / ${cell(off)}`,
        '',
        '',
        '',
        '>= 90% of off, >= the level before',
        mark(...sweepGoals.slice(i === 0 ? -1 : -2)),
      ])
    }
    goals.push(...sweepGoals)
    postgresServers = {
      ingest_one_machine: one,
      ingest_two_machines: two,
      connect_to_content_ms: c2c,
      wake_across_machines_ms: wakeX,
      sqlite_same_run_per_second: sqliteRate,
      sweep: pgs.sweep,
    }
  }
  const postgresServersSkipped = 'skipped' in pgs ? `PostgreSQL servers phase skipped: ${pgs.skipped}` : ''
  const skips = [postgresSkipped, postgresServersSkipped].filter(Boolean)

  const header: Row = ['Measure', 'Pigeonhole', `maildev ${results.machine.maildev}`, 'ceiling', 'ratio', 'goal', '']
  const mc = results.machine
  const intro = `Machine: ${mc.nproc} cores, ${mc.cpu}, ${mc.memory_gib} GiB; Bun ${mc.bun}, node ${mc.node}. Command: ${results.command}`
  const notes =
    'Ceilings: ingest = smtp-server on Bun that discards each message; reads = bare Bun.serve returning the same bytes.\n' +
    'Ratios: ingest and reads = Pigeonhole / maildev and Pigeonhole / ceiling; latency = maildev / Pigeonhole (at p50). Medians of alternating rounds;\n' +
    'latencies pool every sample. "→ content": a new SMTP connection per message, ending when the waiting long poll (include=content) or maildev\'s feed has the message.'
  const text = [intro, '', table(header, rows), ...skips, '', notes].join('\n')
  const summary = {
    ingest,
    wake_latency_ms: wake,
    end_to_end_ms: endToEnd,
    reads: { list_per_second: list, get_inbox_per_second: get },
    memory_mib: {
      parts: m.parts,
      idle: m.idleRssMiB,
      after_messages: m.afterMessagesRssMiB,
      long_polls_add: m.longPollsAddMiB,
      maildev_idle: results.idle_rss_mib.maildev,
    },
    startup_ms: m.startupMs,
    capacity: c,
    postgres: pg,
    postgres_servers: postgresServers,
    goals,
    markdown: [intro, '', markdown(header, rows), ...(skips.length > 0 ? ['', ...skips] : [])].join('\n'),
  }
  return { text, summary }
}

function mark(...goals: Goal[]): string {
  return goals.every((g) => g.met) ? 'ok' : 'MISSED'
}
