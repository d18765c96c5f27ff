export type {
  AnthropicContentBlock,
  AnthropicMessage,
  AnthropicSource,
  Answer,
  ContentPart,
  EndpointStyle,
  JSONSchema,
  Message,
  OpenAIContentPart,
  OpenAIMessage,
  OpenAIToolCall,
  Prompt,
  Request,
  ResponsesContentPart,
  ResponsesItem,
  Tool,
  ToolContext,
  ToolModel,
  ToolResult,
  ToolSource,
  Usage,
} from "./types.js"
export {
  AbortError,
  AnswerConflictError,
  AnswerExpiredError,
  AnswerInvalidError,
  AnswerMismatchError,
  ApprovalMismatchError,
  ConfigError,
  ConversationPendingError,
  HostUnsupportedError,
  LLMHttpError,
  LLMResponseError,
  LLMStreamError,
  NetworkError,
  SchemaVersionError,
  StoreError,
  ToolnexusError,
  UnknownRequestError,
  isToolnexusError,
} from "./errors.js"
export type { AnswerDecision, ToolnexusErrorCode } from "./errors.js"

export { defineTool } from "./tools/define-tool.js"
export type { ToolDefinition, ToolReturn, ZodLikeSchema } from "./tools/define-tool.js"
export { compileSchema, formatSchemaIssues } from "./tools/json-schema-validator.js"
export type { SchemaIssue, SchemaValidator } from "./tools/json-schema-validator.js"
export { httpTool } from "./tools/http-tool.js"
export type { HttpToolMethod, HttpToolOptions } from "./tools/http-tool.js"
export { createCredentialedFetch } from "./tools/outbound-credentials.js"
export type { CredentialedFetchOptions } from "./tools/outbound-credentials.js"
export { createSecretRedactor, headerSecretValues } from "./tools/secret-redactor.js"
export type { SecretRedactorOptions } from "./tools/secret-redactor.js"
export { relayTool } from "./tools/relay-tool.js"
export { createToolkit } from "./tools/toolkit.js"
export type { Toolkit, ToolkitOptions } from "./tools/toolkit.js"
export type { ToolSet } from "./tools/assemble-tools.js"
export type {
  ApprovalCall,
  ApprovalPolicy,
  ApprovalPolicyHook,
  ApprovalVerdict,
} from "./tools/approval-policy.js"
export { SUMMARY_PREFIX, compactMessages, compactor, estimateTokens } from "./compaction/compact-messages.js"
export type { CompactionOptions } from "./compaction/compact-messages.js"
export { BUILTIN_TOOL_NAMES } from "./builtins/builtin-options.js"
export type { BuiltinsOptions } from "./builtins/builtin-options.js"
export { listSkills } from "./skills/list-skills.js"
export type {
  ListSkillsOptions,
  SkillDef,
  SkillInfo,
  SkillInventory,
  SkillSkipReason,
} from "./skills/list-skills.js"
export type { SkillOptions } from "./skills/skill-tool.js"
export { SKILLS_PROMPT_PREAMBLE, SKILL_TOOL_DESCRIPTION } from "./skills/skill-texts.js"

export { authRequired, isRequest, pending, pendingOf } from "./suspension/pending.js"
export { declined } from "./suspension/call-suspension.js"
export type { PendingInput } from "./suspension/pending.js"
export { RELAY_KIND, isRelayRequest, relayAnswer, relayCallsOf } from "./suspension/relay.js"
export type { RelayCall, RelayResult } from "./suspension/relay.js"

export { createClient } from "./client/create-client.js"
export type { ClientOptions } from "./client/create-client.js"
export { createInProcessClient } from "./client/in-process-client.js"
export type { GenerateReply, GenerateRequest, InProcessClientOptions } from "./client/in-process-client.js"
export { answerExpired, assertAnswerFits, expiryTime, isExpired } from "./suspension/answer-fits.js"
export { assertAnswer } from "./suspension/answer-shape.js"
export { adoptConversationStore } from "./client/client.js"
export type {
  AskOptions,
  Client,
  ClientBaseOptions,
  ContinueBaseOptions,
  ContinueOptions,
  ContinueTranscriptOptions,
  ResumeContext,
  StoredResumeOptions,
  OutputOption,
  RunOptions,
  StreamListener,
} from "./client/client.js"
export type { OutputOf, OutputSchema } from "./client/structured-output.js"
export { StepTooLargeError, handleExecutor } from "./client/executor.js"
export type { DurableExecutor, WaitContext } from "./client/executor.js"
export { EngineRunError } from "./client/engine-connection.js"
export type { EngineConnection } from "./client/engine-connection.js"
export type {
  RunHost,
  HostStartOptions,
  HostRelayOptions,
  HostRelayTool,
  HostResultOptions,
  HostListOptions,
  HostDelivered,
  Logger,
} from "./host/run-host.js"
export type {
  ApprovalGrant,
  DeliveryRecord,
  ExpiringEvent,
  GrantFilter,
  GrantQuery,
  GrantScope,
  NotifyInfo,
} from "./host/approval-grants.js"
export { hostAgent } from "./host/host-agent.js"
export type { HostAgent, HostAgentOptions } from "./host/host-agent.js"
export type { HandleState, RuntimeEvent, TaskResult } from "./host/host-types.js"
export type { PendingEntry } from "./suspension/pending-entry.js"
export { runIdOfEntry } from "./suspension/pending-entry.js"
export { pendingOfRun } from "./host/pending-of-run.js"
export type { TranslateRequest, TranslateResult, TranslatedToolCall } from "./client/translate.js"
export type { RunResult, StreamEvent, ToolCallRecord } from "./client/run-result.js"
export type { Hooks } from "./client/hooks.js"
export { registerMetrics } from "./client/metrics.js"
export type { MetricEvent, PromRegistryLike } from "./client/metrics.js"
export type { TelemetryOptions, TracerLike } from "./telemetry/otel-api.js"
export { TRACE_DATA_KEY } from "./telemetry/trace-carrier.js"
export type { TraceCarrier } from "./telemetry/trace-carrier.js"
export type { LLMErrorInfo } from "./client/retry.js"
export type { FinishReason, ModelTurn, ModelToolCall } from "./providers/model-turn.js"
export { lastAssistantText } from "./providers/transcript-text.js"

export type { CommittedSnapshot, ConversationStore, SaveMeta } from "./store/conversation-store.js"
export { MemoryStore } from "./store/conversation-store.js"
