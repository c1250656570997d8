/**
 * The /openapi page works with no network: everything it loads comes from this server
 * (the viewer is an npm dependency we serve), and its policy forbids any other host.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { startTestServer, type TestServer } from '../support/harness.ts'

let server: TestServer
beforeAll(async () => {
  server = await startTestServer()
})
afterAll(() => server.stop())

test('the page references no other host, and every asset it names is served', async () => {
  const page = await server.get('/openapi')
  expect(page.status).toBe(200)
  expect(page.headers.get('content-type')).toContain('text/html')
  const references = [...page.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1]!)
  expect(references.length).toBeGreaterThanOrEqual(3)
  expect(page.text).not.toMatch(/\/\/[a-z0-9.-]+\.[a-z]{2,}/i)
  for (const reference of references) {
    expect(reference).toMatch(/^\/openapi\//)
    const asset = await fetch(`${server.url}${reference}`)
    expect(`${reference} ${asset.status}`).toBe(`${reference} 200`)
    expect((await asset.text()).length).toBeGreaterThan(20)
  }
  const init = await (await fetch(`${server.url}/openapi/assets/init.js`)).text()
  expect(init).toContain("url: '/openapi/json'")
  expect(init).toContain('validatorUrl: null')
})

test("the page's policy allows only this origin", async () => {
  const policy = (await server.get('/openapi')).headers.get('content-security-policy')!
  for (const directive of policy.split(';'))
    expect(directive.trim()).toMatch(/^[a-z-]+( 'self'| 'unsafe-inline'| data:)+$/)
  expect(policy).toContain("default-src 'self'")
})

test('an unknown asset answers 404 with the error envelope', async () => {
  const response = await server.get('/openapi/assets/nope.js')
  expect(response.status).toBe(404)
  expect(response.body.error.code).toBe('not_found')
})

test('GET / and other unknown routes point a newcomer to /openapi and /console/', async () => {
  for (const path of ['/', '/v2/inboxes']) {
    const response = await server.get(path)
    expect(response.status).toBe(404)
    expect(response.body.error.code).toBe('not_found')
    expect(response.body.error.message).toBe(
      'No such route. The API is under /v1, described at /openapi; the web console is at /console/.',
    )
  }
})
