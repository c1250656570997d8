/** Console cookie names carry the port on a loopback BASE_URL, so two local servers do not sign each other out. */
import { expect, test } from 'bun:test'
import { cookieNamesFor } from '../../src/console/cookies.ts'

test('loopback addresses get the port in every name; a public host keeps the plain names', () => {
  for (const base of [
    'http://localhost:8080',
    'http://127.0.0.1:8080/',
    'http://127.5.6.7:8080',
    'http://[::1]:8080',
    'http://app.localhost:8080',
  ]) {
    expect(cookieNamesFor(base)).toEqual({
      session: 'ph_session_8080',
      csrf: 'ph_csrf_8080',
      failed: 'ph_failed_8080',
      shown: 'ph_shown_8080_',
    })
  }
  expect(cookieNamesFor('http://localhost').session).toBe('ph_session_80')
  expect(cookieNamesFor('https://localhost').session).toBe('ph_session_443')
  for (const base of [
    'https://mail.example.com',
    'https://mail.example.com:8443',
    'http://10.0.0.5:3000',
    'https://localhost.example.com',
  ]) {
    expect(cookieNamesFor(base)).toEqual({
      session: 'ph_session',
      csrf: 'ph_csrf',
      failed: 'ph_failed',
      shown: 'ph_shown_',
    })
  }
})
