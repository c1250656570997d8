/**
 * The /v1 routes of the served OpenAPI document and real ids to put in their paths, so the
 * shared auth and tenant-isolation suites cover a route added later without being touched.
 */
import { expect } from 'bun:test'
import type { TestServer } from './harness.ts'
import { sendMail } from './smtp.ts'

export interface DocumentedRoute {
  method: string
  path: string
  operationId: string
}

export async function documentedRoutes(server: TestServer): Promise<DocumentedRoute[]> {
  const routes: DocumentedRoute[] = []
  const document = (await server.get('/openapi/json')).body
  for (const [path, operations] of Object.entries<Record<string, { operationId: string }>>(document.paths)) {
    if (!path.startsWith('/v1')) continue
    for (const [method, operation] of Object.entries(operations))
      routes.push({ method: method.toUpperCase(), path, operationId: operation.operationId })
  }
  return routes
}

/** An inbox of `key`'s organisation holding one message with one attachment: the ids every id-taking route needs. */
export async function ownedResources(
  server: TestServer,
  key: string,
): Promise<Record<'inbox_id' | 'message_id' | 'attachment_id', string>> {
  const inbox = (await server.post('/v1/inboxes', key)).body.data
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
  expect((await sendMail(server.app.smtpPort, { to: [inbox.address] }, raw)).data?.code).toBe(250)
  const message = (await server.get(`/v1/inboxes/${inbox.id}/messages?limit=1&include=content`, key)).body.data[0]
  return { inbox_id: inbox.id, message_id: message.id, attachment_id: message.attachments[0].id }
}

/** A documented path (`{inbox_id}` or `:inbox_id`) with its parameters replaced from `ids`. */
export const fillPath = (path: string, ids: Record<string, string>) =>
  path.replace(/\{(\w+)\}|:(\w+)/g, (_, a?: string, b?: string) => ids[(a ?? b)!]!)
