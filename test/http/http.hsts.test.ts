/**
 * Strict-Transport-Security when BASE_URL is https: on API answers, errors and refusals, and
 * on console pages and redirects; never when BASE_URL is http.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestServer, type TestServer } from '../support/harness.ts'

const HEADER = 'strict-transport-security'

async function headerOn(server: TestServer, path: string, init: RequestInit = {}) {
  const response = await fetch(`${server.url}${path}`, { redirect: 'manual', ...init })
  await response.arrayBuffer()
  return { status: response.status, value: response.headers.get(HEADER) }
}

describe('BASE_URL https', () => {
  let server: TestServer
  beforeAll(async () => {
    server = await startTestServer({ env: { BASE_URL: 'https://mail.example.test' } })
  })
  afterAll(() => server.stop())

  test('every kind of answer of the HTTP port carries one year, without includeSubDomains or preload', async () => {
    const answers = [
      await headerOn(server, '/health'), // API, no key
      await headerOn(server, '/v1/usage'), // API, refused: no key
      await headerOn(server, '/no/such/path'), // API, unknown route
      await headerOn(server, '/openapi.json'),
      await headerOn(server, '/console/sign-in'), // console page
      await headerOn(server, '/console'), // console redirect to sign-in
      await headerOn(server, '/console/assets/console.js'), // console asset
      await headerOn(server, '/console/sign-in', { method: 'POST' }), // console refusal (no Origin, no token)
    ]
    for (const answer of answers) expect(answer.value).toBe('max-age=31536000')
    expect(new Set(answers.map((answer) => answer.status)).size).toBeGreaterThan(3)
  })
})

test('HSTS_MAX_AGE_SECONDS sets max-age; 0 withdraws an earlier one', async () => {
  const server = await startTestServer({ env: { BASE_URL: 'https://mail.example.test', HSTS_MAX_AGE_SECONDS: '0' } })
  try {
    expect((await headerOn(server, '/health')).value).toBe('max-age=0')
  } finally {
    await server.stop()
  }
})

test('with an http BASE_URL no response carries it', async () => {
  const server = await startTestServer({ env: { BASE_URL: 'http://localhost:3000' } })
  try {
    for (const path of ['/health', '/v1/usage', '/console/sign-in', '/console'])
      expect((await headerOn(server, path)).value).toBeNull()
  } finally {
    await server.stop()
  }
})
