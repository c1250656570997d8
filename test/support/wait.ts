/**
 * Waiting in tests. A test that needs the server (or a child process, or a client) to reach a
 * state waits for that state with `until()`, never for a fixed time: a fixed sleep is either
 * too short on a busy machine or wasted on an idle one.
 *
 * A fixed sleep stays only where it is the point of the test, and then says so beside it:
 * - it proves that nothing happens (a poll not answered, a counter that stays still): the
 *   sleep is the window in which the forbidden thing would have shown;
 * - it is part of the scenario (a client pacing its commands, a server kept away for a while);
 * - `Bun.sleep(0)` yields one turn of the event loop, so callbacks already queued have run.
 */

export interface UntilOptions {
  /** Give up after this long: a deadline that only a hang or a broken rule reaches, not a speed bound. */
  timeoutMs?: number
  /** Pause between two checks; longer for a check that costs a request or a process. */
  intervalMs?: number
}

/**
 * Checks `condition` until it holds. After `timeoutMs` it fails with an error naming `what`,
 * so a broken rule cannot hang a test and the failure says what never happened.
 * A condition that throws fails the wait at once with its own error.
 */
export async function until(
  condition: () => boolean | Promise<boolean>,
  what: string,
  options: UntilOptions = {},
): Promise<void> {
  const { timeoutMs = 5_000, intervalMs = 10 } = options
  const deadline = performance.now() + timeoutMs
  for (;;) {
    if (await condition()) return
    if (performance.now() > deadline) throw new Error(`gave up after ${timeoutMs} ms waiting for ${what}`)
    await Bun.sleep(intervalMs)
  }
}

/** Runs `work` and says how long it took, for a test that asserts a bound. */
export async function timed<T>(work: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const began = performance.now()
  const value = await work()
  return { value, ms: performance.now() - began }
}
