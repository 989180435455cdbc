import type { SsoConnectionChange, SsoConnectionRecord } from "../types.js";

/** What saving a connection did: `not_set_up` when it kept a stored secret and none was stored. */
export type SsoSaveOutcome =
  | { status: "saved"; connection: SsoConnectionRecord }
  | { status: "domain_taken"; domain: string }
  | { status: "not_set_up" };

/** Business accounts' single sign-on connections and the e-mail domains they claim. */
export interface SsoStore {
  /**
   * A Business account's single sign-on connection. Each e-mail domain it lists is claimed for
   * that account alone (the sign-in page finds the account by domain): saving refuses, changing
   * nothing, when another account holds one; domains it no longer lists are released. One
   * account's saves and deletes run one after the other: the domains held are always exactly
   * those the stored connection lists, and a save keeping the stored secret never brings back a
   * connection deleted meanwhile (`not_set_up`).
   */
  putSsoConnection(connection: SsoConnectionChange): Promise<SsoSaveOutcome>;
  getSsoConnection(accountId: string): Promise<SsoConnectionRecord | null>;
  /** Removes the connection and releases its domains; false when there was none. */
  deleteSsoConnection(accountId: string): Promise<boolean>;
  /** The account whose SSO connection lists this (lower-case) e-mail domain, or null. */
  accountIdBySsoDomain(domain: string): Promise<string | null>;
}
