/** @jsxImportSource preact */
/** API keys (owners create and revoke; members see the list) and the audit log (owners). */
import { AUDIT_PAGE_SIZE, listAudit } from '../../core/audit/audit.ts'
import { createApiKey, listOrganizationKeys, revokeOrganizationKey } from '../../core/api-keys/keys.ts'
import { redirect } from '../context.ts'
import { AuditTable } from '../pages/audit.tsx'
import { KeysPage } from '../pages/keys.tsx'
import { PATHS, withQuery } from '../paths.ts'
import { renderPage } from '../render.tsx'
import { route, type Route } from '../router.ts'

export const keyRoutes: Route[] = [
  route({
    method: 'GET',
    path: PATHS.keys,
    access: 'member',
    handler: async (ctx, { org }) => {
      const shownId = ctx.url.searchParams.get('created')
      const held = ctx.shown(shownId, 'api_key')
      const created = held?.organizationId === org.organizationId ? { key: held.key, name: held.name } : undefined
      const page = (
        <KeysPage
          org={org}
          keys={await listOrganizationKeys(ctx.s, org)}
          created={created}
          createdGone={shownId !== null && !created}
        />
      )
      return renderPage(ctx, `API keys · ${org.name}`, page, { org, section: 'keys' })
    },
  }),
  route({
    method: 'POST',
    path: PATHS.keys,
    access: 'owner',
    handler: async (ctx, { org }) => {
      const name = ctx.field('name')
      const created = await createApiKey(ctx.s, ctx.actor(), { organizationId: org.organizationId, name })
      // Shown on the GET this redirects to, so a reload shows the same key instead of making another.
      const id = ctx.holdShown({
        kind: 'api_key',
        organizationId: org.organizationId,
        name: name.trim(),
        key: created.key,
      })
      return redirect(withQuery(PATHS.keys.link(org.organizationId), { created: id }))
    },
  }),
  route({
    method: 'POST',
    path: PATHS.keyRevoke,
    access: 'owner',
    handler: async (ctx, { org }) => {
      await revokeOrganizationKey(ctx.s, ctx.actor(), { organizationId: org.organizationId, publicId: ctx.params.key })
      return redirect(PATHS.keys.link(org.organizationId))
    },
  }),
  route({
    method: 'GET',
    path: PATHS.audit,
    access: 'owner',
    handler: async (ctx, { org }) => {
      const before = Number(ctx.url.searchParams.get('before')) || undefined
      const events = await listAudit(ctx.s, org, { before })
      const olderHref =
        events.length === AUDIT_PAGE_SIZE
          ? withQuery(PATHS.audit.link(org.organizationId), { before: events.at(-1)!.id })
          : undefined
      const page = (
        <section class="card">
          <h2>Audit log</h2>
          <AuditTable events={events} olderHref={olderHref} />
        </section>
      )
      return renderPage(ctx, `Audit log · ${org.name}`, page, { org, section: 'audit' })
    },
  }),
]
