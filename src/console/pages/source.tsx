/** @jsxImportSource preact */
/**
 * A message's HTML part or raw source as highlighted text, served as its own sandboxed
 * document and framed by the message page (so a large source never weighs on the page).
 * Everything is text to the escaping renderer; the highlighting is a few spans: tags,
 * attribute values and comments in HTML, header names in the raw source.
 */
import { render } from 'preact-render-to-string'

/** Shown inline up to this many characters; the rest is in the download. */
const MAX_SOURCE_CHARS = 1024 * 1024

type Run = [kind: 'tag' | 'attr' | 'comment' | 'name' | 'text', text: string]

const HTML_TOKEN = /<!--[\s\S]*?(?:-->|$)|<\/?[a-zA-Z][^>]*>?|<![^>]*>?/g
const ATTR_VALUE = /("[^"]*"|'[^']*')/g

function htmlRuns(source: string): Run[] {
  const runs: Run[] = []
  let last = 0
  for (const match of source.matchAll(HTML_TOKEN)) {
    if (match.index! > last) runs.push(['text', source.slice(last, match.index)])
    const token = match[0]
    if (token.startsWith('<!--')) runs.push(['comment', token])
    else
      for (const [i, part] of token.split(ATTR_VALUE).entries())
        if (part) runs.push([i % 2 === 1 ? 'attr' : 'tag', part])
    last = match.index! + token.length
  }
  if (last < source.length) runs.push(['text', source.slice(last)])
  return runs
}

function rawRuns(source: string): Run[] {
  const end = source.search(/\r?\n\r?\n/)
  const head = end < 0 ? source : source.slice(0, end)
  const runs: Run[] = []
  for (const line of head.split(/(?<=\n)/)) {
    const colon = /^[!-9;-~]+:/.exec(line)
    if (colon) runs.push(['name', colon[0]], ['text', line.slice(colon[0].length)])
    else runs.push(['text', line])
  }
  if (end >= 0) runs.push(['text', source.slice(end)])
  return runs
}

const STYLE = `body{margin:0;font:13px/1.45 ui-monospace,Menlo,Consolas,monospace;background:#fff;color:#1d2330}
pre{margin:0;padding:.8rem;white-space:pre-wrap;overflow-wrap:anywhere}
.tag{color:#1f4fb8}.attr{color:#9a3412}.comment{color:#6b7280;font-style:italic}.name{color:#7c2d8a;font-weight:600}
.note{padding:.5rem .8rem;background:#fff7e6;font-family:system-ui,sans-serif}
@media (prefers-color-scheme:dark){body{background:#111827;color:#e5e7eb}.tag{color:#8fb0ff}.attr{color:#fdba74}
.comment{color:#9ca3af}.name{color:#e9a8f5}.note{background:#3b2f12}}`

/** The whole document for the frame. */
export function sourceDocument(source: string, kind: 'html' | 'raw' | 'text'): string {
  const truncated = source.length > MAX_SOURCE_CHARS
  const shown = truncated ? source.slice(0, MAX_SOURCE_CHARS) : source
  const runs: Run[] = kind === 'html' ? htmlRuns(shown) : kind === 'raw' ? rawRuns(shown) : [['text', shown]]
  const doc = (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <title>{kind === 'html' ? 'HTML source' : kind === 'raw' ? 'Raw source' : 'Text'}</title>
        <style>{STYLE}</style>
      </head>
      <body>
        {truncated && (
          <p class="note">
            The first {MAX_SOURCE_CHARS.toLocaleString('en')} characters are shown; the download has all of it.
          </p>
        )}
        <pre>{runs.map(([cls, text]) => (cls === 'text' ? text : <span class={cls}>{text}</span>))}</pre>
      </body>
    </html>
  )
  return `<!doctype html>${render(doc)}`
}
