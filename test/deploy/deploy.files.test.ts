/**
 * fly.toml, the Dockerfile and litestream.yml agree with the configuration the server
 * reads: the ports Fly forwards to are the ones it listens on, the volume holds the
 * database, and the image starts through the entry. (`docker build` cannot run here.)
 * fly.postgres.toml, PostgreSQL mode's configuration, serves the same ports from two or more
 * machines deployed one at a time, with no volume or Litestream, and a stop long enough for
 * a machine's waiting long polls to answer.
 */
import { describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { validate } from 'dockerfile-utils'
import { dirname, join } from 'node:path'
import { LONG_POLL_DRAIN_MS } from '../../src/app/listeners.ts'
import { loadConfig, SETTINGS } from '../../src/config.ts'
import { TrustedNetworks } from '../../src/core/common/trusted-networks.ts'
import { ROOT } from '../support/entry-process.ts'

const read = (name: string) => Bun.file(`${ROOT}/${name}`).text()
const fly = Bun.TOML.parse(await read('fly.toml')) as any
const flyPostgres = Bun.TOML.parse(await read('fly.postgres.toml')) as any
const dockerfile = (await read('Dockerfile')).replace(/\\\n/g, ' ')
const instructions = dockerfile
  .split('\n')
  .map((line) => line.trim())
  .filter((line) => line && !line.startsWith('#'))

/** ENV KEY=VALUE pairs of the final stage (our values have no spaces or quotes). */
const imageEnv: Record<string, string> = Object.fromEntries(
  instructions
    .filter((line) => line.startsWith('ENV '))
    .flatMap((line) => line.slice(4).trim().split(/\s+/))
    .map((pair) => pair.split('=') as [string, string]),
)
const defaults = Object.fromEntries(SETTINGS.map((s) => [s.env, typeof s.default === 'string' ? s.default : '']))
/** What the server sees on Fly: fly.toml [env] over the image's ENV over the defaults. */
const effective: Record<string, string> = { ...defaults, ...imageEnv, ...fly.env }
const seconds = (duration: string) => Number(/^(\d+)s$/.exec(duration)?.[1] ?? NaN)

test('the effective Fly environment is a valid configuration', () => {
  expect(() => loadConfig({ ...imageEnv, ...fly.env })).not.toThrow()
  expect(fly.env.LITESTREAM_REPLICA).toBe('s3')
})

test('HTTPS on 443 (80 redirects) reaches PORT, routed by /health (liveness), readiness a top-level check, never auto-stopped', () => {
  const http = fly.http_service
  expect(http.internal_port).toBe(Number(effective.PORT))
  expect(http.force_https).toBe(true)
  expect(http.auto_stop_machines).toBe('off')
  // Fly applies min_machines_running only while auto-stop is on: set here it would promise nothing.
  expect(http.min_machines_running).toBeUndefined()
  // Routing follows /health, which never touches the database (test/ops/ops.health-liveness.test.ts):
  // a shared database down must not take every machine out of Fly's routing at once.
  expect(http.checks.map((c: any) => [c.method, c.path])).toEqual([['GET', '/health']])
  expect(fly.checks.ready).toMatchObject({ type: 'http', port: Number(effective.PORT), path: '/ready' })
  // Each waiting long poll holds a request; the limit leaves room for all an org may hold.
  expect(http.concurrency.type).toBe('requests')
  expect(http.concurrency.hard_limit).toBeGreaterThan(10 * Number(defaults.LIMIT_LONG_POLLS_PER_ORG))
})

test('public TCP port 25 reaches SMTP_PORT as TCP with a PROXY line, never auto-stopped', () => {
  const smtp = fly.services.filter((s: any) => s.ports.some((p: any) => p.port === 25))
  expect(smtp).toHaveLength(1)
  expect(smtp[0].protocol).toBe('tcp')
  expect(smtp[0].internal_port).toBe(Number(effective.SMTP_PORT))
  // 25 for senders' MTAs, 2525 for the Cloudflare Email Worker relay (Workers cannot reach 25).
  expect(smtp[0].ports.map((p: any) => p.port)).toEqual([25, 2525])
  // No TLS or HTTP handler in front of SMTP; only the PROXY line that carries the sender's
  // address, which the server then reads (otherwise every sender is the proxy to the guards).
  for (const port of smtp[0].ports) {
    expect(port.handlers).toEqual(['proxy_proto'])
    expect(port.proxy_proto_options).toEqual({ version: 'v1' })
  }
  expect(effective.SMTP_PROXY_PROTOCOL).toBe('on')
  // The PROXY line (and Fly-Client-IP) only from a private IPv4 address, as Fly's proxy uses,
  // never from the 6PN or a public address.
  const trusted = TrustedNetworks.parse(fly.env.TRUSTED_PROXIES)
  expect(['172.16.0.1', '172.19.8.2', '10.0.0.1', '192.168.1.1'].every((peer) => trusted.trusts(peer))).toBe(true)
  expect(
    ['fdaa:0:18:a7b:7d:f066:b83b:2', '203.0.113.7', '100.64.0.1', '::1'].some((peer) => trusted.trusts(peer)),
  ).toBe(false)
  expect(smtp[0].auto_stop_machines).toBe('off')
  expect(smtp[0].min_machines_running).toBeUndefined()
  // Above SMTP_MAX_CLIENTS, so the server itself answers the excess with 421.
  expect(smtp[0].concurrency.hard_limit).toBeGreaterThan(Number(effective.SMTP_MAX_CLIENTS))
})

test('the volume is mounted on the folder of DATABASE_PATH, and the stop leaves time for the last sync', () => {
  expect(fly.mounts.map((m: any) => m.destination)).toEqual([dirname(effective.DATABASE_PATH!)])
  expect(fly.kill_signal).toBe('SIGTERM')
  expect(seconds(fly.kill_timeout)).toBeGreaterThanOrEqual(20)
})

test('the image: official Bun base, production deps, migrations, entry as command, health check, non-root', () => {
  const froms = instructions.filter((line) => line.startsWith('FROM '))
  expect(froms.length).toBeGreaterThan(0)
  for (const from of froms) expect(from).toMatch(/^FROM oven\/bun:/)
  expect(dockerfile).toContain('bun install --frozen-lockfile --production')
  expect(instructions).toContain('COPY drizzle ./drizzle')
  expect(instructions).toContainEqual(expect.stringMatching(/^COPY .*litestream\.yml/))
  expect(instructions.at(-1)).toBe('CMD ["bun", "src/entry.ts"]')
  expect(instructions.find((line) => line.startsWith('HEALTHCHECK'))).toContain('/health')
  expect(imageEnv.RUN_AS).toMatch(/^[1-9][0-9]*:[1-9][0-9]*$/) // litestream and the server never run as root
  expect(instructions.filter((line) => line.startsWith('USER '))).toEqual([]) // the entry drops privileges itself
  // The server runs as the production bundle, built in the image exactly as `bun run build` does.
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'))
  expect(instructions).toContain(`RUN ${pkg.scripts.build}`)
  expect(imageEnv.SERVER_SCRIPT).toBe(/--outfile=(\S+)/.exec(pkg.scripts.build)?.[1]) // the first output; the parse worker follows
})

test('the Dockerfile passes the linter (errors and warnings alike)', async () => {
  const problems = validate(await read('Dockerfile')).map((d) => `line ${d.range.start.line + 1}: ${d.message}`)
  expect(problems).toEqual([])
})

test('litestream.yml replicates DATABASE_PATH through a `replicas` list (0.3 ignores a singular `replica`)', async () => {
  const config = Bun.YAML.parse(await read('litestream.yml')) as any
  expect(config.dbs).toHaveLength(1)
  expect(config.dbs[0].path).toBe('${DATABASE_PATH}')
  expect(config.dbs[0].replica).toBeUndefined()
  expect(config.dbs[0].replicas).toHaveLength(1)
  expect(config.dbs[0].replicas[0]).toMatchObject({
    type: '${LITESTREAM_REPLICA}',
    bucket: '${BUCKET_NAME}',
    endpoint: '${AWS_ENDPOINT_URL_S3}',
  })
})

test("the token-less metrics listener is Fly's [metrics] port, on IPv4 as Fly asks, and published by no service", () => {
  expect(fly.metrics.port).toBe(Number(effective.METRICS_PORT))
  expect(fly.metrics.path).toBe('/metrics')
  // Fly's metrics page asks for 0.0.0.0; IPv4 only, so the organisation's 6PN (IPv6) does not reach it.
  expect(effective.METRICS_HOST).toBe('0.0.0.0')
  const published = fly.services.flatMap((s: any) => [s.internal_port, ...s.ports.map((p: any) => p.port)])
  expect(published).not.toContain(fly.metrics.port)
})

test('fly.toml, fly.postgres.toml and litestream.yml point to a document and section that exist', async () => {
  const pointers = [
    ...(await read('fly.toml')).matchAll(/see "([^"]+)" in (docs\/[\w./-]+\.md)/g),
    ...(await read('fly.postgres.toml')).matchAll(/see "([^"]+)" in\s+(?:# )?(docs\/[\w./-]+\.md)/g),
    ...(await read('litestream.yml')).matchAll(/see ()(docs\/[\w./-]+\.md)/g),
  ]
  expect(pointers.length).toBeGreaterThanOrEqual(3)
  for (const [, heading, file] of pointers) {
    const text = await read(file!)
    if (heading) expect(text).toContain(`## ${heading}\n`)
  }
  expect(await read('fly.toml')).not.toContain("README's")
  expect(await read('fly.postgres.toml')).not.toContain("README's")
})

describe('fly.postgres.toml', () => {
  const env = { ...imageEnv, ...flyPostgres.env }
  const effectivePostgres: Record<string, string> = { ...defaults, ...env }

  test('is a valid PostgreSQL-mode configuration once the DATABASE_URL secret is set, which it never holds itself', () => {
    expect(flyPostgres.env.DATABASE_URL).toBeUndefined()
    expect(() =>
      loadConfig({ ...env, DATABASE_URL: 'postgres://pigeonhole:secret@db.internal:5432/pigeonhole' }),
    ).not.toThrow()
    expect(flyPostgres.env.LITESTREAM_REPLICA).toBe('none')
  })

  test('no volume: the database is PostgreSQL, the machines are interchangeable', () => {
    expect(flyPostgres.mounts).toBeUndefined()
  })

  test('deployed one machine at a time, never auto-stopped, with a stop that lets a 180 s wait answer', () => {
    expect(flyPostgres.deploy).toEqual({ strategy: 'rolling', max_unavailable: 1 })
    // The count comes from the first deploy and `fly scale count 2` (docs/scaling.md); with
    // auto-stop off, min_machines_running would promise nothing.
    for (const service of [flyPostgres.http_service, ...flyPostgres.services]) {
      expect(service.auto_stop_machines).toBe('off')
      expect(service.min_machines_running).toBeUndefined()
    }
    expect(flyPostgres.kill_signal).toBe('SIGTERM')
    // The polls' drain, then up to 10 s for other requests and 10 s to close the pool and leases.
    expect(seconds(flyPostgres.kill_timeout)).toBeGreaterThanOrEqual(LONG_POLL_DRAIN_MS / 1000 + 20)
    expect(LONG_POLL_DRAIN_MS).toBeGreaterThan(180_000)
  })

  test('the same public ports, handlers, checks and metrics as fly.toml, to the same listeners', () => {
    const shape = (config: any) => ({
      http: { ...config.http_service, min_machines_running: undefined },
      services: config.services.map((service: any) => ({ ...service, min_machines_running: undefined })),
      checks: config.checks,
      metrics: config.metrics,
      vm: config.vm,
    })
    expect(shape(flyPostgres)).toEqual(shape(fly))
    expect(flyPostgres.http_service.internal_port).toBe(Number(effectivePostgres.PORT))
    expect(flyPostgres.checks.ready.path).toBe('/ready')
    for (const name of [
      'SMTP_PROXY_PROTOCOL',
      'CLIENT_ADDRESS_HEADER',
      'TRUSTED_PROXIES',
      'METRICS_PORT',
      'METRICS_HOST',
      'PORT',
      'SMTP_PORT',
    ]) {
      expect(flyPostgres.env[name]).toBe(fly.env[name])
    }
  })
})
