/**
 * The SQLite file's entry point, for the composition root (src/app/backend.ts opens it) and
 * tests: the types of src/storage/types.ts and the SQLite implementation in src/storage/sqlite/
 * (one file per mechanism: opening and migrating, statement reuse, the WAL sync, group commit,
 * the file's pages). Core sees none of it, only the port.
 */
export type { Storage, Tx } from './types.ts'
export { canReleaseFreePages } from './sqlite/database-file.ts'
export { NEW_DATABASE_PAGE_SIZE, openStorage } from './sqlite/open.ts'
