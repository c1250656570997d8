/** @jsxImportSource preact */
/** Members and invites of an organisation. Owners manage; anyone may leave; the last owner cannot. */
import { Refusal } from '../../core/common/refusals.ts'
import {
  acceptInvite,
  createInvite,
  listOpenInvites,
  openInvite,
  signUpWithInvite,
  withdrawInvite,
} from '../../core/members/invites.ts'
import { changeRole, listMembers, removeMember } from '../../core/members/members.ts'
import type { Role } from '../../core/organizations/organizations.ts'
import { memberOf } from '../access.ts'
import { redirect } from '../context.ts'
import { AcceptInvite, InviteCreated, MembersPage } from '../pages/members.tsx'
import { ShownValueGone } from '../pages/shell.tsx'
import { PATHS, withQuery } from '../paths.ts'
import { renderPage } from '../render.tsx'
import { route, type Route } from '../router.ts'

const parseRole = (raw: string): Role => {
  if (raw !== 'owner' && raw !== 'member') throw new Refusal('invalid', 'The role must be owner or member.')
  return raw
}

export const memberRoutes: Route[] = [
  route({
    method: 'GET',
    path: PATHS.members,
    access: 'member',
    handler: async (ctx, { org, user }) => {
      const invites = org.role === 'owner' ? await listOpenInvites(ctx.s, org) : []
      const page = <MembersPage org={org} me={user.id} members={await listMembers(ctx.s, org)} invites={invites} />
      return renderPage(ctx, `Members · ${org.name}`, page, { org, section: 'members' })
    },
  }),
  route({
    method: 'POST',
    path: PATHS.memberRole,
    access: 'owner',
    handler: async (ctx, { org }) => {
      await changeRole(ctx.s, ctx.actor(), {
        organizationId: org.organizationId,
        userId: ctx.params.user,
        role: parseRole(ctx.field('role')),
      })
      return redirect(PATHS.members.link(org.organizationId))
    },
  }),
  route({
    // Any member may leave; removing someone else takes an owner (checked below, as `owner` access would).
    method: 'POST',
    path: PATHS.memberRemove,
    access: 'member',
    handler: async (ctx, { org, user }) => {
      const leaving = ctx.params.user === user.id
      if (!leaving) await memberOf(ctx, org.organizationId, 'owner')
      await removeMember(ctx.s, ctx.actor(), { organizationId: org.organizationId, userId: ctx.params.user })
      ctx.deps.streams.recheckUser(ctx.params.user) // their open inbox pages of this organisation end
      return redirect(leaving ? PATHS.home.link() : PATHS.members.link(org.organizationId))
    },
  }),
  route({
    method: 'POST',
    path: PATHS.invites,
    access: 'owner',
    handler: async (ctx, { org }) => {
      const role = parseRole(ctx.field('role'))
      const invite = await createInvite(ctx.s, ctx.actor(), { organizationId: org.organizationId, role })
      const link = `${ctx.s.publicUrls().baseUrl}${PATHS.invite.link(invite.token)}`
      // Shown on the GET this redirects to, so a reload shows the same link instead of making another.
      const id = ctx.holdShown({
        kind: 'invite',
        organizationId: org.organizationId,
        link,
        role,
        expiresAt: invite.expiresAt,
      })
      return redirect(withQuery(PATHS.inviteCreated.link(org.organizationId), { shown: id }))
    },
  }),
  route({
    method: 'GET',
    path: PATHS.inviteCreated,
    access: 'owner',
    handler: (ctx, { org }) => {
      const held = ctx.shown(ctx.url.searchParams.get('shown'), 'invite')
      if (held?.organizationId !== org.organizationId) {
        return renderPage(
          ctx,
          `Invite · ${org.name}`,
          <ShownValueGone what="invite link" back={PATHS.members.link(org.organizationId)} />,
          { org, section: 'members', status: 404 },
        )
      }
      return renderPage(
        ctx,
        `Invite · ${org.name}`,
        <InviteCreated org={org} link={held.link} role={held.role} expiresAt={held.expiresAt} />,
        { org, section: 'members' },
      )
    },
  }),
  route({
    method: 'POST',
    path: PATHS.inviteWithdraw,
    access: 'owner',
    handler: async (ctx, { org }) => {
      await withdrawInvite(ctx.s, ctx.actor(), { organizationId: org.organizationId, inviteId: ctx.params.invite })
      return redirect(PATHS.members.link(org.organizationId))
    },
  }),
  route({
    // Public: the link is the credential; a signed-in visitor joins as themselves, anyone else signs up.
    method: 'GET',
    path: PATHS.invite,
    access: 'public',
    handler: async (ctx, { user }) => {
      const invite = await openInvite(ctx.s, { token: ctx.params.token })
      const page = (
        <AcceptInvite
          organizationName={invite.organizationName}
          role={invite.role}
          action={ctx.url.pathname}
          signedInAs={user?.email ?? null}
          email={ctx.failedField('email')}
        />
      )
      return renderPage(ctx, `Join ${invite.organizationName}`, page)
    },
  }),
  route({
    method: 'POST',
    path: PATHS.invite,
    access: 'public',
    handler: async (ctx, { user }) => {
      const token = ctx.params.token
      if (user) {
        const { organizationId } = await acceptInvite(ctx.s, ctx.actor(), { token })
        return redirect(PATHS.organization.link(organizationId))
      }
      const invite = await openInvite(ctx.s, { token })
      try {
        const { user } = await signUpWithInvite(
          ctx.s,
          { clientAddress: ctx.clientAddress },
          { token, email: ctx.field('email'), password: ctx.field('password') },
        )
        await ctx.startSession(user.id)
        return redirect(PATHS.organization.link(invite.organizationId))
      } catch (error) {
        if (!(error instanceof Refusal) || (error.kind !== 'invalid' && error.kind !== 'conflict')) throw error
        const message =
          error.kind === 'conflict'
            ? 'An account with this email exists: sign in first, then open the link again.'
            : error.message
        return ctx.failBack(ctx.url.pathname, {
          message,
          status: error.kind === 'conflict' ? 409 : 400,
          fields: { email: ctx.field('email') },
        })
      }
    },
  }),
]
