/**
 * What a running server's process does around it: the entry (`src/index.ts`) and the test
 * machines that stand for production processes (test/support/pg-machine.ts) call the same
 * code, so a test's SIGTERM exercises the stop production gets.
 */
import type { RunningApp } from './start.ts'
import { errorFields } from '../log.ts'

/** Logs what escapes every handler, and stops the app once on SIGTERM or SIGINT, then exits. */
export function runAsProcess(app: RunningApp): void {
  const { logger } = app.services
  // Last line of defence: every known failure is handled where it happens, but one client's
  // bad input must never take the listeners down for everyone else. Log it and keep serving.
  process.on('unhandledRejection', (reason) => logger.error('unhandled_rejection', errorFields(reason)))
  process.on('uncaughtException', (error) => logger.error('uncaught_exception', errorFields(error)))
  let stopping = false
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, () => {
      if (stopping) return
      stopping = true
      app.stop().then(
        () => process.exit(0),
        () => process.exit(1),
      )
    })
  }
}
