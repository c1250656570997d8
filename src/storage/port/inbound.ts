/** Admission counts, storing inbound mail, retention sweeps and the readiness heartbeat. See ../port.ts for the conventions every operation follows. */
// biome-ignore lint/suspicious/noEmptyInterface: filled in as core's verbs move onto the port
export interface InboundStore {}
