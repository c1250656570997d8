/**
 * The preview of a message: plain text from HTML, one line, at most 200 code points.
 * Examples pin the rules; properties check them on generated input, against the earlier
 * regex implementation wherever that one was correct (well-formed HTML), and adversarial
 * bodies of 1 MiB check that the work stays linear.
 */
import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { decodeEntities, htmlToText, makePreview } from '../../src/core/inbound/preview.ts'

/** The regex version this module replaced (with quoted values and U+FFFD as HTML has them): right on well-formed HTML, quadratic on unclosed constructs. */
function regexHtmlToText(html: string): string {
  const names: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ' }
  const decode = (text: string) =>
    text.replace(/&(#x[0-9a-f]+|#[0-9]+|[a-z]+);/gi, (whole, entity: string) => {
      if (entity[0] !== '#') return names[entity.toLowerCase()] ?? whole
      const code =
        entity[1] === 'x' || entity[1] === 'X' ? parseInt(entity.slice(2), 16) : parseInt(entity.slice(1), 10)
      return Number.isFinite(code) && code > 0 && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff)
        ? String.fromCodePoint(code)
        : '\ufffd'
    })
  return html
    .replace(/<(script|style|head|title)\b[\s\S]*?<\/\1\s*>/gi, ' ')
    .replace(/<!--[\s\S]*?-->/g, ' ')
    .replace(/<(br|\/p|\/div|\/li|\/tr|\/h[1-6])\b(?:[^>"']|"[^"]*"|'[^']*')*>/gi, ' ')
    .split(/<(?:[^>"']|"[^"]*"|'[^']*')*>/) // a quoted attribute value may hold '>'
    .map(decode) // each run of text on its own: a tag between `&amp` and `;` keeps them apart
    .join('')
}

const codePoints = (s: string) => Array.from(s).length
const hasLoneSurrogate = (s: string) => /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(s)

describe('htmlToText', () => {
  test.each([
    ['<p>Hello</p><p>world</p>', 'Hello world '],
    ['a<br>b<BR/>c', 'a b c'],
    ['<script>alert(1)</script>shown<style>p{}</STYLE >', ' shown '],
    ['<head><title>t</title></head><body>body</body>', ' body'],
    ['x<!-- hidden -->y', 'x y'],
    ['&lt;b&gt; &amp;amp; &#65;&#x42;&#X43; &nbsp;&unknown; &#0; &#x110000;', '<b> &amp; ABC  &unknown; \ufffd \ufffd'],
    ['a < b', 'a < b'],
    ['1 <2 and 3> 2', '1  2'],
  ])('%j → %j', (html, text) => {
    expect(htmlToText(html)).toBe(text)
  })

  test('unclosed script, style, title or comment hides the rest, as a browser does; an unclosed head does not', () => {
    expect(htmlToText('seen<script>var x = 1')).toBe('seen ')
    expect(htmlToText('seen<style>p { color: red }')).toBe('seen ')
    expect(htmlToText('seen<title>never closed')).toBe('seen ')
    expect(htmlToText('seen<!-- never closed')).toBe('seen ')
    expect(htmlToText('<html><head><meta charset="utf-8"><body>Hello')).toBe('Hello')
  })

  test('equals the regex implementation on well-formed HTML', () => {
    const text = fc.stringMatching(/^[^<>&]{0,12}$/)
    const entity = fc.constantFrom(
      '&amp;',
      '&LT;',
      '&gt;',
      '&quot;',
      '&apos;',
      '&nbsp;',
      '&bogus;',
      '&#65;',
      '&#x1F600;',
      '&#0;',
      '&#99999999;',
      '&',
      '&#',
      '&#x;',
      '&amp',
    )
    const tag = fc.constantFrom(
      '<b>',
      '</b>',
      '<br>',
      '<br/>',
      '<BR />',
      '</p>',
      '<p class="x">',
      '</div>',
      '</li>',
      '</tr>',
      '</h3>',
      '<img src="a>b">',
      '<p title=\'x > y\' id="z">',
      '<a href=x>',
      '<!DOCTYPE html>',
      '<h1x>',
    )
    const block = fc
      .tuple(fc.constantFrom('script', 'style', 'head', 'title', 'SCRIPT'), text)
      .map(([name, body]) => `<${name} type="t">${body}</${name.toLowerCase()} >`)
    const comment = text.map((body) => `<!--${body.replace(/-/g, '')}-->`)
    const html = fc.array(fc.oneof(text, entity, tag, block, comment), { maxLength: 30 }).map((parts) => parts.join(''))
    fc.assert(
      fc.property(html, (h) => htmlToText(h) === regexHtmlToText(h)),
      { numRuns: 2000 },
    )
  })

  test('decodeEntities equals the regex decoding on any text', () => {
    const piece = fc.oneof(
      fc.string({ maxLength: 6 }),
      fc.constantFrom('&', '&#', '&#x', ';', 'amp', 'lt', '65', 'x1f', 'zz'),
    )
    const text = fc.array(piece, { maxLength: 20 }).map((parts) => parts.join('').replace(/[<>]/g, ''))
    fc.assert(
      fc.property(text, (t) => decodeEntities(t) === regexHtmlToText(t)),
      { numRuns: 2000 },
    )
  })
})

describe('makePreview', () => {
  test('prefers a non-blank text body, falls back to the HTML, and is empty without either', () => {
    expect(makePreview('  plain\n\ttext ', '<b>html</b>')).toBe('plain text')
    expect(makePreview(' \r\n ', '<b>html</b>')).toBe('html')
    expect(makePreview(null, null)).toBe('')
  })

  test('one trimmed line of at most 200 code points, never cutting a surrogate pair', () => {
    const body = fc.string({
      unit: fc.constantFrom('a', ' ', '\n', '\t', 'é', '😀', '&amp;', '<br>', '<!--c-->'),
      maxLength: 600,
    })
    fc.assert(
      fc.property(fc.option(body), fc.option(body), (text, html) => {
        const preview = makePreview(text, html)
        return codePoints(preview) <= 200 && !/\s\s|^\s|\s$|[\t\n\r]/.test(preview) && !hasLoneSurrogate(preview)
      }),
      { numRuns: 1000 },
    )
  })

  test('from a text body: the collapsed text itself, or its start followed by an ellipsis', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', minLength: 1, maxLength: 500 }), (text) => {
        fc.pre(text.trim() !== '')
        const collapsed = text.replace(/\s+/g, ' ').trim()
        const preview = makePreview(text, null)
        return (
          preview === collapsed ||
          (preview.endsWith('…') && collapsed.startsWith(preview.slice(0, -1)) && codePoints(preview) <= 200)
        )
      }),
      { numRuns: 1000 },
    )
  })
})

describe('adversarial bodies of 1 MiB stay linear', () => {
  const MiB = 1024 * 1024
  // Flat, like a decoded body (a repeated string is a rope that the first read would flatten).
  const fill = (unit: string) => Buffer.from(unit.repeat(Math.ceil(MiB / unit.length)).slice(0, MiB)).toString()
  // The regex version grew with the square of the size; the preview now stops once it has
  // its text (figures in bench/README.md).
  test.each([
    ['unclosed <script', fill('<script')],
    ['unclosed <style', fill('<style ')],
    ['unclosed <!--', fill('<!--')],
    ['unclosed <', fill('<')],
    ['unclosed <head', fill('<head')],
    ['one huge attribute', `<a title="${fill('x')}">t</a>`],
    ['an entity flood', fill('&amp;')],
    ['numeric entities without end', fill('&#1234567')],
    ['many tiny tags', fill('<i>a</i>')],
    ['a closer without its >', `<script>${fill('</script ')}`],
  ])('%s', (_, html) => {
    // CPU time of this thread, so a loaded machine's waits are not counted.
    const before = process.threadCpuUsage()
    const preview = makePreview(null, html)
    const used = process.threadCpuUsage(before)
    expect((used.user + used.system) / 1000).toBeLessThan(100)
    // Stopping early gives the preview the whole conversion would.
    expect(preview).toBe(makePreview(htmlToText(html), null))
  })
})
