/**
 * What this process's calls of each provider tool saw since the status checks last asked: the
 * calls served, and the accounts whose calls failed because the provider did (the workers' answer
 * said `provider_unhealthy`: unreachable, its 5xx, its timeout, its refusal of the gateway's
 * credentials or quota). A failure the caller caused (an answer its schema refuses, an input the
 * provider finds invalid, a page it chose that fails) is not the provider's health and is not here.
 *
 * Each account's failures weigh one per round, however many it sent: a caller can still steer the
 * provider into its own timeout (an input the model takes too long on), free since failed calls are
 * refunded, and one account sending many such calls would otherwise outweigh everyone's successes.
 * A provider that fails for everyone still fails for each account, and reads degraded.
 */
export interface ProviderRound {
  served: number;
  failedAccounts: number;
}

/** Past this many accounts in one round the count is its own answer; the set stays bounded. */
const MAX_ACCOUNTS_PER_ROUND = 10_000;

export class ProviderHealth {
  readonly #rounds = new Map<string, { served: number; failedAccounts: Set<string> }>();

  #round(tool: string) {
    let round = this.#rounds.get(tool);
    if (!round) this.#rounds.set(tool, (round = { served: 0, failedAccounts: new Set() }));
    return round;
  }

  served(tool: string): void {
    this.#round(tool).served++;
  }

  providerFailed(tool: string, accountId: string): void {
    const { failedAccounts } = this.#round(tool);
    if (failedAccounts.size < MAX_ACCOUNTS_PER_ROUND) failedAccounts.add(accountId);
  }

  /** The round since the last call, and a new one begun. */
  take(tool: string): ProviderRound {
    const round = this.#rounds.get(tool);
    this.#rounds.delete(tool);
    return { served: round?.served ?? 0, failedAccounts: round?.failedAccounts.size ?? 0 };
  }
}
