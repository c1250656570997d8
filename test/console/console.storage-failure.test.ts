/**
 * A volume that refuses writes is a passing state for the console too: a form that must
 * write answers 503 with Retry-After and a page that says so, the log has the one
 * `storage_failing` line of the failing state and no error line with a stack per request.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { type ConsoleClient, setUp } from '../support/console-client.ts'
import { describeForBackends, startTestServer, type TestServer } from '../support/harness.ts'
import { sendMail, simpleMessage } from '../support/smtp.ts'

let server: TestServer
let operator: ConsoleClient
let organizationId: string

beforeAll(async () => {
  server = await startTestServer()
  ;({ client: operator, organizationId } = await setUp(server, { email: 'op@example.com' }))
})
afterAll(() => server.stop())

describeForBackends(
  ['sqlite'],
  'it turns the SQLite file read-only; a PostgreSQL that fails is test/multi/multi.faults.test.ts',
  'a read-only SQLite file in the console',
  () => {
    test('a read-only database: a console form answers 503 with Retry-After, logged once, no stack', async () => {
      const { sqlite } = server.app.storage!
      await operator.get(`/console/orgs/${organizationId}/keys`)
      const logsBefore = server.logs.length
      sqlite.exec('PRAGMA query_only = 1')
      try {
        for (const name of ['first', 'second']) {
          const page = await operator.post(`/console/orgs/${organizationId}/keys`, { name })
          expect(page.status).toBe(503)
          expect(page.headers.get('retry-after')).toBe('5')
          expect(page.html).toContain('storage')
        }
      } finally {
        sqlite.exec('PRAGMA query_only = 0')
      }
      const lines = server.logs.slice(logsBefore)
      expect(lines.filter((line) => line.event === 'storage_failing')).toHaveLength(1)
      expect(lines.filter((line) => line.level === 'error')).toEqual([])
      expect(lines.filter((line) => 'stack' in line)).toEqual([])
      // Writable again: the same form works.
      const made = await operator.post(`/console/orgs/${organizationId}/keys`, { name: 'third' })
      expect(made.status).toBe(303) // post/redirect/get: the new key is shown on the page it redirects to
      expect((await operator.get(made.location!)).html).toMatch(/value="ph_live_[0-9a-f_]+"/)
    })

    test('a read-only database: a message still opens; it stays unread rather than failing the page', async () => {
      const key = (await operator.post(`/console/orgs/${organizationId}/keys`, { name: 'reader' })).location!
      const apiKey = /value="(ph_live_[0-9a-f_]+)"/.exec((await operator.get(key)).html)![1]!
      const inbox = (await server.post('/v1/inboxes', apiKey)).body.data
      expect(
        (
          await sendMail(
            server.app.smtpPort,
            { to: [inbox.address] },
            simpleMessage({ to: inbox.address, subject: 'Read me' }),
          )
        ).data?.code,
      ).toBe(250)
      const [message] = (await server.get(`/v1/inboxes/${inbox.id}/messages`, apiKey)).body.data
      const { sqlite } = server.app.storage!
      sqlite.exec('PRAGMA query_only = 1')
      try {
        const page = await operator.get(`/console/orgs/${organizationId}/messages/${message.id}`)
        expect(page.status).toBe(200)
        expect(page.html).toContain('Read me')
      } finally {
        sqlite.exec('PRAGMA query_only = 0')
      }
      const list = await operator.get(`/console/orgs/${organizationId}/inboxes/${inbox.id}`)
      expect(list.html).toContain('data-unread="1"')
    })
  },
)
