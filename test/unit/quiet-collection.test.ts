/**
 * The collection after a burst: one full collection once the main thread has been quiet for
 * an interval after doing work; none while it keeps working, none while it stays idle.
 * Short intervals stand in for the server's seconds.
 */
import { expect, test } from 'bun:test'
import { collectWhenQuiet } from '../../src/quiet-collection.ts'

/** Keeps the main thread busy for `ms` of wall time. */
function spin(ms: number): void {
  const until = performance.now() + ms
  while (performance.now() < until) {
    // busy
  }
}

test('one collection when the main thread goes quiet after work, none while it works or idles', async () => {
  const quiet = collectWhenQuiet({ intervalMs: 50, quietCpuMs: 10, workCpuMs: 60 })
  try {
    await Bun.sleep(250)
    expect(quiet.collections).toBe(0) // idle from the start: nothing to return

    // Work in every interval for half a second: no collection in the middle of it.
    const until = performance.now() + 500
    while (performance.now() < until) {
      spin(30)
      await Bun.sleep(15)
    }
    expect(quiet.collections).toBe(0)

    await Bun.sleep(200)
    expect(quiet.collections).toBe(1) // quiet after work

    await Bun.sleep(250)
    expect(quiet.collections).toBe(1) // and quiet it stays
  } finally {
    quiet.stop()
  }
})
