/**
 * What a `bun test` run shares across its processes (the PostgreSQL cluster, the machine
 * bundle): whose life is the run's, a key naming the run for good, and a watcher that removes
 * the run's folders once that process is gone, however it ended.
 */
import { readFileSync } from 'node:fs'
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
