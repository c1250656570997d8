/**
 * Organisations and their limits, members, invites and the audit
 * log. See ../port.ts for the conventions every operation follows.
 */
import type { AuditEventRow, InviteRow, OrganizationRow, UserRow } from '../rows.ts'
import type { AuditEntry } from './audit-entry.ts'

export type MemberRole = 'owner' | 'member'

/** The limit columns of an organisation row, by name (both adapters select these: ../columns.ts). */
export const LIMIT_COLUMN_NAMES = [
  'limitActiveInboxes',
  'limitMonthlyEmails',
  'limitInboxBurst',
  'limitOrgBurst',
  'limitRequestsPerKey',
  'limitRequestsPerOrg',
  'limitLongPollsPerKey',
  'limitLongPollsPerOrg',
] as const satisfies ReadonlyArray<keyof OrganizationRow>
export type LimitColumnName = (typeof LIMIT_COLUMN_NAMES)[number]

/** The limit columns of an organisation row (null follows the environment's LIMIT_* value). */
export type OrganizationLimitColumns = Pick<OrganizationRow, LimitColumnName>

/** One organisation a user belongs to, as the console's organisation switcher lists it. */
export interface MembershipOfUser {
  organizationId: string
  name: string
  role: MemberRole
}

export interface MemberListing {
  userId: string
  email: string
  role: MemberRole
  joinedAt: string
}

/** The member a change concerns, as found inside the change's transaction (for its audit row). */
export interface FoundMember {
  email: string
  role: MemberRole
}

/** An invite as its link shows it: with the organisation's name, and whether it is spent. */
export interface InviteByToken {
  id: string
  organizationId: string
  organizationName: string
  role: MemberRole
  expiresAt: string
  usedAt: string | null
}

export interface OpenInvite {
  id: string
  role: MemberRole
  createdAt: string
  expiresAt: string
}

export interface OrganizationStore {
  /**
   * Inserts the organisation (with its limit columns), with `ownerUserId` as its owner when
   * given, and the audit row; answers the stored row.
   */
  createOrganization(input: {
    organization: OrganizationRow
    ownerUserId: string | null
    audit: AuditEntry
  }): Promise<OrganizationRow>

  /** Every organisation, oldest first. */
  listOrganizations(): Promise<OrganizationRow[]>

  /** The organisation's row, or null when there is no such organisation. */
  findOrganization(organizationId: string): Promise<OrganizationRow | null>

  /** The limit columns alone (one indexed read), or null when there is no such organisation. */
  organizationLimits(organizationId: string): Promise<OrganizationLimitColumns | null>

  /**
   * Writes the given limit columns (a number sets, null returns to the environment's) and
   * the audit row together; `false` (nothing written) when there is no such organisation.
   */
  setLimits(input: {
    organizationId: string
    columns: Partial<OrganizationLimitColumns>
    audit: AuditEntry
  }): Promise<boolean>

  /** The user's organisations with their role, by organisation name (byte order). */
  membershipsOf(userId: string): Promise<MembershipOfUser[]>

  /** The user's role in the organisation with the organisation's row (one read), or null when not a member. */
  membership(input: {
    userId: string
    organizationId: string
  }): Promise<{ organization: OrganizationRow; role: MemberRole } | null>

  /** The organisation's members with their emails, earliest joined first. */
  listMembers(organizationId: string): Promise<MemberListing[]>

  /**
   * Sets a member's role, never leaving the organisation without an owner: refused
   * `last_owner` when the member is its only owner and `role` is not owner. `unchanged`
   * (nothing written, no audit row) when the member already has the role. `audit` builds
   * the audit row from the member as found inside the transaction.
   */
  changeRole(input: {
    organizationId: string
    userId: string
    role: MemberRole
    audit: (member: FoundMember) => AuditEntry
  }): Promise<{ outcome: 'changed' | 'unchanged' } | { refused: 'not_found' | 'last_owner' }>

  /**
   * Removes a membership, never the organisation's last owner. `audit` builds the audit row
   * from the member and the number of unrevoked API keys they made in the organisation
   * (those stay active: they belong to the organisation).
   */
  removeMember(input: {
    organizationId: string
    userId: string
    audit: (member: FoundMember & { activeKeysMade: number }) => AuditEntry
  }): Promise<{ removed: true } | { refused: 'not_found' | 'last_owner' }>

  /**
   * Makes the user an owner of the organisation: a new membership (joined at `now`) or a
   * member promoted. `already_owner` writes nothing (no audit row); `not_found` when there
   * is no such organisation.
   */
  joinAsOwner(input: {
    organizationId: string
    userId: string
    now: string
    audit: AuditEntry
  }): Promise<'joined' | 'promoted' | 'already_owner' | 'not_found'>

  /** Stores an invite (its token only as a SHA-256) with its audit row. */
  createInvite(input: { invite: InviteRow; audit: AuditEntry }): Promise<void>

  /** The organisation's invites neither used nor withdrawn that expire after `now`, newest first. */
  listOpenInvites(input: { organizationId: string; now: string }): Promise<OpenInvite[]>

  /**
   * Spends an unused invite of the organisation (marks it used at `now`) with the audit row;
   * `false` (nothing written) when there is no such unused invite in that organisation.
   */
  withdrawInvite(input: { organizationId: string; inviteId: string; now: string; audit: AuditEntry }): Promise<boolean>

  /** The invite whose token has this SHA-256, used or not, or null. */
  inviteByToken(tokenSha256: string): Promise<InviteByToken | null>

  /**
   * Accepts an invite, in one transaction: with `newUser`, first inserts that account
   * (refused `email_taken` when its email exists); then, if the invite is unused and expires
   * after `now`, marks it used, adds the membership with the invite's role (joined at `now`)
   * and writes the audit row `audit` builds from the invite. Refused `invite_not_found`
   * (unknown, used, withdrawn or expired) or `already_member`; a refusal writes nothing, the
   * new account included. Accepting one invite twice at once makes one membership.
   */
  acceptInvite(input: {
    tokenSha256: string
    userId: string
    now: string
    newUser: UserRow | null
    audit: (invite: { id: string; organizationId: string; role: MemberRole }) => AuditEntry
  }): Promise<
    | { accepted: { organizationId: string; role: MemberRole } }
    | { refused: 'invite_not_found' | 'already_member' | 'email_taken' }
  >

  /**
   * One page of the audit log, newest first: the organisation's events, or with
   * `organizationId: null` the instance's own (operator) events; `before` (an event id)
   * pages back. At most `limit` rows.
   */
  listAudit(input: { organizationId: string | null; before: number | null; limit: number }): Promise<AuditEventRow[]>
}
