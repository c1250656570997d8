/**
 * Attachment bytes of forwarded messages whose body is a single part: the line break before
 * the parent's boundary belongs to the boundary (RFC 2046 §5.1.1), not to the forwarded
 * message, so it never reaches the attachment. Each transfer encoding, LF and CRLF line ends,
 * empty bodies, bodies that do end in a line break, and forwarded messages inside forwarded
 * messages.
 */
import { describe, expect, test } from 'bun:test'
import { FaithfulPostalMime } from '../../src/core/inbound/mime/parser.ts'

const forwarded = (...lines: string[]) => [
  'Subject: inner',
  'Content-Disposition: attachment; filename=file.txt',
  ...lines,
]

/** A multipart/mixed message whose one part is a message/rfc822 holding `inner`. */
function inMultipart(inner: string[], eol = '\r\n'): string {
  return [
    'Content-Type: multipart/mixed; boundary=b',
    '',
    '--b',
    'Content-Type: message/rfc822',
    '',
    ...inner,
    '--b--',
    '',
  ].join(eol)
}

/** Attachment bytes as latin1 strings; the message is taken as latin1 too, so 8-bit bytes stay single bytes. */
async function attachments(raw: string): Promise<string[]> {
  const email = await new FaithfulPostalMime().parse(Buffer.from(raw, 'latin1'))
  return email.attachments.map((a) => Buffer.from(a.content as ArrayBuffer).toString('latin1'))
}

describe('a forwarded message whose body is one attachment', () => {
  test.each([
    ['7bit', forwarded('', 'hello'), 'hello'],
    ['8bit', forwarded('Content-Transfer-Encoding: 8bit', '', 'h\xe9llo'), 'h\xe9llo'],
    ['quoted-printable', forwarded('Content-Transfer-Encoding: quoted-printable', '', 'h=C3=A9llo'), 'h\xc3\xa9llo'],
    [
      'quoted-printable ending in a soft line break',
      forwarded('Content-Transfer-Encoding: quoted-printable', '', 'hel=', 'lo='),
      'hello',
    ],
    ['base64', forwarded('Content-Transfer-Encoding: base64', '', Buffer.from('hello').toString('base64')), 'hello'],
    ['several lines', forwarded('', 'one', 'two'), 'one\r\ntwo'],
    ['a body that ends in an empty line keeps that line break', forwarded('', 'hello', ''), 'hello\r\n'],
    ['an empty body', forwarded(''), ''],
    ['a body of one empty line', forwarded('', ''), ''],
  ])('%s', async (_name, inner, expected) => {
    expect(await attachments(inMultipart(inner))).toEqual([expected])
  })

  test('with LF line ends throughout', async () => {
    expect(await attachments(inMultipart(forwarded('', 'one', 'two'), '\n'))).toEqual(['one\r\ntwo'])
  })

  test('forwarded twice: message/rfc822 inside message/rfc822', async () => {
    const twice = ['Subject: outer forward', 'Content-Type: message/rfc822', '', ...forwarded('', 'hello')]
    expect(await attachments(inMultipart(twice))).toEqual(['hello'])
    const deeper = ['Subject: third', 'Content-Type: message/rfc822', '', ...twice]
    expect(await attachments(inMultipart(deeper))).toEqual(['hello'])
  })

  test('forwarded inside a multipart inside a forwarded message', async () => {
    const middle = [
      'Subject: middle',
      'Content-Type: multipart/mixed; boundary=m',
      '',
      '--m',
      'Content-Type: message/rfc822',
      '',
      ...forwarded('', 'hello'),
      '--m--',
    ]
    expect(await attachments(inMultipart(middle))).toEqual(['hello'])
  })

  test('a base64 message/rfc822 part: the forwarded bytes end where the sender ended them', async () => {
    const encoded = (inner: string) =>
      [
        'Content-Type: multipart/mixed; boundary=b',
        '',
        '--b',
        'Content-Type: message/rfc822',
        'Content-Transfer-Encoding: base64',
        '',
        Buffer.from(inner).toString('base64'),
        '--b--',
        '',
      ].join('\r\n')
    expect(await attachments(encoded('Content-Disposition: attachment\r\n\r\nhello'))).toEqual(['hello'])
    expect(await attachments(encoded('Content-Disposition: attachment\r\n\r\nhello\r\n'))).toEqual(['hello\r\n'])
  })

  test('a top-level message that is one attachment keeps its last line break, which SMTP sent as part of it', async () => {
    expect(await attachments('Content-Disposition: attachment\r\n\r\nhello\r\n')).toEqual(['hello\r\n'])
    expect(
      await attachments('Content-Type: message/rfc822\r\n\r\nContent-Disposition: attachment\r\n\r\nhello\r\n'),
    ).toEqual(['hello\r\n'])
  })

  test('the forwarded text body is unchanged', async () => {
    const email = await new FaithfulPostalMime().parse(inMultipart(['Subject: inner', '', 'hello']))
    expect(email.text).toEndWith('\nhello\n')
  })
})
