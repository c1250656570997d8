/** `bun run start`: reads the environment, starts both listeners, stops cleanly on SIGTERM/SIGINT. */
import { PortInUseError, startApp } from './app.ts'
import { exitOnConfigError, loadConfigOrExit } from './config.ts'
import { errorFields } from './log.ts'
import { startupBanner } from './startup-banner.ts'
import { DatabaseUnreachableError } from './app/postgres/parts.ts'
import { DatabaseInUseError } from './storage/server-lock.ts'

let app: Awaited<ReturnType<typeof startApp>>
try {
  app = await exitOnConfigError(() => startApp({ config: loadConfigOrExit() }))
} catch (error) {
  if (!(error instanceof PortInUseError || error instanceof DatabaseInUseError || error instanceof DatabaseUnreachableError)) throw error
  console.error(error.message)
  process.exit(1)
}
// Besides the JSON log lines: a newcomer reading the terminal should not have to parse JSON.
console.error(await startupBanner(app))
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
