/** The audit log: one row per change of keys, members, invites, limits and accounts. */
import { and, desc, eq, isNull, lt } from 'drizzle-orm'
import { isoTime } from '../../clock.ts'
import type { DbOrTx } from '../../storage/database.ts'
import { auditEvents } from '../../storage/schema.ts'
import type { Services } from '../services.ts'

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

export function recordAudit(s: Pick<Services, 'clock'>, db: DbOrTx, actor: Actor, event: { organizationId: string | null; action: AuditAction; target: string; detail?: string }): void {
  db.insert(auditEvents)
    .values({
      organizationId: event.organizationId,
      actor: actor.label,
      action: event.action,
      target: event.target,
      detail: event.detail ?? '',
      clientAddress: actor.clientAddress,
      createdAt: isoTime(s.clock.now()),
    })
    .run()
}

export const AUDIT_PAGE_SIZE = 100

/** Newest first; `before` (an event id) pages back. null lists the instance's own events. */
export function listAudit(db: DbOrTx, organizationId: string | null, before?: number) {
  const scope = organizationId === null ? isNull(auditEvents.organizationId) : eq(auditEvents.organizationId, organizationId)
  return db
    .select()
    .from(auditEvents)
    .where(before ? and(scope, lt(auditEvents.id, before)) : scope)
    .orderBy(desc(auditEvents.id))
    .limit(AUDIT_PAGE_SIZE)
    .all()
}
