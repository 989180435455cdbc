import type { Logger } from "pino";

/** How often a step that must reach the store is retried in the background. */
const RETRY_EVERY_MS = 1000;

/**
 * Runs `step` in the background once a second until the store takes it, until `deadline` (ms):
 * for the end of a charged call (its refund, its Idempotency-Key's answer, its open record) that
 * the store could not record when the call ended. The caller has been answered already; what it was told must
 * become true in the books once the store is back, so the step is never dropped after a few quick
 * tries. `step` must be idempotent (a refund is, per request id). It lives in this process: if the
 * process dies too, the debit stays in the ledger (decisions.md, "Lost admissions").
 */
export function untilStoreAnswers(
  log: Logger,
  what: string,
  context: Record<string, unknown>,
  deadline: number,
  step: () => Promise<void>,
): void {
  const attempt = () =>
    step().then(
      () => log.warn(context, `${what}: done once the store answered again`),
      (err: unknown) => {
        if (Date.now() < deadline) setTimeout(attempt, RETRY_EVERY_MS).unref();
        else
          log.error(
            { ...context, err },
            `${what}: the store never answered; the ledger needs reconciling`,
          );
      },
    );
  setTimeout(attempt, RETRY_EVERY_MS).unref();
}
