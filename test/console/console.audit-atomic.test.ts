/**
 * An audited change and its audit row commit together. Each test makes the audit insert
 * fail (a trigger on audit_events, as a crash between two writes would) and checks that the
 * change itself did not happen: a record can never be lost while its change is kept.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { join } from 'node:path'
import { startTestServer, type TestServer } from '../support/harness.ts'
import { addMember, ConsoleClient, setUp, signedIn } from '../support/console-client.ts'

// A hang's deadline, not a speed: on a busy machine this file's server and processes take
// well over Bun's default of 5 s.
setDefaultTimeout(30_000)

const ROOT = join(import.meta.dir, '..', '..')
const OPERATOR = 'operator@example.com'
let server: TestServer
let operator: ConsoleClient
let memberId: string
let organizationId: string
const MEMBER = 'member@example.com'
/** The member's password: the CLI reset test replaces it with the one the CLI prints. */
let memberPassword = 'member password 1'

/** A statement on the server's database, behind its back (either dialect). */
const sql = async <T = Record<string, unknown>>(query: string): Promise<T[]> => (await server.query(query)) as T[]

/** Makes every audit insert fail, as a crash between the change and its record would. */
async function failAudits(): Promise<void> {
  if (!server.databaseUrl) {
    await sql(
      `create trigger if not exists refuse_audit before insert on audit_events begin select raise(abort, 'audit refused'); end`,
    )
    return
  }
  await sql(
    `create or replace function refuse_audit() returns trigger language plpgsql as $$ begin raise exception 'audit refused'; end $$`,
  )
  await sql(
    'create or replace trigger refuse_audit before insert on audit_events for each row execute function refuse_audit()',
  )
}
const allowAudits = () =>
  sql(
    server.databaseUrl ? 'drop trigger if exists refuse_audit on audit_events' : 'drop trigger if exists refuse_audit',
  )
const passwordHashOf = async (email: string) =>
  (await sql<{ password_hash: string }>(`select password_hash from users where email = '${email}'`))[0]!.password_hash
const sessionCount = (userId: string) =>
  server.countRows(`select count(*) as n from sessions where user_id = '${userId}'`)
const auditRows = (action: string) =>
  sql<{ actor: string; target: string }>(
    `select actor, target from audit_events where action = '${action}' order by id`,
  )

/** The admin CLI as a real process on the server's database. */
async function cli(...args: string[]): Promise<{ code: number; stdout: string }> {
  const child = Bun.spawn(['bun', 'src/cli.ts', ...args], {
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
  const [stdout, code] = await Promise.all([new Response(child.stdout).text(), child.exited])
  return { code, stdout }
}

beforeAll(async () => {
  server = await startTestServer()
  const done = await setUp(server, { email: OPERATOR })
  operator = done.client
  organizationId = done.organizationId
  await addMember(server, operator, done.organizationId, MEMBER, 'member password 1')
  memberId = (await sql<{ id: string }>(`select id from users where email = '${MEMBER}'`))[0]!.id
  await operator.get('/console/admin')
})
afterAll(() => server.stop())

test("the operator's password reset: no audit row, no new password and no ended sessions", async () => {
  await signedIn(server, MEMBER, memberPassword)
  const before = await passwordHashOf(MEMBER)
  const sessions = await sessionCount(memberId)
  await failAudits()
  try {
    const page = await operator.post(`/console/admin/users/${memberId}/reset-password`)
    expect(page.status).toBe(500)
  } finally {
    await allowAudits()
  }
  expect(await passwordHashOf(MEMBER)).toBe(before)
  expect(await sessionCount(memberId)).toBe(sessions)
  expect(await auditRows('user.password_reset')).toEqual([])
})

test("the operator's sign-out-everywhere for a user: no audit row, no ended session", async () => {
  await signedIn(server, MEMBER, memberPassword)
  const sessions = await sessionCount(memberId)
  await failAudits()
  try {
    expect((await operator.post(`/console/admin/users/${memberId}/revoke-sessions`)).status).toBe(500)
  } finally {
    await allowAudits()
  }
  expect(await sessionCount(memberId)).toBe(sessions)
  expect(await auditRows('user.sessions_revoked')).toEqual([])
})

test("a user's own sign-out-everywhere is audited with it, or does not happen", async () => {
  const member = await signedIn(server, MEMBER, memberPassword)
  await member.get('/console/account')
  await failAudits()
  try {
    expect((await member.post('/console/account/sessions/revoke')).status).toBe(500)
  } finally {
    await allowAudits()
  }
  expect((await member.get('/console/account')).status).toBe(200)
  expect((await member.post('/console/account/sessions/revoke')).status).toBe(303)
  expect(await sessionCount(memberId)).toBe(0)
  expect(await auditRows('user.sessions_revoked')).toEqual([{ actor: MEMBER, target: MEMBER }])
})

test('the CLI password reset: the command fails and the password stays; without the fault it is audited as cli', async () => {
  const before = await passwordHashOf(MEMBER)
  await failAudits()
  try {
    expect((await cli('users', 'reset-password', MEMBER)).code).not.toBe(0)
  } finally {
    await allowAudits()
  }
  expect(await passwordHashOf(MEMBER)).toBe(before)
  expect(await auditRows('user.password_reset')).toEqual([])
  const done = await cli('users', 'reset-password', MEMBER)
  expect(done.code).toBe(0)
  memberPassword = done.stdout.trimEnd().split('\n').at(-1)!
  expect(await passwordHashOf(MEMBER)).not.toBe(before)
  expect(await auditRows('user.password_reset')).toEqual([{ actor: 'cli', target: MEMBER }])
})

test('the CLI sign-out: refused audit, sessions kept; otherwise they end and the row says cli', async () => {
  await signedIn(server, MEMBER, memberPassword)
  const sessions = await sessionCount(memberId)
  expect(sessions).toBeGreaterThan(0)
  await failAudits()
  try {
    expect((await cli('users', 'sign-out', MEMBER)).code).not.toBe(0)
  } finally {
    await allowAudits()
  }
  expect(await sessionCount(memberId)).toBe(sessions)
  const before = (await await auditRows('user.sessions_revoked')).length
  const done = await cli('users', 'sign-out', MEMBER)
  expect(done.code).toBe(0)
  expect(done.stdout).toContain(`ended ${sessions} session`)
  expect(await sessionCount(memberId)).toBe(0)
  expect((await await auditRows('user.sessions_revoked')).slice(before)).toEqual([{ actor: 'cli', target: MEMBER }])
})

test('every other audited console action: with the audit refused, nothing changes', async () => {
  const org = `/console/orgs/${organizationId}`
  const snapshot = async () => ({
    keys: await sql('select public_id, revoked_at from api_keys order by public_id'),
    invites: await sql('select id, used_at from invites order by id'),
    members: await sql('select user_id, role from memberships order by user_id'),
    organizations: await sql('select * from organizations order by id'),
    audit: await sql('select id from audit_events'),
  })
  const keyId = (await sql<{ public_id: string }>(`select public_id from api_keys limit 1`))[0]!.public_id
  await operator.get(`${org}/members`)
  const invited = await operator.post(`${org}/invites`, { role: 'member' })
  const inviteId = /\/invites\/(invite_[0-9a-f]{32})\/withdraw/.exec((await operator.get(`${org}/members`)).html)![1]!
  expect(invited.status).toBe(303)
  const actions: Array<[string, string, Record<string, string>]> = [
    ['key.created', `${org}/keys`, { name: 'refused' }],
    ['key.revoked', `${org}/keys/${keyId}/revoke`, {}],
    ['member.invited', `${org}/invites`, { role: 'member' }],
    ['invite.withdrawn', `${org}/invites/${inviteId}/withdraw`, {}],
    ['member.role_changed', `${org}/members/${memberId}/role`, { role: 'owner' }],
    ['member.removed', `${org}/members/${memberId}/remove`, {}],
    ['limits.changed', `/console/admin/orgs/${organizationId}/limits`, { activeInboxes: '7' }],
    ['organization.created', '/console/admin/orgs', { name: 'Refused', preset: 'hosted' }],
  ]
  const before = await snapshot()
  await failAudits()
  try {
    for (const [action, path, fields] of actions) {
      await operator.get('/console/admin')
      expect({ action, status: (await operator.post(path, fields)).status }).toEqual({ action, status: 500 })
    }
  } finally {
    await allowAudits()
  }
  expect(await snapshot()).toEqual(before)
})

test('an invite sign-up makes the account and joins in one transaction: with the audit refused, no account is left and the link still works', async () => {
  const org = `/console/orgs/${organizationId}`
  await operator.get(`${org}/members`)
  const made = await operator.post(`${org}/invites`, { role: 'member' })
  const link = /value="https?:\/\/[^"/]+(\/console\/invites\/[A-Za-z0-9_-]{43})"/.exec(
    (await operator.get(made.location!)).html,
  )![1]!
  const visitor = new ConsoleClient(server.url)
  await visitor.get(link)
  const users = (await sql('select id from users')).length
  await failAudits()
  try {
    expect((await visitor.post(link, { email: 'joiner@example.com', password: 'joiner password 1' })).status).toBe(500)
  } finally {
    await allowAudits()
  }
  expect((await sql('select id from users')).length).toBe(users)
  expect(await sql(`select id from users where email = 'joiner@example.com'`)).toEqual([])
  await visitor.get(link)
  expect((await visitor.post(link, { email: 'joiner@example.com', password: 'joiner password 1' })).status).toBe(303)
  expect(
    await sql(
      `select role from memberships join users on users.id = memberships.user_id where email = 'joiner@example.com'`,
    ),
  ).toEqual([{ role: 'member' }])
  expect((await await auditRows('member.joined')).filter((row) => row.actor === 'joiner@example.com')).toEqual([
    { actor: 'joiner@example.com', target: 'joiner@example.com' },
  ])
})

test("the CLI's organisations and keys: with the audit refused, nothing is made or revoked", async () => {
  const snapshot = async () => ({
    keys: await sql('select public_id, revoked_at from api_keys order by public_id'),
    organizations: await sql('select id from organizations order by id'),
  })
  const keyId = (
    await sql<{ public_id: string }>(`select public_id from api_keys where revoked_at is null limit 1`)
  )[0]!.public_id
  const before = await snapshot()
  await failAudits()
  try {
    for (const args of [
      ['orgs', 'create', 'Refused'],
      ['keys', 'create', organizationId],
      ['keys', 'revoke', keyId],
    ]) {
      expect({ args, failed: (await cli(...args)).code !== 0 }).toEqual({ args, failed: true })
    }
  } finally {
    await allowAudits()
  }
  expect(await snapshot()).toEqual(before)
})

test("the harness's tenants are made the operator's way: the organisation and its key are audited as cli", async () => {
  const tenant = await server.tenant('harness-made')
  const created = await sql<{ actor: string; organization_id: string | null; detail: string }>(
    `select actor, organization_id, detail from audit_events where action = 'organization.created' and target = '${tenant.organizationId}'`,
  )
  expect(created).toEqual([{ actor: 'cli', organization_id: null, detail: 'harness-made (hosted free plan limits)' }])
  const keys = await sql<{ actor: string }>(
    `select actor from audit_events where action = 'key.created' and organization_id = '${tenant.organizationId}'`,
  )
  expect(keys).toEqual([{ actor: 'cli' }])
})
