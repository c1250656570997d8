/**
 * One server per SQLite file. Two servers on one file each keep their own long-poll
 * notifier, so a wait on one never wakes for mail stored by the other, and each runs its
 * own retention sweep and quota counters in memory. The second one therefore refuses to
 * start, naming the first.
 *
 * The lock is an OS file lock, not a pid file: SQLite's exclusive locking mode on a small
 * file beside the database (`<database>.server-lock`) holds a POSIX lock for as long as the
 * connection is open, and the kernel drops it when the process ends however it ends (kill
 * -9 included), so a crash never leaves a stale lock behind. SQLite also refuses a second
 * connection within the same process, which covers tests that start several servers in
 * one process. The lock file is never deleted: removing a lock file while another process
 * opens it would let two processes lock two different files.
 *
 * Who holds the lock cannot be read from the locked file, so the holder also writes its
 * process id and ports to `<database>.server-lock.json`; a refused start reads that.
 * The admin CLI does not take this lock: it is meant to run beside the server (WAL).
 */
import { Database } from 'bun:sqlite'
import { existsSync, mkdirSync, readFileSync, realpathSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { dirname } from 'node:path'

export interface Holder {
  pid: number
  http_port: number | null
  smtp_port: number | null
  started_at: string
}

/** What the holder is doing: still starting, or serving on its ports. */
const portsOf = (holder: Holder) =>
  holder.http_port === null ? 'still starting' : `HTTP port ${holder.http_port}, SMTP port ${holder.smtp_port}`

export class DatabaseInUseError extends Error {
  constructor(
    readonly databasePath: string,
    readonly holder: Holder | null,
  ) {
    const who = holder ? `process ${holder.pid}, ${portsOf(holder)}` : 'process unknown'
    super(
      `Another Pigeonhole server (${who}) is using ${databasePath}: ` +
        `stop it first, or give this one another DATABASE_PATH.`,
    )
    this.name = 'DatabaseInUseError'
  }
}

export interface ServerLock {
  /** Records the listening ports for the message a refused second server prints. */
  announce(ports: { httpPort: number; smtpPort: number }): void
  release(): void
}

const NO_LOCK: ServerLock = { announce: () => {}, release: () => {} }

/** Signal 0 only asks whether the process exists; EPERM means it does, under another user. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as { code?: string }).code === 'EPERM'
  }
}

/** The note of the lock's holder, unless it is missing, unreadable or left by a process that is gone. */
function readHolder(infoPath: string): Holder | null {
  try {
    const holder = JSON.parse(readFileSync(infoPath, 'utf8')) as Holder
    return Number.isInteger(holder.pid) && alive(holder.pid) ? holder : null
  } catch {
    return null
  }
}

/**
 * The running server that holds the file's lock, as its note names it, without taking the
 * lock or creating anything (a start that is about to be refused must leave no trace).
 */
export function runningServer(databasePath: string): Holder | null {
  if (databasePath === ':memory:' || !existsSync(databasePath)) return null
  return readHolder(`${realpathSync(databasePath)}.server-lock.json`)
}

export function lockServerDatabase(databasePath: string): ServerLock {
  if (databasePath === ':memory:') return NO_LOCK
  // Beside the file itself, not beside a symbolic link to it (SQLite follows links too):
  // otherwise a server started through a link would take a lock of its own on the same file.
  const lockPath = `${existsSync(databasePath) ? realpathSync(databasePath) : databasePath}.server-lock`
  const infoPath = `${lockPath}.json`
  mkdirSync(dirname(databasePath), { recursive: true }) // a first start makes the data folder (openStorage would too)
  const lock = new Database(lockPath, { create: true })
  try {
    lock.exec('PRAGMA busy_timeout = 0') // a held lock is an answer, not something to wait for
    lock.exec('PRAGMA locking_mode = EXCLUSIVE')
    lock.exec('BEGIN EXCLUSIVE') // in exclusive mode the lock outlives the transaction
    lock.exec('COMMIT')
  } catch (error) {
    lock.close()
    if ((error as { code?: string }).code === 'SQLITE_BUSY')
      throw new DatabaseInUseError(databasePath, readHolder(infoPath))
    throw error
  }
  const holder: Holder = { pid: process.pid, http_port: null, smtp_port: null, started_at: new Date().toISOString() }
  const write = () => {
    // Written aside and renamed, so a reader never sees half a file. Best effort: the lock is
    // what keeps a second server out; without the note its refusal just names no process
    // (a read-only volume is for the storage layer to report, not for this note).
    try {
      writeFileSync(`${infoPath}.tmp`, `${JSON.stringify(holder)}\n`)
      renameSync(`${infoPath}.tmp`, infoPath)
    } catch {
      // left as it was: readHolder ignores a note whose process is gone
    }
  }
  write()
  let released = false
  return {
    announce({ httpPort, smtpPort }) {
      holder.http_port = httpPort
      holder.smtp_port = smtpPort
      write()
    },
    release() {
      if (released) return
      released = true
      try {
        rmSync(infoPath, { force: true })
      } catch {
        // a read-only volume: the note stays, and readHolder ignores it once this process is gone
      }
      lock.close()
    },
  }
}
