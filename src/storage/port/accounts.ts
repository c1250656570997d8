/**
 * Users, first-run setup, console sessions, API keys and instance
 * settings. See ../port.ts for the conventions every operation follows.
 */
import type { AuditEntry } from './audit-entry.ts'
import type { OrganizationLimitColumns } from './organizations.ts'
import type { ApiKeyRow, MembershipRow, OrganizationRow, SessionRow, UserRow } from '../rows.ts'

/** The organisation's limit columns (null: follows the environment), as authentication reads them. */
export type LimitColumns = OrganizationLimitColumns

/** What authenticating a request needs of its key, with its organisation's limits, in one read. */
export type KeyForAuthentication = Pick<ApiKeyRow, 'organizationId' | 'secretSha256' | 'revokedAt' | 'lastUsedAt'> &
  LimitColumns

/** A key as the organisation's keys page lists it. */
export type ListedKey = {
  publicId: string
  name: string
  createdAt: string
  lastUsedAt: string | null
  revokedAt: string | null
  /** The maker's email; null when the CLI made the key. */
  createdBy: string | null
  /** True when the maker is no longer a member of the key's organisation. */
  creatorLeft: boolean
}

export type ListedSession = Pick<SessionRow, 'createdAt' | 'expiresAt' | 'clientAddress' | 'tokenSha256'>

export type ListedUser = Pick<UserRow, 'id' | 'email' | 'isOperator' | 'createdAt'>

/** Which sessions of the user end with a password change. */
export type EndSessions = 'none' | 'all' | { keep: string }

/** Everything first-run setup writes, made by core beforehand (ids, hashes, limit columns, audit rows). */
export interface FirstRunSetup {
  /** The setup token the visitor holds: setup happens only while it is still the pending one. */
  token: string
  user: UserRow
  organization: OrganizationRow
  membership: MembershipRow
  key: ApiKeyRow
  audit: AuditEntry[]
}

export interface AccountStore {
  // Users

  /** How many console accounts exist. */
  countUsers(): Promise<number>
  findUserByEmail(email: string): Promise<UserRow | undefined>
  findUser(id: string): Promise<UserRow | undefined>
  /** Every account, oldest first; accounts made in the same millisecond by id, so the order is stable. */
  listUsers(): Promise<ListedUser[]>
  /**
   * Sets the user's password hash and, in the same transaction, ends the sessions `endSessions`
   * names and writes `audit`. False when no such user.
   */
  setPasswordHash(input: {
    userId: string
    passwordHash: string
    endSessions: EndSessions
    audit: AuditEntry | null
  }): Promise<boolean>

  // First-run setup (the setup token lives in `settings`)

  /**
   * The pending setup token while no user exists: the stored one, or `candidate` stored now
   * when there is none (two callers at once agree on one). null once a user exists.
   */
  pendingSetupToken(candidate: string): Promise<string | null>
  /** The stored setup token, or null when there is none or a user already exists. Reads only. */
  readSetupToken(): Promise<string | null>
  /**
   * Writes the operator, the first organisation, its owner membership, its first key and the
   * audit rows, and deletes the setup token, all in one transaction, only if no user exists
   * and `token` is still the pending token. False (nothing written) otherwise; of two
   * completions at once, exactly one is true.
   */
  completeFirstRunSetup(setup: FirstRunSetup): Promise<boolean>

  // Console sessions

  insertSession(row: SessionRow): Promise<void>
  /**
   * The session with its user. An expired session (`expiresAt <= now`) is deleted and answers
   * null; one that expires before `renewBefore` gets `renewTo` as its new expiry (`renewed`).
   */
  useSession(input: {
    tokenSha256: string
    now: string
    renewBefore: string
    renewTo: string
  }): Promise<{ user: UserRow; expiresAt: string; renewed: boolean } | null>
  /** The session's expiry if its user is a member of the organisation; undefined otherwise. Reads only. */
  sessionExpiryInOrganization(input: { tokenSha256: string; organizationId: string }): Promise<string | undefined>
  deleteSession(tokenSha256: string): Promise<void>
  /**
   * Ends every session of the user and writes the audit row `audit` makes of how many ended,
   * in the same transaction; answers how many ended.
   */
  deleteSessionsOfUser(input: { userId: string; audit: ((ended: number) => AuditEntry) | null }): Promise<number>
  listSessions(userId: string): Promise<ListedSession[]>
  /** Deletes sessions that expired before `now`; answers how many. */
  deleteExpiredSessions(now: string): Promise<number>

  // API keys

  /**
   * Inserts the key and writes `audit` with it; 'no_organization'
   * (nothing written) when its organisation does not exist.
   */
  insertApiKey(input: { row: ApiKeyRow; audit: AuditEntry | null }): Promise<'created' | 'no_organization'>
  /** The organisation's keys with their makers, oldest first; keys made in the same millisecond by public id. */
  listOrganizationKeys(organizationId: string): Promise<ListedKey[]>
  findApiKey(publicId: string): Promise<ApiKeyRow | undefined>
  /** Which of these keys are revoked (one read for all; unknown ids are left out). */
  revokedAmong(publicIds: string[]): Promise<string[]>
  /**
   * Sets `revokedAt` if the key is not revoked yet, writing `audit` with it; false (nothing
   * written) when it was already revoked or does not exist.
   */
  revokeApiKey(input: { publicId: string; revokedAt: string; audit: AuditEntry | null }): Promise<boolean>
  /** One read on every API request: the key by its public id, with its organisation's limit columns. */
  keyForAuthentication(publicId: string): Promise<KeyForAuthentication | undefined>
  /** Stamps the key's last use. */
  markKeyUsed(input: { publicId: string; at: string }): Promise<void>
}
