/** The few Pigeonhole API calls the bench needs, over real HTTP with a Bearer key. */

export interface Inbox {
  id: string
  address: string
}

export class PigeonholeApi {
  readonly headers: Record<string, string>

  constructor(
    readonly base: string,
    key: string,
  ) {
    this.headers = { authorization: `Bearer ${key}` }
  }

  async createInbox(): Promise<Inbox> {
    const response = await fetch(`${this.base}/v1/inboxes`, { method: 'POST', headers: this.headers })
    const body = (await response.json()) as { data: Inbox }
    if (response.status !== 201) throw new Error(`createInbox answered ${response.status}: ${JSON.stringify(body)}`)
    return body.data
  }

  /** Counts an inbox's stored messages by paging through listOrWaitForMessages. */
  async countMessages(inboxId: string): Promise<number> {
    let count = 0
    let cursor: string | null = null
    do {
      const query: string = cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''
      const response = await fetch(`${this.base}/v1/inboxes/${inboxId}/messages?limit=100${query}`, {
        headers: this.headers,
      })
      if (response.status !== 200)
        throw new Error(`listOrWaitForMessages answered ${response.status}: ${await response.text()}`)
      const page = (await response.json()) as { data: unknown[]; next_cursor: string | null }
      count += page.data.length
      cursor = page.next_cursor
    } while (cursor)
    return count
  }
}
