import { PUBLIC_DOCUMENT_HEADERS } from "../http/html.js";
import { defineRoute, type DocumentConfig } from "../http/route.js";

/** The OpenAPI document, built once per configuration by whoever holds the route registry. */
export const openApiDocument = (documentFor: (config: DocumentConfig) => Record<string, unknown>) =>
  defineRoute({
    method: "get",
    path: "/openapi.json",
    summary: "This document (OpenAPI 3.1).",
    auth: "public",
    async handler({ services }) {
      return {
        headers: PUBLIC_DOCUMENT_HEADERS,
        body: documentFor(services.config),
      };
    },
  });
