/** The `preview` field: a short, single-line plain-text excerpt of the body. */
const PREVIEW_CHARACTERS = 200

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ' }

/** Good enough for a preview: drops scripts, styles, comments and tags; decodes common entities. */
function htmlToText(html: string): string {
  return html
    .replace(/<(script|style|head|title)\b[\s\S]*?<\/\1\s*>/gi, ' ')
    .replace(/<!--[\s\S]*?-->/g, ' ')
    .replace(/<(br|\/p|\/div|\/li|\/tr|\/h[1-6])\b[^>]*>/gi, ' ')
    .replace(/<[^>]*>/g, '')
    .replace(/&(#x[0-9a-f]+|#[0-9]+|[a-z]+);/gi, (whole, entity: string) => {
      if (entity[0] === '#') {
        const code = entity[1] === 'x' || entity[1] === 'X' ? parseInt(entity.slice(2), 16) : parseInt(entity.slice(1), 10)
        return Number.isFinite(code) && code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : ''
      }
      return ENTITIES[entity.toLowerCase()] ?? whole
    })
}

export function makePreview(text: string | null, html: string | null): string {
  const source = text && text.trim() !== '' ? text : html ? htmlToText(html) : ''
  const collapsed = source.replace(/\s+/g, ' ').trim()
  // By code point, so no surrogate pair is cut in half. A code point is at most two UTF-16
  // units, so the first 2N units hold the first N code points: splitting only that head
  // keeps a long body from becoming an array of every character (a visible share of ingest
  // CPU for large bodies; figures in bench/README.md).
  const longer = collapsed.length > 2 * PREVIEW_CHARACTERS
  const characters = Array.from(longer ? collapsed.slice(0, 2 * PREVIEW_CHARACTERS + 2) : collapsed)
  return !longer && characters.length <= PREVIEW_CHARACTERS
    ? collapsed
    : characters
        .slice(0, PREVIEW_CHARACTERS - 1)
        .join('')
        .trimEnd() + '…'
}
