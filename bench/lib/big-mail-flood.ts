/**
 * The big-mail flood: a Pigeonhole process inside a memory cgroup of the deployed size
 * (512 MiB), and N parallel senders of 9 MiB messages, each from its own loopback address
 * (127.0.1.x, so the per-address guards do not thin the flood out). In the middle of it a
 * small message is sent from another address and timed to its 250 (which means committed).
 * Used by the bench phase ("big-mail flood", bench/phases/big-mail-flood.ts) and by the test
 * that holds the goal (test/smtp/smtp.big-mail-flood.test.ts).
 *
 * Needs root and a memory controller (cgroup v2, or v1's memory hierarchy); without them
 * memoryCgroup() says why and the caller skips. The database goes on the ordinary temp
 * folder, not /dev/shm: tmpfs pages are charged to the cgroup that writes them.
 */
import { randomBytes } from 'node:crypto'
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import { createConnection, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { cpuMs, freePort, spawnChild, waitHttp, waitTcp } from './proc.ts'

const MiB = 1024 * 1024
const BIG = '1000000000'

export interface MemoryCgroup {
  version: 1 | 2
  procsFile: string
  /** OOM kills inside the group so far. */
  oomKills(): number
  /** The group's own high-water mark (process memory plus the page cache it caused), or null. */
  peakBytes(): number | null
  remove(): void
}

const readNumber = (file: string, key: string) =>
  Number(new RegExp(`^${key} (\\d+)$`, 'm').exec(readFileSync(file, 'utf8'))?.[1] ?? 0)

/** A fresh memory cgroup limited to `limitBytes` (no swap), or the reason there cannot be one here. */
export function memoryCgroup(limitBytes: number): MemoryCgroup | { skip: string } {
  if (process.getuid?.() !== 0) return { skip: 'not root: a memory cgroup cannot be made' }
  const name = `pigeonhole-flood-${process.pid}-${Date.now()}`
  const v2Root = '/sys/fs/cgroup'
  try {
    if (
      existsSync(join(v2Root, 'cgroup.controllers')) &&
      readFileSync(join(v2Root, 'cgroup.controllers'), 'utf8').split(/\s+/).includes('memory')
    ) {
      // A child gets memory.max only if the parent hands the controller down.
      const subtree = join(v2Root, 'cgroup.subtree_control')
      if (!readFileSync(subtree, 'utf8').split(/\s+/).includes('memory')) writeFileSync(subtree, '+memory')
      const dir = join(v2Root, name)
      mkdirSync(dir)
      writeFileSync(join(dir, 'memory.max'), String(limitBytes))
      if (existsSync(join(dir, 'memory.swap.max'))) writeFileSync(join(dir, 'memory.swap.max'), '0')
      return {
        version: 2,
        procsFile: join(dir, 'cgroup.procs'),
        oomKills: () => readNumber(join(dir, 'memory.events'), 'oom_kill'),
        peakBytes: () =>
          existsSync(join(dir, 'memory.peak')) ? Number(readFileSync(join(dir, 'memory.peak'), 'utf8')) : null,
        remove: () => rmdirSync(dir),
      }
    }
    const v1Root = join(v2Root, 'memory')
    if (existsSync(join(v1Root, 'memory.limit_in_bytes'))) {
      const dir = join(v1Root, name)
      mkdirSync(dir)
      writeFileSync(join(dir, 'memory.limit_in_bytes'), String(limitBytes))
      if (existsSync(join(dir, 'memory.memsw.limit_in_bytes')))
        writeFileSync(join(dir, 'memory.memsw.limit_in_bytes'), String(limitBytes))
      return {
        version: 1,
        procsFile: join(dir, 'cgroup.procs'),
        oomKills: () => readNumber(join(dir, 'memory.oom_control'), 'oom_kill'),
        peakBytes: () => Number(readFileSync(join(dir, 'memory.max_usage_in_bytes'), 'utf8')),
        remove: () => rmdirSync(dir),
      }
    }
    return { skip: 'no memory controller in /sys/fs/cgroup (neither cgroup v2 with memory nor v1 memory)' }
  } catch (error) {
    return { skip: `cannot make a memory cgroup: ${error instanceof Error ? error.message : String(error)}` }
  }
}

/** A message of about `bytes` raw: a line of text and two base64 attachments of random bytes (as a PDF would be). */
export function bigMessage(to: string, bytes: number, subject: string): Buffer {
  const decodedEach = Math.floor((bytes * 57) / 78 / 2) - 1024
  const part = (name: string) =>
    [
      '--flood',
      'Content-Type: application/pdf',
      `Content-Disposition: attachment; filename="${name}"`,
      'Content-Transfer-Encoding: base64',
      '',
      randomBytes(decodedEach)
        .toString('base64')
        .replace(/.{1,76}/g, '$&\r\n'),
    ].join('\r\n')
  const head = [
    'From: flood@example.com',
    `To: ${to}`,
    `Subject: ${subject}`,
    'MIME-Version: 1.0',
    'Content-Type: multipart/mixed; boundary="flood"',
    '',
    '--flood',
    'Content-Type: text/plain',
    '',
    'two attachments',
    '',
  ]
  return Buffer.from([...head, part('first.pdf'), part('second.pdf'), '--flood--', ''].join('\r\n'))
}

export interface SendResult {
  code: number
  text: string
  /** From connecting to the reply to the message. */
  ms: number
}

/**
 * One SMTP transaction from `localAddress`, the body written in slices at the pace the
 * server reads it (so 200 senders do not queue 1.8 GB in this process).
 */
export function send(port: number, localAddress: string, to: string, body: Buffer): Promise<SendResult> {
  const started = performance.now()
  return new Promise((resolve) => {
    const socket: Socket = createConnection({ port, host: '127.0.0.1', localAddress })
    const steps = ['EHLO flood.test', 'MAIL FROM:<flood@example.com>', `RCPT TO:<${to}>`, 'DATA']
    let buffered = ''
    let step = 0
    let done = false
    const finish = (code: number, text: string) => {
      if (done) return
      done = true
      socket.end('QUIT\r\n')
      resolve({ code, text, ms: performance.now() - started })
    }
    const writeBody = async () => {
      for (let at = 0; at < body.length; at += 256 * 1024) {
        if (!socket.write(body.subarray(at, at + 256 * 1024)))
          await new Promise((drained) => socket.once('drain', drained))
      }
      socket.write('\r\n.\r\n')
    }
    socket.setEncoding('latin1')
    socket.on('error', (error) => finish(-1, error.message))
    socket.on('close', () => finish(-1, 'connection closed'))
    socket.on('data', (chunk: string) => {
      buffered += chunk
      for (let end = buffered.indexOf('\r\n'); end >= 0; end = buffered.indexOf('\r\n')) {
        const line = buffered.slice(0, end)
        buffered = buffered.slice(end + 2)
        if (line[3] === '-') continue
        const code = Number(line.slice(0, 3))
        if (step < steps.length) {
          if (code >= 400) return finish(code, line)
          socket.write(`${steps[step++]}\r\n`)
        } else if (step === steps.length) {
          if (code !== 354) return finish(code, line)
          step++
          void writeBody()
        } else return finish(code, line)
      }
    })
  })
}

const statusKiB = (pid: number, field: string) =>
  Number(new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0)

export interface FloodResult {
  senders: number
  message_mib: number
  cgroup: string
  /** 250 replies, and every other reply text with its count. */
  stored_replies: number
  other_replies: Record<string, number>
  messages_listed: number
  refused_for_memory: number
  seconds: number
  goodput_mib_s: number
  /**
   * CPU seconds the server used (every thread: event loop, parse workers, checkpointer) per
   * MiB stored: the figure that holds on a busy, shared machine, where the wall rate does not.
   */
  server_cpu_s_per_mib: number
  /** Of that, the main thread's (the event loop: SMTP, HTTP, the SQLite commits). */
  main_thread_cpu_s_per_mib: number
  /** The machine's load average (1 min) when the flood ended: read wall-clock figures beside it. */
  load_average_1m: number
  peak_rss_mib: number
  /** Anonymous and file-backed parts of the highest sampled RSS. */
  peak_rss_anon_mib: number
  peak_rss_file_mib: number
  /** When the sampled peak came, and how much was in the spool then (transfers still running, or only parsing left). */
  peak_at_s: number
  peak_spooled_mib: number
  cgroup_peak_mib: number | null
  oom_kills: number
  small_message_ms: number
  /** The slowest /health answer, asked one request at a time throughout the flood from a process of its own. */
  slowest_health_ms: number
  /**
   * The same asked from the load generator's process (how it was measured before): its own busy
   * event loop adds to it, so it says more about the senders than about the server.
   */
  slowest_health_in_load_generator_ms: number
  small_message_code: number
  spool_files_after: number
  server_alive: boolean
}

/**
 * Runs the flood against a fresh server started with `entry` (a script path under `root`)
 * inside `cgroup`; `log` hears progress.
 */
export async function runBigMailFlood(options: {
  root: string
  entry: string
  cgroup: MemoryCgroup
  senders: number
  messageBytes: number
  log: (line: string) => void
}): Promise<FloodResult> {
  const { root, entry, cgroup, senders, messageBytes, log } = options
  const dir = mkdtempSync(join(tmpdir(), 'pigeonhole-flood-'))
  const databasePath = join(dir, 'pigeonhole.db')
  const [port, smtpPort] = [await freePort(), await freePort()]
  const env: Record<string, string> = {
    PORT: String(port),
    SMTP_PORT: String(smtpPort),
    HOST: '127.0.0.1',
    DATABASE_PATH: databasePath,
    RECEIVING_DOMAIN: 'flood.test',
    LOG_LEVEL: process.env.FLOOD_LOG_LEVEL ?? 'warn',
    // The spec's limits, raised for the flood (not turned off): 200 messages to one inbox.
    LIMIT_MONTHLY_EMAILS: BIG,
    LIMIT_INBOX_BURST: BIG,
    LIMIT_ORG_BURST: BIG,
    LIMIT_ACTIVE_INBOXES: '1000',
    LIMIT_REQUESTS_PER_KEY: BIG,
    LIMIT_REQUESTS_PER_ORG: BIG,
    SMTP_MAX_CLIENTS: String(senders + 20),
  }
  // The shell joins the group first, then becomes the server: nothing runs outside it.
  const child = spawnChild(
    'pigeonhole (cgroup)',
    ['sh', '-c', `echo $$ > '${cgroup.procsFile}' && exec "$0" "$@"`, process.execPath, entry],
    env,
    root,
    process.env.FLOOD_LOG_FILE,
  )
  const base = `http://127.0.0.1:${port}`
  let healthProbe: ReturnType<typeof Bun.spawn<'pipe', 'pipe', 'inherit'>> | undefined
  try {
    await waitHttp(child, `${base}/health`)
    await waitTcp(child, smtpPort)
    const cli = (...args: string[]) => {
      const run = Bun.spawnSync({
        cmd: [process.execPath, 'src/cli.ts', ...args],
        cwd: root,
        env: { ...process.env, ...env },
      })
      if (run.exitCode !== 0) throw new Error(`cli ${args.join(' ')}: ${run.stderr.toString()}`)
      return run.stdout.toString().trim().split('\n').at(-1)!
    }
    const key = cli('keys', 'create', cli('orgs', 'create', 'flood'))
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' }
    const inbox = (
      (await (await fetch(`${base}/v1/inboxes`, { method: 'POST', headers, body: '{}' })).json()) as {
        data: { id: string; address: string }
      }
    ).data
    const body = bigMessage(inbox.address, messageBytes, 'flood')
    const small = Buffer.from(
      `From: small@example.com\r\nTo: ${inbox.address}\r\nSubject: small during the flood\r\n\r\n${'a sign-up code: 123456\r\n'.repeat(40)}`,
    )
    const spoolDir = join(dir, 'spool')
    const spooledBytes = () =>
      readdirSync(spoolDir).reduce(
        (sum, name) => sum + (statSync(join(spoolDir, name), { throwIfNoEntry: false })?.size ?? 0),
        0,
      )

    let peakRss = 0
    let peakParts = { anon: 0, file: 0 }
    let peakAt = { seconds: 0, spooledMiB: 0 }
    const sampler = setInterval(() => {
      try {
        const rss = statusKiB(child.pid, 'VmRSS') / 1024
        if (rss > peakRss) {
          peakParts = { anon: statusKiB(child.pid, 'RssAnon') / 1024, file: statusKiB(child.pid, 'RssFile') / 1024 }
          peakAt = { seconds: (performance.now() - started) / 1000, spooledMiB: spooledBytes() / MiB }
        }
        peakRss = Math.max(peakRss, rss)
      } catch {
        // the process is gone; the OOM count says why
      }
    }, 20)
    // /health answered one request at a time throughout: its slowest answer shows how long the event loop was held.
    let probing = true
    let slowestHealth = 0
    const probe = (async () => {
      while (probing) {
        const asked = performance.now()
        await fetch(`${base}/health`).then(
          (r) => r.arrayBuffer(),
          () => null,
        )
        slowestHealth = Math.max(slowestHealth, performance.now() - asked)
        await Bun.sleep(50)
      }
    })()
    // The same from a process of its own (bench/lib/health-probe.ts), the figure the goal is
    // held to: the one above also waits for this process's event loop, which stalled for up to
    // 0.85 s at a time while writing 200 senders' bytes, when the server's loop was never held
    // past 0.1 s.
    healthProbe = Bun.spawn({
      cmd: [process.execPath, join(import.meta.dir, 'health-probe.ts'), `${base}/health`],
      stdin: 'pipe',
      stdout: 'pipe',
      stderr: 'inherit',
    })
    log(
      `${senders} senders of ${(body.length / MiB).toFixed(2)} MiB into a ${cgroup.version === 2 ? 'cgroup v2' : 'cgroup v1'} group`,
    )
    const cpuBefore = { all: cpuMs(child.pid), main: cpuMs(child.pid, true) }
    const started = performance.now()
    const flood = Promise.all(
      Array.from({ length: senders }, (_, i) => send(smtpPort, `127.0.1.${(i % 250) + 1}`, inbox.address, body)),
    )
    // The small message goes once the flood is well under way (a quarter of its bytes spooled or 3 s).
    for (let waited = 0; waited < 3000 && spooledBytes() < (senders * body.length) / 4; waited += 50)
      await Bun.sleep(50)
    log(`small message sent with ${(spooledBytes() / MiB).toFixed(0)} MiB in the spool`)
    const smallResult = await send(smtpPort, '127.0.0.9', inbox.address, small)
    const results = await flood
    const seconds = (performance.now() - started) / 1000
    const cpuSeconds = (cpuMs(child.pid) - cpuBefore.all) / 1000
    const mainCpuSeconds = (cpuMs(child.pid, true) - cpuBefore.main) / 1000
    clearInterval(sampler)
    probing = false
    await probe
    healthProbe.stdin.end()
    const probed = JSON.parse((await new Response(healthProbe.stdout).text()).trim() || '{}') as { slowest_ms?: number }
    const alive = child.proc.exitCode === null && child.proc.signalCode === null
    if (alive) peakRss = Math.max(peakRss, statusKiB(child.pid, 'VmHWM') / 1024)

    const other: Record<string, number> = {}
    for (const result of results)
      if (result.code !== 250)
        other[`${result.code} ${result.text}`] = (other[`${result.code} ${result.text}`] ?? 0) + 1
    let listed = 0
    // The last spool files are deleted just after their replies.
    for (let waited = 0; alive && waited < 5000 && readdirSync(spoolDir).length > 0; waited += 50) await Bun.sleep(50)
    if (alive) {
      let cursor: string | null = null
      do {
        const page = (await (
          await fetch(
            `${base}/v1/inboxes/${inbox.id}/messages?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
            { headers },
          )
        ).json()) as {
          data: unknown[]
          next_cursor: string | null
        }
        listed += page.data.length
        cursor = page.next_cursor
      } while (cursor)
    }
    const stored = results.filter((r) => r.code === 250).length
    return {
      senders,
      message_mib: +(body.length / MiB).toFixed(2),
      cgroup: `v${cgroup.version}`,
      stored_replies: stored,
      other_replies: other,
      messages_listed: listed,
      refused_for_memory: results.filter((r) => /insufficient|memory/i.test(r.text)).length,
      seconds: +seconds.toFixed(1),
      goodput_mib_s: +((stored * body.length) / MiB / seconds).toFixed(1),
      server_cpu_s_per_mib: stored > 0 ? +(cpuSeconds / ((stored * body.length) / MiB)).toFixed(4) : 0,
      main_thread_cpu_s_per_mib: stored > 0 ? +(mainCpuSeconds / ((stored * body.length) / MiB)).toFixed(4) : 0,
      load_average_1m: +readFileSync('/proc/loadavg', 'utf8').split(' ')[0]!,
      peak_rss_mib: +peakRss.toFixed(1),
      peak_rss_anon_mib: +peakParts.anon.toFixed(1),
      peak_rss_file_mib: +peakParts.file.toFixed(1),
      peak_at_s: +peakAt.seconds.toFixed(1),
      peak_spooled_mib: Math.round(peakAt.spooledMiB),
      cgroup_peak_mib: cgroup.peakBytes() === null ? null : +(cgroup.peakBytes()! / MiB).toFixed(0),
      oom_kills: cgroup.oomKills(),
      small_message_ms: Math.round(smallResult.ms),
      small_message_code: smallResult.code,
      slowest_health_ms: probed.slowest_ms ?? -1,
      slowest_health_in_load_generator_ms: Math.round(slowestHealth),
      spool_files_after: alive ? readdirSync(spoolDir).length : -1,
      server_alive: alive,
    }
  } finally {
    healthProbe?.kill()
    await child.stop()
    rmSync(dir, { recursive: true, force: true })
  }
}

/** The disk's own sequential write speed where the flood's database goes: 256 MiB written and synced. */
export function diskWriteMiBs(): number {
  const dir = mkdtempSync(join(tmpdir(), 'pigeonhole-disk-'))
  try {
    const run = Bun.spawnSync({
      cmd: ['dd', 'if=/dev/zero', `of=${join(dir, 'probe')}`, 'bs=1M', 'count=256', 'conv=fdatasync'],
      stderr: 'pipe',
    })
    const seconds = Number(/, ([0-9.]+) s,/.exec(run.stderr.toString())?.[1])
    return +(256 / seconds).toFixed(0)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
