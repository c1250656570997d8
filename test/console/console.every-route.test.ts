/**
 * One auth suite over the console's whole route table (new routes are covered by being
 * listed): without a session every page sends the browser to sign-in and every action is
 * refused; a signed-in user who is not a member of the organisation in the path gets 404
 * from every route under it, as for an unknown id; only the operator reaches /console/admin.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { CONSOLE_ROUTES } from '../../src/console/index.ts'
import { ConsoleClient, PASSWORD, setUp } from '../support/console-client.ts'
import { multipartMessage, randomAttachment } from '../support/deploy-mime.ts'
import { startTestServer, type TestServer } from '../support/harness.ts'
import { sendMail } from '../support/smtp.ts'

/** Routes anyone may reach (signing out without a session just leads to sign-in); everything else needs a session. */
const PUBLIC = new Set([
  'POST /console/sign-out',
  'GET /console/assets/console.css',
  'GET /console/assets/console.js',
  'GET /console/assets/live-worker.js',
  'GET /setup',
  'POST /setup',
  'GET /console/sign-in',
  'POST /console/sign-in',
  'GET /console/invites/:token',
  'POST /console/invites/:token',
])

let server: TestServer
let owner: ConsoleClient
let stranger: ConsoleClient
let orgA: string
const params: Record<string, string> = {}

beforeAll(async () => {
  server = await startTestServer()
  ;({ client: owner, organizationId: orgA } = await setUp(server, { email: 'owner@example.com' }))
  // Real ids inside organisation A, so a 404 cannot come from an unknown id alone.
  const keys = await owner.get(`/console/orgs/${orgA}/keys`)
  const members = await owner.get(`/console/orgs/${orgA}/members`)
  await owner.post(`/console/orgs/${orgA}/invites`, { role: 'owner' })
  const open = await owner.get(`/console/orgs/${orgA}/members`)
  const inbox = /inboxes\/(inbox_[0-9a-f]{32})$/.exec(
    (await owner.post(`/console/orgs/${orgA}/inboxes`, { prefix: 'every-route' })).location!,
  )![1]!
  const to = 'every-route@inbox.test'
  await sendMail(
    server.app.smtpPort,
    { to: [to] },
    multipartMessage({ to, subject: 'Hi', text: 'Hi', attachments: [randomAttachment('a.bin', 10)] }),
  )
  const messagePage = await owner.get(`/console/orgs/${orgA}/inboxes/${inbox}`)
  const message = /\/messages\/(msg_[0-9a-f]{32})/.exec(messagePage.html)![1]!
  const attachment = /\/attachments\/(att_[0-9a-f]{32})/.exec(
    (await owner.get(`/console/orgs/${orgA}/messages/${message}`)).html,
  )![1]!
  Object.assign(params, {
    org: orgA,
    key: /data-key="([0-9a-f]{16})"/.exec(keys.html)![1]!,
    user: /\/members\/(user_[0-9a-f]{32})\//.exec(members.html)![1]!,
    invite: /\/invites\/(invite_[0-9a-f]{32})\/withdraw/.exec(open.html)![1]!,
    inbox,
    message,
    attachment,
  })
  // A second organisation whose owner is a stranger to A.
  const created = await owner.post('/console/admin/orgs', { name: 'Org B', preset: 'hosted' })
  const orgB = /orgs\/(org_[0-9a-f]{32})/.exec(created.location!)![1]!
  await owner.get(`/console/orgs/${orgB}/members`)
  const invited = await owner.get((await owner.post(`/console/orgs/${orgB}/invites`, { role: 'owner' })).location!)
  const link = new URL(/value="(http[^"]+)"/.exec(invited.html)![1]!).pathname
  stranger = new ConsoleClient(server.url)
  await stranger.get(link)
  await stranger.post(link, { email: 'stranger@example.com', password: PASSWORD })
  await stranger.get(`/console/orgs/${orgB}`)
})
afterAll(() => server.stop())

/** The route's path with every `:name` filled from organisation A (other names get a made-up value). */
const pathOf = (path: string) =>
  path.replace(/:([a-z]+)/g, (_, name: string) => encodeURIComponent(params[name] ?? `x_${name}`))

const routes = CONSOLE_ROUTES.map((route) => ({ ...route, id: `${route.method} ${route.path}` }))

describe('without a session', () => {
  for (const route of routes.filter((r) => !PUBLIC.has(r.id))) {
    test(`${route.id}: sign-in for a page, refusal for an action`, async () => {
      const client = new ConsoleClient(server.url)
      await client.get('/console/sign-in') // a pre-session CSRF token, as a browser would have
      const response =
        route.method === 'GET' ? await client.get(pathOf(route.path)) : await client.post(pathOf(route.path), {})
      if (route.method === 'GET') {
        expect(response.status).toBe(303)
        expect(response.location).toStartWith('/console/sign-in?next=')
      } else {
        expect(response.status).toBe(401)
      }
    })
  }
})

describe('a signed-in stranger to the organisation', () => {
  for (const route of routes.filter((r) => r.path.includes(':org'))) {
    test(`${route.id}: 404, as for an unknown id`, async () => {
      const response =
        route.method === 'GET'
          ? await stranger.get(pathOf(route.path))
          : await stranger.post(pathOf(route.path), { role: 'owner', name: 'x' })
      expect(response.status).toBe(404)
    })
  }

  for (const route of routes.filter((r) => r.path.startsWith('/console/admin'))) {
    test(`${route.id}: 404 for anyone but the operator`, async () => {
      const response =
        route.method === 'GET'
          ? await stranger.get(pathOf(route.path))
          : await stranger.post(pathOf(route.path), { name: 'x' })
      expect(response.status).toBe(404)
    })
  }
})

test('every route refuses a POST without the form token, or from another origin', async () => {
  for (const route of routes.filter((r) => r.method === 'POST')) {
    expect((await owner.post(pathOf(route.path), {}, { csrf: null })).status).toBe(403)
    expect((await owner.post(pathOf(route.path), {}, { origin: 'https://evil.test' })).status).toBe(403)
  }
  expect((await owner.get(`/console/orgs/${orgA}`)).status).toBe(200) // nothing above changed the owner's access
})
