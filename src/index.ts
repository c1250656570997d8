/** `bun run start`: reads the environment, starts both listeners, stops cleanly on SIGTERM/SIGINT. */
import { startApp } from './app.ts'
import { ConfigError, loadConfig } from './config.ts'

let config
try {
  config = loadConfig()
} catch (error) {
  if (error instanceof ConfigError) {
    console.error(`Invalid configuration: ${error.message}`)
    process.exit(78) // EX_CONFIG
  }
  throw error
}

const app = await startApp({ config })
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
