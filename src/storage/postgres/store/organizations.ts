/** The PostgreSQL side of OrganizationStore (../../port/organizations.ts). */
import type { OrganizationStore } from '../../port/organizations.ts'
import type { PostgresDb } from '../db.ts'

export function postgresOrganizations(_db: PostgresDb): OrganizationStore {
  return {}
}
