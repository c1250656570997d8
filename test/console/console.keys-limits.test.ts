/**
 * API keys from the console (shown once, named, listed, revoked: 401 at once), the audit
 * trail with actor and client address, and the operator's per-organisation limits, which
 * getUsage and every enforcement point (createInbox, RCPT admission, rate limit, long
 * polls) follow from the next request on.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { join } from 'node:path'
import { ManualClock } from '../../src/clock.ts'
import { startTestServer, type TestServer } from '../support/harness.ts'
import { ConsoleClient, setUp } from '../support/console-client.ts'
import { sendMail, simpleMessage } from '../support/smtp.ts'
import { until } from '../support/wait.ts'

// A hang's deadline, not a speed: on a busy machine this file's servers, processes or
// generated cases take well over Bun's default of 5 s.
setDefaultTimeout(30_000)

let server: TestServer
let operator: ConsoleClient
let organizationId: string
let firstKey: string

beforeAll(async () => {
  // A clock that stands still: the minute and five-minute buckets cannot roll over mid-test.
  server = await startTestServer({ clock: new ManualClock('2026-06-10T10:00:00.000Z') })
  ;({ client: operator, organizationId, key: firstKey } = await setUp(server, { email: 'op@example.com' }))
})
afterAll(() => server.stop())

async function createKey(name: string): Promise<string> {
  await operator.get(`/console/orgs/${organizationId}/keys`)
  const made = await operator.post(`/console/orgs/${organizationId}/keys`, { name })
  expect(made.status).toBe(303) // post/redirect/get: the key is shown on the page it redirects to
  const page = await operator.get(made.location!)
  expect(page.status).toBe(200)
  return /value="(ph_live_[0-9a-f]{16}_[0-9a-f]{48})"/.exec(page.html)![1]!
}

async function setLimits(fields: Record<string, string>, org = organizationId) {
  await operator.get(`/console/admin/orgs/${org}`)
  return operator.post(`/console/admin/orgs/${org}/limits`, fields)
}

describe('keys', () => {
  test('a new key is shown once with its name, works on /v1, and its list row shows name, created and last use', async () => {
    const key = await createKey('CI <runner>')
    expect((await server.get('/v1/usage', key)).status).toBe(200)
    const list = await operator.get(`/console/orgs/${organizationId}/keys`)
    expect(list.html).not.toContain(key)
    const row = list.html.slice(list.html.indexOf(`data-key="${key.slice(8, 24)}"`)).split('</tr>')[0]!
    expect(row).toContain('CI &lt;runner>')
    expect(row).toContain('<time') // created and last used
    expect(row).not.toContain('never')
    expect(row).toContain('active')
  })

  test('a revoked key answers 401 on its next request; the list says revoked; the audit log has both events', async () => {
    const key = await createKey('to revoke')
    expect((await server.get('/v1/usage', key)).status).toBe(200)
    await operator.get(`/console/orgs/${organizationId}/keys`)
    expect((await operator.post(`/console/orgs/${organizationId}/keys/${key.slice(8, 24)}/revoke`)).status).toBe(303)
    expect((await server.get('/v1/usage', key)).status).toBe(401)
    const list = await operator.get(`/console/orgs/${organizationId}/keys`)
    expect(list.html.slice(list.html.indexOf(`data-key="${key.slice(8, 24)}"`)).split('</tr>')[0]).toContain('revoked')
    const audit = await operator.get(`/console/orgs/${organizationId}/audit`)
    const revoked = audit.html.slice(audit.html.indexOf('data-action="key.revoked"')).split('</tr>')[0]!
    expect(revoked).toContain('op@example.com')
    expect(revoked).toContain(key.slice(8, 24))
    expect(revoked).toContain('127.0.0.1')
  })

  test('the admin CLI works on the same table: it lists console keys, its revocation shows in the console, and both land in the audit log', async () => {
    const key = await createKey('cli sees me')
    const list = await cli('keys', 'list', organizationId)
    expect(list.stdout).toContain(key.slice(8, 24))
    expect((await cli('keys', 'revoke', key.slice(8, 24))).code).toBe(0)
    expect((await server.get('/v1/usage', key)).status).toBe(401)
    const page = await operator.get(`/console/orgs/${organizationId}/keys`)
    expect(page.html.slice(page.html.indexOf(`data-key="${key.slice(8, 24)}"`)).split('</tr>')[0]).toContain('revoked')
    const made = (await cli('keys', 'create', organizationId)).lastLine
    const audit = await operator.get(`/console/orgs/${organizationId}/audit`)
    const rows = audit.html.split('<tr data-action=').slice(1)
    for (const [action, target] of [
      ['key.revoked', key.slice(8, 24)],
      ['key.created', made.slice(8, 24)],
    ] as const) {
      const row = rows.find((r) => r.startsWith(`"${action}"`) && r.includes(`<td class="mono">${target}</td>`))
      expect(row).toContain('<td>cli</td>')
    }
  })
})

describe('limits set by the operator', () => {
  test('getUsage reports the organisation limits; an empty field returns to LIMIT_*', async () => {
    expect((await setLimits({ activeInboxes: '2', monthlyEmails: '5' })).status).toBe(303)
    const usage = await server.get('/v1/usage', firstKey)
    expect([usage.body.inboxes.limit, usage.body.emails.limit, usage.body.plan]).toEqual([2, 5, 'free'])
    await setLimits({ activeInboxes: '', monthlyEmails: '' })
    const back = await server.get('/v1/usage', firstKey)
    expect([back.body.inboxes.limit, back.body.emails.limit]).toEqual([
      server.config.limits.activeInboxes,
      server.config.limits.monthlyEmails,
    ])
    const audit = await operator.get(`/console/orgs/${organizationId}/audit`)
    expect(audit.html).toContain('limits.changed')
  })

  test('invalid values are refused with the form again and change nothing', async () => {
    for (const value of ['0', '-1', 'abc', '1e3', '99999999999']) {
      const page = await setLimits({ monthlyEmails: value })
      expect(page.status).toBe(400)
    }
    expect((await server.get('/v1/usage', firstKey)).body.emails.limit).toBe(server.config.limits.monthlyEmails)
  })

  test('createInbox follows the organisation active-inbox limit', async () => {
    await setLimits({ activeInboxes: '1' })
    expect((await server.post('/v1/inboxes', firstKey)).status).toBe(201)
    const refused = await server.post('/v1/inboxes', firstKey)
    expect([refused.status, refused.body.error.code]).toEqual([409, 'inbox_quota_exceeded'])
    await setLimits({ activeInboxes: '' })
  })

  test('RCPT admission follows the organisation monthly quota and inbox burst', async () => {
    const inbox = (await server.post('/v1/inboxes', firstKey)).body.data
    await setLimits({ monthlyEmails: '1' })
    expect(
      (await sendMail(server.app.smtpPort, { to: [inbox.address] }, simpleMessage({ to: inbox.address }))).data?.code,
    ).toBe(250)
    const refused = await sendMail(server.app.smtpPort, { to: [inbox.address] }, simpleMessage({ to: inbox.address }))
    expect(refused.rcpt[0]!.code).toBe(550)
    await setLimits({ monthlyEmails: '100', inboxBurst: '1' })
    const burst = await sendMail(server.app.smtpPort, { to: [inbox.address] }, simpleMessage({ to: inbox.address }))
    expect(burst.rcpt[0]!.code).toBe(450) // the one message of this five-minute bucket was already taken
    await setLimits({ monthlyEmails: '', inboxBurst: '' })
    expect(
      (await sendMail(server.app.smtpPort, { to: [inbox.address] }, simpleMessage({ to: inbox.address }))).data?.code,
    ).toBe(250)
  })

  test('the HTTP rate limit follows the organisation requests-per-key limit', async () => {
    const key = await createKey('rate')
    await setLimits({ requestsPerKey: '3' })
    const statuses = []
    for (let i = 0; i < 4; i++) statuses.push((await server.get('/v1/usage', key)).status)
    expect(statuses).toEqual([200, 200, 200, 429])
    await setLimits({ requestsPerKey: '' })
  })

  test('long polls follow the organisation per-key limit', async () => {
    const key = await createKey('polls')
    const inbox = (await server.post('/v1/inboxes', key)).body.data
    await setLimits({ longPollsPerKey: '1' })
    const waiting = new AbortController()
    const first = fetch(`${server.url}/v1/inboxes/${inbox.id}/messages?wait_seconds=30`, {
      headers: { authorization: `Bearer ${key}` },
      signal: waiting.signal,
    }).catch(() => undefined)
    const principal = { organizationId, keyPublicId: key.slice(8, 24) }
    await until(
      () => server.sum((machine) => machine.longPolls.count(principal).key) === 1,
      'the first poll to hold its slot',
    )
    const second = await server.get(`/v1/inboxes/${inbox.id}/messages?wait_seconds=30`, key)
    expect([second.status, second.body.error.code]).toEqual([429, 'long_poll_limit_exceeded'])
    waiting.abort()
    await first
    await setLimits({ longPollsPerKey: '' })
  })
})

describe('admin CLI for organisations', () => {
  test('orgs create --local gives limits that never lock a developer out; orgs limits sets and prints them', async () => {
    const created = await cli('orgs', 'create', 'Laptop', '--local')
    expect(created.code).toBe(0)
    const org = created.lastLine
    expect(org).toMatch(/^org_[0-9a-f]{32}$/)
    const shown = await cli('orgs', 'limits', org)
    expect(shown.stdout).toContain('emails-per-month\t1000000\t')
    expect(shown.stdout).toContain('inbox-burst\t100000\t')
    const set = await cli('orgs', 'limits', org, '--emails-per-month', '500', '--active-inboxes', 'default')
    expect(set.code).toBe(0)
    expect(set.stdout).toContain('emails-per-month\t500\tset for this organization')
    expect(set.stdout).toContain(`active-inboxes\t${server.config.limits.activeInboxes}\tLIMIT_* default`)
  })

  test('an organisation made by the CLI has no members; the operator joins it as owner from the operator page', async () => {
    const org = (await cli('orgs', 'create', 'Made by CLI')).lastLine
    expect((await operator.get(`/console/orgs/${org}`)).status).toBe(404)
    const admin = await operator.get('/console/admin')
    expect(admin.html).toContain(`/console/admin/orgs/${org}/join`)
    expect(admin.html).not.toContain(`/console/admin/orgs/${organizationId}/join`) // already a member there
    const joined = await operator.post(`/console/admin/orgs/${org}/join`)
    expect([joined.status, joined.location]).toEqual([303, `/console/orgs/${org}/members`])
    expect((await operator.get(`/console/orgs/${org}/keys`)).status).toBe(200)
    const audit = await operator.get(`/console/orgs/${org}/audit`)
    expect(audit.html).toContain('by the operator')
  })

  test('orgs limits refuses an unknown organisation, an unknown flag and a bad value', async () => {
    expect((await cli('orgs', 'limits', 'org_' + '0'.repeat(32))).code).not.toBe(0)
    expect((await cli('orgs', 'limits', organizationId, '--emails', '5')).code).not.toBe(0)
    expect((await cli('orgs', 'limits', organizationId, '--emails-per-month', 'lots')).code).not.toBe(0)
  })

  test('setup-link refuses once setup is done; users reset-password prints a new password, hashed at CONSOLE_PASSWORD_MEMORY_KIB, that signs in', async () => {
    expect((await cli('setup-link')).code).not.toBe(0)
    const reset = await cli('users', 'reset-password', 'op@example.com')
    expect(reset.code).toBe(0)
    const [{ password_hash }] = (await server.query(
      "select password_hash from users where email = 'op@example.com'",
    )) as [{ password_hash: string }]
    expect(password_hash).toStartWith(`$argon2id$v=19$m=${server.config.consolePasswordMemoryKib},t=2,p=1$`)
    const client = new ConsoleClient(server.url)
    await client.get('/console/sign-in')
    expect((await client.post('/console/sign-in', { email: 'op@example.com', password: reset.lastLine })).status).toBe(
      303,
    )
    expect((await operator.get(`/console/orgs/${organizationId}`)).status).toBe(303) // the old session ended
    operator = client
    await operator.get('/console/account')
  })
})

async function cli(...args: string[]) {
  const child = Bun.spawn(['bun', 'src/cli.ts', ...args], {
    cwd: join(import.meta.dir, '..', '..'),
    env: {
      ...process.env,
      DATABASE_PATH: server.databasePath,
      DATABASE_URL: server.databaseUrl ?? '',
      BASE_URL: server.app.publicUrls.baseUrl,
      CONSOLE_PASSWORD_MEMORY_KIB: String(server.config.consolePasswordMemoryKib),
    },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [stdout, stderr, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ])
  return { code, stdout, stderr, lastLine: stdout.trimEnd().split('\n').at(-1) ?? '' }
}
