import { DomainError } from '../core/common/errors.ts'
import { HttpProtocolError } from './request-target.ts'

/**
 * Reads a request body as text, refusing (without buffering the rest) once it passes
 * `maxBytes`, and giving up once `timeoutMs` has passed since the read began. The budget
 * is total, not idle: a client sending one byte a second would otherwise keep the request
 * open for as long as the 255 s idle timeout that long polls need.
 */
export async function readBodyText(request: Request, maxBytes: number, timeoutMs: number): Promise<string> {
  if (!request.body) return ''
  const reader = request.body.getReader()
  const chunks: Uint8Array[] = []
  let size = 0
  let timer: ReturnType<typeof setTimeout> | undefined
  const expired = new Promise<'expired'>((resolve) => {
    timer = setTimeout(() => resolve('expired'), timeoutMs)
  })
  try {
    for (;;) {
      const next = await Promise.race([reader.read(), expired])
      if (next === 'expired') {
        await reader.cancel().catch(() => undefined)
        throw new HttpProtocolError(408, 'request_timeout', `The request body did not arrive within ${timeoutMs} ms.`)
      }
      const { value, done } = next
      if (done) break
      size += value.byteLength
      if (size > maxBytes) {
        await reader.cancel().catch(() => undefined)
        throw new DomainError('invalid_json', `Request body must be a JSON object of at most ${maxBytes} bytes.`)
      }
      chunks.push(value)
    }
  } finally {
    clearTimeout(timer)
  }
  return Buffer.concat(chunks).toString('utf8')
}
