/** A start-up failure the operator can act on: printed as one line, without a stack. */
export class StartupError extends Error {}
