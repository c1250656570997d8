/**
 * A small client written against the types openapi-typescript generates from the served
 * document (types.ts beside it, written by test/openapi/openapi.types.test.ts). It only has to
 * type-check; the @ts-expect-error lines prove the types are specific, not `any`.
 */
import type { components, operations, paths } from './types.ts'

type Inbox = components['schemas']['Inbox']
type Message = components['schemas']['Message']
type ErrorBody = components['schemas']['Error']
type WaitQuery = NonNullable<operations['listOrWaitForMessages']['parameters']['query']>

export async function createInbox(base: string, key: string, prefix?: string): Promise<Inbox> {
  const body: paths['/v1/inboxes']['post']['requestBody'] = { content: { 'application/json': { prefix } } }
  const response = await fetch(`${base}/v1/inboxes`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}` },
    body: JSON.stringify(body?.content['application/json']),
  })
  if (response.status !== 201) throw new Error(((await response.json()) as ErrorBody).error.code)
  const created = (await response.json()) as operations['createInbox']['responses'][201]['content']['application/json']
  return created.data
}

/** The page type for the request made: MessageContentPage with `include: 'content'`, MessageSummaryPage otherwise. */
type PageFor<Q extends WaitQuery> = Q extends { include: 'content' }
  ? components['schemas']['MessageContentPage']
  : components['schemas']['MessageSummaryPage']

export async function waitForMessage<const Q extends WaitQuery>(
  base: string,
  key: string,
  inbox: Inbox,
  query: Q,
): Promise<PageFor<Q>['data'][number] | null> {
  const params = new URLSearchParams(Object.entries(query).map(([name, value]) => [name, String(value)]))
  const response = await fetch(`${base}/v1/inboxes/${inbox.id}/messages?${params}`, {
    headers: { authorization: `Bearer ${key}` },
  })
  if (response.status === 204) return null
  const page = (await response.json()) as PageFor<Q>
  return page.data[0] ?? null
}

/** With include=content the message's text compiles without an `in` check; without it, it does not. */
export async function welcomeText(base: string, key: string, inbox: Inbox): Promise<string | null> {
  const full = await waitForMessage(base, key, inbox, {
    wait_seconds: 30,
    limit: 1,
    include: 'content',
    subject: 'Welcome',
  })
  const summary = await waitForMessage(base, key, inbox, { limit: 1 })
  // @ts-expect-error a summary (no include) has no text
  const missing: unknown = summary?.text
  const either: components['schemas']['MessagePage'] = { data: [], next_cursor: null }
  return `${full?.text ?? ''}${summary?.subject ?? ''}${String(missing)}${either.data.length}`
}

export const exampleQuery: WaitQuery = { wait_seconds: 30, limit: 1, include: 'content', subject: 'Welcome' }
// @ts-expect-error wait_seconds is an integer in the document, not a string
export const wrongWait: WaitQuery = { wait_seconds: '30' }
// @ts-expect-error include has one value only
export const wrongInclude: WaitQuery = { include: 'everything' }

export function describe(message: Message, usage: components['schemas']['Usage']): string {
  const names = message.headers.map(([name]) => name)
  const sizes = message.attachments.map((attachment) => attachment.size_bytes + 0)
  // @ts-expect-error status is the literal 'active'
  const status: Inbox['status'] = 'deleted'
  return `${message.from.address} ${names.length} ${sizes.length} ${usage.emails.remaining} ${status}`
}
