/**
 * The Cloudflare adapter's requests and settings, against the fake API: what a rule looks
 * like on the wire, the configurable action, and the configuration checks at boot.
 */
import { afterEach, beforeEach, expect, test } from 'bun:test'
import { ConfigError, loadConfig } from '../../src/config.ts'
import { createLogger } from '../../src/log.ts'
import { createCloudflareProvider } from '../../src/routing/cloudflare.ts'
import { RoutingError } from '../../src/core/common/routing.ts'
import { FAKE_TOKEN, FAKE_ZONE, startFakeCloudflare, type FakeCloudflare } from '../support/fakes/cloudflare-api.ts'
import { cloudflareEnv } from '../support/routing.ts'

let fake: FakeCloudflare
let logs: string[]
beforeEach(async () => {
  fake = await startFakeCloudflare()
  logs = []
})
afterEach(() => fake.stop())

const provider = (env: Record<string, string> = {}) =>
  createCloudflareProvider(
    loadConfig(cloudflareEnv(fake.baseUrl, env)),
    createLogger('debug', (line) => logs.push(line)),
  )

test('a rule is one literal `to` matcher with the Worker action by default, sent with the bearer token', async () => {
  const ruleId = await provider().createRule('wire-check@inbox.test')
  const [request] = fake.requests
  expect(request).toEqual({
    method: 'POST',
    path: `/client/v4/zones/${FAKE_ZONE}/email/routing/rules`,
    authorization: `Bearer ${FAKE_TOKEN}`,
    body: {
      name: 'pigeonhole inbox wire-check@inbox.test',
      enabled: true,
      matchers: [{ type: 'literal', field: 'to', value: 'wire-check@inbox.test' }],
      actions: [{ type: 'worker', value: ['pigeonhole-relay'] }],
    },
  })
  expect(fake.rules.get(ruleId!)?.matchers).toEqual([{ type: 'literal', field: 'to', value: 'wire-check@inbox.test' }])
})

test('the action and its destination come from the configuration', async () => {
  await provider({ CLOUDFLARE_RULE_ACTION: 'forward', CLOUDFLARE_RULE_DESTINATION: 'relay@mx.example.net' }).createRule(
    'fwd@inbox.test',
  )
  await provider({ CLOUDFLARE_RULE_DESTINATION: 'my-relay-worker' }).createRule('wrk@inbox.test')
  expect(fake.rulesFor('fwd@inbox.test')[0]!.actions).toEqual([{ type: 'forward', value: ['relay@mx.example.net'] }])
  expect(fake.rulesFor('wrk@inbox.test')[0]!.actions).toEqual([{ type: 'worker', value: ['my-relay-worker'] }])
})

test('a rule is deleted by its id; an inbox without a rule id makes no call', async () => {
  const cloudflare = provider()
  const ruleId = await cloudflare.createRule('gone-soon@inbox.test')
  await cloudflare.deleteRule(ruleId, 'gone-soon@inbox.test')
  expect(fake.requests.at(-1)).toMatchObject({
    method: 'DELETE',
    path: `/client/v4/zones/${FAKE_ZONE}/email/routing/rules/${ruleId}`,
    authorization: `Bearer ${FAKE_TOKEN}`,
  })
  expect(fake.rules.size).toBe(0)

  const calls = fake.requests.length
  await cloudflare.deleteRule(null, 'made-under-none@inbox.test')
  expect(fake.requests.length).toBe(calls)
})

test('a wrong token or zone is a rejection (502), not an outage', async () => {
  const wrongToken = provider({ CLOUDFLARE_API_TOKEN: 'not-the-token' })
  const wrongZone = provider({ CLOUDFLARE_ZONE_ID: 'ffffffffffffffffffffffffffffffff' })
  for (const attempt of [
    wrongToken.createRule('a@inbox.test'),
    wrongZone.createRule('b@inbox.test'),
    wrongZone.deleteRule('0123', 'b@inbox.test'),
  ]) {
    const error = await attempt.then(
      () => null,
      (e: unknown) => e,
    )
    expect(error).toBeInstanceOf(RoutingError)
    expect((error as RoutingError).kind).toBe('rejected')
    expect((error as RoutingError).message).not.toContain('not-the-token')
  }
  expect(logs.join('\n')).not.toContain('not-the-token')
  expect(logs.join('\n')).toContain('Authentication error')
})

test('configuration: forward needs an address; the timeout is bounded; cloudflare needs token and zone', () => {
  const problem = (env: Record<string, string>) => {
    try {
      loadConfig(env)
      return null
    } catch (error) {
      return error instanceof ConfigError ? error.variable : String(error)
    }
  }
  const base = cloudflareEnv('http://127.0.0.1:1/client/v4')
  expect(problem(base)).toBeNull()
  expect(problem({ ...base, CLOUDFLARE_RULE_ACTION: 'forward' })).toBe('CLOUDFLARE_RULE_DESTINATION')
  expect(
    problem({ ...base, CLOUDFLARE_RULE_ACTION: 'forward', CLOUDFLARE_RULE_DESTINATION: 'relay@mx.example.net' }),
  ).toBeNull()
  expect(problem({ ...base, CLOUDFLARE_RULE_ACTION: 'drop' })).toBe('CLOUDFLARE_RULE_ACTION')
  expect(problem({ ...base, CLOUDFLARE_TIMEOUT_MS: '60000' })).toBe('CLOUDFLARE_TIMEOUT_MS')
  expect(problem({ ...base, CLOUDFLARE_API_TOKEN: '' })).toBe('CLOUDFLARE_API_TOKEN')
  expect(problem({ ...base, CLOUDFLARE_ZONE_ID: '' })).toBe('CLOUDFLARE_ZONE_ID')
  expect(loadConfig(base)).toMatchObject({
    cloudflareRuleAction: 'worker',
    cloudflareRuleDestination: 'pigeonhole-relay',
    cloudflareTimeoutMs: 5000,
  })
})
