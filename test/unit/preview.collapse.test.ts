/**
 * The preview collapses only the head of a body it needs; it must give exactly what
 * collapsing the whole body would (reference below), on any mix of words and whitespace.
 */
import { expect, setDefaultTimeout, test } from 'bun:test'
import { makePreview } from '../../src/core/inbound/preview.ts'

// A hang's deadline, not a speed: on a busy machine this file's servers, processes or
// generated cases take well over Bun's default of 5 s.
setDefaultTimeout(30_000)

/** The preview as defined: the whole text collapsed, then cut at 200 code points. */
function reference(text: string): string {
  const collapsed = text.replace(/\s+/g, ' ').trim()
  const characters = Array.from(collapsed)
  return characters.length <= 200 ? collapsed : characters.slice(0, 199).join('').trimEnd() + '…'
}

const PIECES = [
  'a',
  'word',
  'x'.repeat(150),
  ' ',
  '  ',
  '\r\n',
  '\t',
  '\u00a0',
  '\u2003',
  '😀',
  'é',
  ' '.repeat(500),
  '\n\n\n',
]

test('equals collapsing the whole body, for random mixes of words and whitespace', () => {
  let state = 12345
  const next = (n: number) => {
    state = (state * 1103515245 + 12345) % 2147483648
    return state % n
  }
  for (let run = 0; run < 2000; run++) {
    const parts = Array.from({ length: next(120) }, () => PIECES[next(PIECES.length)]!)
    const text = parts.join('')
    if (text.trim() === '') continue // an empty text falls back to the HTML body
    expect(makePreview(text, null)).toBe(reference(text))
  }
})

test('a 1 MB body whose words start after long whitespace gives the same preview', () => {
  const text = ' \r\n'.repeat(100_000) + 'first words here '.repeat(60_000)
  expect(makePreview(text, null)).toBe(reference(text))
})
