/**
 * The collection after a burst: one full collection once the main thread has been quiet for
 * an interval after doing work; none while it keeps working, none while it stays idle.
 * Short intervals stand in for the server's seconds.
 */
import { expect, setDefaultTimeout, test } from 'bun:test'
import { collectWhenQuiet } from '../../src/quiet-collection.ts'
import { until } from '../support/wait.ts'

// 360 ms of this thread's CPU takes seconds of wall time when other work holds the cores; the
// waits below are deadlines for a hang, and bun's 5 s default must not cut them short.
setDefaultTimeout(30_000)

const threadCpuMs = () => {
  const { user, system } = process.threadCpuUsage()
  return (user + system) / 1000
}

/**
 * Keeps the main thread busy for `ms` of its own CPU time. Not wall time: on a busy machine
 * a wall-clock spin gets a fraction of a core, and the work it stands for would not count.
 */
function spin(ms: number): void {
  const end = threadCpuMs() + ms
  while (threadCpuMs() < end) {
    // busy
  }
}

test('one collection when the main thread goes quiet after work, none while it works or idles', async () => {
  const quiet = collectWhenQuiet({ intervalMs: 50, quietCpuMs: 10, workCpuMs: 60 })
  try {
    await Bun.sleep(250) // proves nothing happens: five idle intervals without a collection
    expect(quiet.collections).toBe(0) // idle from the start: nothing to return

    // Work in every interval, 360 ms of CPU in all: no collection in the middle of it.
    for (let i = 0; i < 12; i++) {
      spin(30)
      await Bun.sleep(15) // the scenario: short pauses between bursts of work
    }
    expect(quiet.collections).toBe(0)

    await until(() => quiet.collections > 0, 'a collection after the work', { timeoutMs: 10_000 }) // a hang's deadline, as before the shared until()
    expect(quiet.collections).toBe(1) // quiet after work

    await Bun.sleep(250) // proves nothing happens: no second collection while idle
    expect(quiet.collections).toBe(1) // and quiet it stays
  } finally {
    quiet.stop()
  }
})
