/**
 * One row in `settings` (`readiness_heartbeat`, the time of the last write) that the server
 * rewrites to prove a commit can succeed (/ready) and to give Litestream something to copy.
 */
import type { HeartbeatProbe } from '../../storage/port/inbound.ts'
import type { Services } from '../common/services.ts'

export const HEARTBEAT_SETTING = 'readiness_heartbeat'

/** Rewrites the heartbeat (SQLite: as a job of the group commit); settles once it is durable. */
export function recordHeartbeat(s: Pick<Services, 'store' | 'clock'>): Promise<void> {
  return s.store.inbound.recordHeartbeat(HEARTBEAT_SETTING, new Date(s.clock.now()).toISOString())
}

/**
 * A real write of the heartbeat, committed through the same storage path as every other write.
 * Another writer's lock is not waited for: 'busy' means it was held at this moment (SQLite:
 * another process's write, the CLI; PostgreSQL: another machine's transaction holding the
 * heartbeat row), and does not begin a failing state; any other failure is 'failed' (the
 * SQLite adapter has told its storage observer, like the failure of a real write).
 */
export async function probeHeartbeatWrite(s: Pick<Services, 'store' | 'clock'>): Promise<HeartbeatProbe['outcome']> {
  const probe = await s.store.inbound.probeHeartbeat(HEARTBEAT_SETTING, new Date(s.clock.now()).toISOString())
  return probe.outcome
}

/** One read of the database (the storage port's cheapest round trip). */
export function touchDatabase(s: Pick<Services, 'store'>): Promise<void> {
  return s.store.inbound.touch()
}
