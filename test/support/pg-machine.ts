/**
 * One PostgreSQL-mode machine as its own process, for test/multi/ tests that need a real
 * kill -9 and a real SIGTERM. Run as `bun test/support/pg-machine.ts` with the server's
 * environment (DATABASE_URL, DATABASE_PATH, PORT, SMTP_PORT, ...). It starts the same
 * assembly `bun src/index.ts` starts, stops the same way on SIGTERM, and prints one JSON
 * line on stdout once both listeners accept:
 * `{"http":<port>,"smtp":<port>,"tenants":[...],"setupUrl":...}` (the console setup link, or null). The tenants are organisations with their keys
 * that PG_MACHINE_TENANTS asks this machine to make (as `cli orgs create` and `cli keys create`
 * would), for the test to use on every machine. test/support/pg-processes.ts drives it.
 *
 * PG_MACHINE_CLOCK (an instant) runs the machine on a ManualClock starting there, as the
 * in-process tests do, so that rules by the UTC minute or by the day hold whenever the test
 * runs. The test then moves it, and asks for a retention turn, over stdin: one JSON command a
 * line, `{"id":1,"clock":<ms>}` or `{"id":2,"sweep":true}`, each answered on stdout by
 * `{"reply":<id>,...}` once done (the sweep: the turn, as the machine's own sweeper takes it,
 * with when it began and ended).
 */
import { createInterface } from 'node:readline'
import { startApp } from '../../src/app.ts'
import { RETENTION_JOB, retentionTurn } from '../../src/app/postgres/sweeper.ts'
import { runAsProcess } from '../../src/app/process.ts'
import { ManualClock } from '../../src/clock.ts'
import { loadConfigOrExit } from '../../src/config.ts'
import { createApiKey } from '../../src/core/api-keys/keys.ts'
import { CLI_ACTOR } from '../../src/core/audit/audit.ts'
import { createOrganization } from '../../src/core/organizations/organizations.ts'
import { openPostgres, type Sql } from '../../src/storage/postgres/client.ts'
import { runOnce } from '../../src/storage/postgres/run-once.ts'

const clock = process.env.PG_MACHINE_CLOCK ? new ManualClock(process.env.PG_MACHINE_CLOCK) : undefined
const config = loadConfigOrExit()
const app = await startApp({ config, clock })
runAsProcess(app)
// PG_MACHINE_TENANTS: `preset:keys` per organisation, comma-separated (`hosted:4,local:1`).
const tenants: { organizationId: string; keys: string[] }[] = []
for (const [index, spec] of (process.env.PG_MACHINE_TENANTS ?? '').split(',').filter(Boolean).entries()) {
  const [preset, count] = spec.split(':')
  if (preset !== 'hosted' && preset !== 'local') throw new Error(`PG_MACHINE_TENANTS: unknown preset ${preset}`)
  const org = await createOrganization(app.services, CLI_ACTOR, { name: `multi-${index}`, preset })
  const keys: string[] = []
  for (let i = 0; i < Number(count ?? '1'); i++)
    keys.push((await createApiKey(app.services, CLI_ACTOR, { organizationId: org.id })).key)
  tenants.push({ organizationId: org.id, keys })
}
process.stdout.write(`${JSON.stringify({ http: app.httpPort, smtp: app.smtpPort, tenants, setupUrl: app.setupUrl })}\n`)

// The test's commands (see above). The sweep takes its own connection: the advisory lock
// belongs to a session, and any session of this process stands for this machine.
let sweepSql: Sql | null = null
const wallClock = () => performance.timeOrigin + performance.now()
createInterface({ input: process.stdin }).on('line', async (line) => {
  const command = JSON.parse(line) as { id: number; clock?: number; sweep?: boolean }
  let reply: Record<string, unknown> = {}
  try {
    if (command.clock !== undefined) {
      if (!clock) throw new Error('PG_MACHINE_CLOCK is not set: this machine runs on the system clock')
      clock.set(command.clock)
    }
    if (command.sweep) {
      // Two: the lock holds one connection for the whole turn, the turn's own statements need another.
      sweepSql ??= openPostgres(config.databaseUrl, { max: 2 })
      // Timed inside the lock, as the machine's own sweeper's turn runs: a turn called while
      // another machine's runs and taking the lock once it is given back began, as a call,
      // before the other's call returned, yet never overlapped it.
      let span = { began: 0, ended: 0 }
      const sql = sweepSql
      const turn = await runOnce(sql, RETENTION_JOB, async () => {
        const began = wallClock()
        try {
          return await retentionTurn(app.services, sql, app.services.clock)
        } finally {
          span = { began, ended: wallClock() }
        }
      })
      reply = { turn, ...span }
    }
  } catch (error) {
    reply = { error: String(error) }
  }
  process.stdout.write(`${JSON.stringify({ reply: command.id, ...reply })}\n`)
})
