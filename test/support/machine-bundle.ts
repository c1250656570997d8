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
import { existsSync, mkdirSync, readFileSync, renameSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { removeAfter, runOwner } from './run-owner.ts'

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
  const owner = runOwner()
  const folder = join(tmpdir(), `pigeonhole-machine-bundle-${owner.key}`)
  const built = join(folder, 'dist', 'pg-machine.js')
  const ready = join(folder, 'ready')
  const failed = join(folder, 'failed')
  let first = false
  try {
    mkdirSync(folder)
    first = true
  } catch {}
  if (first) {
    removeAfter(owner.pid, [folder])
    try {
      symlinkSync(join(ROOT, 'drizzle'), join(folder, 'drizzle'))
      symlinkSync(join(ROOT, 'node_modules'), join(folder, 'node_modules'))
      // Not minified: a failing test's machine output keeps readable names and stack frames.
      const result = await Bun.build({
        entrypoints: ENTRY_POINTS,
        target: 'bun',
        outdir: join(folder, 'dist'),
        naming: '[name].[ext]',
      })
      if (!result.success) throw new Error(result.logs.map(String).join('\n'))
    } catch (error) {
      // The other processes of the run fail at once with the same cause instead of waiting.
      writeFileSync(failed, String(error))
      throw error
    }
    writeFileSync(`${ready}.tmp`, '')
    renameSync(`${ready}.tmp`, ready)
    return built
  }
  // A build takes a fraction of a second, a few on a busy machine; a minute means it failed.
  const deadline = Date.now() + 60_000
  while (!existsSync(ready)) {
    if (existsSync(failed)) throw new Error(`the run's machine bundle was not built: ${readFileSync(failed, 'utf8')}`)
    if (Date.now() > deadline) throw new Error(`the run's machine bundle was not built within a minute (${folder})`)
    await Bun.sleep(50)
  }
  return built
}
