import type { RouteDef } from "./http/route.js";
import { getAccount } from "./accounts/routes/account.js";
import { adminGrantCredits, adminIssueKey, adminListAccounts, adminSetTier } from "./accounts/routes/admin.js";
import { adminBindWorkers, adminGetWorkers, adminUnbindWorkers } from "./accounts/routes/admin-workers.js";
import { createKey, listKeys, revokeKey, rotateKey } from "./accounts/routes/keys.js";
import { resendVerification } from "./accounts/routes/resend-verification.js";
import { signup } from "./accounts/routes/signup.js";
import { usage } from "./accounts/routes/usage.js";
import { listEvents } from "./accounts/routes/events.js";
import { verifyEmail } from "./accounts/routes/verify-email.js";
import { webhookRoutes } from "./webhooks/routes/index.js";
import { paymentRoutes } from "./payments/routes.js";
import { incidentRoutes } from "./status/incident-routes.js";

/** Everything under /api/v1: accounts and keys, admin, webhooks, purchases and wallet sign-in. */
export const apiRoutes: RouteDef<any, any, any>[] = [
  signup,
  verifyEmail,
  getAccount,
  resendVerification,
  listKeys,
  createKey,
  rotateKey,
  revokeKey,
  usage,
  listEvents,
  adminListAccounts,
  adminSetTier,
  adminGrantCredits,
  adminIssueKey,
  adminGetWorkers,
  adminBindWorkers,
  adminUnbindWorkers,
  ...webhookRoutes("account"),
  ...webhookRoutes("platform"),
  ...paymentRoutes,
  ...incidentRoutes,
];
