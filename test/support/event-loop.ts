/**
 * Measures, inside the test process, how long the event loop was held: the server under
 * test runs in this same process (startApp), so a timer that fires late here fired late
 * for every HTTP request and SMTP session too.
 */
export interface LoopStall {
  /** Longest time, in ms, a timer fired late: what a waiting request felt. */
  delayMs: number
  /**
   * Most CPU time, in ms, the main thread used between two timer ticks: the work that held
   * the loop, without the time a loaded machine kept the process off a core.
   */
  cpuMs: number
}

export interface LoopWatch {
  stop(): LoopStall
}

const threadCpuMs = () => {
  const { user, system } = process.threadCpuUsage()
  return (user + system) / 1000
}

export function watchEventLoop(intervalMs = 2): LoopWatch {
  let last = performance.now()
  let lastCpu = threadCpuMs()
  const stall: LoopStall = { delayMs: 0, cpuMs: 0 }
  const tick = () => {
    const now = performance.now()
    const cpu = threadCpuMs()
    stall.delayMs = Math.max(stall.delayMs, now - last - intervalMs)
    stall.cpuMs = Math.max(stall.cpuMs, cpu - lastCpu)
    last = now
    lastCpu = cpu
  }
  const timer = setInterval(tick, intervalMs)
  return {
    stop() {
      clearInterval(timer)
      tick()
      return stall
    },
  }
}

/** Asks GET /health one request after another until stopped; the slowest answer, in ms. */
export function pollHealth(baseUrl: string): { stop(): Promise<number> } {
  let running = true
  let slowest = 0
  const loop = (async () => {
    while (running) {
      const started = performance.now()
      const response = await fetch(`${baseUrl}/health`)
      await response.arrayBuffer()
      if (response.status !== 200) throw new Error(`/health answered ${response.status}`)
      slowest = Math.max(slowest, performance.now() - started)
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
  })()
  return {
    async stop() {
      running = false
      await loop
      return slowest
    },
  }
}
