/**
 * Templates escape by construction: hostile text in every field a page shows comes out as
 * text, in element content and in attributes, through the real components and over HTTP.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { render } from 'preact-render-to-string'
import { CopyField, Layout, PostForm, ShellContext, type Shell } from '../../src/console/pages/shell.tsx'
import { startTestServer, type TestServer } from '../support/harness.ts'
import { setUp } from '../support/console-client.ts'

const HOSTILE = [
  '<script>alert(1)</script>',
  '"><img src=x onerror=alert(1)>',
  "'><svg/onload=alert(1)>",
  '</title><script>alert(1)</script>',
  '<iframe srcdoc="<script>alert(1)</script>">',
  '&lt;script&gt; already escaped',
]

/** No tag or attribute that a hostile string tried to open survives as markup. */
function expectInert(html: string) {
  expect(html).not.toContain('<script>alert')
  expect(html).not.toContain('<img src=x')
  expect(html).not.toContain('<svg')
  expect(html).not.toContain('<iframe')
  // An event handler attribute inside a real tag (escaped text may still read "onerror=").
  expect(html).not.toMatch(/<[a-z][^<>]*\son(error|load)=/i)
}

test('the layout, forms and copy fields escape hostile names, emails and values', () => {
  for (const evil of HOSTILE) {
    const shell: Shell = {
      user: { id: 'user_1', email: evil, passwordHash: '', isOperator: true, createdAt: evil },
      csrf: evil,
      memberships: [{ organizationId: evil, name: evil, role: 'owner' }],
      org: { organizationId: evil, name: evil, role: 'owner' },
    }
    const html = render(
      <Layout shell={shell} title={evil}>
        <ShellContext.Provider value={shell}>
          <p>{evil}</p>
          <PostForm action="/console/x" confirm={evil}>
            <input name="x" value={evil} />
          </PostForm>
          <CopyField id="k" label={evil} value={evil} />
        </ShellContext.Provider>
      </Layout>,
    )
    expectInert(html)
    // Every hostile string arrives as escaped text (&, < and " escaped), never as markup.
    expect(html).toContain(`<p>${evil.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('"', '&quot;')}</p>`)
  }
})

let server: TestServer
beforeAll(async () => {
  server = await startTestServer()
})
afterAll(() => server.stop())

test('an organisation named with markup is shown as text on its pages', async () => {
  const { client, organizationId } = await setUp(server, {
    organization: '<script>alert(1)</script>"><img src=x onerror=alert(1)>',
  })
  const page = await client.get(`/console/orgs/${organizationId}`)
  expect(page.status).toBe(200)
  expectInert(page.html)
  expect(page.html).toContain('&lt;script>alert(1)&lt;/script>')
})
