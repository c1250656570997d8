import { DomainError } from '../core/errors.ts'

/** Reads a request body as text, refusing (without buffering the rest) once it passes `maxBytes`. */
export async function readBodyText(request: Request, maxBytes: number): Promise<string> {
  if (!request.body) return ''
  const reader = request.body.getReader()
  const chunks: Uint8Array[] = []
  let size = 0
  for (;;) {
    const { value, done } = await reader.read()
    if (done) break
    size += value.byteLength
    if (size > maxBytes) {
      await reader.cancel().catch(() => undefined)
      throw new DomainError('invalid_json', `Request body must be a JSON object of at most ${maxBytes} bytes.`)
    }
    chunks.push(value)
  }
  return Buffer.concat(chunks).toString('utf8')
}
