/**
 * The processes the bench talks to: Pigeonhole (the production bundle, limits raised through
 * LIMIT_*, fresh temp database), maildev (its own CLI under node), the bare SMTP sink and
 * the bare Bun.serve ceiling. Each is a real child process on free loopback ports.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort, spawnChild, waitHttp, waitTcp, type Child } from './proc.ts'

export const ROOT = join(import.meta.dir, '..', '..')
const BIG = '1000000000'
/**
 * What production runs: the bundle `bun run build` writes (the Docker image runs the same;
 * `bun run bench` builds it first). BENCH_SERVER_ENTRY=src/index.ts measures the source as
 * `bun run start` runs it.
 */
export const SERVER_ENTRY = process.env.BENCH_SERVER_ENTRY ?? 'dist/server.js'

/** Limits raised so the bench measures speed, not the free plan; long-poll limits stay as shipped. */
export const BENCH_LIMITS: Record<string, string> = {
  LIMIT_ACTIVE_INBOXES: '100000',
  LIMIT_MONTHLY_EMAILS: BIG,
  LIMIT_REQUESTS_PER_KEY: BIG,
  LIMIT_REQUESTS_PER_ORG: BIG,
  LIMIT_INBOX_BURST: BIG,
  LIMIT_ORG_BURST: BIG,
  // Every bench connection comes from 127.0.0.1; the capacity phase opens up to 190 at once.
  SMTP_MAX_CLIENTS_PER_ADDRESS: '200',
}

export const tempDir = (label: string) => mkdtempSync(join(tmpdir(), `pigeonhole-bench-${label}-`))

export interface PigeonholeProcess {
  child: Child
  base: string
  smtpPort: number
  databasePath: string
  env: Record<string, string>
  key: string
  stop(): Promise<void>
}

export function pigeonholeEnv(databasePath: string, port: number, smtpPort: number): Record<string, string> {
  return {
    PORT: String(port),
    SMTP_PORT: String(smtpPort),
    HOST: '127.0.0.1',
    DATABASE_PATH: databasePath,
    RECEIVING_DOMAIN: 'bench.test',
    ...BENCH_LIMITS,
  }
}

/** BENCH_CPU_PROF_DIR=<dir> runs the server under Bun's CPU profiler (written as Markdown on exit). */
export function profileFlags(): string[] {
  const dir = process.env.BENCH_CPU_PROF_DIR
  return dir ? ['--cpu-prof', '--cpu-prof-md', `--cpu-prof-dir=${dir}`] : []
}

/** The admin CLI, exactly as an operator runs it; returns its last output line. */
export function runCli(env: Record<string, string>, ...args: string[]): string {
  return runCliIn(ROOT, env, ...args)
}

/** The admin CLI of the checkout at `root` (the comparison's baseline runs its own). */
export function runCliIn(root: string, env: Record<string, string>, ...args: string[]): string {
  const result = Bun.spawnSync({
    cmd: [process.execPath, 'src/cli.ts', ...args],
    cwd: root,
    env: { ...process.env, ...env },
  })
  const lines = result.stdout.toString().trim().split('\n')
  if (result.exitCode !== 0) throw new Error(`cli ${args.join(' ')} failed: ${result.stderr.toString()}`)
  return lines[lines.length - 1]!
}

/**
 * Starts Pigeonhole on a fresh (or the given) database and makes one organisation and key with
 * the CLI. `root` is the checkout whose bundle runs (another one for the comparison's baseline).
 */
/** Servers started by this process: each names its organisation after its turn. */
let starts = 0

export async function startPigeonhole(databasePath?: string, root = ROOT): Promise<PigeonholeProcess> {
  const dir = databasePath ? null : tempDir('db')
  const path = databasePath ?? join(dir!, 'pigeonhole.db')
  const [port, smtpPort] = [await freePort(), await freePort()]
  const env = pigeonholeEnv(path, port, smtpPort)
  const child = spawnChild('pigeonhole', [process.execPath, ...profileFlags(), SERVER_ENTRY], env, root)
  const base = `http://127.0.0.1:${port}`
  await waitHttp(child, `${base}/health`)
  await waitTcp(child, smtpPort)
  // A name of its own each start: a phase restarts the server on the same database, and the
  // CLI refuses a second organisation of a name already in use.
  const org = runCliIn(root, env, 'orgs', 'create', `bench-${++starts}`)
  const key = runCliIn(root, env, 'keys', 'create', org)
  return {
    child,
    base,
    smtpPort,
    databasePath: path,
    env,
    key,
    async stop() {
      await child.stop()
      if (dir) rmSync(dir, { recursive: true, force: true })
    },
  }
}

export interface MaildevProcess {
  child: Child
  base: string
  smtpPort: number
  clear(): Promise<void>
  count(): Promise<number>
  stop(): Promise<void>
}

export async function startMaildev(): Promise<MaildevProcess> {
  const dir = tempDir('maildev')
  const [webPort, smtpPort] = [await freePort(), await freePort()]
  const bin = join(ROOT, 'bench', 'node_modules', 'maildev', 'bin', 'maildev')
  // Under node, the runtime maildev is published for; --silent keeps per-mail logs off.
  const args = [
    bin,
    '--smtp',
    String(smtpPort),
    '--web',
    String(webPort),
    '--ip',
    '127.0.0.1',
    '--mail-directory',
    dir,
    '--silent',
  ]
  const child = spawnChild('maildev', ['node', ...args], {})
  const base = `http://127.0.0.1:${webPort}`
  await waitHttp(child, `${base}/healthz`)
  await waitTcp(child, smtpPort)
  return {
    child,
    base,
    smtpPort,
    async clear() {
      const response = await fetch(`${base}/email/all`, { method: 'DELETE' })
      await response.arrayBuffer()
    },
    async count() {
      const response = await fetch(`${base}/email`, { headers: { 'accept-encoding': 'identity' } })
      return ((await response.json()) as unknown[]).length
    },
    async stop() {
      await child.stop()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

export interface SinkProcess {
  child: Child
  smtpPort: number
  count(): Promise<number>
  stop(): Promise<void>
}

export async function startSink(): Promise<SinkProcess> {
  const [smtpPort, countPort] = [await freePort(), await freePort()]
  const child = spawnChild('smtp-sink', [process.execPath, join(import.meta.dir, '..', 'servers', 'smtp-sink.ts')], {
    SMTP_PORT: String(smtpPort),
    COUNT_PORT: String(countPort),
  })
  const countUrl = `http://127.0.0.1:${countPort}/count`
  await waitHttp(child, countUrl)
  await waitTcp(child, smtpPort)
  return {
    child,
    smtpPort,
    async count() {
      const response = await fetch(countUrl)
      return ((await response.json()) as { accepted: number }).accepted
    },
    stop: () => child.stop(),
  }
}

/** Bare Bun.serve answering `/<i>` with the bytes of the i-th file. */
export async function startBareHttp(
  bodyFiles: string[],
): Promise<{ child: Child; base: string; stop(): Promise<void> }> {
  const port = await freePort()
  const child = spawnChild(
    'bare-bun-serve',
    [process.execPath, join(import.meta.dir, '..', 'servers', 'bare-http.ts')],
    { PORT: String(port), BODY_FILES: bodyFiles.join(',') },
  )
  const base = `http://127.0.0.1:${port}`
  await waitHttp(child, `${base}/0`)
  return { child, base, stop: () => child.stop() }
}
