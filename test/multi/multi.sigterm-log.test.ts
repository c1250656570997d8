/**
 * A SIGTERM to a real server process while long polls wait (every deploy): the polls are cut
 * without an answer, so their clients retry, and each leaves its `http_request` line with
 * `connection_closed: true` (docs/operations.md). In SQLite mode the process used to exit
 * before those lines were written. (PostgreSQL mode lets waiting polls run to their own
 * answers before it stops: docs/scaling.md, "Stopping a machine".)
 */
import { afterAll, expect, setDefaultTimeout, test } from 'bun:test'
import { type MachineProcess, longPollsWaiting, machineApi, pgMachine } from '../support/pg-processes.ts'
import { until } from '../support/wait.ts'

setDefaultTimeout(60_000)

const METRICS_TOKEN = 'sigterm-log-metrics-token'
const POLLS = 3

async function cutPollsAreLogged(machine: MachineProcess): Promise<void> {
  await machine.start({ PG_MACHINE_TENANTS: 'local:1' })
  const key = machine.tenants[0]!.keys[0]!
  const created = await machineApi(machine, 'POST', '/v1/inboxes', key)
  expect(created.status).toBe(201)
  const polls = Array.from({ length: POLLS }, () =>
    machineApi(machine, 'GET', `/v1/inboxes/${created.body.data.id}/messages?wait_seconds=60`, key).then(
      (answer) => `answered ${answer.status}`,
      () => 'transport error',
    ),
  )
  await until(async () => (await longPollsWaiting(machine, METRICS_TOKEN)) === POLLS, 'the polls to wait', {
    timeoutMs: 10_000,
    intervalMs: 50,
  })
  expect(await machine.stop()).toBe(0)
  expect(await Promise.all(polls)).toEqual(Array(POLLS).fill('transport error'))
  const lines = machine
    .output()
    .split('\n')
    .filter((line) => line.startsWith('{"time"'))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
  const pollLines = lines.filter((line) => line.event === 'http_request' && String(line.path).endsWith('/messages'))
  expect(
    pollLines.map((line) => line.connection_closed),
    machine.output().slice(-3000),
  ).toEqual(Array(POLLS).fill(true))
  expect(lines.find((line) => line.event === 'long_polls_cut')).toMatchObject({ count: POLLS })
}

const machines: MachineProcess[] = []
afterAll(async () => {
  await Promise.all(machines.map((machine) => machine.remove()))
})

test('SQLite mode: each poll cut by SIGTERM leaves its http_request line with connection_closed', async () => {
  const machine = pgMachine('sqlite', '', { METRICS_TOKEN, LOG_LEVEL: 'info' })
  machines.push(machine)
  await cutPollsAreLogged(machine)
})
