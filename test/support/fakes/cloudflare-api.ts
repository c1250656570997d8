/**
 * A local stand-in for the Cloudflare API v4 Email Routing rules endpoints: a real HTTP
 * server on a port the OS picks. It keeps rules in memory, checks the bearer token, the
 * zone and the rule shape like the real API, records every request, and on demand
 * misbehaves (error answers, hanging, dropping the connection, 404, holding an answer
 * until the test releases it).
 */
import { randomBytes } from 'node:crypto'

export interface FakeRule {
  id: string
  tag: string
  name: string
  enabled: boolean
  priority: number
  matchers: Array<{ type: string; field?: string; value?: string }>
  actions: Array<{ type: string; value?: string[] }>
}

export interface RecordedRequest {
  method: string
  path: string
  authorization: string | null
  body: unknown
}

/** What the next request of a method gets instead of (or before) the normal answer. */
export type Trouble =
  | { kind: 'error'; status: number; errors?: Array<{ code: number; message: string }> }
  | { kind: 'unsuccessful' } // HTTP 200 with `success: false`
  | { kind: 'garbage' } // HTTP 200 whose body is not JSON
  | { kind: 'no_id' } // a successful envelope whose result lacks the rule id
  | { kind: 'tag_only' } // an older answer shape: the id only as `tag`
  | { kind: 'hang' } // never answers while the fake runs
  | { kind: 'drop' } // closes the connection without an answer
  | { kind: 'not_found' } // 404, as for a rule the provider does not have
  | { kind: 'hold'; until: Promise<void> } // waits, then answers normally

type Method = 'POST' | 'DELETE'

export type FakeCloudflare = Awaited<ReturnType<typeof startFakeCloudflare>>

export const FAKE_TOKEN = 'cf-test-token-7f3a9c1e5b'
export const FAKE_ZONE = '023e105f4ecef8ad9ca31a8372d0c353'

const ROUTE = /^\/client\/v4\/zones\/([^/]+)\/email\/routing\/rules(?:\/([^/]+))?$/

export async function startFakeCloudflare() {
  const rules = new Map<string, FakeRule>()
  const requests: RecordedRequest[] = []
  const planned: Record<Method, Trouble[]> = { POST: [], DELETE: [] }
  const waiters: Array<{ done: (request: RecordedRequest) => boolean }> = []
  const onStop: Array<() => void> = []

  const envelope = (status: number, result: unknown, errors: Array<{ code: number; message: string }> = []) =>
    Response.json({ success: errors.length === 0 && status < 400, errors, messages: [], result }, { status })

  async function answer(request: Request): Promise<Response> {
    const url = new URL(request.url)
    const text = await request.text()
    let body: unknown
    try {
      body = text ? JSON.parse(text) : undefined
    } catch {
      body = text
    }
    const recorded: RecordedRequest = {
      method: request.method,
      path: url.pathname,
      authorization: request.headers.get('authorization'),
      body,
    }
    requests.push(recorded)
    for (const waiter of [...waiters]) if (waiter.done(recorded)) waiters.splice(waiters.indexOf(waiter), 1)

    const trouble = planned[request.method as Method]?.shift()
    if (trouble) {
      switch (trouble.kind) {
        case 'error':
          return envelope(
            trouble.status,
            null,
            trouble.errors ?? [{ code: 1000 + trouble.status, message: `planned failure ${trouble.status}` }],
          )
        case 'unsuccessful':
          return Response.json({
            success: false,
            errors: [{ code: 2020, message: 'planned unsuccessful answer' }],
            messages: [],
            result: null,
          })
        case 'garbage':
          return new Response('<html>upstream trouble</html>', { headers: { 'content-type': 'text/html' } })
        case 'hang':
          return new Promise((resolve) => onStop.push(() => resolve(new Response(null, { status: 504 }))))
        case 'drop': {
          // A body aborted before its first byte makes Bun reset the connection with no
          // answer at all (an erroring ReadableStream does too, but prints a stack trace).
          const { readable, writable } = new TransformStream()
          writable
            .getWriter()
            .abort()
            .catch(() => {})
          return new Response(readable)
        }
        case 'not_found':
          return envelope(404, null, [{ code: 1002, message: 'Rule not found' }])
        case 'hold':
          await trouble.until
          break
        case 'no_id':
        case 'tag_only':
          break
      }
    }

    const match = ROUTE.exec(url.pathname)
    if (!match) return envelope(404, null, [{ code: 7000, message: 'No route for that URI' }])
    if (recorded.authorization !== `Bearer ${FAKE_TOKEN}`)
      return envelope(403, null, [{ code: 10000, message: 'Authentication error' }])
    if (match[1] !== FAKE_ZONE)
      return envelope(400, null, [
        { code: 7003, message: 'Could not route to this zone, perhaps your object identifier is invalid?' },
      ])
    const ruleId = match[2]

    if (request.method === 'POST' && ruleId === undefined) {
      const problem = invalidRule(body)
      if (problem) return envelope(400, null, [{ code: 2007, message: problem }])
      const id = randomBytes(16).toString('hex')
      const input = body as Omit<FakeRule, 'id' | 'tag'>
      const rule: FakeRule = {
        id,
        tag: id,
        name: input.name ?? '',
        enabled: input.enabled ?? true,
        priority: input.priority ?? 0,
        matchers: input.matchers,
        actions: input.actions,
      }
      rules.set(id, rule)
      if (trouble?.kind === 'no_id') return envelope(200, { ...rule, id: undefined, tag: undefined })
      if (trouble?.kind === 'tag_only') return envelope(200, { ...rule, id: undefined })
      return envelope(200, rule)
    }
    if (request.method === 'DELETE' && ruleId !== undefined) {
      const rule = rules.get(ruleId)
      if (!rule) return envelope(404, null, [{ code: 1002, message: 'Rule not found' }])
      rules.delete(ruleId)
      return envelope(200, rule)
    }
    return envelope(405, null, [{ code: 10405, message: 'Method not allowed' }])
  }

  const server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: answer })

  return {
    baseUrl: `http://127.0.0.1:${server.port}/client/v4`,
    rules,
    requests,
    /** Queues troubles for the next requests of `method`, in order. */
    plan(method: Method, ...troubles: Trouble[]) {
      planned[method].push(...troubles)
    },
    /** Forgets troubles not yet used. */
    clearPlans() {
      planned.POST.length = 0
      planned.DELETE.length = 0
    },
    /** Holds the next `method` request until release() is called; `received` settles once it arrived. */
    hold(method: Method) {
      let release!: () => void
      const until = new Promise<void>((resolve) => (release = resolve))
      const received = this.waitFor((r) => r.method === method)
      planned[method].push({ kind: 'hold', until })
      return { received, release }
    },
    /** Settles when a request matching `test` arrives (from now on). */
    waitFor(test: (request: RecordedRequest) => boolean): Promise<RecordedRequest> {
      return new Promise((resolve) =>
        waiters.push({
          done: (r) => {
            if (!test(r)) return false
            resolve(r)
            return true
          },
        }),
      )
    },
    /** Rules whose literal `to` matcher names `address`. */
    rulesFor(address: string): FakeRule[] {
      return [...rules.values()].filter((rule) => rule.matchers.some((m) => m.field === 'to' && m.value === address))
    },
    count(method: Method): number {
      return requests.filter((r) => r.method === method).length
    },
    async stop() {
      for (const release of onStop) release()
      await server.stop(true)
    },
  }
}

/** The checks the real API makes that matter to us: a literal `to` matcher and a valid action. */
function invalidRule(body: unknown): string | null {
  if (typeof body !== 'object' || body === null) return 'Body must be a JSON object'
  const { matchers, actions } = body as { matchers?: unknown; actions?: unknown }
  if (!Array.isArray(matchers) || matchers.length === 0) return 'matchers required'
  for (const m of matchers as Array<Record<string, unknown>>) {
    if (m?.type !== 'literal' || m.field !== 'to' || typeof m.value !== 'string' || !m.value.includes('@'))
      return 'Invalid matcher'
  }
  if (!Array.isArray(actions) || actions.length === 0) return 'actions required'
  for (const a of actions as Array<Record<string, unknown>>) {
    if (!['forward', 'worker', 'drop'].includes(String(a?.type))) return 'Invalid action type'
    if (
      a.type !== 'drop' &&
      (!Array.isArray(a.value) || a.value.length === 0 || a.value.some((v) => typeof v !== 'string'))
    )
      return 'Invalid action value'
  }
  return null
}
