/** rspamd's answer is another program's output: read field by field, and anything else is "unavailable", never a throw. */
import { expect, test } from 'bun:test'
import { readRspamd, readSpamd, spamFilterFrom } from '../../src/console/checks/spam-check.ts'

test('the setting names the filter, or turns the check off', () => {
  expect(spamFilterFrom('off')).toBeNull()
  expect(spamFilterFrom('rspamd:http://127.0.0.1:11333/')).toEqual({ kind: 'rspamd', url: 'http://127.0.0.1:11333' })
})

test('a verdict: score, threshold, action and rules (the weightiest first)', () => {
  const verdict = readRspamd({
    score: 15,
    required_score: 15,
    action: 'reject',
    symbols: {
      A: { name: 'A', score: 0.1 },
      GTUBE: { name: 'GTUBE', score: 0, description: 'GTUBE', options: ['x', 3] },
      B: { name: 'B', score: -2 },
    },
    messages: { smtp_message: 'Gtube pattern' },
  })
  expect(verdict).toMatchObject({ available: true, spam: true, action: 'reject', message: 'Gtube pattern' })
  if (verdict.available) expect(verdict.rules.map((r) => r.name)).toEqual(['B', 'A', 'GTUBE'])
  expect(readRspamd({ score: 2.4, required_score: 15, action: 'no action', symbols: {} })).toMatchObject({
    available: true,
    spam: false,
    rules: [],
  })
})

test('nonsense is an unavailable filter with a reason', () => {
  for (const body of [
    null,
    'x',
    5,
    [],
    {},
    { score: '1', required_score: 15, action: 'x' },
    { error: 'bad message' },
  ]) {
    const verdict = readRspamd(body)
    expect(verdict.available).toBe(false)
  }
  expect(readRspamd({ error: 'bad message' })).toEqual({
    available: false,
    reason: 'it refused the message: bad message',
  })
})

test("spamd's REPORT: score, threshold and the table of rules, continuation lines joined", () => {
  const answer = [
    'SPAMD/1.1 0 EX_OK',
    'Content-length: 500',
    'Spam: True ; 1003.3 / 5.0',
    '',
    'Spam detection software, running on the system "vm",',
    '',
    'Content analysis details:   (1003.3 points, 5.0 required)',
    '',
    ' pts rule name              description',
    '---- ---------------------- --------------------------------------------------',
    ' 2.7 MISSING_DATE           Missing Date: header',
    '-0.0 NO_RECEIVED            Informational: message has no Received headers',
    '1000 GTUBE                  BODY: Generic Test for Unsolicited Bulk Email',
    ' 0.6 LONG_ONE               A description that goes on',
    '                            onto a second line',
    '',
  ].join('\r\n')
  const verdict = readSpamd(answer)
  expect(verdict).toMatchObject({ available: true, spam: true, score: 1003.3, required: 5 })
  if (verdict.available) {
    expect(verdict.rules.map((r) => r.name)).toEqual(['GTUBE', 'MISSING_DATE', 'LONG_ONE', 'NO_RECEIVED'])
    expect(verdict.rules.find((r) => r.name === 'LONG_ONE')!.description).toBe(
      'A description that goes on onto a second line',
    )
  }
  expect(readSpamd('SPAMD/1.1 0 EX_OK\r\nSpam: False ; 0.4 / 5.0\r\n\r\n')).toMatchObject({
    available: true,
    spam: false,
    rules: [],
  })
  expect(readSpamd('SPAMD/1.0 76 Bad header line: x')).toEqual({
    available: false,
    reason: 'it refused the message: Bad header line: x',
  })
  expect(readSpamd('')).toMatchObject({ available: false })
  expect(spamFilterFrom('spamd:127.0.0.1:783')).toEqual({ kind: 'spamd', host: '127.0.0.1', port: 783 })
  expect(spamFilterFrom('spamd:[::1]:783')).toEqual({ kind: 'spamd', host: '::1', port: 783 })
})
