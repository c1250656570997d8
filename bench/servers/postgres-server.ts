/**
 * The server as `dist/server.js` runs it, but allowed to assemble PostgreSQL mode while the
 * build still refuses it (src/app/postgres/mode.ts): the bench measures the mode as it stands.
 * The bench bundles this file next to dist/server.js (dist/bench-postgres-server.js) so it
 * runs minified code beside the same parse worker, as production would. Once the mode's
 * switch is on, the bench runs dist/server.js itself and this entry is not used.
 */
import { startApp } from '../../src/app.ts'
import { exitOnConfigError, loadConfigOrExit } from '../../src/config.ts'

const app = await exitOnConfigError(() => startApp({ config: loadConfigOrExit(), allowIncompletePostgres: true }))
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
