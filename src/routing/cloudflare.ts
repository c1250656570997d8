/**
 * EMAIL_ROUTING=cloudflare: one Cloudflare Email Routing rule per inbox (API v4).
 *
 * Failure classes, as the spec's email_routing_unavailable needs them:
 * - Cloudflare answered, but not with a successful envelope (4xx, 5xx, 429,
 *   `success: false`, unreadable body): RoutingError 'rejected', HTTP 502.
 * - No answer (refused, reset, timed out): RoutingError 'unavailable', HTTP 503.
 * A transient failure (no answer, 5xx, 429) is retried once after a short pause.
 * The API token goes into the Authorization header and nowhere else: not into errors,
 * not into logs.
 */
import type { Config } from '../config.ts'
import type { Logger } from '../log.ts'
import { RoutingError, type RoutingProvider } from '../core/common/routing.ts'

const RETRY_PAUSE_MS = 250

type CloudflareSettings = Pick<
  Config,
  | 'cloudflareApiBase'
  | 'cloudflareApiToken'
  | 'cloudflareZoneId'
  | 'cloudflareRuleAction'
  | 'cloudflareRuleDestination'
  | 'cloudflareTimeoutMs'
>

/** The v4 response envelope; every field is checked before it is trusted. */
interface Envelope {
  success?: unknown
  errors?: unknown
  result?: unknown
}

/** One attempt's outcome: an HTTP answer (any status), or no answer at all. */
type Attempt = { answered: true; status: number; envelope: Envelope | null } | { answered: false; reason: string }

export function createCloudflareProvider(settings: CloudflareSettings, logger: Logger): RoutingProvider {
  const zone = encodeURIComponent(settings.cloudflareZoneId)
  const rules = `${settings.cloudflareApiBase}/zones/${zone}/email/routing/rules`

  async function attempt(method: 'POST' | 'DELETE', url: string, body?: unknown): Promise<Attempt> {
    // One deadline covers connecting, the headers and the body.
    const controller = new AbortController()
    const timer = setTimeout(() => controller.abort(), settings.cloudflareTimeoutMs)
    try {
      const response = await fetch(url, {
        method,
        signal: controller.signal,
        headers: {
          authorization: `Bearer ${settings.cloudflareApiToken}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      })
      const text = await response.text()
      return { answered: true, status: response.status, envelope: parseEnvelope(text) }
    } catch (error) {
      const reason = controller.signal.aborted
        ? `no answer within ${settings.cloudflareTimeoutMs} ms`
        : error instanceof Error
          ? error.message
          : String(error)
      return { answered: false, reason }
    } finally {
      clearTimeout(timer)
    }
  }

  /**
   * At most two attempts; the second only after a transient failure. Cloudflare has no
   * idempotency key, so a create that timed out yet was carried out can leave one extra
   * rule for the address. That rule is harmless (it routes to the relay, whose mail the
   * RCPT check refuses once no inbox has the address) and is logged by the retry line.
   */
  async function call(action: string, method: 'POST' | 'DELETE', url: string, body?: unknown): Promise<Attempt> {
    let outcome = await attempt(method, url, body)
    if (isTransient(outcome)) {
      logger.warn('routing_call_retried', { provider: 'cloudflare', action, ...describe(outcome) })
      await Bun.sleep(RETRY_PAUSE_MS)
      outcome = await attempt(method, url, body)
    }
    return outcome
  }

  function fail(action: string, outcome: Attempt, address: string): never {
    logger.error('routing_call_failed', { provider: 'cloudflare', action, address, ...describe(outcome) })
    if (!outcome.answered) throw new RoutingError('unavailable', `Cloudflare could not be reached: ${outcome.reason}`)
    throw new RoutingError('rejected', `Cloudflare answered ${outcome.status}${cloudflareErrors(outcome.envelope)}`)
  }

  return {
    name: 'cloudflare',

    async createRule(address) {
      const outcome = await call('create_rule', 'POST', rules, {
        name: `pigeonhole inbox ${address}`,
        enabled: true,
        matchers: [{ type: 'literal', field: 'to', value: address }],
        actions: [{ type: settings.cloudflareRuleAction, value: [settings.cloudflareRuleDestination] }],
      })
      if (!outcome.answered || !succeeded(outcome)) fail('create_rule', outcome, address)
      const ruleId = ruleIdOf(outcome.envelope?.result)
      if (ruleId === null) fail('create_rule', outcome, address)
      logger.info('routing_rule_created', { provider: 'cloudflare', address, routing_rule_id: ruleId })
      return ruleId
    },

    async deleteRule(ruleId, address) {
      // An inbox made while EMAIL_ROUTING was `none` has no rule to remove.
      if (ruleId === null) return
      const outcome = await call('delete_rule', 'DELETE', `${rules}/${encodeURIComponent(ruleId)}`)
      if (outcome.answered && outcome.status === 404) {
        logger.warn('routing_rule_already_gone', { provider: 'cloudflare', address, routing_rule_id: ruleId })
        return
      }
      if (!outcome.answered || !succeeded(outcome)) fail('delete_rule', outcome, address)
      logger.info('routing_rule_deleted', { provider: 'cloudflare', address, routing_rule_id: ruleId })
    },
  }
}

function parseEnvelope(text: string): Envelope | null {
  try {
    const value: unknown = JSON.parse(text)
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Envelope) : null
  } catch {
    return null
  }
}

function isTransient(outcome: Attempt): boolean {
  return !outcome.answered || outcome.status >= 500 || outcome.status === 429
}

function succeeded(outcome: Attempt & { answered: true }): boolean {
  return outcome.status >= 200 && outcome.status < 300 && outcome.envelope?.success === true
}

/** Cloudflare names the rule `id`; older answers carried only the now deprecated `tag`. */
function ruleIdOf(result: unknown): string | null {
  if (typeof result !== 'object' || result === null) return null
  const { id, tag } = result as { id?: unknown; tag?: unknown }
  const value = typeof id === 'string' && id !== '' ? id : tag
  return typeof value === 'string' && value !== '' ? value : null
}

/** `: [code] message; ...` from the envelope's errors, for logs and error messages. */
function cloudflareErrors(envelope: Envelope | null): string {
  if (envelope === null) return ' with a body that is not a JSON envelope'
  if (!Array.isArray(envelope.errors) || envelope.errors.length === 0)
    return envelope.success === true ? ' without a rule id' : ''
  const parts = envelope.errors.map((entry) => {
    const { code, message } = (entry ?? {}) as { code?: unknown; message?: unknown }
    return `[${String(code ?? '?')}] ${String(message ?? '').slice(0, 200)}`
  })
  return `: ${parts.join('; ')}`
}

function describe(outcome: Attempt): Record<string, unknown> {
  return outcome.answered
    ? { status: outcome.status, cloudflare_errors: cloudflareErrors(outcome.envelope) }
    : { reason: outcome.reason }
}
