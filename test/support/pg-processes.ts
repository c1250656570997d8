/**
 * PostgreSQL-mode machines as child processes (test/support/pg-machine.ts, run from the run's
 * bundle of it: machine-bundle.ts), so that a test's kill -9 and SIGTERM are real signals to a
 * real process. Each machine keeps its own folder
 * (DATABASE_PATH: its spool and its STARTTLS certificate) across restarts, as a Fly machine
 * keeps its volume, and listens on ports the OS picks anew at every start.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { type ApiResponse, readApiResponse } from './api-response.ts'
import { ROOT } from './entry-process.ts'
import { machineScript } from './machine-bundle.ts'
import { scratchDir } from './scratch.ts'
import { layDownSelfSigned, SEED_DOMAIN } from './tls-seed.ts'

export interface MachineTenant {
  organizationId: string
  keys: string[]
}

export interface MachineProcess {
  readonly name: string
  /** This start's ports; 0 while stopped. */
  http: number
  smtp: number
  readonly httpUrl: string
  readonly running: boolean
  /** The running process's id (to pause it with SIGSTOP, for instance); null while stopped. */
  readonly pid: number | null
  /** Tenants made by the first start (PG_MACHINE_TENANTS). */
  tenants: MachineTenant[]
  /** The console's first-run setup link this start printed; null once a console user exists. */
  setupUrl: string | null
  /** Everything the process wrote so far (all starts), for failure messages. */
  output(): string
  /** Starts the process (again) and waits for its listeners. */
  start(extraEnv?: Record<string, string>): Promise<void>
  /** SIGTERM (PostgreSQL mode's patient drain); resolves with the exit code. */
  stop(): Promise<number | null>
  /** SIGKILL, as a crash; resolves once the process is gone. */
  kill(): Promise<void>
  /** Kills the process if it runs and removes its folder. */
  remove(): Promise<void>
  /** Sets the machine's clock (started with PG_MACHINE_CLOCK) to `at`; resolves once it is set. */
  setClock(at: string | number): Promise<void>
  /** One retention turn on this machine, as its sweeper takes it (runOnce across machines). */
  sweep(): Promise<SweepTurn>
}

export interface SweepTurn {
  turn: { ran: false } | { ran: true; result: { messages: number; idempotencyRecords: number } }
  /**
   * Wall-clock milliseconds (fractional) when a turn that ran began and ended inside the lock,
   * comparable across processes.
   */
  began: number
  ended: number
}

const exited = (child: ChildProcess) =>
  new Promise<number | null>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve(child.exitCode)
    else child.once('exit', (code) => resolve(code))
  })

export function pgMachine(name: string, databaseUrl: string, env: Record<string, string> = {}): MachineProcess {
  const dir = scratchDir(`pigeonhole-machine-${name}-`)
  const databasePath = join(dir, 'pigeonhole.db')
  let child: ChildProcess | null = null
  let log = ''
  // Commands over stdin, answered by `{"reply":<id>,...}` lines on stdout (pg-machine.ts).
  let commands = 0
  const awaiting = new Map<number, (reply: Record<string, any>) => void>()
  const command = (fields: Record<string, unknown>): Promise<Record<string, any>> => {
    if (!child || !machine.running) return Promise.reject(new Error(`machine ${name} is not running`))
    const id = ++commands
    const answered = new Promise<Record<string, any>>((resolve, reject) => {
      awaiting.set(id, (reply) => (reply.error ? reject(new Error(`machine ${name}: ${reply.error}`)) : resolve(reply)))
    })
    child.stdin!.write(`${JSON.stringify({ id, ...fields })}\n`)
    return answered
  }
  const machine: MachineProcess = {
    name,
    http: 0,
    smtp: 0,
    get httpUrl() {
      return `http://127.0.0.1:${machine.http}`
    },
    get running() {
      return child !== null && child.exitCode === null && child.signalCode === null
    },
    get pid() {
      return machine.running ? (child?.pid ?? null) : null
    },
    tenants: [],
    setupUrl: null,
    output: () => log,
    async start(extraEnv = {}) {
      if (machine.running) throw new Error(`machine ${name} is already running`)
      await layDownSelfSigned(databasePath, SEED_DOMAIN)
      const spawned = spawn(process.execPath, [await machineScript()], {
        cwd: ROOT,
        env: {
          PATH: process.env.PATH ?? '',
          HOME: process.env.HOME ?? dir,
          HOST: '127.0.0.1',
          PORT: '0',
          SMTP_PORT: '0',
          DATABASE_PATH: databasePath,
          DATABASE_URL: databaseUrl,
          DATABASE_POOL_SIZE: '4',
          RECEIVING_DOMAIN: SEED_DOMAIN,
          // PG_MACHINE_LOG_LEVEL=debug shows a failing test what each machine did (output() in its message).
          LOG_LEVEL: process.env.PG_MACHINE_LOG_LEVEL ?? 'warn',
          ...env,
          ...extraEnv,
        },
        stdio: ['pipe', 'pipe', 'pipe'],
      })
      child = spawned
      spawned.stdin!.on('error', () => {}) // a killed machine's stdin: nothing waits on it any more
      spawned.once('exit', (code, signal) => {
        for (const answer of awaiting.values()) answer({ error: `exited (${code ?? signal}) before answering` })
        awaiting.clear()
      })
      spawned.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
        log += chunk
      })
      const started = await new Promise<{
        http: number
        smtp: number
        tenants: MachineTenant[]
        setupUrl: string | null
      }>((resolve, reject) => {
        let stdout = ''
        spawned.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
          log += chunk
          stdout += chunk
          const lines = stdout.split('\n')
          stdout = lines.pop()!
          for (const line of lines) {
            if (line.startsWith('{"http"')) resolve(JSON.parse(line))
            if (!line.startsWith('{"reply"')) continue
            const reply = JSON.parse(line)
            awaiting.get(reply.reply)?.(reply)
            awaiting.delete(reply.reply)
          }
        })
        spawned.once('exit', (code, signal) =>
          reject(new Error(`machine ${name} exited (${code ?? signal}) before listening:\n${log}`)),
        )
      })
      machine.http = started.http
      machine.smtp = started.smtp
      machine.setupUrl = started.setupUrl
      if (started.tenants.length > 0) machine.tenants = started.tenants
    },
    async stop() {
      if (!child || !machine.running) return child?.exitCode ?? null
      const running = child
      running.kill('SIGTERM')
      const code = await exited(running)
      machine.http = machine.smtp = 0
      return code
    },
    async kill() {
      if (!child || !machine.running) return
      const running = child
      running.kill('SIGKILL')
      await exited(running)
      machine.http = machine.smtp = 0
    },
    async remove() {
      await machine.kill()
      rmSync(dir, { recursive: true, force: true })
    },
    async setClock(at) {
      await command({ clock: typeof at === 'number' ? at : Date.parse(at) })
    },
    async sweep() {
      return (await command({ sweep: true })) as unknown as SweepTurn
    },
  }
  return machine
}

export type MachineAnswer = ApiResponse

/**
 * One API request to a machine over real HTTP; the body parsed when there is one. A request
 * with no whole answer within `timeoutMs` (longer than any wait a test asks for) fails, naming
 * itself, rather than hanging until the runner's timeout.
 */
export async function machineApi(
  machine: Pick<MachineProcess, 'httpUrl'>,
  method: string,
  path: string,
  key?: string,
  body?: unknown,
  timeoutMs = 45_000,
): Promise<MachineAnswer> {
  try {
    const response = await fetch(`${machine.httpUrl}${path}`, {
      method,
      signal: AbortSignal.timeout(timeoutMs),
      headers: {
        ...(key ? { authorization: `Bearer ${key}` } : {}),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    return await readApiResponse(response)
  } catch (error) {
    if ((error as Error)?.name !== 'TimeoutError') throw error
    throw new Error(`${method} ${path} got no whole answer within ${timeoutMs} ms`)
  }
}

/** How many long polls `machine` holds now, from its /metrics (`metricsToken` is its METRICS_TOKEN). */
export async function longPollsWaiting(
  machine: Pick<MachineProcess, 'httpUrl'>,
  metricsToken: string,
): Promise<number> {
  const response = await fetch(`${machine.httpUrl}/metrics`, { headers: { authorization: `Bearer ${metricsToken}` } })
  const line = (await response.text()).split('\n').find((l) => l.startsWith('pigeonhole_long_polls_waiting '))
  return Number(line?.split(' ')[1] ?? Number.NaN)
}
