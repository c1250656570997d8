/**
 * Group commit across machines in PostgreSQL mode: two assemblies on one database take mail
 * for the same inboxes from many SMTP connections at once, so each machine stores batches of
 * several deliveries in one transaction while the other does the same. Every acknowledged
 * message is stored once; received_at still strictly increases inside each inbox (a later
 * delivery of the same batch, or of the other machine's, never takes an earlier or equal one);
 * the usage count is exact; and a batch that fails over one delivery stores the others.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { type RunningApp, startApp } from '../../src/app.ts'
import { loadConfig } from '../../src/config.ts'
import { createApiKey } from '../../src/core/api-keys/keys.ts'
import { CLI_ACTOR } from '../../src/core/audit/audit.ts'
import { createOrganization } from '../../src/core/organizations/organizations.ts'
import { createLogger } from '../../src/log.ts'
import { openPostgres, type Sql } from '../../src/storage/postgres/client.ts'
import { describeWithPostgres, migratedDatabase } from '../support/postgres.ts'
import { scratchDir } from '../support/scratch.ts'
import { sendMail, simpleMessage } from '../support/smtp.ts'
import { layDownSelfSigned } from '../support/tls-seed.ts'

setDefaultTimeout(60_000)

interface Machine {
  app: RunningApp
  dir: string
}

async function startMachine(url: string): Promise<Machine> {
  const dir = scratchDir('pigeonhole-group-')
  const databasePath = join(dir, 'pigeonhole.db')
  // Every test connection comes from 127.0.0.1.
  const config = loadConfig({
    PORT: '0',
    SMTP_PORT: '0',
    HOST: '127.0.0.1',
    DATABASE_PATH: databasePath,
    DATABASE_URL: url,
    DATABASE_POOL_SIZE: '4',
    RECEIVING_DOMAIN: 'inbox.test',
    SMTP_MAX_CLIENTS_PER_ADDRESS: '100',
  })
  await layDownSelfSigned(databasePath, config.receivingDomain)
  const app = await startApp({ config, logger: createLogger('error', () => {}) })
  return { app, dir }
}

describeWithPostgres('group commit on two machines', () => {
  let machines: Machine[] = []
  let sql: Sql
  let key: string
  let organizationId: string

  const newInbox = async (): Promise<{ id: string; address: string }> => {
    const response = await fetch(`${machines[0]!.app.httpUrl}/v1/inboxes`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
    })
    expect(response.status).toBe(201)
    return ((await response.json()) as { data: { id: string; address: string } }).data
  }

  beforeAll(async () => {
    const url = await migratedDatabase()
    machines = await Promise.all([startMachine(url), startMachine(url)])
    sql = openPostgres(url, { max: 2 })
    const org = await createOrganization(machines[0]!.app.services, CLI_ACTOR, { name: 'group', preset: 'local' })
    organizationId = org.id
    key = (await createApiKey(machines[0]!.app.services, CLI_ACTOR, { organizationId })).key
  })
  afterAll(async () => {
    await Promise.all(machines.map((machine) => machine.app.stop()))
    await sql?.end()
    for (const machine of machines) rmSync(machine.dir, { recursive: true, force: true })
  })

  test('many connections on both machines into the same inboxes: every 250 stored once, received_at strictly increasing per inbox, usage exact', async () => {
    const inboxes = await Promise.all([newInbox(), newInbox(), newInbox()])
    const [before] = await sql<
      { n: number }[]
    >`select coalesce(sum(received), 0)::int as n from monthly_email_usage where organization_id = ${organizationId}`
    // 12 connections per machine, 3 messages each, recipients rotating over the inboxes (some
    // messages to two at once): each machine's stores queue behind its batches in flight.
    const sends = machines.flatMap((machine, m) =>
      Array.from({ length: 12 }, async (_, c) => {
        const ids: string[] = []
        for (let k = 0; k < 3; k++) {
          const first = inboxes[(c + k) % 3]!
          const to = k === 2 ? [first.address, inboxes[(c + k + 1) % 3]!.address] : [first.address]
          const result = await sendMail(
            machine.app.smtpPort,
            { to },
            simpleMessage({ to: to[0]!, subject: `m${m} c${c} k${k}` }),
          )
          expect(result.data?.code).toBe(250)
          ids.push(...(result.data!.text.match(/msg_[0-9a-f]{32}/g) ?? []))
        }
        return ids
      }),
    )
    const acknowledged = (await Promise.all(sends)).flat()
    expect(acknowledged).toHaveLength(2 * 12 * 4)
    const rows = await sql<{ id: string; inbox_id: string; at: string }[]>`
      select id, inbox_id, received_at::text as at from messages where inbox_id in ${sql(inboxes.map((inbox) => inbox.id))} order by inbox_id, received_at`
    expect(rows.map((row) => row.id).sort()).toEqual([...acknowledged].sort())
    for (const inbox of inboxes) {
      const times = rows
        .filter((row) => row.inbox_id === inbox.id)
        .map((row) => Date.parse(row.at.replace(' ', 'T').replace(/\+00$/, 'Z')))
      for (let i = 1; i < times.length; i++) expect(times[i]!).toBeGreaterThan(times[i - 1]!)
    }
    const [after] = await sql<
      { n: number }[]
    >`select coalesce(sum(received), 0)::int as n from monthly_email_usage where organization_id = ${organizationId}`
    expect(after!.n - before!.n).toBe(acknowledged.length)
  })
  test('a batch that fails over one delivery (its COMMIT already sent behind its statements) stores the others, usage exact', async () => {
    const inboxes = await Promise.all([newInbox(), newInbox(), newInbox(), newInbox()])
    // Every messages insert (one a batch) takes 20 ms, so deliveries queue and share batches;
    // one holding a "poison" subject fails in the database. A sequence, which no rollback undoes,
    // counts the failed inserts that held other deliveries too.
    await sql.unsafe(`
      create sequence if not exists mixed_batch_failures;
      create or replace function poison_messages() returns trigger language plpgsql as $$ begin
        if exists (select from new_rows where subject like 'poison%') then
          if (select count(*) from new_rows) > 1 then perform nextval('mixed_batch_failures'); end if;
          raise exception 'poison refused';
        end if;
        perform pg_sleep(0.02);
        return null;
      end $$;
      create or replace trigger poison_messages after insert on messages referencing new table as new_rows
        for each statement execute function poison_messages();`)
    try {
      const [before] = await sql<
        { n: number }[]
      >`select coalesce(sum(received), 0)::int as n from monthly_email_usage where organization_id = ${organizationId}`
      const sends = machines.flatMap((machine, m) =>
        Array.from({ length: 10 }, async (_, c) => {
          const ids: string[] = []
          for (let k = 0; k < 4; k++) {
            const to = inboxes[(c + k) % inboxes.length]!.address
            const poison = k === 2 && c % 3 === 0
            const result = await sendMail(
              machine.app.smtpPort,
              { to: [to] },
              simpleMessage({ to, subject: `${poison ? 'poison' : 'fine'} m${m} c${c} k${k}` }),
            )
            if (poison) expect(result.data?.code).not.toBe(250)
            else {
              expect(result.data?.code).toBe(250)
              ids.push(...(result.data!.text.match(/msg_[0-9a-f]{32}/g) ?? []))
            }
          }
          return ids
        }),
      )
      const acknowledged = (await Promise.all(sends)).flat()
      expect(acknowledged).toHaveLength(2 * 10 * 4 - 2 * 4)
      const rows = await sql<{ id: string; subject: string }[]>`
        select id, subject from messages where inbox_id in ${sql(inboxes.map((inbox) => inbox.id))}`
      expect(rows.map((row) => row.id).sort()).toEqual([...acknowledged].sort())
      const [after] = await sql<
        { n: number }[]
      >`select coalesce(sum(received), 0)::int as n from monthly_email_usage where organization_id = ${organizationId}`
      expect(after!.n - before!.n).toBe(acknowledged.length)
      const [mixed] = await sql<{ n: string }[]>`select last_value::text as n, is_called from mixed_batch_failures`
      expect(Number(mixed!.n)).toBeGreaterThan(0)
    } finally {
      await sql.unsafe('drop trigger if exists poison_messages on messages')
    }
  })
})
