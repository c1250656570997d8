/** Organisations and their limits, members, invites and the audit log. See ../port.ts for the conventions every operation follows. */
// biome-ignore lint/suspicious/noEmptyInterface: filled in as core's verbs move onto the port
export interface OrganizationStore {}
