/**
 * The recommended test flow against a running Pigeonhole, as one script:
 * getUsage → createInbox → send mail → wait → assert → deleteInbox. Any refusal stops it
 * with the API's error code and message (PigeonholeError), never a TypeError.
 *
 *   PIGEONHOLE_URL=http://localhost:3000 PIGEONHOLE_KEY=ph_live_... \
 *   PIGEONHOLE_SMTP=127.0.0.1:2525 bun examples/recommended-flow.ts
 *
 * Sending uses nodemailer, as the application under test would.
 */
import nodemailer from 'nodemailer'
import { extractCode, Pigeonhole, smtpFromEnv } from './pigeonhole.ts'

try {
  const pigeonhole = Pigeonhole.fromEnv()
  const transport = nodemailer.createTransport({ ...smtpFromEnv(), secure: false, ignoreTLS: true })

  // 1. Is there room this month?
  const usage = await pigeonhole.getUsage()
  if (usage.emails.remaining < 1)
    throw new Error('The monthly email quota is used up (see the README, Troubleshooting).')

  // 2. A fresh inbox for this test.
  const inbox = await pigeonhole.createInbox()
  try {
    // 3. Let the application send (here: nodemailer), then wait for the mail.
    await transport.sendMail({
      from: 'Shop <orders@shop.example>',
      to: inbox.address,
      subject: 'Your order #1042',
      text: 'Thanks! Your code is 884213.',
      html: '<p>Thanks! Your code is <b>884213</b>.</p>',
    })
    const message = await pigeonhole.waitForMessage(inbox, { subject: 'Your order', timeout: 30_000 })

    // 4. Assert on what arrived.
    if (message.subject !== 'Your order #1042') throw new Error(`unexpected subject ${message.subject}`)
    const code = extractCode(message)
    if (code !== '884213') throw new Error(`unexpected code ${code}`)
    console.log(`ok: "${message.subject}" from ${message.from.address}, code ${code}`)
  } finally {
    // 5. Clean up: frees the inbox slot (monthly email usage is not given back).
    await pigeonhole.deleteInbox(inbox)
  }
} catch (error) {
  console.error(error instanceof Error ? error.message : error)
  process.exit(1)
}
