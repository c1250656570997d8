/**
 * Hostile message shapes at the limits, as raw RFC 5322 text. Those in ADVERSARIAL stay
 * within every limit, so they reach the parser and the preview, which is where a non-linear
 * step would hold the event loop; those in REFUSED pass a structural limit and are refused
 * by the scan that runs before parsing.
 */
const MiB = 1024 * 1024
const HEAD = ['From: attacker@example.net', 'To: {to}', 'Subject: hostile', 'MIME-Version: 1.0']

/** `unit` repeated to `bytes`, cut into lines of at most 998 characters (RFC 5322's limit). */
function lines(unit: string, bytes: number): string {
  const flat = unit.repeat(Math.ceil(bytes / unit.length)).slice(0, bytes)
  const out: string[] = []
  for (let at = 0; at < flat.length; at += 998) out.push(flat.slice(at, at + 998))
  return out.join('\r\n')
}

const html = (to: string, body: string) =>
  [...HEAD, 'Content-Type: text/html; charset=utf-8', '', body, ''].join('\r\n').replace('{to}', to)

/** Just under the 1 MiB body limit once line breaks are added. */
const BODY = MiB - 32 * 1024

/**
 * The most expensive single-part shapes found for the parser, at the largest size that is
 * parsed on the event loop instead of in a worker (PARSE_ON_EVENT_LOOP_MAX_BYTES): no line
 * starts with `--`. `unit` repeats between `prefix` and `suffix` to exactly that size; each
 * ends with CRLF, so it goes on the wire as it is, followed by `.` CRLF.
 */
export function singlePartAt(bytes: number, to: string, prefix: string, unit: string, suffix: string): string {
  const start = prefix.replace('{to}', to)
  const room = bytes - start.length - suffix.length - 'X-Pad: \r\n'.length
  return `X-Pad: ${'x'.repeat(room % unit.length)}\r\n${start}${unit.repeat(Math.floor(room / unit.length))}${suffix}`
}

const HEAD_TEXT = `${HEAD.join('\r\n')}\r\n`
export const SINGLE_PART_SHAPES: Record<string, [prefix: string, unit: string, suffix: string]> = {
  'one bare LF line after another': [`${HEAD_TEXT}\r\n`, '\n', '\r\n'],
  'tiny headers': [HEAD_TEXT, 'X: y\r\n', '\r\nbody\r\n'],
  'a header folded at every character': [`${HEAD_TEXT}X-F: a`, '\r\n x', '\r\n\r\nbody\r\n'],
  'address groups in From': ['To: {to}\r\nSubject: s\r\nFrom: ', 'g:a@b.c;', '\r\n\r\nbody\r\n'],
  'unclosed angle brackets in From': ['To: {to}\r\nSubject: s\r\nFrom: ', '<', '\r\n\r\nbody\r\n'],
  'short base64 lines': [`${HEAD_TEXT}Content-Transfer-Encoding: base64\r\n\r\n`, 'QQ==\r\n', ''],
  'quoted-printable soft breaks': [`${HEAD_TEXT}Content-Transfer-Encoding: quoted-printable\r\n\r\n`, '=\r\n', ''],
  'many addresses in To': ['From: a@b.c\r\nSubject: s\r\nTo: {to}', ', a@b.c', '\r\n\r\nbody\r\n'],
  'RFC 2231 parameter continuations': [
    `${HEAD_TEXT}Content-Type: text/plain`,
    "; name*0*=utf-8''%C3%A9",
    '\r\n\r\nbody\r\n',
  ],
}

export const ADVERSARIAL: Record<string, (to: string) => string> = {
  'unclosed <script': (to) => html(to, lines('<script', BODY)),
  'unclosed <style': (to) => html(to, lines('<style ', BODY)),
  'unclosed <!--': (to) => html(to, lines('<!--', BODY)),
  'unclosed <': (to) => html(to, lines('<', BODY)),
  'a huge attribute': (to) => html(to, `<a title="${lines('x', BODY)}">t</a>`),
  'an entity flood': (to) => html(to, lines('&amp;&#x1F600;&lt', BODY)),
  '5,000 parts (the most LIMIT_MESSAGE_PARTS allows)': (to) => {
    const parts = Array.from({ length: 4_999 }, (_, i) => `--b\r\nContent-Type: text/plain\r\n\r\npart ${i}`)
    return [...HEAD, 'Content-Type: multipart/mixed; boundary="b"', '', ...parts, '--b--', '']
      .join('\r\n')
      .replace('{to}', to)
  },
  'a header folded 200,000 times': (to) =>
    [...HEAD, `X-Folded: start${'\r\n x'.repeat(200_000)}`, 'Content-Type: text/plain', '', 'body', '']
      .join('\r\n')
      .replace('{to}', to),
  '20,000 headers': (to) =>
    [
      ...HEAD,
      ...Array.from({ length: 20_000 }, (_, i) => `X-H${i}: ${'v'.repeat(60)}`),
      'Content-Type: text/plain',
      '',
      'body',
      '',
    ]
      .join('\r\n')
      .replace('{to}', to),
  '100,000 tiny headers': (to) =>
    [...HEAD, ...Array.from({ length: 100_000 }, (_, i) => `X${i % 10}: y`), 'Content-Type: text/plain', '', 'body', '']
      .join('\r\n')
      .replace('{to}', to),
  'text and HTML bodies of 1 MiB each': (to) => {
    const body = (type: string, char: string) =>
      [`--b`, `Content-Type: text/${type}`, '', lines(char, BODY)].join('\r\n')
    return [
      ...HEAD,
      'Content-Type: multipart/alternative; boundary="b"',
      '',
      body('plain', 't'),
      body('html', 'h'),
      '--b--',
      '',
    ]
      .join('\r\n')
      .replace('{to}', to)
  },
}

/** Shapes refused before parsing, with their reply code: tens of thousands of parts would cost the parser about 2 KiB each. */
export const REFUSED: Record<string, { raw: (to: string) => string; code: number }> = {
  '30,000 parts': {
    raw: (to) =>
      [
        ...HEAD,
        'Content-Type: multipart/mixed; boundary="b"',
        '',
        ...Array.from({ length: 30_000 }, (_, i) => `--b\r\nContent-Type: text/plain\r\n\r\npart ${i}`),
        '--b--',
        '',
      ]
        .join('\r\n')
        .replace('{to}', to),
    code: 552,
  },
  '299,000 empty parts': {
    raw: (to) =>
      [...HEAD, 'Content-Type: multipart/mixed; boundary=b', '', '--b\r\n'.repeat(299_000)]
        .join('\r\n')
        .replace('{to}', to),
    code: 552,
  },
  '301,000 lines': { raw: (to) => [...HEAD, '', 'x\r\n'.repeat(301_000)].join('\r\n').replace('{to}', to), code: 552 },
}
