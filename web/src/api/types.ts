// The API's shapes, generated from the server's OpenAPI document (`npm run gen:api` writes
// `schema.d.ts` from `openapi.json`, which a Rust test keeps equal to `GET /api/openapi.json`).
// Pages import these names; none is written by hand.

import type { components, paths } from "./schema";

type Schemas = components["schemas"];

export type ApiErrorBody = Schemas["Error"];
export type Integration = Schemas["Integration"];
export type AuthMethod = Schemas["AuthMethod"];
export type Placement = Schemas["Placement"];
export type Connection = Schemas["Connection"];
export type Tool = Schemas["Tool"];
export type ToolSchema = Schemas["ToolSchema"];
export type Policy = Schemas["Policy"];
export type ExecutionOutcome = Schemas["ExecutionOutcome"];
export type PausedExecution = Schemas["PausedExecution"];
export type ExecutionSummary = Schemas["ExecutionSummary"];
export type ExecutionRecord = Schemas["ExecutionRecord"];
export type ExecutionCall = Schemas["ExecutionCall"];
export type ProviderItem = Schemas["ProviderItem"];
export type HealthResult = Schemas["HealthResult"];
export type ServerInfo = Schemas["ServerInfo"];
export type Toolkit = Schemas["Toolkit"];
export type ToolkitPolicy = Schemas["ToolkitPolicy"];
export type ToolkitConnection = Schemas["ToolkitConnection"];
export type ToolkitTool = Schemas["ToolkitTool"];
export type ToolkitDecision = Schemas["ToolkitDecision"];
export type ToolChange = Schemas["ToolChange"];
export type ToolDiff = Schemas["ToolDiff"];
export type ChangedTool = Schemas["ChangedTool"];
export type RefreshDiff = Schemas["RefreshDiff"];

// Request bodies
export type CreateConnectionBody = Schemas["CreateConnectionBody"];
export type CreatePolicyBody = Schemas["CreatePolicyBody"];
export type UpdatePolicyBody = Schemas["UpdatePolicyBody"];
export type ExecuteBody = Schemas["ExecuteBody"];
export type ResumeBody = Schemas["ResumeBody"];
export type AddMcpServerBody = Schemas["AddMcpServerBody"];
export type McpProbeBody = Schemas["McpProbeBody"];
export type AddOpenApiSpecBody = Schemas["AddOpenApiSpecBody"];
export type OpenApiPreviewBody = Schemas["OpenApiPreviewBody"];
export type AddGraphqlBody = Schemas["AddGraphqlBody"];
export type ValidateConnectionBody = Schemas["ValidateConnectionBody"];
export type OAuthStartBody = Schemas["OAuthStartBody"];
export type OAuthClientBody = Schemas["OAuthClientBody"];
export type CreateToolkitBody = Schemas["CreateToolkitBody"];
export type UpdateToolkitBody = Schemas["UpdateToolkitBody"];
export type CreateToolkitPolicyBody = Schemas["CreateToolkitPolicyBody"];
export type UpdateToolkitPolicyBody = Schemas["UpdateToolkitPolicyBody"];
export type CreateToolkitConnectionBody = Schemas["CreateToolkitConnectionBody"];

/** The query parameters of `GET /api/executions`. */
export type ExecutionListQuery = NonNullable<paths["/api/executions"]["get"]["parameters"]["query"]>;

/** The query parameters of `GET /api/tool-changes`. */
export type ToolChangeListQuery = NonNullable<paths["/api/tool-changes"]["get"]["parameters"]["query"]>;

