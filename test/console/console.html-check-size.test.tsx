/** @jsxImportSource preact */
/** The HTML-support page stays under the console's 50 KB page budget even for HTML that uses every feature caniemail knows. */
import { expect, test } from 'bun:test'
import data from 'caniemail/caniemail.json' with { type: 'json' }
import { render } from 'preact-render-to-string'
import { checkHtmlSupport } from '../../src/console/checks/html-support.ts'
import type { Message } from '../../src/core/common/models.ts'
import type { Membership } from '../../src/core/organizations/organizations.ts'
import { HtmlCheckPage } from '../../src/console/pages/html-check.tsx'

test('every feature at once: the worst issues listed, the rest counted, under 50 KB', () => {
  const slugs = (data.data as { slug: string }[]).map((f) => f.slug)
  const properties = slugs.filter((s) => s.startsWith('css-')).map((s) => s.slice(4))
  const elements = slugs.filter((s) => s.startsWith('html-')).map((s) => s.slice(5))
  const html = [
    `<style>${properties.map((p, i) => `.c${i} { ${p}: 1px }`).join('\n')} a:hover {} p::before {} @media (prefers-color-scheme: dark) {} @font-face {} @keyframes k {}</style>`,
    ...elements.map((e) => `<${e} align="x" valign="y" srcset="z" role="r" lang="l" dir="d">`),
    '<video></video><svg></svg><form><input type="checkbox"><input type="radio"></form>',
  ].join('\n')
  const report = checkHtmlSupport(html)
  expect(report.issues.length).toBeGreaterThan(100)
  const page = render(
    <HtmlCheckPage
      org={{ organizationId: 'org_1', name: 'Acme' } as Membership}
      message={{ id: 'msg_1', subject: 'Everything' } as Message}
      report={report}
    />,
  )
  expect(page.length).toBeLessThan(50 * 1024)
  expect(page).toContain(`And ${report.issues.length - 60} more`)
})
