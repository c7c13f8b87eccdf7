// What one request holds and is answered with: its admission, the context its
// handler sees, the body caps, the deadline, the cleanups, the refusal answers.
// Re-exports only; core/mod.ts gathers the folders.
export * from "./body_limit.ts";
export * from "./cleanup_registry.ts";
export * from "./connection_drop.ts";
export * from "./deadline_wheel.ts";
export * from "./responses.ts";
export type { ExemptOption } from "./exempt.ts";
export { _carried, _NOT_CARRIED, type RefusalHeaders } from "./refusal_headers.ts";
export type { GuardedInfo, RequestContext } from "./request_context.ts";
export { _isRequestContext, _upgradedWebSocket } from "./request_context.ts";
export { _uploadUnread } from "./_unread_upload.ts";
export { _closing, closesOnUnreadBody, type RouteBodyLimit, UNREAD_BODY_KEEP_BYTES } from "./body_caps.ts";
export { _reporterOf, _routeKeyOf } from "./route_report.ts";
export { _ClientLeft } from "./client_left.ts";
