/**
 * The storage entry point the rest of the server imports: the types of src/storage/types.ts
 * and the SQLite implementation in src/storage/sqlite/ (one file per mechanism: opening and
 * migrating, statement reuse, the WAL sync, group commit).
 */
export type { Db, DbOrTx, Storage, StorageObserver, Tx } from './types.ts'
export { LARGE_WRITE_BYTES } from './sqlite/group-commit.ts'
export { canReleaseFreePages, releaseFreePages, truncateWal } from './sqlite/database-file.ts'
export { NEW_DATABASE_PAGE_SIZE, openStorage } from './sqlite/open.ts'
