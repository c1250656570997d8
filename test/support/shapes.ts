/** Shape checks shared by the API tests: the spec's id, timestamp and envelope shapes. */
import { expect } from 'bun:test'
import { errorCode, type ApiResponse } from './harness.ts'

export const INBOX_ID = /^inbox_[0-9a-f]{32}$/
export const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
export const GENERATED_LOCAL_PART = /^[a-z]+-[a-z]+-[0-9a-f]{16}$/

/** Asserts status and code, the envelope, and that error.request_id equals X-Request-Id. */
export function expectError(response: ApiResponse, status: number, code: string): void {
  expect({ status: response.status, code: response.body?.error?.code, text: response.text }).toMatchObject({
    status,
    code,
  })
  expect(errorCode(response)).toBe(code)
  expect(Object.keys(response.body).sort()).toEqual(['error'])
  expect(Object.keys(response.body.error).sort()).toEqual(['code', 'message', 'request_id'])
  expect(response.headers.get('content-type') ?? '').toContain('application/json')
}

/** Asserts an Inbox resource exactly: no properties other than the spec's. */
export function expectInbox(inbox: any, receivingDomain = 'inbox.test'): void {
  expect(Object.keys(inbox).sort()).toEqual(['address', 'created_at', 'id', 'local_part', 'status'])
  expect(inbox.id).toMatch(INBOX_ID)
  expect(inbox.status).toBe('active')
  expect(inbox.created_at).toMatch(TIMESTAMP)
  expect(inbox.local_part).toMatch(/^[a-z0-9][a-z0-9-]{1,38}[a-z0-9]$/)
  expect(inbox.address).toBe(`${inbox.local_part}@${receivingDomain}`)
}
