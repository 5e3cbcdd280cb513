/**
 * `@tollgate/plugin-spec/contract`: the contract suites a plugin author runs against their plugin with one call, one
 * per kind (vitest and fast-check are this module's optional peer dependencies).
 */
export { FAILURE_REASONS } from "../shape.ts"
export { describeContract, isPluginFailure } from "./engine.ts"
export { describeEndpointPluginContract, type EndpointFixtures } from "./endpoint.ts"
export { fetchUpstreamHttp } from "./fetchUpstreamHttp.ts"
export {
  describeChatPluginContract,
  describeEmbeddingsPluginContract,
  describeImagesPluginContract,
  describeSpeechPluginContract,
  describeTranscriptionPluginContract,
  describeVideosPluginContract
} from "./kinds.ts"
