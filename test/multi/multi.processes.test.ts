/**
 * Two PostgreSQL-mode machines as real processes on one database, spoken to over real HTTP
 * and SMTP: mail into one wakes a wait on the other, and limits count across both.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { type MachineProcess, pgMachine } from '../support/pg-processes.ts'
import { describeWithPostgres, migratedDatabase } from '../support/postgres.ts'
import { sendMail, simpleMessage } from '../support/smtp.ts'

setDefaultTimeout(60_000)

async function api(machine: MachineProcess, method: string, path: string, key: string, body?: unknown) {
  const response = await fetch(`${machine.httpUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const text = await response.text()
  return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : undefined, text }
}

describeWithPostgres('two server processes on one PostgreSQL database', () => {
  let a: MachineProcess
  let b: MachineProcess

  beforeAll(async () => {
    const url = await migratedDatabase()
    a = pgMachine('a', url)
    b = pgMachine('b', url)
    await Promise.all([a.start({ PG_MACHINE_TENANTS: 'local:1,hosted:1,hosted:4' }), b.start()])
  })
  afterAll(async () => {
    await Promise.all([a?.remove(), b?.remove()])
  })

  test('mail into machine A wakes a long poll waiting on machine B, with the message', async () => {
    const key = a.tenants[0]!.keys[0]!
    const inbox = await api(a, 'POST', '/v1/inboxes', key)
    expect(inbox.status).toBe(201)
    const { id, address: email } = inbox.body.data
    const waiting = api(b, 'GET', `/v1/inboxes/${id}/messages?wait_seconds=30&include=content&limit=1`, key)
    // The wait must be parked on B before the mail goes in, or a plain query would find it.
    await Bun.sleep(300)
    const sent = await sendMail(a.smtp, { to: [email] }, simpleMessage({ to: email, subject: 'across machines', text: 'woken on B' }))
    expect(sent.data?.code, `${JSON.stringify(sent)}\n${a.output()}`).toBe(250)
    const woken = await waiting
    expect(woken.status).toBe(200)
    expect(woken.body.data).toHaveLength(1)
    expect(woken.body.data[0].subject).toBe('across machines')
    expect(woken.body.data[0].text).toContain('woken on B')
  })
})
