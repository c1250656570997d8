/** The admin CLI run as a real process against a running server's file. */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { join } from 'node:path'
import { startTestServer, type TestServer } from '../support/harness.ts'
import { expectError } from '../support/shapes.ts'

// Each test runs the CLI as a process or two (a second or more each on a busy machine): a deadline, not a speed.
setDefaultTimeout(30_000)

const ROOT = join(import.meta.dir, '..', '..')
const KEY = /^ph_live_[0-9a-f]{16}_[0-9a-f]{48}$/
let server: TestServer
beforeAll(async () => {
  server = await startTestServer()
})
afterAll(() => server.stop())

interface Run {
  code: number
  stdout: string
  stderr: string
  lastLine: string
}

async function cli(...args: string[]): Promise<Run> {
  const child = Bun.spawn(['bun', 'src/cli.ts', ...args], {
    cwd: ROOT,
    // The server's database, whichever the run's backend (PIGEONHOLE_TEST_BACKEND) is.
    env: { ...process.env, DATABASE_PATH: server.databasePath, DATABASE_URL: server.databaseUrl ?? '' },
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

async function newOrg(name: string): Promise<string> {
  const run = await cli('orgs', 'create', name)
  expect(run.code).toBe(0)
  // It worked on the server's database: the PostgreSQL one (named without a password) when the run's backend is PostgreSQL.
  expect(run.stderr).toContain(
    server.databaseUrl ? 'database: postgres://postgres@127.0.0.1:' : `database: ${server.databasePath}`,
  )
  return run.lastLine
}

async function newKey(orgId: string): Promise<string> {
  const run = await cli('keys', 'create', orgId)
  expect(run.code).toBe(0)
  return run.lastLine
}

describe('orgs', () => {
  test('create prints the organisation id as the last line; list shows it', async () => {
    const id = await newOrg('Acme QA')
    expect(id).toMatch(/^org_[0-9a-f]{32}$/)
    const list = await cli('orgs', 'list')
    expect(list.code).toBe(0)
    const row = list.stdout.split('\n').find((line) => line.startsWith(id))
    expect(row).toContain('Acme QA')
    // Every column has a label, the limits' included.
    const header = list.stdout.split('\n')[0]!.split('\t')
    expect(header.slice(0, 4)).toEqual(['id', 'name', 'created_at', 'limit_active_inboxes'])
    expect(header.length).toBe(row!.split('\t').length)
  })

  test('create refuses a name already in use (any case), naming the existing id; nothing is created', async () => {
    const id = await newOrg('twice-team')
    for (const again of [['twice-team'], ['Twice-Team', '--local']]) {
      const run = await cli('orgs', 'create', ...again)
      expect(run.code).toBe(1)
      expect(run.stdout).toBe('')
      expect(run.stderr).toContain(`An organization named "twice-team" already exists: ${id} (created `)
      expect(run.stderr).toContain(`Use its id (bun src/cli.ts keys create ${id}), or choose another name.`)
    }
    const list = await cli('orgs', 'list')
    expect(list.stdout.split('\n').filter((line) => line.split('\t')[1]?.toLowerCase() === 'twice-team')).toHaveLength(
      1,
    )
    // Another name is still fine.
    expect(await newOrg('twice-team 2')).toMatch(/^org_/)
  })

  test('create without a name fails with usage and a non-zero code', async () => {
    const run = await cli('orgs', 'create')
    expect(run.code).not.toBe(0)
    expect(run.stderr).toContain('usage')
  })
})

describe('keys', () => {
  test('create prints a working key as the last line; only a hash is stored', async () => {
    const orgId = await newOrg('keys-org')
    const key = await newKey(orgId)
    expect(key).toMatch(KEY)
    const response = await server.get('/v1/usage', key)
    expect(response.status).toBe(200)

    const secret = key.split('_').at(-1)!
    const publicId = key.slice('ph_live_'.length, 'ph_live_'.length + 16)
    const rows = await server.query('SELECT * FROM api_keys WHERE public_id = ?', publicId)
    expect(rows.length).toBe(1)
    const stored = JSON.stringify(rows)
    expect(stored).not.toContain(secret)
    expect(stored).not.toContain(key)
    expect(stored).not.toContain(secret.slice(0, 16))
    // Nor anywhere in the file or its WAL, in any table.
    for (const file of [server.databasePath, `${server.databasePath}-wal`]) {
      const bytes = (await Bun.file(file).exists()) ? Buffer.from(await Bun.file(file).arrayBuffer()) : Buffer.alloc(0)
      expect(bytes.includes(secret)).toBe(false)
    }
  })

  test('each key is different, and all keys of an organisation see the same inboxes', async () => {
    const orgId = await newOrg('two-keys')
    const [a, b] = [await newKey(orgId), await newKey(orgId)]
    expect(a).not.toBe(b)
    const created = await server.post('/v1/inboxes', a)
    expect((await server.get(`/v1/inboxes/${created.body.data.id}`, b)).status).toBe(200)
  })

  test('create for an unknown organisation fails and prints no key', async () => {
    const run = await cli('keys', 'create', 'org_' + '0'.repeat(32))
    expect(run.code).not.toBe(0)
    expect(run.stdout).not.toMatch(/ph_live_/)
  })

  test('list shows public ids, created, last used and revoked, never the secret', async () => {
    const orgId = await newOrg('list-org')
    const key = await newKey(orgId)
    const publicId = key.slice(8, 24)
    const before = await cli('keys', 'list', orgId)
    expect(before.code).toBe(0)
    expect(before.stdout).not.toContain(key.slice(25))
    const row = () => before.stdout.split('\n').find((line) => line.startsWith(publicId))!
    expect(row().split('\t')).toEqual([publicId, expect.stringMatching(/^\d{4}-/), '-', '-'])

    await server.get('/v1/usage', key)
    const used = (await cli('keys', 'list', orgId)).stdout.split('\n').find((line) => line.startsWith(publicId))!
    expect(used.split('\t')[2]).toMatch(/^\d{4}-\d{2}-\d{2}T/)
  })

  test('revoke by full key: the running server answers 401 at once', async () => {
    const orgId = await newOrg('revoke-full')
    const key = await newKey(orgId)
    expect((await server.get('/v1/usage', key)).status).toBe(200)
    const run = await cli('keys', 'revoke', key)
    expect(run.code).toBe(0)
    for (const [method, path] of [
      ['GET', '/v1/usage'],
      ['GET', '/v1/inboxes'],
      ['POST', '/v1/inboxes'],
    ] as const) {
      expectError(await server.request(method, path, { key }), 401, 'invalid_api_key')
    }
    const listed = (await cli('keys', 'list', orgId)).stdout
      .split('\n')
      .find((line) => line.startsWith(key.slice(8, 24)))!
    expect(listed.split('\t')[3]).toMatch(/^\d{4}-\d{2}-\d{2}T/)
  })

  test('revoke by public id leaves the organisation’s other keys working', async () => {
    const orgId = await newOrg('revoke-public')
    const [doomed, kept] = [await newKey(orgId), await newKey(orgId)]
    expect((await cli('keys', 'revoke', doomed.slice(8, 24))).code).toBe(0)
    expectError(await server.get('/v1/usage', doomed), 401, 'invalid_api_key')
    expect((await server.get('/v1/usage', kept)).status).toBe(200)
    // Revoking twice is harmless.
    expect((await cli('keys', 'revoke', doomed)).code).toBe(0)
  })

  test('a full key with a wrong secret revokes nothing', async () => {
    const orgId = await newOrg('revoke-typo')
    const key = await newKey(orgId)
    const typo = key.slice(0, -1) + (key.endsWith('0') ? '1' : '0')
    const run = await cli('keys', 'revoke', typo)
    expect(run.code).not.toBe(0)
    expect((await server.get('/v1/usage', key)).status).toBe(200)
  })

  test('revoking an unknown key fails with a non-zero code', async () => {
    const run = await cli('keys', 'revoke', 'f'.repeat(16))
    expect(run.code).not.toBe(0)
  })
})

test('an unknown command prints usage and exits non-zero', async () => {
  for (const args of [[], ['orgs'], ['keys', 'delete', 'x'], ['nope']]) {
    const run = await cli(...args)
    expect(run.code).not.toBe(0)
    expect(run.stderr).toContain('usage')
  }
})
