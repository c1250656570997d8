/**
 * Event-loop stalls of this process (where the test server runs), measured while a test waits
 * on the server. A timer ticks every millisecond; a late tick means the loop was busy, or the
 * thread was not scheduled at all. On a shared machine the second is common and is not the
 * loop's doing, so each gap counts only as far as this thread (the event loop's, not a worker's)
 * ran on a CPU during it: an upper bound of the blocking work, insensitive to other processes.
 * Time the loop spends waiting in a blocking system call (an fsync) is not counted.
 */
const cpuMs = (): number => {
  const { user, system } = process.threadCpuUsage()
  return (user + system) / 1000
}

export interface StallProbe {
  /** Ends the probe; the worst stall in ms, and the wall-clock gap it was measured in. */
  stop(): { stalledMs: number; gapMs: number }
}

export function startStallProbe(): StallProbe {
  let wall = performance.now()
  let cpu = cpuMs()
  let worst = { stalledMs: 0, gapMs: 0 }
  const tick = (): void => {
    const nowWall = performance.now()
    const nowCpu = cpuMs()
    const gapMs = nowWall - wall
    const stalledMs = Math.min(gapMs, nowCpu - cpu)
    if (stalledMs > worst.stalledMs) worst = { stalledMs, gapMs }
    wall = nowWall
    cpu = nowCpu
  }
  const timer = setInterval(tick, 1)
  return {
    stop() {
      tick()
      clearInterval(timer)
      return worst
    },
  }
}
