/**
 * What the preview never shows: text inside quoted attribute values (even with `>` in
 * them), lone surrogates, and control or bidi characters that would hide or reorder what a
 * one-line preview displays. Bodies of 1 MiB built around unclosed quotes stay linear.
 */
import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { decodeEntities, htmlToText, makePreview } from '../../src/core/inbound/preview.ts'

// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is this pattern's purpose
const UNSHOWN = /[\u0000-\u0008\u000e-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/
const hasLoneSurrogate = (s: string) => /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(s)

describe('quoted attribute values', () => {
  test.each([
    ['<p title="a > b">text</p>', 'text '],
    [`<p title='a > b' data-x = "c>d">t</p>`, 't '],
    ['<img alt="1 > 0"><br title=">">x', ' x'],
    ['<a href=x>y></a>', 'y>'], // unquoted: the first > ends the tag
    ['<p class="a"b">c', 'c'], // the quote after b is not after =: part of a name, as in HTML
  ])('%j → %j', (html, text) => {
    expect(htmlToText(html)).toBe(text)
  })

  test('a quoted value that never closes hides the rest, as a browser does', () => {
    expect(htmlToText('seen<p title="never closed> more text')).toBe('seen ')
    expect(makePreview(null, "seen<p title='x>y")).toBe('seen')
  })
})

describe('numeric references', () => {
  test('NUL, surrogate halves and code points past U+10FFFF decode to U+FFFD', () => {
    expect(decodeEntities('a&#0;b&#xD800;c&#xdfff;d&#55296;e&#x110000;f&#99999999999;')).toBe(
      'a\ufffdb\ufffdc\ufffdd\ufffde\ufffdf\ufffd',
    )
    expect(makePreview(null, '&#xD800;x')).toBe('\ufffdx')
  })

  test('a surrogate pair written as one reference decodes to its character', () => {
    expect(decodeEntities('&#x1F600;&#128512;')).toBe('😀😀')
  })
})

describe('controls and bidi characters', () => {
  test('are dropped from text and HTML bodies; whitespace controls still separate words', () => {
    expect(makePreview('a\u0000b\u202Ec', null)).toBe('abc')
    expect(makePreview('one\u0085two\u009bthree\u2066four\u200f', null)).toBe('onetwothreefour')
    expect(makePreview('tab\there\u000bvertical\fform', null)).toBe('tab here vertical form')
    expect(makePreview(null, '<p>x&#1;y&#x202E;z</p>')).toBe('xyz')
  })

  test('a text body with lone surrogates gets U+FFFD for them', () => {
    expect(makePreview('a\ud800b\udc00c', null)).toBe('a\ufffdb\ufffdc')
  })

  test('no preview of any UTF-16 input holds a control, a bidi control or a lone surrogate', () => {
    const unit = fc.oneof(
      fc.integer({ min: 0, max: 0xffff }).map((code) => String.fromCharCode(code)),
      fc.constantFrom('&#0;', '&#xD800;', '&#x202E;', '&#133;', '<b>', ' '),
    )
    const body = fc.string({ unit, maxLength: 400 })
    fc.assert(
      fc.property(fc.option(body), fc.option(body), (text, html) => {
        const preview = makePreview(text, html)
        return !UNSHOWN.test(preview) && !hasLoneSurrogate(preview) && !/[\t\n\r]/.test(preview)
      }),
      { numRuns: 1000 },
    )
  })

  test('a body that is mostly controls still yields the visible text after them', () => {
    expect(makePreview(null, '&#1;'.repeat(5_000) + 'visible')).toBe('visible')
  })
})

describe('adversarial quoting in 1 MiB bodies stays linear', () => {
  const MiB = 1024 * 1024
  const fill = (unit: string) => Buffer.from(unit.repeat(Math.ceil(MiB / unit.length)).slice(0, MiB)).toString()
  test.each([
    ['unclosed double quotes', fill('<a x="')],
    ['unclosed single quotes with >', fill("<a x='>")],
    ['one value then only >', `<a x="1"${fill('>')}`],
    ['= without a value', fill('<a x= ')],
    ['quotes that close at the end', `<a x="${fill('>')}">t`],
    ['alternating quotes', fill(`<a x="'>`)],
  ])('%s', (_, html) => {
    const before = process.threadCpuUsage()
    const preview = makePreview(null, html)
    const used = process.threadCpuUsage(before)
    expect((used.user + used.system) / 1000).toBeLessThan(100)
    expect(preview).toBe(makePreview(htmlToText(html), null))
  })
})
