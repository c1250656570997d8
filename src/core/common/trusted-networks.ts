/**
 * TRUSTED_PROXIES: the networks whose word about a client's address is believed (the PROXY
 * line on SMTP, CLIENT_ADDRESS_HEADER on HTTP). A peer outside them is its own client: what
 * it claims about someone else's address would let one machine pass for many.
 *
 * Addresses are compared as 128-bit numbers; an IPv4 address and its IPv4-mapped IPv6 form
 * (`::ffff:a.b.c.d`, how a dual-stack listener reports IPv4 peers) are the same address.
 */
import { isIP } from 'node:net'

interface Network {
  /** The address as a 128-bit number (IPv4 mapped into ::ffff:0:0/96). */
  base: bigint
  mask: bigint
}

const ALL_ONES = (1n << 128n) - 1n
const MAPPED_V4 = 0xffffn << 32n

/** An IPv4 or IPv6 address as a 128-bit number, or null for anything else (zone ids included). */
function addressNumber(text: string): bigint | null {
  const address = text.trim().toLowerCase()
  if (address.includes('%')) return null // a zone id names a link, not an address
  const version = isIP(address)
  if (version === 4) return MAPPED_V4 | ipv4Number(address)
  if (version !== 6) return null
  let [head = '', tail] = address.split('::') as [string, string | undefined]
  // A trailing dotted quad (::ffff:1.2.3.4) stands for the last two groups.
  const expandQuad = (part: string) => {
    const quad = part.match(/^(.*?):?(\d+\.\d+\.\d+\.\d+)$/)
    if (!quad) return part
    const value = ipv4Number(quad[2]!)
    const groups = `${(value >> 16n).toString(16)}:${(value & 0xffffn).toString(16)}`
    return quad[1] ? `${quad[1]}:${groups}` : groups
  }
  if (tail === undefined) head = expandQuad(head)
  else tail = expandQuad(tail)
  const left = head ? head.split(':') : []
  const right = tail ? tail.split(':') : []
  const groups =
    tail === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right]
  return groups.reduce((value, group) => (value << 16n) | BigInt(parseInt(group, 16)), 0n)
}

function ipv4Number(address: string): bigint {
  return address.split('.').reduce((value, octet) => (value << 8n) | BigInt(Number(octet)), 0n)
}

/** True for a plain IPv4 or IPv6 address (no port, no zone, no host name). */
export const isIpAddress = (text: string): boolean => addressNumber(text) !== null

/** Why one entry of the list is not a network, or null when it is one. */
function parseNetwork(entry: string): Network | string {
  const [address = '', prefix, extra] = entry.split('/')
  const base = addressNumber(address)
  if (base === null || extra !== undefined)
    return `"${entry}" is not an IPv4 or IPv6 network such as 10.0.0.0/8 or fd00::/8`
  const width = isIP(address.trim()) === 4 ? 32 : 128
  const bits = prefix === undefined ? width : /^\d{1,3}$/.test(prefix.trim()) ? Number(prefix) : Number.NaN
  if (!(bits >= 0 && bits <= width)) return `"${entry}" has a prefix length outside 0..${width}`
  // An IPv4 /n is a /(96+n) of the mapped range.
  const length = width === 32 ? 96 + bits : bits
  const mask = length === 0 ? 0n : (ALL_ONES << BigInt(128 - length)) & ALL_ONES
  return { base: base & mask, mask }
}

export class TrustedNetworks {
  private constructor(private readonly networks: readonly Network[]) {}

  /**
   * Parses a comma-separated list of networks (a bare address is
   * a /32 or /128), or `none`; throws with the first bad entry.
   */
  static parse(list: string): TrustedNetworks {
    const networks: Network[] = []
    // An empty setting means the default, so trusting no one needs a word of its own.
    if (list.trim().toLowerCase() === 'none') return new TrustedNetworks(networks)
    for (const entry of list.split(',').map((part) => part.trim())) {
      if (!entry) continue
      const network = parseNetwork(entry)
      if (typeof network === 'string') throw new Error(network)
      networks.push(network)
    }
    return new TrustedNetworks(networks)
  }

  /** Why the list is not valid, or null (for the configuration check). */
  static problem(list: string): string | null {
    try {
      TrustedNetworks.parse(list)
      return null
    } catch (error) {
      return (error as Error).message
    }
  }

  /** True when the peer's address lies in one of the networks; an unreadable address never does. */
  trusts(peer: string | undefined): boolean {
    const value = addressNumber(peer ?? '')
    if (value === null) return false
    return this.networks.some((network) => (value & network.mask) === network.base)
  }

  get empty(): boolean {
    return this.networks.length === 0
  }
}
