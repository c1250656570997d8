/** rspamd's answer is another program's output: read field by field, and anything else is "unavailable", never a throw. */
import { expect, test } from 'bun:test'
import { readRspamd, spamFilterFrom } from '../../src/console/checks/spam-check.ts'

test('the setting names the filter, or turns the check off', () => {
  expect(spamFilterFrom('off')).toBeNull()
  expect(spamFilterFrom('rspamd:http://127.0.0.1:11333/')).toEqual({ kind: 'rspamd', url: 'http://127.0.0.1:11333' })
})

test('a verdict: score, threshold, action and rules (the weightiest first)', () => {
  const verdict = readRspamd({
    score: 15,
    required_score: 15,
    action: 'reject',
    symbols: { A: { name: 'A', score: 0.1 }, GTUBE: { name: 'GTUBE', score: 0, description: 'GTUBE', options: ['x', 3] }, B: { name: 'B', score: -2 } },
    messages: { smtp_message: 'Gtube pattern' },
  })
  expect(verdict).toMatchObject({ available: true, spam: true, action: 'reject', message: 'Gtube pattern' })
  if (verdict.available) expect(verdict.rules.map((r) => r.name)).toEqual(['B', 'A', 'GTUBE'])
  expect(readRspamd({ score: 2.4, required_score: 15, action: 'no action', symbols: {} })).toMatchObject({ available: true, spam: false, rules: [] })
})

test('nonsense is an unavailable filter with a reason', () => {
  for (const body of [null, 'x', 5, [], {}, { score: '1', required_score: 15, action: 'x' }, { error: 'bad message' }]) {
    const verdict = readRspamd(body)
    expect(verdict.available).toBe(false)
  }
  expect(readRspamd({ error: 'bad message' })).toEqual({ available: false, reason: 'it refused the message: bad message' })
})
