/**
 * What start() has set running, each part with the function that stops it. Stopping runs the
 * list backwards, the last part started first, so every part stops while what it relies on
 * still runs (the listeners drain before the timers they use stop, and all of it before the
 * database closes). A start that fails at step N runs the same list: steps 1 to N-1 stop, in
 * reverse, and nothing that never started is touched.
 */
import { errorFields, type Logger } from '../log.ts'

interface RunningPart {
  name: string
  stop: () => unknown
}

export class StopList {
  private readonly parts: RunningPart[] = []

  constructor(private readonly logger: Logger) {}

  /** Records a part that now runs; `stop` may return a promise, which is awaited. */
  started(name: string, stop: () => unknown): void {
    this.parts.push({ name, stop })
    this.logger.debug('part_started', { part: name })
  }

  /**
   * Stops every part, last started first. A part whose stop throws is logged and the rest
   * still stop: a timer that failed to clear must not keep the database open.
   */
  async stopAll(): Promise<void> {
    for (let part = this.parts.pop(); part; part = this.parts.pop()) {
      try {
        await part.stop()
      } catch (error) {
        this.logger.error('part_stop_failed', { part: part.name, ...errorFields(error) })
      }
      this.logger.debug('part_stopped', { part: part.name })
    }
  }
}
