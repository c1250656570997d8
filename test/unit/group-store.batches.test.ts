/**
 * PostgreSQL mode's group commit (src/storage/postgres/group-store.ts), without a database: a
 * quiet machine's job runs at once and alone; jobs queued while the transactions in flight run
 * share the next one; a batch that fails runs each of its jobs again alone, so only the job
 * that fails alone rejects. The storing transaction it drives is held to the storage contract
 * on a real server (test/contract/inbound.contract.test.ts).
 */
import { expect, test } from 'bun:test'
import { groupStore, MAX_BATCH_JOBS, MAX_BATCHES_IN_FLIGHT } from '../../src/storage/postgres/group-store.ts'

/** A transaction runner whose commits the test releases, recording every batch it was given. */
function heldRuns(fails: (inputs: string[]) => boolean = () => false) {
  const batches: string[][] = []
  const commits: (() => void)[] = []
  const run = (inputs: string[]) => {
    batches.push(inputs)
    return new Promise<string[]>((resolve, reject) => {
      commits.push(() =>
        fails(inputs)
          ? reject(new Error(`rolled back: ${inputs.join(',')}`))
          : resolve(inputs.map((input) => `stored ${input}`)),
      )
    })
  }
  const commitAll = async () => {
    while (commits.length > 0) {
      for (const commit of commits.splice(0)) commit()
      await Bun.sleep(0)
    }
  }
  const commitFirst = () => commits.shift()?.()
  return { batches, run, commitAll, commitFirst }
}

test('a quiet machine stores at once, alone; what queues meanwhile shares the next transaction, and each caller gets its own answer', async () => {
  const runs = heldRuns()
  const store = groupStore(runs.run)
  const first = store('a')
  expect(runs.batches).toEqual([['a']])
  const rest = ['b', 'c', 'd', 'e', 'f'].map(store)
  // A second transaction may start beside the first; the others wait for a free one.
  expect(runs.batches).toHaveLength(MAX_BATCHES_IN_FLIGHT)
  await runs.commitAll()
  expect(await first).toBe('stored a')
  expect(await Promise.all(rest)).toEqual(['stored b', 'stored c', 'stored d', 'stored e', 'stored f'])
  expect(runs.batches).toEqual([['a'], ['b'], ['c', 'd', 'e', 'f']])
})

test('a batch holds at most MAX_BATCH_JOBS jobs', async () => {
  const runs = heldRuns()
  const store = groupStore(runs.run)
  const all = Array.from({ length: MAX_BATCHES_IN_FLIGHT + MAX_BATCH_JOBS + 5 }, (_, i) => store(`m${i}`))
  await runs.commitAll()
  await Promise.all(all)
  expect(Math.max(...runs.batches.map((batch) => batch.length))).toBe(MAX_BATCH_JOBS)
  expect(runs.batches.flat()).toHaveLength(all.length)
})

test('a batch that fails runs each job again alone: only the job that fails alone rejects', async () => {
  const runs = heldRuns((inputs) => inputs.includes('bad'))
  const store = groupStore(runs.run)
  const first = [store('a'), store('b')] // the two transactions in flight
  const queued = ['c', 'bad', 'd'].map((input) =>
    store(input).then(
      (answer) => answer,
      (error: Error) => error.message,
    ),
  )
  await runs.commitAll()
  await Promise.all(first)
  expect(await Promise.all(queued)).toEqual(['stored c', 'rolled back: bad', 'stored d'])
  expect(runs.batches.slice(2)).toEqual([['c', 'bad', 'd'], ['c'], ['bad'], ['d']])
})

test('a batch that fails for the database as a whole fails every job at once, without running each again', async () => {
  const runs = heldRuns((inputs) => inputs.length > 1)
  const store = groupStore(runs.run, () => false)
  const first = [store('a'), store('b')]
  const queued = ['c', 'd'].map((input) =>
    store(input).then(
      (answer) => answer,
      (error: Error) => error.message,
    ),
  )
  await runs.commitAll()
  await Promise.all(first)
  expect(await Promise.all(queued)).toEqual(['rolled back: c,d', 'rolled back: c,d'])
  expect(runs.batches.slice(2)).toEqual([['c', 'd']])
})

test('two transactions in flight never share a key: a job whose key is in flight waits for that batch, and goes in the next with the others queued', async () => {
  const runs = heldRuns()
  const orgOf = (input: string) => [input.split(':')[0]!]
  const store = groupStore(runs.run, () => true, orgOf)
  const answers = ['a:1', 'a:2', 'a:3', 'b:1', 'a:4', 'b:2'].map(store)
  // a:1 starts alone; a:2 and a:3 would wait on its counter rows, so the second transaction
  // takes b:1 only, and everything else waits for those two.
  expect(runs.batches).toEqual([['a:1'], ['b:1']])
  // a's batch commits while b's runs: the next takes every a queued, and b:2 still waits.
  runs.commitFirst()
  await Bun.sleep(0)
  expect(runs.batches).toEqual([['a:1'], ['b:1'], ['a:2', 'a:3', 'a:4']])
  await runs.commitAll()
  expect(await Promise.all(answers)).toEqual(['a:1', 'a:2', 'a:3', 'b:1', 'a:4', 'b:2'].map((i) => `stored ${i}`))
  expect(runs.batches).toEqual([['a:1'], ['b:1'], ['a:2', 'a:3', 'a:4'], ['b:2']])
})
