/**
 * Freezing settings for good: `deepFreeze` freezes a value and every plain object and array
 * reachable from it, so no reader of the configuration can change what every other part reads.
 */
export function deepFreeze<T>(value: T): T {
  if (
    value !== null &&
    typeof value === "object" &&
    !Object.isFrozen(value) &&
    (Array.isArray(value) || Object.getPrototypeOf(value) === Object.prototype)
  ) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value;
}
