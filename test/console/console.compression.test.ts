/** Console responses are gzip-compressed for a browser that accepts it, and only then. */
import { expect, test } from 'bun:test'
import { gunzipSync } from 'node:zlib'
import { acceptsGzip, compressed } from '../../src/console/compression.ts'

const request = (acceptEncoding?: string) =>
  new Request('http://localhost/console', {
    headers: acceptEncoding === undefined ? {} : { 'accept-encoding': acceptEncoding },
  })
const page = 'x'.repeat(5000)
const html = () =>
  new Response(page, { status: 201, headers: { 'content-type': 'text/html; charset=utf-8', 'x-kept': '1' } })

test('Accept-Encoding is read with its weights', () => {
  expect(acceptsGzip(request('gzip, deflate, br, zstd'))).toBe(true)
  expect(acceptsGzip(request('br;q=1.0, GZIP;q=0.5'))).toBe(true)
  expect(acceptsGzip(request('gzip;q=0'))).toBe(false)
  expect(acceptsGzip(request('br, x-gzip'))).toBe(false)
  expect(acceptsGzip(request('identity'))).toBe(false)
  expect(acceptsGzip(request())).toBe(false)
})

test('a page is compressed with its status and headers kept, and says it varies', async () => {
  const response = await compressed(request('gzip'), html())
  expect(response.status).toBe(201)
  expect(response.headers.get('content-encoding')).toBe('gzip')
  expect(response.headers.get('x-kept')).toBe('1')
  expect(response.headers.get('vary')).toBe('Accept-Encoding')
  const body = Buffer.from(await response.arrayBuffer())
  expect(body.byteLength).toBeLessThan(200)
  expect(gunzipSync(body).toString()).toBe(page)
})

test('not compressed: no gzip accepted, a small body, a download, an event stream', async () => {
  const plain = await compressed(request(), html())
  expect(plain.headers.get('content-encoding')).toBeNull()
  expect(plain.headers.get('vary')).toBe('Accept-Encoding')
  expect(await plain.text()).toBe(page)
  const small = await compressed(
    request('gzip'),
    new Response('<p>hi</p>', { headers: { 'content-type': 'text/html' } }),
  )
  expect(small.headers.get('content-encoding')).toBeNull()
  expect(await small.text()).toBe('<p>hi</p>')
  const download = await compressed(
    request('gzip'),
    new Response(page, {
      headers: { 'content-type': 'text/plain', 'content-disposition': 'attachment; filename="a.txt"' },
    }),
  )
  expect(download.headers.get('content-encoding')).toBeNull()
  const stream = await compressed(
    request('gzip'),
    new Response(page, { headers: { 'content-type': 'text/event-stream' } }),
  )
  expect(stream.headers.get('content-encoding')).toBeNull()
})

test("the live refresh's list is sent uncompressed: its latency is what counts", async () => {
  const list = await compressed(
    request('gzip'),
    new Response(page, { headers: { 'content-type': 'text/html', 'x-live-list': '1' } }),
  )
  expect(list.headers.get('content-encoding')).toBeNull()
  expect(await list.text()).toBe(page)
})
