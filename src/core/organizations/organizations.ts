/** Organisations: created and limited by the operator, seen by their members. */
import { isoTime } from '../../clock.ts'
import { newId } from '../../ids.ts'
import type { AuditEntry } from '../../storage/port.ts'
import type { OrganizationRow } from '../../storage/rows.ts'
import type { Principal } from '../api-keys/authenticate.ts'
import {
  LOCAL_TESTING_LIMITS,
  MAX_LIMIT,
  NO_LIMIT_COLUMNS,
  ORG_LIMIT_NAMES,
  overridesToColumns,
  resolveOrgLimits,
  storedOverrides,
  type OrgLimitOverrides,
  type OrgLimits,
} from '../limits/organization-limits.ts'
import type { AccountServices } from '../common/services.ts'
import { auditEntry, type Actor } from '../audit/audit.ts'
import { Refusal, notFound } from '../common/refusals.ts'

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

const presetOverrides = (preset: LimitPreset): OrgLimitOverrides =>
  preset === 'local' ? { ...LOCAL_TESTING_LIMITS } : {}

/**
 * The one way an organisation comes to be (the operator's console form, `cli orgs create`,
 * and the tests' harness): a checked name, the preset's limits, an audit row, and with
 * `owner` that user as its owner, all in one operation.
 */
export async function createOrganization(
  s: Pick<AccountServices, 'clock' | 'store'>,
  actor: Actor,
  input: { name: unknown; preset: LimitPreset; owner?: string },
): Promise<OrganizationRow> {
  const { organization, audit } = organizationToCreate(s, actor, input)
  return s.store.organizations.createOrganization({ organization, ownerUserId: input.owner ?? null, audit })
}

/**
 * The new organisation's row (checked name, the preset's limit columns) and its audit row,
 * for createOrganization and for first-run setup (which writes them in its own transaction).
 */
export function organizationToCreate(
  s: Pick<AccountServices, 'clock'>,
  actor: Actor,
  input: { name: unknown; preset: LimitPreset },
): { organization: OrganizationRow; audit: AuditEntry } {
  const name = checkOrganizationName(input.name)
  const organization: OrganizationRow = {
    ...NO_LIMIT_COLUMNS,
    ...overridesToColumns(presetOverrides(input.preset)),
    id: newId('org'),
    name,
    createdAt: isoTime(s.clock.now()),
  }
  const audit = auditEntry(s, actor, {
    organizationId: null,
    action: 'organization.created',
    target: organization.id,
    detail: `${name} (${input.preset === 'local' ? 'local testing' : 'hosted free plan'} limits)`,
  })
  return { organization, audit }
}

/** Every organisation of the instance, oldest first (the operator's list and `cli orgs list`). */
export const listOrganizations = (s: Pick<AccountServices, 'store'>): Promise<OrganizationRow[]> =>
  s.store.organizations.listOrganizations()

/**
 * The organisations already called `name`, oldest first, compared as a person reads a list:
 * trimmed and in any case ("My-Team" is "my-team"). `cli orgs create` refuses a name in use,
 * since a script run twice would otherwise make a second organisation nobody can tell apart.
 */
export async function organizationsNamed(s: Pick<AccountServices, 'store'>, raw: unknown): Promise<OrganizationRow[]> {
  const name = checkOrganizationName(raw).toLowerCase()
  return (await listOrganizations(s)).filter((org) => org.name.toLowerCase() === name)
}

export const membershipsOf = (s: Pick<AccountServices, 'store'>, user: { id: string }): Promise<Membership[]> =>
  s.store.organizations.membershipsOf(user.id)

/**
 * The user's membership of the organisation, with the organisation's effective limits (every
 * member page acts as the organisation, so both come from one read); another organisation's
 * id is simply not found.
 */
export async function requireMembership(
  s: Pick<AccountServices, 'config' | 'store'>,
  user: { id: string },
  input: { organizationId: string; role?: Role },
): Promise<{ membership: Membership; limits: OrgLimits }> {
  const row = await s.store.organizations.membership({ userId: user.id, organizationId: input.organizationId })
  if (!row) throw notFound()
  if (input.role === 'owner' && row.role !== 'owner')
    throw new Refusal('forbidden', 'Only owners of this organisation can do that.')
  const { organization, role } = row
  return {
    membership: { organizationId: organization.id, name: organization.name, role },
    limits: resolveOrgLimits(organization, s.config.limits),
  }
}

/** The organisation with its effective limits and which of them it overrides. */
export async function organizationWithLimits(
  s: Pick<AccountServices, 'config' | 'store'>,
  scope: { organizationId: string },
) {
  const row = await s.store.organizations.findOrganization(scope.organizationId)
  if (!row) throw notFound()
  return {
    id: row.id,
    name: row.name,
    createdAt: row.createdAt,
    limits: resolveOrgLimits(row, s.config.limits),
    overrides: storedOverrides(row),
  }
}

/**
 * Parses limit fields (strings from a form or flags); '' or absent
 * leaves a limit as it is, 'default' returns it to the environment's.
 */
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
export async function changeLimits(
  s: Pick<AccountServices, 'clock' | 'store'>,
  actor: Actor,
  input: { organizationId: string; overrides: OrgLimitOverrides },
): Promise<void> {
  const { organizationId, overrides } = input
  const detail = Object.entries(overrides)
    .map(([name, value]) => `${name}=${value ?? 'default'}`)
    .join(', ')
  const audit = auditEntry(s, actor, { organizationId, action: 'limits.changed', target: organizationId, detail })
  if (!(await s.store.organizations.setLimits({ organizationId, columns: overridesToColumns(overrides), audit })))
    throw notFound()
}

/** The caller identity the console uses for domain verbs shared with the API (createInbox, getUsage). */
export const consolePrincipal = (organizationId: string, limits: OrgLimits): Principal => ({
  organizationId,
  keyPublicId: 'console',
  limits,
})
