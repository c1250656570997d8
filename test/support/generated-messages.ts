/**
 * Generated edge cases for the corpus test: the largest message the limits allow, and a
 * message with 1,000 attachments. Content comes from a seeded PRNG, so runs are repeatable.
 */
const MiB = 1024 * 1024

function pseudoRandomBytes(length: number, seed: number): Buffer {
  const bytes = Buffer.alloc(length)
  let state = seed >>> 0 || 1
  for (let i = 0; i < length; i++) {
    state ^= state << 13
    state ^= state >>> 17
    state ^= state << 5
    bytes[i] = state & 0xff
  }
  return bytes
}

const base64Lines = (bytes: Buffer): string => bytes.toString('base64').replace(/.{1,76}/g, '$&\r\n')

function lines(count: number, width: number, seed: string): string {
  const line = `${seed} `
    .repeat(Math.ceil(width / (seed.length + 1)))
    .slice(0, width)
    .trimEnd()
  return `${line}\r\n`.repeat(count)
}

/**
 * About 9.9 MiB: a 690 KiB text body, a 690 KiB HTML body and two 3.1 MiB attachments, each
 * within its limit (1 MiB per body, 5 MiB per attachment, 10 MiB decoded in all, 10 MiB raw).
 */
export function largestLegalMessage(): Buffer {
  const head = [
    'From: Big Sender <big@sender.example>',
    'To: corpus@inbox.test',
    'Subject: =?utf-8?Q?Gro=C3=9Fe_Nachricht?=',
    'MIME-Version: 1.0',
    'Content-Type: multipart/mixed; boundary="big"',
    '',
    '',
  ].join('\r\n')
  const parts = [
    '--big\r\nContent-Type: multipart/alternative; boundary="alt"\r\n\r\n',
    `--alt\r\nContent-Type: text/plain; charset=us-ascii\r\n\r\n${lines(9000, 78, 'text')}`,
    `--alt\r\nContent-Type: text/html; charset=us-ascii\r\n\r\n<html><body>\r\n${lines(9000, 78, '<p>html</p>')}</body></html>\r\n--alt--\r\n`,
    `--big\r\nContent-Type: application/octet-stream\r\nContent-Transfer-Encoding: base64\r\nContent-Disposition: attachment; filename="one.bin"\r\n\r\n${base64Lines(pseudoRandomBytes(3.1 * MiB, 1))}`,
    `--big\r\nContent-Type: image/jpeg\r\nContent-Transfer-Encoding: base64\r\nContent-Disposition: attachment; filename="two.jpg"\r\n\r\n${base64Lines(pseudoRandomBytes(3.1 * MiB, 2))}`,
  ]
  return Buffer.from(`${head}${parts.join('')}--big--\r\n`, 'latin1')
}

/** 1,000 distinct 1 KiB attachments, alternating base64, quoted-printable and 7bit. */
export function thousandAttachments(): Buffer {
  const head = [
    'From: Many <many@sender.example>',
    'To: corpus@inbox.test',
    'Subject: 1000 attachments',
    'MIME-Version: 1.0',
    'Content-Type: multipart/mixed; boundary="many"',
    '',
    '--many',
    'Content-Type: text/plain',
    '',
    'See attached.',
    '',
  ].join('\r\n')
  const parts: string[] = []
  for (let i = 0; i < 1000; i++) {
    const name = `Content-Disposition: attachment; filename="part-${i}.txt"`
    if (i % 3 === 0)
      parts.push(
        `--many\r\nContent-Type: application/octet-stream\r\nContent-Transfer-Encoding: base64\r\n${name}\r\n\r\n${base64Lines(pseudoRandomBytes(1024, i + 10))}`,
      )
    else if (i % 3 === 1)
      parts.push(
        `--many\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n${name}\r\n\r\nline ${i} caf=C3=A9=\r\n continued\r\n${lines(12, 70, `qp${i}`)}\r\n`,
      )
    else parts.push(`--many\r\nContent-Type: text/csv\r\n${name}\r\n\r\n${lines(14, 70, `csv,${i}`)}`)
  }
  return Buffer.from(`${head}${parts.join('')}--many--\r\n`, 'latin1')
}
