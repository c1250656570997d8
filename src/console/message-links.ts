/**
 * Links in a test mail are why it is opened (the confirm or reset link), but the frame
 * that shows its HTML may not navigate anywhere (`frame-src 'self'`) and runs no script.
 * So every link is made to open in a new top-level tab: the frame's sandbox adds only
 * `allow-popups allow-popups-to-escape-sandbox`, and each `<a>`/`<area>` gets
 * `target="_blank"` and `rel="noopener noreferrer"` (the new tab cannot reach the frame,
 * and learns nothing of the console's URL). Only absolute http(s) and mailto links are
 * kept: a `javascript:` or `data:` URL, or a relative one (which would resolve against
 * the console's own origin), loses its href and stays plain text.
 *
 * The URLs in a text part are turned into the same kind of links by `splitLinks`, which
 * the message page renders as escaped text and `<a>` elements.
 */

/**
 * The frame's sandbox tokens (attribute and CSP alike): popups only, so a link opens in a
 * new, ordinary tab; no script, form or same-origin access is granted to the frame.
 */
export const MESSAGE_HTML_SANDBOX = 'allow-popups allow-popups-to-escape-sandbox'

/** The schemes a link in a message may keep, tested on the raw attribute (entities cannot start a scheme). */
const FOLLOWABLE = /^\s*(https?:\/\/|mailto:)/i

/** Rewrites every link of message HTML to open in a new tab, safely; everything else is left as it was. */
export function linksOpenInNewTab(html: string): string {
  if (html === '') return html
  const link = {
    element(element: HTMLRewriterTypes.Element) {
      const href = element.getAttribute('href') ?? ''
      if (!FOLLOWABLE.test(href)) {
        element.removeAttribute('href')
        element.removeAttribute('target')
        return
      }
      element.setAttribute('target', '_blank')
      element.setAttribute('rel', 'noopener noreferrer')
      element.removeAttribute('ping')
    },
  }
  // A <base target> of the message's own would not matter (each link sets its target), and its href is refused by `base-uri 'none'`.
  return new HTMLRewriter().on('a[href]', link).on('area[href]', link).transform(html)
}

/** A run of a text part: plain text, or a URL to show as a link. */
export type TextRun = { text: string; href?: string }

/** http(s) URLs in running text; trailing punctuation that usually closes a sentence is left out. */
const URL_IN_TEXT = /\bhttps?:\/\/[^\s<>"'`]+/gi
const TRAILING = /[.,;:!?)\]}'"»]+$/

/** Splits a text part into text and links (at most `max` links; the rest stays text). */
export function splitLinks(text: string, max = 500): TextRun[] {
  const runs: TextRun[] = []
  let last = 0
  let found = 0
  for (const match of text.matchAll(URL_IN_TEXT)) {
    if (found >= max) break
    let url = match[0]
    // Keep a closing parenthesis that belongs to the URL, as in a Wikipedia link.
    const trailing = TRAILING.exec(url)?.[0] ?? ''
    let cut = trailing.length
    if (cut > 0 && trailing.startsWith(')') && url.slice(0, -cut).includes('(')) cut -= 1
    url = url.slice(0, url.length - cut)
    if (!/^https?:\/\/[^/?#\s]+/i.test(url)) continue
    const start = match.index!
    if (start > last) runs.push({ text: text.slice(last, start) })
    runs.push({ text: url, href: url })
    last = start + url.length
    found++
  }
  if (last < text.length) runs.push({ text: text.slice(last) })
  return runs
}
