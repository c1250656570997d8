/**
 * The MIME fixes hook internal methods of postal-mime and patch two lines of it. These tests
 * fail loudly when the dependency changes underneath: a version other than the pinned one,
 * a lost patch, or hooks that no longer take effect.
 */
import { expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import PostalMime from 'postal-mime'
import { FaithfulPostalMime } from '../../src/core/inbound/mime/parser.ts'

const ROOT = join(import.meta.dir, '..', '..')
const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'))
const installed = JSON.parse(readFileSync(join(ROOT, 'node_modules', 'postal-mime', 'package.json'), 'utf8'))

test('postal-mime is pinned to an exact version, installed at that version, with its patch declared', () => {
  const pinned: string = manifest.dependencies['postal-mime']
  expect(pinned).toMatch(/^\d+\.\d+\.\d+$/)
  expect(installed.version).toBe(pinned)
  expect(manifest.patchedDependencies).toMatchObject({
    [`postal-mime@${pinned}`]: `patches/postal-mime@${pinned}.patch`,
  })
})

test('the patch is applied: a nested message is parsed by the subclass that parses its parent', async () => {
  const source = (PostalMime.prototype as unknown as Record<string, () => void>).collectSubMessage!.toString()
  expect(source).toContain('new this.constructor(')
  const built: string[] = []
  class Probe extends FaithfulPostalMime {
    constructor(options?: ConstructorParameters<typeof FaithfulPostalMime>[0]) {
      super(options)
      built.push(new.target.name)
    }
  }
  await new Probe().parse('Content-Type: message/rfc822\r\n\r\nSubject: inner\r\n\r\nbody\r\n')
  expect(built).toEqual(['Probe', 'Probe'])
})

test('the patch is applied: a Date header is checked without Date#toString, valid or not', async () => {
  // Date#toString's first call in a process loads the time zone rules, about 40 ms of CPU,
  // which the first small message with a Date header paid on the event loop.
  const source = (PostalMime.prototype as unknown as Record<string, () => void>).buildMessage!.toString()
  expect(source).not.toContain("toString() === 'Invalid Date'")
  expect(source).toContain('Number.isNaN(date.getTime())')
  expect((await new FaithfulPostalMime().parse('Date: Wed, 17 May 2000 19:08:29 -0400\r\n\r\nx\r\n')).date).toBe(
    '2000-05-17T23:08:29.000Z',
  )
  expect((await new FaithfulPostalMime().parse('Date: the day after tomorrow\r\n\r\nx\r\n')).date).toBe(
    'the day after tomorrow',
  )
})

test('the hooks replace postal-mime methods that still exist', () => {
  const base = PostalMime.prototype as unknown as Record<string, unknown>
  const hooked = FaithfulPostalMime.prototype as unknown as Record<string, unknown>
  for (const name of ['collectNode', 'collectAttachment']) {
    expect(typeof base[name]).toBe('function')
    expect(Object.hasOwn(hooked, name)).toBe(true)
    expect(hooked[name]).not.toBe(base[name])
  }
})

test('through the hooks, a nested 7bit attachment keeps its CRLF line ends and no byte more', async () => {
  const inner = [
    'Content-Type: multipart/mixed; boundary=in',
    '',
    '--in',
    'Content-Type: text/plain',
    'Content-Disposition: attachment; filename=a.txt',
    '',
    'one',
    'two',
    '',
    '--in--',
    '',
  ]
  const raw = [
    'Content-Type: multipart/mixed; boundary=out',
    '',
    '--out',
    'Content-Type: message/rfc822',
    '',
    ...inner,
    '--out--',
    '',
  ].join('\r\n')
  const email = await new FaithfulPostalMime().parse(raw)
  expect(email.attachments).toHaveLength(1)
  expect(Buffer.from(email.attachments[0]!.content as ArrayBuffer).toString('latin1')).toBe('one\r\ntwo\r\n')
})

test("the parser's input is where the hooks read it, to tell the sender's last line break from the boundary's", async () => {
  const parser = new FaithfulPostalMime()
  await parser.parse('Subject: x\r\n\r\nbody\r\n')
  const input = (parser as unknown as { av: unknown }).av
  expect(input).toBeInstanceOf(Uint8Array)
  expect(Buffer.from(input as Uint8Array).toString()).toBe('Subject: x\r\n\r\nbody\r\n')
})

test('through the hooks, format=flowed is unwrapped by quote depth (postal-mime still calls decodeFlowedText)', async () => {
  const email = await new FaithfulPostalMime().parse(
    'Content-Type: text/plain; format=flowed\r\n\r\n> one \r\n> two\r\nthree\r\n',
  )
  expect(email.text).toBe('> one two\nthree\n')
})
