/**
 * "Check links" on a message page: a HEAD request from this server to each link and image
 * (GET when a server refuses HEAD), so the person debugging sees which confirm link answers
 * 200 and which 404s. A server that fetches URLs chosen by mail senders is a
 * request-forgery risk, so:
 *
 * - it is off on a public deployment unless turned on (CONSOLE_LINK_CHECK);
 * - only http(s) on ports 80, 443, 8080 and 8443;
 * - every address the name resolves to must be public (no loopback, private, link-local,
 *   CGNAT, documentation, multicast or reserved range, also inside IPv4-mapped and NAT64
 *   IPv6); the connection then goes to the address that was checked (the resolver is
 *   pinned through `lookup`), so a second DNS answer cannot point it elsewhere (rebinding);
 * - beyond that, only what the operator names in CONSOLE_LINK_CHECK_ALLOW (a tester's
 *   links mostly point at localhost): host names, address ranges, and the ports each may use
 *   (allow-list.ts); nothing by default;
 * - redirects are followed at most MAX_HOPS times, each hop checked against the same rules
 *   before it is requested and shown on the result;
 * - at most MAX_CHECKED URLs, CHECK_TIMEOUT_MS each, CONCURRENCY at a time, the body never read.
 */
import { promises as dns } from 'node:dns'
import http from 'node:http'
import https from 'node:https'
import { isIPv4, isIPv6 } from 'node:net'
import type { AllowList } from './allow-list.ts'

/** Far above the links a message page lists (100) with its images: every one is checked. */
export const MAX_CHECKED = 300
const CHECK_TIMEOUT_MS = 3000
/** Redirects followed from one URL. */
export const MAX_HOPS = 5
const CONCURRENCY = 6
const PORTS = new Set([80, 443, 8080, 8443])

export interface LinkStatus {
  url: string
  /** The final HTTP status, or null when no answer came. */
  status: number | null
  /** What a person reads: "200 OK", "301 → https://...", "refused: private address", "timed out". */
  note: string
  /** Each redirect on the way, in order (the last answer is `status` and `note`). */
  hops?: { url: string; status: number; location: string }[]
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
  const zerosUpTo = (count: number) => w.slice(0, count).every((x) => x === 0)
  if (zerosUpTo(6)) return w[6] === 0 && w[7]! <= 1 ? false : isPublicAddress(embeddedV4()) // ::, ::1, ::a.b.c.d
  if (zerosUpTo(5) && w[5] === 0xffff) return isPublicAddress(embeddedV4()) // ::ffff:a.b.c.d
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
  /** What the operator allows beyond the public internet (CONSOLE_LINK_CHECK_ALLOW); none by default. */
  allow?: AllowList
}

export const publicInternet: CheckDeps = {
  resolve: (host) => dns.lookup(host, { all: true, verbatim: true }),
  allowed: isPublicAddress,
  ports: PORTS,
}

/** The public internet plus what the operator allowed. */
export const withAllowList = (allow: AllowList): CheckDeps => ({ ...publicInternet, allow })

/** Where one URL may be requested: the address to connect to, or why not (nothing is sent then). */
async function admit(
  url: URL,
  deps: CheckDeps,
): Promise<{ pinned: { address: string; family: number }; port: number } | { note: string }> {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { note: 'not checked: only http and https' }
  const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80))
  if (url.username || url.password) return { note: 'not checked: the URL carries credentials' }
  const host = url.hostname.replace(/^\[|\]$/g, '')
  const byName = deps.allow?.allowsHost(host, port) ?? false
  // A port outside the usual four is refused before any lookup, unless an allow entry names it.
  if (!deps.ports.has(port) && !byName && !deps.allow?.namesPort(port))
    return {
      note:
        'not checked: only ports 80, 443, 8080 and 8443' +
        (deps.allow?.size ? ' and those CONSOLE_LINK_CHECK_ALLOW names' : ''),
    }
  let addresses: { address: string; family: number }[]
  try {
    addresses =
      isIPv4(host) || isIPv6(host) ? [{ address: host, family: isIPv4(host) ? 4 : 6 }] : await deps.resolve(host)
  } catch {
    return { note: 'the name does not resolve' }
  }
  // Every address must pass: public on a usual port, or allowed by the operator (by name or range) on this port.
  const passes = (address: string) =>
    byName || (deps.ports.has(port) && deps.allowed(address)) || (deps.allow?.allowsAddress(address, port) ?? false)
  if (addresses.length === 0 || !addresses.every((a) => passes(a.address)))
    return {
      note: deps.allow?.size
        ? 'refused: not a public address, nor allowed by CONSOLE_LINK_CHECK_ALLOW'
        : 'refused: not a public address',
    }
  return { pinned: addresses[0]!, port }
}

/** One request to an admitted URL: HEAD, then GET when the server refuses HEAD; the body is never read. */
function request(
  url: URL,
  pinned: { address: string; family: number },
  port: number,
  method: 'HEAD' | 'GET',
  signal: AbortSignal,
): Promise<{ status: number; message: string; location?: string } | { note: string }> {
  return new Promise((resolve) => {
    const pinnedLookup = (_name: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) =>
      options?.all ? callback(null, [pinned]) : callback(null, pinned.address, pinned.family)
    const options: http.RequestOptions = {
      method,
      host: url.hostname.replace(/^\[|\]$/g, ''),
      port,
      path: `${url.pathname}${url.search}`,
      headers: { 'user-agent': 'Pigeonhole link check', accept: '*/*' },
      // The connection goes to the address checked, whatever the name resolves to now.
      lookup: pinnedLookup as unknown as http.RequestOptions['lookup'],
      timeout: CHECK_TIMEOUT_MS,
      signal,
    }
    const onResponse = (response: http.IncomingMessage) => {
      const location = response.headers.location
      response.destroy()
      resolve({ status: response.statusCode ?? 0, message: response.statusMessage ?? '', location })
    }
    const sent = url.protocol === 'https:' ? https.request(options, onResponse) : http.request(options, onResponse)
    sent.on('timeout', () => sent.destroy(new Error('timed out')))
    sent.on('error', (error) =>
      resolve({ note: error.message === 'timed out' || signal.aborted ? 'timed out' : 'no answer' }),
    )
    sent.end()
  })
}

async function checkOne(raw: string, deps: CheckDeps, signal: AbortSignal): Promise<LinkStatus> {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return { url: raw, status: null, note: 'not a URL' }
  }
  const hops: { url: string; status: number; location: string }[] = []
  for (;;) {
    const admitted = await admit(url, deps)
    const withHops = (status: LinkStatus) => (hops.length > 0 ? { ...status, hops } : status)
    if ('note' in admitted)
      return withHops({
        url: raw,
        status: null,
        note:
          hops.length > 0
            ? `${admitted.note} (after ${hops.length} redirect${hops.length === 1 ? '' : 's'})`
            : admitted.note,
      })
    let answer = await request(url, admitted.pinned, admitted.port, 'HEAD', signal)
    if (!('note' in answer) && (answer.status === 405 || answer.status === 501))
      answer = await request(url, admitted.pinned, admitted.port, 'GET', signal)
    if ('note' in answer) return withHops({ url: raw, status: null, note: answer.note })
    const { status, location } = answer
    if (!(location && status >= 300 && status < 400))
      return withHops({ url: raw, status, note: `${status} ${answer.message}`.trim() })
    let next: URL
    try {
      next = new URL(location, url)
    } catch {
      return withHops({ url: raw, status, note: `${status} → ${location.slice(0, 300)} (not a URL)` })
    }
    hops.push({ url: url.href, status, location: next.href.slice(0, 2000) })
    if (hops.length > MAX_HOPS) return { url: raw, status, note: `more than ${MAX_HOPS} redirects`, hops }
    url = next
  }
}

/**
 * The whole check's time: the person waits for its page, so however many links time out, it
 * answers by then; what it did not reach says so.
 */
const CHECK_BUDGET_MS = 20_000

/**
 * Checks up to MAX_CHECKED URLs, CONCURRENCY at a time, each request within CHECK_TIMEOUT_MS, all within `budgetMs`.
 */
export async function checkLinks(
  urls: string[],
  deps: CheckDeps = publicInternet,
  budgetMs = CHECK_BUDGET_MS,
): Promise<LinkStatus[]> {
  const todo = urls.slice(0, MAX_CHECKED)
  const results: LinkStatus[] = new Array(todo.length)
  const budget = AbortSignal.timeout(budgetMs)
  let next = 0
  const worker = async () => {
    while (next < todo.length) {
      const i = next++
      if (budget.aborted) {
        results[i] = { url: todo[i]!, status: null, note: `not checked: the check's ${budgetMs / 1000} s ran out` }
        continue
      }
      // Each hop has its own request timeout; the whole chain of one URL is bounded too, and the check's budget.
      const signal = AbortSignal.any([AbortSignal.timeout((CHECK_TIMEOUT_MS + 500) * (MAX_HOPS + 1)), budget])
      results[i] = await checkOne(todo[i]!, deps, signal)
    }
  }
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, todo.length) }, worker))
  return results
}
