/** The SQLite side of OrganizationStore (../../port/organizations.ts). */
import type { OrganizationStore } from '../../port/organizations.ts'
import type { Storage } from '../../types.ts'

export function sqliteOrganizations(_storage: Storage): OrganizationStore {
  return {}
}
