/**
 * TRUSTED_PROXIES parsing and matching: IPv4 and IPv6 networks, a bare address as one host,
 * IPv4-mapped IPv6 peers (dual-stack listeners) matching their IPv4 network, and anything
 * that is not a plain address never trusted.
 */
import { expect, test } from 'bun:test'
import { isIpAddress, TrustedNetworks } from '../../src/core/common/trusted-networks.ts'

test('IPv4 and IPv6 networks match their members and nothing else', () => {
  const trusted = TrustedNetworks.parse('172.16.0.0/12, fd00::/8 ,127.0.0.1')
  for (const peer of [
    '172.16.0.1',
    '172.31.255.255',
    '::ffff:172.19.3.4',
    'fd12:3456::1',
    'FDAA::3',
    '127.0.0.1',
    '::ffff:7f00:1',
  ])
    expect(trusted.trusts(peer)).toBe(true)
  for (const peer of ['172.15.255.255', '172.32.0.0', 'fe00::1', '127.0.0.2', '::1', '10.0.0.1'])
    expect(trusted.trusts(peer)).toBe(false)
})

test('a peer that is not a plain address is never trusted', () => {
  const everyone = TrustedNetworks.parse('0.0.0.0/0, ::/0')
  for (const peer of ['', 'localhost', '1.2.3.4:25', 'fe80::1%eth0', '1.2.3.4, 5.6.7.8', undefined])
    expect(everyone.trusts(peer)).toBe(false)
  expect(everyone.trusts('8.8.8.8')).toBe(true)
})

test('`none` (or an empty list) trusts no one; a bad entry is named', () => {
  expect(TrustedNetworks.parse('none').trusts('127.0.0.1')).toBe(false)
  expect(TrustedNetworks.parse(' NONE ').empty).toBe(true)
  expect(TrustedNetworks.parse('').trusts('127.0.0.1')).toBe(false)
  expect(TrustedNetworks.parse(' , ').empty).toBe(true)
  expect(TrustedNetworks.problem('10.0.0.0/8,10.0.0.0/33')).toBe('"10.0.0.0/33" has a prefix length outside 0..32')
  expect(TrustedNetworks.problem('fly-proxy')).toBe(
    '"fly-proxy" is not an IPv4 or IPv6 network such as 10.0.0.0/8 or fd00::/8',
  )
  expect(TrustedNetworks.problem('::/129')).toContain('outside 0..128')
  expect(TrustedNetworks.problem('10.0.0.0/8/1')).not.toBeNull()
})

test('isIpAddress accepts one IPv4 or IPv6 address and nothing else', () => {
  for (const value of ['203.0.113.7', '2001:db8::1', '::ffff:203.0.113.7']) expect(isIpAddress(value)).toBe(true)
  for (const value of [
    '',
    'x'.repeat(5000),
    '203.0.113.7, 10.0.0.1',
    '203.0.113.7:443',
    '01.2.3.4',
    'unknown',
    '<script>',
  ])
    expect(isIpAddress(value)).toBe(false)
})
