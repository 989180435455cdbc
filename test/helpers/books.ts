/** An account's whole ledger as the store holds it, newest first (every page). */
export { heldLedger as ledgerOf } from "../../src/books/check.js";
