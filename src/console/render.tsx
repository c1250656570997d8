/** @jsxImportSource preact */
/** Turns a page component into an HTML response inside the shared Layout. */
import type { ComponentChildren } from 'preact'
import { render } from 'preact-render-to-string'
import { membershipsOf, type Membership } from '../core/organizations/organizations.ts'
import type { ConsoleRequest } from './context.ts'
import { readTheme } from './cookies.ts'
import { Layout, type Shell, ShellContext } from './pages/shell.tsx'

export interface PageOptions {
  status?: number
  /** The organisation the page belongs to (the route's resolved membership): shows its navigation. */
  org?: Membership
  section?: string
}

export async function renderPage(
  ctx: ConsoleRequest,
  title: string,
  body: ComponentChildren,
  options: PageOptions = {},
): Promise<Response> {
  const user = ctx.user
  const shell: Shell = {
    user,
    csrf: ctx.csrfToken(),
    memberships: user ? await membershipsOf(ctx.s, user) : [],
    org: options.org,
    section: options.section,
    theme: readTheme(ctx.request),
  }
  // A refused form's message, on the page its POST redirected to (ConsoleRequest.failBack).
  const failed = ctx.failedForm()
  const html =
    '<!doctype html>' +
    render(
      <Layout shell={shell} title={title}>
        {failed && (
          <p class="error" role="alert" id="form-error">
            {failed.message}
          </p>
        )}
        {body}
      </Layout>,
    )
  const response = new Response(html, {
    status: failed && (options.status ?? 200) === 200 ? failed.status : (options.status ?? 200),
    headers: { 'content-type': 'text/html; charset=utf-8' },
  })
  if (failed?.retryAfterSeconds) response.headers.set('retry-after', String(failed.retryAfterSeconds))
  return response
}

/**
 * A part of a page alone, without the layout (no navigation, so no read of the user's
 * memberships): what a page's script asks for when it refreshes that part in place.
 */
export function renderFragment(ctx: ConsoleRequest, body: ComponentChildren): Response {
  const shell: Shell = { user: ctx.user, csrf: ctx.csrfToken(), memberships: [] }
  const html = render(<ShellContext.Provider value={shell}>{body}</ShellContext.Provider>)
  return new Response(html, { headers: { 'content-type': 'text/html; charset=utf-8' } })
}
