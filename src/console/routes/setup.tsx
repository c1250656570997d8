/** @jsxImportSource preact */
/** GET/POST /setup: a 404 unless the one-time setup token is given and no user exists yet. */
import { Refusal, notFound } from '../../core/refusals.ts'
import { completeSetup, isSetupToken } from '../../core/users/setup.ts'
import { PATHS } from '../paths.ts'
import { route, type Route } from '../router.ts'
import { renderPage } from '../render.tsx'
import { FirstSteps, SetupForm, suggestedPreset } from '../pages/setup.tsx'

export const setupRoutes: Route[] = [
  route({
    method: 'GET',
    path: PATHS.setup,
    // Public: the one-time token in the query is the credential.
    access: 'public',
    handler: async (ctx) => {
      const token = ctx.url.searchParams.get('token')
      if (!(await isSetupToken(ctx.s, { token }))) throw notFound()
      return renderPage(ctx, 'Set up', <SetupForm token={token!} defaults={ctx.s.config.limits} suggested={suggestedPreset(ctx.s.publicUrls().baseUrl)} />)
    },
  }),
  route({
    method: 'POST',
    path: PATHS.setup,
    access: 'public',
    handler: async (ctx) => {
      const input = { token: ctx.field('token'), email: ctx.field('email'), password: ctx.field('password'), organization: ctx.field('organization'), preset: ctx.field('preset') }
      try {
        const done = await completeSetup(ctx.s, { clientAddress: ctx.clientAddress }, input)
        await ctx.startSession(done.user.id)
        ctx.s.logger.info('console_setup_completed', { user_id: done.user.id, organization_id: done.organization.id, key_public_id: done.key.publicId })
        return renderPage(ctx, 'Ready', <FirstSteps organizationId={done.organization.id} apiKey={done.key.key} baseUrl={ctx.s.publicUrls().baseUrl} smtpHint={ctx.deps.smtpAddress()} />)
      } catch (error) {
        if (!(error instanceof Refusal) || error.kind !== 'invalid') throw error
        const form = (
          <SetupForm
            token={input.token}
            defaults={ctx.s.config.limits}
            suggested={suggestedPreset(ctx.s.publicUrls().baseUrl)}
            error={error.message}
            email={input.email}
            organization={input.organization}
          />
        )
        return renderPage(ctx, 'Set up', form, { status: 400 })
      }
    },
  }),
]
