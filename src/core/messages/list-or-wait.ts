/**
 * listOrWaitForMessages. With wait_seconds > 0 and nothing matching, the request holds a
 * long-poll slot and re-runs the query each time the inbox signals a stored message,
 * until a match, the deadline (null → HTTP 204), or the client leaving (which is also how
 * a stopping server ends it: by closing the connection). Storage that goes away while it
 * waits does not end it early: it answers at its deadline.
 * The subscription is made before the first query, so a message committed while the
 * poll is being set up is never missed.
 */
import { invalidKey, type Principal } from '../api-keys/authenticate.ts'
import { DomainError } from '../common/errors.ts'
import { findActiveInbox } from '../inboxes/find-inbox.ts'
import type { Services } from '../common/services.ts'
import { checkCursor, checkMessageQuery, queryMessages, type MessagePage, type MessageQuery } from './list-messages.ts'

/** A waiting poll whose query met unavailable storage asks again this soon, if nothing wakes it first. */
const RETRY_AFTER_STORAGE_FAILURE_MS = 1_000
/**
 * How long past its deadline a poll waits for a query still unanswered (a database gone
 * silent answers nothing until its connection is given up, seconds later): then it answers
 * without it, so it answers at its deadline within a second whatever the database does. A
 * quarter of that second: a database that answers at all answers in milliseconds, and the
 * rest is left to a busy machine's own delays (at 500 ms, polls on two busy cores answered
 * up to 1.37 s late).
 */
const DEADLINE_GRACE_MS = 250

/** A poll's query still unanswered at its deadline and grace: answered as storage that cannot be read now. */
class QueryPastDeadline extends Error {
  readonly code = 'QUERY_PAST_DEADLINE'
  constructor() {
    super(`the database did not answer the waiting poll's query within ${DEADLINE_GRACE_MS} ms of its deadline`)
    this.name = 'QueryPastDeadline'
  }
}

interface ListOrWaitInput {
  inboxId: string
  query: MessageQuery
  /** 0 answers at once; more waits up to this long for a match. */
  waitSeconds: number
  /** Aborted when the client disconnects. */
  signal: AbortSignal
}

export async function listOrWaitForMessages(
  s: Services,
  principal: Principal,
  input: ListOrWaitInput,
): Promise<MessagePage | null> {
  const { inboxId, query, ...wait } = input
  checkMessageQuery(query)
  const inbox = await findActiveInbox(s, principal, inboxId)
  const run = () => queryMessages(s, { inboxId: inbox.id, query, now: s.clock.now() })
  if (wait.waitSeconds === 0) return run()
  checkCursor(s.cursors, inbox.id, query.cursor) // a bad cursor is a 422 even when every slot is taken

  const release = await s.longPolls.acquire(principal)
  let changes = 0
  let changesAnnounced = 0
  let deleted = false
  let signalledAt = 0 // the notifier fires right after the commit
  let wake: (() => void) | null = null
  // Early: in PostgreSQL mode this machine's own commits wake the poll at once; a second
  // signal for the same message (the NOTIFY) costs at most one more query.
  const unsubscribe = s.notifier.subscribe(
    inbox.id,
    (event) => {
      changes++
      // The signal that wakes a parked poll; while a query runs, a second signal of the same
      // message (the NOTIFY after the early one) would make the wake look faster than it was.
      if (event === 'message_stored' && (wake || !signalledAt)) signalledAt = performance.now()
      if (event === 'inbox_deleted') deleted = true
      wake?.()
    },
    { early: true },
  )
  // The wait ends at the deadline or when the client leaves. A stopping server does not end
  // it: mail may still arrive while SMTP drains; then the server closes its connection
  // without an answer, so the client retries instead of reading "nothing arrived".
  let finished = false
  const finish = () => {
    finished = true
    wake?.()
  }
  // A key revoked while it waits gets no more mail: its poll ends with 401 at once.
  let revoked = false
  const unwatch = s.keyRevocations.watch(principal.keyPublicId, () => {
    revoked = true
    finish()
  })
  const deadline = performance.now() + wait.waitSeconds * 1000
  const timer = setTimeout(finish, wait.waitSeconds * 1000)
  // A query is not waited for past the deadline and its grace; the abandoned one settles unheard.
  const byDeadline = async (): Promise<MessagePage> => {
    const query = run()
    query.catch(() => {})
    let late: ReturnType<typeof setTimeout> | undefined
    try {
      return await Promise.race([
        query,
        new Promise<never>((_, reject) => {
          late = setTimeout(
            () => reject(new QueryPastDeadline()),
            Math.max(0, deadline - performance.now()) + DEADLINE_GRACE_MS,
          )
        }),
      ])
    } finally {
      clearTimeout(late)
    }
  }
  const signals = [wait.signal, s.stopped]
  for (const signal of signals) signal.addEventListener('abort', finish)
  if (signals.some((signal) => signal.aborted)) finished = true
  let retry: ReturnType<typeof setTimeout> | undefined
  try {
    await s.notifier.ready() // PostgreSQL mode: LISTEN is active before the first query
    for (;;) {
      if (revoked) throw invalidKey()
      const seen = changes
      let page: MessagePage | undefined
      try {
        page = await byDeadline()
      } catch (error) {
        if (revoked) throw invalidKey()
        // Storage away for a moment (PostgreSQL restarting or cut off, a failing volume): the
        // poll rides it out instead of failing before its time. It asks again when woken (the
        // listening connection's return wakes every waiter) or after a pause, and at its
        // deadline asks once more; only a failure then is answered, as the 500 every
        // operation may answer: a 204 would claim that nothing arrived, which it cannot know.
        if (finished || !s.storageHealth.kindOf(error)) throw error
      }
      if (revoked) throw invalidKey()
      if (page && page.data.length > 0) {
        if (signalledAt) s.metrics.longPollWake.observe((performance.now() - signalledAt) / 1000)
        return page
      }
      if (deleted) throw new DomainError('inbox_not_found', 'The inbox was deleted while waiting.')
      if (finished) {
        if (page) return null
        continue // the deadline came while the query was failing: the last try
      }
      if (changes !== seen) continue
      // Woken for nothing it wants: in PostgreSQL mode the wake-up may have used up the other
      // machines' notion that this inbox is watched here.
      if (changes > changesAnnounced) {
        changesAnnounced = changes
        s.notifier.waitingAgain(inbox.id)
      }
      await new Promise<void>((resolve) => {
        wake = resolve
        if (!page) retry = setTimeout(resolve, RETRY_AFTER_STORAGE_FAILURE_MS)
      })
      clearTimeout(retry)
      wake = null
    }
  } finally {
    clearTimeout(retry)
    clearTimeout(timer)
    for (const signal of signals) signal.removeEventListener('abort', finish)
    unwatch()
    unsubscribe()
    release()
  }
}
