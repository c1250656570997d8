/**
 * A lockout nobody can aim at someone else, over real HTTP: wrong passwords lock out the
 * address they came from, many addresses only slow the account, a new password from the
 * operator (console or CLI) lifts the counts, a wrong current password on the account page
 * counts too, and every refusal says how long to wait.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { join } from 'node:path'
import { ManualClock } from '../../src/clock.ts'
import { findUserByEmail } from '../../src/core/users/users.ts'
import { ACCOUNT_SLOW_AFTER, FAILURES_PER_ACCOUNT_AND_ADDRESS } from '../../src/core/users/sign-in-throttle.ts'
import { addMember, ConsoleClient, PASSWORD, setUp } from '../support/console-client.ts'
import { startTestServer, type TestServer } from '../support/harness.ts'

// A hang's deadline, not a speed: on a busy machine this file's server and processes take
// well over Bun's default of 5 s.
setDefaultTimeout(30_000)

const ROOT = join(import.meta.dir, '..', '..')
const clock = new ManualClock('2026-05-04T08:00:00.000Z')
let server: TestServer
let operator: ConsoleClient
let org: string
let people = 0

beforeAll(async () => {
  // The test client is the trusted proxy here: only a peer in TRUSTED_PROXIES may set the header.
  server = await startTestServer({
    clock,
    env: { CLIENT_ADDRESS_HEADER: 'X-Test-Client', TRUSTED_PROXIES: '127.0.0.1, ::1' },
  })
  ;({ client: operator, organizationId: org } = await setUp(server, { email: 'operator@example.com' }))
})
afterAll(() => server.stop())

async function newMember(): Promise<{ email: string; id: string }> {
  const email = `person${++people}@example.com`
  await addMember(server, operator, org, email)
  return { email, id: (await findUserByEmail(server.app.services, email))!.id }
}

/** A sign-in form post from a client address (each test uses its own addresses). */
async function signIn(email: string, password: string, address: string) {
  const client = ConsoleClient.for(server)
  await client.get('/console/sign-in', { 'x-test-client': address })
  return client.post(
    '/console/sign-in',
    { email, password, next: '/console' },
    { headers: { 'x-test-client': address } },
  )
}

test("an attacker's wrong passwords lock out the attacker's address, not the account's owner", async () => {
  const { email } = await newMember()
  for (let i = 0; i < FAILURES_PER_ACCOUNT_AND_ADDRESS; i++)
    expect((await signIn(email, `guess ${i} guess`, '10.7.0.1')).status).toBe(401)
  const refused = await signIn(email, PASSWORD, '10.7.0.1')
  expect(refused.status).toBe(429)
  expect(refused.headers.get('retry-after')).toBe('900')
  expect(refused.html).toContain('Try again in 15 minutes.')
  expect((await signIn(email, PASSWORD, '10.7.0.2')).status).toBe(303)
})

test('the page says how long is left, and the address may try again when the window ends', async () => {
  const { email } = await newMember()
  for (let i = 0; i < FAILURES_PER_ACCOUNT_AND_ADDRESS; i++) await signIn(email, `guess ${i} guess`, '10.7.1.1')
  clock.advance(14 * 60_000 + 20_000)
  const refused = await signIn(email, PASSWORD, '10.7.1.1')
  expect(refused.status).toBe(429)
  expect(refused.headers.get('retry-after')).toBe('40')
  expect(refused.html).toContain('Try again in 40 seconds.')
  clock.advance(40_000)
  expect((await signIn(email, PASSWORD, '10.7.1.1')).status).toBe(303)
})

test(`${ACCOUNT_SLOW_AFTER} failures from many addresses slow the account; the right password still signs in`, async () => {
  const { email } = await newMember()
  for (let i = 0; i < ACCOUNT_SLOW_AFTER; i++)
    expect((await signIn(email, `guess ${i} guess`, `10.7.2.${i}`)).status).toBe(401)
  expect((await signIn(email, PASSWORD, '10.7.3.1')).status).toBe(303)
})

test("the operator's reset, from the console or the CLI, lifts the lockout of the user's own address", async () => {
  const { email, id } = await newMember()
  const lockOut = async (address: string) => {
    for (let i = 0; i < FAILURES_PER_ACCOUNT_AND_ADDRESS; i++) await signIn(email, `mistyped ${i} again`, address)
    expect((await signIn(email, PASSWORD, address)).status).toBe(429)
  }
  await lockOut('10.7.4.1')
  await operator.get('/console/admin')
  const reset = await operator.get((await operator.post(`/console/admin/users/${id}/reset-password`)).location!)
  const password = /id="new-password"[^>]*value="([^"]+)"/.exec(reset.html)![1]!
  expect((await signIn(email, password, '10.7.4.1')).status).toBe(303)

  await lockOut('10.7.4.2')
  const cli = Bun.spawn(['bun', 'src/cli.ts', 'users', 'reset-password', email], {
    cwd: ROOT,
    env: {
      ...process.env,
      DATABASE_PATH: server.databasePath,
      DATABASE_URL: server.databaseUrl ?? '',
      CONSOLE_PASSWORD_MEMORY_KIB: String(server.config.consolePasswordMemoryKib),
    },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const printed = await new Response(cli.stdout).text()
  expect(await cli.exited).toBe(0)
  expect((await signIn(email, printed.trimEnd().split('\n').at(-1)!, '10.7.4.2')).status).toBe(303)
})

test('wrong current passwords on the account page count like wrong sign-ins, for that account and address', async () => {
  const { email } = await newMember()
  const client = ConsoleClient.for(server)
  await client.get('/console/sign-in', { 'x-test-client': '10.7.5.1' })
  await client.post('/console/sign-in', { email, password: PASSWORD }, { headers: { 'x-test-client': '10.7.5.1' } })
  await client.get('/console/account')
  const change = (current: string) =>
    client.post(
      '/console/account/password',
      { current, password: 'a brand new password' },
      { headers: { 'x-test-client': '10.7.5.1' } },
    )
  for (let i = 0; i < FAILURES_PER_ACCOUNT_AND_ADDRESS; i++) expect((await change(`not it ${i}`)).status).toBe(400)
  const refused = await change(PASSWORD)
  expect(refused.status).toBe(429)
  expect(refused.html).toContain('Try again in 15 minutes.')
  expect((await signIn(email, PASSWORD, '10.7.5.1')).status).toBe(429)
  expect((await signIn(email, PASSWORD, '10.7.5.2')).status).toBe(303)
})
