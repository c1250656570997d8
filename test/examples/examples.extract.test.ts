/** The link and one-time-code helpers of examples/pigeonhole.ts. */
import { expect, test } from 'bun:test'
import { extractCode, extractLink, type Message } from '../../examples/pigeonhole.ts'

const message = (text: string | null, html: string | null) => ({ subject: 'S', text, html }) as Message

test('extractLink prefers HTML hrefs, decodes &amp;, and filters by pattern', () => {
  const m = message(
    'See https://a.example/text-link',
    '<a href="https://a.example/home">x</a> <a href=\'https://a.example/confirm?t=1&amp;u=2\'>y</a>',
  )
  expect(extractLink(m)).toBe('https://a.example/home')
  expect(extractLink(m, /confirm/)).toBe('https://a.example/confirm?t=1&u=2')
  expect(extractLink(message('Go to https://b.example/reset?x=1.', null))).toBe('https://b.example/reset?x=1')
  expect(() => extractLink(m, /nothing/)).toThrow('No link matching /nothing/ in "S"')
  expect(() => extractLink(message(null, '<a href="mailto:x@y.example">m</a>'))).toThrow('No link')
})

test('extractCode finds a code of exactly the given length, in text or in HTML without tags', () => {
  expect(extractCode(message('Order 12345678, code 884213.', null))).toBe('884213')
  expect(extractCode(message(null, '<p>Code <b>4821</b></p>'), 4)).toBe('4821')
  expect(() => extractCode(message('no digits here', null))).toThrow('No 6-digit code in "S"')
})
