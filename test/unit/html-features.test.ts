/** The features a message's HTML uses, found in one pass, with their lines; hostile input stays linear. */
import { expect, test } from 'bun:test'
import { findFeatures } from '../../src/console/checks/html-features.ts'
import { checkHtmlSupport } from '../../src/console/checks/html-support.ts'

const ALL = { has: () => true } as unknown as ReadonlySet<string>
const found = (html: string) => Object.fromEntries(findFeatures(html, ALL).map((f) => [f.slug, f.lines]))

test('elements, attributes, inline and embedded CSS, at-rules and pseudo-classes, with their lines', () => {
  const html = [
    '<!doctype html><html lang="en">',
    '<style>',
    'a:hover, p::before { color: red !important }',
    '@media (prefers-color-scheme: dark) { .x { display: none } }',
    '.grid { display: grid; gap: 4px; width: calc(100% - 2px) }',
    '</style>',
    '<table cellpadding="0" align=center><tr><td valign="top" style="border-radius:4px;background:linear-gradient(#fff,#000)">x</td></tr></table>',
    '<input type="checkbox" required><button type="submit">Go</button><a href="#top">top</a> <a href="mailto:a@b.test">mail</a>',
    '<!-- a comment --><svg></svg><h2>t</h2><ul><li>i</li></ul>',
  ].join('\n')
  const features = found(html)
  expect(features['html-doctype']).toEqual([1])
  expect(features['html-lang']).toEqual([1])
  expect(features['css-pseudo-class-hover']).toEqual([3])
  expect(features['css-pseudo-element-before']).toEqual([3])
  expect(features['css-important']).toEqual([3])
  expect(features['css-at-media']).toEqual([4])
  expect(features['css-at-media-prefers-color-scheme']).toEqual([4])
  expect(features['css-display-none']).toEqual([4])
  expect(features['css-display-grid']).toEqual([5])
  expect(features['css-unit-calc']).toEqual([5])
  expect(features['html-cellpadding']).toEqual([7])
  expect(features['html-align']).toEqual([7])
  expect(features['html-valign']).toEqual([7])
  expect(features['css-border-radius']).toEqual([7])
  expect(features['css-linear-gradient']).toEqual([7])
  expect(features['html-input-checkbox']).toEqual([8])
  expect(features['html-required']).toEqual([8])
  expect(features['html-button-submit']).toEqual([8])
  expect(features['html-anchor-links']).toEqual([8])
  expect(features['html-mailto-links']).toEqual([8])
  expect(features['html-comments']).toEqual([9])
  expect(features['html-svg']).toEqual([9])
  expect(features['html-h1-h6']).toEqual([9])
  expect(features['html-lists']).toEqual([9])
  // An attribute's name inside another word, or a value, is not the attribute.
  expect(found('<td data-align="x" title="align">')['html-align']).toBeUndefined()
})

test('hostile HTML is scanned in linear time', () => {
  for (const hostile of [
    '<a'.repeat(500_000),
    `<style>${'a'.repeat(1_000_000)}`,
    `<div style="${'a:'.repeat(400_000)}">`,
    '<!--'.repeat(250_000),
    `<p ${'x '.repeat(400_000)}`,
  ]) {
    const started = performance.now()
    findFeatures(hostile, ALL)
    // Generous: about 50 ms on an idle machine; a quadratic scan takes minutes.
    expect(performance.now() - started).toBeLessThan(3000)
  }
})

test('scores: a plain table scores 100 for every family with data; video lowers Outlook below Apple Mail', () => {
  const plain = checkHtmlSupport('<table><tr><td>Hi</td></tr></table>')
  expect(plain.issues.filter((i) => i.slug === 'html-table')).toEqual([])
  const video = checkHtmlSupport('<video src="a.mp4"></video>')
  const score = (family: string) => video.scores.find((s) => s.family === family)!.score!
  expect(score('outlook')).toBeLessThan(score('apple-mail'))
  expect(video.issues[0]!.slug).toBe('html-video')
  expect(video.issues[0]!.lines).toEqual([1])
})
