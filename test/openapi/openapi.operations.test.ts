/**
 * The published interface description (spec Versioning): version 1.0.0, the ten stable
 * operation names each on its own path and method, the documented statuses, the Bearer
 * scheme, and the /v1 operations the shared auth and isolation suites iterate over.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { TestServer } from '../support/harness.ts'
import { startRoomyServer } from '../support/messages.ts'

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
  for (const [path, methods] of Object.entries(
    response.body.paths as Record<string, Record<string, { operationId?: string }>>,
  )) {
    for (const [method, operation] of Object.entries(methods)) {
      if (operation.operationId)
        operations[operation.operationId] = `${method.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`
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
  const names = operation.parameters
    .filter((p: { in: string }) => p.in === 'query')
    .map((p: { name: string }) => p.name)
  expect(names.sort()).toEqual([
    'cursor',
    'include',
    'limit',
    'received_after',
    'sender',
    'sender_domain',
    'subject',
    'wait_seconds',
  ])
  expect(Object.keys(operation.responses).sort()).toEqual(['200', '204', '401', '404', '422', '429', '500']) // the interface's statuses, and the 500 every operation may answer
})

test('the OpenAPI document lists all nine /v1 operations', async () => {
  const routes: Array<{ method: string; path: string; operationId: string }> = []
  const document = (await server.get('/openapi/json')).body
  for (const [path, operations] of Object.entries<Record<string, { operationId: string }>>(document.paths)) {
    if (!path.startsWith('/v1')) continue
    for (const [method, operation] of Object.entries(operations))
      routes.push({ method: method.toUpperCase(), path, operationId: operation.operationId })
  }
  expect(routes.map((r) => r.operationId).sort()).toEqual(
    [
      'createInbox',
      'deleteInbox',
      'deleteMessage',
      'downloadAttachment',
      'getInbox',
      'getMessage',
      'getUsage',
      'listInboxes',
      'listOrWaitForMessages',
    ].sort(),
  )
})

describe('OpenAPI document', () => {
  test('served at /openapi/json without a key, version 1.0.0, stable operation names', async () => {
    const response = await server.get('/openapi/json')
    expect(response.status).toBe(200)
    const doc = response.body
    expect(doc.openapi).toMatch(/^3\./)
    expect(doc.info.version).toBe('1.0.0')
    const operations: Record<string, string> = {}
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      for (const [method, operation] of Object.entries<any>(item)) {
        if (operation?.operationId) operations[operation.operationId] = `${method.toUpperCase()} ${path}`
      }
    }
    expect(operations).toMatchObject({
      getHealth: 'GET /health',
      createInbox: 'POST /v1/inboxes',
      listInboxes: 'GET /v1/inboxes',
      getInbox: 'GET /v1/inboxes/{inbox_id}',
      deleteInbox: 'DELETE /v1/inboxes/{inbox_id}',
      getUsage: 'GET /v1/usage',
    })
  })

  test('documents the statuses and the Bearer scheme; health is open', async () => {
    const doc = (await server.get('/openapi/json')).body
    const create = doc.paths['/v1/inboxes'].post
    expect(Object.keys(create.responses)).toEqual(
      expect.arrayContaining(['201', '401', '409', '422', '429', '502', '503']),
    )
    expect(Object.keys(doc.paths['/v1/inboxes/{inbox_id}'].delete.responses)).toEqual(
      expect.arrayContaining(['204', '401', '404', '429']),
    )
    expect(Object.keys(doc.paths['/v1/inboxes'].get.responses)).toEqual(
      expect.arrayContaining(['200', '401', '422', '429']),
    )
    expect(doc.paths['/health'].get.security).toEqual([])
    expect(JSON.stringify(doc.components.securitySchemes)).toContain('bearer')
  })
})
