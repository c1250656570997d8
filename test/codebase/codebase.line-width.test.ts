/**
 * Every line of src/ fits in 120 characters, the formatter's width: where the formatter cannot
 * wrap (comments, template strings, SQL, string literals) the line is wrapped by hand. A line
 * that is nothing but a URL, in a comment or a string, may pass it, as a URL cannot be split; so
 * may a comment holding one URL that would fit without it (moving the URL down gains nothing).
 *
 * Files some other change is still editing keep a wider width for now: biome.jsonc's override
 * with its own `lineWidth` lists them, and this test reads its exceptions from there, so
 * removing that entry is the one edit that brings them under the rule.
 */
import { expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'

const ROOT = join(import.meta.dir, '..', '..')
const WIDTH = 120

type Override = { includes?: string[]; formatter?: { lineWidth?: number } }
const biome = Bun.JSONC.parse(readFileSync(join(ROOT, 'biome.jsonc'), 'utf8')) as {
  formatter: { lineWidth: number }
  overrides?: Override[]
}

/** Files under a temporary wider width: plain paths (no globs), so each is one exception. */
const widerFiles = new Set(
  (biome.overrides ?? [])
    .filter((entry) => entry.formatter?.lineWidth !== undefined)
    .flatMap((entry) => entry.includes ?? []),
)

/** A line that is one URL and nothing else but indentation, a comment marker, quotes or a trailing comma. */
const LONE_URL = /^\s*(?:\/\/|\/?\*+)?\s*['"`<(]?https?:\/\/\S+?['"`>)]?[,.;]?$/

const URL_IN_TEXT = /https?:\/\/\S+/g
const COMMENT = /^\s*(?:\/\/|\/?\*)/

// Code points, not UTF-16 units: an ellipsis or an em dash is one character on screen.
const width = (text: string) => [...text].length

function tooLong(line: string): boolean {
  if (width(line) <= WIDTH || LONE_URL.test(line)) return false
  const urls = line.match(URL_IN_TEXT) ?? []
  return !(COMMENT.test(line) && urls.length === 1 && width(line.replace(urls[0]!, '')) <= WIDTH)
}

test('the formatter wraps at the width this test holds src/ to', () => {
  expect(biome.formatter.lineWidth).toBe(WIDTH)
})

test('the temporary exceptions are named file by file, not by a pattern', () => {
  for (const file of widerFiles) expect(file).toMatch(/^[\w./-]+\.[a-z]+$/)
})

test('the check finds a long line and lets a lone URL pass', () => {
  expect(tooLong(`  const text = '${'x'.repeat(120)}'`)).toBe(true)
  expect(tooLong(`  // ${'word '.repeat(24)}https://example.com/${'x'.repeat(120)} for the details.`)).toBe(true)
  expect(tooLong(`  const page = 'https://example.com/${'x'.repeat(120)}' // the page`)).toBe(true)
  expect(tooLong(`  // https://example.com/${'x'.repeat(60)} and https://example.com/${'x'.repeat(60)}`)).toBe(true)
  expect(tooLong(`  // See the page at https://example.com/${'x'.repeat(120)} for the details.`)).toBe(false)
  expect(tooLong(`  // https://example.com/${'x'.repeat(120)}`)).toBe(false)
  expect(tooLong(`   * https://example.com/${'x'.repeat(120)}.`)).toBe(false)
  expect(tooLong(`    'https://example.com/${'x'.repeat(120)}',`)).toBe(false)
  expect(tooLong(`  ${'…'.repeat(WIDTH - 2)}`)).toBe(false)
})

test(`no line of src/ passes ${WIDTH} characters`, async () => {
  const long: string[] = []
  let files = 0
  for await (const file of new Bun.Glob('src/**/*.{ts,tsx,js,css}').scan({ cwd: ROOT })) {
    if (widerFiles.has(file)) continue
    files++
    const lines = (await Bun.file(join(ROOT, file)).text()).split('\n')
    lines.forEach((line, i) => {
      if (tooLong(line)) long.push(`${file}:${i + 1} (${width(line)})`)
    })
  }
  expect(files).toBeGreaterThan(200)
  expect(long).toEqual([])
})
