/**
 * Switchboard: a multi-threaded WebSocket server with native channels.
 *
 * ```ts
 * import { Server } from 'switchboard';
 * const server = new Server({ app: new URL('./app.js', import.meta.url) });
 * await server.listen(8080);
 * ```
 */
export {
  Server,
  type ListenAddress,
  type UnixListenAddress,
  type ListenTarget,
  type RpcTlsOptions,
  type TlsOptions,
  type CloseOptions,
  type HandlerErrorInfo,
} from './server.js';
export {
  App,
  defineApp,
  type AppSetup,
  type UpgradeRequest,
  type UpgradeResponse,
  type WebSocketBehavior,
  type SockJsBehavior,
  type SockJsServiceOptions,
} from './app.js';
export { WebSocket } from './websocket.js';
export { Router, type Handler, type ErrorHandler, type HttpRouteOptions } from './http/router.js';
export { Request } from './http/request.js';
export { Response, type ResponseBody } from './http/response.js';
export { HttpError } from './http/http-error.js';
export { EventStream, type EventStreamOptions, type ServerSentEvent } from './http/sse.js';
export type { InjectOptions, InjectResponse } from './http/inject.js';
export type { StaticCacheOptions, StaticOptions } from './http/static.js';
export type { ClientBundleOptions } from './http/client-bundle.js';
export type { HookName, HookTypes, RequestHook, OnSendHook, OnResponseHook, OnErrorHook, SendPayload } from './http/hooks.js';
export { FilePayload, type FileOptions, type FileCallback } from './http/send-file.js';
export {
  MULTIPART_DEFAULTS,
  type MultipartOptions,
  type MultipartPart,
  type MultipartField,
  type MultipartFile,
  type MultipartForm,
  type MultipartBufferedFile,
} from './http/multipart.js';
export type { RouteSchema, JsonSchema, ValidationDetail, ValidationLocation } from './http/validation.js';
export type { CookieOptions, CookieSecrets, UnsignedCookie } from './http/cookies.js';
export {
  session,
  MemoryStore,
  Session,
  type SessionStore,
  type SessionData,
  type SessionOptions,
  type SessionCookieOptions,
  type MemoryStoreOptions,
} from './http/session.js';
export { RedisSessionStore, MAX_SESSION_ID_LENGTH, type RedisSessionStoreOptions } from './http/redis-store.js';
export { cors, type CorsOptions, type CorsOrigin } from './http/cors.js';
export type { TlsInfo } from './tls.js';
export {
  SendStatus,
  nodeOf,
  type MessageData,
  type PublishOptions,
  type PublishTarget,
  type Stats,
  type HttpRouteStats,
} from './operations.js';
export type { MetricsOptions } from './http/metrics.js';
export type { ServerOptions, RouteOptions, CompressionOptions, RpcOptions, HttpOptions, SockJsOptions, StaticResponse, BrokerOptions, HistoryOptions } from './options.js';
export type { HistoryPage, HistoryPublication, HistoryQuery, StreamPosition } from './history.js';
export type { PresenceMember } from './presence.js';
export { presenceChannel } from './presence.js';
export type { TrustProxy } from './http/proxy.js';
export {
  RpcService,
  type RpcCall,
  type RpcHandler,
  type RpcMiddleware,
  type RpcErrorHandler,
} from './rpc/service.js';
export { RpcConnection, type RpcTlsInfo, type RpcTransport } from './rpc/connection.js';
export type { SubscribeHook } from './rpc/subscriptions.js';
// The protocol's own vocabulary, so an app needs one import.
export {
  defineAction,
  RpcError,
  RemoteError,
  RpcErrorCode,
  openStream,
  StreamWriter,
  type IncomingStream,
  type IncomingFile,
  type FileSource,
  type Action,
} from 'switchboard-rpc';
export { SwitchboardError, UpgradeRejection, ERROR_CODES, type ErrorCode } from './errors.js';
