/** @jsxImportSource preact */
/** GET /console/orgs/:org: the organisation's overview. */
import { consolePrincipal, organizationWithLimits } from '../../core/organizations/organizations.ts'
import { getUsage } from '../../core/usage.ts'
import { Overview } from '../pages/overview.tsx'
import { renderPage } from '../render.tsx'
import type { Route } from '../router.ts'

export const organizationRoutes: Route[] = [
  {
    method: 'GET',
    path: '/console/orgs/:org',
    handler: (ctx) => {
      const org = ctx.requireMember(ctx.params.org!)
      const { limits } = organizationWithLimits(ctx.s, org)
      const usage = getUsage(ctx.s, consolePrincipal(org.organizationId, limits))
      const page = <Overview organizationId={org.organizationId} usage={usage} limits={limits} receivingDomain={ctx.s.config.receivingDomain} isOwner={org.role === 'owner'} />
      return renderPage(ctx, org.name, page, { org, section: 'overview' })
    },
  },
]
