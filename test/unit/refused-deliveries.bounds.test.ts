/**
 * The console's refused-deliveries list is bounded and kept per inbox: made-up addresses,
 * however many, never push out an inbox's entries, and an inbox sees only its own refusals
 * and those that waited for its address.
 */
import { expect, test } from 'bun:test'
import { RefusedDeliveries } from '../../src/core/inbound/refused-deliveries.ts'

const refusal = (sender: string) => ({ at: 0, sender, reply: '550 Recipient address rejected' })

test('mail sprayed at 5,000 made-up addresses keeps an inbox entry and at most 2,000 addresses', () => {
  const list = new RefusedDeliveries('inbox.test')
  list.record('signup@inbox.test', 'inbox_1', refusal('app@shop.example'))
  for (let i = 0; i < 5_000; i++) list.record(`spray-${i}@inbox.test`, null, refusal('spam@evil.example'))
  expect(list.recent('inbox_1').map((r) => r.sender)).toEqual(['app@shop.example'])
  // The oldest made-up addresses were dropped; the newest are kept for whoever takes them.
  list.claim('spray-0@inbox.test', 'inbox_2')
  expect(list.recent('inbox_2')).toEqual([])
  list.claim('SPRAY-4999@inbox.test', 'inbox_3')
  expect(list.recent('inbox_3').map((r) => r.sender)).toEqual(['spam@evil.example'])
})

test('an address claimed once: the next inbox with that address starts empty; 10 kept, newest first', () => {
  const list = new RefusedDeliveries('inbox.test')
  for (let i = 0; i < 12; i++) list.record('Early@inbox.test', null, refusal(`s${i}@shop.example`))
  list.record('early@elsewhere.example', null, refusal('x@shop.example'))
  list.claim('early@inbox.test', 'inbox_a')
  expect(list.recent('inbox_a').map((r) => r.sender)).toEqual(
    Array.from({ length: 10 }, (_, i) => `s${11 - i}@shop.example`),
  )
  list.claim('early@inbox.test', 'inbox_b')
  expect(list.recent('inbox_b')).toEqual([])
})

test('an address no inbox could take (not a valid prefix, or another domain) is not kept', () => {
  const list = new RefusedDeliveries('inbox.test')
  const tooLong = `${'a'.repeat(400)}@inbox.test`
  for (const address of [tooLong, 'under_score@inbox.test', 'fine@inbox.test.evil.example', 'fine@elsewhere.example'])
    list.record(address, null, refusal('x@shop.example'))
  for (const [i, address] of [
    tooLong,
    'under_score@inbox.test',
    'fine@inbox.test.evil.example',
    'fine@elsewhere.example',
  ].entries()) {
    list.claim(address, `inbox_${i}`)
    expect(list.recent(`inbox_${i}`)).toEqual([])
  }
})
