/** cid: references become data: URLs for image parts only, within a byte budget. */
import { expect, test } from 'bun:test'
import { inlineCidImages, MAX_INLINED_BYTES } from '../../src/console/inline-images.ts'
import type { Attachment } from '../../src/core/common/models.ts'

const part = (id: string, contentId: string, contentType: string, size: number): Attachment => ({
  id,
  filename: id,
  content_type: contentType,
  size_bytes: size,
  disposition: 'inline',
  content_id: contentId,
  download_url: `http://x/v1/attachments/${id}`,
})

const bytes = (id: string) => Buffer.from(id)

test('an image part is inlined once per reference, case-insensitively; other parts and unknown ids stay', () => {
  const parts = [part('att_a', 'Logo@X', 'image/png', 5), part('att_b', 'doc@x', 'application/pdf', 5)]
  const html = '<img src="cid:logo@x"><img src=CID:LOGO@X><a href="cid:doc@x">d</a><img src="cid:nope">'
  const data = `data:image/png;base64,${bytes('att_a').toString('base64')}`
  expect(inlineCidImages(html, parts, bytes)).toBe(
    `<img src="${data}"><img src=${data}><a href="cid:doc@x">d</a><img src="cid:nope">`,
  )
})

test(`past ${MAX_INLINED_BYTES} bytes in all, further images stay cid: references`, () => {
  const parts = [part('att_a', 'a', 'image/png', MAX_INLINED_BYTES - 10), part('att_b', 'b', 'image/png', 11)]
  const out = inlineCidImages('<img src="cid:a"><img src="cid:b">', parts, bytes)
  expect(out).toStartWith('<img src="data:image/png;base64,')
  expect(out).toEndWith('<img src="cid:b">')
})

test('a malformed percent-escape in a reference is left alone; a run of references is one unknown id', () => {
  expect(inlineCidImages('<img src="cid:%E0%A4%A">', [part('att_a', 'a', 'image/png', 1)], bytes)).toBe(
    '<img src="cid:%E0%A4%A">',
  )
  const hostile = 'cid:'.repeat(250_000)
  expect(inlineCidImages(hostile, [part('att_a', 'a', 'image/png', 1)], bytes)).toBe(hostile)
})
