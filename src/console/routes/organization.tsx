/** @jsxImportSource preact */
/** GET /console/orgs/:org: the organisation's overview. */
import { getUsage } from '../../core/limits/usage.ts'
import { Overview } from '../pages/overview.tsx'
import { PATHS } from '../paths.ts'
import { renderPage } from '../render.tsx'
import { route, type Route } from '../router.ts'

export const organizationRoutes: Route[] = [
  route({
    method: 'GET',
    path: PATHS.organization,
    access: 'member',
    handler: async (ctx, { org, principal }) => {
      const usage = await getUsage(ctx.s, principal)
      const page = (
        <Overview
          organizationId={org.organizationId}
          usage={usage}
          limits={principal.limits}
          receivingDomain={ctx.s.config.receivingDomain}
          isOwner={org.role === 'owner'}
        />
      )
      return renderPage(ctx, org.name, page, { org, section: 'overview' })
    },
  }),
]
