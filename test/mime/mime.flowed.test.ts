/**
 * format=flowed (RFC 3676): quote depth, space-stuffing, the signature separator and DelSp,
 * first as the pure function, then through the parser (charset, transfer encoding, UTF-7,
 * a flowed part inside a forwarded message).
 */
import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { decodeFlowed } from '../../src/core/inbound/mime/flowed.ts'
import { FaithfulPostalMime } from '../../src/core/inbound/mime/parser.ts'

describe('decodeFlowed', () => {
  test.each([
    [
      'quoted flowed lines join as one quoted line with one quote prefix',
      'Marco wrote:\n> In order to increase performance with few modifications to the \n> original code, why not use this technique?\n\nI agree.\n',
      'Marco wrote:\n> In order to increase performance with few modifications to the original code, why not use this technique?\n\nI agree.\n',
    ],
    ['a flowed line never joins a deeper quote', '> outer \n>> inner\n', '> outer \n>> inner\n'],
    ['a flowed line never joins a shallower quote', '>> inner \n> outer\n', '>> inner \n> outer\n'],
    ['a quoted flowed line never joins an unquoted one', '> quoted \nreply\n', '> quoted \nreply\n'],
    ['an unquoted flowed line never joins a quoted one', 'reply \n> quoted\n', 'reply \n> quoted\n'],
    ['deep quotes join at their own depth', '>>> one \n>>> two \n>>> three\n>> back\n', '>>> one two three\n>> back\n'],
    ['quote marks without a stuffing space are kept as written', '>>no space \n>>here\n', '>>no space here\n'],
    [
      'the stuffing space of an unquoted line is removed, also on continuation lines',
      ' From the start \n From here\n',
      'From the start From here\n',
    ],
    ['"> >" is depth one whose text starts with ">"', '> > a \n> > b\n', '> > a > b\n'],
    ['a space-stuffed empty line is fixed and ends the paragraph', 'a \n \nb\n', 'a \nb\n'],
    ['a line of two spaces is a flowed empty line', 'a \n  \nb\n', 'a  b\n'],
    [
      'the signature separator is fixed, and a flowed line does not run into it',
      'Regards \n-- \nAda \nLovelace\n',
      'Regards \n-- \nAda Lovelace\n',
    ],
    ['a quoted signature separator is fixed too', '> bye \n> -- \n> sig\n', '> bye \n> -- \n> sig\n'],
    ['a flowed last line ends the text', 'end \n', 'end \n'],
    ['without a final line break', 'a \nb', 'a b'],
    ['CRLF line ends become LF', 'a \r\nb\r\n\r\nc\r\n', 'a b\n\nc\n'],
    ['an empty text', '', ''],
  ])('%s', (_name, input, expected) => {
    expect(decodeFlowed(input, false)).toBe(expected)
  })

  test('DelSp=yes removes the space that marked the soft break, at every depth', () => {
    expect(decodeFlowed('日本語の \n文章\n> 引用の \n> 続き\n', true)).toBe('日本語の文章\n> 引用の続き\n')
    expect(decodeFlowed('two  \nspaces\n', true)).toBe('two spaces\n')
    expect(decodeFlowed('Regards \n-- \nsig\n', true)).toBe('Regards \n-- \nsig\n')
  })

  test('lines that do not end in a space come out as they went in', () => {
    const line = fc.stringMatching(/^[>a-z -]{0,12}[>a-z-]$|^$/).filter((l) => !l.startsWith(' '))
    fc.assert(
      fc.property(fc.array(line, { maxLength: 20 }), (lines) => {
        const text = lines.join('\n')
        expect(decodeFlowed(text, false)).toBe(text)
      }),
    )
  })

  test('lines are joined exactly where a flowed line meets the same depth; no text or quote depth is lost', () => {
    // Lines with an unambiguous reading: quote marks, a stuffing space or not, then text
    // that starts with neither; a trailing space makes a line flowed.
    const line = fc.record({
      depth: fc.nat(3),
      stuffed: fc.boolean(),
      text: fc.stringMatching(/^(?:[a-z-][a-z -]{0,6})?$/),
      flowed: fc.boolean(),
    })
    fc.assert(
      fc.property(fc.array(line, { maxLength: 20 }), (lines) => {
        const written = lines.map((l) => {
          const text = l.flowed ? `${l.text} ` : l.text
          // Text that starts with a space must be stuffed, or the space would be read as stuffing.
          return { ...l, text, stuffed: l.stuffed || text.startsWith(' ') }
        })
        const text = written.map((l) => `${'>'.repeat(l.depth)}${l.stuffed ? ' ' : ''}${l.text}\n`).join('')
        // The model: merge each flowed line into the next line of the same depth.
        const merged: Array<{ depth: number; text: string }> = []
        let open = false
        for (const l of written) {
          const last = merged.at(-1)
          if (open && last && last.depth === l.depth && l.text !== '-- ') last.text += l.text
          else merged.push({ depth: l.depth, text: l.text })
          open = l.text.endsWith(' ') && l.text !== '-- '
        }
        const out = decodeFlowed(text, false).split('\n').slice(0, -1)
        expect(out.map((o) => ({ depth: /^>*/.exec(o)![0].length, text: o.replace(/^(>+) ?|^/, '') }))).toEqual(merged)
      }),
    )
  })

  test.each([
    ['one quoted paragraph of 131,072 lines', '> word \n'.repeat(131_072)],
    ['349,525 short flowed lines', 'a \n'.repeat(349_525)],
    ['a million quote marks on one line', `${'>'.repeat(1 << 20)} x \n`],
    ['174,762 quoted signature separators', '> -- \n'.repeat(174_762)],
  ])('linear in the text: %s (1 MiB, the text body limit)', (_name, text) => {
    // CPU time of this thread, so a loaded machine's waits are not counted. About 100 ms
    // here; a join that re-reads the paragraph per line takes minutes.
    const before = process.threadCpuUsage()
    const out = decodeFlowed(text, true)
    const used = process.threadCpuUsage(before)
    expect((used.user + used.system) / 1000).toBeLessThan(1_000)
    expect(out.length).toBeLessThanOrEqual(text.length)
  })
})

const parse = (raw: string) => new FaithfulPostalMime().parse(raw)

describe('through the parser', () => {
  test('a base64 body with LF line ends and DelSp=yes', async () => {
    const body = Buffer.from('Hallo \nWelt\n> zit \n> iert\n').toString('base64')
    const email = await parse(
      `Content-Type: text/plain; charset=utf-8; format=flowed; delsp=yes\r\nContent-Transfer-Encoding: base64\r\n\r\n${body}\r\n`,
    )
    expect(email.text).toBe('HalloWelt\n> zitiert\n')
  })

  test('parameters are case-insensitive (Format=Flowed; DelSp=Yes)', async () => {
    const email = await parse('Content-Type: text/plain; Format=Flowed; DelSp=Yes\r\n\r\n> a \r\n> b\r\n')
    expect(email.text).toBe('> ab\n')
  })

  test('quoted-printable: a soft line break is not a flowed one', async () => {
    const email = await parse(
      'Content-Type: text/plain; format=flowed\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n> caf=C3=A9 =\r\nau lait \r\n> next\r\n',
    )
    expect(email.text).toBe('> café au lait next\n')
  })

  test('UTF-7 is decoded before unwrapping, so encoded quote marks count', async () => {
    // "+AD4-" is ">" and "+ACA-" a space in UTF-7.
    const email = await parse(
      'Content-Type: text/plain; charset=utf-7; format=flowed\r\n\r\n+AD4- J+APw-rgen+ACA-\r\n+AD4- schrieb\r\n',
    )
    expect(email.text).toBe('> Jürgen schrieb\n')
  })

  test('a flowed part of a forwarded message is unwrapped by quote depth too', async () => {
    const raw = [
      'Content-Type: multipart/mixed; boundary=b',
      '',
      '--b',
      'Content-Type: message/rfc822',
      '',
      'Subject: inner',
      'Content-Type: text/plain; format=flowed',
      '',
      '> quoted ',
      '> line',
      'reply',
      '--b--',
      '',
    ].join('\r\n')
    expect((await parse(raw)).text).toContain('> quoted line\nreply\n')
  })

  test('format=flowed on text/html is not unwrapped (RFC 3676 defines it for text/plain)', async () => {
    const email = await parse('Content-Type: text/html; format=flowed\r\n\r\n<p>a \r\nb</p>\r\n')
    expect(email.html).toBe('<p>a \nb</p>\n')
  })
})
