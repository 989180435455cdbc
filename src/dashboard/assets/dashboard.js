// The dashboard's one script, served from the gateway itself (/dashboard/assets/dashboard.js;
// the pages' CSP allows same-origin scripts only, and no inline script). It calls the account API
// under /dashboard/api/v1 with the session cookie and the page's CSRF token, shows what changed,
// and follows the live feed over Server-Sent Events. No framework, no build step: it runs as is
// in any current browser.

(() => {
  const csrf = document.querySelector('meta[name="csrf-token"]')?.getAttribute("content") ?? "";
  // PUBLIC_BASE_URL's path ("" at the root): behind a proxy serving the gateway under a path, every
  // address this script asks for starts with it (the page's layout writes it).
  const base = document.querySelector('meta[name="base-path"]')?.getAttribute("content") ?? "";
  const byId = (id) => document.getElementById(id);

  function notice(text, isError) {
    const box = byId("notice");
    if (!box) return;
    box.className = isError ? "notice error" : "notice";
    box.setAttribute("role", isError ? "alert" : "status");
    box.textContent = text;
  }

  // One request to the account API; resolves with the parsed answer, rejects with its message.
  async function api(method, path, body) {
    const headers = { "x-csrf-token": csrf };
    if (body !== undefined) headers["content-type"] = "application/json";
    const res = await fetch(`${base}/dashboard/api/v1${path}`, {
      method,
      headers,
      credentials: "same-origin",
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    let data = null;
    try {
      data = text ? JSON.parse(text) : null;
    } catch {
      data = null;
    }
    if (res.status === 401) window.location.assign(`${base}/dashboard/sign-in?notice=expired`);
    if (!res.ok) throw new Error(data?.error?.message ?? `The request failed (${res.status}).`);
    return data;
  }

  // The attributes that name a button's action and its row: its twin in a refreshed table has them too.
  const TWIN_ATTRIBUTES = ["data-action", "data-key-id", "data-webhook-id", "data-copy"];

  // Where focus goes when the element holding it is swapped out: the same button in the new markup
  // (the key's "Change limits" after saving its limits), else the section's heading, so the next
  // Tab continues from there instead of from the top of the page.
  function refocus(lost, swapped) {
    if (lost.tagName === "BUTTON") {
      const selector = TWIN_ATTRIBUTES.filter((name) => lost.hasAttribute(name))
        .map((name) => `[${name}="${CSS.escape(lost.getAttribute(name))}"]`)
        .join("");
      const twin = selector ? swapped.querySelector(`button${selector}`) : null;
      if (twin) return twin.focus();
    }
    const heading = swapped.closest("section")?.querySelector("h2") ?? document.querySelector("h1");
    if (!heading) return;
    if (!heading.hasAttribute("tabindex")) heading.setAttribute("tabindex", "-1");
    heading.focus();
  }

  // Re-reads this page and swaps in the tables marked data-refresh: the server renders them. The
  // notice of a change is shown after this, so what it announces is already on the page. A change
  // to what this session was opened with (its key revoked or given limits, single sign-on turned
  // off) ended the session: then the sign-in page says why, unless `keepPage` (a new key is shown that must be copied first). Focus
  // inside a swapped table is moved to its replacement (see refocus), never left on <body>.
  async function refreshTables({ keepPage = false } = {}) {
    const res = await fetch(window.location.pathname, { credentials: "same-origin" });
    if (new URL(res.url).pathname === `${base}/dashboard/sign-in`) {
      if (!keepPage) window.location.assign(`${base}/dashboard/sign-in?notice=session_key_changed`);
      return false;
    }
    const fresh = new DOMParser().parseFromString(await res.text(), "text/html");
    for (const old of document.querySelectorAll("[data-refresh]")) {
      const replacement = old.id ? fresh.getElementById(old.id) : null;
      if (!replacement) continue;
      const active = document.activeElement;
      const hadFocus = active && active !== old && old.contains(active);
      const swapped = document.importNode(replacement, true);
      old.replaceWith(swapped);
      if (hadFocus) refocus(active, swapped);
    }
    return true;
  }

  function showSecret(boxId, valueId, secret) {
    const box = byId(boxId);
    byId(valueId).textContent = secret;
    box.hidden = false;
    // A new secret has not been copied yet, whatever the button said of the last one.
    const copyButton = box.querySelector("button[data-copy]");
    if (!copyButton) return;
    copyButton.textContent = "Copy";
    copyButton.focus();
  }

  // Shows a key dialog's warning about this session only for the key the session was opened with.
  function warnIfSessionKey(dialog, button) {
    const ours = button.getAttribute("data-session-key") === "true";
    for (const warning of dialog.querySelectorAll(".session-key-warning")) warning.hidden = !ours;
  }

  // A <dialog> as a confirmation: resolves true when its "confirm" button closed it.
  function confirmWith(dialog) {
    return new Promise((resolve) => {
      dialog.returnValue = "";
      dialog.addEventListener("close", () => resolve(dialog.returnValue === "confirm"), {
        once: true,
      });
      dialog.showModal();
    });
  }

  // A button at work is marked aria-disabled, not disabled: a disabled button loses the keyboard's
  // focus (to <body>, and the next Tab starts from the top of the page). Clicks on it are ignored.
  const isBusy = (button) => button?.getAttribute("aria-disabled") === "true";
  function markBusy(button, on) {
    if (!button) return;
    if (on) button.setAttribute("aria-disabled", "true");
    else button.removeAttribute("aria-disabled");
  }

  // Runs an action with its button marked busy (once at a time); a refusal is shown, never thrown away.
  async function busy(button, action) {
    if (isBusy(button)) return;
    markBusy(button, true);
    try {
      await action();
    } catch (err) {
      notice(err.message, true);
    } finally {
      markBusy(button, false);
    }
  }

  function copy(button) {
    const source = byId(button.getAttribute("data-copy"));
    const copied = () => {
      button.textContent = "Copied";
      notice("Copied to the clipboard.");
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard
        .writeText(source.textContent)
        .then(copied, () => notice("Select the text and copy it yourself.", true));
      return;
    }
    // Plain HTTP (a local gateway): select the text for the keyboard's copy.
    const range = document.createRange();
    range.selectNodeContents(source);
    const selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    notice("Selected: copy it with your keyboard (Ctrl+C or ⌘C).");
  }

  async function rotateKey(button) {
    const dialog = byId("rotate-dialog");
    const label = button.getAttribute("data-key-label");
    warnIfSessionKey(dialog, button);
    dialog.querySelector(".key-label").textContent = label;
    if (!(await confirmWith(dialog))) return;
    const id = encodeURIComponent(button.getAttribute("data-key-id"));
    await busy(button, async () => {
      const grace = Number(byId("rotate-grace").value);
      const key = await api("POST", `/keys/${id}/rotate`, { grace_seconds: grace });
      showSecret("new-key", "new-key-secret", key.key);
      const signedIn = await refreshTables({ keepPage: true });
      notice(
        signedIn
          ? `Key ${label} rotated: the new key is shown below, once.`
          : `Key ${label} rotated: the new key is shown below, once. You signed in with the old key, so this session has ended: copy the new key, then sign in again.`,
      );
    });
  }

  async function revokeKey(button) {
    const dialog = byId("revoke-dialog");
    const label = button.getAttribute("data-key-label");
    warnIfSessionKey(dialog, button);
    const last = button.getAttribute("data-last-active") === "true";
    dialog.querySelector(".key-label").textContent = label;
    byId("last-key-warning").hidden = !last;
    if (!(await confirmWith(dialog))) return;
    const id = encodeURIComponent(button.getAttribute("data-key-id"));
    await busy(button, async () => {
      // The warning was shown and confirmed: only then is the last active key revoked.
      await api("DELETE", `/keys/${id}${last ? "?force=true" : ""}`);
      await refreshTables();
      notice(`Key ${label} is revoked.`);
    });
  }

  // A datetime-local field's value (the browser's local time) as the instant the API takes. The
  // field takes years up to 275760, which no ISO 8601 instant of four-digit years can name.
  function instant(value) {
    const at = new Date(value);
    if (Number.isNaN(at.getTime()) || at.getFullYear() > 9999)
      throw new Error("Enter an expiry date before the year 10000.");
    return at.toISOString();
  }

  // An instant (ISO 8601) as a datetime-local field's value: the browser's local time, to the minute.
  function localInputValue(iso) {
    if (!iso) return "";
    const at = new Date(iso);
    return new Date(at.getTime() - at.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
  }

  const toolList = (text) =>
    text
      .split(",")
      .map((t) => t.trim())
      .filter(Boolean);

  // The key's limits as the dialog's fields hold them, in the API's terms (null: no such limit).
  function limitsOf(fields) {
    const tools = toolList(fields.allowed_tools.value);
    return {
      expires_at: fields.expires_at.value || null,
      allowed_tools: tools.length > 0 ? tools : null,
      budget: fields.budget_credits.value
        ? { credits: Number(fields.budget_credits.value), period: fields.budget_period.value }
        : null,
    };
  }

  // The "Change limits" dialog: filled with the key's limits; only what changed is sent, so an
  // untouched expiry already past (an expired key) is not refused as "in the past".
  let editing = null;
  function editLimits(button) {
    const dialog = byId("limits-dialog");
    const form = byId("limits-form");
    const fields = form.elements;
    warnIfSessionKey(dialog, button);
    fields.expires_at.value = localInputValue(button.getAttribute("data-expires-at"));
    fields.allowed_tools.value = button.getAttribute("data-allowed-tools");
    fields.budget_credits.value = button.getAttribute("data-budget-credits");
    fields.budget_period.value = button.getAttribute("data-budget-period") || "day";
    dialog.querySelector(".key-label").textContent = button.getAttribute("data-key-label");
    byId("limits-error").hidden = true;
    editing = { button, limits: limitsOf(fields) };
    dialog.showModal();
  }

  async function saveLimits(submitter) {
    const form = byId("limits-form");
    const error = byId("limits-error");
    const after = limitsOf(form.elements);
    const body = {};
    for (const field of Object.keys(after))
      if (JSON.stringify(after[field]) !== JSON.stringify(editing.limits[field]))
        body[field] = after[field];
    const label = editing.button.getAttribute("data-key-label");
    const id = encodeURIComponent(editing.button.getAttribute("data-key-id"));
    if (isBusy(submitter)) return;
    markBusy(submitter, true);
    error.hidden = true;
    try {
      if (body.expires_at) body.expires_at = instant(body.expires_at);
      if (Object.keys(body).length > 0) await api("PATCH", `/keys/${id}`, body);
      byId("limits-dialog").close();
      await refreshTables();
      notice(
        Object.keys(body).length > 0
          ? `The limits of key ${label} are saved.`
          : `Nothing changed on key ${label}.`,
      );
    } catch (err) {
      // The dialog stays open with the API's message in it: the page behind it is inert.
      error.textContent = err.message;
      error.hidden = false;
    } finally {
      markBusy(submitter, false);
    }
  }

  function clearLimits() {
    const fields = byId("limits-form").elements;
    fields.expires_at.value = "";
    fields.allowed_tools.value = "";
    fields.budget_credits.value = "";
    fields.expires_at.focus();
  }

  async function testWebhook(button) {
    await busy(button, async () => {
      await api("POST", "/webhooks/test", { webhook_id: button.getAttribute("data-webhook-id") });
      notice("Test event sent. Its delivery shows in the webhook's delivery log.");
    });
  }

  async function deleteWebhook(button) {
    const dialog = byId("delete-dialog");
    dialog.querySelector(".target").textContent = button.getAttribute("data-webhook-url");
    if (!(await confirmWith(dialog))) return;
    await busy(button, async () => {
      await api(
        "DELETE",
        `/webhooks/${encodeURIComponent(button.getAttribute("data-webhook-id"))}`,
      );
      await refreshTables();
      notice("Webhook deleted.");
    });
  }

  async function deleteSso(button) {
    if (!(await confirmWith(byId("delete-sso-dialog")))) return;
    await busy(button, async () => {
      await api("DELETE", "/account/sso");
      await refreshTables();
      notice("Single sign-on is off.");
    });
  }

  async function removeSpendAlert(button) {
    await busy(button, async () => {
      await api("DELETE", "/account/spend-alert");
      await refreshTables();
      notice("Spend alert removed.");
    });
  }

  const ACTIONS = {
    "remove-spend-alert": removeSpendAlert,
    "edit-limits": editLimits,
    "clear-limits": clearLimits,
    "close-dialog": (button) => button.closest("dialog")?.close(),
    "rotate-key": rotateKey,
    "revoke-key": revokeKey,
    "test-webhook": testWebhook,
    "delete-webhook": deleteWebhook,
    "delete-sso": deleteSso,
  };

  document.addEventListener("click", (event) => {
    const button =
      event.target instanceof Element
        ? event.target.closest("button[data-copy], button[data-action]")
        : null;
    if (!button || isBusy(button)) return;
    if (button.hasAttribute("data-copy")) copy(button);
    else ACTIONS[button.getAttribute("data-action")]?.(button);
  });

  // The new key's name and limits, as the API takes them: empty fields are left out.
  function keyRequest(fields) {
    const body = {};
    const name = fields.name.value.trim();
    if (name) body.name = name;
    // datetime-local is the browser's local time; the API takes an instant.
    if (fields.expires_at.value) body.expires_at = instant(fields.expires_at.value);
    const tools = toolList(fields.allowed_tools.value);
    if (tools.length > 0) body.allowed_tools = tools;
    if (fields.budget_credits.value)
      body.budget = {
        credits: Number(fields.budget_credits.value),
        period: fields.budget_period.value,
      };
    return body;
  }

  const createForm = byId("create-key");
  createForm?.addEventListener("submit", (event) => {
    event.preventDefault();
    busy(createForm.querySelector('button[type="submit"]'), async () => {
      const key = await api("POST", "/keys", keyRequest(createForm.elements));
      showSecret("new-key", "new-key-secret", key.key);
      createForm.reset();
      await refreshTables();
      notice("Key created: copy it now, it is shown only once.");
    });
  });

  const limitsForm = byId("limits-form");
  limitsForm?.addEventListener("submit", (event) => {
    event.preventDefault();
    saveLimits(event.submitter);
  });

  // The account's spend alert (Overview): set to the field's credits, or removed.
  const spendAlertForm = byId("spend-alert");
  spendAlertForm?.addEventListener("submit", (event) => {
    event.preventDefault();
    const credits = Number(spendAlertForm.elements.credits.value);
    busy(event.submitter, async () => {
      await api("PUT", "/account/spend-alert", { credits });
      await refreshTables();
      notice(`Spend alert set: you are told when this month's spend reaches ${credits} credits.`);
    });
  });

  const registerForm = byId("register-webhook");
  registerForm?.addEventListener("submit", (event) => {
    event.preventDefault();
    const checked = registerForm.querySelectorAll('input[name="events"]:checked');
    const events = Array.from(checked, (box) => box.value);
    const url = registerForm.elements.url.value.trim();
    // Said here in words; the API's own refusal of an empty list stays as it is.
    if (events.length === 0) {
      notice("Choose at least one event.", true);
      registerForm.querySelector('input[name="events"]')?.focus();
      return;
    }
    busy(registerForm.querySelector('button[type="submit"]'), async () => {
      const hook = await api("POST", "/webhooks/register", { url, events });
      showSecret("new-secret", "new-secret-value", hook.secret);
      registerForm.elements.url.value = "";
      await refreshTables();
      notice("Webhook registered: copy its signing secret now, it is shown only once.");
    });
  });

  // Single sign-on settings: the secret is sent only when typed (empty keeps the stored one).
  const ssoForm = byId("sso-settings");
  ssoForm?.addEventListener("submit", (event) => {
    event.preventDefault();
    const fields = ssoForm.elements;
    const settings = {
      issuer: fields.issuer.value.trim(),
      client_id: fields.client_id.value.trim(),
      email_domains: fields.email_domains.value.split(/[\s,]+/).filter(Boolean),
    };
    if (fields.client_secret.value) settings.client_secret = fields.client_secret.value;
    busy(ssoForm.querySelector('button[type="submit"]'), async () => {
      await api("PUT", "/account/sso", settings);
      fields.client_secret.value = "";
      fields.client_secret.required = false;
      await refreshTables();
      notice("Single sign-on is saved: people at these domains can sign in with SSO.");
    });
  });

  // The live feed: ledger entries as they are written, by any gateway process.
  function feedItem(entry) {
    const item = document.createElement("li");
    item.setAttribute("data-entry-id", entry.id);
    const time = document.createElement("time");
    time.setAttribute("datetime", entry.at);
    time.textContent = `${entry.at.replace("T", " ").slice(0, 19)} UTC`;
    const amount = document.createElement("span");
    amount.className = `amount ${entry.amount < 0 ? "debit" : "credit"}`;
    amount.textContent = entry.amount > 0 ? `+${entry.amount}` : String(entry.amount);
    const what = document.createElement("span");
    what.textContent = entry.tool || entry.kind;
    const detail = document.createElement("span");
    detail.className = "muted";
    detail.textContent = `${entry.reason} · balance ${entry.balance}`;
    // Spaces between the parts, as in the server's markup: read out, they are words apart.
    item.append(time, " ", amount, " ", what, " ", detail);
    return item;
  }

  // This period's usage and this month's spend: a debit is a charged call, a refund gives one back.
  function countUsage(entry) {
    if (entry.kind !== "debit" && entry.kind !== "refund") return;
    const calls = document.querySelector('[data-count="calls"]');
    const credits = document.querySelector('[data-count="credits"]');
    if (calls && credits) {
      calls.textContent = String(Number(calls.textContent) + (entry.kind === "debit" ? 1 : -1));
      credits.textContent = String(Number(credits.textContent) - entry.amount);
    }
    // The month began at data-since (an ISO time, compared as text as the entry's own); a page
    // left open into the next month shows the old month's figure until it is read again.
    const spend = document.querySelector('[data-testid="month-spend"]');
    if (spend && entry.at >= spend.getAttribute("data-since"))
      spend.textContent = String(Math.max(0, Number(spend.textContent) - entry.amount));
  }

  // The feed list is not a live region (a burst of calls would be read out entry by entry): a
  // polite status region says what came, at most once per SUMMARY_MS, as one sentence.
  const SUMMARY_MS = 3000;
  function summarizer(region) {
    let count = 0;
    let balance = null;
    let timer = null;
    const say = () => {
      timer = null;
      if (!region || count === 0) return;
      region.textContent = `${count} new ${count === 1 ? "entry" : "entries"}; balance ${balance} credits.`;
      count = 0;
    };
    return (entry) => {
      count += 1;
      balance = entry.balance;
      if (timer === null) timer = setTimeout(say, SUMMARY_MS);
    };
  }

  function followFeed(feed) {
    const summarize = summarizer(byId("live-summary"));
    const balance = document.querySelector('[data-testid="credits-balance"]');
    const state = byId("live-state");
    const after = encodeURIComponent(feed.getAttribute("data-after") || "0-0");
    const source = new EventSource(`${base}/dashboard/live?after=${after}`);
    source.addEventListener("ledger", (message) => {
      const entry = JSON.parse(message.data);
      if (feed.querySelector(`[data-entry-id="${CSS.escape(entry.id)}"]`)) return;
      feed.prepend(feedItem(entry));
      while (feed.children.length > 50) feed.lastElementChild.remove();
      if (balance) balance.textContent = String(entry.balance);
      countUsage(entry);
      summarize(entry);
    });
    // More happened while the page was away than the stream catches up on: the page is read again.
    source.addEventListener("reload", () => {
      source.close();
      window.location.reload();
    });
    source.addEventListener("open", () => {
      if (state)
        state.textContent =
          "Live: calls and credit changes appear here as they happen, from every gateway process.";
    });
    source.addEventListener("error", () => {
      if (state) state.textContent = "Reconnecting to the live feed…";
    });
  }

  const feed = document.querySelector('[data-testid="usage-feed"]');
  if (feed && window.EventSource) followFeed(feed);
})();
