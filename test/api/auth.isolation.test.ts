/**
 * One auth and tenant-isolation suite run against every /v1 route of the OpenAPI
 * document, so a route added later is covered without touching this file.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { revokeApiKey } from '../../src/core/admin.ts'
import { errorCode, startTestServer, type TestServer, type Tenant } from '../support/harness.ts'
import { sendMail } from '../support/smtp.ts'

let server: TestServer
let owner: Tenant
let stranger: Tenant
let revokedKey: string
const ids: Record<string, string> = {}
const routes: Array<{ method: string; path: string; operationId: string }> = []

beforeAll(async () => {
  server = await startTestServer()
  owner = server.tenant('owner')
  stranger = server.tenant('stranger')
  revokedKey = server.extraKey(owner.organizationId)
  revokeApiKey(server.app.services.storage.db, server.app.services.clock, revokedKey)
  const inbox = (await server.post('/v1/inboxes', owner.key)).body.data
  const raw = [
    'From: a@example.com',
    `To: ${inbox.address}`,
    'Subject: s',
    'Content-Type: multipart/mixed; boundary=b',
    '',
    '--b',
    'Content-Type: text/plain',
    '',
    'hi',
    '--b',
    'Content-Type: text/plain',
    'Content-Disposition: attachment; filename=a.txt',
    '',
    'file',
    '--b--',
    '',
  ].join('\r\n')
  await sendMail(server.app.smtpPort, { to: [inbox.address] }, raw)
  const message = (await server.get(`/v1/inboxes/${inbox.id}/messages?limit=1&include=content`, owner.key)).body.data[0]
  ids.inbox_id = inbox.id
  ids.message_id = message.id
  ids.attachment_id = message.attachments[0].id
  const document = (await server.get('/openapi/json')).body
  for (const [path, operations] of Object.entries<Record<string, { operationId: string }>>(document.paths)) {
    if (!path.startsWith('/v1')) continue
    for (const [method, operation] of Object.entries(operations)) routes.push({ method: method.toUpperCase(), path, operationId: operation.operationId })
  }
})
afterAll(() => server.stop())

const fill = (path: string) => path.replace(/\{(\w+)\}|:(\w+)/g, (_, a?: string, b?: string) => ids[(a ?? b)!]!)

test('the OpenAPI document lists all nine /v1 operations', () => {
  expect(routes.map((r) => r.operationId).sort()).toEqual(
    ['createInbox', 'deleteInbox', 'deleteMessage', 'downloadAttachment', 'getInbox', 'getMessage', 'getUsage', 'listInboxes', 'listOrWaitForMessages'].sort(),
  )
})

describe('every /v1 route answers 401 invalid_api_key', () => {
  const badKeys: Array<[string, () => Record<string, string>]> = [
    ['no Authorization header', () => ({})],
    ['a non-Bearer scheme', () => ({ authorization: `Basic ${owner.key}` })],
    ['a malformed key', () => ({ authorization: 'Bearer ph_live_nothex_nothex' })],
    ['an uppercase-hex key', () => ({ authorization: `Bearer ${owner.key.toUpperCase().replace('PH_LIVE_', 'ph_live_')}` })],
    ['an unknown key', () => ({ authorization: `Bearer ph_live_${'0'.repeat(16)}_${'0'.repeat(48)}` })],
    ['a known id with the wrong secret', () => ({ authorization: `Bearer ${owner.key.slice(0, -1)}${owner.key.endsWith('0') ? '1' : '0'}` })],
    ['a revoked key', () => ({ authorization: `Bearer ${revokedKey}` })],
  ]
  for (const [label, headers] of badKeys) {
    test(label, async () => {
      for (const route of routes) {
        const response = await server.request(route.method, fill(route.path), { headers: headers() })
        expect(`${route.operationId} ${response.status}`).toBe(`${route.operationId} 401`)
        expect(errorCode(response)).toBe('invalid_api_key')
      }
    })
  }
})

test('ids of another organisation answer exactly like unknown ids on every id-taking route', async () => {
  const unknown = { inbox_id: `inbox_${'0'.repeat(32)}`, message_id: `msg_${'0'.repeat(32)}`, attachment_id: `att_${'0'.repeat(32)}` }
  let checked = 0
  for (const route of routes.filter((r) => r.path.includes('{') || r.path.includes(':'))) {
    if (route.method === 'POST') continue
    const foreign = await server.request(route.method, fill(route.path), { key: stranger.key })
    const unknownPath = route.path.replace(/\{(\w+)\}|:(\w+)/g, (_, a?: string, b?: string) => unknown[(a ?? b) as keyof typeof unknown])
    const missing = await server.request(route.method, unknownPath, { key: stranger.key })
    expect(foreign.status).toBe(404)
    expect([route.operationId, foreign.status, errorCode(foreign), foreign.body.error.message]).toEqual([route.operationId, missing.status, errorCode(missing), missing.body.error.message])
    checked++
  }
  expect(checked).toBe(6)
  // And nothing was deleted by the stranger's DELETEs.
  expect((await server.get(`/v1/messages/${ids.message_id}`, owner.key)).status).toBe(200)
  expect((await server.get(`/v1/inboxes/${ids.inbox_id}`, owner.key)).status).toBe(200)
})
