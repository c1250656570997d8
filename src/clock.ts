/** Time source. Every time-dependent rule reads it, so tests can move time by hand. */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number
}

export const systemClock: Clock = { now: () => Date.now() }

/** A clock that only moves when told to; used by tests for minute, bucket and month rules. */
export class ManualClock implements Clock {
  private current: number
  constructor(start: string | number = '2026-01-15T12:00:00.000Z') {
    this.current = typeof start === 'number' ? start : Date.parse(start)
  }
  now(): number {
    return this.current
  }
  set(iso: string | number): void {
    this.current = typeof iso === 'number' ? iso : Date.parse(iso)
  }
  advance(ms: number): void {
    this.current += ms
  }
}

/** RFC 3339 in UTC with millisecond precision, the only timestamp shape the API emits. */
export const isoTime = (ms: number): string => new Date(ms).toISOString()
