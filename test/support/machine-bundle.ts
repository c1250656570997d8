/**
 * The machine processes of test/multi/ (pg-machine.ts, 37 starts a run) run from a bundle built
 * once per `bun test` run, not from the source tree. Bun transpiles every source file a process
 * imports, at every start; the bundle is one file of plain JavaScript. On this two-core machine
 * (load average 5.6) a machine's start to /health took 0.24 s of CPU from the bundle against
 * 0.31 s from the source; the load alone 0.14 s against 0.24 s.
 *
 * The bundle is built from the source of this run, by the first process of the run that needs
 * it, into a folder named after the run (run-owner.ts) and removed when the run ends: never a
 * file kept between runs that could fall behind the source. It is laid out as the production
 * bundle is (`bun run build`: dist/ beside drizzle/ and node_modules/), so it finds the
 * migrations, the parse worker and the certificate child the way dist/server.js does.
 */
import { symlinkSync } from 'node:fs'
import { join } from 'node:path'
import { removeAfter, runRendezvous } from './run-owner.ts'

const ROOT = join(import.meta.dir, '..', '..')
const ENTRY_POINTS = [
  join(ROOT, 'test', 'support', 'pg-machine.ts'),
  // Found beside the bundle (parse-pool.ts, self-signed.ts), as in dist/.
  join(ROOT, 'src', 'core', 'inbound', 'parse-worker.ts'),
  join(ROOT, 'src', 'smtp', 'self-signed-child.ts'),
]

let script: Promise<string> | null = null

/** The path of this run's pg-machine bundle, built on first use. */
export function machineScript(): Promise<string> {
  script ??= bundleForRun()
  return script
}

async function bundleForRun(): Promise<string> {
  // A build takes a fraction of a second, a few on a busy machine; a minute means it failed.
  const meeting = runRendezvous('pigeonhole-machine-bundle', "the run's machine bundle was not built")
  const built = join(meeting.folder, 'dist', 'pg-machine.js')
  if (!meeting.first) {
    await meeting.wait()
    return built
  }
  removeAfter(meeting.owner.pid, [meeting.folder])
  try {
    symlinkSync(join(ROOT, 'drizzle'), join(meeting.folder, 'drizzle'))
    symlinkSync(join(ROOT, 'node_modules'), join(meeting.folder, 'node_modules'))
    // Not minified: a failing test's machine output keeps readable names and stack frames.
    const result = await Bun.build({
      entrypoints: ENTRY_POINTS,
      target: 'bun',
      outdir: join(meeting.folder, 'dist'),
      naming: '[name].[ext]',
    })
    if (!result.success) throw new Error(result.logs.map(String).join('\n'))
  } catch (error) {
    meeting.fail(error)
    throw error
  }
  meeting.publish(built)
  return built
}
