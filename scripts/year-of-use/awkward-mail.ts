/**
 * Mail whose text reaches every mail-text column with the characters a database move trips
 * on: NUL, bytes that are not UTF-8, U+FFFF (and U+FFFF followed by '0' or '1', which look
 * like PostgreSQL mode's own escape), and 4-byte characters. Built as raw bytes so that the
 * invalid UTF-8 and the NUL reach the parser as a real sender would send them.
 *
 * Columns reached: from name and address, subject, preview, text and HTML bodies, headers,
 * Message-ID, the search texts, attachment file names and Content-IDs.
 */
const NASTY = 'nul\u0000 ffff\uffff esc\uffff0 esc\uffff1 emoji😀 clef𝄞'
/** Not UTF-8 at all: a lone continuation byte, a truncated sequence, an overlong NUL, 0xFF. */
const INVALID = Buffer.from([0x80, 0xc3, 0x28, 0xc0, 0x80, 0xff])

const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64')
const word = (text: string) => `=?UTF-8?B?${b64(text)}?=`
const ascii = (text: string) => Buffer.from(text, 'latin1')
const utf8 = (text: string) => Buffer.from(text, 'utf8')

/** One message to `to` with an attachment of `attachmentBytes` bytes (varied by `n`). */
export function awkwardMessage(to: string, n: number, attachmentBytes = 2048): Buffer {
  const attachment = Buffer.alloc(attachmentBytes)
  for (let i = 0; i < attachment.length; i++) attachment[i] = (i * 31 + n * 7) % 256
  const CRLF = '\r\n'
  const parts: Buffer[] = [
    ascii(`From: ${word(`Ann ${NASTY} #${n}`)} <ann.${n}@example.com>${CRLF}`),
    ascii(`To: ${to}${CRLF}`),
    ascii(`Subject: ${word(`order ${n}: ${NASTY}`)} raw:`),
    INVALID,
    ascii(CRLF),
    ascii(`Message-ID: <m${n}.${word('\uffff')}@example.com>${CRLF}`),
    ascii('X-Raw: 8bit '),
    utf8(NASTY),
    INVALID,
    ascii(CRLF),
    ascii(`MIME-Version: 1.0${CRLF}Content-Type: multipart/mixed; boundary="b${n}"${CRLF}${CRLF}`),
    ascii(`--b${n}${CRLF}Content-Type: multipart/alternative; boundary="a${n}"${CRLF}${CRLF}`),
    ascii(`--a${n}${CRLF}Content-Type: text/plain; charset=utf-8${CRLF}Content-Transfer-Encoding: 8bit${CRLF}${CRLF}`),
    utf8(`Hello ${n}. ${NASTY} `),
    INVALID,
    ascii(
      `${CRLF}--a${n}${CRLF}Content-Type: text/html; charset=utf-8${CRLF}Content-Transfer-Encoding: base64${CRLF}${CRLF}`,
    ),
    ascii(`${Buffer.concat([utf8(`<p>Hello ${n}. ${NASTY} `), INVALID, utf8('</p>')]).toString('base64')}${CRLF}`),
    ascii(`--a${n}--${CRLF}`),
    ascii(`--b${n}${CRLF}Content-Type: application/octet-stream; name="f.bin"${CRLF}`),
    ascii(`Content-Disposition: attachment; filename*=UTF-8''${encodeURIComponent(`file ${n} ${NASTY}.bin`)}${CRLF}`),
    ascii(`Content-ID: <cid${n}.`),
    utf8('\uffff0😀'),
    ascii(`@example.com>${CRLF}Content-Transfer-Encoding: base64${CRLF}${CRLF}`),
    ascii(`${attachment.toString('base64').replace(/.{1,76}/g, `$&${CRLF}`)}`),
    ascii(`--b${n}--${CRLF}`),
  ]
  return Buffer.concat(parts)
}
