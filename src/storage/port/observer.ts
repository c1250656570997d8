/**
 * Told about every commit and every failed write, so a failing volume is noticed by whatever
 * write meets it first and its end by the first commit after it (src/core/runtime/storage-health.ts).
 * The adapters themselves stay free of logging and policy.
 */
export interface StorageObserver {
  committed(): void
  failed(error: unknown): unknown
}
