/** The parts of the SMTP guards that need no listener: the budget, the collector and its spool, the parse gate, the address gate and its key. */
import { afterAll, describe, expect, test } from 'bun:test'
import { readdirSync, rmSync } from 'node:fs'
import { loadConfig } from '../../src/config.ts'
import { AddressGate } from '../../src/smtp/address-gate.ts'
import { clientKey } from '../../src/smtp/client-key.ts'
import { CollectionPacer } from '../../src/smtp/collection-pacer.ts'
import { DataBudget } from '../../src/smtp/data-budget.ts'
import { MessageCollector } from '../../src/smtp/message-collector.ts'
import { SmtpGuards } from '../../src/smtp/guards.ts'
import { ParseGate } from '../../src/smtp/parse-gate.ts'
import { createLogger } from '../../src/log.ts'
import { READING_SENDERS, Spool } from '../../src/storage/spool.ts'
import { scratchDir } from '../support/scratch.ts'
import { until } from '../support/wait.ts'

describe('clientKey', () => {
  test('IPv4 as is, IPv4-mapped IPv6 as IPv4, IPv6 by its /64 whatever its spelling', () => {
    expect(clientKey('203.0.113.7')).toBe('203.0.113.7')
    expect(clientKey('::ffff:203.0.113.7')).toBe('203.0.113.7')
    expect(clientKey('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2::/64')
    expect(clientKey('2001:0DB8:0001:0002:ffff:ffff:ffff:ffff')).toBe('2001:db8:1:2::/64')
    expect(clientKey('2001:db8::1')).toBe('2001:db8:0:0::/64')
    expect(clientKey('::1')).toBe('0:0:0:0::/64')
  })
})

describe('DataBudget', () => {
  test('an owner gets at most half; the whole is shared; giving back makes room', () => {
    const budget = new DataBudget(100)
    expect(budget.take('a', 50)).toBe(true)
    expect(budget.take('a', 1)).toBe(false)
    expect(budget.take('b', 50)).toBe(true)
    expect(budget.take('c', 1)).toBe(false)
    budget.give('a', 50)
    expect(budget.held).toBe(50)
    expect(budget.take('c', 50)).toBe(true)
  })
})

describe('MessageCollector', () => {
  const spools: Spool[] = []
  afterAll(() => {
    for (const spool of spools) rmSync(spool.dir, { recursive: true, force: true })
  })
  const newSpool = () => {
    const spool = new Spool(scratchDir('pigeonhole-spool-unit-'))
    spools.push(spool)
    return spool
  }
  const flow = () => {
    const calls: string[] = []
    return { calls, pause: () => calls.push('pause'), resume: () => calls.push('resume') }
  }
  const collect = async (collector: MessageCollector) => {
    const collected = await collector.finish()
    if (collected.kind !== 'complete') throw new Error(`expected complete, got ${collected.kind}`)
    return { ...collected, raw: await collected.load() }
  }

  test('a small message stays in memory, its bytes taken until release', async () => {
    const budget = new DataBudget(100)
    const spool = newSpool()
    const collector = new MessageCollector(budget, 'a', 40, spool, flow(), 20)
    expect(collector.add(Buffer.from('hello '))).toBeNull()
    expect(collector.add(Buffer.from('world'))).toBeNull()
    const { raw, spooled } = await collect(collector)
    expect(raw).toEqual(Buffer.from('hello world'))
    expect(spooled).toBe(false)
    expect(budget.held).toBe(11)
    expect(readdirSync(spool.dir)).toEqual([])
    collector.release()
    collector.release()
    expect(budget.held).toBe(0)
  })

  test('past the memory threshold the message moves to a spool file, which release deletes', async () => {
    const budget = new DataBudget(100)
    const spool = newSpool()
    const collector = new MessageCollector(budget, 'a', 1000, spool, flow(), 20)
    expect(collector.add(Buffer.from('0123456789'))).toBeNull()
    expect(budget.held).toBe(10)
    expect(collector.add(Buffer.from('abcdefghijklmnop'))).toBe('spooled')
    expect(budget.held).toBe(0) // the memory is given back as soon as the bytes are queued for the file
    expect(collector.add(Buffer.from('-tail'))).toBeNull()
    const { raw, spooled, size } = await collect(collector)
    expect(raw.toString()).toBe('0123456789abcdefghijklmnop-tail')
    expect([spooled, size]).toEqual([true, 31])
    expect(readdirSync(spool.dir)).toHaveLength(1)
    expect(spool.bytes).toBe(31)
    collector.release()
    await until(() => readdirSync(spool.dir).length === 0, 'the released spool file to go')
    expect(readdirSync(spool.dir)).toEqual([])
    expect(spool.bytes).toBe(0)
  })

  test('no room in the budget spools instead of refusing', async () => {
    const budget = new DataBudget(20)
    expect(budget.take('a', 10)).toBe(true)
    const collector = new MessageCollector(budget, 'a', 100, newSpool(), flow(), 50)
    expect(collector.add(Buffer.alloc(5, 1))).toBe('spooled')
    expect(budget.held).toBe(10)
    expect(collector.add(Buffer.alloc(5, 2))).toBeNull()
    expect((await collect(collector)).raw).toEqual(Buffer.concat([Buffer.alloc(5, 1), Buffer.alloc(5, 2)]))
    collector.release()
  })

  test('passing the limit drops and gives back at once, a spool file included; later bytes are only counted', async () => {
    const budget = new DataBudget(100)
    const spool = newSpool()
    const inMemory = new MessageCollector(budget, 'a', 10, spool, flow(), 50)
    expect(inMemory.add(Buffer.alloc(8))).toBeNull()
    expect(inMemory.add(Buffer.alloc(8))).toBe('too_large')
    expect(budget.held).toBe(0)
    expect(inMemory.add(Buffer.alloc(1000))).toBeNull()
    expect(await inMemory.finish()).toEqual({ kind: 'too_large', size: 1016 })

    const spooled = new MessageCollector(budget, 'a', 100, spool, flow(), 10)
    expect(spooled.add(Buffer.alloc(60))).toBe('spooled')
    await until(() => readdirSync(spool.dir).length === 1, 'the spool file')
    expect(readdirSync(spool.dir)).toHaveLength(1)
    expect(spooled.add(Buffer.alloc(60))).toBe('too_large')
    expect(await spooled.finish()).toEqual({ kind: 'too_large', size: 120 })
    await until(() => readdirSync(spool.dir).length === 0, 'the dropped spool file to go')
    expect(readdirSync(spool.dir)).toEqual([])
  })

  test('a disk that falls behind pauses the stream; the write resumes it', async () => {
    const controls = flow()
    const collector = new MessageCollector(
      new DataBudget(1024 * 1024),
      'a',
      4 * 1024 * 1024,
      newSpool(),
      controls,
      1024,
    )
    for (let i = 0; i < 8; i++) collector.add(Buffer.alloc(64 * 1024, i))
    expect(controls.calls).toEqual(['pause']) // 64 KiB queued before the first write finished
    const { raw } = await collect(collector)
    expect(controls.calls).toEqual(['pause', 'resume'])
    expect(raw.length).toBe(512 * 1024)
    expect(raw[511 * 1024]).toBe(7)
    collector.release()
  })

  test('after a pause only READING_SENDERS streams resume at once; the rest wait, holding nothing, for a turn', async () => {
    const spool = newSpool()
    // The turns alone: a resumed sender that reads nothing for 250 ms gives its turn back (a slow
    // sender), and a machine busy with other files can take that long between two steps here,
    // which handed the waiting senders extra turns. An hour keeps that rule out of this test.
    const senders = Array.from({ length: READING_SENDERS + 4 }, (_, i) => {
      const controls = flow()
      return {
        controls,
        collector: new MessageCollector(
          new DataBudget(1024 * 1024),
          `s${i}`,
          4 * 1024 * 1024,
          spool,
          controls,
          1024,
          3_600_000,
        ),
      }
    })
    const resumed = () => senders.filter((s) => s.controls.calls.at(-1) === 'resume')
    // Each sender's read fills its 64 KiB: all pause, and their writes queue in the spool's line.
    for (const { collector } of senders) collector.add(Buffer.alloc(64 * 1024, 1))
    expect(senders.every((s) => s.controls.calls.join() === 'pause')).toBe(true)
    await until(() => resumed().length === READING_SENDERS, 'the first senders to be resumed')
    await Bun.sleep(50) // proves nothing happens: the other four stay paused once every write is done
    expect(resumed().length).toBe(READING_SENDERS)
    // A resumed sender's next read fills it again: after its write, its turn goes to a waiting one.
    const first = resumed()[0]!
    const waiting = senders.filter((s) => !resumed().includes(s))
    first.collector.add(Buffer.alloc(64 * 1024, 2))
    await until(() => waiting.some((s) => s.controls.calls.at(-1) === 'resume'), 'a waiting sender to get the turn')
    expect(waiting.filter((s) => s.controls.calls.at(-1) === 'resume').length).toBe(1)
    expect(first.controls.calls.at(-1)).toBe('pause') // now it waits for a turn
    expect(resumed().length).toBe(READING_SENDERS)
    for (const { collector } of senders) collector.release()
    await until(() => resumed().length === senders.length, 'every sender to be resumed')
    expect(resumed().length).toBe(senders.length) // released, every stream runs again (and is only counted)
  })

  test('a spool that cannot be written is reported after the final dot, not thrown', async () => {
    const spool = newSpool()
    rmSync(spool.dir, { recursive: true })
    const collector = new MessageCollector(new DataBudget(100), 'a', 1000, spool, flow(), 10)
    expect(collector.add(Buffer.alloc(50))).toBe('spooled')
    expect(collector.add(Buffer.alloc(50))).toBeNull()
    const collected = await collector.finish()
    expect(collected.kind).toBe('spool_failed')
    expect(collected.size).toBe(100)
    collector.release()
  })
})

describe('Spool', () => {
  test('clear() removes whatever an earlier process left', async () => {
    const spool = new Spool(scratchDir('pigeonhole-spool-unit-'))
    const file = await spool.create()
    await file.append([Buffer.from('half a message')])
    expect(new Spool(spool.dir).clear()).toBe(1)
    expect(readdirSync(spool.dir)).toEqual([])
    // The earlier process's handle is this test's own: close it, or garbage collection will
    // (which Bun reports as an error in whatever test runs then).
    await file.remove()
    rmSync(spool.dir, { recursive: true, force: true })
  })
})

describe('AddressGate', () => {
  test('counts per key, leave is idempotent and ignores sessions never let in', () => {
    const gate = new AddressGate(2)
    expect(gate.enter('s1', 'k')).toBe(true)
    expect(gate.enter('s2', 'k')).toBe(true)
    expect(gate.enter('s3', 'k')).toBe(false)
    gate.leave('s3')
    gate.leave('s1')
    gate.leave('s1')
    expect(gate.openFrom('k')).toBe(1)
    expect(gate.enter('s4', 'k')).toBe(true)
    expect(gate.enter('s5', 'other')).toBe(true)
  })
})

describe('DataBudget flow', () => {
  test('calls back each time half the budget has flowed, kept or thrown away', () => {
    let calls = 0
    const budget = new DataBudget(100, () => calls++)
    budget.flow(49)
    expect(calls).toBe(0)
    budget.flow(1)
    expect(calls).toBe(1)
    budget.flow(120)
    expect(calls).toBe(2)
  })
})

describe('CollectionPacer', () => {
  const MiB = 1024 * 1024
  /** Runs the pacer over RSS readings (MiB), one per forced collection, and says which were full. */
  function kinds(readings: number[], growth = 48): string {
    let rss = 0
    const pacer = new CollectionPacer(growth * MiB, () => rss * MiB)
    return readings
      .map((reading) => {
        rss = reading
        const kind = pacer.next()
        if (kind === 'full') pacer.fullDone()
        return kind === 'full' ? 'F' : 'e'
      })
      .join('')
  }

  test('the first collection is full; then eden until RSS has grown by the threshold since the last full one', () => {
    // The flood's shape: each 16 MiB of DATA adds up to 16 MiB of RSS, a full one gives it back.
    expect(kinds([200, 210, 226, 242, 250, 210, 226, 242, 257, 258])).toBe('FeeeFeeeeF')
  })

  test('flat RSS never asks for a full collection, however many have run', () => {
    expect(kinds([200, ...Array(500).fill(230)])).toBe(`F${'e'.repeat(500)}`)
  })

  test('growth counts from the lowest RSS since the last full one, not from a level given back since', () => {
    // 300 after the full one, memory given back down to 200, then growth to 250: 50 over the low point.
    expect(kinds([300, 200, 240, 250])).toBe('FeeF')
  })

  test('in the real process the first one is full and eden follows while RSS stays put', () => {
    const pacer = new CollectionPacer(1024 * MiB)
    expect(pacer.next()).toBe('full')
    pacer.fullDone()
    expect(pacer.next()).toBe('eden')
  })
})

describe('ParseGate', () => {
  test('runs at most `capacity` bytes at once, first come first served, and always lets one through', async () => {
    const gate = new ParseGate(10)
    const order: string[] = []
    const releases: Record<string, () => void> = {}
    const job = (name: string, size: number) =>
      gate.run(size, () => {
        order.push(name)
        return new Promise<void>((resolve) => (releases[name] = resolve))
      })
    const done = [job('big', 30), job('a', 4), job('b', 4), job('c', 4)]
    // Each Bun.sleep(0) yields one turn of the event loop: the starts the gate queued have run.
    await Bun.sleep(0)
    expect(order).toEqual(['big']) // one over the capacity runs alone
    releases.big!()
    await Bun.sleep(0)
    expect(order).toEqual(['big', 'a', 'b'])
    releases.a!()
    await Bun.sleep(0)
    expect(order).toEqual(['big', 'a', 'b', 'c'])
    releases.b!()
    releases.c!()
    await Promise.all(done)
  })

  test('a large message parsed moves to the store gate: one is parsed while the one before it is stored', async () => {
    const limits = loadConfig({}).limits
    const guards = new SmtpGuards(limits, createLogger('silent'), 'too big')
    const size = limits.messageBytes
    const events: string[] = []
    const stores: Array<() => void> = []
    const message = (n: number) =>
      guards.parseGateFor(size).run(size, async (leave) => {
        events.push(`parse ${n}`)
        const leaveStore = await guards.storeGateFor(size)!.take(size)
        leave()
        events.push(`store ${n}`)
        await new Promise<void>((resolve) => stores.push(resolve))
        leaveStore()
      })
    const done = [1, 2, 3].map(message)
    await Bun.sleep(0)
    // 1 is stored, 2 parsed and waiting for the store gate (holding the parse gate), 3 waits to be parsed.
    expect(events).toEqual(['parse 1', 'store 1', 'parse 2'])
    stores.shift()!()
    await Bun.sleep(0)
    expect(events).toEqual(['parse 1', 'store 1', 'parse 2', 'store 2', 'parse 3'])
    stores.shift()!()
    await Bun.sleep(0)
    stores.shift()!()
    await Promise.all(done)
    expect(events.at(-1)).toBe('store 3')
    expect(guards.storeGateFor(64 * 1024)).toBeNull() // small messages are stored from their own lane
  })

  test('calls back before and after a large message, also when its work failed', async () => {
    let calls = 0
    const gate = new ParseGate(100, () => calls++)
    await gate.run(10, async () => {})
    expect(calls).toBe(0)
    await expect(gate.run(25, async () => Promise.reject(new Error('refused')))).rejects.toThrow('refused')
    expect(calls).toBe(2)
  })
})

describe('SMTP_DATA_MEMORY_BYTES', () => {
  test('may be smaller than a message: what does not fit in memory is spooled', () => {
    expect(loadConfig({ LIMIT_MESSAGE_BYTES: '1000', SMTP_DATA_MEMORY_BYTES: '10' }).limits.smtpDataMemoryBytes).toBe(
      10,
    )
  })
})
