/**
 * The console's listing on both storage backends: read state (per organisation, never set by
 * /v1), unread counts per inbox, the total and position of a page, Older and Newer cursors,
 * attachment marks, and every search-line term (positive, negated, given twice) answering
 * the same rows in SQLite and PostgreSQL.
 */
import { expect, setDefaultTimeout, test } from 'bun:test'
import { ManualClock } from '../../src/clock.ts'
import type { Principal } from '../../src/core/api-keys/authenticate.ts'
import { CLI_ACTOR } from '../../src/core/audit/audit.ts'
import { admitRecipient } from '../../src/core/inbound/admission.ts'
import { receiveMessage } from '../../src/core/inbound/receive.ts'
import { inboxStats } from '../../src/core/inboxes/inbox-stats.ts'
import { listInboxes } from '../../src/core/inboxes/list-inboxes.ts'
import { createInbox } from '../../src/core/inboxes/create-inbox.ts'
import { LOCAL_TESTING_LIMITS } from '../../src/core/limits/organization-limits.ts'
import { listForConsole, markMessagesRead, messagesOfInbox } from '../../src/core/messages/console-listing.ts'
import { getMessage } from '../../src/core/messages/get-message.ts'
import { parseSearchLine } from '../../src/core/messages/search-line.ts'
import { consolePrincipal, createOrganization } from '../../src/core/organizations/organizations.ts'
import type { Services } from '../../src/core/common/services.ts'
import { describeEachBackend } from '../support/backends.ts'
import { richMessage } from '../support/fixture-mail.ts'
import { simpleMessage } from '../support/smtp.ts'

setDefaultTimeout(60_000)

const clock = new ManualClock('2026-03-10T12:00:00.000Z')

describeEachBackend(
  'the console listing',
  (backend) => {
    const s = (): Services => backend.services()

    async function tenant(): Promise<Principal> {
      const org = await createOrganization(s(), CLI_ACTOR, {
        name: `Listing ${Math.random().toString(16).slice(2, 8)}`,
        preset: 'local',
      })
      return consolePrincipal(org.id, LOCAL_TESTING_LIMITS)
    }

    async function deliver(address: string, raw: string): Promise<string> {
      const reservation = await admitRecipient(s(), { address, isLive: () => true })
      const stored = await receiveMessage(s(), {
        raw: Buffer.from(raw),
        envelopeFrom: 'bounce@sender.example',
        recipients: [reservation],
      })
      clock.advance(1000)
      return stored[0]!.messageId
    }

    const page = (
      principal: Principal,
      inboxId: string,
      opts: { limit?: number; cursor?: string; before?: string; line?: string } = {},
    ) =>
      listForConsole(s(), principal, {
        inboxId,
        query: { limit: opts.limit ?? 50, includeContent: false, cursor: opts.cursor },
        before: opts.before,
        line: opts.line === undefined ? undefined : parseSearchLine(opts.line),
      })

    test('a page says where it stands; Older and Newer walk the list both ways', async () => {
      const principal = await tenant()
      const inbox = (await createInbox(s(), principal, { body: '', idempotencyKey: null })).body.data
      for (let i = 1; i <= 7; i++) await deliver(inbox.address, simpleMessage({ to: inbox.address, subject: `m${i}` }))
      const subjects = (p: { rows: Array<{ subject: string }> }) => p.rows.map((r) => r.subject)
      const first = await page(principal, inbox.id, { limit: 3 })
      expect([first.total, first.first, first.newer]).toEqual([7, 1, null])
      expect(subjects(first)).toEqual(['m7', 'm6', 'm5'])
      const second = await page(principal, inbox.id, { limit: 3, cursor: first.older! })
      expect([second.first, subjects(second)]).toEqual([4, ['m4', 'm3', 'm2']])
      const third = await page(principal, inbox.id, { limit: 3, cursor: second.older! })
      expect([third.first, subjects(third), third.older]).toEqual([7, ['m1'], null])
      // Back up: Newer from the last page gives the three just above it, then the first page.
      const back = await page(principal, inbox.id, { limit: 3, before: third.newer! })
      expect([back.first, subjects(back)]).toEqual([4, ['m4', 'm3', 'm2']])
      const top = await page(principal, inbox.id, { limit: 3, before: back.newer! })
      expect([top.first, subjects(top), top.newer]).toEqual([1, ['m7', 'm6', 'm5'], null])
      expect(top.older).not.toBeNull()
      // A Newer cursor is not an Older one.
      expect(page(principal, inbox.id, { limit: 3, cursor: third.newer! })).rejects.toMatchObject({
        code: 'invalid_cursor',
      })
    })

    test('read state: per organisation, counted per inbox, never set by /v1 reads', async () => {
      const principal = await tenant()
      const other = await tenant()
      const inbox = (await createInbox(s(), principal, { body: '', idempotencyKey: null })).body.data
      const a = await deliver(inbox.address, simpleMessage({ to: inbox.address, subject: 'a' }))
      const b = await deliver(inbox.address, richMessage(inbox.address))
      await getMessage(s(), principal, a) // the API's read
      expect((await inboxStats(s(), [inbox.id])).get(inbox.id)).toMatchObject({ messages: 2, unread: 2 })
      expect(await markMessagesRead(s(), other, [a, b], true)).toBe(0) // another organisation's ids are left alone
      expect(await markMessagesRead(s(), principal, [a], true)).toBe(1)
      expect(await markMessagesRead(s(), principal, [a], true)).toBe(0) // already read: its first time stays
      expect((await inboxStats(s(), [inbox.id])).get(inbox.id)).toMatchObject({ messages: 2, unread: 1 })
      const listed = await page(principal, inbox.id)
      // The plain list's count gives the inbox's unread count; a filtered one leaves it to inboxStats.
      expect(listed.inboxUnread).toBe(1)
      expect((await page(principal, inbox.id, { line: 'has:attachment' })).inboxUnread).toBeNull()
      expect(listed.rows.map((r) => [r.id, r.read, r.has_attachment])).toEqual([
        [b, false, true],
        [a, true, false],
      ])
      expect((await page(principal, inbox.id, { line: 'is:unread' })).rows.map((r) => r.id)).toEqual([b])
      expect((await page(principal, inbox.id, { line: 'is:read' })).rows.map((r) => r.id)).toEqual([a])
      expect((await page(principal, inbox.id, { line: '-is:unread' })).rows.map((r) => r.id)).toEqual([a])
      expect(await markMessagesRead(s(), principal, [a], false)).toBe(1)
      expect((await inboxStats(s(), [inbox.id])).get(inbox.id)).toMatchObject({ unread: 2 })
    })

    test('every search-line term answers the same rows', async () => {
      clock.set(Date.parse('2026-03-10T12:00:00.000Z')) // the first message at 12:00:00, the next each a second later
      const principal = await tenant()
      const inbox = (await createInbox(s(), principal, { body: '', idempotencyKey: null })).body.data
      const reset = await deliver(
        inbox.address,
        simpleMessage({
          from: 'Shop <billing@shop.example>',
          to: inbox.address,
          subject: 'Reset your password',
          text: 'Use the code 123456 to reset.',
        }),
      )
      const order = await deliver(
        inbox.address,
        simpleMessage({
          from: 'App <app@example.com>',
          to: inbox.address,
          subject: 'Order shipped',
          text: 'Your order has shipped. '.repeat(200),
        }),
      )
      const rich = await deliver(inbox.address, richMessage(inbox.address))
      const ids = async (line: string) => (await page(principal, inbox.id, { line })).rows.map((r) => r.id).sort()
      const sorted = (...list: string[]) => list.sort()
      expect(await ids('from:billing@shop.example')).toEqual([reset])
      expect(await ids('from:SHOP.example')).toEqual([reset])
      expect(await ids('from:@shop.example')).toEqual([reset])
      expect(await ids('-from:shop.example')).toEqual(sorted(order, rich))
      expect(await ids('subject:"order shipped"')).toEqual([order])
      expect(await ids('subject:order subject:shipped')).toEqual([order])
      expect(await ids('subject:order subject:password')).toEqual([])
      expect(await ids('"reset your password"')).toEqual([reset])
      expect(await ids('code 123456')).toEqual([reset])
      expect(await ids('-reset')).toEqual(sorted(order, rich))
      expect(await ids('has:attachment')).toEqual([rich])
      expect(await ids('-has:attachment')).toEqual(sorted(reset, order))
      expect(await ids(`to:${inbox.local_part}`)).toEqual(sorted(reset, order, rich))
      expect(await ids('-to:nobody')).toEqual(sorted(reset, order, rich))
      expect(await ids('larger:4k')).toEqual([order])
      expect(await ids('smaller:4k')).toEqual(sorted(reset, rich))
      expect(await ids('larger:1.5k smaller:4k')).toEqual([rich])
      expect(await ids('after:2026-03-10T12:00:01 -has:attachment')).toEqual([order])
      expect(await ids('before:2026-03-10T12:00:01')).toEqual([reset])
      expect(await ids('-before:2026-03-10T12:00:01')).toEqual(sorted(order, rich))
      expect(await ids('after:2999-01-01')).toEqual([])
      const counted = await page(principal, inbox.id, { line: '-has:attachment', limit: 1 })
      expect([counted.total, counted.first, counted.rows.length]).toEqual([2, 1, 1])
    })

    test('the inbox list filtered by a part of the address, any case, no wildcards, with paging', async () => {
      const principal = await tenant()
      const made = []
      for (const prefix of ['signup-one', 'signup-two', 'invoices', 'sign-x-up', 'signup-three']) {
        made.push(
          (await createInbox(s(), principal, { body: JSON.stringify({ prefix }), idempotencyKey: null })).body.data,
        )
        clock.advance(1000) // newest first by creation time
      }
      const addresses = async (addressContains: string, limit = 50, cursor?: string) =>
        listInboxes(s(), principal, { limit, cursor, addressContains })
      expect((await addresses('SIGNUP-')).data.map((i) => i.local_part)).toEqual([
        'signup-three',
        'signup-two',
        'signup-one',
      ])
      const first = await addresses('signup-', 2)
      expect(first.data.map((i) => i.local_part)).toEqual(['signup-three', 'signup-two'])
      expect((await addresses('signup-', 2, first.next_cursor!)).data.map((i) => i.local_part)).toEqual(['signup-one'])
      expect((await addresses('%')).data).toEqual([])
      expect((await addresses('_')).data).toEqual([])
      expect((await addresses('')).data).toHaveLength(5)
    })

    // Last: it moves the shared clock past the retention period.
    test("the bulk action's check: only this inbox's unexpired messages of the organisation, once each, in the order sent", async () => {
      const principal = await tenant()
      const other = await tenant()
      const [inbox, sibling] = [
        (await createInbox(s(), principal, { body: '', idempotencyKey: null })).body.data,
        (await createInbox(s(), principal, { body: '', idempotencyKey: null })).body.data,
      ]
      const theirs = (await createInbox(s(), other, { body: '', idempotencyKey: null })).body.data
      const a = await deliver(inbox.address, simpleMessage({ to: inbox.address, subject: 'a' }))
      const b = await deliver(inbox.address, simpleMessage({ to: inbox.address, subject: 'b' }))
      const nextDoor = await deliver(sibling.address, simpleMessage({ to: sibling.address, subject: 'sibling' }))
      const foreign = await deliver(theirs.address, simpleMessage({ to: theirs.address, subject: 'theirs' }))
      const unknown = `msg_${'0'.repeat(32)}`
      const sent = [b, nextDoor, foreign, unknown, "msg_' or 1=1 --", 'inbox_x', a, b, a]
      expect(await messagesOfInbox(s(), principal, inbox.id, sent)).toEqual([b, a])
      expect(await messagesOfInbox(s(), principal, sibling.id, sent)).toEqual([nextDoor])
      expect(await messagesOfInbox(s(), principal, inbox.id, [])).toEqual([])
      // Another organisation naming this inbox and its messages, or its own inbox with them: nothing.
      expect(await messagesOfInbox(s(), other, inbox.id, [a, b])).toEqual([])
      expect(await messagesOfInbox(s(), other, theirs.id, [a, b, foreign])).toEqual([foreign])
      // Expired messages are gone, as for every other read.
      clock.advance(s().config.limits.retentionDays * 86_400_000)
      expect(await messagesOfInbox(s(), principal, inbox.id, [a, b])).toEqual([])
    })
  },
  { clock },
)
