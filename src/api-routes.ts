import type { AnyRoute } from "./http/route.js";
import { getAccount } from "./accounts/routes/account.js";
import {
  adminGrantCredits,
  adminIssueKey,
  adminListAccounts,
  adminSetTier,
} from "./accounts/routes/admin.js";
import { createKey, listKeys, revokeKey, rotateKey } from "./accounts/routes/keys.js";
import { resendVerification } from "./accounts/routes/resend-verification.js";
import { signup } from "./accounts/routes/signup.js";
import { usage } from "./accounts/routes/usage.js";
import { listEvents } from "./accounts/routes/events.js";
import { verifyEmail } from "./accounts/routes/verify-email.js";
import { webhookRoutes } from "./webhooks/routes/index.js";
import { paymentRoutes } from "./payments/routes.js";
import { incidentRoutes } from "./status/incident-routes.js";

/**
 * What a signed-in account manages: its account, keys, usage, events and webhooks. Served under
 * /api/v1 with `x-api-key`, and again under /dashboard/api/v1 with the dashboard's session.
 */
export const accountRoutes: AnyRoute[] = [
  getAccount,
  listKeys,
  createKey,
  rotateKey,
  revokeKey,
  usage,
  listEvents,
  ...webhookRoutes("account"),
];

/** Everything under /api/v1: accounts and keys, admin, webhooks, purchases and wallet sign-in. */
export const apiRoutes: AnyRoute[] = [
  signup,
  verifyEmail,
  resendVerification,
  ...accountRoutes,
  adminListAccounts,
  adminSetTier,
  adminGrantCredits,
  adminIssueKey,
  ...webhookRoutes("platform"),
  ...paymentRoutes,
  ...incidentRoutes,
];
