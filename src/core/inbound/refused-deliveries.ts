/**
 * Recent deliveries refused at RCPT TO, per inbox: what the console's inbox page shows, so
 * a test whose mail never came can see that a limit (the monthly quota, a burst) or an
 * unknown address refused it, with the time, the sender and our reply. The sending
 * application only logs the refusal, often where no one looks.
 *
 * A refusal belongs to the inbox its address named when it came, never to the address
 * alone: an address is handed on once its inbox is deleted, and the next owner (perhaps
 * another organisation) must not read the earlier owner's senders or limits. Refusals for
 * an address no inbox had (mail sent before the inbox was made) wait apart, by address,
 * and become the inbox's own when an inbox takes that address; a later owner never sees
 * them.
 *
 * Kept in memory and bounded (10 per inbox or address, 2,000 of each, the least recently
 * refused dropped first): a debugging aid, not a record. A restart empties it. Unknown
 * addresses are kept apart from inboxes, and only those an inbox could take (a valid
 * prefix at the receiving domain, so a few dozen bytes each), so mail sprayed at made-up
 * addresses cannot push out an inbox's entries.
 *
 * In PostgreSQL mode a refusal on one machine and the inbox page on another must agree: each
 * refusal kept and each claim is also told to the other machines (`RefusalsShared`, over the
 * wake bus), which keep it in their own memory the same way. A notification lost (the
 * database briefly unreachable) leaves that one entry off the other machines' pages.
 */
import { PREFIX_PATTERN } from '../inboxes/local-part.ts'

export interface RefusedDelivery {
  /** Epoch milliseconds (the injected clock). */
  at: number
  /** The envelope sender (MAIL FROM), empty for a bounce. */
  sender: string
  /** The reply sent, code and text: `550 Monthly recipient quota exceeded`. */
  reply: string
}

const PER_KEY = 10
const KEYS = 2_000
/** An address is at most 254 characters (RFC 5321); longer senders are cut, not refused here. */
const SENDER_CHARS = 254
/** Our replies are one short line; the cut only bounds what a machine tells the others. */
const REPLY_CHARS = 512

/** Lists of at most PER_KEY entries for at most KEYS keys, the least recently added-to dropped first. */
class RecentLists {
  private readonly byKey = new Map<string, RefusedDelivery[]>()

  add(key: string, entries: RefusedDelivery[]): void {
    const list = this.byKey.get(key) ?? []
    // Re-inserted, so the Map's order is least recently refused first.
    this.byKey.delete(key)
    this.byKey.set(key, list)
    list.push(...entries)
    list.splice(0, Math.max(0, list.length - PER_KEY))
    if (this.byKey.size > KEYS) this.byKey.delete(this.byKey.keys().next().value!)
  }

  take(key: string): RefusedDelivery[] {
    const list = this.byKey.get(key) ?? []
    this.byKey.delete(key)
    return list
  }

  get(key: string): RefusedDelivery[] {
    return this.byKey.get(key) ?? []
  }
}

/** What one machine tells the others: a refusal it kept (for an inbox, or an address no inbox had), or a claim. */
export type RefusalNews =
  | { kind: 'inbox'; inboxId: string; entry: RefusedDelivery }
  | { kind: 'address'; address: string; entry: RefusedDelivery }
  | { kind: 'claim'; address: string; inboxId: string }

/** PostgreSQL mode: the other machines' refusals and claims (src/app/postgres/notifier.ts). */
export interface RefusalsShared {
  /** Tells the other machines; never echoed back to this one. */
  announce(news: RefusalNews): void
  /** Hears what the other machines announce. */
  listen(listener: (news: RefusalNews) => void): void
}

export class RefusedDeliveries {
  private readonly byInbox = new RecentLists()
  /** By lowercased address: refusals for addresses that had no inbox when they came. */
  private readonly unclaimed = new RecentLists()

  constructor(
    private readonly receivingDomain: string,
    private readonly shared: RefusalsShared | null = null,
  ) {
    shared?.listen((news) => this.apply(news))
  }

  /** A refusal for `recipient`, which named the inbox `inboxId`, or no inbox (null). */
  record(recipient: string, inboxId: string | null, refusal: RefusedDelivery): void {
    const entry = {
      at: refusal.at,
      sender: refusal.sender.slice(0, SENDER_CHARS),
      reply: refusal.reply.slice(0, REPLY_CHARS),
    }
    if (inboxId !== null) {
      this.keep({ kind: 'inbox', inboxId, entry })
      return
    }
    // Kept only where an inbox could take the address later: a prefix a test may choose.
    const address = recipient.toLowerCase()
    const at = address.lastIndexOf('@')
    if (address.slice(at + 1) === this.receivingDomain && PREFIX_PATTERN.test(address.slice(0, at)))
      this.keep({ kind: 'address', address, entry })
  }

  /** An inbox took `address`: the refusals that came while no inbox had it are its own from now on. */
  claim(address: string, inboxId: string): void {
    this.keep({ kind: 'claim', address: address.toLowerCase(), inboxId })
  }

  private keep(news: RefusalNews): void {
    this.apply(news)
    this.shared?.announce(news)
  }

  private apply(news: RefusalNews): void {
    if (news.kind === 'inbox') this.byInbox.add(news.inboxId, [news.entry])
    else if (news.kind === 'address') this.unclaimed.add(news.address, [news.entry])
    else {
      const waiting = this.unclaimed.take(news.address)
      if (waiting.length > 0) this.byInbox.add(news.inboxId, waiting)
    }
  }

  /** How many refusals wait for an inbox to take `address` (tests: a refusal heard by every machine). */
  waiting(address: string): number {
    return this.unclaimed.get(address.toLowerCase()).length
  }

  /** The inbox's refusals, newest first. */
  recent(inboxId: string): RefusedDelivery[] {
    return [...this.byInbox.get(inboxId)].reverse()
  }
}
