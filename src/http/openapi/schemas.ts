/**
 * The OpenAPI document's component schemas, derived from the TypeBox models that also
 * validate responses, so the two never disagree. TypeBox writes tuples in the old
 * `items: [...]` form; OpenAPI 3.1 speaks JSON Schema 2020-12, so they are rewritten as
 * `prefixItems`, and every nested copy of a named model becomes a `$ref` to it (generated
 * clients then get named types instead of anonymous ones).
 */
import type { TSchema } from '@sinclair/typebox'
import { AttachmentModel, InboxModel, MessageModel, MessageSummaryModel, UsageModel } from '../../core/common/models.ts'
import { CreateInboxBodyModel, ErrorModel, HealthModel, page, single } from './envelopes.ts'

type Json = Record<string, unknown>

/** Plain JSON (TypeBox's symbol keys vanish) with tuples in the 2020-12 form. */
function toJsonSchema(schema: TSchema): Json {
  return modernise(JSON.parse(JSON.stringify(schema))) as Json
}

function modernise(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(modernise)
  if (node === null || typeof node !== 'object') return node
  const out: Json = {}
  for (const [key, value] of Object.entries(node)) out[key] = modernise(value)
  if (out.type === 'array' && Array.isArray(out.items)) {
    out.prefixItems = out.items
    out.items = false
    delete out.additionalItems
  }
  return out
}

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` })

/** Named models, in dependency order: a later one may contain an earlier one. */
const NAMED: Array<[string, TSchema]> = [
  ['Attachment', AttachmentModel],
  ['Inbox', InboxModel],
  ['MessageSummary', MessageSummaryModel],
  ['Message', MessageModel],
  ['Usage', UsageModel],
  ['Error', ErrorModel],
  ['Health', HealthModel],
  ['CreateInboxRequest', CreateInboxBodyModel],
]

/** Replaces every nested subschema that equals a named one by a reference to it. */
function withRefs(node: unknown, named: Map<string, string>, isRoot = true): unknown {
  if (!isRoot && node && typeof node === 'object') {
    const name = named.get(JSON.stringify(node))
    if (name) return ref(name)
  }
  if (Array.isArray(node)) return node.map((item) => withRefs(item, named, false))
  if (node === null || typeof node !== 'object') return node
  return Object.fromEntries(Object.entries(node).map(([key, value]) => [key, withRefs(value, named, false)]))
}

const descriptions: Record<string, string> = {
  Inbox: 'A receive-only address. Mail sent to `address` over SMTP becomes its messages.',
  Attachment: 'One attachment of a message. Its bytes are untrusted and never scanned.',
  MessageSummary: 'A message as listings show it without `include=content`.',
  Message: 'A message with all content fields.',
  Usage: 'The limits of the calling organisation and what it used this UTC month.',
  Error: 'Every error answer. Branch on `error.code`; `request_id` repeats the `X-Request-Id` header.',
  Health: 'Liveness answer.',
  CreateInboxRequest: 'Optional body of createInbox. `prefix` is lowercased, then checked.',
  InboxPage: 'One page of inboxes, newest first. Pass `next_cursor` back as `cursor`; null on the last page.',
  MessageSummaryPage: 'The page listOrWaitForMessages answers without `include`: message summaries, newest first.',
  MessageContentPage:
    'The page listOrWaitForMessages answers with `include=content` ' +
    '(and `limit=1`): at most one message, with all content fields.',
  MessagePage:
    'One page of messages, newest first: a `MessageSummaryPage` without `include`, a ' +
    '`MessageContentPage` with `include=content`. OpenAPI cannot tie the shape to the query, ' +
    'so a generated client sees either: an `in` check on `text` picks the content one.',
  InboxResponse: 'A single inbox.',
  MessageResponse: 'A single message with all content fields.',
}

/** A page whose items are full messages: with `include=content`, `limit` must be 1. */
function messageContentPage(): Json {
  const summaries = toJsonSchema(page(MessageSummaryModel))
  return {
    ...summaries,
    properties: { ...(summaries.properties as Json), data: { type: 'array', maxItems: 1, items: ref('Message') } },
  }
}

/** All component schemas: the named models plus the page and single-resource wrappers. */
export function componentSchemas(): Record<string, Json> {
  const plain = new Map(NAMED.map(([name, schema]) => [name, toJsonSchema(schema)]))
  const wrappers: Array<[string, Json]> = [
    ['InboxPage', toJsonSchema(page(InboxModel))],
    // One body shape per `include`, named, so a client can name the one it asked for;
    // MessagePage is either (a generated client narrows to the content one with an `in` check).
    ['MessageSummaryPage', toJsonSchema(page(MessageSummaryModel))],
    ['MessageContentPage', messageContentPage()],
    ['MessagePage', { anyOf: [ref('MessageSummaryPage'), ref('MessageContentPage')] }],
    ['InboxResponse', toJsonSchema(single(InboxModel))],
    ['MessageResponse', toJsonSchema(single(MessageModel))],
  ]
  const byShape = new Map<string, string>()
  const schemas: Record<string, Json> = {}
  for (const [name, schema] of [...plain.entries(), ...wrappers]) {
    schemas[name] = { ...(withRefs(schema, byShape) as Json), description: descriptions[name] }
    byShape.set(JSON.stringify(schema), name)
  }
  return schemas
}
