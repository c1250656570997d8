/**
 * A small Pigeonhole client for tests: copy this file into your suite. No dependencies
 * (fetch only), so it works under Bun, Node 18+, Playwright and Vitest alike.
 *
 *   const ph = new Pigeonhole({ url: process.env.PIGEONHOLE_URL!, key: process.env.PIGEONHOLE_KEY! })
 *   const inbox = await ph.createInbox({ prefix: 'signup' })
 *   // ... the application under test sends mail to inbox.address ...
 *   const message = await ph.waitForMessage(inbox, { subject: 'Welcome', timeout: 30_000 })
 *   const link = extractLink(message, /confirm/)
 *   await ph.deleteInbox(inbox)
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
  attachments: Array<{ id: string; filename: string; content_type: string; size_bytes: number; disposition: 'attachment' | 'inline'; content_id: string | null; download_url: string }>
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

/** An API error with its stable code (`inbox_quota_exceeded`, `invalid_api_key`, ...). */
export class PigeonholeError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message)
    this.name = 'PigeonholeError'
  }
}

/** Pause before a wait asks again after a failed connection (a server restarting). */
const RETRY_PAUSE_MS = 500

export class Pigeonhole {
  constructor(private readonly options: { url: string; key: string }) {}

  /** The organisation's limits and what it used this UTC month. */
  async getUsage(): Promise<Usage> {
    return (await this.call<Usage>('GET', '/v1/usage'))!
  }

  async createInbox(body: { prefix?: string } = {}): Promise<Inbox> {
    return (await this.call<{ data: Inbox }>('POST', '/v1/inboxes', body))!.data
  }

  async deleteInbox(inbox: Inbox | string): Promise<void> {
    await this.call('DELETE', `/v1/inboxes/${typeof inbox === 'string' ? inbox : inbox.id}`)
  }

  /**
   * Waits for the newest matching message; throws a readable error when none arrives in time.
   * A server that stops (every deploy) closes a waiting request without an answer, so a
   * failed connection is asked again, here or at the next server, until the deadline.
   */
  async waitForMessage(inbox: Inbox, options: WaitOptions = {}): Promise<Message> {
    const timeout = options.timeout ?? 30_000
    const deadline = Date.now() + timeout
    const seconds = (ms: number) => String(Math.min(180, Math.max(1, Math.ceil(ms / 1000))))
    const query = new URLSearchParams({ limit: '1', include: 'content' })
    if (options.subject) query.set('subject', options.subject)
    if (options.sender) query.set('sender', options.sender)
    if (options.receivedAfter) query.set('received_after', new Date(options.receivedAfter).toISOString())
    for (;;) {
      query.set('wait_seconds', seconds(deadline - Date.now()))
      let page: { data: Message[] } | null
      try {
        page = await this.call<{ data: Message[] }>('GET', `/v1/inboxes/${inbox.id}/messages?${query}`)
      } catch (error) {
        // An answer (PigeonholeError) is final; a connection that failed is not, while time is left.
        if (error instanceof PigeonholeError || Date.now() + RETRY_PAUSE_MS >= deadline) throw error
        await new Promise((resolve) => setTimeout(resolve, RETRY_PAUSE_MS))
        continue
      }
      if (page === null) {
        const what = [options.subject && `subject containing "${options.subject}"`, options.sender && `from ${options.sender}`].filter(Boolean).join(' and ') || 'any message'
        throw new Error(`No mail with ${what} arrived at ${inbox.address} within ${seconds(timeout)} s. Did the application send it to this address, over SMTP to this Pigeonhole?`)
      }
      return page.data[0]!
    }
  }

  /** Waits for the first message received after `previous` (received_after is inclusive, hence the extra millisecond). */
  waitForNextMessage(inbox: Inbox, previous: Message, options: Omit<WaitOptions, 'receivedAfter'> = {}): Promise<Message> {
    return this.waitForMessage(inbox, { ...options, receivedAfter: new Date(Date.parse(previous.received_at) + 1) })
  }

  /** The parsed answer, or null for a 204; any other non-2xx throws a PigeonholeError. */
  private async call<T>(method: string, path: string, body?: unknown): Promise<T | null> {
    const response = await fetch(`${this.options.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${this.options.key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    })
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
      throw new PigeonholeError(response.status, code, `${method} ${path} answered ${response.status} ${code}: ${parsed?.error?.message ?? text}`)
    }
    return parsed as T | null
  }
}

/** The first link in the message (HTML first, then text), optionally the first one matching `pattern`. */
export function extractLink(message: Message, pattern?: RegExp): string {
  const hrefs = [...(message.html ?? '').matchAll(/href\s*=\s*["']([^"']+)["']/gi)].map((m) => m[1]!.replaceAll('&amp;', '&'))
  // A sentence's closing punctuation is not part of the link.
  const bare = [...(message.text ?? '').matchAll(/https?:\/\/[^\s<>"')]*[^\s<>"').,;:!?]/g)].map((m) => m[0])
  const link = [...hrefs, ...bare].find((candidate) => /^https?:\/\//.test(candidate) && (!pattern || pattern.test(candidate)))
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
