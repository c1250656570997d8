/**
 * A small Pigeonhole client for tests: copy this file into your suite. No dependencies
 * (fetch only), so it works under Bun, Node 18+, Playwright and Vitest alike.
 *
 *   const ph = Pigeonhole.fromEnv() // PIGEONHOLE_URL, PIGEONHOLE_KEY
 *   const inbox = await ph.createInbox({ prefix: uniquePrefix('signup') })
 *   // ... the application under test sends mail to inbox.address ...
 *   const message = await ph.waitForMessage(inbox, { subject: 'Welcome', timeout: 30_000 })
 *   const link = extractLink(message, /confirm/)
 *   await ph.deleteInbox(inbox)
 *
 * Every example reads the same variables: PIGEONHOLE_URL (default http://localhost:3000),
 * PIGEONHOLE_KEY (required), PIGEONHOLE_SMTP (host:port mail is sent to, default
 * 127.0.0.1:2525) and APP_URL (the application under test, default http://127.0.0.1:4000).
 *
 * A server that restarts while a test waits (a deploy, say) closes the connection: the
 * helpers retry refused and reset connections until their own deadline. A wait that ends
 * without mail says when a limit is the likely cause, and a rate-limited teardown waits out
 * `Retry-After` instead of leaving the inbox behind.
 */

export interface Inbox {
  id: string
  address: string
  local_part: string
  status: 'active'
  created_at: string
}

export interface Message {
  id: string
  inbox_id: string
  from: { name: string; address: string }
  to: string
  subject: string
  preview: string
  size_bytes: number
  received_at: string
  expires_at: string
  internet_message_id: string | null
  text: string | null
  html: string | null
  headers: Array<[string, string]>
  attachments: Array<{
    id: string
    filename: string
    content_type: string
    size_bytes: number
    disposition: 'attachment' | 'inline'
    content_id: string | null
    download_url: string
  }>
}

export interface Usage {
  plan: 'free'
  period: { starts_at: string; ends_at: string }
  inboxes: { active: number; limit: number; remaining: number }
  emails: { received: number; limit: number; remaining: number }
}

export interface WaitOptions {
  /** Case-insensitive part of the subject. */
  subject?: string
  /** Exact sender address. */
  sender?: string
  /** Only mail received at or after this instant (inclusive): pass the previous message's `received_at` plus 1 ms to wait for the next one. */
  receivedAfter?: string | Date
  /** How long to wait, in milliseconds (at most 180,000). Keep it below your test runner's own timeout. */
  timeout?: number
}

/** Where mail for Pigeonhole goes: PIGEONHOLE_SMTP as `host:port`, default 127.0.0.1:2525. */
export function smtpFromEnv(env: Record<string, string | undefined> = process.env): { host: string; port: number } {
  const value = env.PIGEONHOLE_SMTP || '127.0.0.1:2525'
  const match = /^(.+):([0-9]{1,5})$/.exec(value)
  if (!match) throw new Error(`PIGEONHOLE_SMTP is "${value}": expected host:port, for example 127.0.0.1:2525`)
  return { host: match[1]!.replace(/^\[(.*)\]$/, '$1'), port: Number(match[2]) }
}

/**
 * A prefix for one test's inbox: `label` plus 8 random hex characters. A prefix is the
 * whole local part of the address and unique across the server, so a fixed one answers
 * `409 address_unavailable` to the second test (or a parallel worker) that asks for it.
 */
export function uniquePrefix(label = 'test'): string {
  const random = Array.from(crypto.getRandomValues(new Uint8Array(4)), (b) => b.toString(16).padStart(2, '0')).join('')
  return `${label.toLowerCase().slice(0, 31)}-${random}`
}

/** An API error with its stable code (`inbox_quota_exceeded`, `invalid_api_key`, ...). */
export class PigeonholeError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** Seconds the server asked to wait (`Retry-After`), when it said. */
    readonly retryAfterSeconds?: number,
  ) {
    super(message)
    this.name = 'PigeonholeError'
  }
}

/** How long a call other than a wait keeps retrying a refused or reset connection. */
const RECONNECT_WINDOW_MS = 15_000
/** How long a teardown waits out `429 rate_limit_exceeded` in all (the limit is per UTC minute). */
const TEARDOWN_RATE_LIMIT_WAIT_MS = 65_000
/** The free plan's inbound burst per inbox (per five minutes); a local organisation's is far higher. */
const FREE_INBOX_BURST = 10

export class Pigeonhole {
  constructor(private readonly options: { url: string; key: string }) {
    if (!options.key)
      throw new Error(
        "PIGEONHOLE_KEY is empty: set it to an API key (bun src/cli.ts keys create <org-id>, or the console's Keys page)",
      )
  }

  /** A client for PIGEONHOLE_URL (default http://localhost:3000) with PIGEONHOLE_KEY. */
  static fromEnv(env: Record<string, string | undefined> = process.env): Pigeonhole {
    return new Pigeonhole({ url: env.PIGEONHOLE_URL || 'http://localhost:3000', key: env.PIGEONHOLE_KEY ?? '' })
  }

  /** The organisation's limits and what it used this UTC month. */
  async getUsage(): Promise<Usage> {
    return (await this.call<Usage>('GET', '/v1/usage'))!
  }

  /**
   * A new inbox. `prefix` is the whole local part and unique across the server: pass
   * `uniquePrefix('signup')`, not a fixed word, or the second test gets 409
   * `address_unavailable`. Sent with an Idempotency-Key, so a retry after a dropped
   * connection never makes two.
   */
  async createInbox(body: { prefix?: string } = {}): Promise<Inbox> {
    const idempotencyKey = `create-${crypto.randomUUID()}`
    return (await this.call<{ data: Inbox }>('POST', '/v1/inboxes', body, { idempotencyKey }))!.data
  }

  /**
   * Deletes the inbox; over the request rate limit it waits `Retry-After` and tries again (up
   * to 65 s), so teardown leaves nothing behind. A delete sent again after a lost connection
   * may find the inbox already gone (the first one was done, its answer lost): that 404
   * counts as deleted.
   */
  async deleteInbox(inbox: Inbox | string): Promise<void> {
    const path = `/v1/inboxes/${typeof inbox === 'string' ? inbox : inbox.id}`
    const giveUpAt = Date.now() + TEARDOWN_RATE_LIMIT_WAIT_MS
    let sentAgain = false
    for (;;) {
      try {
        await this.call('DELETE', path, undefined, { onSendAgain: () => (sentAgain = true) })
        return
      } catch (error) {
        if (sentAgain && error instanceof PigeonholeError && error.code === 'inbox_not_found') return
        if (!(error instanceof PigeonholeError) || error.code !== 'rate_limit_exceeded' || Date.now() >= giveUpAt)
          throw error
        await sleep(Math.min(Math.max(error.retryAfterSeconds ?? 1, 1) * 1000, Math.max(giveUpAt - Date.now(), 0)))
      }
    }
  }

  /** Waits for the newest matching message; throws a readable error when none arrives in time. */
  async waitForMessage(inbox: Inbox, options: WaitOptions = {}): Promise<Message> {
    const timeout = options.timeout ?? 30_000
    const deadline = Date.now() + timeout
    const query = new URLSearchParams({ limit: '1', include: 'content' })
    if (options.subject) query.set('subject', options.subject)
    if (options.sender) query.set('sender', options.sender)
    if (options.receivedAfter) query.set('received_after', new Date(options.receivedAfter).toISOString())
    // A connection closed under the wait (the server restarting) is waited again with the
    // time left: the path is made afresh for each request, the one after a cut included.
    const path = () => {
      query.set('wait_seconds', String(Math.min(180, Math.max(0, Math.ceil((deadline - Date.now() - 100) / 1000)))))
      return `/v1/inboxes/${inbox.id}/messages?${query}`
    }
    for (;;) {
      const page = await this.call<{ data: Message[] }>('GET', path, undefined, { reconnectUntil: deadline })
      if (page) return page.data[0]!
      if (Date.now() >= deadline - 1000) break
    }
    const what =
      [options.subject && `subject containing "${options.subject}"`, options.sender && `from ${options.sender}`]
        .filter(Boolean)
        .join(' and ') || 'any message'
    const hint = await this.refusalHint(inbox)
    throw new Error(
      `No mail with ${what} arrived at ${inbox.address} within ${Math.round(timeout / 1000)} s. ${hint ?? 'Did the application send it to this address, over SMTP to this Pigeonhole?'}`,
    )
  }

  /** When a wait found nothing: a limit that likely refused the mail, from getUsage and the inbox's recent mail, or null. */
  private async refusalHint(inbox: Inbox): Promise<string | null> {
    const viewer = `${this.options.url}/console/ lists the deliveries refused for this address on the inbox's page`
    try {
      const usage = await this.getUsage()
      if (usage.emails.remaining <= 0) {
        return `The organisation's monthly email quota is used up (${usage.emails.received} of ${usage.emails.limit}): Pigeonhole refuses further mail with "550 Monthly recipient quota exceeded" until ${usage.period.ends_at}. The README's Troubleshooting says how to lift it; ${viewer}.`
      }
      const fiveMinutesAgo = new Date(Date.now() - 5 * 60_000).toISOString()
      const recent = await this.call<{ data: Message[] }>(
        'GET',
        `/v1/inboxes/${inbox.id}/messages?limit=100&received_after=${encodeURIComponent(fiveMinutesAgo)}`,
      )
      const count = recent?.data.length ?? 0
      if (count >= FREE_INBOX_BURST) {
        return `This inbox received ${count} messages in the last five minutes: past the inbox's burst limit (10 on the free plan) mail is refused with "450 Inbox receive rate exceeded". Use a new inbox per test; ${viewer}.`
      }
      return `No limit looks reached (${usage.emails.remaining} emails left this month). Did the application send it to this address, over SMTP to this Pigeonhole (an unknown address is refused with "550 Recipient address rejected")? ${viewer}.`
    } catch {
      return null
    }
  }

  /** Waits for the first message received after `previous` (received_after is inclusive, hence the extra millisecond). */
  waitForNextMessage(
    inbox: Inbox,
    previous: Message,
    options: Omit<WaitOptions, 'receivedAfter'> = {},
  ): Promise<Message> {
    return this.waitForMessage(inbox, { ...options, receivedAfter: new Date(Date.parse(previous.received_at) + 1) })
  }

  /**
   * The parsed answer, or null for a 204; any other non-2xx throws a PigeonholeError. A
   * refused or reset connection is tried again until `reconnectUntil` (15 s from now by
   * default); a path given as a function is made again for each try.
   */
  private async call<T>(
    method: string,
    pathOrMake: string | (() => string),
    body?: unknown,
    options: { idempotencyKey?: string; reconnectUntil?: number; onSendAgain?: () => void } = {},
  ): Promise<T | null> {
    const reconnectUntil = options.reconnectUntil ?? Date.now() + RECONNECT_WINDOW_MS
    let response: Response
    let path = ''
    for (let attempt = 0; ; attempt++) {
      path = typeof pathOrMake === 'string' ? pathOrMake : pathOrMake()
      try {
        response = await fetch(`${this.options.url}${path}`, {
          method,
          headers: {
            authorization: `Bearer ${this.options.key}`,
            ...(body ? { 'content-type': 'application/json' } : {}),
            ...(options.idempotencyKey ? { 'idempotency-key': options.idempotencyKey } : {}),
          },
          body: body ? JSON.stringify(body) : undefined,
        })
        break
      } catch (error) {
        // fetch rejects only when no HTTP answer came: refused, reset, closed mid-answer.
        if (Date.now() + 250 >= reconnectUntil)
          throw new Error(
            `${method} ${path}: no answer from ${this.options.url} (${error instanceof Error ? error.message : error}). Is Pigeonhole running there?`,
          )
        await sleep(Math.min(250 * 2 ** attempt, 2_000, reconnectUntil - Date.now()))
        options.onSendAgain?.()
      }
    }
    if (response.status === 204) return null
    const text = await response.text()
    let parsed: { error?: { code?: string; message?: string } } | null = null
    try {
      parsed = text ? JSON.parse(text) : null
    } catch {
      // Not JSON (a proxy's error page, say): the status and the text still say what happened.
    }
    if (!response.ok) {
      const code = parsed?.error?.code ?? 'unknown'
      const retryAfter = Number(response.headers.get('retry-after'))
      throw new PigeonholeError(
        response.status,
        code,
        `${method} ${path} answered ${response.status} ${code}: ${parsed?.error?.message ?? text}`,
        Number.isFinite(retryAfter) && response.headers.has('retry-after') ? retryAfter : undefined,
      )
    }
    return parsed as T | null
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** The first link in the message (HTML first, then text), optionally the first one matching `pattern`. */
export function extractLink(message: Message, pattern?: RegExp): string {
  const hrefs = [...(message.html ?? '').matchAll(/href\s*=\s*["']([^"']+)["']/gi)].map((m) =>
    m[1]!.replaceAll('&amp;', '&'),
  )
  // A sentence's closing punctuation is not part of the link.
  const bare = [...(message.text ?? '').matchAll(/https?:\/\/[^\s<>"')]*[^\s<>"').,;:!?]/g)].map((m) => m[0])
  const link = [...hrefs, ...bare].find(
    (candidate) => /^https?:\/\//.test(candidate) && (!pattern || pattern.test(candidate)),
  )
  if (!link) throw new Error(`No link${pattern ? ` matching ${pattern}` : ''} in "${message.subject}"`)
  return link
}

/** A one-time code of `digits` digits from the text body (or the HTML with tags removed). */
export function extractCode(message: Message, digits = 6): string {
  const body = message.text ?? (message.html ?? '').replace(/<[^>]*>/g, ' ')
  const code = new RegExp(`(?<![0-9])[0-9]{${digits}}(?![0-9])`).exec(body)?.[0]
  if (!code) throw new Error(`No ${digits}-digit code in "${message.subject}"`)
  return code
}
