/** Organisations: created and limited by the operator, seen by their members. */
import { and, asc, eq } from 'drizzle-orm'
import { isoTime } from '../../clock.ts'
import { newId } from '../../ids.ts'
import { memberships, organizations } from '../../storage/schema.ts'
import type { Principal } from '../api-keys/authenticate.ts'
import { LOCAL_TESTING_LIMITS, MAX_LIMIT, ORG_LIMIT_NAMES, resolveOrgLimits, setOrgLimits, storedOverrides, type OrgLimitOverrides, type OrgLimits } from '../limits.ts'
import type { AccountServices } from '../services.ts'
import { transaction } from '../transaction.ts'
import { recordAudit, type Actor } from '../audit/audit.ts'
import { Refusal, notFound } from '../refusals.ts'

export type Role = 'owner' | 'member'
/** 'hosted' follows the LIMIT_* variables (the spec's free plan by default); 'local' never locks a developer out. */
export type LimitPreset = 'hosted' | 'local'

export interface Membership {
  organizationId: string
  name: string
  role: Role
}

const MAX_NAME_LENGTH = 100

export function checkOrganizationName(raw: unknown): string {
  const name = typeof raw === 'string' ? raw.trim() : ''
  if (name === '' || name.length > MAX_NAME_LENGTH || /\p{Cc}/u.test(name)) {
    throw new Refusal('invalid', `The organisation name must have 1 to ${MAX_NAME_LENGTH} printable characters.`)
  }
  return name
}

export const presetOverrides = (preset: LimitPreset): OrgLimitOverrides => (preset === 'local' ? { ...LOCAL_TESTING_LIMITS } : {})

/**
 * The one way an organisation comes to be (the operator's console form, `cli orgs create`,
 * first-run setup, and the tests' harness): a checked name, the preset's limits, an audit
 * row, and with `owner` that user as its owner, all in one transaction.
 */
export function createOrganization(s: Pick<AccountServices, 'clock' | 'storage'>, actor: Actor, input: { name: unknown; preset: LimitPreset; owner?: string }) {
  const name = checkOrganizationName(input.name)
  return transaction(s, (tx) => {
    const now = isoTime(s.clock.now())
    const org = tx
      .insert(organizations)
      .values({ id: newId('org'), name, createdAt: now })
      .returning()
      .get()
    setOrgLimits(tx, org.id, presetOverrides(input.preset))
    if (input.owner) tx.insert(memberships).values({ organizationId: org.id, userId: input.owner, role: 'owner', createdAt: now }).run()
    recordAudit(s, actor, { organizationId: null, action: 'organization.created', target: org.id, detail: `${org.name} (${input.preset === 'local' ? 'local testing' : 'hosted free plan'} limits)` })
    return org
  })
}

/** Every organisation of the instance, oldest first (the operator's list and `cli orgs list`). */
export const listOrganizations = (s: Pick<AccountServices, 'storage'>) => s.storage.db.select().from(organizations).orderBy(asc(organizations.createdAt)).all()

export const membershipsOf = (s: Pick<AccountServices, 'storage'>, user: { id: string }): Membership[] =>
  s.storage.db
    .select({ organizationId: organizations.id, name: organizations.name, role: memberships.role })
    .from(memberships)
    .innerJoin(organizations, eq(organizations.id, memberships.organizationId))
    .where(eq(memberships.userId, user.id))
    .orderBy(asc(organizations.name))
    .all()

/**
 * The user's membership of the organisation, with the organisation's effective limits (every
 * member page acts as the organisation, so both come from one read); another organisation's
 * id is simply not found.
 */
export function requireMembership(s: Pick<AccountServices, 'config' | 'storage'>, user: { id: string }, input: { organizationId: string; role?: Role }): { membership: Membership; limits: OrgLimits } {
  const row = s.storage.db
    .select({ organization: organizations, role: memberships.role })
    .from(memberships)
    .innerJoin(organizations, eq(organizations.id, memberships.organizationId))
    .where(and(eq(memberships.userId, user.id), eq(memberships.organizationId, input.organizationId)))
    .get()
  if (!row) throw notFound()
  if (input.role === 'owner' && row.role !== 'owner') throw new Refusal('forbidden', 'Only owners of this organisation can do that.')
  const { organization, role } = row
  return { membership: { organizationId: organization.id, name: organization.name, role }, limits: resolveOrgLimits(organization, s.config.limits) }
}

/** The organisation with its effective limits and which of them it overrides. */
export function organizationWithLimits(s: Pick<AccountServices, 'config' | 'storage'>, scope: { organizationId: string }) {
  const row = s.storage.db.select().from(organizations).where(eq(organizations.id, scope.organizationId)).get()
  if (!row) throw notFound()
  return { id: row.id, name: row.name, createdAt: row.createdAt, limits: resolveOrgLimits(row, s.config.limits), overrides: storedOverrides(row) }
}

/** Parses limit fields (strings from a form or flags); '' or absent leaves a limit as it is, 'default' returns it to the environment's. */
export function parseLimitInput(input: Partial<Record<string, unknown>>): OrgLimitOverrides {
  const overrides: OrgLimitOverrides = {}
  for (const name of ORG_LIMIT_NAMES) {
    const raw = input[name]
    if (raw === undefined || raw === '') continue
    if (raw === 'default') {
      overrides[name] = null
      continue
    }
    const text = String(raw).replaceAll(/[,_\s]/g, '')
    if (!/^[0-9]{1,10}$/.test(text) || Number(text) < 1 || Number(text) > MAX_LIMIT) {
      throw new Refusal('invalid', `${name} must be a whole number from 1 to 1,000,000,000 (or "default").`)
    }
    overrides[name] = Number(text)
  }
  return overrides
}

/** The operator sets limits; the change is audited in the organisation's log and takes effect on the next request. */
export function changeLimits(s: Pick<AccountServices, 'clock' | 'storage'>, actor: Actor, input: { organizationId: string; overrides: OrgLimitOverrides }): void {
  const { organizationId, overrides } = input
  transaction(s, (tx) => {
    if (!setOrgLimits(tx, organizationId, overrides)) throw notFound()
    const detail = Object.entries(overrides)
      .map(([name, value]) => `${name}=${value ?? 'default'}`)
      .join(', ')
    recordAudit(s, actor, { organizationId, action: 'limits.changed', target: organizationId, detail })
  })
}

/** The caller identity the console uses for domain verbs shared with the API (createInbox, getUsage). */
export const consolePrincipal = (organizationId: string, limits: OrgLimits): Principal => ({ organizationId, keyPublicId: 'console', limits })
