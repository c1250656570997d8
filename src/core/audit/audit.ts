/**
 * The audit log: one row per change of keys, members, invites, limits and accounts. Each
 * verb that changes something records its row itself, inside the change's transaction, so
 * a crash or a refusal keeps both or neither.
 */
import { isoTime } from '../../clock.ts'
import type { AuditEntry } from '../../storage/port.ts'
import type { AuditEventRow } from '../../storage/rows.ts'
import { auditEvents } from '../../storage/schema.ts'
import type { AccountServices } from '../services.ts'
import { transaction } from '../transaction.ts'

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
export function auditEntry(s: Pick<AccountServices, 'clock'>, actor: Actor, event: { organizationId: string | null; action: AuditAction; target: string; detail?: string }): AuditEntry {
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

/** Called by verbs inside their own transaction (which it joins); on its own it opens one. */
export function recordAudit(s: Pick<AccountServices, 'clock' | 'storage'>, actor: Actor, event: { organizationId: string | null; action: AuditAction; target: string; detail?: string }): void {
  transaction(s, (tx) =>
    tx
      .insert(auditEvents)
      .values(auditEntry(s, actor, event))
      .run(),
  )
}

export const AUDIT_PAGE_SIZE = 100

/**
 * Newest first; `before` (an event id) pages back. The scope is an organisation the caller
 * belongs to (its membership), or `instance` for the operator's own events.
 */
export const listAudit = (s: Pick<AccountServices, 'store'>, scope: { organizationId: string } | 'instance', input: { before?: number } = {}): Promise<AuditEventRow[]> =>
  s.store.organizations.listAudit({ organizationId: scope === 'instance' ? null : scope.organizationId, before: input.before || null, limit: AUDIT_PAGE_SIZE })
