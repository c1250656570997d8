/**
 * The published interface description: version 1.0.0 and the ten stable operation names,
 * each on its own path and method.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import type { TestServer } from '../support/harness.ts'
import { startRoomyServer } from '../messages/support.ts'

let server: TestServer
beforeAll(async () => {
  server = await startRoomyServer()
})
afterAll(() => server.stop())

test('/openapi/json has version 1.0.0 and exactly the ten operationIds, on their routes', async () => {
  const response = await server.get('/openapi/json')
  expect(response.status).toBe(200)
  expect(response.body.info.version).toBe('1.0.0')
  const operations: Record<string, string> = {}
  for (const [path, methods] of Object.entries(response.body.paths as Record<string, Record<string, { operationId?: string }>>)) {
    for (const [method, operation] of Object.entries(methods)) {
      if (operation.operationId) operations[operation.operationId] = `${method.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`
    }
  }
  expect(operations).toEqual({
    getHealth: 'GET /health',
    createInbox: 'POST /v1/inboxes',
    listInboxes: 'GET /v1/inboxes',
    getInbox: 'GET /v1/inboxes/:inbox_id',
    deleteInbox: 'DELETE /v1/inboxes/:inbox_id',
    listOrWaitForMessages: 'GET /v1/inboxes/:inbox_id/messages',
    getMessage: 'GET /v1/messages/:message_id',
    deleteMessage: 'DELETE /v1/messages/:message_id',
    downloadAttachment: 'GET /v1/attachments/:attachment_id',
    getUsage: 'GET /v1/usage',
  })
})

test('listOrWaitForMessages documents its query parameters and its 204', async () => {
  const operation = (await server.get('/openapi/json')).body.paths['/v1/inboxes/{inbox_id}/messages'].get
  const names = operation.parameters.filter((p: { in: string }) => p.in === 'query').map((p: { name: string }) => p.name)
  expect(names.sort()).toEqual(['cursor', 'include', 'limit', 'received_after', 'sender', 'sender_domain', 'subject', 'wait_seconds'])
  expect(Object.keys(operation.responses).sort()).toEqual(['200', '204', '401', '404', '422', '429', '500'])
})
