/**
 * Members, invites and the permission rules of the console over real HTTP: owners manage,
 * members read, the operator alone reaches /console/admin, another organisation's ids are
 * 404, and an organisation always keeps an owner.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ManualClock } from '../../src/clock.ts'
import { INVITE_LIFETIME_MS } from '../../src/core/members/invites.ts'
import { startTestServer, type TestServer } from '../support/harness.ts'
import { ConsoleClient, PASSWORD, setUp, signedIn } from '../support/console-client.ts'

const clock = new ManualClock('2026-05-04T09:00:00.000Z')
let server: TestServer
let owner: ConsoleClient
let orgA: string

beforeAll(async () => {
  server = await startTestServer({ clock })
  ;({ client: owner, organizationId: orgA } = await setUp(server, {
    email: 'owner@example.com',
    organization: 'Org A',
  }))
})
afterAll(() => server.stop())

/** Creates an invite as `by` and returns the link's path. */
async function invite(by: ConsoleClient, organizationId: string, role: 'owner' | 'member' = 'member'): Promise<string> {
  await by.get(`/console/orgs/${organizationId}/members`)
  const made = await by.post(`/console/orgs/${organizationId}/invites`, { role })
  expect(made.status).toBe(303) // post/redirect/get: the link is shown on the page it redirects to
  const page = await by.get(made.location!)
  expect(page.status).toBe(200)
  const link = /value="(http[^"]+\/console\/invites\/[A-Za-z0-9_-]{43})"/.exec(page.html)?.[1]
  if (!link) throw new Error('no invite link on the page')
  return new URL(link).pathname
}

/** Opens the invite link as a stranger and creates the account; returns the signed-in client. */
async function join(path: string, email: string): Promise<ConsoleClient> {
  const client = new ConsoleClient(server.url)
  expect((await client.get(path)).status).toBe(200)
  const page = await client.post(path, { email, password: PASSWORD })
  expect(page.status).toBe(303)
  await client.get(page.location!)
  return client
}

const userIdOf = async (client: ConsoleClient, organizationId: string, email: string): Promise<string> => {
  const page = await client.get(`/console/orgs/${organizationId}/members`)
  const row = page.html.slice(page.html.indexOf(`data-member="${email}"`))
  return /\/members\/(user_[0-9a-f]{32})\//.exec(row)![1]!
}

describe('invites', () => {
  test('an invite link makes a new account a member, works once, and is audited', async () => {
    const path = await invite(owner, orgA)
    const member = await join(path, 'member@example.com')
    expect((await member.get(`/console/orgs/${orgA}`)).status).toBe(200)
    expect((await new ConsoleClient(server.url).get(path)).status).toBe(404) // used
    const audit = await owner.get(`/console/orgs/${orgA}/audit`)
    expect(audit.html).toContain('member.invited')
    expect(audit.html).toContain('member.joined')
  })

  test('an expired or withdrawn invite answers 404', async () => {
    const expiring = await invite(owner, orgA)
    clock.advance(INVITE_LIFETIME_MS + 1)
    expect((await new ConsoleClient(server.url).get(expiring)).status).toBe(404)
    const withdrawn = await invite(owner, orgA)
    const members = await owner.get(`/console/orgs/${orgA}/members`)
    const inviteId = /\/invites\/(invite_[0-9a-f]{32})\/withdraw/.exec(members.html)![1]
    expect((await owner.post(`/console/orgs/${orgA}/invites/${inviteId}/withdraw`)).status).toBe(303)
    expect((await new ConsoleClient(server.url).get(withdrawn)).status).toBe(404)
  })

  test('an existing account signs in first and then joins with one button', async () => {
    const { organizationId: orgB } = await (async () => {
      const page = await owner.post('/console/admin/orgs', { name: 'Org B', preset: 'hosted' })
      expect(page.status).toBe(303)
      return { organizationId: /orgs\/(org_[0-9a-f]{32})/.exec(page.location!)![1]! }
    })()
    const path = await invite(owner, orgB)
    const member = await signedIn(server, 'member@example.com')
    await member.get(path)
    const joined = await member.post(path)
    expect([joined.status, joined.location]).toEqual([303, `/console/orgs/${orgB}`])
    const outsider = new ConsoleClient(server.url)
    await outsider.get(await invite(owner, orgB))
    const taken = await outsider.post(await invite(owner, orgB), { email: 'member@example.com', password: PASSWORD })
    expect(taken.status).toBe(409)
  })
})

describe('what a member may not do', () => {
  let member: ConsoleClient
  beforeAll(async () => {
    member = await signedIn(server, 'member@example.com')
    await member.get(`/console/orgs/${orgA}/members`)
  })

  test('a member reads the organisation, its members and its keys list', async () => {
    for (const path of ['', '/members', '/keys'])
      expect((await member.get(`/console/orgs/${orgA}${path}`)).status).toBe(200)
  })

  test('a member may not create or revoke keys, invite, change roles, remove others, or read the audit log (403)', async () => {
    const ownerId = await userIdOf(owner, orgA, 'owner@example.com')
    const keysPage = await owner.get(`/console/orgs/${orgA}/keys`)
    const publicId = /data-key="([0-9a-f]{16})"/.exec(keysPage.html)![1]
    await member.get(`/console/orgs/${orgA}/members`)
    expect((await member.post(`/console/orgs/${orgA}/keys`, { name: 'mine' })).status).toBe(403)
    expect((await member.post(`/console/orgs/${orgA}/keys/${publicId}/revoke`)).status).toBe(403)
    expect((await member.post(`/console/orgs/${orgA}/invites`, { role: 'owner' })).status).toBe(403)
    expect((await member.post(`/console/orgs/${orgA}/members/${ownerId}/role`, { role: 'member' })).status).toBe(403)
    expect((await member.post(`/console/orgs/${orgA}/members/${ownerId}/remove`)).status).toBe(403)
    expect((await member.get(`/console/orgs/${orgA}/audit`)).status).toBe(403)
    await owner.post(`/console/orgs/${orgA}/invites`, { role: 'member' })
    const open = await owner.get(`/console/orgs/${orgA}/members`)
    const inviteId = /\/invites\/(invite_[0-9a-f]{32})\/withdraw/.exec(open.html)![1]
    await member.get(`/console/orgs/${orgA}/members`)
    expect((await member.post(`/console/orgs/${orgA}/invites/${inviteId}/withdraw`)).status).toBe(403)
    const keys = await server.get('/v1/usage', /value="(ph_live_[^"]+)"/.exec(keysPage.html)?.[1] ?? null)
    expect(keys.status).toBe(401) // the list never shows a secret
  })

  test('the operator pages do not exist for anyone else (404)', async () => {
    expect((await member.get('/console/admin')).status).toBe(404)
    expect((await member.get(`/console/admin/orgs/${orgA}`)).status).toBe(404)
    expect((await member.post(`/console/admin/orgs/${orgA}/limits`, { monthlyEmails: '1000000' })).status).toBe(404)
    expect((await member.post('/console/admin/orgs', { name: 'Mine' })).status).toBe(404)
  })
})

describe('another organisation', () => {
  test('a stranger gets 404 for every page and action of an organisation they are not in, as for an unknown id', async () => {
    const stranger = await join(await invite(owner, await newOrg('Org C')), 'stranger@example.com')
    const ownerId = await userIdOf(owner, orgA, 'owner@example.com')
    const unknown = 'org_' + '0'.repeat(32)
    for (const org of [orgA, unknown]) {
      for (const path of ['', '/members', '/keys', '/audit'])
        expect((await stranger.get(`/console/orgs/${org}${path}`)).status).toBe(404)
      expect((await stranger.post(`/console/orgs/${org}/keys`, { name: 'x' })).status).toBe(404)
      expect((await stranger.post(`/console/orgs/${org}/invites`, { role: 'owner' })).status).toBe(404)
      expect((await stranger.post(`/console/orgs/${org}/members/${ownerId}/remove`)).status).toBe(404)
    }
  })

  test("an invite or a member of another organisation cannot be touched through one's own (404)", async () => {
    const orgG = await newOrg('Org G')
    const orgH = await newOrg('Org H')
    await owner.get(`/console/orgs/${orgH}/members`)
    await owner.post(`/console/orgs/${orgH}/invites`, { role: 'member' })
    await join(await invite(owner, orgH), 'h-member@example.com')
    const inH = await owner.get(`/console/orgs/${orgH}/members`)
    const inviteId = /\/invites\/(invite_[0-9a-f]{32})\/withdraw/.exec(inH.html)![1]!
    const memberId = await userIdOf(owner, orgH, 'h-member@example.com')
    await owner.get(`/console/orgs/${orgG}/members`)
    expect((await owner.post(`/console/orgs/${orgG}/invites/${inviteId}/withdraw`)).status).toBe(404)
    expect((await owner.post(`/console/orgs/${orgG}/members/${memberId}/remove`)).status).toBe(404)
    expect((await owner.post(`/console/orgs/${orgG}/members/${memberId}/role`, { role: 'owner' })).status).toBe(404)
    const still = await owner.get(`/console/orgs/${orgH}/members`)
    expect(still.html).toContain(inviteId)
    expect(still.html).toContain('h-member@example.com')
  })

  test("a key of another organisation cannot be revoked through one's own (404), and stays valid", async () => {
    const orgD = await newOrg('Org D')
    await owner.get(`/console/orgs/${orgA}/keys`)
    const created = await owner.get((await owner.post(`/console/orgs/${orgA}/keys`, { name: 'A key' })).location!)
    const key = /value="(ph_live_[0-9a-f_]+)"/.exec(created.html)![1]!
    const publicId = key.slice(8, 24)
    expect((await owner.post(`/console/orgs/${orgD}/keys/${publicId}/revoke`)).status).toBe(404)
    expect((await server.get('/v1/usage', key)).status).toBe(200)
  })
})

describe('owners', () => {
  test('the last owner can neither leave nor step down (409); with a second owner both work', async () => {
    const orgE = await newOrg('Org E')
    const ownerId = await userIdOf(owner, orgE, 'owner@example.com')
    await owner.get(`/console/orgs/${orgE}/members`)
    expect((await owner.post(`/console/orgs/${orgE}/members/${ownerId}/remove`)).status).toBe(409)
    expect((await owner.post(`/console/orgs/${orgE}/members/${ownerId}/role`, { role: 'member' })).status).toBe(409)
    const second = await join(await invite(owner, orgE, 'member'), 'second@example.com')
    const secondId = await userIdOf(owner, orgE, 'second@example.com')
    await owner.get(`/console/orgs/${orgE}/members`)
    expect((await owner.post(`/console/orgs/${orgE}/members/${secondId}/role`, { role: 'owner' })).status).toBe(303)
    expect((await owner.post(`/console/orgs/${orgE}/members/${ownerId}/remove`)).status).toBe(303)
    expect((await owner.get(`/console/orgs/${orgE}`)).status).toBe(404) // gone from it
    await second.get(`/console/orgs/${orgE}/members`)
    expect((await second.post(`/console/orgs/${orgE}/members/${secondId}/remove`)).status).toBe(409)
    const audit = await second.get(`/console/orgs/${orgE}/audit`)
    expect(audit.html).toContain('member.role_changed')
    expect(audit.html).toContain('member.removed')
  })

  test('an owner removes a member, who then gets 404', async () => {
    const orgF = await newOrg('Org F')
    const gone = await join(await invite(owner, orgF), 'gone@example.com')
    const goneId = await userIdOf(owner, orgF, 'gone@example.com')
    await owner.get(`/console/orgs/${orgF}/members`)
    expect((await owner.post(`/console/orgs/${orgF}/members/${goneId}/remove`)).status).toBe(303)
    expect((await gone.get(`/console/orgs/${orgF}`)).status).toBe(404)
  })
})

async function newOrg(name: string): Promise<string> {
  await owner.get('/console/admin')
  const page = await owner.post('/console/admin/orgs', { name, preset: 'hosted' })
  expect(page.status).toBe(303)
  return /orgs\/(org_[0-9a-f]{32})/.exec(page.location!)![1]!
}
