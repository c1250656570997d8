/**
 * Fly mounts a volume owned by root whatever the image's USER says, so the image starts
 * the entry as root; it hands the folders it writes to RUN_AS (uid:gid) and runs
 * litestream and the server as that user. Started as any other user, or without RUN_AS,
 * it only creates the folders.
 */
import { mkdirSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import type { Config } from '../config.ts'

interface RunAs {
  uid: number
  gid: number
}

export function prepareFolders(config: Config): RunAs | undefined {
  const folders = [dirname(resolve(config.databasePath))]
  if (config.litestreamReplica === 'file') folders.push(resolve(config.litestreamReplicaPath))
  for (const folder of folders) mkdirSync(folder, { recursive: true })
  if (!config.runAs || process.getuid?.() !== 0) return undefined
  const [uid, gid] = config.runAs.split(':').map(Number) as [number, number]
  // Recursive: litestream keeps its shadow WAL in a hidden folder beside the database,
  // and a CLI run as root may have left a root-owned -wal or -shm file behind.
  const chown = Bun.spawnSync(['chown', '-R', `${uid}:${gid}`, ...folders], { stdio: ['ignore', 'inherit', 'inherit'] })
  if (chown.exitCode !== 0) throw new Error(`chown of ${folders.join(', ')} failed`)
  return { uid, gid }
}
