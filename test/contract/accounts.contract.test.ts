/**
 * The accounts area's verbs on both backends: first-run setup (once, even when two
 * completions race), users and passwords, console sessions, API keys and authentication.
 * Each half runs in order on its own database: the first test makes the operator, the first
 * organisation and its key, which the later tests use.
 */
import { beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { isoTime, ManualClock } from '../../src/clock.ts'
import { authenticate } from '../../src/core/api-keys/authenticate.ts'
import { createApiKey, listOrganizationKeys, revokeKey, revokeOrganizationKey } from '../../src/core/api-keys/keys.ts'
import { auditEntry, CLI_ACTOR, listAudit, type Actor } from '../../src/core/audit/audit.ts'
import { DomainError } from '../../src/core/common/errors.ts'
import { LOCAL_TESTING_LIMITS } from '../../src/core/limits/organization-limits.ts'
import { createInvite } from '../../src/core/members/invites.ts'
import { createOrganization } from '../../src/core/organizations/organizations.ts'
import { Refusal } from '../../src/core/common/refusals.ts'
import {
  createSession,
  endExpiredSessions,
  endSession,
  listSessions,
  sessionStillReads,
  signOutEverywhere,
  validateSession,
} from '../../src/core/sessions/sessions.ts'
import { completeSetup, isSetupToken, setupToken } from '../../src/core/users/setup.ts'
import { signIn } from '../../src/core/users/sign-in.ts'
import { SignInThrottle } from '../../src/core/users/sign-in-throttle.ts'
import {
  changePassword,
  countUsers,
  findUser,
  findUserByEmail,
  listUsers,
  resetPassword,
  type User,
} from '../../src/core/users/users.ts'
import { sha256Hex } from '../../src/core/common/tokens.ts'
import type { Services } from '../../src/core/common/services.ts'
import { describeEachBackend } from '../support/backends.ts'

setDefaultTimeout(60_000)

const clock = new ManualClock('2026-03-01T10:00:00.000Z')
const DAY = 86_400_000
const lifetime = { days: 2 }
const PASSWORD = 'operator password 1'

/** What a rejected promise was refused with: a Refusal's kind or a DomainError's code. */
async function refusal(promise: Promise<unknown>): Promise<string> {
  try {
    await promise
  } catch (error) {
    if (error instanceof Refusal) return error.kind
    if (error instanceof DomainError) return error.code
    throw error
  }
  throw new Error('expected a refusal, the promise resolved')
}

/** The audit rows of one action, oldest first, from the instance's log and the organisation's. */
async function auditRows(s: Services, organizationId: string, action: string) {
  const rows = [...(await listAudit(s, 'instance')), ...(await listAudit(s, { organizationId }))]
  return rows.filter((row) => row.action === action).sort((a, b) => a.id - b.id)
}

describeEachBackend(
  'accounts',
  (backend) => {
    let operator: User
    let organizationId: string
    let firstKey: string
    let actor: Actor
    const s = () => backend.services()
    let throttle: SignInThrottle

    beforeAll(() => {
      throttle = new SignInThrottle(clock)
    })

    test('first-run setup happens once, even when two completions race', async () => {
      expect(await countUsers(s())).toBe(0)
      // Two first calls at once (two machines starting) agree on one token.
      const [token, again] = await Promise.all([setupToken(s()), setupToken(s())])
      expect(token).toBeString()
      expect(again).toBe(token!)
      expect(await setupToken(s())).toBe(token!)
      expect(await isSetupToken(s(), { token })).toBe(true)
      expect(await isSetupToken(s(), { token: `${token}x` })).toBe(false)
      expect(await isSetupToken(s(), { token: 42 })).toBe(false)

      const form = (email: string) => ({
        token: token!,
        email,
        password: PASSWORD,
        organization: 'First',
        preset: 'local',
      })
      const outcomes = await Promise.allSettled([
        completeSetup(s(), { clientAddress: '192.0.2.1' }, form('a@example.com')),
        completeSetup(s(), { clientAddress: '192.0.2.2' }, form('b@example.com')),
      ])
      const won = outcomes.filter((o) => o.status === 'fulfilled')
      const lost = outcomes.filter((o) => o.status === 'rejected')
      expect(won).toHaveLength(1)
      expect(lost).toHaveLength(1)
      expect((lost[0] as PromiseRejectedResult).reason).toBeInstanceOf(Refusal)
      expect(((lost[0] as PromiseRejectedResult).reason as Refusal).kind).toBe('not_found')
      const done = (won[0] as PromiseFulfilledResult<Awaited<ReturnType<typeof completeSetup>>>).value

      expect(await countUsers(s())).toBe(1)
      expect(done.user.isOperator).toBe(true)
      expect(await setupToken(s())).toBeNull()
      expect(await isSetupToken(s(), { token })).toBe(false)
      expect(await refusal(completeSetup(s(), { clientAddress: '192.0.2.3' }, form('c@example.com')))).toBe('not_found')
      expect(await countUsers(s())).toBe(1)

      operator = done.user
      organizationId = done.organization.id
      firstKey = done.key.key
      actor = { userId: operator.id, label: operator.email, clientAddress: '192.0.2.9' }
      expect(
        (await auditRows(s(), organizationId, 'organization.created')).map((r) => [r.actor, r.target, r.detail]),
      ).toEqual([[operator.email, organizationId, 'First (local testing limits)']])
      expect(
        (await auditRows(s(), organizationId, 'key.created')).map((r) => [
          r.actor,
          r.target,
          r.detail,
          r.organizationId,
        ]),
      ).toEqual([[operator.email, done.key.publicId, 'first key', organizationId]])
      // The key works at once, with the preset's limits resolved from the organisation.
      const principal = await authenticate(s(), `Bearer ${firstKey}`)
      expect(principal).toEqual({ organizationId, keyPublicId: done.key.publicId, limits: LOCAL_TESTING_LIMITS })
    })

    test('users are found by email and id, listed oldest first', async () => {
      expect((await findUserByEmail(s(), operator.email))?.id).toBe(operator.id)
      expect(await findUserByEmail(s(), 'nobody@example.com')).toBeUndefined()
      expect((await findUser(s(), operator.id))?.email).toBe(operator.email)
      expect(await findUser(s(), 'user_none')).toBeUndefined()
      expect(await listUsers(s())).toEqual([
        { id: operator.id, email: operator.email, isOperator: true, createdAt: operator.createdAt },
      ])
    })

    test('sign-in checks the password', async () => {
      const visitor = { clientAddress: '198.51.100.1' }
      expect(
        (await signIn({ ...s(), throttle }, visitor, { email: operator.email.toUpperCase(), password: PASSWORD })).id,
      ).toBe(operator.id)
      expect(
        await refusal(signIn({ ...s(), throttle }, visitor, { email: operator.email, password: 'wrong password 1' })),
      ).toBe('unauthenticated')
      expect(
        await refusal(signIn({ ...s(), throttle }, visitor, { email: 'nobody@example.com', password: PASSWORD })),
      ).toBe('unauthenticated')
    })

    test('a session is created, validated, renewed past half its lifetime, and expires', async () => {
      const { token, expiresAt } = await createSession(s(), operator, { clientAddress: '198.51.100.2', lifetime })
      expect(expiresAt).toBe(clock.now() + 2 * DAY)
      const fresh = await validateSession(s(), { token, lifetime })
      expect(fresh).toEqual({ user: operator, tokenSha256: sha256Hex(token), expiresAt, renewed: false })
      expect(await validateSession(s(), { token: 'not a token', lifetime })).toBeNull()
      expect(await validateSession(s(), { token: undefined, lifetime })).toBeNull()

      clock.advance(DAY - 1) // not yet past half: unchanged
      expect((await validateSession(s(), { token, lifetime }))?.renewed).toBe(false)
      clock.advance(2) // past half: a full lifetime from now
      const renewed = await validateSession(s(), { token, lifetime })
      expect(renewed?.renewed).toBe(true)
      expect(renewed?.expiresAt).toBe(clock.now() + 2 * DAY)
      expect((await validateSession(s(), { token, lifetime }))?.renewed).toBe(false)
      expect((await listSessions(s(), operator)).find((row) => row.tokenSha256 === sha256Hex(token))?.expiresAt).toBe(
        isoTime(clock.now() + 2 * DAY),
      )

      clock.advance(2 * DAY) // exactly at expiry: over, and the row is gone
      expect(await validateSession(s(), { token, lifetime })).toBeNull()
      expect((await listSessions(s(), operator)).map((row) => row.tokenSha256)).not.toContain(sha256Hex(token))
    })

    test('a live stream rechecks the session and the membership without extending the session', async () => {
      const { token, expiresAt } = await createSession(s(), operator, { clientAddress: '198.51.100.3', lifetime })
      const tokenSha256 = sha256Hex(token)
      expect(await sessionStillReads(s(), { tokenSha256, organizationId })).toBe(true)
      expect(await sessionStillReads(s(), { tokenSha256, organizationId: 'org_not_a_member' })).toBe(false)
      expect(await sessionStillReads(s(), { tokenSha256: sha256Hex('other'), organizationId })).toBe(false)
      clock.set(expiresAt)
      expect(await sessionStillReads(s(), { tokenSha256, organizationId })).toBe(false)
      await endSession(s(), { tokenSha256 })
    })

    test('signing out ends one session; sign-out everywhere ends all and is audited with the count', async () => {
      const one = await createSession(s(), operator, { clientAddress: '198.51.100.4', lifetime })
      const two = await createSession(s(), operator, { clientAddress: '198.51.100.5', lifetime })
      const three = await createSession(s(), operator, { clientAddress: '198.51.100.6', lifetime })
      await endSession(s(), { tokenSha256: sha256Hex(one.token) })
      expect(await validateSession(s(), { token: one.token, lifetime })).toBeNull()
      expect((await listSessions(s(), operator)).map((row) => row.clientAddress).sort()).toEqual([
        '198.51.100.5',
        '198.51.100.6',
      ])

      expect(await signOutEverywhere(s(), CLI_ACTOR, { user: operator })).toBe(2)
      expect(await validateSession(s(), { token: two.token, lifetime })).toBeNull()
      expect(await validateSession(s(), { token: three.token, lifetime })).toBeNull()
      expect(await listSessions(s(), operator)).toEqual([])
      expect(
        (await auditRows(s(), organizationId, 'user.sessions_revoked')).map((r) => [
          r.actor,
          r.target,
          r.detail,
          r.organizationId,
        ]),
      ).toEqual([['cli', operator.email, '2 sessions', null]])
    })

    test('expired sessions are swept, live ones kept', async () => {
      const old = await createSession(s(), operator, { clientAddress: '198.51.100.7', lifetime })
      clock.advance(DAY)
      const young = await createSession(s(), operator, { clientAddress: '198.51.100.8', lifetime })
      clock.advance(DAY + 1)
      expect(await endExpiredSessions(s())).toBe(1)
      expect((await listSessions(s(), operator)).map((row) => row.tokenSha256)).toEqual([sha256Hex(young.token)])
      expect(await validateSession(s(), { token: old.token, lifetime })).toBeNull()
      await endSession(s(), { tokenSha256: sha256Hex(young.token) })
    })

    test('changing one’s password checks the current one and ends the other sessions', async () => {
      const here = await createSession(s(), operator, { clientAddress: '198.51.100.9', lifetime })
      const elsewhere = await createSession(s(), operator, { clientAddress: '198.51.100.10', lifetime })
      const input = {
        current: 'not my password',
        next: 'second password 2',
        keepSessionSha256: sha256Hex(here.token),
        clientAddress: '198.51.100.9',
      }
      expect(await refusal(changePassword({ ...s(), throttle }, operator, input))).toBe('invalid')
      await changePassword({ ...s(), throttle }, operator, { ...input, current: PASSWORD })
      expect((await validateSession(s(), { token: here.token, lifetime }))?.user.id).toBe(operator.id)
      expect(await validateSession(s(), { token: elsewhere.token, lifetime })).toBeNull()
      const visitor = { clientAddress: '198.51.100.11' }
      expect(
        (await signIn({ ...s(), throttle }, visitor, { email: operator.email, password: 'second password 2' })).id,
      ).toBe(operator.id)
      expect(await refusal(signIn({ ...s(), throttle }, visitor, { email: operator.email, password: PASSWORD }))).toBe(
        'unauthenticated',
      )
      await endSession(s(), { tokenSha256: sha256Hex(here.token) })
    })

    test('the operator’s reset makes a new password, ends every session and is audited', async () => {
      const session = await createSession(s(), operator, { clientAddress: '198.51.100.12', lifetime })
      expect(await resetPassword(s(), CLI_ACTOR, { email: 'nobody@example.com' })).toBeNull()
      const done = (await resetPassword(s(), CLI_ACTOR, { email: operator.email }))!
      expect(done.user.id).toBe(operator.id)
      expect(await validateSession(s(), { token: session.token, lifetime })).toBeNull()
      expect(
        (
          await signIn(
            { ...s(), throttle },
            { clientAddress: '198.51.100.13' },
            { email: operator.email, password: done.password },
          )
        ).id,
      ).toBe(operator.id)
      expect(
        (await auditRows(s(), organizationId, 'user.password_reset')).map((r) => [r.actor, r.target, r.organizationId]),
      ).toEqual([['cli', operator.email, null]])
    })

    test('keys are created, listed with their makers, and audited; an unknown organisation is not found', async () => {
      const before = (await auditRows(s(), organizationId, 'key.created')).length
      clock.advance(1000)
      const byMember = await createApiKey(s(), actor, { organizationId, name: '  ci  ' })
      clock.advance(1000)
      const byCli = await createApiKey(s(), CLI_ACTOR, { organizationId })
      expect(await refusal(createApiKey(s(), CLI_ACTOR, { organizationId: 'org_missing', name: 'x' }))).toBe(
        'not_found',
      )
      expect(await refusal(createApiKey(s(), CLI_ACTOR, { organizationId, name: 'a\u0007b' }))).toBe('invalid')

      const listed = await listOrganizationKeys(s(), { organizationId })
      expect(listed.map((k) => [k.publicId, k.name, k.createdBy, k.creatorLeft, k.revokedAt])).toEqual([
        [listed[0]!.publicId, 'first key', operator.email, false, null],
        [byMember.publicId, 'ci', operator.email, false, null],
        [byCli.publicId, '', null, false, null],
      ])
      expect(await listOrganizationKeys(s(), { organizationId: 'org_missing' })).toEqual([])
      expect(
        (await auditRows(s(), organizationId, 'key.created')).slice(before).map((r) => [r.actor, r.target, r.detail]),
      ).toEqual([
        [operator.email, byMember.publicId, 'ci'],
        ['cli', byCli.publicId, ''],
      ])
      expect((await authenticate(s(), `Bearer ${byMember.key}`)).keyPublicId).toBe(byMember.publicId)
    })

    test('accounts and keys made in the same millisecond list in id order, whatever order they were written in', async () => {
      // Inserted highest id first: without the id as a tie-breaker both dialects hand equal
      // timestamps back in the order they were written (or any order), and pages shift.
      clock.advance(1000)
      const now = isoTime(clock.now())
      const userIds = ['user_tie_c', 'user_tie_b', 'user_tie_a']
      for (const id of userIds) {
        const invite = await createInvite(s(), { ...actor, userId: operator.id }, { organizationId, role: 'member' })
        const result = await s().store.organizations.acceptInvite({
          tokenSha256: sha256Hex(invite.token),
          userId: id,
          now,
          newUser: { id, email: `${id}@example.com`, passwordHash: 'unused', isOperator: false, createdAt: now },
          audit: (row) =>
            auditEntry(s(), actor, { organizationId: row.organizationId, action: 'member.joined', target: id }),
        })
        expect(result).toEqual({ accepted: { organizationId, role: 'member' } })
      }
      const listedUsers = await listUsers(s())
      expect(listedUsers.slice(-3).map((u) => [u.id, u.createdAt])).toEqual([...userIds].sort().map((id) => [id, now]))

      const tied = await createOrganization(s(), CLI_ACTOR, { name: 'Ties', preset: 'hosted' })
      const publicIds = ['00000000000000ff', '0000000000000002', '0000000000000001']
      for (const publicId of publicIds) {
        const row = {
          publicId,
          organizationId: tied.id,
          secretSha256: sha256Hex(publicId),
          name: publicId,
          createdAt: now,
          lastUsedAt: null,
          revokedAt: null,
          createdBy: null,
        }
        expect(await s().store.accounts.insertApiKey({ row, audit: null })).toBe('created')
      }
      const listedKeys = await listOrganizationKeys(s(), { organizationId: tied.id })
      expect(listedKeys.map((k) => k.publicId)).toEqual([...publicIds].sort())
    })

    test('authentication refuses what is missing, malformed, unknown, wrong or revoked; stamps use once a minute', async () => {
      const { key, publicId } = await createApiKey(s(), CLI_ACTOR, { organizationId, name: 'auth' })
      // The secret with its last digit changed (to another digit: a key ending in 0 stays wrong).
      const wrongSecret = `${key.slice(0, -1)}${key.endsWith('0') ? '1' : '0'}`
      for (const header of [
        null,
        '',
        'Bearer',
        `Basic ${key}`,
        'Bearer ph_live_short',
        `Bearer ph_live_${'0'.repeat(16)}_${'a'.repeat(48)}`,
        `Bearer ${wrongSecret}`,
      ]) {
        expect(await refusal(authenticate(s(), header))).toBe('invalid_api_key')
      }
      const lastUsed = async () =>
        (await listOrganizationKeys(s(), { organizationId })).find((k) => k.publicId === publicId)!.lastUsedAt
      expect(await lastUsed()).toBeNull()
      expect((await authenticate(s(), `bearer ${key}`)).organizationId).toBe(organizationId)
      const first = clock.now()
      expect(await lastUsed()).toBe(isoTime(first))
      clock.advance(59_999)
      await authenticate(s(), `Bearer ${key}`)
      expect(await lastUsed()).toBe(isoTime(first))
      clock.advance(1)
      await authenticate(s(), `Bearer ${key}`)
      expect(await lastUsed()).toBe(isoTime(first + 60_000))

      await revokeOrganizationKey(s(), actor, { organizationId, publicId })
      expect(await refusal(authenticate(s(), `Bearer ${key}`))).toBe('invalid_api_key')
    })

    test('revoking: scoped to the organisation, by full key or public id, once, audited once even when two race', async () => {
      const a = await createApiKey(s(), CLI_ACTOR, { organizationId, name: 'a' })
      const b = await createApiKey(s(), CLI_ACTOR, { organizationId, name: 'b' })
      const before = (await auditRows(s(), organizationId, 'key.revoked')).length

      expect(
        await refusal(revokeOrganizationKey(s(), actor, { organizationId: 'org_other', publicId: a.publicId })),
      ).toBe('not_found')
      expect(await refusal(revokeOrganizationKey(s(), actor, { organizationId, publicId: 'ffffffffffffffff' }))).toBe(
        'not_found',
      )
      // A full key whose secret does not match names no key (a typo must not revoke another).
      const typo = `${a.key.slice(0, -1)}${a.key.endsWith('0') ? '1' : '0'}`
      expect(await refusal(revokeKey(s(), CLI_ACTOR, { keyOrPublicId: typo }))).toBe('not_found')
      expect((await authenticate(s(), `Bearer ${a.key}`)).keyPublicId).toBe(a.publicId)

      await Promise.all([
        revokeKey(s(), CLI_ACTOR, { keyOrPublicId: a.key }),
        revokeOrganizationKey(s(), actor, { organizationId, publicId: a.publicId }),
      ])
      await revokeKey(s(), CLI_ACTOR, { keyOrPublicId: a.publicId }) // twice is harmless
      await revokeKey(s(), CLI_ACTOR, { keyOrPublicId: b.publicId })
      expect(await refusal(authenticate(s(), `Bearer ${a.key}`))).toBe('invalid_api_key')
      expect(await refusal(authenticate(s(), `Bearer ${b.key}`))).toBe('invalid_api_key')

      const rows = (await auditRows(s(), organizationId, 'key.revoked')).slice(before)
      expect(rows.map((r) => [r.target, r.detail, r.organizationId])).toEqual([
        [a.publicId, 'a', organizationId],
        [b.publicId, 'b', organizationId],
      ])
      const listed = await listOrganizationKeys(s(), { organizationId })
      expect(listed.find((k) => k.publicId === a.publicId)!.revokedAt).toBe(isoTime(clock.now()))
    })
  },
  { clock },
)
