/**
 * A readable API reference rendered from the OpenAPI document on the server: no third-party
 * scripts, works offline, one page.
 */
type Json = Record<string, any>;

const esc = (s: unknown) => String(s ?? "").replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
const pretty = (v: unknown) => `<pre>${esc(JSON.stringify(v, null, 2))}</pre>`;

export function renderDocsPage(doc: Json): string {
  const sections: string[] = [];
  const toc: string[] = [];
  for (const [path, item] of Object.entries(doc.paths as Record<string, Json>)) {
    for (const [method, op] of Object.entries(item)) {
      const id = `${method}-${path}`.replace(/[^a-zA-Z0-9]+/g, "-");
      toc.push(`<li><a href="#${id}"><code>${method.toUpperCase()} ${esc(path)}</code></a> ${esc(op.summary)}</li>`);
      const body = op.requestBody?.content?.["application/json"]?.schema;
      const example = body?.examples?.[0];
      const ok = Object.entries(op.responses as Json).find(([status]) => status.startsWith("2"));
      const errors = Object.entries(op.responses as Json).filter(([status]) => !status.startsWith("2"));
      sections.push(`<section id="${id}">
<h3><code>${method.toUpperCase()} ${esc(path)}</code></h3>
<p>${esc(op.summary)}</p>${op.description ? `<p>${esc(op.description)}</p>` : ""}
<p>Authentication: ${op.security?.length ? esc(Object.keys(op.security[0]).join(", ")) + " (<code>x-api-key</code> header)" : "none"}</p>
${op.parameters?.length ? `<h4>Parameters</h4><ul>${op.parameters.map((p: Json) => `<li><code>${esc(p.name)}</code> (${esc(p.in)}${p.required ? ", required" : ""})${p.description ? ` — ${esc(p.description)}` : ""}</li>`).join("")}</ul>` : ""}
${body ? `<h4>Request body</h4>${pretty(body)}` : ""}
${example ? `<h4>Example</h4><pre>curl -X ${method.toUpperCase()} ${esc(doc.servers?.[0]?.url ?? "")}${esc(path)} -H 'x-api-key: $KEY' -H 'content-type: application/json' -d '${esc(JSON.stringify(example))}'</pre>` : ""}
${ok ? `<h4>Response ${esc(ok[0])}</h4>${pretty(ok[1].content?.["application/json"]?.schema ?? {})}` : ""}
${errors.length ? `<h4>Errors</h4><ul>${errors.map(([s, r]) => `<li><code>${esc(s)}</code> ${esc((r as Json).description)}</li>`).join("")}</ul>` : ""}
</section>`);
    }
  }
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${esc(doc.info.title)}</title>
<style>body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}pre{background:#f5f5f5;padding:.75rem;overflow:auto;font-size:13px}section{border-top:1px solid #ddd;padding-top:1rem;margin-top:1.5rem}code{font-size:14px}</style>
</head><body><h1>${esc(doc.info.title)}</h1><p>${esc(doc.info.description)}</p>
<p>Machine-readable: <a href="/openapi.json">/openapi.json</a> (OpenAPI ${esc(doc.openapi)}).</p>
<h2>Endpoints</h2><ul>${toc.join("")}</ul>${sections.join("\n")}</body></html>`;
}
