/** Builds multipart test messages whose attachment bytes the test keeps to compare later. */
import { randomBytes } from 'node:crypto'

export interface Attachment {
  filename: string
  contentType: string
  bytes: Buffer
}

export function randomAttachment(filename: string, size: number): Attachment {
  return { filename, contentType: 'application/octet-stream', bytes: randomBytes(size) }
}

const base64Lines = (bytes: Buffer) => bytes.toString('base64').replace(/.{1,76}/g, '$&\r\n')

export function multipartMessage(fields: {
  to: string
  subject: string
  text: string
  attachments: Attachment[]
}): string {
  const boundary = `b-${randomBytes(8).toString('hex')}`
  const parts = [
    `--${boundary}\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n${fields.text}\r\n`,
    ...fields.attachments.map(
      (a) =>
        `--${boundary}\r\nContent-Type: ${a.contentType}; name="${a.filename}"\r\nContent-Disposition: attachment; filename="${a.filename}"\r\nContent-Transfer-Encoding: base64\r\n\r\n${base64Lines(a.bytes)}`,
    ),
  ]
  return [
    'From: Sender <sender@example.com>',
    `To: ${fields.to}`,
    `Subject: ${fields.subject}`,
    `Message-ID: <${randomBytes(8).toString('hex')}@example.com>`,
    'MIME-Version: 1.0',
    `Content-Type: multipart/mixed; boundary="${boundary}"`,
    '',
    `${parts.join('')}--${boundary}--\r\n`,
  ].join('\r\n')
}
