/**
 * The composition root, in two steps: assemble (src/app/assemble.ts) builds every part from
 * the config without listening, start (src/app/start.ts) makes them run and returns the
 * running app whose stop() undoes it in reverse. Tests call startApp() directly to run
 * several independent servers in one process.
 */
import { type AppOptions, assemble } from './app/assemble.ts'
import { refuseBusyPorts } from './app/listeners.ts'
import { type RunningApp, start } from './app/start.ts'

export type { AppOptions } from './app/assemble.ts'
export { PortInUseError } from './app/listeners.ts'
export type { RunningApp } from './app/start.ts'

export async function startApp(options: AppOptions): Promise<RunningApp> {
  // First, so a busy port is one line with nothing created and nothing logged before it.
  await refuseBusyPorts(options.config)
  return start(await assemble(options))
}
