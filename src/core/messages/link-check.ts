/**
 * "Check links" on a message page: a HEAD request from this server to each link, so the
 * person debugging sees which confirm link answers 200 and which 404s. A server that
 * fetches URLs chosen by mail senders is a request-forgery risk, so:
 *
 * - it is off on a public deployment unless turned on (CONSOLE_LINK_CHECK);
 * - only http(s) on ports 80, 443, 8080 and 8443;
 * - every address the name resolves to must be public (no loopback, private, link-local,
 *   CGNAT, documentation, multicast or reserved range, also inside IPv4-mapped and NAT64
 *   IPv6); the connection then goes to the address that was checked (the resolver is
 *   pinned through `lookup`), so a second DNS answer cannot point it elsewhere (rebinding);
 * - redirects are reported, never followed (a redirect to an internal URL goes nowhere);
 * - at most MAX_CHECKED links, CHECK_TIMEOUT_MS each, CONCURRENCY at a time, the body never read.
 */
import { promises as dns } from 'node:dns'
import http from 'node:http'
import https from 'node:https'
import { isIPv4, isIPv6 } from 'node:net'

export const MAX_CHECKED = 20
export const CHECK_TIMEOUT_MS = 3000
const CONCURRENCY = 4
const PORTS = new Set([80, 443, 8080, 8443])

export interface LinkStatus {
  url: string
  /** The HTTP status, or null when no answer came. */
  status: number | null
  /** What a person reads: "200 OK", "301 → https://...", "refused: private address", "timed out". */
  note: string
}

const V4_BLOCKED: [string, number][] = [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
]
const v4Number = (ip: string) => ip.split('.').reduce((n, part) => n * 256 + Number(part), 0)

function v6Words(ip: string): number[] | null {
  let text = ip.toLowerCase()
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text)
  if (v4) {
    const n = v4Number(v4[1]!)
    text = `${text.slice(0, -v4[1]!.length)}${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`
  }
  const [head, tail] = text.split('::') as [string, string | undefined]
  const h = head ? head.split(':') : []
  const t = tail ? tail.split(':') : []
  const fill = tail === undefined ? 0 : 8 - h.length - t.length
  const words = [...h, ...Array(fill).fill('0'), ...t].map((w) => Number.parseInt(w, 16))
  return words.length === 8 && words.every((w) => w >= 0 && w <= 0xffff) ? words : null
}

/** True only for an address on the public internet. */
export function isPublicAddress(ip: string): boolean {
  if (isIPv4(ip)) {
    const n = v4Number(ip)
    return !V4_BLOCKED.some(([base, bits]) => n >>> (32 - bits) === v4Number(base) >>> (32 - bits))
  }
  if (!isIPv6(ip)) return false
  const w = v6Words(ip)
  if (!w) return false
  const embeddedV4 = () => `${w[6]! >> 8}.${w[6]! & 255}.${w[7]! >> 8}.${w[7]! & 255}`
  if (w.slice(0, 6).every((x) => x === 0)) return w[6] === 0 && w[7]! <= 1 ? false : isPublicAddress(embeddedV4()) // ::, ::1, ::a.b.c.d
  if (w.slice(0, 5).every((x) => x === 0) && w[5] === 0xffff) return isPublicAddress(embeddedV4()) // ::ffff:a.b.c.d
  if (w[0] === 0x64 && w[1] === 0xff9b) return isPublicAddress(embeddedV4()) // NAT64
  if ((w[0]! & 0xfe00) === 0xfc00) return false // unique local
  if ((w[0]! & 0xffc0) === 0xfe80) return false // link-local
  if ((w[0]! & 0xff00) === 0xff00) return false // multicast
  if (w[0] === 0x2001 && w[1] === 0xdb8) return false // documentation
  if (w[0] === 0x100 && w[1] === 0 && w[2] === 0 && w[3] === 0) return false // discard
  if (w[0] === 0x2002) return isPublicAddress(`${w[1]! >> 8}.${w[1]! & 255}.${w[2]! >> 8}.${w[2]! & 255}`) // 6to4
  return true
}

export interface CheckDeps {
  /** Every address a name resolves to (injected in tests). */
  resolve: (host: string) => Promise<{ address: string; family: number }[]>
  /** Whether an address may be contacted (isPublicAddress; tests may widen it). */
  allowed: (address: string) => boolean
  /** Ports a link may name (tests add their own). */
  ports: ReadonlySet<number>
}

export const publicInternet: CheckDeps = {
  resolve: (host) => dns.lookup(host, { all: true, verbatim: true }),
  allowed: isPublicAddress,
  ports: PORTS,
}

async function checkOne(raw: string, deps: CheckDeps, signal: AbortSignal): Promise<LinkStatus> {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return { url: raw, status: null, note: 'not a URL' }
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { url: raw, status: null, note: 'not checked: only http and https' }
  const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80))
  if (!deps.ports.has(port)) return { url: raw, status: null, note: 'not checked: only ports 80, 443, 8080 and 8443' }
  if (url.username || url.password) return { url: raw, status: null, note: 'not checked: the URL carries credentials' }
  const host = url.hostname.replace(/^\[|\]$/g, '')
  let addresses: { address: string; family: number }[]
  try {
    addresses = isIPv4(host) || isIPv6(host) ? [{ address: host, family: isIPv4(host) ? 4 : 6 }] : await deps.resolve(host)
  } catch {
    return { url: raw, status: null, note: 'the name does not resolve' }
  }
  if (addresses.length === 0 || !addresses.every((a) => deps.allowed(a.address))) return { url: raw, status: null, note: 'refused: not a public address' }
  const pinned = addresses[0]!
  return new Promise<LinkStatus>((resolve) => {
    const pinnedLookup = (_name: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) =>
      options?.all ? callback(null, [pinned]) : callback(null, pinned.address, pinned.family)
    const options: http.RequestOptions = {
      method: 'HEAD',
      host,
      port,
      path: `${url.pathname}${url.search}`,
      headers: { 'user-agent': 'Pigeonhole link check', accept: '*/*' },
      // The connection goes to the address checked above, whatever the name resolves to now.
      lookup: pinnedLookup as unknown as http.RequestOptions['lookup'],
      timeout: CHECK_TIMEOUT_MS,
      signal,
    }
    const onResponse = (response: http.IncomingMessage) => {
      const status = response.statusCode ?? 0
      const location = response.headers.location
      response.destroy()
      const note = location && status >= 300 && status < 400 ? `${status} → ${location.slice(0, 300)} (not followed)` : `${status} ${response.statusMessage ?? ''}`.trim()
      resolve({ url: raw, status, note })
    }
    const request = url.protocol === 'https:' ? https.request(options, onResponse) : http.request(options, onResponse)
    request.on('timeout', () => request.destroy(new Error('timed out')))
    request.on('error', (error) => resolve({ url: raw, status: null, note: error.message === 'timed out' || signal.aborted ? 'timed out' : 'no answer' }))
    request.end()
  })
}

/** Checks the first MAX_CHECKED links, CONCURRENCY at a time, within CHECK_TIMEOUT_MS each. */
export async function checkLinks(urls: string[], deps: CheckDeps = publicInternet): Promise<LinkStatus[]> {
  const todo = urls.slice(0, MAX_CHECKED)
  const results: LinkStatus[] = new Array(todo.length)
  let next = 0
  const worker = async () => {
    while (next < todo.length) {
      const i = next++
      const signal = AbortSignal.timeout(CHECK_TIMEOUT_MS + 500)
      results[i] = await checkOne(todo[i]!, deps, signal)
    }
  }
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, todo.length) }, worker))
  return results
}
