/**
 * Whether this build may serve with DATABASE_URL. PostgreSQL mode needs every area of the
 * storage port implemented for PostgreSQL; until then `start` refuses it with one line
 * (exit 78) rather than serve a mode that would fail request by request. Tests of the parts
 * that exist pass `allowIncompletePostgres` to assemble; a user has no switch for it.
 */
import { ConfigError } from '../../config.ts'

export const POSTGRES_MODE_COMPLETE = false

export function refuseIncompletePostgres(allowIncomplete: boolean): void {
  if (!POSTGRES_MODE_COMPLETE && !allowIncomplete) throw new ConfigError('DATABASE_URL', 'PostgreSQL mode is not complete in this build')
}
