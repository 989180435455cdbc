// The dashboard's one script, served from the gateway itself (/dashboard/assets/dashboard.js;
// the pages' CSP allows same-origin scripts only, and no inline script). It calls the account API
// under /dashboard/api/v1 with the session cookie and the page's CSRF token, shows what changed,
// and follows the live feed over Server-Sent Events. No framework, no build step: it runs as is.
"use strict";
(function () {
  var csrfMeta = document.querySelector('meta[name="csrf-token"]');
  var csrf = csrfMeta ? csrfMeta.getAttribute("content") : "";

  function notice(text, isError) {
    var box = document.getElementById("notice");
    if (!box) return;
    box.className = isError ? "notice error" : "notice";
    box.setAttribute("role", isError ? "alert" : "status");
    box.textContent = text;
  }

  // One request to the account API; resolves with the parsed answer, rejects with its message.
  function api(method, path, body) {
    var init = { method: method, headers: { "x-csrf-token": csrf }, credentials: "same-origin" };
    if (body !== undefined) {
      init.headers["content-type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    return fetch("/dashboard/api/v1" + path, init).then(function (res) {
      return res.text().then(function (text) {
        var data = null;
        try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
        if (res.status === 401) { window.location.assign("/dashboard/sign-in?notice=expired"); }
        if (!res.ok) throw new Error((data && data.error && data.error.message) || "The request failed (" + res.status + ").");
        return data;
      });
    });
  }

  // Re-reads this page and swaps in the tables marked data-refresh: the server renders them once.
  function refreshTables() {
    return fetch(window.location.pathname, { credentials: "same-origin" })
      .then(function (res) { return res.text(); })
      .then(function (html) {
        var fresh = new DOMParser().parseFromString(html, "text/html");
        document.querySelectorAll("[data-refresh]").forEach(function (old) {
          var replacement = old.id ? fresh.getElementById(old.id) : null;
          if (replacement) old.replaceWith(document.importNode(replacement, true));
        });
      });
  }

  function showSecret(boxId, valueId, secret) {
    var box = document.getElementById(boxId);
    document.getElementById(valueId).textContent = secret;
    box.hidden = false;
    var copy = box.querySelector("button[data-copy]");
    if (copy) copy.focus();
  }

  // A <dialog> as a confirmation: resolves true when its "confirm" button closed it.
  function confirmWith(dialog) {
    return new Promise(function (resolve) {
      dialog.returnValue = "";
      dialog.addEventListener("close", function onClose() {
        dialog.removeEventListener("close", onClose);
        resolve(dialog.returnValue === "confirm");
      });
      dialog.showModal();
    });
  }

  function busy(button, promise) {
    if (button) button.disabled = true;
    return promise.then(
      function (v) { if (button) button.disabled = false; return v; },
      function (err) { if (button) button.disabled = false; notice(err.message, true); }
    );
  }

  document.addEventListener("click", function (event) {
    var target = event.target instanceof Element ? event.target.closest("button[data-copy], button[data-action]") : null;
    if (!target) return;
    var copyFrom = target.getAttribute("data-copy");
    if (copyFrom) {
      var text = document.getElementById(copyFrom).textContent;
      var done = function () { target.textContent = "Copied"; notice("Copied to the clipboard."); };
      if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(text).then(done, function () { notice("Select the text and copy it yourself.", true); });
      else {
        var range = document.createRange();
        range.selectNodeContents(document.getElementById(copyFrom));
        var selection = window.getSelection();
        selection.removeAllRanges();
        selection.addRange(range);
        notice(document.execCommand && document.execCommand("copy") ? "Copied to the clipboard." : "Selected: copy it with your keyboard.");
      }
      return;
    }
    var action = target.getAttribute("data-action");
    var keyId = target.getAttribute("data-key-id");
    var label = target.getAttribute("data-key-label");
    if (action === "rotate-key") {
      var rotate = document.getElementById("rotate-dialog");
      rotate.querySelector(".key-label").textContent = label;
      confirmWith(rotate).then(function (ok) {
        if (!ok) return;
        var grace = Number(document.getElementById("rotate-grace").value);
        return busy(target, api("POST", "/keys/" + encodeURIComponent(keyId) + "/rotate", { grace_seconds: grace }).then(function (key) {
          showSecret("new-key", "new-key-secret", key.key);
          notice("Key " + label + " rotated: the new key is shown below, once.");
          return refreshTables();
        }));
      });
    }
    if (action === "revoke-key") {
      var revoke = document.getElementById("revoke-dialog");
      var last = target.getAttribute("data-last-active") === "true";
      revoke.querySelector(".key-label").textContent = label;
      document.getElementById("last-key-warning").hidden = !last;
      confirmWith(revoke).then(function (ok) {
        if (!ok) return;
        return busy(target, api("DELETE", "/keys/" + encodeURIComponent(keyId) + (last ? "?force=true" : "")).then(function () {
          notice("Key " + label + " is revoked.");
          return refreshTables();
        }));
      });
    }
    var webhookId = target.getAttribute("data-webhook-id");
    if (action === "test-webhook") {
      busy(target, api("POST", "/webhooks/test", { webhook_id: webhookId }).then(function () {
        notice("Test event sent. Its delivery shows in the webhook's delivery log.");
      }));
    }
    if (action === "delete-webhook") {
      var del = document.getElementById("delete-dialog");
      del.querySelector(".target").textContent = target.getAttribute("data-webhook-url");
      confirmWith(del).then(function (ok) {
        if (!ok) return;
        return busy(target, api("DELETE", "/webhooks/" + encodeURIComponent(webhookId)).then(function () {
          notice("Webhook deleted.");
          return refreshTables();
        }));
      });
    }
  });

  var createForm = document.getElementById("create-key");
  if (createForm) {
    createForm.addEventListener("submit", function (event) {
      event.preventDefault();
      var name = createForm.elements.name.value.trim();
      busy(createForm.querySelector("button"), api("POST", "/keys", name ? { name: name } : {}).then(function (key) {
        showSecret("new-key", "new-key-secret", key.key);
        notice("Key created: copy it now, it is shown only once.");
        createForm.reset();
        return refreshTables();
      }));
    });
  }

  var registerForm = document.getElementById("register-webhook");
  if (registerForm) {
    registerForm.addEventListener("submit", function (event) {
      event.preventDefault();
      var events = Array.prototype.map.call(registerForm.querySelectorAll('input[name="events"]:checked'), function (box) { return box.value; });
      busy(registerForm.querySelector('button[type="submit"]'), api("POST", "/webhooks/register", { url: registerForm.elements.url.value.trim(), events: events }).then(function (hook) {
        showSecret("new-secret", "new-secret-value", hook.secret);
        notice("Webhook registered: copy its signing secret now, it is shown only once.");
        registerForm.elements.url.value = "";
        return refreshTables();
      }));
    });
  }

  // The live feed: ledger entries as they are written, by any gateway process.
  var feed = document.querySelector('[data-testid="usage-feed"]');
  if (feed && window.EventSource) {
    var balance = document.querySelector('[data-testid="credits-balance"]');
    var state = document.getElementById("live-state");
    var source = new EventSource("/dashboard/live?after=" + encodeURIComponent(feed.getAttribute("data-after") || "0-0"));
    source.addEventListener("ledger", function (message) {
      var entry = JSON.parse(message.data);
      if (feed.querySelector('[data-entry-id="' + entry.id + '"]')) return;
      var item = document.createElement("li");
      item.setAttribute("data-entry-id", entry.id);
      var time = document.createElement("time");
      time.setAttribute("datetime", entry.at);
      time.textContent = entry.at.replace("T", " ").slice(0, 19) + " UTC";
      var amount = document.createElement("span");
      amount.className = "amount " + (entry.amount < 0 ? "debit" : "credit");
      amount.textContent = entry.amount > 0 ? "+" + entry.amount : String(entry.amount);
      var what = document.createElement("span");
      what.textContent = entry.tool || entry.kind;
      var detail = document.createElement("span");
      detail.className = "muted";
      detail.textContent = entry.reason + " · balance " + entry.balance;
      item.append(time, amount, what, detail);
      feed.prepend(item);
      while (feed.children.length > 50) feed.lastElementChild.remove();
      if (balance) balance.textContent = String(entry.balance);
      // This period's usage: a debit is a charged call, a refund gives one back.
      var calls = document.querySelector('[data-count="calls"]');
      var credits = document.querySelector('[data-count="credits"]');
      if (calls && credits && (entry.kind === "debit" || entry.kind === "refund")) {
        calls.textContent = String(Number(calls.textContent) + (entry.kind === "debit" ? 1 : -1));
        credits.textContent = String(Number(credits.textContent) - entry.amount);
      }
    });
    source.addEventListener("open", function () { if (state) state.textContent = "Live: calls and credit changes appear here as they happen, from every gateway process."; });
    source.addEventListener("error", function () { if (state) state.textContent = "Reconnecting to the live feed…"; });
  }
})();
