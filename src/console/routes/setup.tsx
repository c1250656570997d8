/** @jsxImportSource preact */
/** GET/POST /setup: a 404 unless the one-time setup token is given and no user exists yet. */
import { Refusal, notFound } from '../../core/common/refusals.ts'
import { completeSetup, isSetupToken } from '../../core/users/setup.ts'
import { redirect } from '../context.ts'
import { PATHS, withQuery } from '../paths.ts'
import { route, type Route } from '../router.ts'
import { renderPage } from '../render.tsx'
import { FirstSteps, SetupForm, suggestedPreset } from '../pages/setup.tsx'

export const setupRoutes: Route[] = [
  route({
    method: 'GET',
    path: PATHS.welcome,
    access: 'member',
    handler: async (ctx, { org }) => {
      const held = ctx.shown(ctx.url.searchParams.get('key'), 'api_key')
      const key = held?.organizationId === org.organizationId ? held.key : undefined
      const page = (
        <FirstSteps
          organizationId={org.organizationId}
          apiKey={key}
          baseUrl={ctx.s.publicUrls().baseUrl}
          smtpHint={ctx.deps.smtpAddress()}
        />
      )
      return renderPage(ctx, 'Ready', page, { org, section: 'overview' })
    },
  }),
  route({
    method: 'GET',
    path: PATHS.setup,
    // Public: the one-time token in the query is the credential.
    access: 'public',
    handler: async (ctx) => {
      const token = ctx.url.searchParams.get('token')
      if (!(await isSetupToken(ctx.s, { token }))) throw notFound()
      const form = (
        <SetupForm
          token={token!}
          defaults={ctx.s.config.limits}
          suggested={suggestedPreset(ctx.s.publicUrls().baseUrl)}
          email={ctx.failedField('email')}
          organization={ctx.failedField('organization')}
        />
      )
      return renderPage(ctx, 'Set up', form)
    },
  }),
  route({
    method: 'POST',
    path: PATHS.setup,
    access: 'public',
    handler: async (ctx) => {
      const input = {
        token: ctx.field('token'),
        email: ctx.field('email'),
        password: ctx.field('password'),
        organization: ctx.field('organization'),
        preset: ctx.field('preset'),
      }
      try {
        const done = await completeSetup(ctx.s, { clientAddress: ctx.clientAddress }, input)
        await ctx.startSession(done.user.id)
        ctx.s.logger.info('console_setup_completed', {
          user_id: done.user.id,
          organization_id: done.organization.id,
          key_public_id: done.key.publicId,
        })
        // The key is shown on the GET this redirects to (post/redirect/get, as new keys are): a reload shows it again.
        const shown = ctx.holdShown({
          kind: 'api_key',
          organizationId: done.organization.id,
          name: 'first key',
          key: done.key.key,
        })
        return redirect(withQuery(PATHS.welcome.link(done.organization.id), { key: shown }))
      } catch (error) {
        if (!(error instanceof Refusal) || error.kind !== 'invalid') throw error
        return ctx.failBack(withQuery(PATHS.setup.link(), { token: input.token }), {
          message: error.message,
          status: 400,
          fields: { email: input.email, organization: input.organization },
        })
      }
    },
  }),
]
