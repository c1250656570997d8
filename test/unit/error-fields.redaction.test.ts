/**
 * errorFields (src/log.ts) never writes a failed statement's parameters: Drizzle's wrapper
 * repeats the statement and every parameter (addresses, subjects, search terms) in its
 * message and stack, so the driver's own error is logged in its place.
 */
import { expect, test } from 'bun:test'
import { DrizzleQueryError } from 'drizzle-orm/errors'
import { errorFields } from '../../src/log.ts'

test("a wrapped query error logs the driver's message, not the statement or its parameters", () => {
  const driver = Object.assign(new Error('date/time field value out of range: "+010000-01-01T00:00:00.000Z"'), {
    name: 'PostgresError',
  })
  const wrapped = new DrizzleQueryError(
    'select * from messages where search_sender = $1 and received_at >= $2',
    ['someone@secret.example', '+010000-01-01T00:00:00.000Z'],
    driver,
  )
  const fields = errorFields(wrapped)
  const line = JSON.stringify(fields)
  expect(line).not.toContain('someone@secret.example')
  expect(line).not.toContain('select * from messages')
  expect(fields.error).toBe(driver.message)
  expect(fields.error_name).toBe('PostgresError')
})

test('any other error is logged as before', () => {
  const error = new TypeError('boom')
  expect(errorFields(error)).toEqual({ error: 'boom', error_name: 'TypeError', stack: error.stack })
  expect(errorFields('text')).toEqual({ error: 'text' })
})
