/**
 * A stopping PostgreSQL-mode machine serves the SMTP sessions it had accepted to their end,
 * and refuses new connections at the socket, so a proxy moves those to another machine and
 * a sender that never retries does not notice the deploy. Before, a session accepted just
 * before the SIGTERM got `421 Server shutting down` at its first command after the greeting.
 */
import { afterAll, expect, setDefaultTimeout, test } from 'bun:test'
import { connect } from 'node:net'
import { openPostgres } from '../../src/storage/postgres/client.ts'
import { type MachineProcess, machineApi, pgMachine } from '../support/pg-processes.ts'
import { describeWithPostgres, migratedDatabase } from '../support/postgres.ts'
import { SmtpClient, simpleMessage } from '../support/smtp.ts'
import { until } from '../support/wait.ts'

setDefaultTimeout(60_000)

const refused = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect(port, '127.0.0.1')
    socket.once('connect', () => {
      socket.destroy()
      resolve(false)
    })
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ECONNREFUSED'))
  })

describeWithPostgres('a stopping machine', () => {
  let machine: MachineProcess
  afterAll(async () => {
    await machine?.remove()
  })

  test('serves the SMTP session it had accepted (greeting, EHLO, one transaction) and refuses new connections at the socket', async () => {
    const url = await migratedDatabase()
    machine = pgMachine('stopping', url)
    await machine.start({ PG_MACHINE_TENANTS: 'local:1' })
    const key = machine.tenants[0]!.keys[0]!
    const created = await machineApi(machine, 'POST', '/v1/inboxes', key)
    expect(created.status).toBe(201)
    const { address, id } = created.body.data as { address: string; id: string }
    const port = machine.smtp

    const accepted = await SmtpClient.connect(port) // greeted
    const exited = machine.stop()
    await until(() => refused(port), 'new SMTP connections to be refused at the socket', { timeoutMs: 5_000, intervalMs: 20 })
    expect((await accepted.command('EHLO accepted.test')).code).toBe(250)
    expect((await accepted.command('MAIL FROM:<sender@example.com>')).code).toBe(250)
    expect((await accepted.command(`RCPT TO:<${address}>`)).code).toBe(250)
    const data = await accepted.data(simpleMessage({ to: address, subject: 'sent while the machine stops' }))
    expect(data.code, data.text).toBe(250)
    expect((await accepted.command('QUIT')).code).toBe(221)
    expect(await exited).toBe(0)

    const sql = openPostgres(url, { max: 1 })
    try {
      const rows = await sql<{ subject: string }[]>`select subject from messages where inbox_id = ${id}`
      expect(rows.map((row) => row.subject)).toEqual(['sent while the machine stops'])
    } finally {
      await sql.end()
    }
  })
})
