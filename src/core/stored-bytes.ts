/**
 * Stored bytes are verified before they are served. A raw source and each attachment's
 * bytes carry a SHA-256 written in the same transaction (computed where the message is
 * parsed, off the event loop for anything large); serving them checks it again, so a
 * flipped bit on the volume (or a bad restore) answers 500 internal_error with one error
 * line and a metric instead of the wrong bytes. Rows stored before the hashes existed have
 * none and are served unchecked: hashing them now would only bless whatever they hold.
 *
 * Cost: one SHA-256 pass over the bytes served, on the event loop; the largest source stays
 * well inside the 50 ms event-loop bound, a typical one costs nothing measurable (figures in
 * bench/README.md).
 */
import { DomainError } from './errors.ts'
import type { Logger } from '../log.ts'

export type StoredBytesKind = 'message_source' | 'attachment'
export const STORED_BYTES_KINDS: readonly StoredBytesKind[] = ['message_source', 'attachment']

export const sha256Hex = (bytes: Uint8Array): string => new Bun.CryptoHasher('sha256').update(bytes).digest('hex')

/** `bytes` when they match `expected` (or when the row predates hashes); otherwise logs, counts and throws. */
export function verifiedBytes(s: { logger: Logger }, kind: StoredBytesKind, id: string, bytes: Buffer, expected: string | null): Buffer {
  if (expected === null) return bytes
  const actual = sha256Hex(bytes)
  if (actual === expected) return bytes
  // The metric follows this line (src/metrics/log-observer.ts).
  s.logger.error('stored_bytes_corrupt', { kind, id, size_bytes: bytes.byteLength, expected_sha256: expected, actual_sha256: actual })
  throw new DomainError('internal_error', 'The stored bytes failed their integrity check, so they are not served. The operator has been told in the server log.')
}
