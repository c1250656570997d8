/**
 * The client address the console throttles sign-ins by and writes into sessions and the
 * audit log. CLIENT_ADDRESS_HEADER is a claim anyone can make; it is believed only from a
 * peer in TRUSTED_PROXIES (the proxy that overwrites it), and only when it holds exactly one
 * IPv4 or IPv6 address. Anything else (an untrusted peer, a list, a port, free text, a value
 * of kilobytes) falls back to the connection's own address, so one machine cannot spread its
 * failed sign-ins over made-up addresses or write what it likes into the audit log.
 */
import { isIpAddress, TrustedNetworks } from '../core/common/trusted-networks.ts'

export type ClientAddressReader = (headers: Headers, peer: string) => string

export function clientAddressReader(headerName: string, trustedProxies: string): ClientAddressReader {
  const name = headerName.toLowerCase()
  if (!name) return (_headers, peer) => peer
  const trusted = TrustedNetworks.parse(trustedProxies)
  return (headers, peer) => {
    if (!trusted.trusts(peer)) return peer
    const claimed = headers.get(name)?.trim().toLowerCase() ?? ''
    return isIpAddress(claimed) ? claimed : peer
  }
}
