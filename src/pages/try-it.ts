import { esc } from "./respond.js";

/**
 * The script behind the "Try it" forms on /docs, served from the gateway itself
 * (`/docs/try-it.js`, allowed by the pages' `script-src 'self'`). It sends the tool's input with
 * the key typed on the page to this same origin and shows the answer. The key stays in the page:
 * it is never stored.
 */
export const TRY_IT_SCRIPT = `"use strict";
document.addEventListener("DOMContentLoaded", function () {
  var keyField = document.getElementById("try-key");
  document.querySelectorAll("form.try").forEach(function (form) {
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var out = form.querySelector("output");
      var body = form.querySelector("textarea").value;
      try { JSON.parse(body); } catch (e) { out.textContent = "The input is not valid JSON: " + e.message; return; }
      var headers = { "content-type": "application/json" };
      if (keyField && keyField.value.trim()) headers["x-api-key"] = keyField.value.trim();
      out.textContent = "Sending…";
      fetch(form.getAttribute("data-endpoint"), { method: "POST", headers: headers, body: body })
        .then(function (res) {
          return res.text().then(function (text) {
            var shown = text;
            try { shown = JSON.stringify(JSON.parse(text), null, 2); } catch (e) {}
            out.textContent = res.status + " " + res.statusText + "\\n" + shown;
          });
        })
        .catch(function (err) { out.textContent = "The request failed: " + err.message; });
    });
  });
});
`;

/** The form under a tool's example: its worked example, ready to send (to `basePath`'s tool door). */
export function tryItForm(basePath: string, toolName: string, example: unknown): string {
  return `<details class="try-it"><summary>Try it</summary><form class="try" data-endpoint="${esc(basePath)}/v1/tools/${esc(toolName)}">
<label>Input (JSON)<br><textarea name="input" rows="6" style="width:100%;font:13px ui-monospace,monospace">${esc(JSON.stringify(example ?? {}, null, 2))}</textarea></label>
<p><button type="submit">Send</button> <span class="muted">with the key from the top of the page (charged like any call), or none: the 402 offer.</span></p>
<pre tabindex="0"><output aria-live="polite"></output></pre></form></details>`;
}

/** The key field the forms share, at the top of the page. */
export const TRY_IT_KEY_FIELD = `<p><label>Your API key, for the "Try it" forms (kept in this page only): <input id="try-key" type="password" autocomplete="off" size="48" placeholder="tg_live_…"></label></p>`;
