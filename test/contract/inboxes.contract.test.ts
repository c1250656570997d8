/**
 * InboxStore's contract: core's inbox verbs (createInbox and its idempotency, listInboxes and
 * its cursors, getInbox, deleteInbox, inboxStats, the idempotency sweep, the boot-time discard,
 * the cursor secret) behave alike on SQLite and on PostgreSQL, including two creates racing
 * for an organisation's last inbox.
 */
import { expect, setDefaultTimeout, test } from 'bun:test'
import { isoTime, ManualClock } from '../../src/clock.ts'
import type { Principal } from '../../src/core/api-keys/authenticate.ts'
import { CLI_ACTOR } from '../../src/core/audit/audit.ts'
import { CursorCodec } from '../../src/core/common/cursor.ts'
import { createInbox } from '../../src/core/inboxes/create-inbox.ts'
import { deleteInbox, discardUnfinishedInboxes } from '../../src/core/inboxes/delete-inbox.ts'
import { getInbox } from '../../src/core/inboxes/get-inbox.ts'
import { sweepExpiredIdempotencyRecords } from '../../src/core/inboxes/idempotency.ts'
import { inboxStats } from '../../src/core/inboxes/inbox-stats.ts'
import { listInboxes } from '../../src/core/inboxes/list-inboxes.ts'
import { LOCAL_TESTING_LIMITS } from '../../src/core/limits/organization-limits.ts'
import { createOrganization } from '../../src/core/organizations/organizations.ts'
import type { RoutingProvider } from '../../src/core/common/routing.ts'
import { RoutingError } from '../../src/core/common/routing.ts'
import type { Services } from '../../src/core/common/services.ts'
import { newId } from '../../src/ids.ts'
import { postgresDb } from '../../src/storage/postgres/db.ts'
import * as pg from '../../src/storage/postgres/schema.ts'
import * as lite from '../../src/storage/sqlite/schema.ts'
import { type Backend, describeEachBackend } from '../support/backends.ts'

setDefaultTimeout(60_000)

const clock = new ManualClock('2026-03-01T10:00:00.000Z')
const HOUR = 3_600_000

/** A new organisation (its own area's verb) and a principal of it with `activeInboxes`. */
async function organization(backend: Backend, activeInboxes = 50): Promise<Principal> {
  const row = await createOrganization(backend.services(), CLI_ACTOR, {
    name: `contract-${newId('org').slice(-8)}`,
    preset: 'local',
  })
  return { organizationId: row.id, keyPublicId: 'contract', limits: { ...LOCAL_TESTING_LIMITS, activeInboxes } }
}

/** A stored message row for inboxStats (the inbound area's store is not on the port yet). */
async function message(
  backend: Backend,
  inboxId: string,
  organizationId: string,
  receivedAt: string,
  expiresAt: string,
): Promise<void> {
  const row = {
    id: newId('msg'),
    inboxId,
    organizationId,
    fromName: '',
    fromAddress: 'a@example.com',
    toAddress: 'x@inbox.test',
    subject: 's',
    preview: '',
    sizeBytes: 10,
    receivedAt,
    expiresAt,
    searchSubject: 's',
    searchSender: 'a@example.com',
    searchSenderDomain: 'example.com',
  }
  const sql = backend.postgres()
  if (sql) await postgresDb(sql).insert(pg.messages).values(row)
  else backend.storage().db.insert(lite.messages).values(row).run()
}

const create = (s: Services, principal: Principal, body: object | null = null, idempotencyKey: string | null = null) =>
  createInbox(s, principal, { body: body === null ? '' : JSON.stringify(body), idempotencyKey })

/** A routing provider whose createRule waits until `release()` (or fails when `fail()` is called). */
function heldRouting(): { routing: RoutingProvider; release(): void; fail(): void; started: Promise<void> } {
  let release!: () => void
  let fail!: () => void
  let started!: () => void
  const gate = new Promise<void>((resolve, reject) => {
    release = resolve
    fail = () => reject(new RoutingError('unavailable', 'provider down'))
  })
  const startedPromise = new Promise<void>((resolve) => {
    started = resolve
  })
  return {
    routing: {
      name: 'held',
      async createRule() {
        started()
        await gate
        return 'rule_1'
      },
      async deleteRule() {},
    },
    release,
    fail,
    started: startedPromise,
  }
}

describeEachBackend(
  'inboxes',
  (backend) => {
    test('create without a prefix generates an address; getInbox returns the same resource', async () => {
      const s = backend.services()
      const principal = await organization(backend)
      const { body, replayed } = await create(s, principal)
      expect(replayed).toBe(false)
      expect(body.data).toMatchObject({ status: 'active', created_at: isoTime(clock.now()) })
      expect(body.data.id).toMatch(/^inbox_/)
      expect(body.data.address).toBe(`${body.data.local_part}@inbox.test`)
      expect(await getInbox(s, principal, body.data.id)).toEqual(body.data)
    })

    test('create with a prefix takes it lowercased; a taken address is refused, in any organisation', async () => {
      const s = backend.services()
      const [a, b] = [await organization(backend), await organization(backend)]
      const prefix = `Taken-${backend.dialect}`
      const { body } = await create(s, a, { prefix })
      expect(body.data.local_part).toBe(prefix.toLowerCase())
      await expect(create(s, a, { prefix })).rejects.toMatchObject({ code: 'address_unavailable' })
      await expect(create(s, b, { prefix: prefix.toLowerCase() })).rejects.toMatchObject({
        code: 'address_unavailable',
      })
      expect((await listInboxes(s, b, { limit: 10 })).data).toEqual([])
    })

    test('the active-inbox quota refuses the next create until one is deleted', async () => {
      const s = backend.services()
      const principal = await organization(backend, 2)
      const first = (await create(s, principal)).body.data
      await create(s, principal)
      await expect(create(s, principal)).rejects.toMatchObject({ code: 'inbox_quota_exceeded' })
      await deleteInbox(s, principal, first.id)
      await create(s, principal)
      expect((await listInboxes(s, principal, { limit: 10 })).data).toHaveLength(2)
    })

    test('two concurrent creates at a limit of one: exactly one wins', async () => {
      const s = backend.services()
      for (let round = 0; round < 3; round++) {
        const principal = await organization(backend, 1)
        const results = await Promise.allSettled(Array.from({ length: 4 }, () => create(s, principal)))
        expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1)
        for (const r of results)
          if (r.status === 'rejected') expect(r.reason).toMatchObject({ code: 'inbox_quota_exceeded' })
        expect((await listInboxes(s, principal, { limit: 10 })).data).toHaveLength(1)
      }
    })

    test('two organisations racing for one prefix: exactly one gets the address', async () => {
      const s = backend.services()
      const prefix = `race-${backend.dialect}`
      const contenders = [await organization(backend), await organization(backend), await organization(backend)]
      const results = await Promise.allSettled(contenders.map((principal) => create(s, principal, { prefix })))
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1)
      for (const r of results)
        if (r.status === 'rejected') expect(r.reason).toMatchObject({ code: 'address_unavailable' })
    })

    test('idempotency: a replay returns the first body; another body with the key is refused', async () => {
      const s = backend.services()
      const principal = await organization(backend)
      const first = await create(s, principal, { prefix: `idem-${backend.dialect}` }, 'key-replay-1')
      const again = await create(s, principal, { prefix: `idem-${backend.dialect}` }, 'key-replay-1')
      expect(again).toEqual({ body: first.body, replayed: true })
      await expect(create(s, principal, { prefix: `other-${backend.dialect}` }, 'key-replay-1')).rejects.toMatchObject({
        code: 'idempotency_key_reused',
      })
      // The same key in another organisation is another key.
      const elsewhere = await create(s, await organization(backend), {}, 'key-replay-1')
      expect(elsewhere.replayed).toBe(false)
      expect((await listInboxes(s, principal, { limit: 10 })).data).toHaveLength(1)
    })

    test('idempotency: a running request makes its duplicate answer in_progress, then replays', async () => {
      const held = heldRouting()
      const s = { ...backend.services(), routing: held.routing }
      const principal = await organization(backend)
      const running = create(s, principal, {}, 'key-running-1')
      await held.started
      await expect(create(s, principal, {}, 'key-running-1')).rejects.toMatchObject({
        code: 'idempotency_in_progress',
        facts: { retryAfterSeconds: 1 },
      })
      held.release()
      const done = await running
      expect(await create(s, principal, {}, 'key-running-1')).toEqual({ body: done.body, replayed: true })
    })

    test('idempotency: a failed request releases its key and its address', async () => {
      const held = heldRouting()
      const failing = { ...backend.services(), routing: held.routing }
      const principal = await organization(backend, 1)
      const prefix = `fails-${backend.dialect}`
      const attempt = create(failing, principal, { prefix }, 'key-failing-1')
      await held.started
      held.fail()
      await expect(attempt).rejects.toMatchObject({ code: 'email_routing_unavailable' })
      // The retry runs anew: the key, the address and the quota slot were all given back.
      const retried = await create(backend.services(), principal, { prefix }, 'key-failing-1')
      expect(retried.replayed).toBe(false)
      expect(retried.body.data.local_part).toBe(prefix)
    })

    test('idempotency: a record expires after its retention, and the sweep deletes it', async () => {
      const s = backend.services()
      const principal = await organization(backend)
      const first = await create(s, principal, {}, 'key-expiring-1')
      clock.advance(s.config.limits.idempotencyHours * HOUR)
      // Expired: the key is free again, even with another body.
      const fresh = await create(s, principal, { prefix: `late-${backend.dialect}` }, 'key-expiring-1')
      expect(fresh.replayed).toBe(false)
      expect(fresh.body.data.id).not.toBe(first.body.data.id)
      clock.advance(s.config.limits.idempotencyHours * HOUR)
      let swept = 0
      for (let n = await sweepExpiredIdempotencyRecords(s, 2); n > 0; n = await sweepExpiredIdempotencyRecords(s, 2))
        swept += n
      expect(swept).toBeGreaterThanOrEqual(1)
      expect(await sweepExpiredIdempotencyRecords(s, 100)).toBe(0)
      // Swept: the key runs anew.
      expect((await create(s, principal, {}, 'key-expiring-1')).replayed).toBe(false)
    })

    test('list: newest first, ties broken by id, pages that neither overlap nor skip', async () => {
      const s = backend.services()
      const principal = await organization(backend)
      const created: string[] = []
      for (let i = 0; i < 7; i++) {
        if (i % 3 !== 2) clock.advance(1) // some share a millisecond, so the id breaks the tie
        created.push((await create(s, principal)).body.data.id)
      }
      const rows = (await listInboxes(s, principal, { limit: 100 })).data
      const expected = [...rows].sort((x, y) =>
        x.created_at === y.created_at ? (x.id < y.id ? 1 : -1) : x.created_at < y.created_at ? 1 : -1,
      )
      expect(rows.map((r) => r.id)).toEqual(expected.map((r) => r.id))
      expect(new Set(rows.map((r) => r.id))).toEqual(new Set(created))

      const paged: string[] = []
      let cursor: string | undefined
      do {
        const page = await listInboxes(s, principal, { limit: 3, cursor })
        expect(page.data.length).toBeLessThanOrEqual(3)
        paged.push(...page.data.map((r) => r.id))
        cursor = page.next_cursor ?? undefined
      } while (cursor)
      expect(paged).toEqual(rows.map((r) => r.id))

      // A cursor is bound to its listing: another organisation's is refused.
      const firstPage = await listInboxes(s, principal, { limit: 3 })
      await expect(
        listInboxes(s, await organization(backend), { limit: 3, cursor: firstPage.next_cursor! }),
      ).rejects.toMatchObject({ code: 'invalid_cursor' })
    })

    test('find and delete: the messages go too; deleted, unknown and foreign inboxes are all not found', async () => {
      const s = backend.services()
      const [owner, stranger] = [await organization(backend), await organization(backend)]
      const inbox = (await create(s, owner)).body.data
      await expect(getInbox(s, stranger, inbox.id)).rejects.toMatchObject({ code: 'inbox_not_found' })
      await expect(deleteInbox(s, stranger, inbox.id)).rejects.toMatchObject({ code: 'inbox_not_found' })
      await expect(getInbox(s, owner, 'inbox_not-an-id')).rejects.toMatchObject({ code: 'inbox_not_found' })
      await message(backend, inbox.id, owner.organizationId, isoTime(clock.now()), isoTime(clock.now() + HOUR))
      expect((await inboxStats(s, [inbox.id])).get(inbox.id)?.messages).toBe(1)
      await deleteInbox(s, owner, inbox.id)
      // Its messages went with it.
      expect((await inboxStats(s, [inbox.id])).get(inbox.id)?.messages).toBe(0)
      await expect(getInbox(s, owner, inbox.id)).rejects.toMatchObject({ code: 'inbox_not_found' })
      await expect(deleteInbox(s, owner, inbox.id)).rejects.toMatchObject({ code: 'inbox_not_found' })
      // The address is free again.
      expect((await create(s, stranger, { prefix: inbox.local_part })).body.data.address).toBe(inbox.address)
    })

    test('stats: count and newest arrival per inbox, skipping expired messages', async () => {
      const s = backend.services()
      const principal = await organization(backend)
      const [a, b, quiet] = [
        (await create(s, principal)).body.data,
        (await create(s, principal)).body.data,
        (await create(s, principal)).body.data,
      ]
      const at = (offsetMs: number) => isoTime(clock.now() + offsetMs)
      await message(backend, a.id, principal.organizationId, at(-3000), at(HOUR))
      await message(backend, a.id, principal.organizationId, at(-1000), at(HOUR))
      await message(backend, a.id, principal.organizationId, at(-500), at(-1)) // expired: not counted
      await message(backend, b.id, principal.organizationId, at(-2000), at(HOUR))
      const stats = await inboxStats(s, [a.id, b.id, quiet.id])
      expect(stats.get(a.id)).toEqual({ messages: 2, unread: 2, lastReceivedAt: at(-1000) })
      expect(stats.get(b.id)).toEqual({ messages: 1, unread: 1, lastReceivedAt: at(-2000) })
      expect(stats.get(quiet.id)).toEqual({ messages: 0, unread: 0, lastReceivedAt: null })
      expect((await inboxStats(s, [])).size).toBe(0)
    })

    test('boot: an abandoned reservation is discarded and its address freed', async () => {
      const held = heldRouting()
      const s = { ...backend.services(), routing: held.routing }
      const principal = await organization(backend, 1)
      const prefix = `abandoned-${backend.dialect}`
      const stuck = create(s, principal, { prefix }, 'key-abandoned-1')
      stuck.catch(() => {})
      await held.started
      // Long enough that no running createInbox can own it on any machine.
      clock.advance(HOUR)
      await discardUnfinishedInboxes(backend.services())
      const discarded = backend.logs.filter(
        (line) => line.event === 'unfinished_inbox_discarded' && line.address === `${prefix}@inbox.test`,
      )
      expect(discarded).toHaveLength(1)
      // The claim: one process serves SQLite, so at its boot every claim is abandoned and the
      // retry runs anew; with PostgreSQL the claim's machine is alive (its lease is renewed),
      // so the claim stands. Either way the address and the quota slot are free again.
      const retry = create(backend.services(), principal, { prefix }, 'key-abandoned-1')
      if (backend.dialect === 'sqlite') {
        expect(await retry).toMatchObject({ replayed: false, body: { data: { local_part: prefix } } })
      } else {
        await expect(retry).rejects.toMatchObject({ code: 'idempotency_in_progress' })
        expect((await create(backend.services(), principal, { prefix })).body.data.local_part).toBe(prefix)
      }
      held.release()
      await expect(stuck).rejects.toThrow()
    })

    // Only PostgreSQL serves the API from several machines: a request whose machine stopped
    // renewing its lease loses its key to the next request, and can no longer complete it.
    if (backend.dialect === 'postgres') {
      test("idempotency across machines: a dead holder's key is taken over, and its late completion fails", async () => {
        const held = heldRouting()
        const principal = await organization(backend)
        const stalled = create({ ...backend.services(), routing: held.routing }, principal, {}, 'key-takeover-1')
        await held.started
        // The holder's machine died: its lease ran out (leases run on the database's clock).
        await backend.postgres()!`update idempotency_leases set expires_at = now() - interval '1 second' where idempotency_key = 'key-takeover-1'`
        const takeover = await create(backend.services(), principal, {}, 'key-takeover-1')
        expect(takeover.replayed).toBe(false)
        held.release()
        await expect(stalled).rejects.toThrow()
        // The stalled request neither activated its inbox nor released the new holder's record.
        expect((await listInboxes(backend.services(), principal, { limit: 10 })).data.map((inbox) => inbox.id)).toEqual(
          [takeover.body.data.id],
        )
        expect(await create(backend.services(), principal, {}, 'key-takeover-1')).toEqual({
          body: takeover.body,
          replayed: true,
        })
      })
    }

    test('boot: a reservation young enough to be running is kept on PostgreSQL (other machines serve)', async () => {
      const held = heldRouting()
      const s = { ...backend.services(), routing: held.routing }
      const principal = await organization(backend)
      const running = create(s, principal, {}, 'key-young-1')
      running.catch(() => {})
      await held.started
      clock.advance(60_000) // two routing calls at most: still running
      await discardUnfinishedInboxes(backend.services())
      held.release()
      if (backend.dialect === 'postgres') {
        const done = await running
        expect((await listInboxes(backend.services(), principal, { limit: 10 })).data.map((inbox) => inbox.id)).toEqual(
          [done.body.data.id],
        )
      } else {
        // One process serves SQLite: at its boot nothing is running, so the row was discarded.
        await expect(running).rejects.toThrow()
        expect((await listInboxes(backend.services(), principal, { limit: 10 })).data).toEqual([])
      }
    })

    test('the cursor secret is made once: every codec built on the database signs alike', async () => {
      const s = backend.services()
      const [one, two] = await Promise.all([
        CursorCodec.fromStore(s.store.inboxes),
        CursorCodec.fromStore(s.store.inboxes),
      ])
      const position = { at: '2026-01-01T00:00:00.000Z', id: 'inbox_x' }
      expect(one.encode('inboxes:org', position)).toBe(two.encode('inboxes:org', position))
      expect(two.decode('inboxes:org', one.encode('inboxes:org', position))).toEqual(position)
    })
  },
  { clock },
)
