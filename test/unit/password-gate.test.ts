/** The password gate as a unit: at most its limit at once, a short queue in order, then refusals. */
import { expect, test } from 'bun:test'
import { Refusal } from '../../src/core/common/refusals.ts'
import {
  MAX_CONCURRENT_PASSWORD_WORK,
  MAX_QUEUED_PASSWORD_WORK,
  PasswordGate,
} from '../../src/core/users/password-gate.ts'

test('runs at most its limit at once, queues a few in order, refuses the rest at once with Retry-After 1', async () => {
  const gate = new PasswordGate()
  const releases: Array<() => void> = []
  const started: number[] = []
  let running = 0
  let most = 0
  const work = (i: number) => () =>
    new Promise<number>((resolve) => {
      started.push(i)
      running++
      most = Math.max(most, running)
      releases.push(() => {
        running--
        resolve(i)
      })
    })
  const admitted = MAX_CONCURRENT_PASSWORD_WORK + MAX_QUEUED_PASSWORD_WORK
  const outcomes = Array.from({ length: admitted + 3 }, (_, i) =>
    gate.run(work(i)).then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    ),
  )
  // Bun.sleep(0) here and below yields one turn of the event loop: the work the gate let in has started.
  await Bun.sleep(0)
  expect(started).toEqual([0, 1, 2, 3])
  const refused = (await Promise.all(outcomes.slice(admitted))) as Array<{ error: Refusal }>
  for (const { error } of refused) {
    expect(error).toBeInstanceOf(Refusal)
    expect(error.kind).toBe('throttled')
    expect(error.retryAfterSeconds).toBe(1)
  }
  while (releases.length > 0) {
    releases.shift()!()
    await Bun.sleep(0)
  }
  expect(await Promise.all(outcomes.slice(0, admitted))).toEqual(
    Array.from({ length: admitted }, (_, i) => ({ value: i })),
  )
  expect(started).toEqual(Array.from({ length: admitted }, (_, i) => i))
  expect(most).toBe(MAX_CONCURRENT_PASSWORD_WORK)
  expect(gate.inFlight).toBe(0)
})

test('a failing operation frees its slot for the next in the queue', async () => {
  const gate = new PasswordGate(1, 1)
  let fail!: (error: Error) => void
  const first = gate.run(() => new Promise<void>((_, reject) => (fail = reject)))
  const second = gate.run(async () => 'second')
  fail(new Error('boom'))
  await expect(first).rejects.toThrow('boom')
  expect(await second).toBe('second')
  expect(gate.inFlight).toBe(0)
})
