/**
 * Wake-ups across machines: a message stored on any machine wakes the long polls waiting
 * for its inbox on every machine. The storing transaction sends no NOTIFY: PostgreSQL takes
 * one database-wide lock at the commit of every notifying transaction and holds it through
 * the commit's flush, so notifying stores would commit one behind another, whatever the
 * number of machines. After its commits, a machine publishes the inboxes it stored into,
 * coalesced (`publishStored`, driven by ./wake-publisher.ts): many inboxes in one NOTIFY.
 * Each machine keeps one LISTEN connection and fans a notification out to its local waiters.
 *
 * No lost wake-up: `subscribe` resolves only once LISTEN is active, and a waiter subscribes
 * BEFORE its first query. A message committed after that query but before the waiter starts
 * waiting still resolves `woken`, because the subscription was already listening.
 *
 * A wake-up can still be lost: the machine that committed may die before it publishes, and
 * PostgreSQL does not queue notifications for a LISTEN connection that is gone. When the
 * client reconnects and listens again, every local waiter is woken once; each re-queries and
 * either finds its message or subscribes again. And each machine re-reads the newest message
 * of every inbox it watches once a second (`newestPerInbox`, src/app/postgres/wake-fallback.ts),
 * so a lost publication costs at most that second of latency, never a missed message.
 *
 * The same channel carries the console's "a user's access ended" (a sign-out on one machine
 * ends the live views the user holds open on another): `notifyAccessEnded`, heard by the
 * `onAccessEnded` hook; and the refused deliveries each machine keeps for the console
 * (`notifyRefusal`, heard by `onRefusal`). Those wake no inbox waiter.
 */
import type { Queryable, Sql } from './client.ts'
import { textArray } from './array-literal.ts'

/** One channel for every inbox: the payload names the inboxes, separated by a space (no id holds one). */
export const WAKE_CHANNEL = 'pigeonhole_inbox_wake'
/** NOTIFY refuses a payload of 8,000 bytes or more; a publication of many inboxes is cut into payloads under this. */
export const MAX_WAKE_PAYLOAD_BYTES = 7_900
const ID_SEPARATOR = ' '

/** What happened to the inbox: a stored message (the payload is the bare id) or its deletion. */
export type WakeEvent = 'message_stored' | 'inbox_deleted'

const DELETED_PREFIX = 'deleted:'
/** A user's session or membership ended; the payload's tail is the user id (no inbox id starts so). */
const ACCESS_ENDED_PREFIX = 'access-ended:'
/**
 * A machine watches these inboxes: `watching:<origin>:<id>,<id>`, with no space, so nothing
 * reading stored-message payloads (space-separated ids) mistakes one for a publication.
 */
const WATCHING_PREFIX = 'watching:'
const WATCHING_SEPARATOR = ','
/**
 * Marks an announcement that the next publication uses up (`watching:<origin>;once:<ids>`).
 * The origin is URI-encoded, so it holds no `;`; a machine of the previous version reads the
 * marked origin as another machine's and publishes every message, as before.
 */
const ONCE_MARK = ';once'
/** A refused delivery or a claim for the console's list; the payload's tail is its JSON. */
const REFUSAL_PREFIX = 'refused:'
/** NOTIFY refuses a payload of 8,000 bytes or more. */
export const MAX_REFUSAL_BYTES = 7_900

const payloadOf = (inboxId: string, event: WakeEvent) =>
  event === 'inbox_deleted' ? `${DELETED_PREFIX}${inboxId}` : inboxId

/**
 * A deletion names one inbox; a publication of stored messages
 * one or many (a single id is the same payload either way).
 */
function parsePayload(payload: string): { inboxIds: string[]; event: WakeEvent } {
  if (payload.startsWith(DELETED_PREFIX))
    return { inboxIds: [payload.slice(DELETED_PREFIX.length)], event: 'inbox_deleted' }
  return { inboxIds: payload.split(ID_SEPARATOR).filter(Boolean), event: 'message_stored' }
}

/** The payloads that name `inboxIds` as stored into: as few as fit, each under MAX_WAKE_PAYLOAD_BYTES. */
export function storedPayloads(inboxIds: Iterable<string>): string[] {
  return joinedPayloads(inboxIds, '', ID_SEPARATOR)
}

/**
 * The payloads announcing that `origin` watches `inboxIds` (`once`: until their next
 * publication, see src/app/postgres/remote-watches.ts): as few as fit, each under MAX_WAKE_PAYLOAD_BYTES.
 */
export function watchingPayloads(origin: string, inboxIds: Iterable<string>, once = false): string[] {
  const mark = once ? ONCE_MARK : ''
  return joinedPayloads(inboxIds, `${WATCHING_PREFIX}${encodeURIComponent(origin)}${mark}:`, WATCHING_SEPARATOR)
}

function joinedPayloads(inboxIds: Iterable<string>, prefix: string, separator: string): string[] {
  const payloads: string[] = []
  let current = ''
  for (const id of inboxIds) {
    // Ids are ASCII (prefixed, base32) and the prefix is URI-encoded: length is bytes.
    if (current && prefix.length + current.length + separator.length + id.length > MAX_WAKE_PAYLOAD_BYTES) {
      payloads.push(prefix + current)
      current = ''
    }
    current = current ? current + separator + id : id
  }
  if (current) payloads.push(prefix + current)
  return payloads
}

/** What a machine does with every notification besides waking subscriptions: its notifier fans them out locally. */
export interface WakeHooks {
  /** A notification from any machine, this one's included. */
  onWake?(inboxId: string, event: WakeEvent): void
  /** LISTEN is active again after a lost connection: notifications in between were lost. */
  onReconnect?(): void
  /** LISTEN is active: the first time, and again after every reconnection. */
  onListening?(): void
  /** A user's console access ended on some machine (this one's included): see notifyAccessEnded. */
  onAccessEnded?(userId: string): void
  /** A refused delivery or claim announced by some machine (this one's included): see notifyRefusal. */
  onRefusal?(body: string): void
  /** Machine `origin` (this one too) watches `inboxIds` (`once`: until their next publication): publishWatching. */
  onWatching?(origin: string, inboxIds: string[], once: boolean): void
}

export interface WakeSubscription {
  /** Resolves at the first wake after subscribing: a message for the inbox, or a reconnection. */
  woken: Promise<void>
  /** Stops listening for this waiter; safe to call twice. */
  close(): void
}

export interface WakeBus {
  /** Listens for `inboxId`; resolves once a message committed from now on is sure to wake it. */
  subscribe(inboxId: string): Promise<WakeSubscription>
  /** Resolves once LISTEN is active; rejects while the first attempt has failed (the retry runs on). */
  ready(): Promise<void>
  /** Local waiters right now; for tests and metrics. */
  waiting(): number
  /** Stops listening; pending subscriptions stay unresolved and should be closed by their owners. */
  close(): Promise<void>
}

/**
 * Tells every machine that messages were stored into `inboxIds`: one statement, outside any
 * storing transaction (see the file's comment), one NOTIFY per payload (one for up to about
 * 200 inboxes). Send it after those messages committed.
 *
 * Its own commit does not wait for its flush (synchronous_commit off for this statement's
 * transaction alone): a notifying commit is stamped with a transaction id and so writes a
 * commit record, and it holds the database-wide notify lock until it returns; waiting for
 * the disk there would hold every other machine's publication behind this one's flush. A
 * publication a crash loses is caught by the waiters' fallback, like any lost one.
 */
export async function publishStored(sql: Sql, inboxIds: Iterable<string>): Promise<void> {
  await notifyUnflushed(sql, storedPayloads(inboxIds))
}

async function notifyUnflushed(sql: Sql, payloads: string[]): Promise<void> {
  if (payloads.length === 0) return
  await sql`
    select pg_notify(${WAKE_CHANNEL}, payload)
    from (select set_config('synchronous_commit', 'off', true)) as unflushed, unnest(${payloads}::text[]) as payload`
}

/**
 * Tells every machine that this one (`origin`) has listeners waiting on `inboxIds`, so that
 * they publish their wake-ups (src/app/postgres/remote-watches.ts). Unflushed, like
 * publishStored: a lost announcement costs at most the watchers' fallback interval.
 */
export async function publishWatching(
  sql: Sql,
  origin: string,
  watched: { lasting: Iterable<string>; once: Iterable<string> },
): Promise<void> {
  await notifyUnflushed(sql, [
    ...watchingPayloads(origin, watched.lasting),
    ...watchingPayloads(origin, watched.once, true),
  ])
}

/**
 * newestPerInbox's statement ($1: the inbox ids). `m.received_at` in the subquery's ORDER BY is
 * qualified: a bare `received_at` would name the output column, the text, which no index orders.
 * Exported for the test of its plan.
 */
export const NEWEST_PER_INBOX = `
    select watched.id,
      exists (select 1 from inboxes where inboxes.id = watched.id) as exists,
      (
        select m.received_at from messages m
        where m.inbox_id = watched.id order by m.received_at desc limit 1
      )::text as newest
    from unnest($1::text[]) as watched(id)`

/**
 * The newest message's received_at of each of `inboxIds` (null: none), and whether the inbox
 * still exists: what the wake-up fallback compares from one second to the next. One index
 * probe per inbox (messages_by_inbox_newest), however many messages an inbox holds.
 */
export async function newestPerInbox(
  sql: Sql,
  inboxIds: string[],
): Promise<Map<string, { exists: boolean; newest: string | null }>> {
  const rows = await sql.unsafe<{ id: string; exists: boolean; newest: string | null }[]>(
    NEWEST_PER_INBOX,
    [textArray(inboxIds)],
    { prepare: true },
  )
  return new Map(rows.map((row) => [row.id, { exists: row.exists, newest: row.newest }]))
}

/** Queues a wake-up for `inboxId` in the transaction (or session) `sql`; delivered at commit. */
export async function notifyInbox(sql: Queryable, inboxId: string, event: WakeEvent = 'message_stored'): Promise<void> {
  await sql`select pg_notify(${WAKE_CHANNEL}, ${payloadOf(inboxId, event)})`
}

/**
 * Tells every machine that a session or membership of `userId` ended, so each machine's live
 * views of that user check their access at once. Send it after the change committed (the
 * machines read the database when they hear it).
 */
export async function notifyAccessEnded(sql: Queryable, userId: string): Promise<void> {
  await sql`select pg_notify(${WAKE_CHANNEL}, ${ACCESS_ENDED_PREFIX + userId})`
}

/** Tells every machine about a refused delivery or a claim (`body`, at most MAX_REFUSAL_BYTES). */
export async function notifyRefusal(sql: Queryable, body: string): Promise<void> {
  await sql`select pg_notify(${WAKE_CHANNEL}, ${REFUSAL_PREFIX + body})`
}

/**
 * Starts this machine's LISTEN. `sql` is the machine's pool: postgres.js runs LISTEN on a
 * connection of its own beside the pool, reconnects it after a failure and listens again.
 */
export function createWakeBus(sql: Sql, hooks: WakeHooks = {}): WakeBus {
  const waiters = new Map<string, Set<() => void>>()

  const wake = (payload: string) => {
    if (payload.startsWith(ACCESS_ENDED_PREFIX)) {
      hooks.onAccessEnded?.(payload.slice(ACCESS_ENDED_PREFIX.length))
      return
    }
    if (payload.startsWith(REFUSAL_PREFIX)) {
      hooks.onRefusal?.(payload.slice(REFUSAL_PREFIX.length))
      return
    }
    if (payload.startsWith(WATCHING_PREFIX)) {
      const rest = payload.slice(WATCHING_PREFIX.length)
      const colon = rest.indexOf(':')
      const once = colon > 0 && rest.slice(0, colon).endsWith(ONCE_MARK)
      // Our channel, but a payload is still checked: a malformed one is dropped.
      const origin = colon > 0 ? decodeURIComponentOrNull(rest.slice(0, colon - (once ? ONCE_MARK.length : 0))) : null
      if (origin !== null)
        hooks.onWatching?.(
          origin,
          rest
            .slice(colon + 1)
            .split(WATCHING_SEPARATOR)
            .filter(Boolean),
          once,
        )
      return
    }
    const { inboxIds, event } = parsePayload(payload)
    for (const inboxId of inboxIds) {
      hooks.onWake?.(inboxId, event)
      const set = waiters.get(inboxId)
      if (!set) continue
      waiters.delete(inboxId)
      for (const resolve of set) resolve()
    }
  }
  const wakeEveryone = () => {
    const all = [...waiters.values()]
    waiters.clear()
    for (const set of all) for (const resolve of set) resolve()
  }

  // One LISTEN per machine, started at once. postgres.js keeps it alive by itself: after a
  // lost connection, and also when this first attempt fails because the database is down
  // as the machine starts, it connects again and listens again, calling `onListen` each time.
  let listened = false
  let firstListen!: () => void
  const listenedOnce = new Promise<void>((resolve) => {
    firstListen = resolve
  })
  const onListen = () => {
    // Anything committed while the connection was down went unheard: every waiter looks again.
    if (listened) {
      wakeEveryone()
      hooks.onReconnect?.()
    }
    listened = true
    hooks.onListening?.()
    firstListen()
  }
  const attempt = sql.listen(WAKE_CHANNEL, wake, onListen)
  attempt.catch(() => {}) // surfaces in subscribe() until a later attempt succeeds

  const ready = async () => {
    if (!listened) await Promise.race([listenedOnce, attempt])
  }

  return {
    ready,
    async subscribe(inboxId) {
      let resolve!: () => void
      const woken = new Promise<void>((r) => {
        resolve = r
      })
      // Registered before LISTEN is confirmed, so a wake-everyone during this await reaches it too.
      const set = waiters.get(inboxId) ?? new Set()
      waiters.set(inboxId, set)
      set.add(resolve)
      const close = () => {
        const current = waiters.get(inboxId)
        if (!current?.delete(resolve)) return
        if (current.size === 0) waiters.delete(inboxId)
      }
      try {
        // Before the first LISTEN: wait for it, or fail at once if that attempt already failed
        // (the caller answers "unavailable"; the retry in the background brings the bus back).
        await ready()
      } catch (error) {
        close()
        throw error
      }
      return { woken, close }
    },
    waiting() {
      let n = 0
      for (const set of waiters.values()) n += set.size
      return n
    },
    async close() {
      // Only a LISTEN that succeeded first time hands back its unlisten; otherwise ending
      // the pool ends the listening connection too.
      const first = await attempt.catch(() => null)
      await first?.unlisten()
    },
  }
}

function decodeURIComponentOrNull(text: string): string | null {
  try {
    return decodeURIComponent(text)
  } catch {
    return null
  }
}
