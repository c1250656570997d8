/**
 * The message frame sized to its email, with the email's HTML still running no script and
 * never sharing the console's origin.
 *
 * A sandboxed frame without `allow-same-origin` is another origin to the console page, so
 * the page cannot measure it; without script inside, nothing can tell the page a height.
 * So the frame's response carries one script of ours, appended by the server: it measures
 * the document and posts a single number to the parent. The frame is given `allow-scripts`
 * for it, and its Content-Security-Policy allows exactly that script by its SHA-256 hash:
 * every script of the email (inline, `src`, event handler, `javascript:` URL) is still
 * refused by the browser, and the frame still has an opaque origin (no cookies, no
 * storage, no access to the console page or its requests). The parent trusts nothing in
 * the message beyond "a number from that frame", clamps it, and sets the height.
 *
 * Rejected designs: measuring on the server (it does not lay out HTML), `allow-same-origin`
 * (the email would run as the console), a `srcdoc` child reading its parent (a sandboxed
 * frame's children get new opaque origins, so they cannot be read either).
 */
import { createHash } from 'node:crypto'

/** The name of the one field the frame posts; the console page ignores every other message. */
const HEIGHT_MESSAGE_FIELD = 'pigeonholeFrameHeight'

/**
 * Measures the content's bottom edge (a Range over the body, and the margins of its last
 * children, which collapse through it: independent of the frame's own height, so the frame
 * can shrink when a wider preview needs less) and posts it on every change: layout, images
 * and fonts loading, the frame's width changing.
 */
export const HEIGHT_SCRIPT =
  `(()=>{let last=-1,queued=false;const measure=()=>{queued=false;const body=document.body;if(!body)return;` +
  `const range=document.createRange();range.selectNodeContents(body);const style=getComputedStyle(body);` +
  `let bottom=Math.max(range.getBoundingClientRect().bottom,body.getBoundingClientRect().top);` +
  `for(let child=body.lastElementChild,n=0;child&&n<50;child=child.previousElementSibling,n++){` +
  `bottom=Math.max(bottom,child.getBoundingClientRect().bottom+parseFloat(getComputedStyle(child).marginBottom))}` +
  `bottom+=scrollY+parseFloat(style.paddingBottom)+parseFloat(style.marginBottom)+` +
  `parseFloat(style.borderBottomWidth);const height=Math.ceil(bottom);if(height!==last){last=height;` +
  `parent.postMessage({${HEIGHT_MESSAGE_FIELD}:height},'*')}};const soon=()=>{if(!queued){queued=true;` +
  `requestAnimationFrame(measure)}};addEventListener('load',soon);addEventListener('resize',soon);` +
  `document.addEventListener('load',soon,true);document.addEventListener('DOMContentLoaded',()=>{soon();` +
  `if(window.ResizeObserver){const watch=new ResizeObserver(soon);watch.observe(document.documentElement);` +
  `watch.observe(document.body)}})})()`

/** The CSP source that allows HEIGHT_SCRIPT and nothing else. */
export const HEIGHT_SCRIPT_SOURCE = `'sha256-${createHash('sha256').update(HEIGHT_SCRIPT).digest('base64')}'`

const DOCTYPE = /^\s*<!doctype[^>]*>/i

/**
 * The email's HTML with the measuring script in front of it (after a doctype, which must stay
 * first): placed before the email, no unclosed comment, `<textarea>` or `<plaintext>` of
 * the email can swallow it.
 */
export function withHeightReporter(html: string): string {
  const script = `<script>${HEIGHT_SCRIPT}</script>`
  const doctype = DOCTYPE.exec(html)
  return doctype ? doctype[0] + script + html.slice(doctype[0].length) : script + html
}
