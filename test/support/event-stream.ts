/**
 * A console event stream (an inbox page's own, or the browser's shared `/console/live`) read
 * one event at a time, as the page's EventSource would: keep-alive comments are skipped and
 * an ended stream reads as null.
 */
import type { ConsoleClient } from './console-client.ts'

export interface EventStream {
  response: Response
  /** The next event's name; null once the server ended the stream. */
  next(): Promise<string | null>
  /** The next event as `name data`; null once the server ended the stream. */
  nextWithData(): Promise<string | null>
  /** Drops the connection, as a closed tab does. */
  abort(): void
  /** Stops reading (the server sees the body cancelled). */
  cancel(): Promise<void>
}

/** Opens `path` with the client's cookies. The caller asserts the status: a refusal has no stream to read. */
export async function openEventStream(client: ConsoleClient, path: string): Promise<EventStream> {
  const abort = new AbortController()
  const response = await fetch(`${client.baseUrl}${path}`, {
    headers: { cookie: client.cookieHeader() },
    signal: abort.signal,
  })
  const reader = response.body!.getReader()
  const decoder = new TextDecoder()
  let buffered = ''
  async function nextBlock(): Promise<{ name: string; data: string } | null> {
    for (;;) {
      const end = buffered.indexOf('\n\n')
      if (end >= 0) {
        const block = buffered.slice(0, end)
        buffered = buffered.slice(end + 2)
        const name = /^event: (.+)$/m.exec(block)?.[1]
        if (name) return { name, data: /^data: (.*)$/m.exec(block)?.[1] ?? '' }
        continue
      }
      const { done, value } = await reader.read()
      if (done) return null
      buffered += decoder.decode(value, { stream: true })
    }
  }
  return {
    response,
    next: async () => (await nextBlock())?.name ?? null,
    nextWithData: async () => {
      const event = await nextBlock()
      return event ? `${event.name} ${event.data}` : null
    },
    abort: () => abort.abort(),
    cancel: () => reader.cancel(),
  }
}
