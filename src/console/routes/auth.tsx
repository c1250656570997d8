/** @jsxImportSource preact */
/** Sign-in, sign-out, and /console itself (which sends a user to their organisation). */
import { Refusal } from '../../core/common/refusals.ts'
import { membershipsOf } from '../../core/organizations/organizations.ts'
import { signIn } from '../../core/users/sign-in.ts'
import { countUsers } from '../../core/users/users.ts'
import { redirect, safeNext } from '../context.ts'
import { SignInForm } from '../pages/sign-in.tsx'
import { PATHS, withQuery } from '../paths.ts'
import { renderPage } from '../render.tsx'
import { route, type Route } from '../router.ts'

export const authRoutes: Route[] = [
  route({
    method: 'GET',
    path: PATHS.home,
    access: 'signed-in',
    handler: async (ctx, { user }) => {
      const memberships = await membershipsOf(ctx.s, user)
      if (memberships.length === 1) return redirect(PATHS.organization.link(memberships[0]!.organizationId))
      return renderPage(
        ctx,
        'Organisations',
        <section class="card">
          <h2>Your organisations</h2>
          {memberships.length === 0 ? (
            <p>
              You do not belong to any organisation yet. Ask an owner for an invite link
              {user.isOperator ? ', or create one on the operator page' : ''}.
            </p>
          ) : (
            <ul>
              {memberships.map((m) => (
                <li>
                  <a href={PATHS.organization.link(m.organizationId)}>{m.name}</a> <span class="badge">{m.role}</span>
                </li>
              ))}
            </ul>
          )}
        </section>,
      )
    },
  }),
  route({
    method: 'GET',
    path: PATHS.signIn,
    access: 'public',
    handler: async (ctx, { user }) => {
      const next = safeNext(ctx.url.searchParams.get('next'))
      if (user) return redirect(next)
      const notSetUp = (await countUsers(ctx.s)) === 0
      return renderPage(ctx, 'Sign in', <SignInForm next={next} notSetUp={notSetUp} email={ctx.failedField('email')} />)
    },
  }),
  route({
    method: 'POST',
    path: PATHS.signIn,
    access: 'public',
    handler: async (ctx) => {
      const next = safeNext(ctx.field('next'))
      try {
        const user = await signIn(
          { ...ctx.s, throttle: ctx.deps.throttle },
          { clientAddress: ctx.clientAddress },
          { email: ctx.field('email'), password: ctx.field('password') },
        )
        await ctx.startSession(user.id)
        ctx.s.logger.info('console_signed_in', { user_id: user.id })
        return redirect(next)
      } catch (error) {
        if (!(error instanceof Refusal) || (error.kind !== 'unauthenticated' && error.kind !== 'throttled')) throw error
        ctx.s.logger.info('console_sign_in_refused', { reason: error.kind })
        // Back to the form, not a page: reloading it is not another guess toward the lockout.
        return ctx.failBack(withQuery(PATHS.signIn.link(), { next }), {
          message: error.message,
          status: error.kind === 'throttled' ? 429 : 401,
          fields: { email: ctx.field('email') },
          retryAfterSeconds: error.retryAfterSeconds,
        })
      }
    },
  }),
  route({
    // Public: signing out without a session just leads to sign-in.
    method: 'POST',
    path: PATHS.signOut,
    access: 'public',
    handler: async (ctx) => {
      await ctx.endSession()
      return redirect(PATHS.signIn.link())
    },
  }),
]
