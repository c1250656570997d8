/** Links of message HTML and text parts: new tab, no opener, no referrer, only followable schemes. */
import { expect, test } from 'bun:test'
import { findCodes, findLinks, linksOpenInNewTab, splitLinks } from '../../src/console/message-links.ts'

test('every http(s) and mailto link opens in a new tab without opener or referrer', () => {
  const html = linksOpenInNewTab(
    '<p><a href="https://app.test/confirm?t=1&amp;u=2" target="_self" rel="opener" ping="https://t.test">Confirm</a> <a href="mailto:help@app.test">mail</a></p><map><area href="HTTP://app.test/x"></map>',
  )
  expect(html).toBe(
    '<p><a href="https://app.test/confirm?t=1&amp;u=2" target="_blank" rel="noopener noreferrer">Confirm</a> <a href="mailto:help@app.test" target="_blank" rel="noopener noreferrer">mail</a></p><map><area href="HTTP://app.test/x" target="_blank" rel="noopener noreferrer"></map>',
  )
})

test('script, data and relative links lose their href', () => {
  for (const href of [
    'javascript:alert(1)',
    ' jav&#x09;ascript:alert(1)',
    'data:text/html,<script>1</script>',
    '/console/sign-out',
    'reset?t=1',
    '//evil.test/x',
    'https:evil.test',
  ]) {
    const html = linksOpenInNewTab(`<a href="${href}" target="_top">x</a>`)
    expect(html).toBe('<a>x</a>')
  }
})

test('URLs in text become links; sentence punctuation stays text', () => {
  expect(
    splitLinks('Confirm: https://app.test/c?t=abc. Or (see https://en.wikipedia.org/wiki/Foo_(bar)), bye'),
  ).toEqual([
    { text: 'Confirm: ' },
    { text: 'https://app.test/c?t=abc', href: 'https://app.test/c?t=abc' },
    { text: '. Or (see ' },
    { text: 'https://en.wikipedia.org/wiki/Foo_(bar)', href: 'https://en.wikipedia.org/wiki/Foo_(bar)' },
    { text: '), bye' },
  ])
  expect(splitLinks('no links, javascript:alert(1) and http:// alone')).toEqual([
    { text: 'no links, javascript:alert(1) and http:// alone' },
  ])
})

test('links are listed once each, HTML first with their text, entities decoded, script links left out', () => {
  const html =
    '<p><a href="https://app.test/c?x=1&amp;y=2">Confirm <b>now</b></a> <a href="javascript:alert(1)">j</a> <a href="https://app.test/c?x=1&amp;y=2">again</a></p>'
  expect(findLinks(html, 'Or open https://app.test/c?x=1&y=2 or https://app.test/other.')).toEqual([
    { url: 'https://app.test/c?x=1&y=2', text: 'Confirm now' },
    { url: 'https://app.test/other', text: '' },
  ])
  expect(findLinks(null, null)).toEqual([])
})

test('one-time codes: announced ones and six digits on their own, not dates, times or amounts', () => {
  const codes = findCodes(
    'Your verification code',
    'Your code is 482913.\nOr use PIN: A7K9Q2. Order 2026-11-25 at 12:30:45, total 123456.78, ref 1234567',
    null,
  )
  expect(codes.map((c) => c.code)).toEqual(['482913', 'A7K9Q2'])
  expect(codes[0]!.context).toContain('Your code is 482913')
  expect(
    findCodes('Sign in', null, '<style>.c{color:#123456}</style><p>Your one-time code: <b>731-204</b></p>').map(
      (c) => c.code,
    ),
  ).toEqual(['731-204'])
  expect(findCodes('Welcome', 'Thanks for joining on 2026-11-25.', null)).toEqual([])
})
