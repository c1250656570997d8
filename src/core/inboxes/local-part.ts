/**
 * Inbox local parts: validating a requested prefix, and generating one when none is given.
 */
import { randomBytes, randomInt } from 'node:crypto'
import { DomainError } from '../common/errors.ts'

/** createInbox rule: 3 to 40 characters, lowercase alphanumerics, hyphens only in the middle. */
export const PREFIX_PATTERN = /^[a-z0-9](?:[a-z0-9-]{1,38})[a-z0-9]$/

/** Role and system names a tester must never be handed, plus our own name. */
export const RESERVED_LOCAL_PARTS = new Set([
  'admin',
  'administrator',
  'abuse',
  'postmaster',
  'support',
  'security',
  'billing',
  'root',
  'hostmaster',
  'webmaster',
  'noreply',
  'no-reply',
  'donotreply',
  'contact',
  'pigeonhole',
])

/** Lowercases and checks a requested prefix; throws invalid_prefix with the reason. */
export function normalizePrefix(prefix: unknown): string {
  if (typeof prefix !== 'string') throw new DomainError('invalid_prefix', 'prefix must be a string.')
  // ASCII letters only: String#toLowerCase would turn e.g. the Kelvin sign (U+212A) into
  // "k", accepting a prefix the client did not write in the allowed alphabet.
  const normalized = prefix.replace(/[A-Z]/g, (letter) => letter.toLowerCase())
  if (normalized.length < 3 || normalized.length > 40)
    throw new DomainError('invalid_prefix', 'prefix must be 3 to 40 characters long.')
  if (!PREFIX_PATTERN.test(normalized)) {
    throw new DomainError(
      'invalid_prefix',
      'prefix may contain only a-z, 0-9 and inner hyphens, and must start and end with a letter or digit.',
    )
  }
  if (RESERVED_LOCAL_PARTS.has(normalized))
    throw new DomainError('invalid_prefix', `prefix "${normalized}" is reserved.`)
  return normalized
}

// Short, unambiguous words; about 3,800 pairs add some 12 bits to the 64 random bits of the hex tail.
const ADJECTIVES = (
  'amber brave brisk calm clever cosmic crisp dapper eager early fancy fluffy gentle giddy glad ' +
  'golden grand happy hasty humble icy jolly keen kind lively lucky mellow merry misty modest ' +
  'noble odd plucky polite proud quick quiet rapid rosy rustic sandy shiny silent silver sleepy ' +
  'smooth snowy spry steady stormy sunny swift tidy tiny upbeat vivid warm wavy wild windy witty young zesty'
).split(' ')
const NOUNS = (
  'acorn badger beacon bison breeze canyon cedar comet coral cricket daisy dune ember falcon fern ' +
  'fjord gecko glacier harbor hazel heron island jackal kettle lagoon lantern lemur maple meadow ' +
  'meteor moose nectar nebula oasis orchid otter panda pebble pepper pigeon pine quartz raven ' +
  'reef river robin saddle salmon sparrow spruce summit thistle tiger tulip valley walrus willow yak zebra cobalt'
).split(' ')

/** word-word-hex, e.g. `sunny-otter-9f0c2a71d4be3356`: about 76 bits, hopeless to guess. */
export function generateLocalPart(): string {
  const adjective = ADJECTIVES[randomInt(ADJECTIVES.length)]
  const noun = NOUNS[randomInt(NOUNS.length)]
  return `${adjective}-${noun}-${randomBytes(8).toString('hex')}`
}
