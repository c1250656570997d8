/**
 * Recent deliveries refused at RCPT TO, per recipient address: what the console's inbox
 * page shows, so a test whose mail never came can see that a limit (the monthly quota, a
 * burst) or an unknown address refused it, with the time, the sender and our reply. The
 * sending application only logs the refusal, often where no one looks.
 *
 * Kept in memory and bounded (10 per address, 2,000 addresses, the least recently refused
 * dropped first): a debugging aid, not a record. A restart empties it, and the addresses
 * kept are only those of the receiving domain, so mail sprayed at other domains cannot
 * push out an inbox's entries.
 */
export interface RefusedDelivery {
  /** Epoch milliseconds (the injected clock). */
  at: number
  /** The envelope sender (MAIL FROM), empty for a bounce. */
  sender: string
  /** The reply sent, code and text: `550 Monthly recipient quota exceeded`. */
  reply: string
}

const PER_ADDRESS = 10
const ADDRESSES = 2_000
/** An address is at most 254 characters (RFC 5321); longer senders are cut, not refused here. */
const SENDER_CHARS = 254

export class RefusedDeliveries {
  private readonly byAddress = new Map<string, RefusedDelivery[]>()

  constructor(private readonly receivingDomain: string) {}

  record(recipient: string, refusal: RefusedDelivery): void {
    const address = recipient.toLowerCase()
    if (!address.endsWith(`@${this.receivingDomain}`)) return
    const list = this.byAddress.get(address) ?? []
    // Re-inserted, so the Map's order is least recently refused first.
    this.byAddress.delete(address)
    this.byAddress.set(address, list)
    list.push({ ...refusal, sender: refusal.sender.slice(0, SENDER_CHARS) })
    if (list.length > PER_ADDRESS) list.shift()
    if (this.byAddress.size > ADDRESSES) this.byAddress.delete(this.byAddress.keys().next().value!)
  }

  /** Newest first. */
  recent(address: string): RefusedDelivery[] {
    return [...(this.byAddress.get(address.toLowerCase()) ?? [])].reverse()
  }
}
