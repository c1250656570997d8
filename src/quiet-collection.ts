/**
 * After a burst of work (a CI run's mail, a wave of long polls) the heap keeps its garbage
 * until enough new allocation makes the engine collect, so a process that goes quiet holds
 * on to memory it no longer uses. One full collection once the main thread has been nearly
 * idle for an interval, after it did some work, returns that memory (figures in
 * bench/README.md), and costs nothing while the process stays busy or stays idle.
 */
export interface QuietCollection {
  /** Full collections made so far (for tests). */
  readonly collections: number
  stop(): void
}

export interface QuietCollectionOptions {
  /** How often the main thread's CPU time is read. */
  intervalMs: number
  /** An interval with less CPU time than this counts as quiet. */
  quietCpuMs: number
  /** CPU time of work since the last collection that makes the next quiet interval collect. */
  workCpuMs: number
}

const DEFAULTS: QuietCollectionOptions = { intervalMs: 2_000, quietCpuMs: 20, workCpuMs: 200 }

const threadCpuMs = () => {
  const { user, system } = process.threadCpuUsage()
  return (user + system) / 1000
}

export function collectWhenQuiet(options: QuietCollectionOptions = DEFAULTS): QuietCollection {
  let collections = 0
  let last = threadCpuMs()
  let workSinceCollection = 0
  const timer = setInterval(() => {
    const now = threadCpuMs()
    const used = now - last
    last = now
    if (used >= options.quietCpuMs) {
      workSinceCollection += used
      return
    }
    if (workSinceCollection < options.workCpuMs) return
    workSinceCollection = 0
    collections++
    Bun.gc(true)
    last = threadCpuMs() // the collection is not work to collect after
  }, options.intervalMs)
  timer.unref?.()
  return {
    get collections() {
      return collections
    },
    stop: () => clearInterval(timer),
  }
}

let shared: { servers: number; collection: QuietCollection } | undefined

/**
 * One collector per process however many servers it runs (the test suite runs many in
 * one process, where each would otherwise collect the same heap). Returns the leave function.
 */
export function joinQuietCollection(): () => void {
  shared ??= { servers: 0, collection: collectWhenQuiet() }
  shared.servers++
  let left = false
  return () => {
    if (left || !shared) return
    left = true
    if (--shared.servers > 0) return
    shared.collection.stop()
    shared = undefined
  }
}
