/**
 * deleteInbox with Cloudflare: the rule goes first; when that fails the inbox stays and
 * keeps working (502/503); a rule Cloudflare no longer has (404) counts as removed.
 */
import { describe, expect, test } from 'bun:test'
import type { Trouble } from '../support/fakes/cloudflare-api.ts'
import { errorCode, type Tenant } from '../support/harness.ts'
import { sendMail, simpleMessage } from '../support/smtp.ts'
import { inboxRows, startWithFakeCloudflare } from '../support/routing.ts'

type Fixture = Awaited<ReturnType<typeof startWithFakeCloudflare>> & {
  tenant: Tenant
  inbox: { id: string; address: string }
}

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
 * A server and a fake Cloudflare of the test's own, with one inbox and its rule. The tests
 * wait out real timeouts and retry pauses, so they run at the same time.
 */
async function withDoomedInbox(run: (fixture: Fixture) => Promise<void>, timeoutMs = ANSWER_TIMEOUT_MS): Promise<void> {
  const started = await startWithFakeCloudflare({ timeoutMs })
  try {
    const tenant = await started.server.tenant()
    const inbox = (await started.server.post('/v1/inboxes', tenant.key, { prefix: 'doomed-box' })).body.data
    await run({ ...started, tenant, inbox })
  } finally {
    await started.stop()
  }
}

/**
 * `deletes`: requests Cloudflare sees, at least and at most. Bun's fetch itself re-sends an
 * idempotent request (DELETE, not POST) once when a pooled keep-alive connection is reset,
 * so a dropped DELETE may reach the fake up to twice per attempt of ours.
 */
const cases: Array<{ name: string; troubles: Trouble[]; status: 502 | 503; deletes: [number, number] }> = [
  { name: 'a 400 answer', troubles: [{ kind: 'error', status: 400 }], status: 502, deletes: [1, 1] },
  { name: 'a 403 answer', troubles: [{ kind: 'error', status: 403 }], status: 502, deletes: [1, 1] },
  {
    name: 'two 500 answers',
    troubles: [
      { kind: 'error', status: 500 },
      { kind: 'error', status: 502 },
    ],
    status: 502,
    deletes: [2, 2],
  },
  { name: 'a 200 envelope with success: false', troubles: [{ kind: 'unsuccessful' }], status: 502, deletes: [1, 1] },
  {
    name: 'no answer within the timeout, twice',
    troubles: [{ kind: 'hang' }, { kind: 'hang' }],
    status: 503,
    deletes: [2, 2],
  },
  {
    name: 'every connection dropped',
    troubles: [{ kind: 'drop' }, { kind: 'drop' }, { kind: 'drop' }, { kind: 'drop' }],
    status: 503,
    deletes: [2, 4],
  },
]

describe.concurrent('deleteInbox when Cloudflare fails', () => {
  for (const { name, troubles, status, deletes } of cases) {
    test(`${name}: ${status}, the inbox and its rule stay and still work`, () =>
      withDoomedInbox(async ({ server, fake, tenant, inbox }) => {
        const rowBefore = inboxRows(server)
        fake.plan('DELETE', ...troubles)

        const failed = await server.delete(`/v1/inboxes/${inbox.id}`, tenant.key)
        expect(failed.status).toBe(status)
        expect(errorCode(failed)).toBe('email_routing_unavailable')
        expect(fake.count('DELETE')).toBeGreaterThanOrEqual(deletes[0])
        expect(fake.count('DELETE')).toBeLessThanOrEqual(deletes[1])
        fake.clearPlans()

        expect(inboxRows(server)).toEqual(rowBefore)
        expect(fake.rulesFor(inbox.address)).toHaveLength(1)
        expect((await server.get(`/v1/inboxes/${inbox.id}`, tenant.key)).body.data).toEqual(inbox)
        expect((await server.get('/v1/inboxes', tenant.key)).body.data).toEqual([inbox])
        expect((await server.get('/v1/usage', tenant.key)).body.inboxes.active).toBe(1)
        // It still receives mail over SMTP, readable through the API.
        const sent = await sendMail(
          server.app.smtpPort,
          { to: [inbox.address] },
          simpleMessage({ to: inbox.address, subject: 'after a failed delete' }),
        )
        expect(sent.data?.code).toBe(250)
        const messages = await server.get(`/v1/inboxes/${inbox.id}/messages`, tenant.key)
        expect(messages.body.data.map((m: { subject: string }) => m.subject)).toEqual(['after a failed delete'])
        // The address stays taken by the surviving inbox.
        expect(errorCode(await server.post('/v1/inboxes', tenant.key, { prefix: 'doomed-box' }))).toBe(
          'address_unavailable',
        )

        // Once Cloudflare recovers, the same call succeeds.
        expect((await server.delete(`/v1/inboxes/${inbox.id}`, tenant.key)).status).toBe(204)
        expect(fake.rulesFor(inbox.address)).toEqual([])
        expect(inboxRows(server)).toEqual([])
      }, timeoutFor(troubles)))
  }
})

describe.concurrent('deleteInbox with Cloudflare', () => {
  test('deleteInbox removes the rule before the inbox', () =>
    withDoomedInbox(async ({ server, fake, tenant, inbox }) => {
      const [row] = inboxRows(server)
      const held = fake.hold('DELETE')
      const pending = server.delete(`/v1/inboxes/${inbox.id}`, tenant.key)
      const request = await held.received
      expect(request.path.endsWith(`/rules/${row!.routing_rule_id}`)).toBe(true)
      // The rule removal is under way; the inbox is still there.
      expect((await server.get(`/v1/inboxes/${inbox.id}`, tenant.key)).status).toBe(200)
      held.release()
      expect((await pending).status).toBe(204)
      expect((await server.get(`/v1/inboxes/${inbox.id}`, tenant.key)).status).toBe(404)
    }))

  test('a rule already deleted at Cloudflare (404) counts as removed', () =>
    withDoomedInbox(async ({ server, fake, tenant, inbox }) => {
      // Someone removed the rule in the Cloudflare dashboard.
      fake.rules.clear()
      expect((await server.delete(`/v1/inboxes/${inbox.id}`, tenant.key)).status).toBe(204)
      expect(inboxRows(server)).toEqual([])
      expect(server.logs.some((line) => line.event === 'routing_rule_already_gone')).toBe(true)
    }))

  test('a 404 on the retry after a transient failure counts as removed', () =>
    withDoomedInbox(async ({ server, fake, tenant, inbox }) => {
      fake.plan('DELETE', { kind: 'hang' }, { kind: 'not_found' })
      expect((await server.delete(`/v1/inboxes/${inbox.id}`, tenant.key)).status).toBe(204)
      expect(fake.count('DELETE')).toBe(2)
      expect(inboxRows(server)).toEqual([])
    }, HANG_TIMEOUT_MS))
})
