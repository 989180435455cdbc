/**
 * A heavy tool's output as its thread sends it: already checked against the tool's output schema
 * and written as JSON there. A large output (240,000 CSV rows) took the shared event loop most of
 * a second to check and serialize, which is what running the tool in a thread is meant to spare it.
 */
export class SerializedOutput {
  constructor(readonly json: string) {}
}
