/**
 * What the replica holds, and what Litestream keeps on the volume meanwhile.
 *
 * Lag: Litestream 0.3 copies the database's WAL into its own "shadow WAL" beside the database
 * (`.<name>-litestream/generations/<generation>/wal/<index>.wal`), then ships that to the
 * replica. Once a second the monitor reads the shadow WAL's position from the disk and the
 * position the replica has confirmed from Litestream's metrics listener
 * (`litestream_replica_wal_index` and `_offset`, set only after a successful upload). Every
 * local position not yet confirmed is remembered with the time it was first seen; the lag is
 * the age of the oldest one, and 0 when the replica holds everything. So an idle server is
 * not "behind", while a replica that stopped taking writes shows as a growing lag (the
 * readiness heartbeat writes every few seconds, so even an idle server notices).
 *
 * Local files: while the replica cannot be reached Litestream keeps every shadow WAL file,
 * so the folder grows with every write, fast (figure in bench/README.md). Its size is a
 * metric, the free-space guard reports it, and a warning line is
 * logged when it passes LITESTREAM_LOCAL_WARN.
 */
import { type Dirent, readdirSync, readFileSync, statfsSync, statSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import type { Logger } from '../../log.ts'
import { type MinFree, parseMinFree } from './disk-guard.ts'

export interface WalPosition {
  generation: string
  index: number
  offset: number
}

const WAL_FILE = /^([0-9a-f]{8})\.wal$/
const WAL_HEADER_BYTES = 32
const FRAME_HEADER_BYTES = 24
/** Lag is measured this often; Litestream itself syncs every second (litestream.yml). */
const REPLICATION_SAMPLE_MS = 1_000
const FETCH_TIMEOUT_MS = 900
const MAX_PENDING = 3_600

/** The folder Litestream 0.3 keeps beside the database. */
export const litestreamDir = (databasePath: string) =>
  join(dirname(databasePath), `.${basename(databasePath)}-litestream`)

/** Bytes of every file under Litestream's folder (0 when there is none). */
export function litestreamLocalBytes(databasePath: string): number {
  let total = 0
  const walk = (dir: string) => {
    let entries: Dirent[]
    try {
      entries = readdirSync(dir, { withFileTypes: true })
    } catch {
      return // not there (yet), or removed while we looked
    }
    for (const entry of entries) {
      const path = join(dir, entry.name)
      if (entry.isDirectory()) walk(path)
      else {
        try {
          total += statSync(path).size
        } catch {
          // removed by Litestream's clean-up between the listing and the stat
        }
      }
    }
  }
  walk(litestreamDir(databasePath))
  return total
}

/** The end of the shadow WAL, framed like Litestream's own position (whole frames only). */
export function shadowWalPosition(databasePath: string, pageSize: number): WalPosition | null {
  const dir = litestreamDir(databasePath)
  try {
    const generation = readFileSync(join(dir, 'generation'), 'utf8').trim()
    if (!generation) return null
    const walDir = join(dir, 'generations', generation, 'wal')
    let index = -1
    for (const name of readdirSync(walDir)) {
      const match = WAL_FILE.exec(name)
      if (match) index = Math.max(index, Number.parseInt(match[1]!, 16))
    }
    if (index < 0) return { generation, index: 0, offset: 0 }
    const size = statSync(join(walDir, `${index.toString(16).padStart(8, '0')}.wal`)).size
    const frame = pageSize + FRAME_HEADER_BYTES
    const offset =
      size < WAL_HEADER_BYTES ? 0 : Math.floor((size - WAL_HEADER_BYTES) / frame) * frame + WAL_HEADER_BYTES
    return { generation, index, offset }
  } catch {
    return null // no generation yet: Litestream has not started on this file
  }
}

/** The replica's confirmed position from Litestream's Prometheus text (lowest over replicas). */
export function replicaPosition(metricsText: string, databasePath: string): { index: number; offset: number } | null {
  const lines = metricsText.split('\n')
  // Litestream names the database as it resolved the path; when that differs from ours (a
  // symlink) and it replicates one database only, that one is ours.
  const ours = lines.some(
    (line) => line.startsWith('litestream_replica_wal_index{') && line.includes(`db="${databasePath}"`),
  )
  const read = (name: string) => {
    const values: number[] = []
    for (const line of lines) {
      if (!line.startsWith(`${name}{`)) continue
      if (ours && !line.includes(`db="${databasePath}"`)) continue
      values.push(Number(line.slice(line.lastIndexOf(' ') + 1)))
    }
    return values
  }
  const indexes = read('litestream_replica_wal_index')
  const offsets = read('litestream_replica_wal_offset')
  if (indexes.length === 0 || offsets.length !== indexes.length) return null
  let lowest = 0
  for (let i = 1; i < indexes.length; i++)
    if (indexes[i]! < indexes[lowest]! || (indexes[i] === indexes[lowest] && offsets[i]! < offsets[lowest]!)) lowest = i
  return { index: indexes[lowest]!, offset: offsets[lowest]! }
}

const atOrBefore = (a: WalPosition, b: { index: number; offset: number }) =>
  a.index < b.index || (a.index === b.index && a.offset <= b.offset)

interface Options {
  databasePath: string
  pageSize: number
  /** Litestream's metrics listener; null when none is known (then nothing is ever confirmed). */
  metricsUrl: string | null
  maxLagSeconds: number
  localWarn: MinFree
  logger: Logger
  /** Milliseconds on a monotonic clock (tests pass their own). */
  now?: () => number
}

export class ReplicationMonitor {
  /** Local positions not yet confirmed by the replica, oldest first, each with when it was first seen. */
  private pending: Array<{ at: number; position: WalPosition }> = []
  private lagging = false
  private localLarge = false
  private localBytes_ = 0
  private fetchFailing = false
  private timer: ReturnType<typeof setInterval> | undefined
  private sampling: Promise<void> | null = null
  /** The generation of the last local position seen, and the replica's last answer. */
  private generation: string | null = null
  private lastReplica: { index: number; offset: number } | null = null
  /**
   * Litestream's gauges carry no generation and are set only after an upload, so right after
   * a new generation begins they still hold the old one's position, which would "confirm" the
   * new generation's lower positions. That answer confirms nothing until the gauges move.
   */
  private staleReplica: { index: number; offset: number } | null = null
  /** Last successful read of Litestream's metrics (start counts as one: it needs a moment). */
  private lastReadAt: number
  private readonly now: () => number

  constructor(private readonly options: Options) {
    this.now = options.now ?? (() => performance.now())
    this.lastReadAt = this.now()
  }

  /** Seconds the oldest write not yet in the replica has waited; 0 when it holds everything. */
  lagSeconds(now = this.now()): number {
    const oldest = this.pending[0]
    return oldest ? Math.max(0, (now - oldest.at) / 1000) : 0
  }

  /**
   * True while the lag is within REPLICATION_MAX_LAG_SECONDS and Litestream's listener has
   * answered within that time (a Litestream that hangs or died confirms nothing, but would
   * also stop moving the shadow WAL that the lag is measured against).
   */
  current(now = this.now()): boolean {
    const maxMs = this.options.maxLagSeconds * 1000
    const heard = this.options.metricsUrl === null || now - this.lastReadAt <= maxMs
    return heard && this.lagSeconds(now) <= this.options.maxLagSeconds
  }

  /** Bytes of Litestream's files beside the database, as of the last sample. */
  localBytes(): number {
    return this.localBytes_
  }

  start(): () => void {
    this.timer = setInterval(() => void this.sample(), REPLICATION_SAMPLE_MS)
    this.timer.unref?.()
    void this.sample()
    return () => clearInterval(this.timer)
  }

  /** One measurement; concurrent calls share it. */
  sample(): Promise<void> {
    this.sampling ??= this.measure().finally(() => {
      this.sampling = null
    })
    return this.sampling
  }

  private async measure(): Promise<void> {
    const now = this.now()
    const { databasePath, pageSize } = this.options
    this.checkLocalFiles()
    const local = shadowWalPosition(databasePath, pageSize)
    if (local) {
      if (this.generation !== null && this.generation !== local.generation) this.staleReplica = this.lastReplica
      this.generation = local.generation
      const last = this.pending.at(-1)?.position
      // A new generation (Litestream restarted, or lost its place) starts the count afresh.
      if (this.pending.length > 0 && this.pending[0]!.position.generation !== local.generation) this.pending = []
      const moved =
        !last || last.index !== local.index || last.offset !== local.offset || last.generation !== local.generation
      // Bounded memory over a long outage: the newest entry then moves forward but keeps its
      // time, which can only overstate the lag after a partial catch-up, never hide it.
      if (moved && this.pending.length >= MAX_PENDING) this.pending.at(-1)!.position = local
      else if (moved) this.pending.push({ at: now, position: local })
    }
    let replica = await this.fetchReplicaPosition()
    if (replica) this.lastReplica = replica
    if (replica && this.staleReplica) {
      if (replica.index === this.staleReplica.index && replica.offset === this.staleReplica.offset) replica = null
      else this.staleReplica = null
    }
    if (replica) this.pending = this.pending.filter((sample) => !atOrBefore(sample.position, replica))
    this.reportLag()
  }

  private async fetchReplicaPosition(): Promise<{ index: number; offset: number } | null> {
    if (!this.options.metricsUrl) return null
    try {
      const response = await fetch(this.options.metricsUrl, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) })
      if (!response.ok) throw new Error(`status ${response.status}`)
      const position = replicaPosition(await response.text(), this.options.databasePath)
      this.lastReadAt = this.now()
      if (this.fetchFailing) this.options.logger.info('litestream_metrics_readable', { url: this.options.metricsUrl })
      this.fetchFailing = false
      return position
    } catch (error) {
      // Unread, nothing is confirmed and the lag grows: the safe side.
      if (!this.fetchFailing)
        this.options.logger.warn('litestream_metrics_unreadable', {
          url: this.options.metricsUrl,
          error: error instanceof Error ? error.message : String(error),
        })
      this.fetchFailing = true
      return null
    }
  }

  private reportLag(): void {
    const lag = this.lagSeconds()
    const over = !this.current()
    if (over && !this.lagging)
      this.options.logger.warn('replication_lagging', {
        lag_seconds: Math.round(lag),
        max_lag_seconds: this.options.maxLagSeconds,
        litestream_local_bytes: this.localBytes_,
      })
    if (!over && this.lagging)
      this.options.logger.warn('replication_caught_up', {
        lag_seconds: Math.round(lag),
        litestream_local_bytes: this.localBytes_,
      })
    this.lagging = over
  }

  private checkLocalFiles(): void {
    const { databasePath, localWarn, logger } = this.options
    this.localBytes_ = litestreamLocalBytes(databasePath)
    const threshold = warnBytes(localWarn, databasePath)
    if (threshold === 0) return
    if (!this.localLarge && this.localBytes_ > threshold) {
      this.localLarge = true
      logger.warn('litestream_local_files_large', {
        bytes: this.localBytes_,
        warn_bytes: threshold,
        lag_seconds: Math.round(this.lagSeconds()),
      })
    } else if (this.localLarge && this.localBytes_ < threshold / 2) {
      // Half way down before the all-clear, so a size hovering at the line logs nothing more.
      this.localLarge = false
      logger.info('litestream_local_files_normal', { bytes: this.localBytes_, warn_bytes: threshold })
    }
  }
}

function warnBytes(limit: MinFree, databasePath: string): number {
  if ('bytes' in limit) return limit.bytes
  const volume = statfsSync(dirname(databasePath))
  return Math.ceil((volume.blocks * volume.bsize * limit.percent) / 100)
}

export const parseLocalWarn = (text: string): MinFree => parseMinFree(text) ?? { bytes: 0 }
