/**
 * The free-space guard sees space freed inside the database: on a real 16 MiB volume (a
 * tmpfs; mounting one needs root, as on these machines and CI) filled with 200 KB messages,
 * deleting the inbox, the retention sweep and deleting messages each lift the guard without
 * an operator, because SQLite's free pages count as free space. And a delete on a volume that
 * another program filled to the last byte still succeeds: the ballast stays reserved for
 * deletes (it is no longer given up on a timer).
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ManualClock } from '../../src/clock.ts'
import { sweepOnce } from '../../src/core/runtime/retention.ts'
import { startTestServer, type Tenant, type TestServer } from '../support/harness.ts'
import { sendMail, simpleMessage } from '../support/smtp.ts'
import { fillVolume as fillVolumeWith } from '../support/volume.ts'

const mountPoint = mkdtempSync(join(tmpdir(), 'pigeonhole-freed-'))
const filler = join(mountPoint, 'other-files')
let server: TestServer
let tenant: Tenant
const clock = new ManualClock()

beforeAll(async () => {
  const mounted = Bun.spawnSync(['mount', '-t', 'tmpfs', '-o', 'size=16m', 'tmpfs', mountPoint])
  if (mounted.exitCode !== 0)
    throw new Error(`this test mounts a 16 MiB tmpfs and needs root: ${mounted.stderr.toString()}`)
  server = await startTestServer({
    clock,
    env: {
      DATABASE_PATH: join(mountPoint, 'pigeonhole.db'),
      DISK_MIN_FREE: '4MiB',
      LIMIT_MONTHLY_EMAILS: '10000',
      LIMIT_INBOX_BURST: '10000',
      LIMIT_ORG_BURST: '10000',
      LIMIT_ACTIVE_INBOXES: '100',
    },
  })
  tenant = await server.tenant()
}, 30_000) // a server start on a shared, busy machine can take more than the default 5 s
afterAll(async () => {
  await server?.stop()
  Bun.spawnSync(['umount', '-l', mountPoint])
  rmSync(mountPoint, { recursive: true, force: true })
})

const fillVolume = () => fillVolumeWith(filler, mountPoint)

const newInbox = async () => {
  const response = await server.post('/v1/inboxes', tenant.key)
  expect(response.status).toBe(201)
  return response.body.data as { id: string; address: string }
}

/** Sends 200 KB messages until RCPT answers 452; returns the subjects acknowledged with 250. */
async function fill(inbox: { address: string }, tag: string): Promise<string[]> {
  const acknowledged: string[] = []
  for (let n = 0; n < 200; n++) {
    const result = await sendMail(
      server.app.smtpPort,
      { to: [inbox.address] },
      simpleMessage({ to: inbox.address, subject: `${tag}${n}`, text: 'x'.repeat(200_000) }),
    )
    if (result.rcpt[0]!.code === 452) return acknowledged
    if (result.data!.code === 250) acknowledged.push(`${tag}${n}`)
    server.app.services.disk.refresh() // instead of waiting out the guard's one-second cache
  }
  throw new Error('the volume never filled')
}

async function expectGuardLifted(): Promise<void> {
  expect(server.app.services.disk.refresh().tripped).toBe(false)
  const inbox = await newInbox()
  expect(
    (
      await sendMail(
        server.app.smtpPort,
        { to: [inbox.address] },
        simpleMessage({ to: inbox.address, subject: 'welcome back' }),
      )
    ).data?.code,
  ).toBe(250)
}

test('deleting an inbox, the retention sweep and deleting messages each lift the guard', async () => {
  const disk = server.app.services.disk
  // 1. Delete the only inbox.
  const first = await newInbox()
  expect((await fill(first, 'a')).length).toBeGreaterThan(10)
  expect(disk.status().tripped).toBe(true)
  expect((await server.post('/v1/inboxes', tenant.key)).status).toBe(503)
  expect((await server.delete(`/v1/inboxes/${first.id}`, tenant.key)).status).toBe(204)
  // The freed room counts: as free pages, or as the volume's own bytes once the file has
  // given its free pages back (ops.free-pages-returned.test.ts).
  expect(disk.refresh().freeBytes).toBeGreaterThan(4 * 1024 * 1024)
  await expectGuardLifted()

  // 2. The retention sweep removes 30-day-old mail.
  const second = await newInbox()
  const kept = await fill(second, 'b')
  expect(disk.status().tripped).toBe(true)
  clock.advance(31 * 86_400_000)
  expect((await sweepOnce(server.app.services)).messages).toBeGreaterThanOrEqual(kept.length)
  await expectGuardLifted()

  // 3. Deleting messages one by one, until the guard lets mail in again.
  const third = await newInbox()
  const stored = await fill(third, 'c')
  expect(disk.status().tripped).toBe(true)
  const messages = (await server.get(`/v1/inboxes/${third.id}/messages?limit=100`, tenant.key)).body.data as Array<{
    id: string
  }>
  expect(messages).toHaveLength(stored.length)
  let deleted = 0
  for (const message of messages) {
    expect((await server.delete(`/v1/messages/${message.id}`, tenant.key)).status).toBe(204)
    deleted++
    if (!disk.refresh().tripped) break
  }
  expect(deleted).toBeLessThan(messages.length) // freed pages counted before the last one went
  await expectGuardLifted()
  expect(server.logs.filter((line) => line.level === 'error')).toEqual([])
}, 60_000)

test('a volume filled to the last byte: the ballast waits for the delete, even after the guard has looked', async () => {
  const disk = server.app.services.disk
  const inbox = await newInbox()
  await fill(inbox, 'd')
  const [message] = (await server.get(`/v1/inboxes/${inbox.id}/messages?limit=1`, tenant.key)).body.data
  // A checkpoint has just emptied the WAL (Litestream's do the same), so the next write must
  // grow it; a reader holding a snapshot (as Litestream always does) keeps SQLite from
  // starting the WAL over, so the delete's pages must extend the file.
  server.app.storage!.sqlite.exec('PRAGMA wal_checkpoint(TRUNCATE)')
  const reader = new Database(join(mountPoint, 'pigeonhole.db'))
  reader.exec('BEGIN')
  reader.query('SELECT count(*) FROM messages').get()
  try {
    fillVolume()
    // The guard's checks while the volume is full leave the ballast alone: its room is for deletes.
    for (let n = 0; n < 3; n++) disk.refresh()
    expect(existsSync(disk.ballastPath)).toBe(true)
    // Something else takes whatever room there was, then the delete comes.
    fillVolume()
    expect((await server.delete(`/v1/messages/${message.id}`, tenant.key)).status).toBe(204)
    expect(
      server.logs.some((line) => line.event === 'disk_ballast_released' && line.reason === 'delete_needed_room'),
    ).toBe(true)
  } finally {
    reader.exec('COMMIT')
    reader.close()
  }
  rmSync(filler)
}, 60_000)

test('a delete on a full volume with the ballast already spent: deleteMessage keeps the 500 its interface allows, with Retry-After', async () => {
  // The last test left its inbox full: deleting it lifts the guard (and lays the ballast again).
  for (const { id } of (await server.get('/v1/inboxes', tenant.key)).body.data)
    expect((await server.delete(`/v1/inboxes/${id}`, tenant.key)).status).toBe(204)
  expect(server.app.services.disk.refresh().tripped).toBe(false)
  expect(existsSync(server.app.services.disk.ballastPath)).toBe(true)
  const inbox = await newInbox()
  await fill(inbox, 'e')
  const [first, second] = (await server.get(`/v1/inboxes/${inbox.id}/messages?limit=2`, tenant.key)).body.data
  server.app.storage!.sqlite.exec('PRAGMA wal_checkpoint(TRUNCATE)')
  const reader = new Database(join(mountPoint, 'pigeonhole.db'))
  reader.exec('BEGIN')
  reader.query('SELECT count(*) FROM messages').get()
  try {
    fillVolume()
    expect((await server.delete(`/v1/messages/${first.id}`, tenant.key)).status).toBe(204) // the ballast's room
    // Something else takes the ballast's room too: the next delete finds neither room nor ballast.
    fillVolume()
    const refused = await server.delete(`/v1/messages/${second.id}`, tenant.key)
    // deleteMessage lists no 503 in the interface: its 500, with the retry hint, and nothing deleted.
    expect(refused.status).toBe(500)
    expect(refused.body.error).toEqual({
      code: 'internal_error',
      message: expect.any(String),
      request_id: refused.headers.get('x-request-id'),
    })
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0)
    expect((await server.get(`/v1/messages/${second.id}`, tenant.key)).status).toBe(200)
  } finally {
    reader.exec('COMMIT')
    reader.close()
  }
  rmSync(filler)
  expect(server.logs.filter((line) => 'stack' in line)).toEqual([])
}, 60_000)
