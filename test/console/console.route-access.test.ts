/**
 * Every console route says who may reach it, and the route table is built from the one
 * paths module: a route without an access level, or a member route whose path names no
 * organisation, is refused when the router is built, so it never serves a request.
 */
import { describe, expect, test } from 'bun:test'
import { Glob } from 'bun'
import { join } from 'node:path'
import { ACCESS_LEVELS } from '../../src/console/access.ts'
import { CONSOLE_ROUTES } from '../../src/console/index.ts'
import { PATHS } from '../../src/console/paths.ts'
import { compileRoute, type Route } from '../../src/console/router.ts'

const page = () => new Response('ok')

describe('the registered routes', () => {
  test('every route declares one of the access levels', () => {
    expect(CONSOLE_ROUTES.length).toBeGreaterThan(40)
    for (const route of CONSOLE_ROUTES) expect(ACCESS_LEVELS, `${route.method} ${route.path}`).toContain(route.access)
  })

  test("every route under an organisation is for its members or owners; every operator page is the operator's", () => {
    for (const route of CONSOLE_ROUTES) {
      const id = `${route.method} ${route.path}`
      if (route.path.startsWith('/console/orgs/')) expect(['member', 'owner'], id).toContain(route.access)
      if (route.path.startsWith('/console/admin')) expect(route.access, id).toBe('operator')
    }
  })

  test('every route path is a pattern of the paths module, and each pattern is defined once', () => {
    const patterns: string[] = Object.values(PATHS).map((path) => path.pattern)
    expect(new Set(patterns).size).toBe(patterns.length)
    for (const route of CONSOLE_ROUTES) expect(patterns).toContain(route.path)
  })
})

describe('building the router', () => {
  test('a route without an access level is refused, naming it', () => {
    const route = { method: 'GET', path: '/console/forgotten', handler: page } as unknown as Route
    expect(() => compileRoute(route)).toThrow('console route GET /console/forgotten declares no access level')
    expect(() => compileRoute({ ...route, access: 'admin' } as unknown as Route)).toThrow('declares no access level')
  })

  test('a member or owner route whose path has no :org is refused', () => {
    for (const access of ['member', 'owner'] as const) {
      expect(() => compileRoute({ method: 'POST', path: '/console/account/thing', access, handler: page })).toThrow(
        'has no :org in its path',
      )
    }
    expect(() =>
      compileRoute({ method: 'GET', path: PATHS.keys.pattern, access: 'owner', handler: page }),
    ).not.toThrow()
  })
})

describe('links', () => {
  test('no console code outside the paths module spells a console path in a string', async () => {
    const root = join(import.meta.dir, '..', '..', 'src', 'console')
    const found: string[] = []
    for await (const file of new Glob('**/*.{ts,tsx}').scan(root)) {
      if (file === 'paths.ts') continue
      const text = await Bun.file(join(root, file)).text()
      for (const match of text.matchAll(/[`'"]\/(console|setup)\b[^`'"]*/g)) found.push(`${file}: ${match[0]}`)
    }
    expect(found).toEqual([])
  })

  test('a link fills the names in order and percent-encodes each value', () => {
    expect(PATHS.inbox.link('org_1', 'inbox_2')).toBe('/console/orgs/org_1/inboxes/inbox_2')
    expect(PATHS.memberRole.link('org 1', 'a/b?c')).toBe('/console/orgs/org%201/members/a%2Fb%3Fc/role')
    expect(PATHS.home.link()).toBe('/console')
  })

  test('a link is matched by its own route, which reads back the same values', () => {
    const compiled = compileRoute({ method: 'GET', path: PATHS.message.pattern, access: 'member', handler: page })
    const values = compiled.pattern.exec(PATHS.message.link('org_x', 'msg/%y'))!.slice(1).map(decodeURIComponent)
    expect(Object.fromEntries(compiled.names.map((name, i) => [name, values[i]]))).toEqual({
      org: 'org_x',
      message: 'msg/%y',
    })
  })
})
