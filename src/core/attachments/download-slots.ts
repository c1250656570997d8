/**
 * Concurrent attachment downloads per organisation, on each machine. One free-plan key, well
 * inside its 120 requests a minute, could start a hundred 5 MiB downloads at once: each read
 * takes a database connection (PostgreSQL) or the event loop (SQLite) and its bytes take
 * memory until sent, and another organisation's API calls and SMTP commands on that machine
 * then waited seconds. So an organisation holds at most DOWNLOADS_PER_ORGANIZATION downloads
 * at a time on a machine, from the read until its last byte is handed to the connection (or
 * the client leaves); beyond, 429 `rate_limit_exceeded` with `Retry-After: 1` (the interface's
 * 429 for this operation; the limit is the pace at which the bytes can be read and sent).
 */
import { DomainError } from '../errors.ts'

/** Enough for a test run's parallel workers; a hundred at once is what starved the others. */
export const DOWNLOADS_PER_ORGANIZATION = 4

export class DownloadSlots {
  private readonly held = new Map<string, number>()

  constructor(private readonly perOrganization = DOWNLOADS_PER_ORGANIZATION) {}

  /** Takes a slot or throws 429; the returned function frees it (calling it twice is harmless). */
  acquire(organizationId: string): () => void {
    const now = this.held.get(organizationId) ?? 0
    if (now >= this.perOrganization) {
      throw new DomainError('rate_limit_exceeded', `Too many concurrent attachment downloads: at most ${this.perOrganization} per organization at a time; retry in a second.`, {
        retryAfterSeconds: 1,
      })
    }
    this.held.set(organizationId, now + 1)
    let released = false
    return () => {
      if (released) return
      released = true
      const left = (this.held.get(organizationId) ?? 1) - 1
      if (left > 0) this.held.set(organizationId, left)
      else this.held.delete(organizationId)
    }
  }

  /** Downloads in progress on this machine, across organisations (tests, metrics). */
  total(): number {
    let sum = 0
    for (const held of this.held.values()) sum += held
    return sum
  }
}
