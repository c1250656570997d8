/**
 * PostgreSQL mode's escape for mail text (NUL, which PostgreSQL text refuses): exact both
 * ways, so the API serves a message as sent on either backend.
 */
import { expect, test } from 'bun:test'
import { decodeMailText, encodeMailText } from '../../src/storage/postgres/schema.ts'

test('NUL and U+FFFF round-trip exactly; the stored form holds no NUL', () => {
  for (const value of [
    '',
    'plain',
    'a\0b',
    '\0\0',
    '\uffff',
    '\uffff0',
    '\uffff1\0',
    'x\uffff\0\uffff0y',
    '\0\uffff',
  ]) {
    const stored = encodeMailText(value)
    expect(stored.includes('\0')).toBe(false)
    expect(decodeMailText(stored)).toBe(value)
  }
})

test('text without NUL or U+FFFF is stored unchanged', () => {
  expect(encodeMailText('Grüße, 日本 ✉')).toBe('Grüße, 日本 ✉')
})
