/**
 * The operations promise end to end, on a real `bun src/index.ts` with an empty data folder:
 * nodemailer with requireTLS delivers (self-signed certificate made on the spot), and a
 * scrape of /metrics with the token shows the stored and the refused message.
 */
import { afterAll, expect, setDefaultTimeout, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import nodemailer from 'nodemailer'
import { SETTINGS } from '../../src/config.ts'

// A hang's deadline, not a speed: on a busy machine this file's servers, processes or
// generated cases take well over Bun's default of 5 s.
setDefaultTimeout(30_000)

const ROOT = join(import.meta.dir, '..', '..')
const dir = mkdtempSync(join(tmpdir(), 'pigeonhole-fresh-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const TOKEN = 'fresh-start-metrics-token-0001'

const env: Record<string, string> = {}
for (const [name, value] of Object.entries(process.env))
  if (value !== undefined && !SETTINGS.some((s) => s.env === name)) env[name] = value
Object.assign(env, {
  PORT: '0',
  SMTP_PORT: '0',
  HOST: '127.0.0.1',
  DATABASE_PATH: join(dir, 'data', 'pigeonhole.db'),
  RECEIVING_DOMAIN: 'fresh.test',
  METRICS_TOKEN: TOKEN,
})

async function cli(...args: string[]): Promise<string> {
  const child = Bun.spawn(['bun', 'src/cli.ts', ...args], { cwd: ROOT, env, stdout: 'pipe', stderr: 'pipe' })
  const [out, code] = await Promise.all([new Response(child.stdout).text(), child.exited])
  expect(code).toBe(0)
  return out.trim().split('\n').pop()!
}

test('a fresh `bun run start` takes mail from nodemailer with requireTLS, and /metrics counts it', async () => {
  const server = Bun.spawn(['bun', 'src/index.ts'], { cwd: ROOT, env, stdout: 'pipe', stderr: 'inherit' })
  try {
    const reader = server.stdout.getReader()
    const ports: Record<string, number> = {}
    let buffered = ''
    while (!(ports.http && ports.smtp)) {
      const { value, done } = await reader.read()
      if (done) throw new Error(`server exited early: ${buffered}`)
      buffered += new TextDecoder().decode(value)
      for (const line of buffered.split('\n')) {
        if (line.includes('"http_listening"')) ports.http = JSON.parse(line).port
        if (line.includes('"smtp_listening"')) ports.smtp = JSON.parse(line).port
      }
    }
    expect(buffered).toContain('"smtp_tls_self_signed_created"')
    void (async () => {
      while (!(await reader.read()).done); // keep draining the log
    })()

    const key = await cli('keys', 'create', await cli('orgs', 'create', 'fresh'))
    const api = `http://127.0.0.1:${ports.http}`
    const inbox = (await (
      await fetch(`${api}/v1/inboxes`, { method: 'POST', headers: { authorization: `Bearer ${key}` } })
    ).json()) as { data: { id: string; address: string } }
    const scrape = async () => {
      const response = await fetch(`${api}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })
      expect(response.status).toBe(200)
      return response.text()
    }
    const before = await scrape()
    expect(before).toContain('\npigeonhole_messages_stored_total 0\n')

    const transport = nodemailer.createTransport({
      host: '127.0.0.1',
      port: ports.smtp,
      requireTLS: true,
      tls: { rejectUnauthorized: false },
    })
    const info = await transport.sendMail({
      from: 'app@example.com',
      to: inbox.data.address,
      subject: 'Fresh',
      text: 'hello',
    })
    expect(info.response).toStartWith('250 ')
    await expect(
      transport.sendMail({ from: 'app@example.com', to: 'nobody-home@fresh.test', subject: 'x', text: 'x' }),
    ).rejects.toThrow('Recipient address rejected')

    const after = await scrape()
    expect(after).toContain('\npigeonhole_messages_stored_total 1\n')
    expect(after).toContain('\npigeonhole_messages_refused_total{reason="unknown_recipient"} 1\n')
    server.kill('SIGTERM')
    expect(await server.exited).toBe(0)
  } finally {
    if (server.exitCode === null) server.kill('SIGKILL')
  }
})
