/** Counts every routing-provider call and how it ended, around whichever provider is configured. */
import { RoutingError, type RoutingProvider } from '../core/common/routing.ts'

/** One finished provider call; `outcome` is 'ok', a RoutingError's kind, or 'error'. */
export type RoutingCallCounter = (call: { provider: string; operation: string; outcome: string }) => void

export function meteredRouting(provider: RoutingProvider, counted: RoutingCallCounter): RoutingProvider {
  const count = async <T>(operation: string, call: () => Promise<T>): Promise<T> => {
    try {
      const result = await call()
      counted({ provider: provider.name, operation, outcome: 'ok' })
      return result
    } catch (error) {
      counted({ provider: provider.name, operation, outcome: error instanceof RoutingError ? error.kind : 'error' })
      throw error
    }
  }
  return {
    name: provider.name,
    createRule: (address) => count('create_rule', () => provider.createRule(address)),
    deleteRule: (ruleId, address) => count('delete_rule', () => provider.deleteRule(ruleId, address)),
  }
}
