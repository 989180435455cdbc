import type { Logger } from "pino";
import { requireFeature, TIERS, type TierName } from "../../accounts/tiers.js";
import type { Services } from "../../services.js";
import type { Store } from "../../store/types.js";
import { findTool } from "../catalogue/index.js";
import type { ToolDefinition } from "../definition.js";
import type { Forwarder } from "../forward.js";
import { UpstreamCaller, type UpstreamSettings, type UpstreamTarget } from "./forward.js";
import { refusingSchemas, SchemaCompiler, SchemaError } from "./json-schema.js";
import { describedTool, RESERVED_TOOL_NAMES, specOfRecord, type UpstreamToolSpec } from "./spec.js";

/**
 * Tools that live at an HTTP endpoint, beside the catalogue: the operator's (TOOLS_FILE, public,
 * fixed at start-up) and each Business account's own (in the store, seen by that account only).
 * Each becomes an ordinary ToolDefinition — its JSON Schema wrapped as zod — so the one
 * invocation service validates, charges, refunds and records it like any catalogue tool; only
 * the forwarder differs (the endpoint instead of a worker pool).
 */
export interface UpstreamTool extends ToolDefinition {
  upstream: UpstreamTarget;
}

export const isUpstreamTool = (tool: ToolDefinition): tool is UpstreamTool => "upstream" in tool;
/** An account's own tool: paid with that account's credits only, never offered for x402. */
export const isPrivateTool = (tool: ToolDefinition): boolean =>
  isUpstreamTool(tool) && tool.upstream.ownerId !== null;

export class UpstreamTools {
  readonly schemas = new SchemaCompiler();
  private readonly caller: UpstreamCaller;
  /** The operator's tools, in TOOLS_FILE order. */
  readonly public: readonly UpstreamTool[];
  private readonly byName: Map<string, UpstreamTool>;

  constructor(
    private readonly store: Store,
    settings: UpstreamSettings,
    operatorTools: readonly UpstreamToolSpec[],
    /** SECRET_KEY's keyring, which opens custom tools' signing secrets. */
    secretKeys: readonly string[],
    log: Logger,
  ) {
    this.caller = new UpstreamCaller(settings, secretKeys, log);
    this.public = operatorTools.map((spec) => this.define(spec, null));
    this.byName = new Map(this.public.map((tool) => [tool.name, tool]));
  }

  /** A public tool by name or alias: the catalogue's, then the operator's. */
  findPublic(name: string): ToolDefinition | undefined {
    return findTool(name) ?? this.byName.get(name);
  }

  /** A name an account may not give its own tool: a catalogue or operator tool's, or a reserved path. */
  isTaken(name: string): boolean {
    return RESERVED_TOOL_NAMES.has(name) || this.findPublic(name) !== undefined;
  }

  /**
   * The tool `name` as `accountId` sees it (public first), or null; one store read for a name that
   * is not public. An account's own tool runs only while its tier has custom endpoints: after a
   * move off Business its tools are kept (to be deleted, or used again after an upgrade) but
   * refused with 403 `feature_not_in_tier`.
   */
  async find(name: string, accountId: string | null): Promise<ToolDefinition | null> {
    const known = this.findPublic(name);
    if (known) return known;
    if (!accountId) return null;
    const found = await this.store.getCustomToolWithTier(accountId, name);
    if (!found) return null;
    if (found.tier) requireFeature(found.tier, "custom_endpoints");
    return this.define(specOfRecord(found.tool), accountId);
  }

  /**
   * The account's own tools, as its lists show them (REST, MCP tools/list and search_tools): none
   * while its tier has no custom endpoints, since each would be refused 403 `feature_not_in_tier`
   * (find); kept in the store all the same. `tier` when the caller has just read the account; else
   * it is read here, beside the tools.
   */
  async listPrivate(accountId: string, tier?: TierName): Promise<UpstreamTool[]> {
    const [records, ownerTier] = await Promise.all([
      this.store.listCustomTools(accountId),
      tier ?? this.store.getAccount(accountId).then((account) => account?.tier ?? null),
    ]);
    if (!ownerTier || !TIERS[ownerTier].features.includes("custom_endpoints")) return [];
    // A tool shadowed by a later public one of the same name is not callable: not listed either.
    return records
      .filter((r) => !this.isTaken(r.name))
      .map((r) => this.define(specOfRecord(r), accountId));
  }

  /** How a call reaches this tool: its endpoint for upstream tools, the door's own forwarder otherwise. */
  forwarderFor(tool: ToolDefinition, door: Forwarder): Forwarder {
    return isUpstreamTool(tool) ? this.caller.forwarder(tool.upstream) : door;
  }

  close(): void {
    this.caller.close();
  }

  private define(spec: UpstreamToolSpec, ownerId: string | null): UpstreamTool {
    const { input, output, validateOutput } = this.enforced(spec);
    return {
      ...describedTool(spec),
      input,
      output,
      upstream: {
        url: spec.url,
        headers: spec.headers,
        sealedSecret: spec.sealedSecret ?? null,
        validateOutput,
        ownerId,
      },
    };
  }

  /**
   * The published schemas, enforced: input through zod (Ajv inside), output by the caller. A tool
   * stored before a rule its schemas break (registration applies the same rules) keeps its place in
   * the account's lists, its calls refused (422) until it is registered again: the error thrown
   * here failed the account's every list and call of its tools (500).
   */
  private enforced(spec: UpstreamToolSpec) {
    try {
      return {
        input: this.schemas.zodOf(spec.inputSchema),
        output: this.schemas.zodOf(spec.outputSchema),
        validateOutput: this.schemas.compile(spec.outputSchema),
      };
    } catch (err) {
      if (!(err instanceof SchemaError)) throw err;
      return refusingSchemas(
        `This tool's schemas are no longer accepted (${err.message}); delete it and register it again with schemas that are.`,
      );
    }
  }
}

/** The public tools: the catalogue, then the operator's. */
export const publicTools = (
  services: Pick<Services, "upstream">,
  catalogue: readonly ToolDefinition[],
): readonly ToolDefinition[] =>
  services.upstream.public.length ? [...catalogue, ...services.upstream.public] : catalogue;
