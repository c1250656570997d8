/** The console's header rules as a unit: only a sandboxed response may bring its own CSP. */
import { expect, test } from 'bun:test'
import { CONSOLE_CSP, sameOrigin, securityHeaders } from '../../src/console/security.ts'

test('a handler cannot loosen the CSP or allow framing unless its response is sandboxed', () => {
  for (const own of [
    "default-src *; script-src 'unsafe-inline'",
    "script-src 'self' 'unsafe-inline'; frame-ancestors *",
    'default-src *; sandboxed-not',
    '',
  ]) {
    const headers = new Headers(own ? { 'content-security-policy': own, 'x-frame-options': 'ALLOWALL' } : {})
    securityHeaders(headers)
    expect(headers.get('content-security-policy')).toBe(CONSOLE_CSP)
    expect(headers.get('x-frame-options')).toBe('DENY')
    expect(headers.get('x-content-type-options')).toBe('nosniff')
    expect(headers.get('referrer-policy')).toBe('same-origin')
  }
})

test('a sandboxed response keeps its CSP and may be framed by this origin', () => {
  const headers = new Headers({ 'content-security-policy': "sandbox; default-src 'none'; img-src data:" })
  securityHeaders(headers)
  expect(headers.get('content-security-policy')).toBe("sandbox; default-src 'none'; img-src data:")
  expect(headers.get('x-frame-options')).toBe('SAMEORIGIN')
  expect(headers.get('x-content-type-options')).toBe('nosniff')
})

test('sameOrigin accepts BASE_URL or the request host, and nothing else', () => {
  const post = (headers: Record<string, string>) =>
    new Request('http://127.0.0.1:3000/console/sign-out', { method: 'POST', headers })
  const base = 'https://mail.example.com'
  expect(sameOrigin(post({ origin: base }), base)).toBe(true)
  expect(sameOrigin(post({ origin: 'http://127.0.0.1:3000', host: '127.0.0.1:3000' }), base)).toBe(true)
  expect(sameOrigin(post({ referer: `${base}/console/x` }), base)).toBe(true)
  const refused: Record<string, string>[] = [
    {},
    { origin: 'null' },
    { origin: 'https://mail.example.com.evil.test' },
    { origin: 'http://mail.example.com' },
    { referer: 'not a url' },
    { origin: 'https://evil.test', host: '127.0.0.1:3000' },
    { origin: 'http://127.0.0.1:3001', host: '127.0.0.1:3000' },
  ]
  for (const headers of refused) expect(sameOrigin(post(headers), base)).toBe(false)
})
