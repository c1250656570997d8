/** `bun run start`: reads the environment, starts both listeners, stops cleanly on SIGTERM/SIGINT. */
import { exitOnConfigError, loadConfigOrExit } from './config.ts'

// The environment is read before the server's modules load: a wrong setting is reported
// in a few milliseconds, not after the whole server has been read in.
const config = loadConfigOrExit()
const [
  { PortInUseError, startApp },
  { startupBanner },
  { DatabaseUnreachableError },
  { runAsProcess },
  { DatabaseInUseError },
] = await Promise.all([
  import('./app.ts'),
  import('./startup-banner.ts'),
  import('./app/postgres/parts.ts'),
  import('./app/process.ts'),
  import('./storage/server-lock.ts'),
])

let app: Awaited<ReturnType<typeof startApp>>
try {
  app = await exitOnConfigError(() => startApp({ config }))
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
