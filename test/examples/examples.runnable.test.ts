/**
 * The examples are tests of their own: each runs against a real server here, succeeds on
 * the happy path, and stops with the API's error code (not a TypeError) when refused.
 * (The Playwright example needs a browser; scripts/run-examples.ts runs it in .ci/run.)
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { spawnDemoApp, type DemoApp } from '../../examples/demo-app/spawn.ts'
import { Pigeonhole } from '../../examples/pigeonhole.ts'
import { startTestServer, type TestServer } from '../support/harness.ts'
import { testNeeding } from '../support/tools.ts'

const ROOT = join(import.meta.dir, '..', '..')
let server: TestServer
let demo: DemoApp
beforeAll(async () => {
  server = await startTestServer({ env: { LIMIT_ACTIVE_INBOXES: '2' } })
  demo = await spawnDemoApp(server.app.smtpPort)
})
afterAll(async () => {
  await demo.stop()
  await server.stop()
})

async function run(cmd: string[], env: Record<string, string>) {
  const child = Bun.spawn(cmd, {
    cwd: ROOT,
    env: {
      ...process.env,
      PIGEONHOLE_URL: server.url,
      PIGEONHOLE_SMTP: `127.0.0.1:${server.app.smtpPort}`,
      APP_URL: demo.url,
      ...env,
    },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [code, stdout, stderr] = await Promise.all([
    child.exited,
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
  ])
  return { code, stdout, stderr }
}

/** A tenant whose two inbox slots are both taken: createInbox answers 409 inbox_quota_exceeded. */
async function fullTenant() {
  const tenant = await server.tenant()
  for (let i = 0; i < 2; i++) expect((await server.post('/v1/inboxes', tenant.key)).status).toBe(201)
  return tenant
}

describe('examples/recommended-flow.ts', () => {
  test('succeeds and leaves no inbox behind', async () => {
    const tenant = await server.tenant()
    const result = await run(['bun', 'examples/recommended-flow.ts'], { PIGEONHOLE_KEY: tenant.key })
    expect(result.stderr).toBe('')
    expect(result.code).toBe(0)
    expect(result.stdout).toContain('ok: "Your order #1042" from orders@shop.example, code 884213')
    expect((await server.get('/v1/inboxes', tenant.key)).body.data).toEqual([])
  })

  test('a 409 stops it with the error code', async () => {
    const result = await run(['bun', 'examples/recommended-flow.ts'], { PIGEONHOLE_KEY: (await fullTenant()).key })
    expect(result.code).toBe(1)
    expect(result.stderr).toContain('POST /v1/inboxes answered 409 inbox_quota_exceeded')
    expect(result.stderr).not.toContain('TypeError')
  })
})

describe('examples/curl-flow.sh', () => {
  testNeeding('curl')('succeeds and deletes its inbox', async () => {
    const tenant = await server.tenant()
    const result = await run(['bash', 'examples/curl-flow.sh'], { PIGEONHOLE_KEY: tenant.key })
    expect(result.stderr).toBe('')
    expect(result.code).toBe(0)
    expect(result.stdout).toContain('received: Welcome')
    expect((await server.get('/v1/inboxes', tenant.key)).body.data).toEqual([])
  })

  testNeeding('curl')('a 409 stops it with the error body', async () => {
    const result = await run(['bash', 'examples/curl-flow.sh'], { PIGEONHOLE_KEY: (await fullTenant()).key })
    expect(result.code).toBe(1)
    expect(result.stderr).toContain(
      'POST /v1/inboxes answered 409, expected 201: {"error":{"code":"inbox_quota_exceeded"',
    )
  })
})

test('examples/bun-signup.example.ts passes under bun test against the demo app', async () => {
  const tenant = await server.tenant()
  const result = await run(['bun', 'test', './examples/bun-signup.example.ts'], { PIGEONHOLE_KEY: tenant.key })
  expect(`${result.code}\n${result.stderr}`).toContain('0\n')
  expect(result.stderr).toContain(' 2 pass')
  expect((await server.get('/v1/inboxes', tenant.key)).body.data).toEqual([])
}, 30_000)

describe('the example client', () => {
  test('waitForMessage throws a readable error when the wait ends with 204', async () => {
    const pigeonhole = new Pigeonhole({ url: server.url, key: (await server.tenant()).key })
    const inbox = await pigeonhole.createInbox()
    await expect(pigeonhole.waitForMessage(inbox, { subject: 'Never sent', timeout: 1000 })).rejects.toThrow(
      `No mail with subject containing "Never sent" arrived at ${inbox.address} within 1 s.`,
    )
    await pigeonhole.deleteInbox(inbox)
  })

  test('an API refusal is a PigeonholeError with its code', async () => {
    const pigeonhole = new Pigeonhole({ url: server.url, key: 'ph_live_not_a_key' })
    await expect(pigeonhole.createInbox()).rejects.toMatchObject({
      name: 'PigeonholeError',
      status: 401,
      code: 'invalid_api_key',
    })
  })
})
