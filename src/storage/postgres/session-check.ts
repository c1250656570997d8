/**
 * Whether a connection through DATABASE_URL keeps one PostgreSQL session, checked at start.
 * PostgreSQL mode relies on two things that live in a session: LISTEN (the wake-ups across
 * machines) and session advisory locks (the migration, the retention sweep). A pooler in
 * transaction mode (PgBouncer `pool_mode = transaction`, or a provider's "transaction" port)
 * hands each statement's server connection back to its pool, so a LISTEN is registered on a
 * connection that then serves someone else, and a lock taken by one statement may belong to
 * another client by the next. Both fail silently: no error, only wake-ups that never come and
 * locks that do not exclude. So the start tries both for real and refuses to go on:
 *
 * - a LISTEN on one connection, a NOTIFY from another, the notification heard in time;
 * - a session advisory lock taken by one statement, refused to a second connection, and
 *   still held (released by its owner) at the owner's next statement.
 *
 * Each check uses a random channel and lock key, so machines starting together do not meet.
 * Unnamed statements (`prepare: false`): a pooler that loses prepared statements would
 * otherwise fail here with an error about those instead of the session it does not keep.
 */
import { randomBytes } from 'node:crypto'
import postgres from 'postgres'

/** How long the NOTIFY has to come back. A session answers in milliseconds, even across regions. */
const NOTIFY_WAIT_MS = 3_000

/** The URL's connections are not sessions; `problem` says which check failed, in words for the exit line. */
export class SessionNotKeptError extends Error {
  constructor(readonly problem: string) {
    super(problem)
    this.name = 'SessionNotKeptError'
  }
}

const openOne = (url: string) =>
  postgres(url, {
    max: 1,
    prepare: false,
    connect_timeout: 5,
    idle_timeout: 5,
    onnotice: () => {}, // pg_advisory_unlock of a lock not held warns: the answer already says so
    connection: { application_name: 'pigeonhole-session-check' },
  })

/**
 * Resolves when both checks pass; rejects with SessionNotKeptError when one fails, or with the
 * driver's own error when the database cannot be reached at all.
 */
export async function checkSessionSemantics(url: string, notifyWaitMs = NOTIFY_WAIT_MS): Promise<void> {
  const owner = openOne(url)
  const other = openOne(url)
  try {
    // Both run, so the exit line names every part that does not hold.
    const problems = [
      await listenRoundTrip(owner, other, notifyWaitMs),
      await advisoryLockRoundTrip(owner, other),
    ].filter((p) => p !== null)
    if (problems.length > 0) throw new SessionNotKeptError(problems.join('; '))
  } finally {
    await Promise.all([owner.end({ timeout: 1 }), other.end({ timeout: 1 })]).catch(() => {})
  }
}

/** Null when the NOTIFY came back; otherwise what went wrong. */
async function listenRoundTrip(listener: postgres.Sql, sender: postgres.Sql, waitMs: number): Promise<string | null> {
  const token = randomBytes(8).toString('hex')
  const channel = `pigeonhole_session_check_${token}`
  let heard!: () => void
  const arrived = new Promise<void>((resolve) => {
    heard = resolve
  })
  const subscription = await listener.listen(channel, (payload) => {
    if (payload === token) heard()
  })
  try {
    await sender`select pg_notify(${channel}, ${token})`
    let timer: ReturnType<typeof setTimeout> | undefined
    const outcome = await Promise.race([
      arrived.then(() => 'heard' as const),
      new Promise<'silent'>((resolve) => (timer = setTimeout(() => resolve('silent'), waitMs))),
    ])
    clearTimeout(timer)
    return outcome === 'heard'
      ? null
      : `a NOTIFY sent through it did not reach a LISTEN on it within ${waitMs / 1000} s`
  } finally {
    await subscription.unlisten().catch(() => {})
  }
}

/** Null when the lock behaved as a session's; otherwise what went wrong. */
async function advisoryLockRoundTrip(owner: postgres.Sql, other: postgres.Sql): Promise<string | null> {
  const name = `pigeonhole.session-check.${randomBytes(8).toString('hex')}`
  const [taken] = await owner<
    { locked: boolean }[]
  >`select pg_try_advisory_lock(hashtextextended(${name}, 0)) as locked`
  if (!taken?.locked) return 'a new session advisory lock could not be taken'
  const [stolen] = await other<
    { locked: boolean }[]
  >`select pg_try_advisory_lock(hashtextextended(${name}, 0)) as locked`
  if (stolen?.locked) {
    await other`select pg_advisory_unlock(hashtextextended(${name}, 0))`
    await owner`select pg_advisory_unlock(hashtextextended(${name}, 0))`
    return 'a session advisory lock held by one connection was granted to another'
  }
  const [released] = await owner<
    { unlocked: boolean }[]
  >`select pg_advisory_unlock(hashtextextended(${name}, 0)) as unlocked`
  return released?.unlocked
    ? null
    : 'a session advisory lock was no longer held by its own connection at its next statement'
}
