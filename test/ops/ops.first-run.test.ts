/**
 * What a person sees on first run: the start-up summary in plain words, one line naming
 * the variable when a port is taken, and a CLI that says which database it opened and
 * never creates a second one by accident.
 */
import { afterAll, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { unusedPort } from '../support/ports.ts'

const ROOT = join(import.meta.dir, '..', '..')
const dir = mkdtempSync(join(tmpdir(), 'pigeonhole-first-run-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

function run(cmd: string[], env: Record<string, string>, cwd = ROOT) {
  return Bun.spawn(cmd, {
    cwd,
    env: { ...process.env, LOG_LEVEL: 'info', HOST: '127.0.0.1', ...env },
    stdout: 'pipe',
    stderr: 'pipe',
  })
}
const finished = async (child: ReturnType<typeof run>) => {
  const [stdout, stderr, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ])
  return { stdout, stderr, code }
}

async function occupiedPort(): Promise<{ port: number; server: Server }> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { port: (server.address() as { port: number }).port, server }
}

test('start-up prints where the API, docs and SMTP are and the next step, beside the JSON log lines', async () => {
  const child = run(['bun', 'src/index.ts'], { PORT: '0', SMTP_PORT: '0', DATABASE_PATH: join(dir, 'banner.db') })
  let stderr = ''
  const reader = child.stderr.getReader()
  while (!stderr.includes('Stop with Ctrl+C')) {
    const { value, done } = await reader.read()
    if (done) throw new Error(`exited early: ${stderr}`)
    stderr += new TextDecoder().decode(value)
  }
  child.kill('SIGTERM')
  const [stdout] = await Promise.all([new Response(child.stdout).text(), child.exited])
  expect(stderr).toMatch(/API +http:\/\/localhost:\d+/)
  expect(stderr).toMatch(/API docs +http:\/\/localhost:\d+\/openapi/)
  expect(stderr).toMatch(/SMTP +port \d+ on 127\.0\.0\.1; inbox addresses end in @pigeonhole\.test/)
  expect(stderr).toContain(`Database   ${join(dir, 'banner.db')}`)
  expect(stderr).toContain('bun src/cli.ts orgs create my-team --local')
  const events = stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line).event)
  expect(events).toEqual(expect.arrayContaining(['http_listening', 'smtp_listening']))
}, 20_000)

test('it starts from any folder: the console pages compile without the project tsconfig', async () => {
  const child = run(
    ['bun', join(ROOT, 'src', 'index.ts')],
    { PORT: '0', SMTP_PORT: '0', DATABASE_PATH: join(dir, 'elsewhere.db') },
    dir,
  )
  let stderr = ''
  const reader = child.stderr.getReader()
  while (!stderr.includes('Stop with Ctrl+C')) {
    const { value, done } = await reader.read()
    if (done) throw new Error(`exited early: ${stderr}`)
    stderr += new TextDecoder().decode(value)
  }
  try {
    const api = /API +(http:\/\/localhost:\d+)/.exec(stderr)![1]!
    const page = await fetch(`${api}/console/sign-in`)
    expect(page.status).toBe(200)
    expect(await page.text()).toContain('<form')
  } finally {
    child.kill('SIGTERM')
    await child.exited
  }
}, 20_000)

test('every .tsx file under src/ names its JSX runtime, so no tsconfig is needed to run it', async () => {
  const files = await Array.fromAsync(new Bun.Glob('src/**/*.tsx').scan({ cwd: ROOT }))
  expect(files.length).toBeGreaterThan(10)
  const missing = []
  for (const file of files)
    if (!(await Bun.file(join(ROOT, file)).text()).startsWith('/** @jsxImportSource preact */\n')) missing.push(file)
  expect(missing).toEqual([])
})

for (const variable of ['PORT', 'SMTP_PORT'] as const) {
  test(`a busy ${variable} on a fresh data folder is one line naming it, nothing before it and nothing created`, async () => {
    const busy = await occupiedPort()
    const dataFolder = join(dir, `fresh-${variable}`, 'data')
    try {
      const other = variable === 'PORT' ? 'SMTP_PORT' : 'PORT'
      const result = await finished(
        run(['bun', 'src/index.ts'], {
          [variable]: String(busy.port),
          [other]: '0',
          DATABASE_PATH: join(dataFolder, 'pigeonhole.db'),
        }),
      )
      expect(result.code).not.toBe(0)
      expect(result.stderr.trim()).toBe(
        `Port ${busy.port} is already in use: stop the other process or choose a free port with ${variable}=<port>.`,
      )
      // No log line (TLS created, stopping, stopped) before it, and no certificate, database or lock left behind.
      expect(result.stdout).toBe('')
      expect(existsSync(dataFolder)).toBe(false)
    } finally {
      busy.server.close()
    }
  }, 20_000)
}

test('a second start in the same folder, on the same ports, names the server already running there', async () => {
  const ports = { PORT: String(unusedPort()), SMTP_PORT: String(unusedPort()) }
  const env = { ...ports, DATABASE_PATH: join(dir, 'twice', 'pigeonhole.db') }
  const first = run(['bun', 'src/index.ts'], env)
  try {
    const reader = first.stdout.getReader()
    let out = ''
    while (!out.includes('"smtp_listening"')) {
      const { value, done } = await reader.read()
      if (done) throw new Error(`exited early: ${out}`)
      out += new TextDecoder().decode(value)
    }
    reader.releaseLock()
    const second = await finished(run(['bun', 'src/index.ts'], env))
    expect(second.code).not.toBe(0)
    expect(second.stdout).toBe('')
    expect(second.stderr.trim()).toBe(
      `Another Pigeonhole server (process ${first.pid}, HTTP port ${ports.PORT}, SMTP port ${ports.SMTP_PORT}) is using ${env.DATABASE_PATH}: stop it first, or give this one another DATABASE_PATH.`,
    )
  } finally {
    first.kill('SIGTERM')
    await first.exited
  }
}, 30_000) // two server processes start here, slowly when both cores are busy

test('the CLI refuses to create a database unless asked, naming the path and the way out', async () => {
  const elsewhere = mkdtempSync(join(dir, 'elsewhere-'))
  const refused = await finished(
    run(['bun', join(ROOT, 'src', 'cli.ts'), 'orgs', 'list'], { DATABASE_PATH: './data/pigeonhole.db' }, elsewhere),
  )
  expect(refused.code).not.toBe(0)
  expect(refused.stderr).toContain(`No database at ${join(elsewhere, 'data', 'pigeonhole.db')}.`)
  expect(refused.stderr).toContain('DATABASE_PATH')
  expect(refused.stderr).toContain('--create')
  expect(existsSync(join(elsewhere, 'data'))).toBe(false)

  const created = await finished(
    run(
      ['bun', join(ROOT, 'src', 'cli.ts'), 'orgs', 'create', 'fresh', '--create'],
      { DATABASE_PATH: './data/pigeonhole.db' },
      elsewhere,
    ),
  )
  expect(created.code).toBe(0)
  expect(created.stdout.trim().split('\n').at(-1)).toMatch(/^org_[0-9a-f]{32}$/)
  expect(created.stderr).toContain(`database: ${join(elsewhere, 'data', 'pigeonhole.db')}`)

  const listed = await finished(
    run(['bun', join(ROOT, 'src', 'cli.ts'), 'orgs', 'list'], { DATABASE_PATH: './data/pigeonhole.db' }, elsewhere),
  )
  expect(listed.code).toBe(0)
  expect(listed.stdout).toContain('fresh')
  expect(listed.stderr).toContain(`database: ${join(elsewhere, 'data', 'pigeonhole.db')}`)
}, 20_000)
