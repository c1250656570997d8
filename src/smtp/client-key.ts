/**
 * The key that per-address guards count by: the IPv4 address, or the /64 prefix of an IPv6
 * address (one subscriber usually holds a whole /64, so counting single IPv6 addresses
 * would let one client take 2^64 of them).
 */
import { isIPv6 } from 'node:net'

export function clientKey(remoteAddress: string | undefined): string {
  const address = (remoteAddress ?? '')
    .trim()
    .toLowerCase()
    .replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, '')
  if (!isIPv6(address)) return address
  const [head = '', tail] = address.split('::')
  const left = head ? head.split(':') : []
  const right = tail ? tail.split(':') : []
  const groups =
    tail === undefined
      ? left
      : [...left, ...Array<string>(Math.max(0, 8 - left.length - right.length)).fill('0'), ...right]
  return `${groups
    .slice(0, 4)
    .map((group) => parseInt(group, 16).toString(16))
    .join(':')}::/64`
}
