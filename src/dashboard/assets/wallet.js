// The dashboard's wallet script (/dashboard/assets/wallet.js), for the two pages that use a
// browser wallet through EIP-1193 (`window.ethereum`): signing in with it (Sign-In with
// Ethereum, `personal_sign` of a message the gateway wrote) and paying for a credit pack or a
// plan with x402 (`eth_signTypedData_v4` of an EIP-3009 TransferWithAuthorization, sent as the v2
// PAYMENT-SIGNATURE header to the API's own purchase endpoint). No library and no build step: the
// typed data is written out here, as x402's "exact" EVM scheme defines it.

(() => {
  const byId = (id) => document.getElementById(id);
  const csrf = document.querySelector('meta[name="csrf-token"]')?.getAttribute("content") ?? "";
  // PUBLIC_BASE_URL's path ("" at the root), which every address asked for starts with (see dashboard.js).
  const base = document.querySelector('meta[name="base-path"]')?.getAttribute("content") ?? "";

  function say(box, text, isError) {
    if (!box) return;
    box.className = isError ? "notice error" : "muted";
    box.setAttribute("role", isError ? "alert" : "status");
    box.textContent = text;
  }

  // What to do without a wallet depends on what the wallet was for.
  const NO_WALLET = {
    "sign-in": "Install one, or sign in another way.",
    buy: "Install one to pay from this page, or buy through the API with an x402 client (see the API reference).",
  };

  function wallet(purpose) {
    if (!window.ethereum?.request)
      throw new Error(
        `No browser wallet was found (an EIP-1193 wallet such as a wallet extension). ${NO_WALLET[purpose]}`,
      );
    return window.ethereum;
  }

  // The wallet's first account (asking the user to connect) and its current chain id.
  async function connect(purpose) {
    const provider = wallet(purpose);
    const accounts = await provider.request({ method: "eth_requestAccounts" });
    if (!accounts?.length) throw new Error("The wallet shared no account.");
    const chainId = Number.parseInt(await provider.request({ method: "eth_chainId" }), 16);
    return { provider, address: accounts[0], chainId };
  }

  // Moves the wallet to the first of `chainIds` unless it is on one of them already.
  async function onChain(session, chainIds) {
    if (chainIds.includes(session.chainId)) return session;
    const target = chainIds[0];
    try {
      await session.provider.request({
        method: "wallet_switchEthereumChain",
        params: [{ chainId: `0x${target.toString(16)}` }],
      });
    } catch {
      throw new Error(
        `Switch your wallet to one of this gateway's networks (chain id ${chainIds.join(" or ")}) and try again.`,
      );
    }
    return { ...session, chainId: target };
  }

  async function postJson(url, body, headers = {}) {
    const res = await fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    let data = null;
    try {
      data = text ? JSON.parse(text) : null;
    } catch {
      data = null;
    }
    return { res, data };
  }

  // The API's own message (and its code, for the caller to act on); a status only when the answer had none.
  const failure = (data, res) =>
    Object.assign(new Error(data?.error?.message ?? `The request failed (${res.status}).`), {
      code: data?.error?.code ?? null,
    });

  const utf8Hex = (text) =>
    `0x${Array.from(new TextEncoder().encode(text), (b) => b.toString(16).padStart(2, "0")).join("")}`;

  // Standard base64 of the UTF-8 JSON, as x402 headers are.
  function base64Json(value) {
    const bytes = new TextEncoder().encode(JSON.stringify(value));
    let binary = "";
    for (const b of bytes) binary += String.fromCharCode(b);
    return btoa(binary);
  }

  function fromBase64Json(text) {
    const binary = atob(text);
    return JSON.parse(new TextDecoder().decode(Uint8Array.from(binary, (c) => c.charCodeAt(0))));
  }

  // Sign-in with a wallet: challenge → personal_sign → session.
  async function signIn(button) {
    const section = byId("wallet-sign-in");
    const status = byId("wallet-status");
    const chainIds = section.getAttribute("data-chain-ids").split(",").map(Number);
    // Marked aria-disabled, not disabled, like the buttons below: the keyboard's focus stays on it.
    if (button.getAttribute("aria-disabled") === "true") return;
    button.setAttribute("aria-disabled", "true");
    try {
      const session = await onChain(await connect("sign-in"), chainIds);
      say(status, "Sign the message in your wallet…");
      const challenge = await postJson(`${base}/dashboard/sign-in/wallet/challenge`, {
        address: session.address,
        chain_id: session.chainId,
      });
      if (!challenge.res.ok) throw failure(challenge.data, challenge.res);
      const signature = await session.provider.request({
        method: "personal_sign",
        params: [utf8Hex(challenge.data.message), session.address],
      });
      const signedIn = await postJson(`${base}/dashboard/sign-in/wallet`, {
        message: challenge.data.message,
        signature,
      });
      if (!signedIn.res.ok) throw failure(signedIn.data, signedIn.res);
      say(status, "Signed in.");
      window.location.assign(signedIn.data.redirect);
    } catch (err) {
      say(status, err.message, true);
    } finally {
      button.removeAttribute("aria-disabled");
    }
  }

  const TRANSFER_WITH_AUTHORIZATION = [
    { name: "from", type: "address" },
    { name: "to", type: "address" },
    { name: "value", type: "uint256" },
    { name: "validAfter", type: "uint256" },
    { name: "validBefore", type: "uint256" },
    { name: "nonce", type: "bytes32" },
  ];

  function randomNonce() {
    const bytes = crypto.getRandomValues(new Uint8Array(32));
    return `0x${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`;
  }

  // The x402 v2 payment for one offered requirement, signed by the wallet (EIP-3009, "exact" scheme).
  async function pay(session, offer, requirement) {
    const chainId = Number(requirement.network.split(":")[1]);
    const authorization = {
      from: session.address,
      to: requirement.payTo,
      value: requirement.amount,
      validAfter: "0",
      validBefore: String(Math.floor(Date.now() / 1000) + requirement.maxTimeoutSeconds),
      nonce: randomNonce(),
    };
    const typedData = {
      types: {
        EIP712Domain: [
          { name: "name", type: "string" },
          { name: "version", type: "string" },
          { name: "chainId", type: "uint256" },
          { name: "verifyingContract", type: "address" },
        ],
        TransferWithAuthorization: TRANSFER_WITH_AUTHORIZATION,
      },
      primaryType: "TransferWithAuthorization",
      domain: {
        name: requirement.extra.name,
        version: requirement.extra.version,
        chainId,
        verifyingContract: requirement.asset,
      },
      message: authorization,
    };
    const signature = await session.provider.request({
      method: "eth_signTypedData_v4",
      params: [session.address, JSON.stringify(typedData)],
    });
    return base64Json({
      x402Version: 2,
      resource: offer.resource,
      accepted: requirement,
      payload: { signature, authorization },
    });
  }

  // USDC atomic units (6 decimals) as dollars, in integers: "2000000" → "2.00".
  function usd(atomic) {
    const value = BigInt(atomic);
    const cents = (value % 1000000n).toString().padStart(6, "0").replace(/0+$/, "").padEnd(2, "0");
    return `${value / 1000000n}.${cents}`;
  }

  function showReceipt(what, requirement, result) {
    const receipt = byId("receipt");
    const field = (name) => receipt.querySelector(`[data-field="${name}"]`);
    const networks = JSON.parse(receipt.getAttribute("data-networks") || "{}");
    field("what").textContent = what;
    field("paid").textContent = `$${usd(requirement.amount)} USDC`;
    field("credits").textContent = result.credits_added.toLocaleString("en-US");
    field("network").textContent = networks[result.network]
      ? `${networks[result.network]} (${result.network})`
      : result.network;
    field("transaction").textContent = result.transaction;
    receipt.hidden = false;
    const balance = document.querySelector('[data-testid="credits-balance"]');
    if (balance) balance.textContent = String(result.account.credits);
    const tier = document.querySelector('[data-testid="tier"]');
    if (tier) tier.textContent = result.account.tier.replace(/^./, (c) => c.toUpperCase());
  }

  const PENDING_RETRY_LIMIT_MS = 3 * 60_000;
  const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

  // Sends the signed payment. While its settlement's outcome is unknown (503 payment_pending, or
  // no answer at all) the SAME payment is sent again — never a new one, which could pay twice.
  async function sendPayment(status, path, body, payment) {
    const headers = { "x-csrf-token": csrf, "payment-signature": payment };
    const giveUpAt = Date.now() + PENDING_RETRY_LIMIT_MS;
    for (;;) {
      let answer = null;
      try {
        answer = await postJson(path, body, headers);
      } catch {
        answer = null; // the connection failed: the payment may have been taken
      }
      const pending = !answer || answer.data?.error?.code === "payment_pending";
      if (!pending) return answer;
      if (Date.now() > giveUpAt)
        throw new Error(
          "The payment's settlement is still unconfirmed. Do not pay again: reload this page in a few minutes; the credits arrive once the transfer settles.",
        );
      say(
        status,
        "The transfer is still being confirmed on chain; waiting for it (do not pay again)…",
      );
      const retryAfter = Number(answer?.res.headers.get("retry-after")) || 2;
      await pause(Math.min(retryAfter, 10) * 1000);
    }
  }

  // The plans on offer change with the account (a plan bought here, or a tier changed since the
  // page was rendered): the server renders them again by the purchase's own rule, and the
  // section is swapped for its new version. Failing that, the page stays as it is; a reload shows it.
  async function refreshPlans() {
    try {
      const res = await fetch(window.location.pathname, { credentials: "same-origin" });
      if (!res.ok) return;
      const html = await res.text();
      const fresh = new DOMParser().parseFromString(html, "text/html").getElementById("plans");
      const shown = byId("plans");
      if (!fresh || !shown) return;
      const hadFocus = shown.contains(document.activeElement);
      shown.replaceWith(fresh);
      // Focus was on a button swapped out with the section: the section's heading takes it, so the
      // next Tab goes on from there rather than from the top of the page.
      const heading = hadFocus ? fresh.querySelector("h2") : null;
      if (heading) {
        heading.setAttribute("tabindex", "-1");
        heading.focus();
      }
    } catch {
      // Nothing to do: the purchase's own outcome is already on the page.
    }
  }

  // Buys a pack or plan: ask → 402 offer → the wallet signs → ask again with the payment → receipt.
  async function buy(button) {
    const status = byId("purchase-status");
    const kind = button.getAttribute("data-buy");
    const item = button.getAttribute("data-item");
    const what = button.getAttribute("data-what");
    const path = `${base}/dashboard/api/v1/${kind}/purchase`;
    const body = kind === "credits" ? { pack: item } : { plan: item };
    // Marked aria-disabled, not disabled: a disabled button drops the keyboard's focus to <body>.
    const buttons = document.querySelectorAll("button[data-buy]");
    if (button.getAttribute("aria-disabled") === "true") return;
    for (const b of buttons) b.setAttribute("aria-disabled", "true");
    try {
      const asked = await postJson(path, body, { "x-csrf-token": csrf });
      if (asked.res.status === 401)
        window.location.assign(`${base}/dashboard/sign-in?notice=expired`);
      const required = asked.res.headers.get("payment-required");
      if (asked.res.status !== 402 || !required) throw failure(asked.data, asked.res);
      const offer = fromBase64Json(required);
      const chainIds = offer.accepts.map((r) => Number(r.network.split(":")[1]));
      const session = await onChain(await connect("buy"), chainIds);
      const requirement = offer.accepts.find((r) => r.network === `eip155:${session.chainId}`);
      say(status, `Confirm the payment for ${what} in your wallet…`);
      const payment = await pay(session, offer, requirement);
      say(status, "Paying: the transfer is being settled on chain…");
      const paid = await sendPayment(status, path, body, payment);
      if (!paid.res.ok) throw failure(paid.data, paid.res);
      showReceipt(what, requirement, paid.data);
      say(status, `Paid: ${what} bought. The receipt is below.`);
      if (kind === "plans") await refreshPlans();
    } catch (err) {
      say(status, err.message, true);
      // Refused for what the account is now (409 plan_not_purchasable: it changed since this page
      // was rendered): the API's message stays shown, and the offer is brought up to date.
      if (err.code === "plan_not_purchasable") await refreshPlans();
    } finally {
      for (const b of buttons) b.removeAttribute("aria-disabled");
    }
  }

  document.addEventListener("click", (event) => {
    const button = event.target instanceof Element ? event.target.closest("button") : null;
    if (!button) return;
    if (button.getAttribute("data-action") === "wallet-sign-in") signIn(button);
    else if (button.hasAttribute("data-buy")) buy(button);
  });
})();
