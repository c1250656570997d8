/**
 * The spam check: a message's raw source sent to a spam filter the operator runs, and its
 * verdict (score, threshold, action, the rules that fired). The setting names the filter:
 * rspamd through its HTTP interface (`POST /checkv2` on a normal worker, JSON back), or
 * SpamAssassin's spamd through the spamc protocol (`REPORT`, over TCP).
 *
 * A filter that is down, slow or answers nonsense is an answer too: `unavailable` with
 * the reason, which the page shows as one line. Nothing here throws for it.
 */

import { connect } from 'node:net'

/** The filter the setting names, or null when the check is off. */
export type SpamFilter = { kind: 'rspamd'; url: string } | { kind: 'spamd'; host: string; port: number }

export function spamFilterFrom(setting: string): SpamFilter | null {
  if (setting.startsWith('rspamd:')) return { kind: 'rspamd', url: setting.slice('rspamd:'.length).replace(/\/$/, '') }
  if (setting.startsWith('spamd:')) {
    const address = setting.slice('spamd:'.length)
    const colon = address.lastIndexOf(':')
    return {
      kind: 'spamd',
      host: address.slice(0, colon).replace(/^\[|\]$/g, ''),
      port: Number(address.slice(colon + 1)),
    }
  }
  return null
}

/** How the page names the filter. */
export const spamFilterName = (filter: SpamFilter): string =>
  filter.kind === 'rspamd' ? `rspamd at ${filter.url}` : `spamd at ${filter.host}:${filter.port}`

interface SpamRule {
  name: string
  score: number
  description: string
  options: string[]
}

export type SpamVerdict =
  | {
      available: true
      score: number
      required: number
      action: string
      spam: boolean
      rules: SpamRule[]
      message?: string
    }
  | { available: false; reason: string }

/** rspamd's score and action need a few tenths of a second; its DNS lookups can take longer. */
const SPAM_CHECK_TIMEOUT_MS = 15_000

/** rspamd actions that mean the message would not be delivered as clean mail. */
const SPAM_ACTIONS = new Set(['reject', 'soft reject', 'add header', 'rewrite subject'])

export function checkSpam(
  filter: SpamFilter,
  raw: Uint8Array,
  envelope: { from: string | null; to: string },
): Promise<SpamVerdict> {
  return filter.kind === 'rspamd'
    ? checkWithRspamd(filter.url, raw, envelope)
    : checkWithSpamd(filter.host, filter.port, raw)
}

async function checkWithRspamd(
  url: string,
  raw: Uint8Array,
  envelope: { from: string | null; to: string },
): Promise<SpamVerdict> {
  const headers: Record<string, string> = { 'content-type': 'message/rfc822', rcpt: envelope.to }
  if (envelope.from) headers.from = envelope.from
  let response: Response
  try {
    response = await fetch(`${url}/checkv2`, {
      method: 'POST',
      body: new Blob([raw as Uint8Array<ArrayBuffer>]),
      headers,
      signal: AbortSignal.timeout(SPAM_CHECK_TIMEOUT_MS),
      redirect: 'manual',
    })
  } catch (error) {
    const name = error instanceof Error ? error.name : ''
    if (name === 'TimeoutError')
      return { available: false, reason: `no answer within ${SPAM_CHECK_TIMEOUT_MS / 1000} s` }
    return { available: false, reason: `could not connect (${error instanceof Error ? error.message : String(error)})` }
  }
  if (!response.ok) {
    await response.body?.cancel()
    return { available: false, reason: `it answered HTTP ${response.status}` }
  }
  let body: unknown
  try {
    body = await response.json()
  } catch {
    return { available: false, reason: 'its answer was not JSON' }
  }
  return readRspamd(body)
}

/** rspamd's /checkv2 answer, checked field by field (it is another program's output). */
export function readRspamd(body: unknown): SpamVerdict {
  if (typeof body !== 'object' || body === null) return { available: false, reason: 'its answer was not an object' }
  const answer = body as Record<string, unknown>
  if (
    typeof answer.score !== 'number' ||
    typeof answer.required_score !== 'number' ||
    typeof answer.action !== 'string'
  ) {
    return {
      available: false,
      reason: typeof answer.error === 'string' ? `it refused the message: ${answer.error}` : 'its answer had no score',
    }
  }
  const symbols =
    typeof answer.symbols === 'object' && answer.symbols !== null
      ? Object.values(answer.symbols as Record<string, unknown>)
      : []
  const rules: SpamRule[] = []
  for (const symbol of symbols) {
    if (typeof symbol !== 'object' || symbol === null) continue
    const s = symbol as Record<string, unknown>
    if (typeof s.name !== 'string') continue
    rules.push({
      name: s.name,
      score: typeof s.score === 'number' ? s.score : 0,
      description: typeof s.description === 'string' ? s.description : '',
      options: Array.isArray(s.options) ? s.options.filter((o): o is string => typeof o === 'string').slice(0, 10) : [],
    })
  }
  // The rules that moved the score first, then the rest by name.
  rules.sort((a, b) => Math.abs(b.score) - Math.abs(a.score) || a.name.localeCompare(b.name))
  const messages = answer.messages as Record<string, unknown> | undefined
  const message = typeof messages?.smtp_message === 'string' ? messages.smtp_message : undefined
  const spam = answer.score >= answer.required_score || SPAM_ACTIONS.has(answer.action)
  return {
    available: true,
    score: answer.score,
    required: answer.required_score,
    action: answer.action,
    spam,
    rules,
    message,
  }
}

/** An answer larger than this is not a spamd report. */
const MAX_SPAMD_ANSWER = 256 * 1024

/** spamd: one `REPORT` over the spamc protocol, the connection closed by spamd after its answer. */
function checkWithSpamd(host: string, port: number, raw: Uint8Array): Promise<SpamVerdict> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = []
    let size = 0
    let settled = false
    const finish = (verdict: SpamVerdict) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      socket.destroy()
      resolve(verdict)
    }
    const socket = connect({ host, port })
    const timer = setTimeout(
      () => finish({ available: false, reason: `no answer within ${SPAM_CHECK_TIMEOUT_MS / 1000} s` }),
      SPAM_CHECK_TIMEOUT_MS,
    )
    socket.on('connect', () => {
      socket.write(`REPORT SPAMC/1.5\r\nContent-length: ${raw.byteLength}\r\n\r\n`)
      socket.write(raw)
    })
    socket.on('data', (chunk: Buffer) => {
      size += chunk.length
      if (size > MAX_SPAMD_ANSWER) return finish({ available: false, reason: 'its answer was too large' })
      chunks.push(chunk)
    })
    socket.on('error', (error) => finish({ available: false, reason: `could not connect (${error.message})` }))
    socket.on('close', () => finish(readSpamd(Buffer.concat(chunks).toString('utf8'))))
  })
}

/**
 * spamd's `REPORT` answer: a status line, a `Spam:` header with
 * score and threshold, then the report with its table of rules.
 */
export function readSpamd(answer: string): SpamVerdict {
  const headerEnd = answer.indexOf('\r\n\r\n')
  const head = headerEnd === -1 ? answer : answer.slice(0, headerEnd)
  const status = /^SPAMD\/[\d.]+ (\d+) ([^\r\n]+)/.exec(head)
  if (!status) return { available: false, reason: 'its answer was not a spamd reply' }
  if (status[1] !== '0') return { available: false, reason: `it refused the message: ${status[2]}` }
  const spamLine = /^Spam: (True|False|Yes|No) ; (-?[\d.]+) \/ (-?[\d.]+)/im.exec(head)
  if (!spamLine) return { available: false, reason: 'its answer had no score' }
  const [score, required] = [Number(spamLine[2]), Number(spamLine[3])]
  const spam = spamLine[1] === 'True' || spamLine[1] === 'Yes'
  const rules: SpamRule[] = []
  const body = headerEnd === -1 ? '' : answer.slice(headerEnd + 4)
  const table = body.indexOf('\n---- ')
  if (table !== -1) {
    for (const line of body.slice(body.indexOf('\n', table + 1) + 1).split(/\r?\n/)) {
      const rule = /^\s*(-?[\d.]+)\s+([A-Z0-9_]+)\s+(.*)$/.exec(line)
      if (rule) rules.push({ name: rule[2]!, score: Number(rule[1]), description: rule[3]!.trim(), options: [] })
      // A description's continuation lines are indented under it.
      else if (/^\s{20,}\S/.test(line) && rules.length > 0) rules[rules.length - 1]!.description += ` ${line.trim()}`
    }
  }
  rules.sort((a, b) => Math.abs(b.score) - Math.abs(a.score) || a.name.localeCompare(b.name))
  return { available: true, score, required, action: spam ? 'mark as spam' : 'no action', spam, rules }
}
