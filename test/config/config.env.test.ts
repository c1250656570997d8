/** Configuration from the environment (the operational contract in src/config.ts): real `bun src/index.ts` processes. */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { loadConfig, SETTINGS } from '../../src/config.ts'
import { resolvePublicUrls } from '../../src/public-urls.ts'
import { scratchDir } from '../support/scratch.ts'

// A hang's deadline, not a speed: on a busy machine this file's servers, processes or
// generated cases take well over Bun's default of 5 s.
setDefaultTimeout(30_000)

const ROOT = join(import.meta.dir, '..', '..')
const dir = scratchDir('pigeonhole-config-')
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** Only our variables are replaced; PATH and friends stay so `bun` runs. */
function envWith(overrides: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {}
  for (const [name, value] of Object.entries(process.env))
    if (value !== undefined && !SETTINGS.some((s) => s.env === name)) env[name] = value
  return {
    ...env,
    PORT: '0',
    SMTP_PORT: '0',
    HOST: '127.0.0.1',
    DATABASE_PATH: join(dir, `db-${crypto.randomUUID()}.db`),
    LOG_LEVEL: 'info',
    ...overrides,
  }
}

describe('a bad value stops the process with one line naming the variable', () => {
  const cases: Array<[string, Record<string, string>]> = [
    ['PORT', { PORT: 'abc' }],
    ['PORT', { PORT: '70000' }],
    ['PORT', { PORT: '-1' }],
    ['SMTP_PORT', { SMTP_PORT: '25.5' }],
    ['LIMIT_ACTIVE_INBOXES', { LIMIT_ACTIVE_INBOXES: '0' }],
    ['LIMIT_MONTHLY_EMAILS', { LIMIT_MONTHLY_EMAILS: 'lots' }],
    ['LIMIT_REQUESTS_PER_KEY', { LIMIT_REQUESTS_PER_KEY: '1e3' }],
    ['IDEMPOTENCY_HOURS', { IDEMPOTENCY_HOURS: '1.5' }],
    ['EMAIL_ROUTING', { EMAIL_ROUTING: 'smtp' }],
    ['SMTP_GREETING_DELAY_MS', { SMTP_GREETING_DELAY_MS: '30001' }],
    ['SMTP_GREETING_DELAY_MS', { SMTP_GREETING_DELAY_MS: '5000', SMTP_GREETING_TIMEOUT_MS: '5000' }],
    ['LOG_LEVEL', { LOG_LEVEL: 'verbose' }],
    ['BASE_URL', { BASE_URL: 'not a url' }],
    ['FILES_URL', { FILES_URL: 'ftp://files.example.com' }],
    ['RECEIVING_DOMAIN', { RECEIVING_DOMAIN: 'bad domain' }],
    ['RECEIVING_DOMAIN', { RECEIVING_DOMAIN: 'user@example.com' }],
    ['CORS_CONSOLE_ORIGIN', { CORS_CONSOLE_ORIGIN: '*' }],
    ['CORS_CONSOLE_ORIGIN', { CORS_CONSOLE_ORIGIN: 'https://console.example.com/app' }],
    ['CORS_WILDCARD_ORIGIN', { CORS_WILDCARD_ORIGIN: 'https://example.com' }],
    ['CORS_WILDCARD_ORIGIN', { CORS_WILDCARD_ORIGIN: '*' }],
    ['CLOUDFLARE_API_TOKEN', { EMAIL_ROUTING: 'cloudflare', CLOUDFLARE_ZONE_ID: 'zone' }],
    ['CLOUDFLARE_ZONE_ID', { EMAIL_ROUTING: 'cloudflare', CLOUDFLARE_API_TOKEN: 'token' }],
    // A silent connection is cut mid-request too: the slowest request must fit in the idle timeout.
    ['HTTP_IDLE_TIMEOUT_SECONDS', { HTTP_IDLE_TIMEOUT_SECONDS: '9' }],
    [
      'HTTP_IDLE_TIMEOUT_SECONDS',
      {
        HTTP_IDLE_TIMEOUT_SECONDS: '10',
        EMAIL_ROUTING: 'cloudflare',
        CLOUDFLARE_API_TOKEN: 'token',
        CLOUDFLARE_ZONE_ID: 'zone',
      },
    ],
  ]
  /** Each case is its own short-lived process, independent of the others: a few run side by side, before the checks. */
  const runs = new Map<Record<string, string>, { code: number; output: string }>()
  beforeAll(async () => {
    const queue = [...cases]
    const worker = async () => {
      for (let next = queue.shift(); next; next = queue.shift()) {
        const child = Bun.spawn(['bun', 'src/index.ts'], {
          cwd: ROOT,
          env: envWith(next[1]),
          stdout: 'pipe',
          stderr: 'pipe',
        })
        const [stdout, stderr, code] = await Promise.all([
          new Response(child.stdout).text(),
          new Response(child.stderr).text(),
          child.exited,
        ])
        runs.set(next[1], { code, output: (stdout + stderr).trim() })
      }
    }
    await Promise.all(Array.from({ length: 3 }, worker))
  }, 60_000)

  for (const [variable, overrides] of cases) {
    test(`${JSON.stringify(overrides)} names ${variable}`, () => {
      const { code, output } = runs.get(overrides)!
      const lines = output.split('\n')
      // One object, so a failure shows the whole output.
      expect({
        failed: code !== 0,
        lines: lines.length,
        namesVariable: lines[0]!.includes(variable),
        stackTrace: output.includes('    at '),
        output,
      }).toEqual({
        failed: true,
        lines: 1,
        namesVariable: true,
        stackTrace: false,
        output,
      })
    })
  }
})

test('a good environment starts, serves /health and stops cleanly on SIGTERM', async () => {
  const child = Bun.spawn(['bun', 'src/index.ts'], { cwd: ROOT, env: envWith({}), stdout: 'pipe', stderr: 'pipe' })
  try {
    const reader = child.stdout.getReader()
    let buffered = ''
    let port: number | undefined
    while (port === undefined) {
      const { value, done } = await reader.read()
      if (done) throw new Error(`server exited early: ${buffered}`)
      buffered += new TextDecoder().decode(value)
      for (const line of buffered.split('\n')) {
        if (line.includes('"http_listening"')) port = JSON.parse(line).port
      }
    }
    const response = await fetch(`http://127.0.0.1:${port}/health`)
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual({ status: 'ok', service: 'pigeonhole' })
    reader.releaseLock()
    child.kill('SIGTERM')
    expect(await child.exited).toBe(0)
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL')
  }
})

describe('loadConfig', () => {
  test('defaults are the spec values', () => {
    const config = loadConfig({})
    expect(config.limits).toMatchObject({
      activeInboxes: 11,
      monthlyEmails: 33,
      requestsPerKey: 120,
      requestsPerOrg: 600,
      longPollsPerKey: 10,
      longPollsPerOrg: 30,
      inboxBurst: 10,
      orgBurst: 25,
      messageBytes: 10 * 1024 * 1024,
      attachments: 25,
      attachmentBytes: 5 * 1024 * 1024,
      attachmentsTotalBytes: 10 * 1024 * 1024,
      bodyBytes: 1024 * 1024,
      retentionDays: 30,
      idempotencyHours: 24,
    })
    expect(config).toMatchObject({
      port: 3000,
      smtpPort: 2525,
      host: '0.0.0.0',
      databasePath: './data/pigeonhole.db',
      receivingDomain: 'pigeonhole.test',
      baseUrl: 'http://localhost:3000',
      filesUrl: 'http://localhost:3000',
      emailRouting: 'none',
      // Secure by default: the token-less metrics listener on loopback, Fly's proxy network trusted.
      metricsHost: '127.0.0.1',
      trustedProxies: '172.16.0.0/12',
      hstsMaxAgeSeconds: 31_536_000,
    })
  })

  test('a proxy list that cannot be read, or trusts no one beside a switch that needs a proxy, is refused', () => {
    const refusal = (env: Record<string, string>) => {
      try {
        loadConfig(env)
        return null
      } catch (error) {
        return (error as Error).message
      }
    }
    expect(refusal({ TRUSTED_PROXIES: '172.16.0.0/12, fly-proxy' })).toBe(
      'TRUSTED_PROXIES: "fly-proxy" is not an IPv4 or IPv6 network such as 10.0.0.0/8 or fd00::/8',
    )
    expect(refusal({ TRUSTED_PROXIES: '10.0.0.0/40' })).toBe(
      'TRUSTED_PROXIES: "10.0.0.0/40" has a prefix length outside 0..32',
    )
    expect(refusal({ TRUSTED_PROXIES: 'none', SMTP_PROXY_PROTOCOL: 'on' })).toStartWith(
      'TRUSTED_PROXIES: must name the proxy when SMTP_PROXY_PROTOCOL=on',
    )
    expect(refusal({ TRUSTED_PROXIES: 'none', CLIENT_ADDRESS_HEADER: 'Fly-Client-IP' })).toStartWith(
      'TRUSTED_PROXIES: must name the proxy when CLIENT_ADDRESS_HEADER is set',
    )
    expect(refusal({ TRUSTED_PROXIES: 'none' })).toBeNull()
    expect(refusal({ METRICS_HOST: '0.0.0.0 ::' })).toStartWith('METRICS_HOST: expected an address or host name')
  })

  test('DATABASE_URL is empty (SQLite) or a postgres:// URL; a wrong one is refused without repeating its password', () => {
    expect(loadConfig({}).databaseUrl).toBe('')
    expect(loadConfig({}).databasePoolSize).toBe(10)
    for (const url of ['postgres://u:p@db:5432/ph', 'postgresql://db/ph'])
      expect(loadConfig({ DATABASE_URL: url }).databaseUrl).toBe(url)
    for (const url of [
      'mysql://u:hunter2-secret@db/ph',
      'postgres://',
      'postgres://u:hunter2-secret@db /ph',
      'db.example.com',
    ]) {
      const refusal = (() => {
        try {
          loadConfig({ DATABASE_URL: url })
          return null
        } catch (error) {
          return error as Error
        }
      })()
      expect(refusal?.message).toBe('DATABASE_URL: expected a postgres:// or postgresql:// URL')
    }
    expect(() =>
      loadConfig({ DATABASE_URL: 'postgres://db/ph', LITESTREAM_REPLICA: 'file', LITESTREAM_REPLICA_PATH: '/tmp/r' }),
    ).toThrow('LITESTREAM_REPLICA: must be none when DATABASE_URL is set')
    expect(() => loadConfig({ DATABASE_POOL_SIZE: '0' })).toThrow('DATABASE_POOL_SIZE')
  })

  test('DATABASE_URL may carry a password with spaces, raw or as %20; a / in it must be encoded', () => {
    for (const url of ['postgres://u:two words@db:5432/ph', 'postgres://u:two%20words@db:5432/ph'])
      expect(loadConfig({ DATABASE_URL: url }).databaseUrl).toBe(url)
    expect(() => loadConfig({ DATABASE_URL: 'postgres://u:sla/sh@db/ph' })).toThrow(
      'DATABASE_URL: expected a postgres:// or postgresql:// URL',
    )
  })

  test('FILES_URL follows BASE_URL; a trailing slash is dropped', () => {
    const config = loadConfig({ BASE_URL: 'https://api.example.com/' })
    expect(config.baseUrl).toBe('https://api.example.com')
    expect(config.filesUrl).toBe('https://api.example.com')
  })

  test('the config is frozen: nothing can change a setting after start', () => {
    const config = loadConfig({})
    expect(Object.isFrozen(config)).toBe(true)
    expect(Object.isFrozen(config.limits)).toBe(true)
    expect(Object.keys(config)).not.toContain('activeInboxes')
  })

  test('with PORT=0 the default public URLs name the port the OS picked; given ones are kept', () => {
    expect(resolvePublicUrls(loadConfig({ PORT: '0' }), 4321)).toEqual({
      baseUrl: 'http://localhost:4321',
      filesUrl: 'http://localhost:4321',
    })
    expect(resolvePublicUrls(loadConfig({ PORT: '0', FILES_URL: 'https://files.example.com' }), 4321)).toEqual({
      baseUrl: 'http://localhost:4321',
      filesUrl: 'https://files.example.com',
    })
    expect(resolvePublicUrls(loadConfig({ PORT: '0', BASE_URL: 'https://api.example.com' }), 4321)).toEqual({
      baseUrl: 'https://api.example.com',
      filesUrl: 'https://api.example.com',
    })
  })
})
