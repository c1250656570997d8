/** `bun run start`: reads the environment, starts both listeners, stops cleanly on SIGTERM/SIGINT. */
import { PortInUseError, startApp } from './app.ts'
import { exitOnConfigError, loadConfigOrExit } from './config.ts'
import { startupBanner } from './startup-banner.ts'
import { DatabaseUnreachableError } from './app/postgres/parts.ts'
import { runAsProcess } from './app/process.ts'
import { DatabaseInUseError } from './storage/server-lock.ts'

let app: Awaited<ReturnType<typeof startApp>>
try {
  app = await exitOnConfigError(() => startApp({ config: loadConfigOrExit() }))
} catch (error) {
  if (
    !(
      error instanceof PortInUseError ||
      error instanceof DatabaseInUseError ||
      error instanceof DatabaseUnreachableError
    )
  )
    throw error
  console.error(error.message)
  process.exit(1)
}
// Besides the JSON log lines: a newcomer reading the terminal should not have to parse JSON.
console.error(await startupBanner(app))
runAsProcess(app)
