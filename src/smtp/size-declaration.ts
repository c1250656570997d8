/**
 * smtp-server checks `MAIL FROM ... SIZE=` against its `size` option before our onMailFrom
 * runs and refuses with its own text; no option changes that text, and without `size` the
 * limit would no longer be advertised in EHLO. So each connection's check is wrapped to
 * keep smtp-server's decision and put our reply text (src/smtp/replies.ts) in its place.
 * assertSizeCheckHook() fails start-up loudly if an smtp-server upgrade removes the method.
 */
import { SMTPConnection } from 'smtp-server/lib/smtp-connection.js'
import type { SmtpConnection } from './connection.ts'

interface ParamCheck {
  _validateMailParams(parsed: unknown): { code: number; message: string; enhancedCode: string | null } | null
}

export function assertSizeCheckHook(): void {
  if (typeof (SMTPConnection.prototype as unknown as Partial<ParamCheck>)._validateMailParams !== 'function') {
    throw new Error(
      'smtp-server has no SMTPConnection#_validateMailParams any more: ' +
        'src/smtp/size-declaration.ts needs a new way to word the SIZE= refusal',
    )
  }
}

export function wordSizeRefusal(connection: SmtpConnection, text: string): void {
  const target = connection as unknown as ParamCheck
  const check = target._validateMailParams.bind(connection)
  target._validateMailParams = (parsed) => {
    const error = check(parsed)
    return error && error.code === 552 ? { ...error, message: text } : error
  }
}
