/**
 * A SQLite database shaped like a year of a team's use, made only through the real server:
 * the admin CLI (organisations, custom limits, keys, a revocation), the console over HTTP
 * (first-run setup, invites, members who join and one who leaves, sign-ins that stay live,
 * keys made and revoked until the audit log is long), the REST API (inboxes, one made with an
 * Idempotency-Key, some deleted) and SMTP (every message with an attachment and with NUL,
 * bytes that are not UTF-8, U+FFFF and 4-byte characters in every mail text column).
 * User-typed text (organisation and key names, an e-mail address) carries U+FFFF and 4-byte
 * characters, and one key name arrives as bytes that are not UTF-8; control characters, NUL
 * among them, are refused by those forms in both modes.
 *
 * The database is only read (read-only) to find ids a browser would read off a page, and to
 * count what was made.
 */
import { Database } from 'bun:sqlite'
import { statSync } from 'node:fs'
import { join } from 'node:path'
import { awkwardMessage } from './awkward-mail.ts'
import { ConsoleDriver } from './console-driver.ts'
import { cli, startServer } from './server-process.ts'
import { SmtpSender } from '../../src/cli/smtp-sender.ts'

export interface YearShape {
  messages: number
  /** At least this many audit events (keys are made and revoked in the console until there are). */
  auditEvents: number
  /** Bytes of the one attachment of each message. */
  attachmentBytes: number
  /** Inboxes that receive the messages, spread over the organisations. */
  inboxes: number
  /** SMTP connections sending at once. */
  connections: number
  /** Organisations the admin CLI makes (custom limits, a key, a revoked key), beside the console's first. */
  cliOrganizations: number
}

export const FULL_YEAR: YearShape = {
  messages: 10_000,
  auditEvents: 1_000,
  attachmentBytes: 4_096,
  inboxes: 40,
  connections: 4,
  cliOrganizations: 3,
}

export interface YearOfUse {
  databasePath: string
  databaseBytes: number
  /** Rows per table of the finished file. */
  rows: Record<string, number>
  /** A live key per organisation (by organisation id), and the inboxes that received the mail. */
  keys: Record<string, string>
  inboxes: { id: string; address: string; organizationId: string }[]
  /** The environment the server ran with (DATABASE_PATH, RECEIVING_DOMAIN, limits). */
  env: Record<string, string>
  seconds: number
}

/** What people type: U+FFFF alone and before the digits of PostgreSQL mode's escape, 4-byte characters. */
const TYPED = 'Année ￿ ￿0 ￿1 😀 𝄞'
const PASSWORD = 'correct horse battery staple'

export async function makeYearOfUse(
  dir: string,
  shape: YearShape,
  log: (line: string) => void = () => {},
): Promise<YearOfUse> {
  const started = performance.now()
  const databasePath = join(dir, 'pigeonhole.db')
  const big = String(10_000_000)
  const env = {
    DATABASE_PATH: databasePath,
    RECEIVING_DOMAIN: 'year.test',
    LIMIT_MONTHLY_EMAILS: big,
    LIMIT_INBOX_BURST: big,
    LIMIT_ORG_BURST: big,
    LIMIT_REQUESTS_PER_KEY: big,
    LIMIT_REQUESTS_PER_ORG: big,
    LIMIT_ACTIVE_INBOXES: '1000',
    CONSOLE_PASSWORD_MEMORY_KIB: '8', // argon2 at its floor: dozens of sign-ins, not a test of their cost
  }
  const server = await startServer(env, join(dir, 'server.log'))
  const peek = <T>(sql: string, ...params: string[]): T[] => {
    const db = new Database(databasePath, { readonly: true })
    try {
      return db.query(sql).all(...params) as T[]
    } finally {
      db.close()
    }
  }
  const keys: Record<string, string> = {}
  const inboxes: { id: string; address: string; organizationId: string }[] = []
  try {
    // First run: the operator follows the CLI's setup link.
    const link = new URL(await cli(env, 'setup-link'))
    const operator = new ConsoleDriver(server.httpUrl)
    await operator.get(link.pathname + link.search)
    const ready = await operator.post('/setup', {
      token: link.searchParams.get('token')!,
      email: 'operator@year.test',
      password: PASSWORD,
      organization: `Operations ${TYPED}`,
      preset: 'hosted',
    })
    const home = /\/console\/orgs\/(org_[0-9a-f]{32})/.exec(ready.html)?.[1]
    const homeKey = /ph_live_[0-9a-f_]+/.exec(ready.html)?.[0]
    if (!home || !homeKey) throw new Error('the setup page showed no organisation or key')
    keys[home] = homeKey
    log('set up: operator, first organisation and key')

    // The operator's CLI: organisations with custom limits, keys, one revoked.
    for (let i = 1; i <= shape.cliOrganizations; i++) {
      const org = await cli(env, 'orgs', 'create', `Team ${i} ${TYPED}`)
      await cli(
        env,
        'orgs',
        'limits',
        org,
        '--active-inboxes',
        '500',
        '--emails-per-month',
        big,
        '--inbox-burst',
        big,
        '--org-burst',
        big,
        '--requests-per-key',
        String(100_000 + i),
      )
      keys[org] = await cli(env, 'keys', 'create', org)
      const spare = await cli(env, 'keys', 'create', org)
      await cli(env, 'keys', 'revoke', spare)
    }
    await cli(env, 'orgs', 'limits', home, '--inbox-burst', big, '--org-burst', big, '--long-polls-per-key', '7')
    log(`cli: ${shape.cliOrganizations} more organisations with custom limits, keys, revocations`)

    // Members: three join by invite (their sessions stay live), one leaves, one invite stays unused.
    await operator.get(`/console/orgs/${home}/members`) // a signed-in page: the session's CSRF token
    const members: ConsoleDriver[] = []
    for (let i = 1; i <= 3; i++) {
      const created = await operator.post(`/console/orgs/${home}/invites`, { role: i === 1 ? 'owner' : 'member' })
      const path = /\/console\/invites\/[A-Za-z0-9_-]{43}/.exec(created.html)?.[0]
      if (!path) throw new Error('no invite link on the page')
      const member = new ConsoleDriver(server.httpUrl)
      await member.get(path)
      await member.post(path, { email: `member${i}.${TYPED.replaceAll(' ', '')}@year.test`, password: PASSWORD })
      members.push(member)
    }
    await operator.post(`/console/orgs/${home}/invites`, { role: 'member' })
    const [leaver] = peek<{ id: string }>("select id from users where email like 'member3.%'")
    await members[2]!.post(`/console/orgs/${home}/members/${leaver!.id}/remove`, {})
    await new ConsoleDriver(server.httpUrl).signIn('operator@year.test', PASSWORD) // a second live session
    log('console: 3 members joined, 1 left, 1 invite unused')

    // Keys made and revoked in the console until the audit log is long (one name as raw bytes).
    await operator.post(`/console/orgs/${home}/keys`, 'name=ci%20%FF%C3%28%20bytes')
    let batch = 0
    const auditCount = () => peek<{ n: number }>('select count(*) as n from audit_events')[0]!.n
    while (auditCount() < shape.auditEvents) {
      batch++
      for (let i = 0; i < 25; i++)
        await operator.post(`/console/orgs/${home}/keys`, { name: `ci ${batch}.${i} ${TYPED}` })
      const made = peek<{ public_id: string }>(
        'select public_id from api_keys where name like ? and revoked_at is null',
        `ci ${batch}.%`,
      )
      for (const key of made.slice(0, 20)) await operator.post(`/console/orgs/${home}/keys/${key.public_id}/revoke`, {})
    }
    log(`console: ${auditCount()} audit events`)

    // Inboxes over the API: spread over the organisations; one per organisation made and deleted.
    const api = async (
      method: string,
      path: string,
      key: string,
      body?: unknown,
      headers: Record<string, string> = {},
    ) => {
      const response = await fetch(`${server.httpUrl}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${key}`,
          ...(body ? { 'content-type': 'application/json' } : {}),
          ...headers,
        },
        body: body ? JSON.stringify(body) : undefined,
      })
      if (response.status >= 300)
        throw new Error(`${method} ${path} answered ${response.status}: ${await response.text()}`)
      return response.status === 204 ? null : ((await response.json()) as { data: Record<string, string> })
    }
    const orgs = Object.keys(keys)
    for (let i = 0; i < shape.inboxes; i++) {
      const organizationId = orgs[i % orgs.length]!
      const headers = i === 0 ? { 'idempotency-key': 'year-of-use-first-inbox' } : undefined
      const made = (await api('POST', '/v1/inboxes', keys[organizationId]!, { prefix: `year${i}` }, headers))!.data
      inboxes.push({ id: made.id!, address: made.address!, organizationId })
    }
    for (const organizationId of orgs) {
      const gone = (await api('POST', '/v1/inboxes', keys[organizationId]!, { prefix: 'shortlived' }))!.data
      await api('DELETE', `/v1/inboxes/${gone.id}`, keys[organizationId]!)
    }

    // Mail over SMTP, several connections at once, each sending its share in turn.
    let sent = 0
    await Promise.all(
      Array.from({ length: shape.connections }, async (_, c) => {
        const sender = await SmtpSender.open(server.smtpPort, '127.0.0.1', { helo: 'year-of-use.test' })
        try {
          for (let n = c; n < shape.messages; n += shape.connections) {
            const inbox = inboxes[n % inboxes.length]!
            await sender.send(
              `sender${n % 97}@example.com`,
              inbox.address,
              awkwardMessage(inbox.address, n, shape.attachmentBytes),
            )
            if (++sent % 1000 === 0) log(`smtp: ${sent} of ${shape.messages} messages`)
          }
        } finally {
          await sender.close()
        }
      }),
    )
    log(`smtp: ${sent} messages`)
  } finally {
    await server.stop()
  }
  const tables = peek<{ name: string }>(
    "select name from sqlite_master where type = 'table' and name not like 'sqlite_%' and name not like '__drizzle%'",
  )
  const rows = Object.fromEntries(
    tables.map(({ name }) => [name, peek<{ n: number }>(`select count(*) as n from "${name}"`)[0]!.n]),
  )
  return {
    databasePath,
    databaseBytes: statSync(databasePath).size,
    rows,
    keys,
    inboxes,
    env,
    seconds: (performance.now() - started) / 1000,
  }
}
