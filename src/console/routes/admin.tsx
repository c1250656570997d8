/** @jsxImportSource preact */
/** /console/admin: the instance operator's pages. Anyone else gets 404, as for an unknown page. */
import { listAudit } from '../../core/audit/audit.ts'
import { Refusal, notFound } from '../../core/common/refusals.ts'
import {
  changeLimits,
  createOrganization,
  listOrganizations,
  membershipsOf,
  organizationWithLimits,
  parseLimitInput,
} from '../../core/organizations/organizations.ts'
import { joinAsOwner } from '../../core/members/members.ts'
import { signOutEverywhere } from '../../core/sessions/sessions.ts'
import { findUser, listUsers, resetPassword } from '../../core/users/users.ts'
import { ORG_LIMIT_NAMES } from '../../core/limits/organization-limits.ts'
import { redirect, type ConsoleRequest } from '../context.ts'
import { AdminPage, LimitsForm, PasswordReset } from '../pages/admin.tsx'
import { ShownValueGone } from '../pages/shell.tsx'
import { PATHS, withQuery } from '../paths.ts'
import { renderPage } from '../render.tsx'
import { route, type Route } from '../router.ts'

async function limitsPage(ctx: ConsoleRequest<'org'>, message: { notice?: string; error?: string } = {}, status = 200) {
  const org = await organizationWithLimits(ctx.s, { organizationId: ctx.params.org })
  return renderPage(
    ctx,
    `Limits · ${org.name}`,
    <LimitsForm org={org} overrides={org.overrides} defaults={ctx.s.config.limits} {...message} />,
    { status },
  )
}

export const adminRoutes: Route[] = [
  route({
    method: 'GET',
    path: PATHS.admin,
    access: 'operator',
    handler: async (ctx, { user: me }) => {
      const mine = new Set((await membershipsOf(ctx.s, me)).map((m) => m.organizationId))
      const orgs = (await listOrganizations(ctx.s)).map((org) => ({
        id: org.id,
        name: org.name,
        createdAt: org.createdAt,
        member: mine.has(org.id),
      }))
      const page = (
        <AdminPage
          orgs={orgs}
          users={await listUsers(ctx.s)}
          me={me.id}
          defaults={ctx.s.config.limits}
          events={await listAudit(ctx.s, 'instance')}
        />
      )
      return renderPage(ctx, 'Operator', page)
    },
  }),
  route({
    method: 'POST',
    path: PATHS.adminOrganizations,
    access: 'operator',
    handler: async (ctx, { user: me }) => {
      const preset = ctx.field('preset') === 'local' ? 'local' : 'hosted'
      const org = await createOrganization(ctx.s, ctx.actor(), { name: ctx.field('name'), preset, owner: me.id })
      return redirect(PATHS.organization.link(org.id))
    },
  }),
  route({
    method: 'GET',
    path: PATHS.adminOrganization,
    access: 'operator',
    handler: (ctx) =>
      limitsPage(ctx, ctx.url.searchParams.get('saved') === 'limits' ? { notice: 'Limits saved.' } : {}),
  }),
  route({
    method: 'POST',
    path: PATHS.adminJoin,
    access: 'operator',
    handler: async (ctx) => {
      await joinAsOwner(ctx.s, ctx.actor(), { organizationId: ctx.params.org })
      return redirect(PATHS.members.link(ctx.params.org))
    },
  }),
  route({
    method: 'POST',
    path: PATHS.adminLimits,
    access: 'operator',
    handler: async (ctx) => {
      // An empty field means "follow LIMIT_*" on this form.
      const input = Object.fromEntries(
        ORG_LIMIT_NAMES.map((name) => [name, ctx.form.has(name) ? ctx.field(name).trim() || 'default' : undefined]),
      )
      try {
        await changeLimits(ctx.s, ctx.actor(), { organizationId: ctx.params.org, overrides: parseLimitInput(input) })
      } catch (error) {
        if (error instanceof Refusal && error.kind === 'invalid')
          return ctx.failBack(PATHS.adminOrganization.link(ctx.params.org), {
            message: error.message,
            status: 400,
            fields: {},
          })
        throw error
      }
      return redirect(withQuery(PATHS.adminOrganization.link(ctx.params.org), { saved: 'limits' }))
    },
  }),
  route({
    method: 'POST',
    path: PATHS.adminResetPassword,
    access: 'operator',
    handler: async (ctx, { user: me }) => {
      const user = await findUser(ctx.s, ctx.params.user)
      if (!user) throw notFound()
      const done = (await resetPassword(ctx.s, ctx.actor(), { email: user.email }))!
      ctx.deps.streams.recheckUser(user.id)
      // Resetting one's own password keeps this browser signed in
      if (user.id === me.id) await ctx.startSession(user.id)
      // Shown on the GET this redirects to (held for this browser's session, the new one after a self-reset).
      const id = ctx.holdShown({ kind: 'password', email: user.email, password: done.password })
      return redirect(withQuery(PATHS.adminPasswordReset.link(), { shown: id }))
    },
  }),
  route({
    method: 'GET',
    path: PATHS.adminPasswordReset,
    access: 'operator',
    handler: (ctx) => {
      const held = ctx.shown(ctx.url.searchParams.get('shown'), 'password')
      if (!held)
        return renderPage(ctx, 'Password reset', <ShownValueGone what="new password" back={PATHS.admin.link()} />, {
          status: 404,
        })
      return renderPage(ctx, 'Password reset', <PasswordReset email={held.email} password={held.password} />)
    },
  }),
  route({
    method: 'POST',
    path: PATHS.adminSignOutEverywhere,
    access: 'operator',
    handler: async (ctx) => {
      const user = await findUser(ctx.s, ctx.params.user)
      if (!user) throw notFound()
      await signOutEverywhere(ctx.s, ctx.actor(), { user })
      ctx.deps.streams.recheckUser(user.id)
      return redirect(PATHS.admin.link())
    },
  }),
]
