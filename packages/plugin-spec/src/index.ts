/**
 * `@tollgate/plugin-spec`: the contract between Tollgate and its model plugins. One module per kind, each at
 * `specificationVersion: "v1"`; types only (the contract suites live at `@tollgate/plugin-spec/contract`).
 */
import type { ChatPlugin } from "./chat.ts"
import type { EmbeddingsPlugin } from "./embeddings.ts"
import type { EndpointPlugin } from "./endpoint.ts"
import type { ImagesPlugin } from "./images.ts"
import type { SpeechPlugin } from "./speech.ts"
import type { TranscriptionPlugin } from "./transcription.ts"
import type { VideosPlugin } from "./videos.ts"

export type * from "./common.ts"
export type * from "./chat.ts"
export type * from "./images.ts"
export type * from "./videos.ts"
export type * from "./embeddings.ts"
export type * from "./transcription.ts"
export type * from "./speech.ts"
export type * from "./endpoint.ts"

/** A plugin of one of the built-in kinds. */
export type BuiltinKindPlugin =
  | ChatPlugin
  | ImagesPlugin
  | VideosPlugin
  | EmbeddingsPlugin
  | TranscriptionPlugin
  | SpeechPlugin

/** Any plugin the gateway loads: one of the built-in kinds, or a new kind with its own endpoint. */
export type ModelPlugin = BuiltinKindPlugin | EndpointPlugin
