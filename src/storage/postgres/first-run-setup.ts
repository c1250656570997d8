/**
 * First-run setup across machines. In one process, core/users/setup.ts checks "no user yet"
 * again inside SQLite's single writer lock, so two submissions of the setup form make one
 * operator. PostgreSQL runs transactions side by side under READ COMMITTED: two machines
 * would each count zero users and each insert an operator (with different emails, no unique
 * constraint stops them). Here the check, the token's deletion and the caller's inserts run
 * in one transaction that first takes a transaction-scoped advisory lock, so the second
 * machine waits, then counts the first one's user and is refused.
 *
 * The setup token is compared by the caller beforehand (in constant time, as today); this
 * deletes it only if it is still the pending one, so a token consumed meanwhile refuses too.
 * That conditional delete alone would also serialise two submissions of one token (the second
 * waits on the row, then finds it gone); the lock keeps "no user yet" true by itself, whatever
 * token either machine holds. The test shows a check without both makes two operators.
 */
import type { Sql, Queryable } from './client.ts'

const LOCK = 'pigeonhole.first-run-setup'
const SETTING = 'setup_token'

export type SetupOutcome<T> = { done: true; result: T } | { done: false }

/**
 * Runs `create` (which inserts the operator, the first organisation and its key through the
 * transaction it is given) only if no user exists and `token` is still the pending setup
 * token; deletes the token in the same transaction. `{ done: false }` otherwise, nothing written.
 */
export async function completeSetupOnce<T>(sql: Sql, token: string, create: (tx: Queryable) => Promise<T>): Promise<SetupOutcome<T>> {
  const outcome = await sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(hashtextextended(${LOCK}, 0))`
    const [users] = await tx<{ n: number }[]>`select count(*)::int as n from users`
    if ((users?.n ?? 0) > 0) return { done: false } as const
    const deleted = await tx`delete from settings where name = ${SETTING} and value = ${token}`
    if (deleted.count !== 1) return { done: false } as const
    return { done: true, result: await create(tx) } as const
  })
  return outcome as SetupOutcome<T>
}
