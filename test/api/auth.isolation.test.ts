/**
 * Tenant isolation (spec: ids of another organisation behave as unknown ids): one suite over
 * every id-taking /v1 route of the OpenAPI document, then each operation in detail. A
 * foreign id answers exactly like an unknown one, and a stranger's DELETE changes nothing.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { errorCode, type ApiResponse, type TestServer, type Tenant } from '../support/harness.ts'
import { richMessage } from '../support/fixture-mail.ts'
import { asApi, deliver, downloadAttachment, newInbox, startRoomyServer } from '../support/messages.ts'
import { documentedRoutes, fillPath, ownedResources, type DocumentedRoute } from '../support/routes.ts'
import { expectError } from '../support/shapes.ts'
import { simpleMessage } from '../support/smtp.ts'

let server: TestServer
let owner: Tenant
let stranger: Tenant
let ids: Record<string, string>
let routes: DocumentedRoute[]

beforeAll(async () => {
  server = await startRoomyServer()
  owner = await server.tenant('owner')
  stranger = await server.tenant('stranger')
  ids = await ownedResources(server, owner.key)
  routes = await documentedRoutes(server)
})
afterAll(() => server.stop())

test('ids of another organisation answer exactly like unknown ids on every id-taking route', async () => {
  const unknown = {
    inbox_id: `inbox_${'0'.repeat(32)}`,
    message_id: `msg_${'0'.repeat(32)}`,
    attachment_id: `att_${'0'.repeat(32)}`,
  }
  let checked = 0
  for (const route of routes.filter((r) => r.path.includes('{') || r.path.includes(':'))) {
    if (route.method === 'POST') continue
    const foreign = await server.request(route.method, fillPath(route.path, ids), { key: stranger.key })
    const unknownPath = route.path.replace(
      /\{(\w+)\}|:(\w+)/g,
      (_, a?: string, b?: string) => unknown[(a ?? b) as keyof typeof unknown],
    )
    const missing = await server.request(route.method, unknownPath, { key: stranger.key })
    expect(foreign.status).toBe(404)
    expect([route.operationId, foreign.status, errorCode(foreign), foreign.body.error.message]).toEqual([
      route.operationId,
      missing.status,
      errorCode(missing),
      missing.body.error.message,
    ])
    checked++
  }
  expect(checked).toBe(6)
  // And nothing was deleted by the stranger's DELETEs.
  expect((await server.get(`/v1/messages/${ids.message_id}`, owner.key)).status).toBe(200)
  expect((await server.get(`/v1/inboxes/${ids.inbox_id}`, owner.key)).status).toBe(200)
})

describe('getInbox and deleteInbox', () => {
  /** Status, code, message and headers other than the request id must not tell the two apart. */
  const fingerprint = (r: ApiResponse) => ({
    status: r.status,
    code: r.body?.error?.code,
    message: r.body?.error?.message,
    contentType: r.headers.get('content-type'),
  })

  test('getInbox and deleteInbox', async () => {
    const owner = await server.tenant()
    const stranger = await server.tenant()
    const { id } = (await server.post('/v1/inboxes', owner.key, { prefix: 'owned-box' })).body.data
    const unknown = 'inbox_' + '0'.repeat(32)
    for (const method of ['GET', 'DELETE']) {
      const foreign = await server.request(method, `/v1/inboxes/${id}`, { key: stranger.key })
      const missing = await server.request(method, `/v1/inboxes/${unknown}`, { key: stranger.key })
      expectError(foreign, 404, 'inbox_not_found')
      expect(fingerprint(foreign)).toEqual(fingerprint(missing))
    }
    // The stranger's DELETE changed nothing.
    expect((await server.get(`/v1/inboxes/${id}`, owner.key)).status).toBe(200)
    expect((await server.get('/v1/inboxes', stranger.key)).body.data).toEqual([])
  })

  test('another key of the owning organisation sees the inbox', async () => {
    const owner = await server.tenant()
    const { id } = (await server.post('/v1/inboxes', owner.key)).body.data
    const second = await server.extraKey(owner.organizationId)
    expect((await server.get(`/v1/inboxes/${id}`, second)).status).toBe(200)
    expect((await server.delete(`/v1/inboxes/${id}`, second)).status).toBe(204)
  })
})

describe('getMessage, deleteMessage and downloadAttachment', () => {
  test('another organisation’s message and attachment ids answer exactly like unknown ids', async () => {
    const tenant = await server.tenant()
    const inbox = await newInbox(server, tenant.key)
    const [id] = await deliver(server, inbox.address, richMessage(inbox.address))
    const attachmentId = (await server.get(`/v1/messages/${id}`, tenant.key)).body.data.attachments[1].id
    const stranger = await server.tenant('stranger')
    const unknownMessage = 'msg_' + '0'.repeat(32)
    const unknownAttachment = 'att_' + '0'.repeat(32)
    const shape = (r: ApiResponse) => ({ status: r.status, code: errorCode(r), message: r.body.error.message })

    for (const method of ['GET', 'DELETE']) {
      const foreign = await server.request(method, `/v1/messages/${id}`, { key: stranger.key })
      const unknown = await server.request(method, `/v1/messages/${unknownMessage}`, { key: stranger.key })
      expect(shape(foreign)).toEqual(shape(unknown))
      expect(shape(foreign)).toMatchObject({ status: 404, code: 'message_not_found' })
    }
    const foreign = await asApi(await downloadAttachment(server, attachmentId, stranger.key))
    const unknown = await asApi(await downloadAttachment(server, unknownAttachment, stranger.key))
    expect(shape(foreign)).toEqual(shape(unknown))
    expect(shape(foreign)).toMatchObject({ status: 404, code: 'attachment_not_found' })
    // The stranger's DELETE changed nothing.
    expect((await server.get(`/v1/messages/${id}`, tenant.key)).status).toBe(200)
    expect((await downloadAttachment(server, attachmentId, tenant.key)).status).toBe(200)
  })
})

describe('listOrWaitForMessages', () => {
  const fingerprint = (r: ApiResponse) => ({
    status: r.status,
    code: r.body?.error?.code,
    message: r.body?.error?.message,
  })

  test('listOrWaitForMessages, also with wait_seconds', async () => {
    const owner = await server.tenant()
    const stranger = await server.tenant()
    const { id, address } = (await server.post('/v1/inboxes', owner.key)).body.data
    await deliver(server, address, simpleMessage({ to: address }))
    const unknown = `inbox_${'0'.repeat(32)}`
    for (const query of ['', '?wait_seconds=1', '?limit=1&include=content']) {
      const foreign = await server.get(`/v1/inboxes/${id}/messages${query}`, stranger.key)
      const missing = await server.get(`/v1/inboxes/${unknown}/messages${query}`, stranger.key)
      expectError(foreign, 404, 'inbox_not_found')
      expect(fingerprint(foreign)).toEqual(fingerprint(missing))
    }
    expect((await server.get(`/v1/inboxes/${id}/messages`, owner.key)).body.data.length).toBe(1)
  })

  test('the foreign inbox answers exactly like an unknown one', async () => {
    const owner = await server.tenant()
    const stranger = await server.tenant()
    const foreignInbox = await newInbox(server, owner.key)
    for (let i = 0; i < 3; i++)
      await deliver(server, foreignInbox.address, simpleMessage({ to: foreignInbox.address, subject: `m${i}` }))
    const foreign = await server.get(`/v1/inboxes/${foreignInbox.id}/messages?`, stranger.key)
    const unknown = await server.get(`/v1/inboxes/${'inbox_' + 'f'.repeat(32)}/messages?`, stranger.key)
    expect(foreign.body.error.message).toBe(unknown.body.error.message)
    expect([foreign.status, foreign.body.error.code]).toEqual([unknown.status, unknown.body.error.code])
  })
})
