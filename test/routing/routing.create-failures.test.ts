/**
 * createInbox when Cloudflare fails: 502 when it answers with an error, 503 when it cannot
 * be reached; afterwards no inbox, the address free, the active count unchanged, and no
 * idempotency record that replays the failure or blocks the retry.
 */
import { describe, expect, test } from 'bun:test'
import { FAKE_TOKEN, type Trouble } from '../support/fakes/cloudflare-api.ts'
import { errorCode, startTestServer, type Tenant } from '../support/harness.ts'
import { sendMail, simpleMessage } from '../support/smtp.ts'
import {
  closedPort,
  cloudflareEnv,
  idempotencyRecordCount,
  inboxRows,
  startWithFakeCloudflare,
} from '../support/routing.ts'

type Fixture = Awaited<ReturnType<typeof startWithFakeCloudflare>> & { tenant: Tenant }

/**
 * CLOUDFLARE_TIMEOUT_MS of the test servers. Tests that make the fake hang wait it out, so
 * it is short for them; for the others it is long, so that a healthy answer is never taken
 * for a timeout while a dozen servers start in this process at once.
 */
// The hanging tests' healthy calls (the inbox's rule made before a delete, the retry that
// succeeds) go through the same timeout: at 300 ms a create answered late on a machine busy
// with other test files was timed out and retried, leaving Cloudflare two rules.
const HANG_TIMEOUT_MS = 1_000
const ANSWER_TIMEOUT_MS = 2_000
const timeoutFor = (troubles: Trouble[]) =>
  troubles.some((trouble) => trouble.kind === 'hang') ? HANG_TIMEOUT_MS : ANSWER_TIMEOUT_MS

/**
 * A server and a fake Cloudflare of the test's own. The tests wait out real timeouts and
 * retry pauses, so they run at the same time.
 */
async function withFakeCloudflare(
  run: (fixture: Fixture) => Promise<void>,
  timeoutMs = ANSWER_TIMEOUT_MS,
): Promise<void> {
  const started = await startWithFakeCloudflare({ timeoutMs })
  try {
    await run({ ...started, tenant: await started.server.tenant() })
  } finally {
    await started.stop()
  }
}

const cases: Array<{ name: string; troubles: Trouble[]; status: 502 | 503; posts: number }> = [
  { name: 'a 400 answer (not retried)', troubles: [{ kind: 'error', status: 400 }], status: 502, posts: 1 },
  {
    name: 'a 403 authentication error (not retried)',
    troubles: [{ kind: 'error', status: 403, errors: [{ code: 10000, message: 'Authentication error' }] }],
    status: 502,
    posts: 1,
  },
  {
    name: 'two 500 answers',
    troubles: [
      { kind: 'error', status: 500 },
      { kind: 'error', status: 500 },
    ],
    status: 502,
    posts: 2,
  },
  {
    name: 'two 429 answers',
    troubles: [
      { kind: 'error', status: 429 },
      { kind: 'error', status: 429 },
    ],
    status: 502,
    posts: 2,
  },
  { name: 'a 200 envelope with success: false', troubles: [{ kind: 'unsuccessful' }], status: 502, posts: 1 },
  { name: 'a 200 answer that is not JSON', troubles: [{ kind: 'garbage' }], status: 502, posts: 1 },
  {
    name: 'no answer within the timeout, twice',
    troubles: [{ kind: 'hang' }, { kind: 'hang' }],
    status: 503,
    posts: 2,
  },
  { name: 'a dropped connection, twice', troubles: [{ kind: 'drop' }, { kind: 'drop' }], status: 503, posts: 2 },
]

describe.concurrent('createInbox with a failing Cloudflare', () => {
  for (const { name, troubles, status, posts } of cases) {
    test(`${name}: ${status} email_routing_unavailable, nothing left behind, the retry succeeds`, () =>
      withFakeCloudflare(async ({ server, fake, tenant }) => {
        await server.post('/v1/inboxes', tenant.key, { prefix: 'kept-one' })
        const before = (await server.get('/v1/usage', tenant.key)).body.inboxes.active
        const requestsBefore = fake.count('POST')
        fake.plan('POST', ...troubles)

        const body = { prefix: 'failing-box' }
        const headers = { 'idempotency-key': 'create-failure-key' }
        const failed = await server.post('/v1/inboxes', tenant.key, body, headers)
        expect(failed.status).toBe(status)
        expect(errorCode(failed)).toBe('email_routing_unavailable')
        expect(fake.count('POST') - requestsBefore).toBe(posts)

        expect(inboxRows(server).map((row) => row.address)).toEqual(['kept-one@inbox.test'])
        expect(
          (await server.get('/v1/inboxes', tenant.key)).body.data.map((inbox: { address: string }) => inbox.address),
        ).toEqual(['kept-one@inbox.test'])
        expect((await server.get('/v1/usage', tenant.key)).body.inboxes.active).toBe(before)
        expect(idempotencyRecordCount(server)).toBe(0)
        const refused = await sendMail(
          server.app.smtpPort,
          { to: ['failing-box@inbox.test'] },
          simpleMessage({ to: 'failing-box@inbox.test' }),
        )
        expect(refused.rcpt[0]!.code).toBe(550)

        // Same key, same body, provider healthy again: a fresh attempt, not a replay or a 409.
        const retried = await server.post('/v1/inboxes', tenant.key, body, headers)
        expect(retried.status).toBe(201)
        expect(retried.body.data.address).toBe('failing-box@inbox.test')
        expect(fake.rulesFor('failing-box@inbox.test')).toHaveLength(1)
        expect((await server.get('/v1/usage', tenant.key)).body.inboxes.active).toBe(before + 1)
      }, timeoutFor(troubles)))
  }

  const transient: Array<[string, Trouble]> = [
    ['a 503 answer', { kind: 'error', status: 503 }],
    ['no answer within the timeout', { kind: 'hang' }],
    ['a dropped connection', { kind: 'drop' }],
    ['a 429 answer', { kind: 'error', status: 429 }],
  ]
  for (const [name, trouble] of transient) {
    test(`${name} once is retried and the inbox is made with a single rule`, () =>
      withFakeCloudflare(
        async ({ server, fake, tenant }) => {
          fake.plan('POST', trouble)
          const created = await server.post('/v1/inboxes', tenant.key)
          expect(created.status).toBe(201)
          expect(fake.count('POST')).toBe(2)
          const [rule] = fake.rulesFor(created.body.data.address)
          expect(inboxRows(server).find((row) => row.id === created.body.data.id)?.routing_rule_id).toBe(rule!.id)
        },
        timeoutFor([trouble]),
      ))
  }

  test('a successful envelope without a rule id is refused with 502', () =>
    withFakeCloudflare(async ({ server, fake, tenant }) => {
      fake.plan('POST', { kind: 'no_id' })
      expect(errorCode(await server.post('/v1/inboxes', tenant.key))).toBe('email_routing_unavailable')
      expect(inboxRows(server)).toEqual([])
    }))

  test('an answer carrying the id only as the older `tag` still works', () =>
    withFakeCloudflare(async ({ server, fake, tenant }) => {
      fake.plan('POST', { kind: 'tag_only' })
      const created = await server.post('/v1/inboxes', tenant.key)
      expect(created.status).toBe(201)
      expect(inboxRows(server)[0]!.routing_rule_id).toBe(fake.rulesFor(created.body.data.address)[0]!.tag)
    }))

  test('the token is sent as a bearer header and never written to logs or answers', () =>
    withFakeCloudflare(async ({ server, fake, tenant }) => {
      fake.plan('POST', { kind: 'error', status: 500 }, { kind: 'hang' })
      const failed = await server.post('/v1/inboxes', tenant.key)
      await server.post('/v1/inboxes', tenant.key)
      expect(fake.requests.every((request) => request.authorization === `Bearer ${FAKE_TOKEN}`)).toBe(true)
      expect(server.logs.some((line) => line.event === 'routing_call_failed')).toBe(true)
      expect(JSON.stringify(server.logs)).not.toContain(FAKE_TOKEN)
      expect(failed.text).not.toContain(FAKE_TOKEN)
    }, HANG_TIMEOUT_MS))
})

test('Cloudflare unreachable (nothing listening): 503 and no inbox', async () => {
  const server = await startTestServer({ env: cloudflareEnv(`http://127.0.0.1:${closedPort()}/client/v4`) })
  try {
    const tenant = await server.tenant()
    const failed = await server.post('/v1/inboxes', tenant.key, undefined, { 'idempotency-key': 'unreachable-key' })
    expect(failed.status).toBe(503)
    expect(errorCode(failed)).toBe('email_routing_unavailable')
    expect(inboxRows(server)).toEqual([])
    expect(idempotencyRecordCount(server)).toBe(0)
    expect((await server.get('/v1/usage', tenant.key)).body.inboxes.active).toBe(0)
  } finally {
    await server.stop()
  }
})
