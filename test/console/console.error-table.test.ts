/**
 * The console shows each refusal of the domain verbs it shares with /v1 with one status:
 * every not-found is the same 404 (with nothing of the verb's message, so another
 * organisation's id reads like a made-up one), a bad value 400 with the verb's message,
 * `internal_error` a 500, `rate_limit_exceeded` (the download slots the console shares with /v1)
 * 429 as the API answers, and every other refusal 409 with the verb's message and its retry hint.
 */
import { expect, test } from 'bun:test'
import { Refusal } from '../../src/core/common/refusals.ts'
import { DomainError, type ErrorCode } from '../../src/core/common/errors.ts'
import { asConsoleError, DOMAIN_KIND, STATUS } from '../../src/console/errors.ts'

const codes = Object.keys(DOMAIN_KIND) as ErrorCode[]

test('every domain error code has its status on a console page', () => {
  const statusOf = (code: ErrorCode) => {
    const shown = asConsoleError(new DomainError(code, `verb says ${code}`, { retryAfterSeconds: 7 }))
    return shown instanceof Refusal ? STATUS[shown.kind] : 500
  }
  const expected = (code: ErrorCode) =>
    code === 'internal_error'
      ? 500
      : code.endsWith('not_found')
        ? 404
        : code.startsWith('invalid_')
          ? 400
          : code === 'rate_limit_exceeded'
            ? 429
            : 409
  for (const code of codes) expect(statusOf(code), code).toBe(expected(code))
  expect(codes).toContain('inbox_quota_exceeded')
  expect(codes).toContain('storage_unavailable')
})

test("a not-found says nothing more; other refusals keep the verb's message, and a conflict or a throttle its retry hint", () => {
  const notFound = asConsoleError(new DomainError('message_not_found', 'No message msg_1 here')) as Refusal
  expect([notFound.kind, notFound.message]).toEqual(['not_found', 'Not found.'])
  const invalid = asConsoleError(new DomainError('invalid_prefix', 'The prefix is too long')) as Refusal
  expect([invalid.kind, invalid.message]).toEqual(['invalid', 'The prefix is too long'])
  const busy = asConsoleError(new DomainError('rate_limit_exceeded', 'Slow down', { retryAfterSeconds: 3 })) as Refusal
  expect([busy.kind, busy.message, busy.retryAfterSeconds]).toEqual(['throttled', 'Slow down', 3])
  const inProgress = asConsoleError(
    new DomainError('idempotency_in_progress', 'Still running', { retryAfterSeconds: 1 }),
  ) as Refusal
  expect([inProgress.kind, inProgress.retryAfterSeconds]).toEqual(['conflict', 1])
  const internal = new DomainError('internal_error', 'bytes fail their check')
  expect(asConsoleError(internal)).toBe(internal)
  const other = new Error('not ours')
  expect(asConsoleError(other)).toBe(other)
})

test('every console refusal kind has a status', () => {
  expect(STATUS).toEqual({
    not_found: 404,
    forbidden: 403,
    invalid: 400,
    conflict: 409,
    throttled: 429,
    unauthenticated: 401,
  })
})
