/**
 * Whether this process still wants new requests. On SIGTERM it stops wanting them before it stops
 * taking them (main.ts `stop`): /readyz answers 503 for SHUTDOWN_DELAY_SECONDS while every other
 * request is still served, so a load balancer takes the replica out before its listener closes
 * and refuses connections.
 */
export class Readiness {
  #draining = false;

  get draining(): boolean {
    return this.#draining;
  }

  /** The shutdown has begun: from now on /readyz says so. */
  drain(): void {
    this.#draining = true;
  }
}
