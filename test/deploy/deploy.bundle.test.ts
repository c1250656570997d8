/**
 * The production bundle (`bun run build`, what the Docker image runs via SERVER_SCRIPT)
 * starts from another working directory, finds its migrations, serves the API and takes
 * mail, exactly like the source.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sendMail, simpleMessage } from '../support/smtp.ts'

const ROOT = join(import.meta.dir, '..', '..')
let dir: string
let server: ReturnType<typeof Bun.spawn> | undefined

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'pigeonhole-bundle-'))
})
afterAll(() => {
  server?.kill()
  rmSync(dir, { recursive: true, force: true })
})

test('bun run build makes dist/server.js, which serves HTTP and SMTP on a fresh database', async () => {
  const build = Bun.spawnSync(['bun', 'run', 'build'], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe' })
  expect(build.exitCode).toBe(0)
  // Mail is parsed in workers the bundle starts from its own folder.
  expect(existsSync(join(ROOT, 'dist', 'parse-worker.js'))).toBe(true)
  // So does the child that makes the STARTTLS certificate a fresh database needs (below).
  expect(existsSync(join(ROOT, 'dist', 'self-signed-child.js'))).toBe(true)
  const env = {
    ...process.env,
    PORT: '0',
    SMTP_PORT: '0',
    HOST: '127.0.0.1',
    DATABASE_PATH: join(dir, 'db.sqlite'),
    RECEIVING_DOMAIN: 'bundle.test',
  }
  server = Bun.spawn(['bun', join(ROOT, 'dist', 'server.js')], { cwd: dir, env, stdout: 'pipe', stderr: 'pipe' })
  const reader = (server.stdout as ReadableStream<Uint8Array>).getReader()
  let out = ''
  while (!out.includes('"smtp_listening"')) {
    const { value, done } = await reader.read()
    if (done) throw new Error(`bundle exited early: ${out}`)
    out += new TextDecoder().decode(value)
  }
  const lines = out
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line))
  const httpPort = lines.find((line) => line.event === 'http_listening').port
  const smtpPort = lines.find((line) => line.event === 'smtp_listening').port
  expect(lines.find((line) => line.event === 'smtp_tls_self_signed_created')?.domain).toBe('bundle.test')
  expect(await (await fetch(`http://127.0.0.1:${httpPort}/health`)).json()).toEqual({
    status: 'ok',
    service: 'pigeonhole',
  })

  const cli = (...args: string[]) =>
    Bun.spawnSync(['bun', 'src/cli.ts', ...args], { cwd: ROOT, env })
      .stdout.toString()
      .trim()
      .split('\n')
      .at(-1)!
  const key = cli('keys', 'create', cli('orgs', 'create', 'bundle'))
  const auth = { authorization: `Bearer ${key}` }
  const inbox = (
    (await (await fetch(`http://127.0.0.1:${httpPort}/v1/inboxes`, { method: 'POST', headers: auth })).json()) as {
      data: { id: string; address: string }
    }
  ).data
  const sent = await sendMail(
    smtpPort,
    { to: [inbox.address] },
    simpleMessage({ to: inbox.address, subject: 'from the bundle' }),
  )
  expect(sent.data?.code).toBe(250)
  const listed = (await (
    await fetch(`http://127.0.0.1:${httpPort}/v1/inboxes/${inbox.id}/messages?limit=1&include=content`, {
      headers: auth,
    })
  ).json()) as {
    data: Array<{ subject: string; preview: string }>
  }
  expect(listed.data[0]).toMatchObject({ subject: 'from the bundle', preview: 'Hello there' })
  // Elysia decides from a handler's minified source whether to await what it returns; a
  // rejection it does not await escapes its error handler as a bare 500.
  for (const query of ['limit=1&include=content', 'wait_seconds=1']) {
    const missing = await fetch(
      `http://127.0.0.1:${httpPort}/v1/inboxes/inbox_00000000000000000000000000000000/messages?${query}`,
      { headers: auth },
    )
    expect({
      query,
      status: missing.status,
      code: ((await missing.json()) as { error: { code: string } }).error.code,
    }).toEqual({ query, status: 404, code: 'inbox_not_found' })
  }
}, 30_000)
