/** createInbox request bodies and prefixes (spec createInbox: Body, prefix, rule 5). */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestServer, type TestServer } from '../support/harness.ts'
import { expectError, expectInbox, GENERATED_LOCAL_PART } from '../support/shapes.ts'

let server: TestServer
beforeAll(async () => {
  server = await startTestServer()
})
afterAll(() => server.stop())

/** A fresh organisation per call keeps the 11-inbox quota and the rate limit out of the way. */
const key = async () => (await server.tenant()).key
const json = { 'content-type': 'application/json' }
const postRaw = async (rawBody: string | undefined, headers: Record<string, string> = json) =>
  server.request('POST', '/v1/inboxes', { key: await key(), rawBody, headers })

describe('accepted bodies', () => {
  test('no body at all gives a generated word-word-hex address', async () => {
    const response = await server.request('POST', '/v1/inboxes', { key: await key() })
    expect(response.status).toBe(201)
    expectInbox(response.body.data)
    expect(response.body.data.local_part).toMatch(GENERATED_LOCAL_PART)
    expect(Object.keys(response.body)).toEqual(['data'])
  })

  for (const [label, raw] of [
    ['an empty body', ''],
    ['a whitespace-only body', ' \n\t'],
    ['{}', '{}'],
    ['{} with surrounding whitespace', '  {}  \n'],
  ] as const) {
    test(`${label} is accepted`, async () => {
      const response = await postRaw(raw)
      expect(response.status).toBe(201)
      expect(response.body.data.local_part).toMatch(GENERATED_LOCAL_PART)
    })
  }

  test('the body is read as JSON whatever the content type says', async () => {
    const response = await postRaw('{"prefix":"plain-text-body"}', { 'content-type': 'text/plain' })
    expect(response.status).toBe(201)
    expect(response.body.data.local_part).toBe('plain-text-body')
  })

  test('generated local parts differ every time', async () => {
    const k = await key()
    const seen = new Set<string>()
    for (let i = 0; i < 5; i++) seen.add((await server.post('/v1/inboxes', k)).body.data.local_part)
    expect(seen.size).toBe(5)
  })
})

describe('bodies that are not a JSON object answer invalid_json', () => {
  for (const raw of [
    '[]',
    '[{"prefix":"abc"}]',
    '"x"',
    '1',
    '0',
    'null',
    'true',
    'false',
    '{',
    '{"prefix":',
    "{'prefix':'abc'}",
    '{"prefix":"abc"} trailing',
    'prefix=abc',
    '\u0000\u0001\u0002',
  ]) {
    test(JSON.stringify(raw), async () => {
      expectError(await postRaw(raw), 422, 'invalid_json')
    })
  }
})

describe('unknown properties answer unknown_property', () => {
  for (const body of [
    { name: 'x' },
    { prefix: 'valid-one', extra: 1 },
    { Prefix: 'abc' },
    { prefix: 'abc', __proto__x: 1 },
    { '': 1 },
  ]) {
    test(JSON.stringify(body), async () => {
      expectError(await postRaw(JSON.stringify(body)), 422, 'unknown_property')
    })
  }

  test('a __proto__ key is an unknown property, not a prototype trick', async () => {
    expectError(await postRaw('{"__proto__":{"prefix":"abc"}}'), 422, 'unknown_property')
  })
})

describe('prefix', () => {
  test('is normalised to lowercase', async () => {
    const response = await postRaw(JSON.stringify({ prefix: 'My-Test-Box' }))
    expect(response.status).toBe(201)
    expect(response.body.data.local_part).toBe('my-test-box')
    expect(response.body.data.address).toBe('my-test-box@inbox.test')
  })

  test('length 3 and 40 are accepted', async () => {
    for (const prefix of ['ab3', 'a'.repeat(39) + 'z']) {
      const response = await postRaw(JSON.stringify({ prefix }))
      expect(response.status).toBe(201)
      expect(response.body.data.local_part).toBe(prefix)
    }
  })

  test('uppercase of length 40 is accepted after normalisation', async () => {
    const response = await postRaw(JSON.stringify({ prefix: 'B'.repeat(40) }))
    expect(response.status).toBe(201)
    expect(response.body.data.local_part).toBe('b'.repeat(40))
  })

  test('digits, inner hyphens and repeated hyphens are fine', async () => {
    for (const prefix of ['123', 'a-b', 'a--b', '9-lives-0']) {
      const response = await postRaw(JSON.stringify({ prefix }))
      expect(`${prefix}: ${response.status}`).toBe(`${prefix}: 201`)
    }
  })

  const invalid: Array<[string, unknown]> = [
    ['length 2', 'ab'],
    ['length 1', 'a'],
    ['empty', ''],
    ['length 41', 'a'.repeat(41)],
    ['uppercase length 41', 'A'.repeat(41)],
    ['leading hyphen', '-abc'],
    ['trailing hyphen', 'abc-'],
    ['only hyphens', '---'],
    ['underscore', 'a_b_c'],
    ['dot', 'a.b.c'],
    ['plus tag', 'abc+tag'],
    ['at sign', 'abc@evil.test'],
    ['space', 'ab c'],
    ['leading space', ' abc'],
    ['non-ASCII letter', 'café'],
    ['Kelvin sign that lowercases to k', '\u212Aabc'],
    ['dotless I that lowercases to i with a dot', 'abc\u0130'],
    ['newline', 'abc\ndef'],
    ['number', 123],
    ['null', null],
    ['boolean', true],
    ['array', ['abc']],
    ['object', { value: 'abc' }],
  ]
  for (const [label, prefix] of invalid) {
    test(`${label} is invalid_prefix`, async () => {
      expectError(await postRaw(JSON.stringify({ prefix })), 422, 'invalid_prefix')
    })
  }

  const reserved = [
    'admin',
    'administrator',
    'abuse',
    'postmaster',
    'support',
    'security',
    'billing',
    'root',
    'hostmaster',
    'webmaster',
    'noreply',
    'no-reply',
    'donotreply',
    'contact',
    'pigeonhole',
  ]
  for (const name of reserved) {
    test(`reserved name ${name} is refused in any case`, async () => {
      expectError(await postRaw(JSON.stringify({ prefix: name })), 422, 'invalid_prefix')
      expectError(await postRaw(JSON.stringify({ prefix: name.toUpperCase() })), 422, 'invalid_prefix')
    })
  }

  test('names that merely contain a reserved word are allowed', async () => {
    for (const prefix of ['admin1', 'my-support', 'pigeonhole-ci']) {
      const response = await postRaw(JSON.stringify({ prefix }))
      expect(`${prefix}: ${response.status}`).toBe(`${prefix}: 201`)
    }
  })
})

test('body errors are checked after authentication: a bad key with a bad body is 401', async () => {
  const response = await server.request('POST', '/v1/inboxes', { key: 'ph_live_nope', rawBody: '[]' })
  expectError(response, 401, 'invalid_api_key')
})
