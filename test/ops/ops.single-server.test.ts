/**
 * One server per SQLite file: a second server on the same file refuses to start with one
 * line naming the running one (process id, ports), in this process and from another; the
 * admin CLI keeps working beside the running server; the lock dies with its process, so a
 * server killed with SIGKILL leaves nothing that blocks the next start.
 */
import { afterAll, expect, test } from 'bun:test'
import { existsSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { startApp } from '../../src/app.ts'
import { loadConfig } from '../../src/config.ts'
import { createLogger } from '../../src/log.ts'
import { DatabaseInUseError, lockServerDatabase } from '../../src/storage/server-lock.ts'
import { startTestServer } from '../support/harness.ts'
import { scratchDir } from '../support/scratch.ts'

const ROOT = join(import.meta.dir, '..', '..')
const dir = scratchDir('pigeonhole-single-server-')
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const configFor = (databasePath: string) =>
  loadConfig({
    PORT: '0',
    SMTP_PORT: '0',
    HOST: '127.0.0.1',
    DATABASE_PATH: databasePath,
    RECEIVING_DOMAIN: 'inbox.test',
  })

test('a second server in the same process is refused, naming the first; the CLI works beside it', async () => {
  const first = await startTestServer()
  try {
    const second = startApp({ config: configFor(first.databasePath), logger: createLogger('silent') })
    const error = await second.then(
      () => null,
      (reason: unknown) => reason,
    )
    expect(error).toBeInstanceOf(DatabaseInUseError)
    expect((error as Error).message).toBe(
      `Another Pigeonhole server (process ${process.pid}, HTTP port ${first.app.httpPort}, SMTP port ${first.app.smtpPort}) is using ${first.databasePath}: stop it first, or give this one another DATABASE_PATH.`,
    )
    // The first server is untouched and the CLI still writes to the file it holds.
    expect((await first.get('/health')).status).toBe(200)
    const cli = Bun.spawn(['bun', 'src/cli.ts', 'orgs', 'create', 'beside-the-server'], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_PATH: first.databasePath },
      stdout: 'pipe',
      stderr: 'pipe',
    })
    const [out, code] = await Promise.all([new Response(cli.stdout).text(), cli.exited])
    expect(code).toBe(0)
    const orgId = out.trim().split('\n').at(-1)!
    expect(first.app.storage!.sqlite.query('SELECT name FROM organizations WHERE id = ?').get(orgId)).toEqual({
      name: 'beside-the-server',
    })
  } finally {
    await first.stop()
  }
  // A graceful stop takes the holder's note away with the lock.
  expect(existsSync(`${first.databasePath}.server-lock.json`)).toBe(false)
})

function serve(databasePath: string) {
  return Bun.spawn(['bun', 'src/index.ts'], {
    cwd: ROOT,
    env: {
      ...process.env,
      PORT: '0',
      SMTP_PORT: '0',
      HOST: '127.0.0.1',
      DATABASE_PATH: databasePath,
      LOG_LEVEL: 'info',
    },
    stdout: 'pipe',
    stderr: 'pipe',
  })
}

/** Reads the child's JSON log lines until both listeners are up; returns their ports. */
async function listening(child: ReturnType<typeof serve>): Promise<{ http: number; smtp: number }> {
  const reader = child.stdout.getReader()
  let out = ''
  while (!out.includes('"smtp_listening"')) {
    const { value, done } = await reader.read()
    if (done) throw new Error(`exited early: ${out}`)
    out += new TextDecoder().decode(value)
  }
  reader.releaseLock()
  const port = (event: string) =>
    JSON.parse(out.split('\n').find((line) => line.includes(`"${event}"`))!).port as number
  return { http: port('http_listening'), smtp: port('smtp_listening') }
}

test('a second server that reaches the same file through a symbolic link is refused too', async () => {
  const first = await startTestServer()
  try {
    const link = join(dir, 'linked.db')
    symlinkSync(first.databasePath, link)
    const error = await startApp({ config: configFor(link), logger: createLogger('silent') }).then(
      async (second) => {
        await second.stop()
        return null
      },
      (reason: unknown) => reason,
    )
    expect(error).toBeInstanceOf(DatabaseInUseError)
    expect((error as Error).message).toContain(
      `HTTP port ${first.app.httpPort}, SMTP port ${first.app.smtpPort}) is using ${link}:`,
    )
    expect(dirname(first.databasePath)).not.toBe(dir) // the link really is another path to the file
  } finally {
    await first.stop()
  }
})

test('from another process: one line naming the running server and a non-zero exit; after SIGKILL the next start succeeds', async () => {
  const databasePath = join(dir, 'shared.db')
  const running = serve(databasePath)
  const ports = await listening(running)

  const refused = serve(databasePath)
  const [stderr, code] = await Promise.all([new Response(refused.stderr).text(), refused.exited])
  expect(code).toBe(1)
  expect(stderr.trim().split('\n')).toEqual([
    `Another Pigeonhole server (process ${running.pid}, HTTP port ${ports.http}, SMTP port ${ports.smtp}) is using ${databasePath}: stop it first, or give this one another DATABASE_PATH.`,
  ])

  // No graceful stop: the OS drops the lock with the process; the holder's note is left stale.
  running.kill('SIGKILL')
  await running.exited
  expect(existsSync(`${databasePath}.server-lock.json`)).toBe(true)
  const next = serve(databasePath)
  const nextPorts = await listening(next)
  expect((await fetch(`http://127.0.0.1:${nextPorts.http}/health`)).status).toBe(200)
  next.kill('SIGTERM')
  expect(await next.exited).toBe(0)
}, 30_000) // three server processes start here, slowly when both cores are busy

test('a note left by a process that is gone is not named (the holder could not rewrite it, e.g. on a read-only volume)', () => {
  const databasePath = join(dir, 'stale-note.db')
  const held = lockServerDatabase(databasePath)
  try {
    writeFileSync(
      `${databasePath}.server-lock.json`,
      JSON.stringify({ pid: 2 ** 30, http_port: 1, smtp_port: 2, started_at: '2026-01-01T00:00:00.000Z' }),
    )
    expect(() => lockServerDatabase(databasePath)).toThrow(
      `Another Pigeonhole server (process unknown) is using ${databasePath}`,
    )
    // A refused attempt closes its own handle on the lock file; the holder's lock survives that.
    expect(() => lockServerDatabase(databasePath)).toThrow(DatabaseInUseError)
  } finally {
    held.release()
  }
  // Released: the file can be locked again.
  lockServerDatabase(databasePath).release()
})

test('a first start in a folder that does not exist yet takes the lock (and makes the folder)', () => {
  const databasePath = join(dir, 'not', 'yet', 'pigeonhole.db')
  const lock = lockServerDatabase(databasePath)
  expect(existsSync(`${databasePath}.server-lock`)).toBe(true)
  lock.release()
})
