import type { SsoConnectionRecord } from "../types.js";

/** Business accounts' single sign-on connections and the e-mail domains they claim. */
export interface SsoStore {
  /**
   * A Business account's single sign-on connection. Each e-mail domain it lists is claimed for
   * that account alone (the sign-in page finds the account by domain): saving refuses, changing
   * nothing, when another account holds one; domains it no longer lists are released.
   */
  putSsoConnection(
    connection: SsoConnectionRecord,
  ): Promise<{ status: "saved" } | { status: "domain_taken"; domain: string }>;
  getSsoConnection(accountId: string): Promise<SsoConnectionRecord | null>;
  /** Removes the connection and releases its domains; false when there was none. */
  deleteSsoConnection(accountId: string): Promise<boolean>;
  /** The account whose SSO connection lists this (lower-case) e-mail domain, or null. */
  accountIdBySsoDomain(domain: string): Promise<string | null>;
}
