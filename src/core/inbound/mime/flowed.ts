/**
 * format=flowed (RFC 3676) unwrapping, replacing postal-mime's, which ignores quote depth:
 * it joined `> …the ` and `> original code` into `…the > original code`, and joined a quoted
 * line with an unquoted one. Every quoted reply from Thunderbird is flowed, so this matters.
 *
 * Each line is read as quote marks (a run of `>`, §4.5), one optional stuffing space (§4.4)
 * and content. A line is flowed when its content ends in a space, except the signature
 * separator `-- ` (§4.3). A flowed line is joined with the next line only when that line
 * has the same quote depth and is not a signature separator; otherwise it ends there, as
 * §4.5 says of a flowed line followed by a different depth. With DelSp=yes the space that
 * marked the soft break is removed when joining (§4.2).
 *
 * A joined quoted line keeps the quote marks (and stuffing space) of its first line as
 * written, once; an unquoted line loses its stuffing space. Line ends become LF. Linear in
 * the text: each line is visited once and a paragraph is joined once.
 */

interface Line {
  /** Quote marks and, for a quoted line, the stuffing space after them, as written. */
  prefix: string
  depth: number
  content: string
}

const SIGNATURE_SEPARATOR = '-- '

function readLine(line: string): Line {
  let depth = 0
  while (line.charCodeAt(depth) === 0x3e) depth++
  const stuffed = line.charCodeAt(depth) === 0x20
  const contentStart = depth + (stuffed ? 1 : 0)
  return { prefix: depth > 0 ? line.slice(0, contentStart) : '', depth, content: line.slice(contentStart) }
}

const isFlowed = (line: Line): boolean => line.content.endsWith(' ') && line.content !== SIGNATURE_SEPARATOR

export function decodeFlowed(text: string, delSp: boolean): string {
  // The part's last line break ends the text, it does not start an empty last line.
  const endsWithBreak = text.endsWith('\n')
  const lines = (endsWithBreak ? text.slice(0, text.endsWith('\r\n') ? -2 : -1) : text).split(/\r?\n/)
  const out: string[] = []
  let paragraph: string[] = []
  let current: Line | undefined
  for (const raw of lines) {
    const line = readLine(raw)
    if (current && isFlowed(current) && line.depth === current.depth && line.content !== SIGNATURE_SEPARATOR) {
      if (delSp) paragraph[paragraph.length - 1] = current.content.slice(0, -1)
      paragraph.push(line.content)
      current = line
      continue
    }
    if (current) out.push(paragraph.join(''))
    paragraph = [line.prefix, line.content]
    current = line
  }
  if (current) out.push(paragraph.join(''))
  return out.join('\n') + (endsWithBreak ? '\n' : '')
}
