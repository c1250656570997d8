/**
 * The console across two machines in PostgreSQL mode, over real HTTP: a form served by one
 * machine is accepted by the other (the CSRF secret and sessions live in the database), the
 * first-run setup makes one operator however many machines are asked at once, and the
 * sign-in throttle counts wrong passwords from every machine together.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { type RunningApp, startApp } from '../../src/app.ts'
import { loadConfig } from '../../src/config.ts'
import { FAILURES_PER_ACCOUNT_AND_ADDRESS } from '../../src/core/users/sign-in-throttle.ts'
import { createLogger } from '../../src/log.ts'
import { openPostgres, type Sql } from '../../src/storage/postgres/client.ts'
import { ConsoleClient, PASSWORD } from '../support/console-client.ts'
import { describeWithPostgres, migratedDatabase } from '../support/postgres.ts'
import { scratchDir } from '../support/scratch.ts'
import { layDownSelfSigned } from '../support/tls-seed.ts'

setDefaultTimeout(60_000)

interface Machine {
  app: RunningApp
  dir: string
}

async function startMachine(url: string): Promise<Machine> {
  const dir = scratchDir('pigeonhole-console-')
  const databasePath = join(dir, 'pigeonhole.db')
  // One BASE_URL for both, as a pair behind one address has (the console's cookie names follow it).
  const config = loadConfig({
    PORT: '0',
    SMTP_PORT: '0',
    HOST: '127.0.0.1',
    BASE_URL: 'http://console.pair.test',
    DATABASE_PATH: databasePath,
    DATABASE_URL: url,
    DATABASE_POOL_SIZE: '4',
    RECEIVING_DOMAIN: 'inbox.test',
  })
  await layDownSelfSigned(databasePath, config.receivingDomain)
  const app = await startApp({ config, logger: createLogger('error', () => {}) })
  return { app, dir }
}

/** The path and token of a machine's printed setup link. */
function setupLink(machine: Machine): { path: string; token: string } {
  const url = new URL(machine.app.setupUrl!)
  return { path: url.pathname + url.search, token: url.searchParams.get('token')! }
}

describeWithPostgres('the console across two machines', () => {
  let a: Machine
  let b: Machine
  let sql: Sql

  beforeAll(async () => {
    const url = await migratedDatabase()
    ;[a, b] = await Promise.all([startMachine(url), startMachine(url)])
    sql = openPostgres(url, { max: 2 })
  })
  afterAll(async () => {
    await Promise.all([a?.app.stop(), b?.app.stop()])
    await sql?.end()
    for (const machine of [a, b]) if (machine) rmSync(machine.dir, { recursive: true, force: true })
  })

  test('two setups at once, one per machine, each with its form: exactly one operator', async () => {
    const onA = new ConsoleClient(a.app.httpUrl)
    const onB = new ConsoleClient(b.app.httpUrl)
    const linkA = setupLink(a)
    const linkB = setupLink(b)
    expect((await onA.get(linkA.path)).status).toBe(200)
    expect((await onB.get(linkB.path)).status).toBe(200)
    const fields = (email: string, token: string) => ({
      token,
      email,
      password: PASSWORD,
      organization: 'Acme',
      preset: 'hosted',
    })
    const [doneA, doneB] = await Promise.all([
      onA.post('/setup', fields('first@example.com', linkA.token)),
      onB.post('/setup', fields('second@example.com', linkB.token)),
    ])
    // The winner is sent on to its first-steps page (303); the other gets a refusal.
    expect([doneA.status, doneB.status].filter((status) => status === 303)).toHaveLength(1)
    const users = await sql`select email from users`
    expect(users).toHaveLength(1)
    const organizations = await sql`select id from organizations`
    expect(organizations).toHaveLength(1)
  })

  test('a sign-in form served by A is accepted by B, and the session works on both', async () => {
    const [operator] = await sql<{ email: string }[]>`select email from users`
    const client = new ConsoleClient(a.app.httpUrl)
    expect((await client.get('/console/sign-in')).status).toBe(200)
    const token = client.csrf
    expect(token).toBeDefined()
    const onB = new ConsoleClient(b.app.httpUrl)
    for (const [name, value] of client.cookies) onB.cookies.set(name, value)
    const signedIn = await onB.post(
      '/console/sign-in',
      { email: operator!.email, password: PASSWORD, next: '/console' },
      { csrf: token! },
    )
    expect(signedIn.status).toBe(303)
    const landing = await new ConsoleClient(a.app.httpUrl).get('/console', { cookie: onB.cookieHeader() })
    expect(landing.status).not.toBe(401)
    expect(landing.location ?? '').not.toContain('sign-in')
  })

  test(`wrong passwords alternating between A and B are counted together: the ${FAILURES_PER_ACCOUNT_AND_ADDRESS + 1}th is refused on either`, async () => {
    const [operator] = await sql<{ email: string }[]>`select email from users`
    const attempt = async (machine: Machine, password: string) => {
      const client = new ConsoleClient(machine.app.httpUrl)
      await client.get('/console/sign-in')
      return client.post('/console/sign-in', { email: operator!.email, password, next: '/console' })
    }
    for (let i = 0; i < FAILURES_PER_ACCOUNT_AND_ADDRESS; i++) {
      const page = await attempt(i % 2 === 0 ? a : b, 'not the password')
      expect(page.status).not.toBe(429)
      expect(page.status).not.toBe(303)
    }
    for (const machine of [a, b]) {
      const page = await attempt(machine, PASSWORD)
      expect(page.status).toBe(429)
      expect(page.html).toContain('Too many wrong passwords for this account from your address.')
    }
  })
})
