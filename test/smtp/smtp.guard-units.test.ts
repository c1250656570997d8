/** The pure parts of the SMTP guards: the budget, the collector, the parse gate, the address gate and its key. */
import { describe, expect, test } from 'bun:test'
import { loadConfig } from '../../src/config.ts'
import { AddressGate } from '../../src/smtp/address-gate.ts'
import { clientKey } from '../../src/smtp/client-key.ts'
import { DataBudget } from '../../src/smtp/data-budget.ts'
import { MessageCollector } from '../../src/smtp/message-collector.ts'
import { ParseGate } from '../../src/smtp/parse-gate.ts'

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
  test('a complete message keeps its bytes taken until release', () => {
    const budget = new DataBudget(100)
    const collector = new MessageCollector(budget, 'a', 40)
    collector.add(Buffer.from('hello '))
    collector.add(Buffer.from('world'))
    expect(collector.finish()).toEqual({ kind: 'complete', raw: Buffer.from('hello world') })
    expect(budget.held).toBe(11)
    collector.release()
    collector.release()
    expect(budget.held).toBe(0)
  })

  test('passing the limit drops and gives back at once; later bytes are only counted', () => {
    const budget = new DataBudget(100)
    const collector = new MessageCollector(budget, 'a', 10)
    expect(collector.add(Buffer.alloc(8))).toBeNull()
    expect(collector.add(Buffer.alloc(8))).toBe('too_large')
    expect(budget.held).toBe(0)
    expect(collector.add(Buffer.alloc(1000))).toBeNull()
    expect(collector.finish()).toEqual({ kind: 'too_large', size: 1016 })
  })

  test('no room is over_budget, and becomes too_large if the message then passes the limit', () => {
    const budget = new DataBudget(20)
    expect(budget.take('a', 10)).toBe(true)
    const collector = new MessageCollector(budget, 'a', 15)
    expect(collector.add(Buffer.alloc(5))).toBe('over_budget')
    expect(budget.held).toBe(10)
    expect(collector.add(Buffer.alloc(5))).toBeNull()
    expect(collector.finish()).toEqual({ kind: 'over_budget', size: 10 })
    expect(collector.add(Buffer.alloc(6))).toBe('too_large')
    expect(collector.finish()).toEqual({ kind: 'too_large', size: 16 })
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
  test('must hold two whole messages (one address may use half), else start-up names the variable', () => {
    expect(() => loadConfig({ LIMIT_MESSAGE_BYTES: '1000', SMTP_DATA_MEMORY_BYTES: '1999' })).toThrow(/^SMTP_DATA_MEMORY_BYTES: must be at least twice LIMIT_MESSAGE_BYTES \(2000\), got 1999$/)
    expect(loadConfig({ LIMIT_MESSAGE_BYTES: '1000', SMTP_DATA_MEMORY_BYTES: '2000' }).limits.smtpDataMemoryBytes).toBe(2000)
  })
})
