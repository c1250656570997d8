/** Links of message HTML and text parts: new tab, no opener, no referrer, only followable schemes. */
import { expect, test } from 'bun:test'
import { linksOpenInNewTab, splitLinks } from '../../src/console/message-links.ts'

test('every http(s) and mailto link opens in a new tab without opener or referrer', () => {
  const html = linksOpenInNewTab(
    '<p><a href="https://app.test/confirm?t=1&amp;u=2" target="_self" rel="opener" ping="https://t.test">Confirm</a> <a href="mailto:help@app.test">mail</a></p><map><area href="HTTP://app.test/x"></map>',
  )
  expect(html).toBe(
    '<p><a href="https://app.test/confirm?t=1&amp;u=2" target="_blank" rel="noopener noreferrer">Confirm</a> <a href="mailto:help@app.test" target="_blank" rel="noopener noreferrer">mail</a></p><map><area href="HTTP://app.test/x" target="_blank" rel="noopener noreferrer"></map>',
  )
})

test('script, data and relative links lose their href', () => {
  for (const href of ['javascript:alert(1)', ' jav&#x09;ascript:alert(1)', 'data:text/html,<script>1</script>', '/console/sign-out', 'reset?t=1', '//evil.test/x', 'https:evil.test']) {
    const html = linksOpenInNewTab(`<a href="${href}" target="_top">x</a>`)
    expect(html).toBe('<a>x</a>')
  }
})

test('URLs in text become links; sentence punctuation stays text', () => {
  expect(splitLinks('Confirm: https://app.test/c?t=abc. Or (see https://en.wikipedia.org/wiki/Foo_(bar)), bye')).toEqual([
    { text: 'Confirm: ' },
    { text: 'https://app.test/c?t=abc', href: 'https://app.test/c?t=abc' },
    { text: '. Or (see ' },
    { text: 'https://en.wikipedia.org/wiki/Foo_(bar)', href: 'https://en.wikipedia.org/wiki/Foo_(bar)' },
    { text: '), bye' },
  ])
  expect(splitLinks('no links, javascript:alert(1) and http:// alone')).toEqual([{ text: 'no links, javascript:alert(1) and http:// alone' }])
})
