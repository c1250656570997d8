/** @jsxImportSource preact */
/** API keys (owners create and revoke; members see the list) and the audit log (owners). */
import { AUDIT_PAGE_SIZE, listAudit } from '../../core/console/audit.ts'
import { createNamedApiKey, listOrganizationKeys, revokeOrganizationKey } from '../../core/console/keys.ts'
import { redirect } from '../context.ts'
import { AuditTable } from '../pages/audit.tsx'
import { KeysPage } from '../pages/keys.tsx'
import { orgPath } from '../pages/shell.tsx'
import { renderPage } from '../render.tsx'
import type { Route } from '../router.ts'

export const keyRoutes: Route[] = [
  {
    method: 'GET',
    path: '/console/orgs/:org/keys',
    handler: (ctx) => {
      const org = ctx.requireMember(ctx.params.org!)
      return renderPage(ctx, `API keys · ${org.name}`, <KeysPage org={org} keys={listOrganizationKeys(ctx.s.storage.db, org.organizationId)} />, { org, section: 'keys' })
    },
  },
  {
    method: 'POST',
    path: '/console/orgs/:org/keys',
    handler: (ctx) => {
      const org = ctx.requireMember(ctx.params.org!, 'owner')
      const name = ctx.field('name')
      const created = createNamedApiKey(ctx.s, org.organizationId, name, ctx.actor())
      const page = <KeysPage org={org} keys={listOrganizationKeys(ctx.s.storage.db, org.organizationId)} created={{ key: created.key, name: name.trim() }} />
      return renderPage(ctx, `API keys · ${org.name}`, page, { org, section: 'keys' })
    },
  },
  {
    method: 'POST',
    path: '/console/orgs/:org/keys/:key/revoke',
    handler: (ctx) => {
      const org = ctx.requireMember(ctx.params.org!, 'owner')
      revokeOrganizationKey(ctx.s, org.organizationId, ctx.params.key!, ctx.actor())
      return redirect(orgPath(org.organizationId, '/keys'))
    },
  },
  {
    method: 'GET',
    path: '/console/orgs/:org/audit',
    handler: (ctx) => {
      const org = ctx.requireMember(ctx.params.org!, 'owner')
      const before = Number(ctx.url.searchParams.get('before')) || undefined
      const events = listAudit(ctx.s.storage.db, org.organizationId, before)
      const olderHref = events.length === AUDIT_PAGE_SIZE ? orgPath(org.organizationId, `/audit?before=${events.at(-1)!.id}`) : undefined
      const page = (
        <section class="card">
          <h2>Audit log</h2>
          <AuditTable events={events} olderHref={olderHref} />
        </section>
      )
      return renderPage(ctx, `Audit log · ${org.name}`, page, { org, section: 'audit' })
    },
  },
]
