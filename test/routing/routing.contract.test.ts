/**
 * The routing contract, run unchanged against every provider: the real server with
 * EMAIL_ROUTING=none, and with EMAIL_ROUTING=cloudflare against the local fake API.
 * For `none` the inboxes table is the routing table, so it holds no provider rules.
 */
import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { startFakeCloudflare, type FakeCloudflare } from '../support/fakes/cloudflare-api.ts'
import { errorCode, startTestServer, type Tenant, type TestServer } from '../support/harness.ts'
import { cloudflareEnv, inboxRows } from '../support/routing.ts'

interface ProviderUnderTest {
  name: 'none' | 'cloudflare'
  start(): Promise<{ server: TestServer; stop(): Promise<void> }>
  /** The provider's rule ids for an address. */
  ruleIds(address: string): string[]
  /** How many rule-changing calls reached the provider. */
  calls(): number
}

let fake: FakeCloudflare | null = null

const providers: ProviderUnderTest[] = [
  {
    name: 'none',
    async start() {
      const server = await startTestServer({ env: { EMAIL_ROUTING: 'none' } })
      return { server, stop: () => server.stop() }
    },
    ruleIds: () => [],
    calls: () => 0,
  },
  {
    name: 'cloudflare',
    async start() {
      fake = await startFakeCloudflare()
      const server = await startTestServer({ env: cloudflareEnv(fake.baseUrl, { CLOUDFLARE_TIMEOUT_MS: '10000' }) })
      const started = fake
      return {
        server,
        stop: async () => {
          await server.stop()
          await started.stop()
        },
      }
    },
    ruleIds: (address) => fake!.rulesFor(address).map((rule) => rule.id),
    calls: () => fake!.requests.length,
  },
]

for (const provider of providers) {
  describe(`routing contract: EMAIL_ROUTING=${provider.name}`, () => {
    const rulesPerInbox = provider.name === 'none' ? 0 : 1
    let server: TestServer
    let stop: () => Promise<void>
    let tenant: Tenant

    beforeEach(async () => {
      ;({ server, stop } = await provider.start())
      tenant = await server.tenant()
    })
    afterEach(() => stop())

    test('createInbox makes one rule for the address and stores its id in SQLite, not in the API', async () => {
      const created = await server.post('/v1/inboxes', tenant.key, { prefix: 'contract-one' })
      expect(created.status).toBe(201)
      const inbox = created.body.data
      expect(Object.keys(inbox).sort()).toEqual(['address', 'created_at', 'id', 'local_part', 'status'])
      expect(provider.ruleIds(inbox.address)).toHaveLength(rulesPerInbox)

      const [row] = inboxRows(server)
      expect(row).toMatchObject({ id: inbox.id, address: inbox.address, state: 'active' })
      expect(row!.routing_rule_id).toBe(provider.ruleIds(inbox.address)[0] ?? null)

      const read = await server.get(`/v1/inboxes/${inbox.id}`, tenant.key)
      expect(read.body).toEqual({ data: inbox })
      expect(read.text).not.toContain('routing')
    })

    test('deleteInbox removes the rule and the inbox; the address can be taken again', async () => {
      const inbox = (await server.post('/v1/inboxes', tenant.key, { prefix: 'contract-two' })).body.data
      const deleted = await server.delete(`/v1/inboxes/${inbox.id}`, tenant.key)
      expect(deleted.status).toBe(204)
      expect(deleted.text).toBe('')
      expect(provider.ruleIds(inbox.address)).toEqual([])
      expect(inboxRows(server)).toEqual([])
      expect(errorCode(await server.get(`/v1/inboxes/${inbox.id}`, tenant.key))).toBe('inbox_not_found')
      expect(errorCode(await server.delete(`/v1/inboxes/${inbox.id}`, tenant.key))).toBe('inbox_not_found')

      const again = await server.post('/v1/inboxes', tenant.key, { prefix: 'contract-two' })
      expect(again.status).toBe(201)
      expect(again.body.data.id).not.toBe(inbox.id)
      expect(provider.ruleIds(inbox.address)).toHaveLength(rulesPerInbox)
    })

    test('the provider holds exactly the rules of the active inboxes', async () => {
      const made = []
      for (let i = 0; i < 3; i++) made.push((await server.post('/v1/inboxes', tenant.key)).body.data)
      expect((await server.delete(`/v1/inboxes/${made[1].id}`, tenant.key)).status).toBe(204)

      const rows = inboxRows(server)
      expect(rows.map((row) => row.id).sort()).toEqual([made[0].id, made[2].id].sort())
      for (const inbox of made)
        expect(provider.ruleIds(inbox.address)).toHaveLength(inbox === made[1] ? 0 : rulesPerInbox)
      for (const row of rows) expect(row.routing_rule_id).toBe(provider.ruleIds(row.address)[0] ?? null)
      expect((await server.get('/v1/usage', tenant.key)).body.inboxes.active).toBe(2)
    })

    test('an idempotent replay and a refused request make no further rule', async () => {
      const first = await server.post(
        '/v1/inboxes',
        tenant.key,
        { prefix: 'contract-three' },
        { 'idempotency-key': 'contract-key-1' },
      )
      const callsAfterFirst = provider.calls()
      const replay = await server.post(
        '/v1/inboxes',
        tenant.key,
        { prefix: 'contract-three' },
        { 'idempotency-key': 'contract-key-1' },
      )
      expect(replay.status).toBe(201)
      expect(replay.body).toEqual(first.body)

      const taken = await server.post('/v1/inboxes', tenant.key, { prefix: 'contract-three' })
      expect(errorCode(taken)).toBe('address_unavailable')
      expect(provider.calls()).toBe(callsAfterFirst)
      expect(provider.ruleIds(first.body.data.address)).toHaveLength(rulesPerInbox)
    })

    test('removing a rule twice counts as removed (the provider no longer has it)', async () => {
      const inbox = (await server.post('/v1/inboxes', tenant.key, { prefix: 'contract-four' })).body.data
      const [row] = inboxRows(server)
      const { routing } = server.app.services
      await routing.deleteRule(row!.routing_rule_id, inbox.address)
      await routing.deleteRule(row!.routing_rule_id, inbox.address)
      expect(provider.ruleIds(inbox.address)).toEqual([])
      // The inbox whose rule vanished behind our back can still be deleted.
      expect((await server.delete(`/v1/inboxes/${inbox.id}`, tenant.key)).status).toBe(204)
    })
  })
}
