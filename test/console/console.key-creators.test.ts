/**
 * Keys of a member who leaves: keys belong to the organisation, so they keep working, but
 * the keys page names each key's maker and marks the keys whose maker left, and the removal
 * is audited with the number of keys that stay active.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { findUserByEmail } from '../../src/core/users/users.ts'
import { addMember, type ConsoleClient, setUp } from '../support/console-client.ts'
import { startTestServer, type TestServer } from '../support/harness.ts'

// A hang's deadline, not a speed: on a busy machine this file's server and processes take
// well over Bun's default of 5 s.
setDefaultTimeout(30_000)

let server: TestServer
let operator: ConsoleClient
let org: string
let firstKey: string

beforeAll(async () => {
  server = await startTestServer()
  ;({ client: operator, organizationId: org, key: firstKey } = await setUp(server, { email: 'op@example.com' }))
})
afterAll(() => server.stop())

const publicIdOf = (key: string) => key.slice('ph_live_'.length, 'ph_live_'.length + 16)

/** The keys page's row for a key, as text. */
async function row(by: ConsoleClient, key: string): Promise<string> {
  const page = await by.get(`/console/orgs/${org}/keys`)
  expect(page.status).toBe(200)
  const start = page.html.indexOf(`data-key="${publicIdOf(key)}"`)
  expect(start).toBeGreaterThan(0)
  return page.html.slice(start, page.html.indexOf('</tr>', start))
}

test("each key's maker is shown: the console user who made it, or the CLI", async () => {
  expect(await row(operator, firstKey)).toContain('op@example.com')
  const cliKey = await server.extraKey(org)
  const cliRow = await row(operator, cliKey)
  expect(cliRow).toContain('the CLI')
  expect(cliRow).not.toContain('left the organisation')
  const page = await operator.get(`/console/orgs/${org}/keys`)
  expect(page.html).toContain('<th scope="col">Created by</th>')
})

test("a departed member's keys keep working, are marked on the keys page, and the removal says how many stay", async () => {
  const member = await addMember(server, operator, org, 'maker@example.com')
  const makerId = (await findUserByEmail(server.app.services, 'maker@example.com'))!.id
  await operator.get(`/console/orgs/${org}/members`)
  expect((await operator.post(`/console/orgs/${org}/members/${makerId}/role`, { role: 'owner' })).status).toBe(303)
  const made: string[] = []
  for (const name of ['maker CI', 'maker staging']) {
    await member.get(`/console/orgs/${org}/keys`)
    const page = await member.get((await member.post(`/console/orgs/${org}/keys`, { name })).location!)
    made.push(/value="(ph_live_[0-9a-f]{16}_[0-9a-f]{48})"/.exec(page.html)![1]!)
  }
  const [kept, revoked] = made as [string, string]
  expect(await row(operator, kept)).toContain('maker@example.com')
  expect(await row(operator, kept)).not.toContain('left the organisation')
  await member.get(`/console/orgs/${org}/keys`)
  expect((await member.post(`/console/orgs/${org}/keys/${publicIdOf(revoked)}/revoke`)).status).toBe(303)

  await operator.get(`/console/orgs/${org}/members`)
  expect((await operator.post(`/console/orgs/${org}/members/${makerId}/remove`)).status).toBe(303)

  // The decision: the key stays active (a CI job keeps working) and is marked for rotation.
  expect((await server.get('/v1/usage', kept)).status).toBe(200)
  const keptRow = await row(operator, kept)
  expect(keptRow).toContain('maker@example.com')
  expect(keptRow).toContain('left the organisation')
  expect(await row(operator, revoked)).not.toContain('left the organisation')
  expect(await row(operator, firstKey)).not.toContain('left the organisation')
  const audit = await operator.get(`/console/orgs/${org}/audit`)
  expect(audit.html).toContain('1 active key they made stay active')
})
