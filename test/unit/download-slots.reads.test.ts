/**
 * The download slots' two bounds: an organisation's downloads at once (429 beyond, freed
 * once), and the machine's reads of stored bytes at once, whichever organisations ask, taken
 * in the order asked and passed on when a read fails.
 */
import { expect, test } from 'bun:test'
import { CONSOLE_WAIT_MS, consoleWaitMs, DownloadSlots } from '../../src/core/attachments/download-slots.ts'
import { DomainError } from '../../src/core/common/errors.ts'

/** A read that runs until `finish()`, noting when it began. */
function heldRead(began: string[], name: string) {
  let finish!: (value: string) => void
  let fail!: (error: Error) => void
  const done = new Promise<string>((resolve, reject) => {
    finish = resolve
    fail = reject
  })
  const read = () => {
    began.push(name)
    return done
  }
  return { read, finish: () => finish(name), fail: () => fail(new Error(`${name} failed`)) }
}

test("an organisation's downloads beyond its limit are refused with 429 and Retry-After: 1; a release frees one slot once", () => {
  const slots = new DownloadSlots(2, 2)
  const first = slots.acquire('org_a')
  slots.acquire('org_a')
  const refusal = (() => {
    try {
      slots.acquire('org_a')
    } catch (error) {
      return error
    }
  })() as DomainError
  expect(refusal).toBeInstanceOf(DomainError)
  expect([refusal.code, refusal.facts.retryAfterSeconds]).toEqual(['rate_limit_exceeded', 1])
  slots.acquire('org_b') // another organisation's slots are its own
  first()
  first() // twice is harmless: one slot back, not two
  slots.acquire('org_a')
  expect(() => slots.acquire('org_a')).toThrow(DomainError)
  expect(slots.total()).toBe(3)
})

test('at most the machine’s reads run at once, across organisations, in the order asked; a failed read passes its turn on', async () => {
  const slots = new DownloadSlots(4, 2)
  const began: string[] = []
  const reads = ['a', 'b', 'c', 'd', 'e'].map((name) => heldRead(began, name))
  const results = reads.map((r) => slots.reading(r.read))
  await Bun.sleep(0)
  expect(began).toEqual(['a', 'b'])
  reads[1]!.fail()
  expect(await results[1]!.catch((error: Error) => error.message)).toBe('b failed')
  expect(began).toEqual(['a', 'b', 'c'])
  reads[0]!.finish()
  expect(await results[0]).toBe('a')
  expect(began).toEqual(['a', 'b', 'c', 'd'])
  reads[2]!.finish()
  reads[3]!.finish()
  await Promise.all([results[2], results[3]])
  expect(began).toEqual(['a', 'b', 'c', 'd', 'e'])
  reads[4]!.finish()
  expect(await results[4]).toBe('e')
  // Every turn was given back: two run at once again at once.
  const again = ['f', 'g'].map((name) => heldRead(began, name))
  const more = again.map((r) => slots.reading(r.read))
  await Bun.sleep(0)
  expect(began.slice(-2)).toEqual(['f', 'g'])
  for (const r of again) r.finish()
  await Promise.all(more)
})

test('a download waiting its turn gets the next slot freed, in the order asked; past its wait, 429', async () => {
  const slots = new DownloadSlots(1, 2)
  const first = slots.acquire('org_a')
  const order: string[] = []
  const inTurn = (name: string) =>
    slots.acquireInTurn('org_a', 5_000).then((release) => {
      order.push(name)
      return release
    })
  const second = inTurn('second')
  const third = inTurn('third')
  expect(slots.waiting()).toBe(2)
  expect(() => slots.acquire('org_a')).toThrow(DomainError) // the API does not queue
  first()
  const releaseSecond = await second
  expect(order).toEqual(['second'])
  expect(slots.total()).toBe(1) // the slot passed on: still one held
  releaseSecond()
  ;(await third)()
  expect(order).toEqual(['second', 'third'])
  expect([slots.total(), slots.waiting()]).toEqual([0, 0])

  // Nobody frees the slot: the waiting download is refused once its wait is over, and leaves the queue.
  const holding = slots.acquire('org_a')
  const late = await slots.acquireInTurn('org_a', 20).catch((error: DomainError) => error)
  expect(late).toBeInstanceOf(DomainError)
  expect([(late as DomainError).code, (late as DomainError).facts.retryAfterSeconds]).toEqual([
    'rate_limit_exceeded',
    1,
  ])
  expect(slots.waiting()).toBe(0)
  holding()
  expect(slots.total()).toBe(0)
})

test("a console download's wait ends a second before the HTTP idle timeout would cut its connection", () => {
  expect(consoleWaitMs(255)).toBe(CONSOLE_WAIT_MS)
  expect(consoleWaitMs(5)).toBe(4_000)
  expect(consoleWaitMs(1)).toBe(0) // no time to wait: 429 at once, as the API answers
})
