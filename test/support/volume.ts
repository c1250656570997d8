/** Helpers for tests that run the server on a small volume of their own (a tmpfs, mounted as root). */
import { closeSync, openSync, statfsSync, writeSync } from 'node:fs'

/** Bytes an unprivileged writer can still put on the volume holding `dir`. */
export function volumeFreeBytes(dir: string): number {
  const stats = statfsSync(dir)
  return stats.bavail * stats.bsize
}

/** Another program filling the volume to the last byte, appending to `file` until ENOSPC. */
export function fillVolume(file: string, dir: string): void {
  const fd = openSync(file, 'a')
  const chunk = Buffer.alloc(64 * 1024)
  try {
    for (;;) writeSync(fd, chunk, 0, Math.max(512, Math.min(chunk.length, volumeFreeBytes(dir))))
  } catch (error) {
    if ((error as { code?: string }).code !== 'ENOSPC') throw error
  } finally {
    closeSync(fd)
  }
}
