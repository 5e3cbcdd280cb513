/**
 * `@tollgate/plugin-spec/contract`: the contract suites a plugin author runs against their plugin with one call, one
 * per kind (vitest and fast-check are this module's optional peer dependencies).
 */
export { FAILURE_REASONS } from "../shape.ts"
export {
  type ContractCall,
  type ContractCheck,
  type ContractFixtures,
  contractChecks,
  describeContract,
  type FailingCall,
  isPluginFailure
} from "./engine.ts"
export { describeEndpointPluginContract, type EndpointFixtures, endpointContractChecks } from "./endpoint.ts"
export { type FetchUpstreamHttpOptions, fetchUpstreamHttp } from "./fetchUpstreamHttp.ts"
export {
  type ChatCallFixture,
  type ChatExpectation,
  type ChatFixtures,
  chatCallOf,
  chatContractChecks,
  chatRequestOf,
  chatUsageWithin,
  clientBodyOf,
  describeChatPluginContract,
  type ReadReply,
  readBody,
  readChatReply
} from "./chat.ts"
export {
  describeEmbeddingsPluginContract,
  describeImagesPluginContract,
  describeSpeechPluginContract,
  describeTranscriptionPluginContract,
  describeVideosPluginContract
} from "./kinds.ts"
