/**
 * The organizations area of the storage port, held to one behaviour in both dialects through
 * core's verbs: organisations with their presets and limits, members and roles with the
 * last-owner rule, invites (open, withdraw, accept, expire, sign up), and the audit log with
 * its paging. The races that PostgreSQL does not serialise by itself (two owners demoting
 * each other, one invite accepted twice) run concurrently here.
 *
 * Accounts come from signUpWithInvite, this area's own verb, so every row a test needs is in
 * the backend under test (the users table included).
 */
import { beforeEach, expect, setDefaultTimeout, test } from 'bun:test'
import { isoTime, ManualClock } from '../../src/clock.ts'
import { AUDIT_PAGE_SIZE, CLI_ACTOR, listAudit, type Actor } from '../../src/core/audit/audit.ts'
import { LOCAL_TESTING_LIMITS, ORG_LIMIT_NAMES, organizationLimits } from '../../src/core/limits/organization-limits.ts'
import {
  acceptInvite,
  createInvite,
  INVITE_LIFETIME_MS,
  listOpenInvites,
  openInvite,
  signUpWithInvite,
  withdrawInvite,
} from '../../src/core/members/invites.ts'
import { changeRole, joinAsOwner, listMembers, removeMember } from '../../src/core/members/members.ts'
import {
  changeLimits,
  createOrganization,
  listOrganizations,
  membershipsOf,
  organizationWithLimits,
  requireMembership,
} from '../../src/core/organizations/organizations.ts'
import { Refusal } from '../../src/core/common/refusals.ts'
import type { Services } from '../../src/core/common/services.ts'
import type { User } from '../../src/core/users/users.ts'
import { describeEachBackend } from '../support/backends.ts'

setDefaultTimeout(60_000)

const clock = new ManualClock('2026-03-01T09:00:00.000Z')
const PASSWORD = 'correct horse battery'
let serial = 0
const unique = (stem: string) => `${stem}-${++serial}-${Math.random().toString(36).slice(2, 8)}`

/** What a verb threw: the Refusal's kind, or a failure of the test when it did not refuse. */
async function refusal(work: Promise<unknown>): Promise<string> {
  try {
    await work
  } catch (error) {
    if (error instanceof Refusal) return error.kind
    throw error
  }
  throw new Error('expected a refusal')
}

const actorOf = (user: User): Actor & { userId: string } => ({
  userId: user.id,
  label: user.email,
  clientAddress: '192.0.2.7',
})
/** Invites need a maker's id; the bootstrap invite of a new organisation has no member to make it yet. */
const OPERATOR: Actor & { userId: string } = {
  userId: 'user_operator',
  label: 'operator@example.test',
  clientAddress: '192.0.2.1',
}

describeEachBackend(
  'the organizations contract',
  (backend) => {
    let s: Services
    beforeEach(() => {
      s = backend.services()
    })

    /** A new account, joined to `organizationId` with `role` by a fresh invite. */
    async function signUp(organizationId: string, role: 'owner' | 'member'): Promise<User> {
      const invite = await createInvite(s, OPERATOR, { organizationId, role })
      const { user } = await signUpWithInvite(
        s,
        { clientAddress: '192.0.2.9' },
        { token: invite.token, email: `${unique('person')}@example.test`, password: PASSWORD },
      )
      return user
    }

    /** An organisation with one owner. */
    async function ownedOrganization(preset: 'hosted' | 'local' = 'hosted') {
      const org = await createOrganization(s, CLI_ACTOR, { name: unique('org'), preset })
      const owner = await signUp(org.id, 'owner')
      return { org, owner }
    }

    const actions = async (organizationId: string) =>
      (await listAudit(s, { organizationId })).map((e) => `${e.action} ${e.target} ${e.detail}`.trim())

    test('an organisation is made with its preset limits and an instance audit row; a bad name writes nothing', async () => {
      const before = (await listOrganizations(s)).length
      const hosted = await createOrganization(s, CLI_ACTOR, { name: '  Hosted team  ', preset: 'hosted' })
      expect(hosted.name).toBe('Hosted team')
      const hostedView = await organizationWithLimits(s, { organizationId: hosted.id })
      expect(hostedView.limits).toEqual(
        Object.fromEntries(ORG_LIMIT_NAMES.map((name) => [name, s.config.limits[name]])) as typeof hostedView.limits,
      )
      expect(Object.values(hostedView.overrides).every((v) => v === null)).toBe(true)
      expect(hostedView.createdAt).toBe(isoTime(clock.now()))

      const local = await createOrganization(s, CLI_ACTOR, { name: 'Local team', preset: 'local' })
      const localView = await organizationWithLimits(s, { organizationId: local.id })
      expect(localView.limits).toEqual(LOCAL_TESTING_LIMITS)
      expect(localView.overrides).toEqual(LOCAL_TESTING_LIMITS)

      const instance = (await listAudit(s, 'instance')).map((e) => [e.action, e.target, e.detail, e.actor])
      expect(instance).toContainEqual([
        'organization.created',
        hosted.id,
        'Hosted team (hosted free plan limits)',
        'cli',
      ])
      expect(instance).toContainEqual(['organization.created', local.id, 'Local team (local testing limits)', 'cli'])

      expect(await refusal(createOrganization(s, CLI_ACTOR, { name: ' ', preset: 'hosted' }))).toBe('invalid')
      expect(await refusal(createOrganization(s, CLI_ACTOR, { name: 'x'.repeat(101), preset: 'hosted' }))).toBe(
        'invalid',
      )
      expect((await listOrganizations(s)).length).toBe(before + 2)
      expect(await refusal(organizationWithLimits(s, { organizationId: 'org_unknown' }))).toBe('not_found')
    })

    test('organisations list oldest first; an owner given at creation is a member', async () => {
      const first = await createOrganization(s, CLI_ACTOR, { name: unique('first'), preset: 'hosted' })
      clock.advance(1_000)
      const { owner } = await ownedOrganization()
      clock.advance(1_000)
      const third = await createOrganization(s, actorOf(owner), {
        name: unique('third'),
        preset: 'hosted',
        owner: owner.id,
      })
      const ids = (await listOrganizations(s)).map((o) => o.id)
      expect(ids.indexOf(first.id)).toBeLessThan(ids.indexOf(third.id))
      expect(ids.at(-1)).toBe(third.id)
      const mine = await membershipsOf(s, owner)
      expect(mine.find((m) => m.organizationId === third.id)).toEqual({
        organizationId: third.id,
        name: third.name,
        role: 'owner',
      })
      expect((await listMembers(s, { organizationId: third.id })).map((m) => [m.userId, m.role, m.joinedAt])).toEqual([
        [owner.id, 'owner', third.createdAt],
      ])
    })

    test('limits: set, returned to the default, audited; an unknown organisation is not found and writes nothing', async () => {
      const { org } = await ownedOrganization()
      await changeLimits(s, CLI_ACTOR, { organizationId: org.id, overrides: { activeInboxes: 7, monthlyEmails: 500 } })
      let view = await organizationWithLimits(s, { organizationId: org.id })
      expect(view.limits.activeInboxes).toBe(7)
      expect(view.overrides.monthlyEmails).toBe(500)
      expect((await organizationLimits(s, org.id)).activeInboxes).toBe(7)

      await changeLimits(s, CLI_ACTOR, { organizationId: org.id, overrides: { activeInboxes: null } })
      view = await organizationWithLimits(s, { organizationId: org.id })
      expect(view.overrides.activeInboxes).toBeNull()
      expect(view.limits.activeInboxes).toBe(s.config.limits.activeInboxes)
      expect(view.limits.monthlyEmails).toBe(500)
      expect((await actions(org.id)).slice(0, 2)).toEqual([
        `limits.changed ${org.id} activeInboxes=default`,
        `limits.changed ${org.id} activeInboxes=7, monthlyEmails=500`,
      ])

      const instanceBefore = (await listAudit(s, 'instance')).length
      expect(
        await refusal(changeLimits(s, CLI_ACTOR, { organizationId: 'org_unknown', overrides: { activeInboxes: 3 } })),
      ).toBe('not_found')
      expect(await refusal(changeLimits(s, CLI_ACTOR, { organizationId: 'org_unknown', overrides: {} }))).toBe(
        'not_found',
      )
      expect((await listAudit(s, 'instance')).length).toBe(instanceBefore)
      // An unknown organisation's limits are the environment's.
      expect(await organizationLimits(s, 'org_unknown')).toEqual(
        await organizationLimits(
          s,
          (await createOrganization(s, CLI_ACTOR, { name: unique('plain'), preset: 'hosted' })).id,
        ),
      )
    })

    test('membership: found with the effective limits, refused to others, owner pages refused to members', async () => {
      const { org, owner } = await ownedOrganization('local')
      const member = await signUp(org.id, 'member')
      const { org: other } = await ownedOrganization()
      const found = await requireMembership(s, owner, { organizationId: org.id, role: 'owner' })
      expect(found.membership).toEqual({ organizationId: org.id, name: org.name, role: 'owner' })
      expect(found.limits).toEqual(LOCAL_TESTING_LIMITS)
      expect((await requireMembership(s, member, { organizationId: org.id })).membership.role).toBe('member')
      expect(await refusal(requireMembership(s, member, { organizationId: org.id, role: 'owner' }))).toBe('forbidden')
      expect(await refusal(requireMembership(s, member, { organizationId: other.id }))).toBe('not_found')
    })

    test("a user's organisations sort by name in byte order", async () => {
      const { owner } = await ownedOrganization()
      const suffix = unique('')
      for (const name of [`b${suffix}`, `B${suffix}`, `a${suffix}`, `Z${suffix}`])
        await createOrganization(s, actorOf(owner), { name, preset: 'hosted', owner: owner.id })
      const names = (await membershipsOf(s, owner)).map((m) => m.name).filter((n) => n.endsWith(suffix))
      expect(names).toEqual([`B${suffix}`, `Z${suffix}`, `a${suffix}`, `b${suffix}`])
    })

    test('roles change with an audit row; the last owner can be neither demoted nor removed', async () => {
      const { org, owner } = await ownedOrganization()
      clock.advance(1_000)
      const member = await signUp(org.id, 'member')
      expect((await listMembers(s, { organizationId: org.id })).map((m) => [m.email, m.role])).toEqual([
        [owner.email, 'owner'],
        [member.email, 'member'],
      ])

      expect(
        await refusal(changeRole(s, actorOf(owner), { organizationId: org.id, userId: owner.id, role: 'member' })),
      ).toBe('conflict')
      expect(await refusal(removeMember(s, actorOf(owner), { organizationId: org.id, userId: owner.id }))).toBe(
        'conflict',
      )
      expect(
        await refusal(changeRole(s, actorOf(owner), { organizationId: org.id, userId: 'user_nobody', role: 'owner' })),
      ).toBe('not_found')
      expect(await refusal(removeMember(s, actorOf(owner), { organizationId: org.id, userId: 'user_nobody' }))).toBe(
        'not_found',
      )

      await changeRole(s, actorOf(owner), { organizationId: org.id, userId: member.id, role: 'owner' })
      const audited = (await actions(org.id)).length
      await changeRole(s, actorOf(owner), { organizationId: org.id, userId: member.id, role: 'owner' }) // unchanged: no row
      expect((await actions(org.id)).length).toBe(audited)
      expect((await actions(org.id))[0]).toBe(`member.role_changed ${member.email} member -> owner`)

      // Two owners now: one may step down, and then the other is the last again.
      await changeRole(s, actorOf(owner), { organizationId: org.id, userId: owner.id, role: 'member' })
      expect(
        await refusal(changeRole(s, actorOf(member), { organizationId: org.id, userId: member.id, role: 'member' })),
      ).toBe('conflict')
      await removeMember(s, actorOf(owner), { organizationId: org.id, userId: owner.id })
      expect((await actions(org.id))[0]).toBe(`member.removed ${owner.email} left`)
      expect((await listMembers(s, { organizationId: org.id })).map((m) => [m.email, m.role])).toEqual([
        [member.email, 'owner'],
      ])
      expect(await refusal(requireMembership(s, owner, { organizationId: org.id }))).toBe('not_found')
    })

    test('removing another member is audited without "left"', async () => {
      const { org, owner } = await ownedOrganization()
      const member = await signUp(org.id, 'member')
      await removeMember(s, actorOf(owner), { organizationId: org.id, userId: member.id })
      const [latest] = await listAudit(s, { organizationId: org.id })
      expect([latest!.action, latest!.target, latest!.detail, latest!.actor, latest!.clientAddress]).toEqual([
        'member.removed',
        member.email,
        '',
        owner.email,
        '192.0.2.7',
      ])
    })

    test('two owners demoting each other at once leave exactly one owner', async () => {
      for (let round = 0; round < 5; round++) {
        const { org, owner: a } = await ownedOrganization()
        const b = await signUp(org.id, 'owner')
        const outcomes = await Promise.allSettled([
          changeRole(s, actorOf(a), { organizationId: org.id, userId: b.id, role: 'member' }),
          changeRole(s, actorOf(b), { organizationId: org.id, userId: a.id, role: 'member' }),
        ])
        expect(outcomes.filter((o) => o.status === 'fulfilled').length).toBe(1)
        const rejected = outcomes.find((o) => o.status === 'rejected') as PromiseRejectedResult
        expect(rejected.reason).toBeInstanceOf(Refusal)
        expect(rejected.reason.kind).toBe('conflict')
        expect((await listMembers(s, { organizationId: org.id })).filter((m) => m.role === 'owner').length).toBe(1)
      }
    })

    test('two owners removing each other at once leave exactly one owner', async () => {
      for (let round = 0; round < 5; round++) {
        const { org, owner: a } = await ownedOrganization()
        const b = await signUp(org.id, 'owner')
        const outcomes = await Promise.allSettled([
          removeMember(s, actorOf(a), { organizationId: org.id, userId: b.id }),
          removeMember(s, actorOf(b), { organizationId: org.id, userId: a.id }),
        ])
        expect(outcomes.filter((o) => o.status === 'fulfilled').length).toBe(1)
        expect((await listMembers(s, { organizationId: org.id })).map((m) => m.role)).toEqual(['owner'])
      }
    })

    test('the operator joins as owner once: joined, promoted, or nothing; an unknown organisation is not found', async () => {
      const { org } = await ownedOrganization()
      const { owner: operator } = await ownedOrganization()
      await joinAsOwner(s, actorOf(operator), { organizationId: org.id })
      await joinAsOwner(s, actorOf(operator), { organizationId: org.id })
      expect(
        (await actions(org.id)).filter((a) => a.startsWith('member.joined') && a.includes('by the operator')),
      ).toEqual([`member.joined ${operator.email} as owner, by the operator`])
      expect((await membershipsOf(s, operator)).find((m) => m.organizationId === org.id)?.role).toBe('owner')

      const member = await signUp(org.id, 'member')
      await joinAsOwner(s, actorOf(member), { organizationId: org.id })
      expect((await requireMembership(s, member, { organizationId: org.id })).membership.role).toBe('owner')
      expect(await refusal(joinAsOwner(s, actorOf(operator), { organizationId: 'org_unknown' }))).toBe('not_found')
    })

    test('invites: listed while open (newest first), withdrawn once, expired after their lifetime', async () => {
      const { org, owner } = await ownedOrganization()
      const { org: other } = await ownedOrganization()
      const first = await createInvite(s, actorOf(owner), { organizationId: org.id, role: 'member' })
      clock.advance(1_000)
      const second = await createInvite(s, actorOf(owner), { organizationId: org.id, role: 'owner' })
      const open = await listOpenInvites(s, { organizationId: org.id })
      expect(open.map((i) => [i.id, i.role])).toEqual([
        [second.id, 'owner'],
        [first.id, 'member'],
      ])
      expect(open[1]!.expiresAt).toBe(first.expiresAt)
      expect((await actions(org.id))[0]).toBe(`member.invited ${second.id} as owner, expires ${second.expiresAt}`)
      expect((await openInvite(s, { token: first.token })).organizationName).toBe(org.name)

      expect(await refusal(withdrawInvite(s, actorOf(owner), { organizationId: other.id, inviteId: first.id }))).toBe(
        'not_found',
      )
      await withdrawInvite(s, actorOf(owner), { organizationId: org.id, inviteId: first.id })
      expect(await refusal(withdrawInvite(s, actorOf(owner), { organizationId: org.id, inviteId: first.id }))).toBe(
        'not_found',
      )
      expect((await actions(org.id))[0]).toBe(`invite.withdrawn ${first.id}`)
      expect((await listOpenInvites(s, { organizationId: org.id })).map((i) => i.id)).toEqual([second.id])
      expect(await refusal(openInvite(s, { token: first.token }))).toBe('not_found')

      // One millisecond before its expiry an invite is open; at its expiry it is gone.
      clock.advance(INVITE_LIFETIME_MS - 1)
      expect((await listOpenInvites(s, { organizationId: org.id })).map((i) => i.id)).toEqual([second.id])
      clock.advance(1)
      expect(await listOpenInvites(s, { organizationId: org.id })).toEqual([])
      expect(await refusal(openInvite(s, { token: second.token }))).toBe('not_found')
      const late = await signUpOrRefusal(second.token)
      expect(late).toBe('not_found')
      expect(await refusal(openInvite(s, { token: 'not-a-token' }))).toBe('not_found')
      expect(await refusal(openInvite(s, { token: 'A'.repeat(43) }))).toBe('not_found')
    })

    async function signUpOrRefusal(token: string, email = `${unique('late')}@example.test`) {
      return refusal(signUpWithInvite(s, { clientAddress: '192.0.2.9' }, { token, email, password: PASSWORD }))
    }

    test('accepting: joins with the invite role and spends it; a member already in keeps the invite usable', async () => {
      const { org, owner } = await ownedOrganization()
      const { owner: outsider } = await ownedOrganization()
      const invite = await createInvite(s, actorOf(owner), { organizationId: org.id, role: 'member' })

      expect(await refusal(acceptInvite(s, actorOf(owner), { token: invite.token }))).toBe('conflict')
      expect((await openInvite(s, { token: invite.token })).id).toBe(invite.id) // still unused

      expect(await acceptInvite(s, actorOf(outsider), { token: invite.token })).toEqual({ organizationId: org.id })
      expect((await requireMembership(s, outsider, { organizationId: org.id })).membership.role).toBe('member')
      expect((await actions(org.id))[0]).toBe(`member.joined ${outsider.email} as member via ${invite.id}`)
      expect(await refusal(acceptInvite(s, actorOf(outsider), { token: invite.token }))).toBe('not_found')
      expect(await refusal(acceptInvite(s, actorOf(owner), { token: 'garbage' }))).toBe('not_found')
    })

    test('signing up: a taken email or a spent invite leaves no account and no membership behind', async () => {
      const { org, owner } = await ownedOrganization()
      const invite = await createInvite(s, actorOf(owner), { organizationId: org.id, role: 'member' })
      expect(await signUpOrRefusal(invite.token, owner.email)).toBe('conflict')
      expect(await signUpOrRefusal(invite.token, 'not an email')).toBe('invalid')
      const email = `${unique('new')}@example.test`
      clock.advance(1_000)
      const { user, organizationId } = await signUpWithInvite(
        s,
        { clientAddress: '192.0.2.9' },
        { token: invite.token, email: `  ${email.toUpperCase()} `, password: PASSWORD },
      )
      expect(organizationId).toBe(org.id)
      expect(user.email).toBe(email)
      expect(user.isOperator).toBe(false)
      expect((await listMembers(s, { organizationId: org.id })).map((m) => m.email)).toEqual([owner.email, email])
      const [joined] = await listAudit(s, { organizationId: org.id })
      expect([joined!.action, joined!.target, joined!.actor, joined!.clientAddress]).toEqual([
        'member.joined',
        email,
        email,
        '192.0.2.9',
      ])
      // The spent invite makes no second account: that email can still sign up elsewhere.
      const loser = `${unique('loser')}@example.test`
      expect(await signUpOrRefusal(invite.token, loser)).toBe('not_found')
      const again = await createInvite(s, actorOf(owner), { organizationId: org.id, role: 'member' })
      expect(
        (await signUpWithInvite(s, { clientAddress: '' }, { token: again.token, email: loser, password: PASSWORD }))
          .user.email,
      ).toBe(loser)
    })

    test('one invite accepted twice at once makes one membership', async () => {
      for (let round = 0; round < 5; round++) {
        const { org, owner } = await ownedOrganization()
        const { owner: a } = await ownedOrganization()
        const { owner: b } = await ownedOrganization()
        const invite = await createInvite(s, actorOf(owner), { organizationId: org.id, role: 'member' })
        const outcomes = await Promise.allSettled([
          acceptInvite(s, actorOf(a), { token: invite.token }),
          acceptInvite(s, actorOf(b), { token: invite.token }),
        ])
        expect(outcomes.filter((o) => o.status === 'fulfilled').length).toBe(1)
        expect((outcomes.find((o) => o.status === 'rejected') as PromiseRejectedResult).reason.kind).toBe('not_found')
        expect((await listMembers(s, { organizationId: org.id })).length).toBe(2)
        expect(
          (await actions(org.id)).filter((x) => x.startsWith('member.joined') && x.includes(invite.id)).length,
        ).toBe(1)
      }
    })

    test('one invite used by two sign-ups at once makes one account; the other email stays free', async () => {
      for (let round = 0; round < 5; round++) {
        const { org, owner } = await ownedOrganization()
        const invite = await createInvite(s, actorOf(owner), { organizationId: org.id, role: 'member' })
        // Open connections first, so both sign-ups pass their early look at the invite together
        // and meet in the operation that spends it.
        await Promise.all([1, 2, 3, 4].map(() => listOrganizations(s)))
        const emails = [`${unique('race')}@example.test`, `${unique('race')}@example.test`]
        const outcomes = await Promise.allSettled(
          emails.map((email) =>
            signUpWithInvite(s, { clientAddress: '' }, { token: invite.token, email, password: PASSWORD }),
          ),
        )
        const won = outcomes.findIndex((o) => o.status === 'fulfilled')
        expect(outcomes.filter((o) => o.status === 'fulfilled').length).toBe(1)
        expect((outcomes[1 - won] as PromiseRejectedResult).reason.kind).toBe('not_found')
        expect((await listMembers(s, { organizationId: org.id })).length).toBe(2)
        const again = await createInvite(s, actorOf(owner), { organizationId: org.id, role: 'member' })
        expect(
          (
            await signUpWithInvite(
              s,
              { clientAddress: '' },
              { token: again.token, email: emails[1 - won]!, password: PASSWORD },
            )
          ).organizationId,
        ).toBe(org.id)
      }
    })

    test('the audit log pages back newest first, per organisation, with the instance apart', async () => {
      const { org, owner } = await ownedOrganization()
      const { org: other } = await ownedOrganization()
      for (let i = 1; i <= AUDIT_PAGE_SIZE + 5; i++)
        await changeLimits(s, actorOf(owner), { organizationId: org.id, overrides: { activeInboxes: i } })
      await changeLimits(s, CLI_ACTOR, { organizationId: other.id, overrides: { activeInboxes: 1 } })

      const first = await listAudit(s, { organizationId: org.id })
      expect(first.length).toBe(AUDIT_PAGE_SIZE)
      expect(first[0]!.detail).toBe(`activeInboxes=${AUDIT_PAGE_SIZE + 5}`)
      expect(first.every((e) => e.organizationId === org.id)).toBe(true)
      const ids = first.map((e) => e.id)
      expect([...ids].sort((x, y) => y - x)).toEqual(ids)
      const second = await listAudit(s, { organizationId: org.id }, { before: ids.at(-1)! })
      // 105 limit changes, the owner's invite and the owner's joining: 7 older rows.
      expect(second.map((e) => e.action)).toEqual([
        'limits.changed',
        'limits.changed',
        'limits.changed',
        'limits.changed',
        'limits.changed',
        'member.joined',
        'member.invited',
      ])
      expect(second[0]!.detail).toBe('activeInboxes=5')
      expect(second.every((e) => e.id < ids.at(-1)!)).toBe(true)
      expect(await listAudit(s, { organizationId: org.id }, { before: second.at(-1)!.id })).toEqual([])

      expect((await listAudit(s, 'instance')).every((e) => e.organizationId === null)).toBe(true)
      expect(
        (await listAudit(s, 'instance')).some((e) => e.target === org.id && e.action === 'organization.created'),
      ).toBe(true)
      const [row] = await listAudit(s, { organizationId: org.id })
      expect(row).toEqual({
        id: ids[0]!,
        organizationId: org.id,
        actor: owner.email,
        action: 'limits.changed',
        target: org.id,
        detail: `activeInboxes=${AUDIT_PAGE_SIZE + 5}`,
        clientAddress: '192.0.2.7',
        createdAt: isoTime(clock.now()),
      })
    })
  },
  { clock, env: { CONSOLE_PASSWORD_MEMORY_KIB: '8' } },
)
