/**
 * What docs/api.md says of openapi-fetch with the generated types (pigeonhole-api.ts beside
 * it, written by test/openapi/openapi.types.test.ts): the listing's body is either page shape
 * whatever the query asked, so `text` needs the `in` check the documented snippet makes
 * (docs-snippet.ts, written from docs/api.md by the same test). It only has to type-check.
 */
import createClient from 'openapi-fetch'
import type { paths } from './pigeonhole-api.ts'

const pigeonhole = createClient<paths>({ baseUrl: 'http://localhost:3000' })

export async function withoutTheCheck(inboxId: string): Promise<unknown> {
  const { data } = await pigeonhole.GET('/v1/inboxes/{inbox_id}/messages', {
    params: { path: { inbox_id: inboxId }, query: { limit: 1, include: 'content' } },
  })
  const message = data?.data[0]
  // @ts-expect-error TS2339: OpenAPI cannot say that include=content answers the content page
  return message?.text
}

export async function summaries(inboxId: string): Promise<string[]> {
  const { data } = await pigeonhole.GET('/v1/inboxes/{inbox_id}/messages', {
    params: { path: { inbox_id: inboxId }, query: { limit: 10 } },
  })
  await pigeonhole.GET('/v1/inboxes/{inbox_id}/messages', {
    // @ts-expect-error include has one value only
    params: { path: { inbox_id: inboxId }, query: { include: 'everything' } },
  })
  return (data?.data ?? []).map((message) => message.subject)
}
