/** One JSON line per event on stdout. Callers pass fields, never secrets (keys, bodies). */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent'
type LogFields = Record<string, unknown>

export interface Logger {
  debug(event: string, fields?: LogFields): void
  info(event: string, fields?: LogFields): void
  warn(event: string, fields?: LogFields): void
  error(event: string, fields?: LogFields): void
}

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 99 }

export function createLogger(
  level: LogLevel,
  write: (line: string) => void = (line) => process.stdout.write(line + '\n'),
): Logger {
  const emit =
    (at: Exclude<LogLevel, 'silent'>) =>
    (event: string, fields: LogFields = {}) => {
      if (RANK[at] < RANK[level]) return
      // A field named like the line's own keys cannot replace them (one once turned an event's name into another's).
      const line: LogFields = { time: new Date().toISOString(), level: at, event }
      for (const [name, value] of Object.entries(fields)) if (!(name in line)) line[name] = value
      write(JSON.stringify(line))
    }
  return { debug: emit('debug'), info: emit('info'), warn: emit('warn'), error: emit('error') }
}

/**
 * Turns an unknown thrown value into loggable fields without leaking request data. Drizzle
 * wraps a driver's error in one whose message (and stack) repeat the whole statement and its
 * parameters, which hold request data (addresses, subjects, search terms): the driver's own
 * error is logged instead.
 */
export const errorFields = (error: unknown): LogFields => {
  if (error instanceof Error && 'params' in error && 'query' in error) {
    const cause = error.cause instanceof Error ? error.cause : null
    return { error: cause?.message ?? 'query failed', error_name: cause?.name ?? 'Error', stack: cause?.stack }
  }
  return error instanceof Error
    ? { error: error.message, error_name: error.name, stack: error.stack }
    : { error: String(error) }
}
