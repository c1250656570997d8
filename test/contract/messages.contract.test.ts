/**
 * The message store's contract: core's message verbs (list, get, source, delete, attachment
 * download, usage, the console's organisation search) behave alike on SQLite and PostgreSQL.
 * Mail is seeded through core's inbound verbs (admitRecipient, receiveMessage), never by
 * inserting rows; time is a ManualClock, so ties, expiry and months are exact.
 */
import { expect, setDefaultTimeout, test } from 'bun:test'
import { ManualClock } from '../../src/clock.ts'
import { downloadAttachment } from '../../src/core/attachments/download-attachment.ts'
import type { Principal } from '../../src/core/api-keys/authenticate.ts'
import { CLI_ACTOR } from '../../src/core/audit/audit.ts'
import { admitRecipient } from '../../src/core/inbound/admission.ts'
import { receiveMessage } from '../../src/core/inbound/receive.ts'
import { createInbox } from '../../src/core/inboxes/create-inbox.ts'
import { deleteInbox } from '../../src/core/inboxes/delete-inbox.ts'
import { LOCAL_TESTING_LIMITS } from '../../src/core/limits/organization-limits.ts'
import { deleteMessage, getMessage, getMessageSource } from '../../src/core/messages/get-message.ts'
import type { MessageQuery } from '../../src/core/messages/list-messages.ts'
import { listOrWaitForMessages } from '../../src/core/messages/list-or-wait.ts'
import { listSummariesAsJson } from '../../src/core/messages/page-cache.ts'
import { searchOrganization } from '../../src/core/messages/search-organization.ts'
import type { MessageSummary } from '../../src/core/common/models.ts'
import { consolePrincipal, createOrganization } from '../../src/core/organizations/organizations.ts'
import type { Services } from '../../src/core/common/services.ts'
import { sha256Hex } from '../../src/core/common/stored-bytes.ts'
import { getUsage } from '../../src/core/limits/usage.ts'
import { describeEachBackend } from '../support/backends.ts'
import { BINARY, PDF_NAME, richMessage } from '../support/fixture-mail.ts'
import { simpleMessage } from '../support/smtp.ts'

setDefaultTimeout(60_000)

const clock = new ManualClock('2026-01-31T23:50:00.000Z')
const START = clock.now()

describeEachBackend(
  'the message store',
  (backend) => {
    const s = (): Services => backend.services()

    /** A fresh organisation (so tests never see each other's mail) and its principal. */
    async function tenant(): Promise<Principal> {
      const org = await createOrganization(s(), CLI_ACTOR, {
        name: `Contract ${Math.random().toString(16).slice(2, 8)}`,
        preset: 'local',
      })
      return consolePrincipal(org.id, LOCAL_TESTING_LIMITS)
    }

    const newInbox = async (principal: Principal) =>
      (await createInbox(s(), principal, { body: '', idempotencyKey: null })).body.data

    /** One message to `address`, through RCPT admission and the inbound store, as SMTP does it. */
    async function deliver(address: string, raw: string): Promise<string> {
      const reservation = await admitRecipient(s(), { address, isLive: () => true })
      const stored = await receiveMessage(s(), {
        raw: Buffer.from(raw),
        envelopeFrom: 'bounce@sender.example',
        recipients: [reservation],
      })
      return stored[0]!.messageId
    }

    const list = async (principal: Principal, inboxId: string, query: Partial<MessageQuery> = {}) =>
      (await listOrWaitForMessages(s(), principal, {
        inboxId,
        query: { limit: 50, includeContent: false, ...query },
        waitSeconds: 0,
        signal: new AbortController().signal,
      }))!

    const ids = (page: { data: Array<{ id: string }> }) => page.data.map((m) => m.id)

    const refusal = async (work: Promise<unknown>) => {
      try {
        await work
      } catch (error) {
        return (error as { code?: string }).code
      }
      throw new Error('expected a refusal')
    }

    test('a listing is newest first, also when the clock stands still', async () => {
      clock.set(START)
      const principal = await tenant()
      const inbox = await newInbox(principal)
      const first = await deliver(inbox.address, simpleMessage({ to: inbox.address, subject: 'one' }))
      clock.advance(1000)
      // Three at the same instant: each is a millisecond after the inbox's newest, so they keep their order.
      const same = [
        await deliver(inbox.address, simpleMessage({ to: inbox.address, subject: 'two' })),
        await deliver(inbox.address, simpleMessage({ to: inbox.address, subject: 'three' })),
        await deliver(inbox.address, simpleMessage({ to: inbox.address, subject: 'four' })),
      ]
      const page = await list(principal, inbox.id)
      expect(ids(page)).toEqual([...same].reverse().concat(first))
      expect(page.data.map((m) => (m as MessageSummary).received_at)).toEqual([
        '2026-01-31T23:50:01.002Z',
        '2026-01-31T23:50:01.001Z',
        '2026-01-31T23:50:01.000Z',
        '2026-01-31T23:50:00.000Z',
      ])
      expect(page.next_cursor).toBeNull()
      const summary = page.data.at(-1) as MessageSummary
      expect(summary).toMatchObject({
        id: first,
        inbox_id: inbox.id,
        to: inbox.address,
        subject: 'one',
        from: { name: 'Sender', address: 'sender@example.com' },
      })
      expect(summary.received_at).toBe('2026-01-31T23:50:00.000Z')
      expect(Object.keys(summary).sort()).toEqual([
        'expires_at',
        'from',
        'id',
        'inbox_id',
        'preview',
        'received_at',
        'size_bytes',
        'subject',
        'to',
      ])
      // include=content pages one full message at a time, with the same order and cursors.
      const newest = await list(principal, inbox.id, { limit: 1, includeContent: true })
      expect(ids(newest)).toEqual([same[2]!])
      expect((newest.data[0] as { headers?: unknown }).headers).toBeArray()
      const next = await list(principal, inbox.id, { limit: 1, includeContent: true, cursor: newest.next_cursor! })
      expect(ids(next)).toEqual([same[1]!])
      expect(next.next_cursor).not.toBeNull()
      // The API's cached listing answers the same page.
      expect(
        JSON.parse(
          await listSummariesAsJson(s(), principal, { inboxId: inbox.id, query: { limit: 50, includeContent: false } }),
        ),
      ).toEqual(page)
    })

    test('cursors walk every page once, ties included, and are refused for another inbox', async () => {
      clock.set(START)
      const principal = await tenant()
      const inbox = await newInbox(principal)
      const other = await newInbox(principal)
      const sent: string[] = []
      for (let i = 0; i < 7; i++) {
        if (i % 3 === 0) clock.advance(10) // groups of equal received_at, so pages split ties
        sent.push(await deliver(inbox.address, simpleMessage({ to: inbox.address, subject: `m${i}` })))
      }
      const seen: string[] = []
      let cursor: string | undefined
      let pages = 0
      do {
        const page = await list(principal, inbox.id, { limit: 2, cursor })
        expect(page.data.length).toBeLessThanOrEqual(2)
        seen.push(...ids(page))
        cursor = page.next_cursor ?? undefined
        pages++
      } while (cursor)
      expect(pages).toBe(4)
      expect(seen).toEqual(ids(await list(principal, inbox.id)))
      expect([...seen].sort()).toEqual([...sent].sort())
      const second = (await list(principal, inbox.id, { limit: 2 })).next_cursor!
      expect(await refusal(list(principal, other.id, { limit: 2, cursor: second }))).toBe('invalid_cursor')
      expect(await refusal(list(principal, inbox.id, { limit: 2, cursor: `${second}x` }))).toBe('invalid_cursor')
    })

    test('every filter of the list, alone and ANDed; user input is never a wildcard', async () => {
      clock.set(START)
      const principal = await tenant()
      const inbox = await newInbox(principal)
      const to = inbox.address
      const welcome = await deliver(
        to,
        simpleMessage({
          to,
          from: 'Shop <Orders@Shop.Example>',
          subject: 'Welcome to 100% Shop',
          text: 'Verify your account',
        }),
      )
      clock.advance(60_000)
      const reset = await deliver(
        to,
        simpleMessage({ to, from: 'Shop <help@shop.example>', subject: 'Password reset', text: 'Your code is ZX-81' }),
      )
      clock.advance(60_000)
      const rich = await deliver(to, richMessage(to))
      const at = (offset: number) => START + offset

      expect(ids(await list(principal, inbox.id, { subject: 'RESET' }))).toEqual([reset])
      expect(ids(await list(principal, inbox.id, { subject: '100%' }))).toEqual([welcome])
      expect(ids(await list(principal, inbox.id, { subject: '%' }))).toEqual([welcome])
      expect(ids(await list(principal, inbox.id, { subject: 'w_lcome' }))).toEqual([])
      // A NUL is a character no stored value holds (PostgreSQL text cannot): no match, no error.
      expect(ids(await list(principal, inbox.id, { subject: 'shop\u0000' }))).toEqual([])
      expect(ids(await list(principal, inbox.id, { sender: '\u0000' }))).toEqual([])
      expect(ids(await list(principal, inbox.id, { limit: 1, includeContent: true, subject: '\u0000' }))).toEqual([])
      expect(ids(await list(principal, inbox.id, { sender: 'orders@shop.example' }))).toEqual([welcome])
      expect(ids(await list(principal, inbox.id, { sender: 'shop.example' }))).toEqual([])
      expect(ids(await list(principal, inbox.id, { senderDomain: 'SHOP.example' }))).toEqual([reset, welcome])
      expect(ids(await list(principal, inbox.id, { receivedAfter: at(60_000) }))).toEqual([rich, reset])
      expect(ids(await list(principal, inbox.id, { receivedAfter: at(60_001) }))).toEqual([rich])
      expect(ids(await list(principal, inbox.id, { receivedBefore: at(60_000) }))).toEqual([welcome])
      expect(ids(await list(principal, inbox.id, { receivedAfter: at(1), receivedBefore: at(120_000) }))).toEqual([
        reset,
      ])
      // The console's filters: text is folded by the console before it reaches the verb.
      expect(ids(await list(principal, inbox.id, { text: 'zx-81' }))).toEqual([reset])
      expect(ids(await list(principal, inbox.id, { text: 'verify your' }))).toEqual([welcome])
      expect(ids(await list(principal, inbox.id, { text: 'z_-81' }))).toEqual([])
      expect(ids(await list(principal, inbox.id, { hasAttachment: true }))).toEqual([rich])
      expect(ids(await list(principal, inbox.id, { recipient: to.slice(0, 6).toUpperCase() }))).toEqual([
        rich,
        reset,
        welcome,
      ])
      expect(ids(await list(principal, inbox.id, { recipient: 'nobody' }))).toEqual([])
      expect(ids(await list(principal, inbox.id, { senderDomain: 'shop.example', subject: 'welcome' }))).toEqual([
        welcome,
      ])
      expect(ids(await list(principal, inbox.id, { senderDomain: 'shop.example', hasAttachment: true }))).toEqual([])
    })

    test('include=content, getMessage, the source and the attachments: every field, the bytes and their hashes', async () => {
      clock.set(START)
      const principal = await tenant()
      const inbox = await newInbox(principal)
      const raw = richMessage(inbox.address)
      const id = await deliver(inbox.address, raw)
      const message = await getMessage(s(), principal, id)
      expect(message).toMatchObject({
        id,
        inbox_id: inbox.id,
        subject: 'Grüße aus Zürich',
        internet_message_id: '<abc.123@zurich.example>',
        preview: 'Hallo Zürich, your code is 4711.',
      })
      expect(message.text).toContain('Hallo Zürich, your code is 4711.')
      expect(message.html).toContain('<img src="cid:logo@zurich">')
      expect(message.headers.filter(([name]) => name.toLowerCase() === 'x-dup').map(([, value]) => value)).toEqual([
        'one',
        'two',
      ])
      expect(message.attachments.map((a) => [a.filename, a.disposition, a.content_id])).toEqual([
        ['logo.png', 'inline', 'logo@zurich'],
        [PDF_NAME, 'attachment', null],
      ])
      const pdf = message.attachments[1]!
      expect(pdf.download_url).toBe(`${s().publicUrls().filesUrl}/v1/attachments/${pdf.id}`)
      // include=content (limit=1) answers the same message.
      expect((await list(principal, inbox.id, { limit: 1, includeContent: true })).data).toEqual([message])

      const source = await getMessageSource(s(), principal, id)
      expect(source.toString()).toBe(raw)
      expect(sha256Hex(source)).toBe(sha256Hex(Buffer.from(raw)))
      const file = await downloadAttachment(s(), principal, pdf.id)
      expect(file).toMatchObject({ filename: PDF_NAME, contentType: 'application/pdf' })
      expect(Buffer.compare(file.content, BINARY)).toBe(0)

      // Another organisation sees none of it; an id that cannot be one is the same 404.
      const stranger = await tenant()
      expect(await refusal(getMessage(s(), stranger, id))).toBe('message_not_found')
      expect(await refusal(getMessageSource(s(), stranger, id))).toBe('message_not_found')
      expect(await refusal(downloadAttachment(s(), stranger, pdf.id))).toBe('attachment_not_found')
      expect(await refusal(getMessage(s(), principal, 'msg_nope'))).toBe('message_not_found')

      // Expired is gone everywhere, before the sweeper runs.
      clock.set(Date.parse(message.expires_at))
      expect(await refusal(getMessage(s(), principal, id))).toBe('message_not_found')
      expect(await refusal(getMessageSource(s(), principal, id))).toBe('message_not_found')
      expect(await refusal(downloadAttachment(s(), principal, pdf.id))).toBe('attachment_not_found')
      expect(await refusal(deleteMessage(s(), principal, id))).toBe('message_not_found')
      expect((await list(principal, inbox.id)).data).toEqual([])
    })

    test('deleteMessage removes the message and its parts once; concurrent deletes: exactly one wins; usage keeps its count', async () => {
      clock.set(START)
      const principal = await tenant()
      const inbox = await newInbox(principal)
      const kept = await deliver(inbox.address, simpleMessage({ to: inbox.address, subject: 'kept' }))
      const id = await deliver(inbox.address, richMessage(inbox.address))
      const attachment = (await getMessage(s(), principal, id)).attachments[1]!.id
      expect(await refusal(deleteMessage(s(), await tenant(), id))).toBe('message_not_found')
      const outcomes = await Promise.allSettled([
        deleteMessage(s(), principal, id),
        deleteMessage(s(), principal, id),
        deleteMessage(s(), principal, id),
      ])
      expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1)
      for (const o of outcomes) if (o.status === 'rejected') expect(o.reason.code).toBe('message_not_found')
      expect(await refusal(getMessage(s(), principal, id))).toBe('message_not_found')
      expect(await refusal(getMessageSource(s(), principal, id))).toBe('message_not_found')
      expect(await refusal(downloadAttachment(s(), principal, attachment))).toBe('attachment_not_found')
      expect(ids(await list(principal, inbox.id))).toEqual([kept])
      expect((await getUsage(s(), principal)).emails.received).toBe(2)
    })

    test('a waiting listing answers with the message stored while it waits; a cached page is dropped by a delete', async () => {
      clock.set(START)
      const principal = await tenant()
      const inbox = await newInbox(principal)
      const waiting = listOrWaitForMessages(s(), principal, {
        inboxId: inbox.id,
        query: { limit: 50, includeContent: false },
        waitSeconds: 10,
        signal: new AbortController().signal,
      })
      await Bun.sleep(50)
      const id = await deliver(inbox.address, simpleMessage({ to: inbox.address, subject: 'awaited' }))
      expect(ids((await waiting)!)).toEqual([id])

      const cached = () =>
        listSummariesAsJson(s(), principal, { inboxId: inbox.id, query: { limit: 50, includeContent: false } })
      expect(JSON.parse(await cached()).data.map((m: MessageSummary) => m.id)).toEqual([id])
      await deleteMessage(s(), principal, id)
      expect(JSON.parse(await cached()).data).toEqual([])
    })

    test('getUsage counts per UTC calendar month and only active inboxes', async () => {
      clock.set('2026-01-31T23:59:59.000Z')
      const principal = await tenant()
      const inbox = await newInbox(principal)
      const gone = await newInbox(principal)
      await deliver(inbox.address, simpleMessage({ to: inbox.address }))
      await deliver(gone.address, simpleMessage({ to: gone.address }))
      await deleteInbox(s(), principal, gone.id)
      const january = await getUsage(s(), principal)
      expect(january.period).toEqual({ starts_at: '2026-01-01T00:00:00.000Z', ends_at: '2026-02-01T00:00:00.000Z' })
      expect(january.inboxes).toEqual({
        active: 1,
        limit: LOCAL_TESTING_LIMITS.activeInboxes,
        remaining: LOCAL_TESTING_LIMITS.activeInboxes - 1,
      })
      expect(january.emails.received).toBe(2)
      clock.set('2026-02-01T00:00:00.000Z')
      await deliver(inbox.address, simpleMessage({ to: inbox.address }))
      const february = await getUsage(s(), principal)
      expect(february.period.starts_at).toBe('2026-02-01T00:00:00.000Z')
      expect(february.emails).toEqual({
        received: 1,
        limit: LOCAL_TESTING_LIMITS.monthlyEmails,
        remaining: LOCAL_TESTING_LIMITS.monthlyEmails - 1,
      })
      // Another organisation's usage is its own.
      expect((await getUsage(s(), await tenant())).emails.received).toBe(0)
    })

    test("the console's search spans the organisation's active inboxes, with every filter and its own cursor", async () => {
      clock.set(START)
      const principal = await tenant()
      const [a, b, gone] = [await newInbox(principal), await newInbox(principal), await newInbox(principal)]
      const inA = await deliver(
        a.address,
        simpleMessage({ to: a.address, from: 'x@shop.example', subject: 'Order shipped', text: 'tracking code ZX' }),
      )
      clock.advance(1000)
      const inB = await deliver(b.address, richMessage(b.address))
      clock.advance(1000)
      await deliver(gone.address, simpleMessage({ to: gone.address, from: 'x@shop.example', subject: 'Order lost' }))
      await deleteInbox(s(), principal, gone.id)
      const stranger = await tenant()
      const theirs = await newInbox(stranger)
      await deliver(
        theirs.address,
        simpleMessage({ to: theirs.address, from: 'x@shop.example', subject: 'Order elsewhere' }),
      )

      const search = async (query: Parameters<typeof searchOrganization>[2], limit = 50, who = principal) =>
        searchOrganization(s(), who, query, limit)
      expect(ids(await search({ subject: 'ORDER' }))).toEqual([inA])
      expect(ids(await search({ senderDomain: 'shop.example' }))).toEqual([inA])
      expect(ids(await search({ sender: 'team@zurich.example' }))).toEqual([inB])
      expect(ids(await search({ text: 'tracking code' }))).toEqual([inA])
      expect(ids(await search({ text: 'tr_cking' }))).toEqual([])
      expect(ids(await search({ recipient: '\u0000' }))).toEqual([])
      expect(ids(await search({ hasAttachment: true }))).toEqual([inB])
      expect(ids(await search({ recipient: b.address.slice(0, 8).toUpperCase() }))).toEqual([inB])
      expect(ids(await search({ receivedAfter: START + 1 }))).toEqual([inB])
      expect(ids(await search({ receivedBefore: START + 1000 }))).toEqual([inA])
      expect(ids(await search({ senderDomain: 'shop.example', hasAttachment: true }))).toEqual([])

      const first = await search({ receivedAfter: START }, 1)
      expect(ids(first)).toEqual([inB])
      const second = await search({ receivedAfter: START, cursor: first.next_cursor! }, 1)
      expect(ids(second)).toEqual([inA])
      expect(second.next_cursor).toBeNull()
      expect(await refusal(search({ receivedAfter: START, cursor: first.next_cursor! }, 1, stranger))).toBe(
        'invalid_cursor',
      )

      // Two inboxes receiving at the same instant tie on received_at: the id decides, and the cursor splits the tie.
      clock.advance(60_000)
      const tied = [
        await deliver(a.address, simpleMessage({ to: a.address, subject: 'tie' })),
        await deliver(b.address, simpleMessage({ to: b.address, subject: 'tie' })),
      ]
      const byId = [...tied].sort().reverse()
      const top = await search({ subject: 'tie' }, 1)
      expect(ids(top)).toEqual([byId[0]!])
      expect(ids(await search({ subject: 'tie', cursor: top.next_cursor! }, 1))).toEqual([byId[1]!])
    })
  },
  { clock },
)
