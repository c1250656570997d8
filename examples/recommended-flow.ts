/**
 * The recommended test flow against a running Pigeonhole, as a script you can copy into
 * your own test suite: getUsage → createInbox → send mail → wait → assert → deleteInbox.
 *
 *   PIGEONHOLE_URL=http://localhost:3000 PIGEONHOLE_KEY=ph_live_... \
 *   PIGEONHOLE_SMTP_PORT=2525 bun examples/recommended-flow.ts
 *
 * Sending uses nodemailer, as the application under test would.
 */
import nodemailer from 'nodemailer'

const base = process.env.PIGEONHOLE_URL ?? 'http://localhost:3000'
const key = process.env.PIGEONHOLE_KEY
const smtpHost = process.env.PIGEONHOLE_SMTP_HOST ?? '127.0.0.1'
const smtpPort = Number(process.env.PIGEONHOLE_SMTP_PORT ?? 2525)
if (!key) throw new Error('set PIGEONHOLE_KEY (make one with: bun src/cli.ts keys create <org-id>)')

// biome-ignore lint/suspicious/noExplicitAny: the example reads fields of JSON answers without declaring their types
const api = async (method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> => {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  })
  return { status: response.status, body: response.status === 204 ? null : await response.json() }
}

// 1. Is there room this month?
const usage = await api('GET', '/v1/usage')
if (usage.body.emails.remaining < 1) throw new Error('monthly email quota used up')

// 2. A fresh inbox for this test.
const inbox = (await api('POST', '/v1/inboxes')).body.data

try {
  // 3. Start waiting first, then let the application send (here: nodemailer).
  const waiting = api('GET', `/v1/inboxes/${inbox.id}/messages?wait_seconds=180&limit=1&include=content`)
  const transport = nodemailer.createTransport({ host: smtpHost, port: smtpPort, secure: false, ignoreTLS: true })
  await transport.sendMail({
    from: 'Shop <orders@shop.example>',
    to: inbox.address,
    subject: 'Your order #1042',
    text: 'Thanks! Your code is 884213.',
    html: '<p>Thanks! Your code is <b>884213</b>.</p>',
  })

  // 4. Assert on what arrived.
  const { status, body } = await waiting
  if (status !== 200) throw new Error(`no message arrived (HTTP ${status})`)
  const message = body.data[0]
  if (message.subject !== 'Your order #1042') throw new Error(`unexpected subject ${message.subject}`)
  const code = /\b(\d{6})\b/.exec(message.text)?.[1]
  if (code !== '884213') throw new Error('code not found in the text body')
  console.log(`ok: "${message.subject}" from ${message.from.address}, code ${code}`)
} finally {
  // 5. Clean up: frees the inbox slot (monthly email usage is not given back).
  await api('DELETE', `/v1/inboxes/${inbox.id}`)
}
