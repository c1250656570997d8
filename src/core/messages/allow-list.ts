/**
 * CONSOLE_LINK_CHECK_ALLOW: what the link check may reach beyond the public internet. A
 * tester's links mostly point at the application under test (localhost:3000, a staging name
 * on a private network), which the check refuses by default. Entries, comma-separated:
 *
 *   localhost              a host name, exactly (any case)
 *   *.staging.internal     any name under it (not the name itself)
 *   127.0.0.0/8  10.1.2.3  an IPv4 range or address (what a name resolves to, or a literal host)
 *   [::1]  [fd00::]/8      an IPv6 range or address, in brackets
 *
 * each optionally followed by the ports it may use: `:3000`, `:3000-3999` or `:*` (any).
 * Without ports an entry allows 80, 443, 8080 and 8443, as for public addresses. A name
 * allowed here is trusted with whatever it resolves to: name only names you control.
 */
import { isIPv4, isIPv6 } from 'node:net'

/** The four ports a link may use without naming them. */
const USUAL_PORTS = [80, 443, 8080, 8443]

interface Ports {
  test(port: number): boolean
  /** Ports beyond the usual four (so a link on such a port is looked at at all). */
  extra: boolean
}

type Target =
  | { kind: 'name'; name: string }
  | { kind: 'suffix'; suffix: string }
  | { kind: 'v4'; base: number; bits: number }
  | { kind: 'v6'; words: number[]; bits: number }

export interface AllowList {
  /** How many entries (0: nothing beyond the public internet). */
  readonly size: number
  /** Whether an entry names this host (by name) with this port. */
  allowsHost(host: string, port: number): boolean
  /** Whether an entry's range holds this address with this port. */
  allowsAddress(address: string, port: number): boolean
  /** Whether some entry lets a port outside the usual four through. */
  namesPort(port: number): boolean
}

const v4Number = (ip: string) => ip.split('.').reduce((n, part) => n * 256 + Number(part), 0)

function v6Words(ip: string): number[] | null {
  const [head, tail] = ip.toLowerCase().split('::') as [string, string | undefined]
  const h = head ? head.split(':') : []
  const t = tail ? tail.split(':') : []
  const fill = tail === undefined ? 0 : 8 - h.length - t.length
  const words = [...h, ...Array(fill).fill('0'), ...t].map((w) => Number.parseInt(w, 16))
  return words.length === 8 && words.every((w) => Number.isInteger(w) && w >= 0 && w <= 0xffff) ? words : null
}

const NAME = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/

/** One entry, or the reason it cannot be read. */
function parseEntry(entry: string): { target: Target; ports: Ports } | string {
  const match = /^(\[[^\]]+\]|[^:/\s]+)(?:\/(\d{1,3}))?(?::(\*|\d{1,5}(?:-\d{1,5})?))?$/.exec(entry)
  if (!match) return `"${entry}" is not a host, a range or either with ports (localhost:3000, 10.0.0.0/8, [::1]:*)`
  const [, rawHost = '', rawBits, rawPorts] = match
  let ports: Ports = { test: (p) => USUAL_PORTS.includes(p), extra: false }
  if (rawPorts === '*') ports = { test: () => true, extra: true }
  else if (rawPorts) {
    const [low, high = low] = rawPorts.split('-').map(Number) as [number, number?]
    if (!(low >= 1 && high! <= 65535 && low <= high!)) return `"${entry}": ports are 1 to 65535, low to high`
    ports = { test: (p) => p >= low && p <= high!, extra: true }
  }
  const host = rawHost.toLowerCase()
  if (host.startsWith('[')) {
    const words = v6Words(host.slice(1, -1))
    const bits = rawBits === undefined ? 128 : Number(rawBits)
    if (!words || !isIPv6(host.slice(1, -1)) || bits > 128) return `"${entry}": not an IPv6 address or range`
    return { target: { kind: 'v6', words, bits }, ports }
  }
  if (isIPv4(host)) {
    const bits = rawBits === undefined ? 32 : Number(rawBits)
    if (bits > 32) return `"${entry}": an IPv4 range has at most 32 bits`
    return { target: { kind: 'v4', base: v4Number(host), bits }, ports }
  }
  if (rawBits !== undefined) return `"${entry}": only an address takes a /range`
  if (host.startsWith('*.') && NAME.test(host.slice(2)))
    return { target: { kind: 'suffix', suffix: host.slice(1) }, ports }
  if (NAME.test(host)) return { target: { kind: 'name', name: host }, ports }
  return `"${entry}" is not a host name`
}

const inV4 = (address: string, base: number, bits: number) =>
  bits === 0 || v4Number(address) >>> (32 - bits) === base >>> (32 - bits)

function inV6(address: string, range: number[], bits: number): boolean {
  const words = v6Words(address)
  if (!words) return false
  for (let bit = 0; bit < bits; bit += 16) {
    const take = Math.min(16, bits - bit)
    const mask = (0xffff << (16 - take)) & 0xffff
    if ((words[bit / 16]! & mask) !== (range[bit / 16]! & mask)) return false
  }
  return true
}

/** Reads the setting; throws an Error naming the first entry that cannot be read. An empty value allows nothing. */
export function parseAllowList(value: string): AllowList {
  const entries: { target: Target; ports: Ports }[] = []
  for (const raw of value.split(',')) {
    const entry = raw.trim()
    if (entry === '') continue
    const parsed = parseEntry(entry)
    if (typeof parsed === 'string') throw new Error(parsed)
    entries.push(parsed)
  }
  return {
    size: entries.length,
    allowsHost: (host, port) =>
      entries.some(
        ({ target, ports }) =>
          ports.test(port) &&
          ((target.kind === 'name' && target.name === host.toLowerCase()) ||
            (target.kind === 'suffix' && host.toLowerCase().endsWith(target.suffix))),
      ),
    allowsAddress: (address, port) =>
      entries.some(
        ({ target, ports }) =>
          ports.test(port) &&
          ((target.kind === 'v4' && isIPv4(address) && inV4(address, target.base, target.bits)) ||
            (target.kind === 'v6' && isIPv6(address) && inV6(address, target.words, target.bits))),
      ),
    namesPort: (port) => entries.some(({ ports }) => ports.extra && ports.test(port)),
  }
}
