/**
 * Settings that are wrong in ways the value pattern cannot see still stop `bun src/index.ts`
 * with one line naming the variable and exit code 78 (EX_CONFIG), before anything listens:
 * a METRICS_PORT past 65535 or held by another process, a METRICS_HOST that cannot be bound, and TLS files that cannot be
 * read or do not belong together; DATABASE_URL in a build whose PostgreSQL mode is not complete.
 */
import { afterAll, expect, setDefaultTimeout, test } from 'bun:test'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { createServer } from 'node:net'
import { join } from 'node:path'

setDefaultTimeout(30_000)

const ROOT = join(import.meta.dir, '..', '..')
const dir = mkdtempSync(join(tmpdir(), 'pigeonhole-config-errors-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** Starts the server with `env`; a server that keeps running instead of exiting is killed after 15 s. */
async function start(env: Record<string, string>) {
  const child = Bun.spawn([process.execPath, 'src/index.ts'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: dir,
      HOST: '127.0.0.1',
      PORT: '0',
      SMTP_PORT: '0',
      DATABASE_PATH: join(dir, `db-${crypto.randomUUID()}.db`),
      ...env,
    },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const guard = setTimeout(() => child.kill('SIGKILL'), 15_000)
  const [code, stdout, stderr] = await Promise.all([
    child.exited,
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
  ])
  clearTimeout(guard)
  return { code, lines: (stdout + stderr).trim().split('\n') }
}

test.each(['99999', '65536'])('METRICS_PORT=%s exits 78 with one line naming it', async (value) => {
  const { code, lines } = await start({ METRICS_PORT: value })
  expect(lines).toEqual([`Invalid configuration: METRICS_PORT: must be between 0 and 65535, got ${value}`])
  expect(code).toBe(78)
})

test('a METRICS_HOST that cannot be bound exits 78 with one line naming it, the other listeners closed', async () => {
  const { code, lines } = await start({ METRICS_PORT: '0', METRICS_HOST: 'no-such-host.invalid' })
  expect(lines.filter((line) => !line.startsWith('{'))).toHaveLength(1)
  expect(lines.at(-1)).toStartWith(
    'Invalid configuration: METRICS_HOST: cannot listen on no-such-host.invalid port 0 (',
  )
  expect(lines.some((line) => line.includes('"event":"stopped"'))).toBe(true)
  expect(code).toBe(78)
})

test('a METRICS_PORT another process holds exits 78 with one line naming it, and nothing before it', async () => {
  const holder = createServer()
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve))
  const { port } = holder.address() as { port: number }
  try {
    const { code, lines } = await start({ METRICS_PORT: String(port), METRICS_HOST: '127.0.0.1' })
    expect(lines).toEqual([
      `Invalid configuration: METRICS_PORT: cannot listen on 127.0.0.1 port ${port}: another process uses it`,
    ])
    expect(code).toBe(78)
  } finally {
    holder.close()
  }
})

test('a missing SMTP_TLS_CERT_FILE exits 78 with one line naming it', async () => {
  const key = join(dir, 'key.pem')
  writeFileSync(key, 'not used')
  const { code, lines } = await start({ SMTP_TLS_CERT_FILE: join(dir, 'missing-cert.pem'), SMTP_TLS_KEY_FILE: key })
  expect(lines).toHaveLength(1)
  expect(lines[0]).toStartWith('Invalid configuration: SMTP_TLS_CERT_FILE: cannot read ')
  expect(lines[0]).toContain('ENOENT')
  expect(code).toBe(78)
})

test('a missing SMTP_TLS_KEY_FILE exits 78 with one line naming it', async () => {
  const cert = join(dir, 'cert.pem')
  writeFileSync(cert, 'not used')
  const { code, lines } = await start({ SMTP_TLS_CERT_FILE: cert, SMTP_TLS_KEY_FILE: join(dir, 'missing-key.pem') })
  expect(lines).toHaveLength(1)
  expect(lines[0]).toStartWith('Invalid configuration: SMTP_TLS_KEY_FILE: cannot read ')
  expect(code).toBe(78)
})

test('TLS files that are not a PEM certificate and key exit 78 with one line naming them', async () => {
  const cert = join(dir, 'garbage-cert.pem')
  const key = join(dir, 'garbage-key.pem')
  writeFileSync(cert, 'not a certificate')
  writeFileSync(key, 'not a key')
  const { code, lines } = await start({ SMTP_TLS_CERT_FILE: cert, SMTP_TLS_KEY_FILE: key })
  expect(lines).toHaveLength(1)
  expect(lines[0]).toStartWith('Invalid configuration: SMTP_TLS_KEY_FILE: with SMTP_TLS_CERT_FILE is not a PEM key')
  expect(code).toBe(78)
})

test('DATABASE_URL naming a database nobody answers for: exit 1 with one line naming it, without the password', async () => {
  const { code, lines } = await start({ DATABASE_URL: 'postgres://pigeonhole:s3cret-pass@127.0.0.1:1/pigeonhole' })
  expect(lines.filter((line) => !line.startsWith('{'))).toEqual([
    'Cannot start on PostgreSQL at postgres://pigeonhole@127.0.0.1:1/pigeonhole: connect ECONNREFUSED 127.0.0.1:1. Start again once the database answers.',
  ])
  expect(lines.join('\n')).not.toContain('s3cret-pass')
  expect(code).toBe(1)
})
