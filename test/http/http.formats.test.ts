import { describe, expect, test } from 'bun:test'
import { FormatRegistry } from '@sinclair/typebox'
import 'elysia'
import { installFastFormats } from '../../src/http/formats.ts'

describe('email format used by response validation', () => {
  installFastFormats()
  const check = FormatRegistry.Get('email')!

  test('accepts ordinary addresses', () => {
    for (const address of ['user@example.com', 'first.last+tag@sub.example.co', "o'neil_x-y@mail.example.org"])
      expect(check(address)).toBe(true)
  })

  test('rejects what the Zod pattern it replaces rejects', () => {
    for (const address of [
      '',
      'user',
      '@example.com',
      '.user@example.com',
      'a..b@example.com',
      'user@example',
      'user@example.c0m',
      'user.@example.com',
    ]) {
      expect(check(address)).toBe(false)
    }
  })
})
