/**
 * The books' database (PostgreSQL) is unreachable: what reads it answers 503 `books_unavailable`
 * (mapped in http/errors.ts); the hot path never sees it.
 */
export class BooksUnavailableError extends Error {}
