/**
 * A link check as something kept: run once on demand (a POST), saved with its message, then
 * read by id from a result page that is a plain GET, so the page can be shared and Back or
 * reload never send the requests again. Ids of another organisation, or of a message that
 * expired or was deleted, are not found.
 */
import { isoTime } from '../../clock.ts'
import { newId } from '../../ids.ts'
import type { Principal } from '../api-keys/authenticate.ts'
import { notFound } from '../common/refusals.ts'
import type { Services } from '../common/services.ts'
import { type CheckDeps, checkLinks, type LinkStatus, MAX_CHECKED } from './link-check.ts'

/** What was checked: a link (from the HTML or the text part) or an image of the HTML. */
type CheckedUrl = LinkStatus & { kind: 'link' | 'image' }

export interface LinkCheckResult {
  id: string
  messageId: string
  createdAt: string
  results: CheckedUrl[]
  /** URLs past MAX_CHECKED that were not checked (0 in practice: a page lists at most 100 links). */
  skipped: number
}

/** The http(s) images of message HTML, each once, in order. */
export function imageUrls(html: string | null): string[] {
  if (!html) return []
  const found = new Set<string>()
  new HTMLRewriter()
    .on('img[src]', {
      element(element) {
        const src = (element.getAttribute('src') ?? '').trim()
        if (/^https?:\/\/[^/?#\s]+/i.test(src)) found.add(src)
      },
    })
    .transform(html)
  return [...found]
}

/** Runs the check over the message's links and images and keeps its result; answers its id. */
export async function runLinkCheck(
  s: Services,
  principal: Principal,
  input: { messageId: string; links: string[]; images: string[] },
  deps: CheckDeps,
): Promise<string> {
  const targets = [
    ...input.links.map((url) => ({ url, kind: 'link' as const })),
    ...input.images.filter((url) => !input.links.includes(url)).map((url) => ({ url, kind: 'image' as const })),
  ]
  const checked = targets.slice(0, MAX_CHECKED)
  const statuses = await checkLinks(
    checked.map((t) => t.url),
    deps,
  )
  const results: CheckedUrl[] = statuses.map((status, i) => ({ ...status, kind: checked[i]!.kind }))
  const id = newId('check')
  await s.store.messages.saveLinkCheck({
    id,
    messageId: input.messageId,
    organizationId: principal.organizationId,
    createdAt: isoTime(s.clock.now()),
    resultsJson: JSON.stringify({ results, skipped: targets.length - checked.length }),
  })
  return id
}

/** A kept check of the organisation, or not_found. */
export async function readLinkCheck(s: Services, principal: Principal, id: string): Promise<LinkCheckResult> {
  if (!/^check_[0-9a-f]{32}$/.test(id)) throw notFound()
  const row = await s.store.messages.getLinkCheck({
    organizationId: principal.organizationId,
    id,
    now: isoTime(s.clock.now()),
  })
  if (!row) throw notFound()
  const kept = JSON.parse(row.resultsJson) as { results: CheckedUrl[]; skipped: number }
  return {
    id: row.id,
    messageId: row.messageId,
    createdAt: row.createdAt,
    results: kept.results,
    skipped: kept.skipped,
  }
}
