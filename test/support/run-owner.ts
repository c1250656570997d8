/**
 * What a `bun test` run shares across its processes (the PostgreSQL cluster, the machine
 * bundle): whose life is the run's, a key naming the run for good, and a watcher that removes
 * the run's folders once that process is gone, however it ended.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { untilGone } from './scratch.ts'

/**
 * `/proc/<pid>/stat`'s start time (field 22): with the pid it names one process for good, so a
 * rendezvous folder left by a killed run whose pid came round again is never taken for this run's.
 */
function startTime(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null
  } catch {
    return null
  }
}

/**
 * The process whose life is the run's: under `bun test --parallel` a worker's parent (the
 * coordinator, which outlives every worker and file), otherwise this process. A worker is
 * told apart by the `--test-worker` flag Bun starts it with; where /proc is missing (not
 * Linux) every process keeps its own, as before.
 */
export function runOwner(): { pid: number; key: string } {
  let worker = false
  try {
    worker = readFileSync('/proc/self/cmdline', 'utf8').split('\0').includes('--test-worker')
  } catch {}
  const pid = worker ? process.ppid : process.pid
  return { pid, key: `${pid}-${startTime(pid) ?? `${process.pid}-${Date.now()}`}` }
}

const shellQuote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`

/**
 * Removes `folders` a second after process `ownerPid` is gone: a shell in a session of its own
 * (setsid), so neither a kill of the run's process group nor a worker's end takes it along.
 */
export function removeAfter(ownerPid: number, folders: string[]): void {
  const watch = `${untilGone(ownerPid)}; rm -rf ${folders.map(shellQuote).join(' ')}`
  Bun.spawnSync(['setsid', 'sh', '-c', `(${watch}) >/dev/null 2>&1 </dev/null &`], {
    stdio: ['ignore', 'ignore', 'ignore'],
  })
}

/**
 * A folder the run's processes meet at, to make one thing once a run (the PostgreSQL cluster,
 * the machine bundle): the process that creates it (mkdir is atomic) makes the thing, then
 * publishes what the others need (an atomic rename) or its failure, which the others then fail
 * with at once instead of waiting. The others wait for either, for at most a minute.
 * `failure` names what went wrong in their errors ("the run's … did not start").
 */
export function runRendezvous(name: string, failure: string) {
  const owner = runOwner()
  const folder = join(tmpdir(), `${name}-${owner.key}`)
  const published = join(folder, 'published')
  const failed = join(folder, 'failed')
  let first = false
  try {
    mkdirSync(folder)
    first = true
  } catch {}
  /** The published value, or null while there is none yet; throws the failure, or after the deadline. */
  const check = (deadline: number): string | null => {
    if (existsSync(published)) return readFileSync(published, 'utf8')
    if (existsSync(failed)) throw new Error(`${failure}: ${readFileSync(failed, 'utf8')}`)
    if (Date.now() > deadline) throw new Error(`${failure} within a minute (${folder})`)
    return null
  }
  return {
    owner,
    folder,
    /** This process made the folder: it makes the thing, and publishes it or fails. */
    first,
    publish(value: string): void {
      writeFileSync(`${published}.tmp`, value)
      renameSync(`${published}.tmp`, published)
    },
    fail(error: unknown): void {
      writeFileSync(failed, String(error))
    },
    /** What the first published, waited for without yielding (a caller that cannot await). */
    waitSync(): string {
      const deadline = Date.now() + 60_000
      for (let value = check(deadline); ; value = check(deadline)) {
        if (value !== null) return value
        Bun.sleepSync(50)
      }
    },
    async wait(): Promise<string> {
      const deadline = Date.now() + 60_000
      for (let value = check(deadline); ; value = check(deadline)) {
        if (value !== null) return value
        await Bun.sleep(50)
      }
    },
  }
}
