/** @jsxImportSource preact */
/** Members and invites of an organisation. Owners manage; anyone may leave; the last owner cannot. */
import { Refusal } from '../../core/refusals.ts'
import { acceptInvite, createInvite, listOpenInvites, openInvite, signUpWithInvite, withdrawInvite } from '../../core/members/invites.ts'
import { changeRole, listMembers, removeMember } from '../../core/members/members.ts'
import type { Role } from '../../core/organizations/organizations.ts'
import { redirect } from '../context.ts'
import { AcceptInvite, InviteCreated, MembersPage } from '../pages/members.tsx'
import { ShownValueGone } from '../pages/shell.tsx'
import { orgPath } from '../pages/shell.tsx'
import { renderPage } from '../render.tsx'
import type { Route } from '../router.ts'

const parseRole = (raw: string): Role => {
  if (raw !== 'owner' && raw !== 'member') throw new Refusal('invalid', 'The role must be owner or member.')
  return raw
}

export const memberRoutes: Route[] = [
  {
    method: 'GET',
    path: '/console/orgs/:org/members',
    handler: (ctx) => {
      const org = ctx.requireMember(ctx.params.org!)
      const invites = org.role === 'owner' ? listOpenInvites(ctx.s, org) : []
      const page = <MembersPage org={org} me={ctx.requireUser().id} members={listMembers(ctx.s, org)} invites={invites} />
      return renderPage(ctx, `Members · ${org.name}`, page, { org, section: 'members' })
    },
  },
  {
    method: 'POST',
    path: '/console/orgs/:org/members/:user/role',
    handler: (ctx) => {
      const org = ctx.requireMember(ctx.params.org!, 'owner')
      changeRole(ctx.s, ctx.actor(), { organizationId: org.organizationId, userId: ctx.params.user!, role: parseRole(ctx.field('role')) })
      return redirect(orgPath(org.organizationId, '/members'))
    },
  },
  {
    method: 'POST',
    path: '/console/orgs/:org/members/:user/remove',
    handler: (ctx) => {
      const leaving = ctx.params.user === ctx.requireUser().id
      const org = ctx.requireMember(ctx.params.org!, leaving ? undefined : 'owner')
      removeMember(ctx.s, ctx.actor(), { organizationId: org.organizationId, userId: ctx.params.user! })
      ctx.deps.streams.recheckUser(ctx.params.user!) // their open inbox pages of this organisation end
      return redirect(leaving ? '/console' : orgPath(org.organizationId, '/members'))
    },
  },
  {
    method: 'POST',
    path: '/console/orgs/:org/invites',
    handler: (ctx) => {
      const org = ctx.requireMember(ctx.params.org!, 'owner')
      const role = parseRole(ctx.field('role'))
      const invite = createInvite(ctx.s, ctx.actor(), { organizationId: org.organizationId, role })
      const link = `${ctx.s.publicUrls().baseUrl}/console/invites/${invite.token}`
      // Shown on the GET this redirects to, so a reload shows the same link instead of making another.
      const id = ctx.deps.shownOnce.put(ctx.sessionKey()!, { kind: 'invite', organizationId: org.organizationId, link, role, expiresAt: invite.expiresAt })
      return redirect(orgPath(org.organizationId, `/invites/created?shown=${id}`))
    },
  },
  {
    method: 'GET',
    path: '/console/orgs/:org/invites/created',
    handler: (ctx) => {
      const org = ctx.requireMember(ctx.params.org!, 'owner')
      const held = ctx.deps.shownOnce.get(ctx.sessionKey(), ctx.url.searchParams.get('shown'), 'invite')
      if (held?.organizationId !== org.organizationId) {
        return renderPage(ctx, `Invite · ${org.name}`, <ShownValueGone what="invite link" back={orgPath(org.organizationId, '/members')} />, { org, section: 'members', status: 404 })
      }
      return renderPage(ctx, `Invite · ${org.name}`, <InviteCreated org={org} link={held.link} role={held.role} expiresAt={held.expiresAt} />, { org, section: 'members' })
    },
  },
  {
    method: 'POST',
    path: '/console/orgs/:org/invites/:invite/withdraw',
    handler: (ctx) => {
      const org = ctx.requireMember(ctx.params.org!, 'owner')
      withdrawInvite(ctx.s, ctx.actor(), { organizationId: org.organizationId, inviteId: ctx.params.invite! })
      return redirect(orgPath(org.organizationId, '/members'))
    },
  },
  {
    method: 'GET',
    path: '/console/invites/:token',
    handler: (ctx) => {
      const invite = openInvite(ctx.s, { token: ctx.params.token })
      const page = <AcceptInvite organizationName={invite.organizationName} role={invite.role} action={ctx.url.pathname} signedInAs={ctx.user?.email ?? null} />
      return renderPage(ctx, `Join ${invite.organizationName}`, page)
    },
  },
  {
    method: 'POST',
    path: '/console/invites/:token',
    handler: async (ctx) => {
      const token = ctx.params.token!
      if (ctx.user) {
        const { organizationId } = acceptInvite(ctx.s, ctx.actor(), { token })
        return redirect(orgPath(organizationId))
      }
      const invite = openInvite(ctx.s, { token })
      try {
        const { user } = await signUpWithInvite(ctx.s, { clientAddress: ctx.clientAddress }, { token, email: ctx.field('email'), password: ctx.field('password') })
        ctx.startSession(user.id)
        return redirect(orgPath(invite.organizationId))
      } catch (error) {
        if (!(error instanceof Refusal) || (error.kind !== 'invalid' && error.kind !== 'conflict')) throw error
        const message = error.kind === 'conflict' ? 'An account with this email exists: sign in first, then open the link again.' : error.message
        const page = <AcceptInvite organizationName={invite.organizationName} role={invite.role} action={ctx.url.pathname} signedInAs={null} error={message} email={ctx.field('email')} />
        return renderPage(ctx, `Join ${invite.organizationName}`, page, { status: error.kind === 'conflict' ? 409 : 400 })
      }
    },
  },
]
