/** Counts every routing-provider call and how it ended, around whichever provider is configured. */
import { RoutingError, type RoutingProvider } from '../core/routing.ts'
import type { AppMetrics } from '../metrics/app-metrics.ts'

export function meteredRouting(provider: RoutingProvider, metrics: AppMetrics): RoutingProvider {
  const count = async <T>(operation: string, call: () => Promise<T>): Promise<T> => {
    try {
      const result = await call()
      metrics.routingCalls.inc({ provider: provider.name, operation, outcome: 'ok' })
      return result
    } catch (error) {
      metrics.routingCalls.inc({ provider: provider.name, operation, outcome: error instanceof RoutingError ? error.kind : 'error' })
      throw error
    }
  }
  return {
    name: provider.name,
    createRule: (address) => count('create_rule', () => provider.createRule(address)),
    deleteRule: (ruleId, address) => count('delete_rule', () => provider.deleteRule(ruleId, address)),
  }
}
