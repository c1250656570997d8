/** @jsxImportSource preact */
/** /console/account: change one's password, see and end one's sessions. */
import { Refusal } from '../../core/refusals.ts'
import { listSessions, signOutEverywhere } from '../../core/sessions/sessions.ts'
import { changePassword } from '../../core/users/users.ts'
import { redirect, type ConsoleRequest } from '../context.ts'
import { AccountPage } from '../pages/account.tsx'
import { renderPage } from '../render.tsx'
import type { Route } from '../router.ts'

function accountPage(ctx: ConsoleRequest, message: { notice?: string; error?: string } = {}, status = 200): Response {
  const user = ctx.requireUser()
  const current = ctx.session!.tokenSha256
  const sessions = listSessions(ctx.s, user).map((row) => ({ ...row, current: row.tokenSha256 === current }))
  return renderPage(ctx, 'Account', <AccountPage email={user.email} sessions={sessions} {...message} />, { status })
}

export const accountRoutes: Route[] = [
  { method: 'GET', path: '/console/account', handler: (ctx) => accountPage(ctx) },
  {
    method: 'POST',
    path: '/console/account/password',
    handler: async (ctx) => {
      const user = ctx.requireUser()
      try {
        const input = { current: ctx.field('current'), next: ctx.field('password'), keepSessionSha256: ctx.session!.tokenSha256, clientAddress: ctx.clientAddress }
        await changePassword({ ...ctx.s, throttle: ctx.deps.throttle }, user, input)
        ctx.deps.streams.recheckUser(user.id) // the other sessions' live pages end too
      } catch (error) {
        if (!(error instanceof Refusal) || (error.kind !== 'invalid' && error.kind !== 'throttled')) throw error
        const page = accountPage(ctx, { error: error.message }, error.kind === 'throttled' ? 429 : 400)
        if (error.retryAfterSeconds) page.headers.set('retry-after', String(error.retryAfterSeconds))
        return page
      }
      return accountPage(ctx, { notice: 'Password changed. Your other sessions were signed out.' })
    },
  },
  {
    method: 'POST',
    path: '/console/account/sessions/revoke',
    handler: (ctx) => {
      signOutEverywhere(ctx.s, ctx.actor(), { user: ctx.requireUser() })
      ctx.endSession()
      return redirect('/console/sign-in')
    },
  },
]
