/**
 * "Is mail flowing?" from the outside, the way a test suite uses the service: create an inbox
 * over the API, send it one message over SMTP (through the receiving domain's public MX, or a
 * given host), wait for it through the API, delete the inbox. Each step is timed; the first
 * that fails is named, and the inbox is deleted even then. Nothing here reads the database:
 * it runs from any machine with a key, and is meant to be scheduled (cron, a CI job, an
 * uptime checker that runs commands).
 */
import { randomBytes } from 'node:crypto'
import { Resolver } from 'node:dns/promises'
import { hostname } from 'node:os'
import { SmtpSender } from './smtp-sender.ts'

export type CanaryStep = 'create inbox' | 'send' | 'wait' | 'delete inbox'

/** The exit status of a failed step: a scheduler can tell the steps apart without parsing text. */
export const STEP_EXIT: Record<CanaryStep, number> = { 'create inbox': 2, send: 3, wait: 4, 'delete inbox': 5 }

export interface CanaryOptions {
  /** The API's base URL (BASE_URL of the server). */
  url: string
  key: string
  /** host or host:port to send to; unset, the MX of the inbox's domain on port 25. */
  smtp?: string
  /** How long the message may take to arrive (default 60 s). */
  timeoutSeconds?: number
  /**
   * DNS servers (ip or ip:port) to ask for the MX instead of the system's, e.g. a public resolver for the world's view.
   */
  dns?: string[]
}

export interface StepResult {
  step: CanaryStep
  ok: boolean
  seconds: number
  detail: string
}

class StepFailed extends Error {
  constructor(
    readonly step: CanaryStep,
    message: string,
  ) {
    super(message)
  }
}

const REQUEST_TIMEOUT_MS = 15_000

async function api(
  options: CanaryOptions,
  step: CanaryStep,
  method: string,
  path: string,
  init: { body?: unknown; timeoutMs?: number } = {},
): Promise<Response> {
  let response: Response
  try {
    response = await fetch(`${options.url.replace(/\/$/, '')}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${options.key}`,
        ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
      signal: AbortSignal.timeout(init.timeoutMs ?? REQUEST_TIMEOUT_MS),
    })
  } catch (error) {
    throw new StepFailed(
      step,
      `${method} ${options.url}${path}: ${error instanceof Error ? error.message : String(error)}`,
    )
  }
  if (response.status >= 300 && response.status !== 204) {
    const text = await response.text()
    let code = ''
    try {
      code = ` ${JSON.parse(text).error.code}`
    } catch {}
    throw new StepFailed(step, `${method} ${path} answered ${response.status}${code}`)
  }
  return response
}

/**
 * Where mail for `domain` goes: the given host, else its MX
 * records by preference, else the domain itself (RFC 5321 §5.1).
 */
async function destinations(
  domain: string,
  smtp: string | undefined,
  dns: string[] | undefined,
): Promise<{ host: string; port: number; why: string }[]> {
  if (smtp) {
    const match = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(smtp)
    if (!match) throw new StepFailed('send', `--smtp ${smtp} is not host or host:port`)
    return [{ host: match[1]!.replace(/^\[|\]$/g, ''), port: Number(match[2] ?? 25), why: 'as given' }]
  }
  const resolver = new Resolver({ timeout: 5_000, tries: 2 })
  if (dns) resolver.setServers(dns)
  try {
    const records = await resolver.resolveMx(domain)
    if (records.length > 0)
      return records
        .sort((a, b) => a.priority - b.priority)
        .map((r) => ({ host: r.exchange, port: 25, why: `MX ${r.priority} of ${domain}` }))
  } catch (error) {
    const code = (error as { code?: string }).code
    if (code !== 'ENODATA' && code !== 'ENOTFOUND')
      throw new StepFailed('send', `looking up the MX of ${domain}: ${code ?? String(error)}`)
  }
  return [{ host: domain, port: 25, why: `${domain} itself (no MX record)` }]
}

async function send(options: CanaryOptions, address: string, subject: string): Promise<string> {
  const domain = address.slice(address.lastIndexOf('@') + 1)
  const failures: string[] = []
  for (const to of await destinations(domain, options.smtp, options.dns)) {
    let sender: SmtpSender | undefined
    try {
      sender = await SmtpSender.open(to.port, to.host, {
        helo: hostname() || 'localhost',
        timeoutMs: REQUEST_TIMEOUT_MS,
      })
    } catch (error) {
      failures.push(`${to.host}:${to.port} (${to.why}): ${error instanceof Error ? error.message : String(error)}`)
      continue // the next MX, as a sending server would
    }
    try {
      const raw = [
        `From: Pigeonhole canary <canary@${hostname() || 'localhost'}>`,
        `To: ${address}`,
        `Subject: ${subject}`,
        `Date: ${new Date().toUTCString()}`,
        '',
        'Is mail flowing?',
        '',
      ].join('\r\n')
      const reply = await sender.send(`canary@${hostname() || 'localhost'}`, address, Buffer.from(raw))
      return `via ${to.host}:${to.port} (${to.why}): ${reply}`
    } catch (error) {
      // A refusal after connecting is an answer, not an unreachable host: no other MX is tried.
      throw new StepFailed(
        'send',
        `${to.host}:${to.port} (${to.why}): ${error instanceof Error ? error.message : String(error)}`,
      )
    } finally {
      await sender.close()
    }
  }
  throw new StepFailed('send', `no SMTP server took the connection: ${failures.join('; ')}`)
}

async function wait(options: CanaryOptions, inboxId: string, subject: string): Promise<string> {
  const deadline = Date.now() + (options.timeoutSeconds ?? 60) * 1000
  for (;;) {
    const left = Math.ceil((deadline - Date.now()) / 1000)
    if (left <= 0) throw new StepFailed('wait', `the message did not arrive within ${options.timeoutSeconds ?? 60} s`)
    const query = new URLSearchParams({ wait_seconds: String(Math.min(left, 180)), subject, limit: '1' })
    const response = await api(options, 'wait', 'GET', `/v1/inboxes/${inboxId}/messages?${query}`, {
      timeoutMs: (Math.min(left, 180) + 15) * 1000,
    })
    if (response.status === 204) continue // the long poll ended empty; the loop checks the deadline
    const body = (await response.json()) as { data: { id: string; received_at: string }[] }
    if (body.data[0]) return `${body.data[0].id}, received ${body.data[0].received_at}`
  }
}

/** Runs the four steps; `report` hears each as it ends. Resolves with every step; throws nothing. */
export async function runCanary(
  options: CanaryOptions,
  report: (result: StepResult) => void = () => {},
): Promise<{ ok: boolean; failed: CanaryStep | null; steps: StepResult[] }> {
  const steps: StepResult[] = []
  let failed: CanaryStep | null = null
  const run = async <T>(
    step: CanaryStep,
    body: () => Promise<T>,
    describe: (value: T) => string,
  ): Promise<T | undefined> => {
    const started = performance.now()
    try {
      const value = await body()
      const result = { step, ok: true, seconds: (performance.now() - started) / 1000, detail: describe(value) }
      steps.push(result)
      report(result)
      return value
    } catch (error) {
      const result = {
        step,
        ok: false,
        seconds: (performance.now() - started) / 1000,
        detail: error instanceof Error ? error.message : String(error),
      }
      steps.push(result)
      report(result)
      failed ??= step
      return undefined
    }
  }
  const token = randomBytes(8).toString('hex')
  const subject = `pigeonhole canary ${token}`
  const inbox = await run(
    'create inbox',
    async () =>
      (await (
        await api(options, 'create inbox', 'POST', '/v1/inboxes', { body: { prefix: `canary-${token.slice(0, 6)}` } })
      ).json()) as { data: { id: string; address: string } },
    (made) => made.data.address,
  )
  if (!inbox) return { ok: false, failed, steps }
  const sent = await run(
    'send',
    () => send(options, inbox.data.address, subject),
    (line) => line,
  )
  if (sent !== undefined)
    await run(
      'wait',
      () => wait(options, inbox.data.id, subject),
      (line) => line,
    )
  // Deleted whatever happened before: a canary run every minute must not fill the inbox quota.
  await run(
    'delete inbox',
    () => api(options, 'delete inbox', 'DELETE', `/v1/inboxes/${inbox.data.id}`),
    () => inbox.data.id,
  )
  return { ok: failed === null, failed, steps }
}
