/**
 * The spam check: a message's raw source sent to a spam filter the operator runs, and its
 * verdict (score, threshold, action, the rules that fired). Today that filter is rspamd,
 * through its HTTP interface (`POST /checkv2` on a normal worker, JSON back); the setting
 * names the filter so another (SpamAssassin's spamd) can be added beside it.
 *
 * A filter that is down, slow or answers nonsense is an answer too: `unavailable` with
 * the reason, which the page shows as one line. Nothing here throws for it.
 */

/** The filter the setting names, or null when the check is off. */
export interface SpamFilter {
  kind: 'rspamd'
  url: string
}

export function spamFilterFrom(setting: string): SpamFilter | null {
  if (setting === 'off' || setting === '') return null
  if (setting.startsWith('rspamd:')) return { kind: 'rspamd', url: setting.slice('rspamd:'.length).replace(/\/$/, '') }
  return null
}

export interface SpamRule {
  name: string
  score: number
  description: string
  options: string[]
}

export type SpamVerdict = { available: true; score: number; required: number; action: string; spam: boolean; rules: SpamRule[]; message?: string } | { available: false; reason: string }

/** rspamd's score and action need a few tenths of a second; its DNS lookups can take longer. */
export const SPAM_CHECK_TIMEOUT_MS = 15_000

/** rspamd actions that mean the message would not be delivered as clean mail. */
const SPAM_ACTIONS = new Set(['reject', 'soft reject', 'add header', 'rewrite subject'])

export async function checkSpam(filter: SpamFilter, raw: Uint8Array, envelope: { from: string | null; to: string }): Promise<SpamVerdict> {
  const headers: Record<string, string> = { 'content-type': 'message/rfc822', rcpt: envelope.to }
  if (envelope.from) headers.from = envelope.from
  let response: Response
  try {
    response = await fetch(`${filter.url}/checkv2`, {
      method: 'POST',
      body: new Blob([raw as Uint8Array<ArrayBuffer>]),
      headers,
      signal: AbortSignal.timeout(SPAM_CHECK_TIMEOUT_MS),
      redirect: 'manual',
    })
  } catch (error) {
    const name = error instanceof Error ? error.name : ''
    if (name === 'TimeoutError') return { available: false, reason: `no answer within ${SPAM_CHECK_TIMEOUT_MS / 1000} s` }
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
  if (typeof answer.score !== 'number' || typeof answer.required_score !== 'number' || typeof answer.action !== 'string') {
    return { available: false, reason: typeof answer.error === 'string' ? `it refused the message: ${answer.error}` : 'its answer had no score' }
  }
  const symbols = typeof answer.symbols === 'object' && answer.symbols !== null ? Object.values(answer.symbols as Record<string, unknown>) : []
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
  return { available: true, score: answer.score, required: answer.required_score, action: answer.action, spam, rules, message }
}
