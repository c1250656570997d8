/**
 * Each organisation's own limits. A stored null follows the LIMIT_* variable, so new
 * organisations get the environment's values and keep following them until the operator
 * sets one (console or `cli orgs limits`). getUsage and every enforcement point read these.
 */
import type { Limits } from '../../config.ts'
import type { LimitColumnName } from '../../storage/port/organizations.ts'
import type { Services } from '../common/services.ts'

export const ORG_LIMIT_NAMES = [
  'activeInboxes',
  'monthlyEmails',
  'inboxBurst',
  'orgBurst',
  'requestsPerKey',
  'requestsPerOrg',
  'longPollsPerKey',
  'longPollsPerOrg',
] as const
export type OrgLimitName = (typeof ORG_LIMIT_NAMES)[number]
export type OrgLimits = Pick<Limits, OrgLimitName>
export type OrgLimitOverrides = Partial<Record<OrgLimitName, number | null>>

/** Largest value accepted for any limit: far past any real need, still a safe integer for counters. */
export const MAX_LIMIT = 1_000_000_000

/** Labels for pages and CLI output, and the CLI flag of each limit. */
export const ORG_LIMIT_INFO: Record<OrgLimitName, { label: string; flag: string }> = {
  activeInboxes: { label: 'Active inboxes', flag: 'active-inboxes' },
  monthlyEmails: { label: 'Emails per UTC month', flag: 'emails-per-month' },
  inboxBurst: { label: 'Messages per inbox per 5 minutes', flag: 'inbox-burst' },
  orgBurst: { label: 'Messages per organisation per 5 minutes', flag: 'org-burst' },
  requestsPerKey: { label: 'HTTP requests per key per minute', flag: 'requests-per-key' },
  requestsPerOrg: { label: 'HTTP requests per organisation per minute', flag: 'requests-per-org' },
  longPollsPerKey: { label: 'Concurrent long polls per key', flag: 'long-polls-per-key' },
  longPollsPerOrg: { label: 'Concurrent long polls per organisation', flag: 'long-polls-per-org' },
}

/**
 * "Local testing": limits that never lock a developer out of their own machine (no
 * practical monthly quota or burst), still finite so a runaway loop is noticed.
 */
export const LOCAL_TESTING_LIMITS: OrgLimits = {
  activeInboxes: 1_000,
  monthlyEmails: 1_000_000,
  inboxBurst: 100_000,
  orgBurst: 100_000,
  requestsPerKey: 6_000,
  requestsPerOrg: 30_000,
  longPollsPerKey: 100,
  longPollsPerOrg: 300,
}

const COLUMN = {
  activeInboxes: 'limitActiveInboxes',
  monthlyEmails: 'limitMonthlyEmails',
  inboxBurst: 'limitInboxBurst',
  orgBurst: 'limitOrgBurst',
  requestsPerKey: 'limitRequestsPerKey',
  requestsPerOrg: 'limitRequestsPerOrg',
  longPollsPerKey: 'limitLongPollsPerKey',
  longPollsPerOrg: 'limitLongPollsPerOrg',
} as const satisfies Record<OrgLimitName, LimitColumnName>

export type OrgLimitColumns = { [K in (typeof COLUMN)[OrgLimitName]]: number | null }

export function resolveOrgLimits(row: OrgLimitColumns, defaults: Limits): OrgLimits {
  return Object.fromEntries(ORG_LIMIT_NAMES.map((name) => [name, row[COLUMN[name]] ?? defaults[name]])) as OrgLimits
}

/** The stored overrides only (null = follows the environment). */
export function storedOverrides(row: OrgLimitColumns): Record<OrgLimitName, number | null> {
  return Object.fromEntries(ORG_LIMIT_NAMES.map((name) => [name, row[COLUMN[name]]])) as Record<
    OrgLimitName,
    number | null
  >
}

export const overridesToColumns = (overrides: OrgLimitOverrides): Partial<OrgLimitColumns> =>
  Object.fromEntries(
    Object.entries(overrides).map(([name, value]) => [COLUMN[name as OrgLimitName], value]),
  ) as Partial<OrgLimitColumns>

/** Every limit column null: an organisation that follows the environment throughout. */
export const NO_LIMIT_COLUMNS: OrgLimitColumns = Object.fromEntries(
  ORG_LIMIT_NAMES.map((name) => [COLUMN[name], null]),
) as OrgLimitColumns

/** The organisation's effective limits; the environment's when the organisation is unknown. */
export async function organizationLimits(
  s: Pick<Services, 'config' | 'store'>,
  organizationId: string,
): Promise<OrgLimits> {
  return resolveOrgLimits(
    (await s.store.organizations.organizationLimits(organizationId)) ?? NO_LIMIT_COLUMNS,
    s.config.limits,
  )
}
