/** One audit row, written by the operation whose change it records, in that change's transaction. */
export interface AuditEntry {
  /** null for the operator's instance-wide events. */
  organizationId: string | null
  /** The actor's label: a signed-in user's email, or `cli`. */
  actor: string
  action: string
  target: string
  detail: string
  clientAddress: string
  createdAt: string
}
