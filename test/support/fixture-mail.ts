/**
 * A hand-written multipart message with every content feature getMessage reports:
 * text and html alternatives, an inline image with a Content-ID, an attachment with an
 * RFC 2231 non-ASCII filename, encoded-word headers in two charsets, and repeated headers.
 */
export const PNG = Buffer.from(
  '89504e470d0a1a0a0000000d4948445200000001000000010806000000' +
    '1f15c4890000000d49444154789c6360f8cf00000301010018dd8db00000000049454e44ae426082',
  'hex',
)
/** Every byte value, so any text-mode mangling of the attachment shows. */
export const BINARY = Buffer.from(Array.from({ length: 1024 }, (_, i) => (i * 7 + 3) % 256))
export const PDF_NAME = 'résumé ✓ 2026.pdf'

const wrap = (base64: string) => base64.replace(/.{1,76}/g, '$&\r\n').trimEnd()

export function richMessage(to: string): string {
  return [
    'Received: from relay.example by mx.inbox.test; Tue, 10 Mar 2026 08:00:01 +0000',
    'Received: from client.example by relay.example; Tue, 10 Mar 2026 08:00:00 +0000',
    'From: =?UTF-8?Q?Z=C3=BCrich_Team?= <team@zurich.example>',
    `To: Test Inbox <${to}>`,
    'Subject: =?ISO-8859-1?Q?Gr=FC=DFe?= aus =?UTF-8?B?WsO8cmljaA==?=',
    'Message-ID: <abc.123@zurich.example>',
    'X-Dup: one',
    'X-Dup: two',
    'MIME-Version: 1.0',
    'Content-Type: multipart/mixed; boundary="outer"',
    '',
    '--outer',
    'Content-Type: multipart/related; boundary="rel"',
    '',
    '--rel',
    'Content-Type: multipart/alternative; boundary="alt"',
    '',
    '--alt',
    'Content-Type: text/plain; charset=utf-8',
    'Content-Transfer-Encoding: quoted-printable',
    '',
    'Hallo Z=C3=BCrich, your code is 4711.',
    '--alt',
    'Content-Type: text/html; charset=iso-8859-1',
    'Content-Transfer-Encoding: quoted-printable',
    '',
    '<p>Hallo <b>Z=FCrich</b><img src=3D"cid:logo@zurich"></p>',
    '--alt--',
    '--rel',
    'Content-Type: image/png',
    'Content-Transfer-Encoding: base64',
    'Content-ID: <logo@zurich>',
    'Content-Disposition: inline; filename="logo.png"',
    '',
    wrap(PNG.toString('base64')),
    '--rel--',
    '--outer',
    'Content-Type: application/pdf',
    `Content-Disposition: attachment; filename*=UTF-8''${encodeURIComponent(PDF_NAME)}`,
    'Content-Transfer-Encoding: base64',
    '',
    wrap(BINARY.toString('base64')),
    '--outer--',
    '',
  ].join('\r\n')
}
