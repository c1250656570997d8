/**
 * The audit log: one row per change of keys, members, invites, limits and accounts. Each
 * verb that changes something hands its row (auditEntry) to the storage operation making the
 * change, which writes both in one transaction, so a crash or a refusal keeps both or neither.
 */
import { isoTime } from '../../clock.ts'
import type { AuditEntry } from '../../storage/port.ts'
import type { AuditEventRow } from '../../storage/rows.ts'
import type { AccountServices } from '../common/services.ts'

/** Who did it: a signed-in user (their email) from a client address, or the admin CLI. */
export interface Actor {
  userId: string | null
  label: string
  clientAddress: string
}

export const CLI_ACTOR: Actor = { userId: null, label: 'cli', clientAddress: '' }

export type AuditAction =
  | 'organization.created'
  | 'limits.changed'
  | 'key.created'
  | 'key.revoked'
  | 'member.invited'
  | 'invite.withdrawn'
  | 'member.joined'
  | 'member.removed'
  | 'member.role_changed'
  | 'user.password_reset'
  | 'user.sessions_revoked'

/**
 * The audit row for an event, for a storage operation to write in the same transaction as
 * the change it records (the port's `audit` inputs).
 */
export function auditEntry(
  s: Pick<AccountServices, 'clock'>,
  actor: Actor,
  event: { organizationId: string | null; action: AuditAction; target: string; detail?: string },
): AuditEntry {
  return {
    organizationId: event.organizationId,
    actor: actor.label,
    action: event.action,
    target: event.target,
    detail: event.detail ?? '',
    clientAddress: actor.clientAddress,
    createdAt: isoTime(s.clock.now()),
  }
}

export const AUDIT_PAGE_SIZE = 100

/**
 * Newest first; `before` (an event id) pages back. The scope is an organisation the caller
 * belongs to (its membership), or `instance` for the operator's own events. A `before` that
 * is no event id (from a hand-edited URL: a fraction, a negative, an infinity, past what a
 * bigint holds) gives the first page: PostgreSQL would refuse it with an error.
 */
export const listAudit = (
  s: Pick<AccountServices, 'store'>,
  scope: { organizationId: string } | 'instance',
  input: { before?: number } = {},
): Promise<AuditEventRow[]> =>
  s.store.organizations.listAudit({
    organizationId: scope === 'instance' ? null : scope.organizationId,
    before: isEventId(input.before) ? input.before : null,
    limit: AUDIT_PAGE_SIZE,
  })

const isEventId = (value: number | undefined): value is number => Number.isSafeInteger(value) && value! > 0
