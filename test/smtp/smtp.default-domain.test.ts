/**
 * The out-of-the-box receiving domain works end to end, and its addresses pass the email
 * check common validators use (zod's default pattern; `@localhost` fails it).
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { FormatRegistry } from '@sinclair/typebox'
import { loadConfig } from '../../src/config.ts'
import { installFastFormats } from '../../src/http/formats.ts'
import { startTestServer, type TestServer } from '../support/harness.ts'
import { sendMail, simpleMessage } from '../support/smtp.ts'

const defaultDomain = loadConfig({}).receivingDomain
let server: TestServer
beforeAll(async () => {
  server = await startTestServer({ env: { RECEIVING_DOMAIN: defaultDomain } })
})
afterAll(() => server.stop())

test('the default domain is the reserved pigeonhole.test', () => {
  expect(defaultDomain).toBe('pigeonhole.test')
})

test('an inbox on the default domain is created, passes an email validator and receives mail', async () => {
  const tenant = await server.tenant()
  const created = await server.post('/v1/inboxes', tenant.key)
  expect(created.status).toBe(201)
  const address: string = created.body.data.address
  expect(address).toMatch(/^[a-z]+-[a-z]+-[0-9a-f]{16}@pigeonhole\.test$/)
  installFastFormats()
  const looksLikeEmail = FormatRegistry.Get('email')!
  expect(looksLikeEmail(address)).toBe(true)
  expect(looksLikeEmail('signup@localhost')).toBe(false)
  const sent = await sendMail(server.app.smtpPort, { to: [address] }, simpleMessage({ to: address }))
  expect(sent.data!.code).toBe(250)
  const listed = await server.get(`/v1/inboxes/${created.body.data.id}/messages`, tenant.key)
  expect(listed.body.data[0].to).toBe(address)
})
