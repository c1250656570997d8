/**
 * Fresh temporary folders for the tests' files, each removed when whoever made it is done.
 *
 * Where the OS offers a RAM-backed folder it is used: the server keeps synchronous=FULL, but
 * each fsync then costs microseconds instead of milliseconds on a shared disk, which made a
 * test server's start (migrations) and every commit the bulk of the suite's time. Power loss,
 * the one thing fsync guards against, is not something a test in this process can observe.
 *
 * Who removes a folder, by what it is for:
 * - `scratchDir`: the test file that made it. The preloaded `afterAll` (file-cleanup.ts) runs
 *   after the file's own hooks have stopped its servers: after each file in a `--parallel`
 *   worker, at the end of a serial run. Outside `bun test` (the bench), when the process exits.
 * - `processScratchDir`: the process, for what it reuses across the files it runs (the test
 *   certificate).
 * - `unmanagedScratchDir`: nobody here; its caller stops what runs in it and removes it (a
 *   PostgreSQL cluster, which may serve every worker of the run).
 *
 * Bun's test runner neither fires `exit` handlers nor lets a worker finish on its own (the run
 * kills it), and a run may be interrupted; so every process that makes a folder here also
 * starts a watcher, as the PostgreSQL clusters do, that removes what the process still owns a
 * second after it is gone, however it ended.
 */
import { existsSync, mkdtempSync, renameSync, rmSync, statfsSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const RAM_BACKED = '/dev/shm'
// Room for many servers at once, each with the free-space guard's ballast file; a container's
// small default /dev/shm would trip that guard, so it falls back to the ordinary temp folder.
const ROOM_NEEDED = 1024 ** 3
const roomIn = (path: string) => {
  const volume = statfsSync(path)
  return volume.bavail * volume.bsize
}
const base = existsSync(RAM_BACKED) && roomIn(RAM_BACKED) >= ROOM_NEEDED ? RAM_BACKED : tmpdir()

/** Folders made by the test file now running (in this process), removed when it is done. */
const ofThisFile = new Set<string>()
/** Every folder this process still owns: the watcher's list once the process is gone. */
const ofThisProcess = new Set<string>()
let manifest: string | null = null

const remove = (folder: string) => rmSync(folder, { recursive: true, force: true })

/** The watcher's list, rewritten whole (renamed into place) so it never reads half a line. */
function writeManifest(): void {
  if (!manifest) {
    manifest = join(tmpdir(), `pigeonhole-scratch-owned-${process.pid}-${Date.now().toString(36)}`)
    startWatcher(manifest)
    // Plain `bun` (the bench, scripts) runs exit handlers: no second's wait there.
    process.once('exit', removeProcessScratch)
  }
  writeFileSync(`${manifest}.tmp`, [...ofThisProcess].map((folder) => `${folder}\n`).join(''))
  renameSync(`${manifest}.tmp`, manifest)
}

/**
 * A shell command that returns once process `pid` is gone. GNU tail's `--pid` waits without
 * starting a process a second (a `sleep 1` loop costs about a millisecond of CPU a turn, and a
 * run keeps a dozen watchers for two minutes); where tail lacks it, the loop.
 */
export const untilGone = (pid: number): string =>
  `{ tail --pid=${pid} -f /dev/null 2>/dev/null || while kill -0 ${pid} 2>/dev/null; do sleep 1; done; }`

/**
 * A shell loop in a session of its own (setsid), not this process's child, so neither a kill of
 * the run's process group nor a `--parallel` worker's end takes it along: once this process is
 * gone it removes every folder on the list, then the list.
 */
function startWatcher(list: string): void {
  const quoted = `'${list.replaceAll("'", `'\\''`)}'`
  const watch = `${untilGone(process.pid)}; if [ -f ${quoted} ]; then while IFS= read -r d; do rm -rf "$d"; done < ${quoted}; fi; rm -f ${quoted} ${quoted}.tmp`
  Bun.spawnSync(['setsid', 'sh', '-c', `(${watch}) >/dev/null 2>&1 </dev/null &`], {
    stdio: ['ignore', 'ignore', 'ignore'],
  })
}

function made(prefix: string, owner: 'file' | 'process'): string {
  const folder = mkdtempSync(join(base, prefix))
  if (owner === 'file') ofThisFile.add(folder)
  ofThisProcess.add(folder)
  writeManifest()
  return folder
}

/** A fresh folder, removed with everything in it once the test file that made it is done. */
export const scratchDir = (prefix: string): string => made(prefix, 'file')

/** A fresh folder that lives as long as this process: for what it reuses across test files. */
export const processScratchDir = (prefix: string): string => made(prefix, 'process')

/** Where the scratch folders go (RAM-backed where there is room), for a folder with a name of its caller's. */
export const scratchBase = (): string => base

/** A fresh folder nobody here removes: the caller stops what runs in it, then removes it. */
export const unmanagedScratchDir = (prefix: string): string => mkdtempSync(join(base, prefix))

/** Removes the folders of the test file that just ended (the preloaded `afterAll`). */
export function removeFileScratch(): void {
  if (ofThisFile.size === 0) return
  // A folder that cannot go (something still mounted on it) fails the file that made it, once:
  // left in the set, it failed every later file of this worker too. The process's watcher
  // tries it again when the process ends.
  let failure: unknown = null
  for (const folder of ofThisFile) {
    try {
      remove(folder)
      ofThisProcess.delete(folder)
    } catch (error) {
      failure ??= error
    }
  }
  ofThisFile.clear()
  writeManifest()
  if (failure) throw failure
}

function removeProcessScratch(): void {
  for (const folder of ofThisProcess) remove(folder)
  ofThisProcess.clear()
  if (manifest) rmSync(manifest, { force: true })
}
