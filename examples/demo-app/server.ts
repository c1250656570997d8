/**
 * A tiny sign-up application for the examples to test: a form, a welcome mail with a
 * confirmation link and a one-time code (sent over SMTP with nodemailer, as a real app
 * would), and a confirmation page. Replace it with your own application.
 *
 * It reads the examples' variables: it listens where APP_URL says (default
 * http://127.0.0.1:4000; port 0 picks a free one) and sends to PIGEONHOLE_SMTP (host:port,
 * default 127.0.0.1:2525).
 *
 *   PIGEONHOLE_SMTP=127.0.0.1:2525 APP_URL=http://127.0.0.1:4000 bun examples/demo-app/server.ts
 */
import nodemailer from 'nodemailer'
import { smtpFromEnv } from '../pigeonhole.ts'

const port = Number(new URL(process.env.APP_URL || 'http://127.0.0.1:4000').port || 80)
const transport = nodemailer.createTransport({ ...smtpFromEnv(), secure: false, ignoreTLS: true })
const pending = new Map<string, string>() // token → address
// The check a typical sign-up form makes (zod's default email pattern): @localhost fails it.
const EMAIL = /^(?!\.)(?!.*\.\.)([A-Za-z0-9_'+\-.]*)[A-Za-z0-9_+-]@([A-Za-z0-9][A-Za-z0-9-]*\.)+[A-Za-z]{2,}$/
const escapeHtml = (value: string) => value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
const page = (body: string, status = 200) =>
  new Response(`<!doctype html><meta charset="utf-8"><title>Demo</title>${body}`, {
    status,
    headers: { 'content-type': 'text/html; charset=utf-8' },
  })

const server = Bun.serve({
  port,
  hostname: '127.0.0.1',
  async fetch(request) {
    const url = new URL(request.url)
    if (request.method === 'GET' && url.pathname === '/') {
      return page(
        '<h1>Sign up</h1><form method="post" action="/signup"><label>Email <input name="email" type="email"></label><button>Sign up</button></form>',
      )
    }
    if (request.method === 'POST' && url.pathname === '/signup') {
      const email = String((await request.formData()).get('email') ?? '')
      if (!EMAIL.test(email)) return page(`<p role="alert">Please enter a valid email address.</p>`, 422)
      const token = crypto.randomUUID()
      const code = String(crypto.getRandomValues(new Uint32Array(1))[0]! % 1_000_000).padStart(6, '0')
      pending.set(token, email)
      const link = `${url.origin}/confirm?token=${token}`
      await transport.sendMail({
        from: 'Demo App <hello@demo-app.example>',
        to: email,
        subject: 'Welcome to Demo App',
        text: `Confirm your address: ${link}\nYour sign-in code is ${code}.`,
        html: `<p><a href="${link}">Confirm your address</a></p><p>Your sign-in code is <b>${code}</b>.</p>`,
      })
      return page(`<p role="status">Check your inbox at ${escapeHtml(email)}.</p>`)
    }
    if (request.method === 'GET' && url.pathname === '/confirm') {
      const email = pending.get(url.searchParams.get('token') ?? '')
      if (!email) return page('<p role="alert">Unknown or used link.</p>', 404)
      pending.delete(url.searchParams.get('token')!)
      return page(`<h1>Confirmed</h1><p>${escapeHtml(email)} is confirmed.</p>`)
    }
    return page('Not found', 404)
  },
})
console.log(`demo app on http://127.0.0.1:${server.port}`)
