/**
 * A real volume that fails under the running server: a 32 MiB ext4 file system on a loop
 * device, shut down with the kernel's EXT4_IOC_SHUTDOWN (every later write and uncached read
 * fails with EIO, as a dying disk or a detached network volume does; ext4 goes read-only the
 * same way after an I/O error). SMTP answers 451, the API 503 `storage_unavailable` and never
 * 500, /ready fails although SQLite still grants its write lock, the log has one line for it
 * and no stack trace, and once the volume is mounted again every acknowledged message is
 * there. Needs root for losetup and mount; without them the test is skipped with the reason.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { dlopen, FFIType, ptr } from 'bun:ffi'
import { closeSync, mkdtempSync, openSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startTestServer, type TestServer } from '../support/harness.ts'
import { sendMail, simpleMessage } from '../support/smtp.ts'

const work = mkdtempSync(join(tmpdir(), 'pigeonhole-failing-'))
const image = join(work, 'volume.img')
const mountPoint = join(work, 'mnt')
const databasePath = join(mountPoint, 'pigeonhole.db')
let loop = ''

const run = (...command: string[]) => {
  const result = Bun.spawnSync(command)
  return result.exitCode === 0
    ? result.stdout.toString().trim()
    : new Error(`${command.join(' ')}: ${result.stderr.toString().trim()}`)
}
function mountVolume(): string | null {
  for (const step of [
    () => run('truncate', '-s', '32M', image),
    () => run('mkfs.ext4', '-q', '-F', image),
    () => run('mkdir', '-p', mountPoint),
  ]) {
    const result = step()
    if (result instanceof Error) return result.message
  }
  const attached = run('losetup', '-f', '--show', image)
  if (attached instanceof Error) return attached.message
  loop = attached
  const mounted = run('mount', loop, mountPoint)
  return mounted instanceof Error ? mounted.message : null
}
const unavailable = mountVolume()
if (unavailable) console.warn(`skipped: a loop-mounted ext4 volume needs root (${unavailable})`)

/** EXT4_IOC_SHUTDOWN with EXT4_GOING_FLAGS_NOLOGFLUSH: the file system fails every write from now on. */
function shutDownVolume(): void {
  const libc = dlopen('libc.so.6', { ioctl: { args: [FFIType.i32, FFIType.u64, FFIType.ptr], returns: FFIType.i32 } })
  const fd = openSync(mountPoint, 'r')
  try {
    expect(libc.symbols.ioctl(fd, 0x8004587dn, ptr(new Uint32Array([2])))).toBe(0)
  } finally {
    closeSync(fd)
    libc.close()
  }
}

let server: TestServer | undefined
beforeAll(async () => {
  if (unavailable) return
  server = await startTestServer({ env: { DATABASE_PATH: databasePath, DISK_MIN_FREE: '1MiB' } })
}, 30_000)
afterAll(async () => {
  await server?.stop()
  if (loop) {
    run('umount', '-l', mountPoint)
    run('losetup', '-d', loop)
  }
  rmSync(work, { recursive: true, force: true })
})

test.skipIf(unavailable !== null)(
  'a volume that fails under the server: 451, 503 storage_unavailable, /ready 503, one line, nothing lost',
  async () => {
    const s = server!
    const { key } = await s.tenant()
    const inbox = (await s.post('/v1/inboxes', key)).body.data
    const send = (subject: string) =>
      sendMail(s.app.smtpPort, { to: [inbox.address] }, simpleMessage({ to: inbox.address, subject }))
    expect((await send('kept')).data?.code).toBe(250)
    const logsBefore = s.logs.length

    shutDownVolume()
    expect((await send('refused')).data?.code).toBe(451)
    const created = await s.post('/v1/inboxes', key)
    expect(created.status).toBe(503)
    expect(created.body.error.code).toBe('storage_unavailable')
    expect(created.headers.get('retry-after')).toBe('5')
    for (const path of [`/v1/inboxes/${inbox.id}/messages`, `/v1/inboxes/${inbox.id}`, '/v1/usage']) {
      const read = await s.get(path, key)
      // These operations list no 503 in the interface: a failing read is its 500, with the retry hint.
      expect(
        read.status === 200 ||
          (read.status === 500 && read.body.error.code === 'internal_error' && read.headers.get('retry-after') === '5'),
      ).toBe(true)
    }
    const ready = await s.get('/ready')
    expect(ready.status).toBe(503)
    expect(ready.body.checks.database).toBe('failed')

    const lines = s.logs.slice(logsBefore)
    expect(lines.filter((line) => line.event === 'storage_failing')).toHaveLength(1)
    expect(lines.filter((line) => line.level === 'error').map((line) => line.event)).toEqual([])
    expect(lines.filter((line) => 'stack' in line)).toEqual([])
    await s.stop()
    server = undefined

    // Mounted again (what a restart on a repaired volume does): what got a 250 is there.
    expect(run('umount', mountPoint)).not.toBeInstanceOf(Error) // the stopped server holds no file on it
    expect(run('mount', loop, mountPoint)).not.toBeInstanceOf(Error)
    const reopened = new Database(databasePath)
    const subjects = reopened.query('SELECT subject FROM messages').all() as Array<{ subject: string }>
    reopened.close()
    expect(subjects.map((row) => row.subject)).toEqual(['kept'])
  },
  30_000,
)
