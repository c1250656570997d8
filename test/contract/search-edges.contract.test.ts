/**
 * Search at the edges, alike on SQLite and PostgreSQL: instants a database cannot write as
 * its own timestamps (year 0000, 9999-12-31T23:59:60Z, which is year 10000) and subjects
 * holding NUL or U+FFFF, which PostgreSQL stores escaped. Both modes answer what SQLite's
 * plain comparison answers (JavaScript's `includes` on the same text), and no log line
 * carries a statement or its parameters.
 */
import { expect, setDefaultTimeout, test } from 'bun:test'
import { ManualClock } from '../../src/clock.ts'
import type { Principal } from '../../src/core/api-keys/authenticate.ts'
import { CLI_ACTOR } from '../../src/core/audit/audit.ts'
import { admitRecipient } from '../../src/core/inbound/admission.ts'
import { receiveMessage } from '../../src/core/inbound/receive.ts'
import { createInbox } from '../../src/core/inboxes/create-inbox.ts'
import { LOCAL_TESTING_LIMITS } from '../../src/core/limits/organization-limits.ts'
import { type MessageQuery, parseRfc3339 } from '../../src/core/messages/list-messages.ts'
import { listOrWaitForMessages } from '../../src/core/messages/list-or-wait.ts'
import { searchOrganization } from '../../src/core/messages/search-organization.ts'
import { consolePrincipal, createOrganization } from '../../src/core/organizations/organizations.ts'
import { describeEachBackend } from '../support/backends.ts'
import { simpleMessage } from '../support/smtp.ts'

setDefaultTimeout(60_000)

const clock = new ManualClock('2026-03-10T12:00:00.000Z')

/** Subjects as received (an encoded word carries the NUL and the U+FFFF into the header). */
const SUBJECTS = ['a\0b', 'x\uffffy', 'plain 0 1', 'tail \uffff0', 'nul then one \u00001', 'nothing special']
const encoded = (subject: string) => `=?UTF-8?B?${Buffer.from(subject, 'utf8').toString('base64')}?=`

const NEEDLES = ['0', '1', '\0', '\uffff', '\uffff0', '\0b', 'a\0', '\u00001', 'y', '10', '(', '.']

describeEachBackend('search at the edges', (backend) => {
  const s = () => backend.services()
  let principal: Principal
  let inboxId: string

  const list = async (query: Partial<MessageQuery>) =>
    (await listOrWaitForMessages(s(), principal, {
      inboxId,
      query: { limit: 50, includeContent: false, ...query },
      waitSeconds: 0,
      signal: new AbortController().signal,
    }))!.data
      .map((m: { subject: string }) => m.subject)
      .sort()

  test('setup: one message per subject', async () => {
    const org = await createOrganization(s(), CLI_ACTOR, { name: 'Edges', preset: 'local' })
    principal = consolePrincipal(org.id, LOCAL_TESTING_LIMITS)
    const inbox = (await createInbox(s(), principal, { body: '', idempotencyKey: null })).body.data
    inboxId = inbox.id
    for (const subject of SUBJECTS) {
      clock.advance(1000)
      const reservation = await admitRecipient(s(), { address: inbox.address, isLive: () => true })
      await receiveMessage(s(), {
        raw: Buffer.from(simpleMessage({ to: inbox.address, subject: encoded(subject) })),
        envelopeFrom: 'a@sender.example',
        recipients: [reservation],
      })
    }
    expect(await list({})).toEqual([...SUBJECTS].sort())
  })

  test('a subject search finds exactly the subjects that contain the text, NUL and U+FFFF included', async () => {
    for (const needle of NEEDLES) {
      const expected = SUBJECTS.filter((subject) => subject.includes(needle)).sort()
      expect(await list({ subject: needle }), JSON.stringify(needle)).toEqual(expected)
      const searched = await searchOrganization(s(), principal, { subject: needle }, 50)
      expect(searched.data.map((m) => m.subject).sort(), JSON.stringify(needle)).toEqual(expected)
    }
  })

  test('received_after at year 0000 finds everything, at 9999-12-31T23:59:60Z nothing; the console range likewise', async () => {
    expect(await list({ receivedAfter: parseRfc3339('0000-01-01T00:00:00Z')! })).toEqual([...SUBJECTS].sort())
    expect(await list({ receivedAfter: parseRfc3339('9999-12-31T23:59:60Z')! })).toEqual([])
    expect(await list({ receivedAfter: parseRfc3339('9999-12-31T23:59:59.999999Z')! })).toEqual([])
    // The console's since=0000-01-01 and until=9999-12-31 (through the end of that day).
    const all = await searchOrganization(
      s(),
      principal,
      { receivedAfter: parseRfc3339('0000-01-01T00:00:00Z')!, receivedBefore: parseRfc3339('9999-12-31T23:59:60Z')! },
      50,
    )
    expect(all.data).toHaveLength(SUBJECTS.length)
    const none = await searchOrganization(s(), principal, { receivedBefore: parseRfc3339('0000-01-01T00:00:00Z')! }, 50)
    expect(none.data).toEqual([])
  })

  test('no log line holds a statement or its parameters', () => {
    const lines = backend.logs.map((line) => JSON.stringify(line))
    expect(lines.filter((line) => line.includes('Failed query') || line.includes('params:'))).toEqual([])
  })
})
