/** `bun run start`: reads the environment, starts both listeners, stops cleanly on SIGTERM/SIGINT. */
import { startApp } from './app.ts'
import { loadConfigOrExit } from './config.ts'
import { errorFields } from './log.ts'

const app = await startApp({ config: loadConfigOrExit() })
const { logger } = app.services
if (app.setupUrl) {
  // Besides the JSON log line: a newcomer reading the terminal should not have to parse JSON.
  process.stderr.write(`\n  Pigeonhole is running. Finish setting it up in your browser:\n\n    ${app.setupUrl}\n\n  (The link works once; \`bun src/cli.ts setup-link\` prints it again.)\n\n`)
}
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
