import type { RoutingProvider } from '../core/common/routing.ts'

/** EMAIL_ROUTING=none: our own SMTP listener is the MX and the inboxes table is the routing table. */
export const noRoutingProvider: RoutingProvider = {
  name: 'none',
  createRule: async () => null,
  deleteRule: async () => {},
}
