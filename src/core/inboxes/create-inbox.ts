/**
 * createInbox. The inbox row is written first in state 'creating' (it holds the address
 * and a quota slot against concurrent requests), then the routing rule is made, then the
 * row turns 'active' together with the idempotency record. Any failure undoes what was
 * done, so an inbox exists if and only if its routing rule does.
 */
import { isoTime } from '../../clock.ts'
import { newId } from '../../ids.ts'
import { errorFields } from '../../log.ts'
import type { InboxRow } from '../../storage/rows.ts'
import type { Principal } from '../api-keys/authenticate.ts'
import { DomainError } from '../common/errors.ts'
import { generateLocalPart, normalizePrefix } from './local-part.ts'
import type { Inbox } from '../common/models.ts'
import { routingFailure } from '../common/routing.ts'
import type { Services } from '../common/services.ts'
import {
  checkIdempotencyKey,
  claimIdempotencyKey,
  fingerprint,
  type IdempotencyClaim,
  releaseIdempotencyClaim,
} from './idempotency.ts'
import { presentInbox } from './present.ts'

const GENERATION_ATTEMPTS = 8

interface CreateInboxInput {
  /** The raw request body text (may be empty). */
  body: string
  idempotencyKey: string | null
}

interface CreateInboxResult {
  body: { data: Inbox }
  /** True when the body is the cached answer of an earlier request with the same key. */
  replayed: boolean
}

/** A valid body is a few dozen bytes; anything near this is not a createInbox request. */
export const MAX_CREATE_BODY_BYTES = 64 * 1024

/** Parses the optional body into its normalised form: `{}` or `{ prefix }` (lowercased). */
function parseCreateInboxBody(text: string): { prefix?: string } {
  if (text.length > MAX_CREATE_BODY_BYTES)
    throw new DomainError(
      'invalid_json',
      `Request body must be a JSON object of at most ${MAX_CREATE_BODY_BYTES} bytes.`,
    )
  if (text.trim() === '') return {}
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    throw new DomainError('invalid_json', 'Request body must be a JSON object.')
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new DomainError('invalid_json', 'Request body must be a JSON object.')
  }
  const unknown = Object.keys(value).filter((key) => key !== 'prefix')
  if (unknown.length > 0)
    throw new DomainError(
      'unknown_property',
      `Unknown property "${unknown[0]}"; the only allowed property is "prefix".`,
    )
  const { prefix } = value as { prefix?: unknown }
  return prefix === undefined ? {} : { prefix: normalizePrefix(prefix) }
}

export async function createInbox(
  s: Services,
  principal: Principal,
  input: CreateInboxInput,
): Promise<CreateInboxResult> {
  const key = checkIdempotencyKey(input.idempotencyKey)
  const body = parseCreateInboxBody(input.body)
  let claim: IdempotencyClaim | undefined
  if (key !== null) {
    const outcome = await claimIdempotencyKey(s, principal.organizationId, key, fingerprint(body))
    if ('cached' in outcome) return { body: outcome.cached as { data: Inbox }, replayed: true }
    claim = outcome.claim
  }
  try {
    return { body: await provisionInbox(s, principal, body.prefix, claim), replayed: false }
  } catch (error) {
    if (claim) await releaseIdempotencyClaim(s, claim)
    throw error
  }
}

async function provisionInbox(
  s: Services,
  principal: Principal,
  prefix: string | undefined,
  claim: IdempotencyClaim | undefined,
): Promise<{ data: Inbox }> {
  if (!s.disk.hasRoom()) {
    throw new DomainError(
      'insufficient_storage',
      'The server is low on disk space and creates no inboxes until space is freed; retry later.',
      { retryAfterSeconds: 60 },
    )
  }
  const row = await reserveInboxRow(s, principal, prefix)
  let ruleId: string | null
  try {
    ruleId = await s.routing.createRule(row.address)
  } catch (error) {
    await s.store.inboxes.discardReservation(row.id)
    throw routingFailure(error, 'create')
  }
  try {
    // The body is the reserved row as it will read once active; it is stored for replays in
    // the same transaction that activates the row.
    const body = { data: presentInbox(row) }
    const activated = await s.store.inboxes.activateInbox({
      inboxId: row.id,
      routingRuleId: ruleId,
      idempotency: claim ? { claim, responseBody: JSON.stringify(body) } : null,
    })
    if (!activated)
      throw new Error('reserved inbox row vanished (or its idempotency claim was taken over) before activation')
    // Mail refused before the address had an inbox (an early send) is this inbox's to show.
    s.refusedDeliveries.claim(row.address, row.id)
    return body
  } catch (error) {
    // The rule exists but the inbox could not be written: take the rule back.
    // The rule goes first: if the database is what failed, deleting the row may fail too,
    // and a rule left behind would route mail for an inbox that never existed.
    s.logger.error('inbox_activation_failed', { inbox_id: row.id, ...errorFields(error) })
    await s.routing.deleteRule(ruleId, row.address).catch((cleanupError: unknown) => {
      s.logger.error('routing_rule_orphaned', {
        address: row.address,
        routing_rule_id: ruleId,
        ...errorFields(cleanupError),
      })
    })
    await s.store.inboxes.discardReservation(row.id)
    throw error
  }
}

/** Checks the quota and the address, and inserts the row as 'creating', in one storage operation. */
async function reserveInboxRow(s: Services, principal: Principal, prefix: string | undefined): Promise<InboxRow> {
  const localParts = prefix !== undefined ? [prefix] : Array.from({ length: GENERATION_ATTEMPTS }, generateLocalPart)
  const reserved = await s.store.inboxes.reserveInbox({
    organizationId: principal.organizationId,
    activeInboxLimit: principal.limits.activeInboxes,
    candidates: localParts.map((localPart) => ({
      id: newId('inbox'),
      localPart,
      address: `${localPart}@${s.config.receivingDomain}`,
    })),
    createdAt: isoTime(s.clock.now()),
  })
  if ('row' in reserved) return reserved.row
  if (reserved.refused === 'quota') {
    throw new DomainError(
      'inbox_quota_exceeded',
      `This organization already has ${principal.limits.activeInboxes} active inboxes; delete one first.`,
    )
  }
  if (prefix !== undefined)
    throw new DomainError('address_unavailable', `The address ${prefix}@${s.config.receivingDomain} is already taken.`)
  throw new DomainError('address_generation_failed', 'Could not allocate a unique address; retry.')
}
