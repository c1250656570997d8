/**
 * From derivation: the RFC 5322 appendix A examples, obsolete syntax, and hostile headers.
 * Every address that comes out is an addr-spec or the envelope sender.
 */
import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { deriveSender, deriveSubject } from '../../src/core/inbound/mime/fields.ts'
import { firstMailbox, isAddress } from '../../src/core/inbound/mime/mailbox.ts'

const ENVELOPE = 'bounce@envelope.example'
const message = (...headers: string[]) => Buffer.from(`${headers.join('\r\n')}\r\n\r\nbody\r\n`)
const from = (value: string, envelope = ENVELOPE) => deriveSender(message(`From: ${value}`), envelope)

describe('firstMailbox', () => {
  test.each([
    ['Pete(A nice \\) chap) <pete(his account)@silly.test(his host)>', 'Pete', 'pete@silly.test'],
    ['John Doe <jdoe@machine(comment).  example>', 'John Doe', 'jdoe@machine.example'],
    ['"Joe Q. Public" <john.q.public@example.com>', 'Joe Q. Public', 'john.q.public@example.com'],
    ['Joe Q. Public <john.q.public@example.com>', 'Joe Q. Public', 'john.q.public@example.com'],
    ['Mary Smith <@node.test,@node.example:mary@example.net>', 'Mary Smith', 'mary@example.net'],
    ['A Group:Ed Jones <c@a.test>,joe@where.test,John <jdoe@one.test>;', 'Ed Jones', 'c@a.test'],
    ['Undisclosed recipients:;', '', ''],
    ['jdoe@example.org (John Doe)', 'John Doe', 'jdoe@example.org'],
    ['"john doe"@example.org', '', '"john doe"@example.org'],
    ['"john"@example.org', '', 'john@example.org'],
    ['postmaster@[192.0.2.1]', '', 'postmaster@[192.0.2.1]'],
    [', , first@example.org, second@example.org', '', 'first@example.org'],
    ['"=?UTF-8?Q?Zo=C3=AB?=" <zoe@example.org>', '=?UTF-8?Q?Zo=C3=AB?=', 'zoe@example.org'],
    ['moderator', '', 'moderator'],
    // Words beside a bare addr-spec are not part of it: no RFC 5322 form puts them there.
    ['Big Bug bb@bug.com', 'Big Bug', 'bb@bug.com'],
    ['"Big Bug" bb@bug.com', 'Big Bug', 'bb@bug.com'],
    ['Joe Q. Public john.q.public@example.com', 'Joe Q. Public', 'john.q.public@example.com'],
    ['Big Bug john . q@example.com', 'Big Bug', 'john.q@example.com'],
    ['Big Bug "bb"@bug.com', 'Big Bug', 'bb@bug.com'],
    ['Big Bug bb@bug.com (the bug)', 'Big Bug', 'bb@bug.com'],
    ['Big (a comment) Bug bb(x)@bug.com', 'Big Bug', 'bb@bug.com'],
    ['=?ks_c_5601-1987?B?wMy787/s?= ss.lee@example.com', '=?ks_c_5601-1987?B?wMy787/s?=', 'ss.lee@example.com'],
    ['=?ks_c_5601-1987?B?wMy787/s?=ss.lee@example.com', '=?ks_c_5601-1987?B?wMy787/s?=', 'ss.lee@example.com'],
    ['=?utf-8?Q?Mr.?= =?utf-8?Q?Bug?= bb@bug.com', '=?utf-8?Q?Mr.?= =?utf-8?Q?Bug?=', 'bb@bug.com'],
    ['bb@bug.com Big Bug', 'Big Bug', 'bb@bug.com'],
    ['bb@bug.com Big Bug (Bug Team)', 'Bug Team', 'bb@bug.com'],
    ['A Group: Ed Jones c@a.test, joe@where.test;', 'Ed Jones', 'c@a.test'],
    // Not of that shape: nothing is split, and what comes out is not an addr-spec.
    ['Big Bug', '', 'BigBug'],
    ['Big Bug a@b c@d', '', 'BigBuga@bc@d'],
    ['Big: Bug bb@bug.com', 'Bug', 'bb@bug.com'],
    ['Big Bug bb@bug.com>', 'Big Bug', 'bb@bug.com'],
  ])('%s', (value, name, address) => {
    expect(firstMailbox(value)).toEqual({ name, address })
  })

  test('unterminated comments, quotes and angle brackets end at the end of the header', () => {
    expect(firstMailbox('Ann <ann@example.org')).toEqual({ name: 'Ann', address: 'ann@example.org' })
    expect(firstMailbox('ann@example.org (Ann')).toEqual({ name: 'Ann', address: 'ann@example.org' })
    expect(firstMailbox('"Ann <ann@example.org>').address).toBe('"Ann <ann@example.org>"')
  })
})

test('words beside a bare addr-spec never become part of the address', () => {
  // atext without "?", so that no word is taken for an RFC 2047 encoded word.
  const word = fc.stringMatching(/^[A-Za-z0-9!#$%&'*+/=^_`{|}~-]{1,8}$/)
  const dotAtom = fc.array(word, { minLength: 1, maxLength: 3 }).map((words) => words.join('.'))
  fc.assert(
    fc.property(
      fc.array(word, { maxLength: 4 }),
      dotAtom,
      dotAtom,
      fc.array(word, { maxLength: 3 }),
      (before, local, domain, after) => {
        const address = `${local}@${domain}`
        const mailbox = firstMailbox([...before, address, ...after].join(' '))
        expect(mailbox.address).toBe(address)
        expect(mailbox.name).toBe((before.length ? before : after).join(' '))
      },
    ),
  )
})

describe('isAddress', () => {
  test.each([
    'a@b',
    'pete@silly.test',
    'Zoë@exämple.org',
    '"john doe"@example.org',
    'x@[IPv6:2001:db8::1]',
    "o'brien+tag@example.co.uk",
  ])('%s is an address', (value) => {
    expect(isAddress(value)).toBe(true)
  })
  test.each([
    '',
    'moderator',
    '@example.org',
    'pete@',
    'a..b@example.org',
    '.a@example.org',
    'a b@example.org',
    'pete(x)@silly.test',
    'a@b@c',
    '<a@b>',
  ])('%s is not', (value) => {
    expect(isAddress(value)).toBe(false)
  })
})

describe('deriveSender', () => {
  test('the decoded name and the address of the first From header', () => {
    expect(
      deriveSender(message('From: =?UTF-8?Q?Zo=C3=AB?= <zoe@example.org>', 'From: second@example.org'), ENVELOPE),
    ).toEqual({ name: 'Zoë', address: 'zoe@example.org' })
    expect(from('"=?UTF-8?Q?Zo=C3=AB_Example?=" <Zoe@Example.org>')).toEqual({
      name: 'Zoë Example',
      address: 'Zoe@Example.org',
    })
    expect(from('=?UTF-7?Q?J+APw-rgen?= <juergen@example.org>')).toEqual({
      name: 'Jürgen',
      address: 'juergen@example.org',
    })
  })

  test('a From without an addr-spec falls back to the envelope sender, keeping any display name', () => {
    expect(from('moderator')).toEqual({ name: '', address: ENVELOPE })
    expect(from('Moderator <moderator>')).toEqual({ name: 'Moderator', address: ENVELOPE })
    expect(from('Undisclosed recipients:;')).toEqual({ name: '', address: ENVELOPE })
    expect(from('')).toEqual({ name: '', address: ENVELOPE })
    expect(deriveSender(message('Subject: no From'), ENVELOPE)).toEqual({ name: '', address: ENVELOPE })
    expect(
      deriveSender(Buffer.from('Subject: no From\r\n\r\nFrom: in the body <body@example.org>\r\n'), ENVELOPE),
    ).toEqual({ name: '', address: ENVELOPE })
  })

  test('words before a bare address: the address spelled, the words as the name', () => {
    expect(from('Big Bug bb@bug.com')).toEqual({ name: 'Big Bug', address: 'bb@bug.com' })
    expect(from('=?ks_c_5601-1987?B?wMy787/s?= ss.lee@example.com')).toEqual({
      name: '이상우',
      address: 'ss.lee@example.com',
    })
    expect(from('=?UTF-8?Q?Zo=C3=AB_Example?=zoe@example.org')).toEqual({
      name: 'Zoë Example',
      address: 'zoe@example.org',
    })
  })

  test('words and no addr-spec: the envelope sender, by the same rule as a bare word', () => {
    expect(from('Big Bug')).toEqual({ name: '', address: ENVELOPE })
    expect(from('Big Bug bb@')).toEqual({ name: 'Big Bug', address: ENVELOPE })
    // The obsolete syntax allows whitespace before the @ (RFC 5322 §4.4), so this one is spelled.
    expect(from('Big Bug @bug.com')).toEqual({ name: 'Big', address: 'Bug@bug.com' })
  })

  test('with no usable envelope sender either (a bounce), the address is empty', () => {
    expect(from('moderator', '')).toEqual({ name: '', address: '' })
    expect(from('moderator', 'not-an-address')).toEqual({ name: '', address: '' })
  })

  test('hostile headers: long runs of specials, nesting, escapes', () => {
    for (const value of [
      '('.repeat(100_000),
      '<'.repeat(100_000),
      '\\'.repeat(100_001),
      '"'.repeat(100_001),
      '@'.repeat(100_000),
      ':'.repeat(100_000) + 'a@b.test',
    ]) {
      const sender = from(value)
      expect(sender.address === ENVELOPE || isAddress(sender.address)).toBe(true)
    }
  })
})

test('hostile headers: long runs of words beside an address', () => {
  const words = 'word '.repeat(20_000)
  expect(firstMailbox(`${words}bb@bug.com`)).toEqual({ name: words.trim(), address: 'bb@bug.com' })
  expect(firstMailbox(`bb@bug.com ${words}`)).toEqual({ name: words.trim(), address: 'bb@bug.com' })
  expect(firstMailbox(`${'=?utf-8?Q?x?='.repeat(20_000)}bb@bug.com`).address).toBe('bb@bug.com')
  // The obsolete syntax joins words around dots: one long local part, too long for an address.
  expect(from(`${'a . '.repeat(20_000)}b@c.test`)).toEqual({ name: '', address: ENVELOPE })
})

describe('headers read from the raw bytes', () => {
  test('the first Subject header, unfolded, encoded words decoded, UTF-7 included', () => {
    expect(deriveSubject(message('Subject: =?utf-7?Q?Fr+APY-sche?= und Hasen', 'Subject: second'))).toBe(
      'Frösche und Hasen',
    )
    expect(deriveSubject(message('Subject: folded', '  twice,', '\tkept'))).toBe('folded  twice,\tkept')
    expect(deriveSubject(message('From: a@b.test'))).toBe('')
    expect(deriveSubject(Buffer.from('\r\nSubject: in the body\r\n'))).toBe('')
    expect(deriveSubject(Buffer.from('\nSubject: in the body\n'))).toBe('')
    expect(deriveSubject(Buffer.from('From: a@b.test\nSubject: LF only\n\nSubject: body\n'))).toBe('LF only')
    expect(deriveSubject(Buffer.from('From: a@b.test\r\n\r\nSubject: body\r\n'))).toBe('')
    expect(deriveSubject(Buffer.from('Subject: no body at all'))).toBe('no body at all')
  })

  test("an 8-bit byte inside a Q encoded word is decoded in the word's charset", () => {
    const raw = Buffer.concat([
      Buffer.from('Subject: =?iso-8859-1?Q?Die_Fr'),
      Buffer.from([0xf6]),
      Buffer.from('sche?=\r\n\r\n'),
    ])
    expect(deriveSubject(raw)).toBe('Die Frösche')
  })

  test('raw 8-bit text is UTF-8 (RFC 6532), or windows-1252 when it is not valid UTF-8', () => {
    expect(deriveSender(message('From: Jürgen Grüße <j@example.org>'), ENVELOPE)).toEqual({
      name: 'Jürgen Grüße',
      address: 'j@example.org',
    })
    const latin1 = Buffer.concat([
      Buffer.from('From: J'),
      Buffer.from([0xfc]),
      Buffer.from('rgen <j@example.org>\r\n\r\n'),
    ])
    expect(deriveSender(latin1, ENVELOPE)).toEqual({ name: 'Jürgen', address: 'j@example.org' })
    expect(deriveSubject(Buffer.from('Subject: \x80 euro\n\n', 'latin1'))).toBe('€ euro')
  })
})
