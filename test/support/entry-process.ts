/**
 * Runs the real start-up entry (`bun src/entry.ts`) as a child process, the way the
 * Docker image does, with the bundled litestream binary and a `file` replica in a temp
 * folder. The child leads its own process group so a test can SIGKILL entry, litestream
 * and server at once, as a crash of the machine's processes would.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { unusedPort } from './ports.ts'
import { scratchDir } from './scratch.ts'
import { layDownSelfSigned } from './tls-seed.ts'
import { until } from './wait.ts'

export const ROOT = join(import.meta.dir, '..', '..')

/** A port the OS considers free right now (the entry's server must bind a known port). */
/** A port for a child to listen on (support/ports.ts says why not the kernel's port 0). */
export async function freePort(): Promise<number> {
  return unusedPort()
}

export interface Deployment {
  dir: string
  databasePath: string
  replicaPath: string
  /** Environment shared by the entry and the admin CLI. */
  env: Record<string, string>
  cleanup(): void
}

export function makeDeployment(extraEnv: Record<string, string> = {}): Deployment {
  const dir = scratchDir('pigeonhole-deploy-')
  const databasePath = join(dir, 'data', 'pigeonhole.db')
  const replicaPath = join(dir, 'replica')
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? dir,
    HOST: '127.0.0.1',
    DATABASE_PATH: databasePath,
    LITESTREAM_REPLICA: 'file',
    LITESTREAM_REPLICA_PATH: replicaPath,
    RECEIVING_DOMAIN: 'inbox.test',
    // Fixed, so download_url is the same before and after a restart on other ports.
    BASE_URL: 'http://pigeonhole.test',
    LOG_LEVEL: 'warn',
    // These tests are about durability, not quotas.
    LIMIT_MONTHLY_EMAILS: '100000',
    LIMIT_INBOX_BURST: '100000',
    LIMIT_ORG_BURST: '100000',
    LIMIT_REQUESTS_PER_KEY: '100000',
    LIMIT_REQUESTS_PER_ORG: '100000',
    ...extraEnv,
  }
  return { dir, databasePath, replicaPath, env, cleanup: () => rmSync(dir, { recursive: true, force: true }) }
}

export interface RunningEntry {
  httpUrl: string
  smtpPort: number
  /** stdout and stderr so far, for failure messages. */
  output(): string
  /** SIGTERM, then the exit code. */
  stop(): Promise<number | null>
  /** SIGKILL to the whole process group (entry, litestream, server). */
  kill(): Promise<void>
}

const exited = (child: ChildProcess) =>
  new Promise<number | null>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve(child.exitCode)
    else child.once('exit', (code) => resolve(code))
  })

export async function startEntry(deployment: Deployment): Promise<RunningEntry> {
  // The first start finds the process's certificate, as a test server does (tls-seed.ts).
  const domain = deployment.env.RECEIVING_DOMAIN
  if (domain) await layDownSelfSigned(deployment.databasePath, domain, { keep: true })
  const [port, smtpPort] = [await freePort(), await freePort()]
  const child = spawn(process.execPath, ['src/entry.ts'], {
    cwd: ROOT,
    env: { ...deployment.env, PORT: String(port), SMTP_PORT: String(smtpPort) },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  })
  let output = ''
  child.stdout!.on('data', (chunk) => (output += chunk))
  child.stderr!.on('data', (chunk) => (output += chunk))
  const done = exited(child)
  const httpUrl = `http://127.0.0.1:${port}`

  // Ready when /health answers; a restore runs before the server starts listening.
  const answers = async () => {
    if (child.exitCode !== null) throw new Error(`entry exited with ${child.exitCode} before it was ready:\n${output}`)
    return await fetch(`${httpUrl}/health`).then(
      (r) => r.ok,
      () => false,
    )
  }
  try {
    await until(answers, 'the entry to answer /health', { timeoutMs: 30_000, intervalMs: 20 })
  } catch (error) {
    if (child.exitCode !== null) throw error
    process.kill(-child.pid!, 'SIGKILL')
    throw new Error(`${(error as Error).message}:\n${output}`)
  }

  return {
    httpUrl,
    smtpPort,
    output: () => output,
    async stop() {
      child.kill('SIGTERM')
      return done
    },
    async kill() {
      process.kill(-child.pid!, 'SIGKILL')
      await done
    },
  }
}

/** The admin CLI against the deployment's database; returns the last line (the value). */
export function cli(deployment: Deployment, ...args: string[]): string {
  const run = Bun.spawnSync([process.execPath, 'src/cli.ts', ...args], { cwd: ROOT, env: deployment.env })
  const out = run.stdout.toString().trim()
  if (run.exitCode !== 0) throw new Error(`cli ${args.join(' ')} failed: ${run.stderr.toString()}`)
  return out.split('\n').at(-1)!
}

/** A tenant made the way an operator does it: CLI on the machine. */
export function createTenant(deployment: Deployment): string {
  const organizationId = cli(deployment, 'orgs', 'create', 'acme')
  return cli(deployment, 'keys', 'create', organizationId)
}

export async function api(
  baseUrl: string,
  key: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<Response> {
  const headers: Record<string, string> = { authorization: `Bearer ${key}` }
  if (body !== undefined) headers['content-type'] = 'application/json'
  return fetch(`${baseUrl}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
}

export async function getJson(baseUrl: string, key: string, path: string): Promise<any> {
  const response = await api(baseUrl, key, 'GET', path)
  if (response.status !== 200) throw new Error(`GET ${path}: ${response.status} ${await response.text()}`)
  return response.json()
}

/** Every message of an inbox, following next_cursor. */
export async function allMessages(baseUrl: string, key: string, inboxId: string): Promise<any[]> {
  const items: any[] = []
  let cursor: string | null = null
  do {
    const page: any = await getJson(
      baseUrl,
      key,
      `/v1/inboxes/${inboxId}/messages?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    )
    items.push(...page.data)
    cursor = page.next_cursor
  } while (cursor)
  return items
}

/** SIGTERM, then the exit code; a code other than 0 also prints what the entry wrote, to say why. */
export async function stopped(entry: RunningEntry): Promise<number | null> {
  const code = await entry.stop()
  if (code !== 0) console.error(`the entry exited with ${code} on SIGTERM; it wrote:\n${entry.output()}`)
  return code
}
