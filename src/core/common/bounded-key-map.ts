/**
 * A Map whose keys take at most MAX_KEY_LENGTH characters: a longer key is kept as its
 * SHA-256, so a count keyed by something a client sends (an email, an address) costs the
 * same few bytes however long the value. With a cap on entries this bounds the memory of
 * the sign-in throttle (one long value per attempt once grew it by the value's length:
 * bench/README.md).
 * In helpers/: it knows nothing of users or sign-in, so any count keyed by client input may use it.
 */
import { createHash } from 'node:crypto'

export const MAX_KEY_LENGTH = 80

const bounded = (key: string) =>
  key.length <= MAX_KEY_LENGTH ? key : `sha256:${createHash('sha256').update(key).digest('base64url')}`

export class BoundedKeyMap<V> extends Map<string, V> {
  override get(key: string): V | undefined {
    return super.get(bounded(key))
  }

  override set(key: string, value: V): this {
    return super.set(bounded(key), value)
  }

  override has(key: string): boolean {
    return super.has(bounded(key))
  }

  override delete(key: string): boolean {
    return super.delete(bounded(key))
  }
}
