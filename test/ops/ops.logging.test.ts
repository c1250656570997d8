/** Logs: one JSON line per request carrying its request id and real status; no secrets. */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { startTestServer, type ApiResponse, type TestServer } from '../support/harness.ts'
import { until } from '../support/wait.ts'
import { sendMail, simpleMessage } from '../support/smtp.ts'

let server: TestServer
beforeAll(async () => {
  server = await startTestServer()
})
afterAll(() => server.stop())

test('each HTTP request logs one line with its request id and the status the client saw', async () => {
  const tenant = await server.tenant()
  const responses = [
    await server.get('/health'),
    await server.post('/v1/inboxes', tenant.key, { prefix: 'logged' }),
    await server.get('/v1/inboxes?limit=0', tenant.key),
    await server.get('/v1/usage', 'ph_live_0000000000000000_' + '0'.repeat(48)),
  ]
  const inboxId = responses[1]!.body.data.id
  responses.push(await server.get(`/v1/inboxes/${inboxId}/messages?wait_seconds=1`, tenant.key))
  responses.push(await server.delete(`/v1/inboxes/${inboxId}`, tenant.key))
  expect(responses.map((r) => r.status)).toEqual([200, 201, 422, 401, 204, 204])
  // afterResponse hooks run just after the bytes are sent: wait for the lines, not for a while.
  const logged = (response: ApiResponse) =>
    server.logs.some(
      (line) => line.request_id === response.headers.get('x-request-id') && line.event === 'http_request',
    )
  await until(() => responses.every(logged), 'a log line for every response')
  for (const response of responses) {
    const id = response.headers.get('x-request-id')
    const lines = server.logs.filter((line) => line.request_id === id && line.event === 'http_request')
    expect(lines).toHaveLength(1)
    expect(lines[0]!.status).toBe(response.status)
  }
})

test('no log line contains an API key secret or message content', async () => {
  const tenant = await server.tenant()
  const inbox = (await server.post('/v1/inboxes', tenant.key)).body.data
  await sendMail(
    server.app.smtpPort,
    { to: [inbox.address] },
    simpleMessage({ to: inbox.address, subject: 'secret-subject-4711', text: 'secret-body-4711' }),
  )
  await server.get('/v1/usage', tenant.key)
  const secret = tenant.key.split('_').at(-1)!
  const all = server.logs.map((line) => JSON.stringify(line)).join('\n')
  expect(all).not.toContain(secret)
  expect(all).not.toContain('secret-subject-4711')
  expect(all).not.toContain('secret-body-4711')
  expect(server.logs.some((line) => line.event === 'smtp_message_stored')).toBe(true)
})
