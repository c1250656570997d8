/** @jsxImportSource preact */
/** /console/account: change one's password, see and end one's sessions. */
import { ConsoleError } from '../../core/console/errors.ts'
import { endAllSessions, listSessions } from '../../core/console/sessions.ts'
import { changePassword } from '../../core/console/users.ts'
import { redirect, type ConsoleRequest } from '../context.ts'
import { AccountPage } from '../pages/account.tsx'
import { renderPage } from '../render.tsx'
import type { Route } from '../router.ts'

function accountPage(ctx: ConsoleRequest, message: { notice?: string; error?: string } = {}, status = 200): Response {
  const user = ctx.requireUser()
  const current = ctx.session!.tokenSha256
  const sessions = listSessions(ctx.s.storage.db, user.id).map((row) => ({ ...row, current: row.tokenSha256 === current }))
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
        await changePassword(ctx.s, user, ctx.field('current'), ctx.field('password'), ctx.session!.tokenSha256)
      } catch (error) {
        if (error instanceof ConsoleError && error.kind === 'invalid') return accountPage(ctx, { error: error.message }, 400)
        throw error
      }
      return accountPage(ctx, { notice: 'Password changed. Your other sessions were signed out.' })
    },
  },
  {
    method: 'POST',
    path: '/console/account/sessions/revoke',
    handler: (ctx) => {
      endAllSessions(ctx.s.storage.db, ctx.requireUser().id)
      ctx.endSession()
      return redirect('/console/sign-in')
    },
  },
]
