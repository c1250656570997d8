/** @jsxImportSource preact */
/** /console/account: change one's password, see and end one's sessions. */
import { Refusal } from '../../core/common/refusals.ts'
import { listSessions, signOutEverywhere } from '../../core/sessions/sessions.ts'
import { changePassword } from '../../core/users/users.ts'
import type { SignedIn } from '../access.ts'
import { redirect, type ConsoleRequest } from '../context.ts'
import { clearCookie, cookie, readTheme, THEME_COOKIE } from '../cookies.ts'
import { AccountPage } from '../pages/account.tsx'
import { PATHS, withQuery } from '../paths.ts'
import { renderPage } from '../render.tsx'
import { route, type Route } from '../router.ts'

async function accountPage(
  ctx: ConsoleRequest,
  { user, session }: SignedIn,
  message: { notice?: string; error?: string } = {},
  status = 200,
): Promise<Response> {
  const current = session.tokenSha256
  const sessions = (await listSessions(ctx.s, user)).map((row) => ({ ...row, current: row.tokenSha256 === current }))
  return renderPage(
    ctx,
    'Account',
    <AccountPage email={user.email} sessions={sessions} theme={readTheme(ctx.request)} {...message} />,
    { status },
  )
}

export const accountRoutes: Route[] = [
  route({
    method: 'GET',
    path: PATHS.account,
    access: 'signed-in',
    handler: (ctx, who) =>
      accountPage(
        ctx,
        who,
        ctx.url.searchParams.get('changed') === 'password'
          ? { notice: 'Password changed. Your other sessions were signed out.' }
          : {},
      ),
  }),
  route({
    method: 'POST',
    path: PATHS.accountPassword,
    access: 'signed-in',
    handler: async (ctx, who) => {
      const { user, session } = who
      try {
        const input = {
          current: ctx.field('current'),
          next: ctx.field('password'),
          keepSessionSha256: session.tokenSha256,
          clientAddress: ctx.clientAddress,
        }
        await changePassword({ ...ctx.s, throttle: ctx.deps.throttle }, user, input)
        ctx.deps.streams.recheckUser(user.id) // the other sessions' live pages end too
      } catch (error) {
        if (!(error instanceof Refusal) || (error.kind !== 'invalid' && error.kind !== 'throttled')) throw error
        return ctx.failBack(PATHS.account.link(), {
          message: error.message,
          status: error.kind === 'throttled' ? 429 : 400,
          fields: {},
          retryAfterSeconds: error.retryAfterSeconds,
        })
      }
      // A GET to show the result: reloading it does not send the passwords again.
      return redirect(withQuery(PATHS.account.link(), { changed: 'password' }))
    },
  }),
  route({
    method: 'POST',
    path: PATHS.accountTheme,
    access: 'signed-in',
    handler: (ctx) => {
      const theme = ctx.field('theme')
      if (theme !== 'light' && theme !== 'dark' && theme !== 'system')
        throw new Refusal('invalid', 'Choose a theme: as the system, light or dark.')
      // A year in this browser; "as the system" forgets the choice.
      ctx.setCookies.push(
        theme === 'system'
          ? clearCookie(THEME_COOKIE, ctx.deps.secureCookies)
          : cookie(THEME_COOKIE, theme, { secure: ctx.deps.secureCookies, maxAgeSeconds: 365 * 86_400 }),
      )
      return redirect(PATHS.account.link())
    },
  }),
  route({
    method: 'POST',
    path: PATHS.accountSignOutEverywhere,
    access: 'signed-in',
    handler: async (ctx, { user }) => {
      await signOutEverywhere(ctx.s, ctx.actor(), { user })
      await ctx.endSession()
      return redirect(PATHS.signIn.link())
    },
  }),
]
