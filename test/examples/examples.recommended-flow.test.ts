/** The README's example flow (examples/recommended-flow.ts) runs green against a real server. */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { join } from 'node:path'
import { startTestServer, type TestServer } from '../support/harness.ts'

let server: TestServer
beforeAll(async () => {
  server = await startTestServer()
})
afterAll(() => server.stop())

test('examples/recommended-flow.ts succeeds and leaves no inbox behind', async () => {
  const tenant = server.tenant()
  const child = Bun.spawn(['bun', join(import.meta.dir, '..', '..', 'examples', 'recommended-flow.ts')], {
    env: { ...process.env, PIGEONHOLE_URL: server.url, PIGEONHOLE_KEY: tenant.key, PIGEONHOLE_SMTP_PORT: String(server.app.smtpPort) },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [code, out, err] = await Promise.all([child.exited, new Response(child.stdout).text(), new Response(child.stderr).text()])
  expect(err).toBe('')
  expect(code).toBe(0)
  expect(out).toContain('ok: "Your order #1042" from orders@shop.example, code 884213')
  expect((await server.get('/v1/inboxes', tenant.key)).body.data).toEqual([])
  expect((await server.get('/v1/usage', tenant.key)).body.emails.received).toBe(1)
})
