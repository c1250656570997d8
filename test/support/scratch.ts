/**
 * A fresh temporary folder for a test's SQLite files. Where the OS offers a RAM-backed
 * folder it is used: the server keeps synchronous=FULL, but each fsync then costs
 * microseconds instead of milliseconds on a shared disk, which made a test server's start
 * (migrations) and every commit the bulk of the suite's time. Power loss, the one thing
 * fsync guards against, is not something a test in this process can observe anyway.
 */
import { existsSync, mkdtempSync, statfsSync } from 'node:fs'
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

export const scratchDir = (prefix: string): string => mkdtempSync(join(base, prefix))
