/**
 * What the start-up entry runs, decided from the config alone (no side effects), so the
 * choice of litestream binary, its environment and its arguments can be read in one place.
 */
import { existsSync } from 'node:fs'
import { createServer } from 'node:net'
import { dirname, join, resolve } from 'node:path'
import { ConfigError, type Config } from '../config.ts'

const ROOT = join(import.meta.dir, '..', '..')
const LITESTREAM_CONFIG = join(ROOT, 'litestream.yml')
/** What the entry runs as the server: SERVER_SCRIPT (the image's production bundle) or the source. */
export const serverScript = (config: Config): string =>
  config.serverScript ? resolve(ROOT, config.serverScript) : join(ROOT, 'src', 'index.ts')

interface ReplicationPlan {
  binary: string
  databasePath: string
  /** The environment litestream and the server both see; litestream.yml expands it. */
  env: Record<string, string | undefined>
  restoreArgs: string[]
  replicateArgs: string[]
}

/** Single quotes for litestream's `-exec`, which splits its argument like a shell. */
const shellQuote = (word: string) => `'${word.replaceAll("'", `'\\''`)}'`

/**
 * The bundled binary first. Only the linux-x64 package exists on the registry we use
 * (it is an optional dependency so installs elsewhere do not fail); other machines fall
 * back to a `litestream` on PATH. Never the package's node wrapper: it swallows exit codes.
 */
function litestreamBinary(config: Config): string {
  if (config.litestreamBin) return config.litestreamBin
  try {
    const manifest = Bun.resolveSync('@flydotio/litestream-linux-x64/package.json', ROOT)
    const bundled = join(dirname(manifest), 'litestream')
    if (existsSync(bundled)) return bundled
  } catch {
    // not installed on this platform
  }
  return Bun.which('litestream') ?? 'litestream'
}

/**
 * null when LITESTREAM_REPLICA=none: the server then runs without litestream. `metricsPort`
 * is where litestream serves its metrics on the loopback address (the server reads the
 * replica's position there); the entry picks a free one when LITESTREAM_METRICS_PORT is 0.
 */
export function replicationPlan(
  config: Config,
  env: Record<string, string | undefined>,
  metricsPort = config.litestreamMetricsPort,
): ReplicationPlan | null {
  if (config.litestreamReplica === 'none') return null
  const databasePath = resolve(config.databasePath)
  let replicaPath = config.litestreamReplicaPath
  if (config.litestreamReplica === 'file') {
    replicaPath = resolve(replicaPath)
    if (replicaPath === dirname(databasePath))
      throw new ConfigError('LITESTREAM_REPLICA_PATH', 'must not be the database folder')
  } else {
    // Without a bucket litestream would fail later with a less helpful message.
    if (!env.BUCKET_NAME)
      throw new ConfigError('BUCKET_NAME', 'required when LITESTREAM_REPLICA=s3 (`fly storage create` sets it)')
    replicaPath ||= 'pigeonhole'
  }
  const server = `${shellQuote(process.execPath)} ${shellQuote(serverScript(config))}`
  return {
    binary: litestreamBinary(config),
    databasePath,
    env: {
      ...env,
      DATABASE_PATH: databasePath,
      LITESTREAM_REPLICA: config.litestreamReplica,
      LITESTREAM_REPLICA_PATH: replicaPath,
      // Empty turns litestream's listener off (port 0 cannot be told to the server).
      LITESTREAM_METRICS_ADDR: metricsPort > 0 ? `127.0.0.1:${metricsPort}` : '',
      LITESTREAM_METRICS_PORT: String(metricsPort),
    },
    // Both flags make restore a no-op (exit 0) for an existing database or an empty replica.
    restoreArgs: [
      'restore',
      '-config',
      LITESTREAM_CONFIG,
      '-if-db-not-exists',
      '-if-replica-exists',
      '-o',
      databasePath,
      databasePath,
    ],
    // With -exec, litestream forwards SIGTERM/SIGINT to the server and syncs once more after it exits.
    replicateArgs: ['replicate', '-config', LITESTREAM_CONFIG, '-exec', server],
  }
}

/** A loopback port free right now: asked of the OS (port 0), then released for litestream. */
export async function freeLoopbackPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', resolve)
  })
  const { port } = server.address() as { port: number }
  await new Promise((resolve) => server.close(resolve))
  return port
}
