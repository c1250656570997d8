/**
 * The served OpenAPI document is valid OpenAPI 3.1 (the official schema and redocly's
 * recommended rules), names its schemas, types its parameters as what they mean, and
 * lists the error codes of each operation, while the wire keeps answering the spec's 422s.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { Validator } from '@seriousme/openapi-schema-validator'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startTestServer, type TestServer } from '../support/harness.ts'

// redocly is a Node program started per lint: seconds when other work holds the cores, past
// bun's 5 s default (which then kills it mid-answer). A deadline, not a speed.
setDefaultTimeout(30_000)

const ROOT = join(import.meta.dir, '..', '..')
let server: TestServer
let doc: any
beforeAll(async () => {
  server = await startTestServer({
    env: { BASE_URL: 'https://mail-api.example.org', FILES_URL: 'https://files.example.org' },
  })
  doc = (await server.get('/openapi/json')).body
})
afterAll(() => server.stop())

const operations = () => Object.values<any>(doc.paths).flatMap((item) => Object.values<any>(item))
const operation = (id: string) => operations().find((o) => o.operationId === id)

test('validates against the OpenAPI 3.1 schema', async () => {
  const result = await new Validator().validate(structuredClone(doc))
  expect(result.errors ?? []).toEqual([])
  expect(result.valid).toBe(true)
  expect(doc.openapi).toBe('3.1.0')
})

test('redocly lint finds no error and no warning', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'pigeonhole-lint-'))
  try {
    writeFileSync(join(dir, 'openapi.json'), JSON.stringify(doc))
    const lint = Bun.spawnSync(
      [
        join(ROOT, 'node_modules', '.bin', 'redocly'),
        'lint',
        '--config',
        join(ROOT, 'redocly.yaml'),
        '--format',
        'json',
        join(dir, 'openapi.json'),
      ],
      {
        cwd: dir,
        env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
      },
    )
    const report = JSON.parse(lint.stdout.toString())
    expect(report.problems.map((p: any) => `${p.severity} ${p.ruleId}: ${p.message}`)).toEqual([])
    expect(lint.exitCode).toBe(0)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('servers come from BASE_URL, and downloads also name FILES_URL', () => {
  expect(doc.servers.map((s: any) => s.url)).toEqual(['https://mail-api.example.org'])
  expect(operation('downloadAttachment').servers.map((s: any) => s.url)).toEqual([
    'https://files.example.org',
    'https://mail-api.example.org',
  ])
})

test('named component schemas, referenced from the operations', () => {
  expect(Object.keys(doc.components.schemas)).toEqual(
    expect.arrayContaining([
      'Inbox',
      'Message',
      'MessageSummary',
      'Attachment',
      'Usage',
      'Error',
      'InboxPage',
      'MessagePage',
    ]),
  )
  expect(operation('getInbox').responses['200'].content['application/json'].schema).toEqual({
    $ref: '#/components/schemas/InboxResponse',
  })
  expect(operation('listOrWaitForMessages').responses['200'].content['application/json'].schema).toEqual({
    $ref: '#/components/schemas/MessagePage',
  })
  expect(doc.components.schemas.Message.properties.attachments.items).toEqual({
    $ref: '#/components/schemas/Attachment',
  })
  // Header pairs are a 2020-12 tuple, not the draft-04 `items: [...]` form.
  expect(doc.components.schemas.Message.properties.headers.items).toMatchObject({
    type: 'array',
    prefixItems: [{ type: 'string' }, { type: 'string' }],
    items: false,
  })
  expect(JSON.stringify(doc)).not.toContain('additionalItems')
})

test('integer parameters are typed integer, with their ranges', () => {
  const params = Object.fromEntries(operation('listOrWaitForMessages').parameters.map((p: any) => [p.name, p.schema]))
  expect(params.wait_seconds).toEqual({ type: 'integer', minimum: 0, maximum: 180, default: 0 })
  expect(params.limit).toEqual({ type: 'integer', minimum: 1, maximum: 100, default: 50 })
  expect(operation('listInboxes').parameters.find((p: any) => p.name === 'limit').schema.type).toBe('integer')
})

test('204 answers have no content; the download is binary with its headers', () => {
  for (const id of ['deleteInbox', 'deleteMessage', 'listOrWaitForMessages'])
    expect(operation(id).responses['204'].content).toBeUndefined()
  const download = operation('downloadAttachment').responses['200']
  expect(download.content).toEqual({ 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } })
  expect(Object.keys(download.headers)).toEqual(expect.arrayContaining(['Content-Disposition', 'Cache-Control']))
})

describe('each operation lists its error codes', () => {
  const expected: Record<string, Record<string, string[]>> = {
    createInbox: {
      409: ['idempotency_key_reused', 'idempotency_in_progress', 'inbox_quota_exceeded', 'address_unavailable'],
      422: ['invalid_json', 'unknown_property', 'invalid_prefix', 'invalid_idempotency_key'],
      502: ['email_routing_unavailable'],
      503: [
        'address_generation_failed',
        'idempotency_unavailable',
        'email_routing_unavailable',
        'insufficient_storage',
        'storage_unavailable',
      ],
    },
    listInboxes: { 422: ['invalid_limit', 'invalid_cursor'] },
    getInbox: { 404: ['inbox_not_found'] },
    deleteInbox: {
      404: ['inbox_not_found'],
      502: ['email_routing_unavailable'],
      503: ['email_routing_unavailable', 'storage_unavailable'],
    },
    listOrWaitForMessages: {
      404: ['inbox_not_found'],
      422: [
        'invalid_wait_seconds',
        'invalid_limit',
        'invalid_cursor',
        'invalid_sender',
        'invalid_sender_domain',
        'invalid_received_after',
        'invalid_include',
        'invalid_subject',
      ],
      429: ['rate_limit_exceeded', 'long_poll_limit_exceeded'],
    },
    getMessage: { 404: ['message_not_found'] },
    deleteMessage: { 404: ['message_not_found'] },
    downloadAttachment: { 404: ['attachment_not_found'] },
    getUsage: {},
  }
  for (const [id, statuses] of Object.entries(expected)) {
    test(id, () => {
      const responses = operation(id).responses
      const codes = (status: string) => Object.keys(responses[status].content['application/json'].examples)
      for (const [status, list] of Object.entries(statuses)) expect(codes(status)).toEqual(list)
      expect(codes('401')).toEqual(['invalid_api_key'])
      expect(codes('500')).toEqual(['internal_error'])
      // A failing volume answers 503 where the interface lists a 503, else a 500 with a retry hint.
      if ('503' in statuses) expect(codes('503')).toContain('storage_unavailable')
      else expect(responses['503']).toBeUndefined()
      expect(Object.keys(responses['500'].headers)).toContain('Retry-After')
      if (id !== 'listOrWaitForMessages') expect(codes('429')).toEqual(['rate_limit_exceeded'])
      for (const status of Object.keys(statuses))
        expect(responses[status].description).toContain(`\`${statuses[status]![0]}\``)
    })
  }
})

test('the wire still answers the spec 422 codes for values the document types as integers', async () => {
  const { key } = await server.tenant()
  const inbox = (await server.post('/v1/inboxes', key)).body.data
  for (const [query, code] of [
    ['wait_seconds=1.5', 'invalid_wait_seconds'],
    ['wait_seconds=181', 'invalid_wait_seconds'],
    ['limit=abc', 'invalid_limit'],
    ['limit=0', 'invalid_limit'],
  ]) {
    const response = await server.get(`/v1/inboxes/${inbox.id}/messages?${query}`, key)
    expect(`${query} ${response.status} ${response.body.error.code}`).toBe(`${query} 422 ${code}`)
  }
  expect((await server.get('/v1/inboxes?limit=101', key)).body.error.code).toBe('invalid_limit')
})

test('private paths never appear', () => {
  expect(Object.keys(doc.paths).filter((path) => !path.startsWith('/v1/') && path !== '/health')).toEqual([])
})
