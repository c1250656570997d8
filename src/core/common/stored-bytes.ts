/**
 * Stored bytes are verified before they are served. A raw source and each attachment's
 * bytes carry a SHA-256 written in the same transaction (computed where the message is
 * parsed, off the event loop for anything large); serving them checks it again, so a
 * flipped bit on the volume (or a bad restore) answers 500 internal_error with one error
 * line and a metric instead of the wrong bytes. Rows stored before the hashes existed have
 * none and are served unchecked: hashing them now would only bless whatever they hold.
 *
 * Cost: one SHA-256 pass over the bytes served. Past OFF_LOOP_BYTES it runs on WebCrypto's
 * worker threads (`crypto.subtle.digest`), not the event loop: a 5 MiB attachment costs about
 * 5 ms of hashing, and a few downloads at once would otherwise hold every other request that
 * long each (another organisation's calls among them). Smaller ones hash in place: the
 * hand-off costs more than they do.
 */
import { DomainError } from './errors.ts'
import type { Logger } from '../../log.ts'

export type StoredBytesKind = 'message_source' | 'attachment'
export const STORED_BYTES_KINDS: readonly StoredBytesKind[] = ['message_source', 'attachment']

export const sha256Hex = (bytes: Uint8Array): string => new Bun.CryptoHasher('sha256').update(bytes).digest('hex')

/** From this size a hash is taken off the event loop. */
const OFF_LOOP_BYTES = 256 * 1024

/** SHA-256 in hex, off the event loop for large inputs (above). */
async function sha256HexOffLoop(bytes: Uint8Array): Promise<string> {
  if (bytes.byteLength < OFF_LOOP_BYTES) return sha256Hex(bytes)
  // The cast only narrows the DOM typing; a Buffer's memory is never shared here.
  return Buffer.from(await crypto.subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>)).toString('hex')
}

/** `bytes` when they match `expected` (or when the row predates hashes); otherwise logs, counts and throws. */
export async function verifiedBytes(
  s: { logger: Logger },
  kind: StoredBytesKind,
  id: string,
  bytes: Buffer,
  expected: string | null,
): Promise<Buffer> {
  if (expected === null) return bytes
  const actual = await sha256HexOffLoop(bytes)
  if (actual === expected) return bytes
  // The metric follows this line (src/metrics/log-observer.ts).
  s.logger.error('stored_bytes_corrupt', {
    kind,
    id,
    size_bytes: bytes.byteLength,
    expected_sha256: expected,
    actual_sha256: actual,
  })
  throw new DomainError(
    'internal_error',
    'The stored bytes failed their integrity check, so they are ' +
      'not served. The operator has been told in the server log.',
  )
}
