/** Identifiers and stream names. Streams follow the `category-id` convention so category readers can split them. */
export type AccountId = string
export type KeyId = string
export type HoldId = string
export type RequestId = string

export const accountStream = (accountId: AccountId): string => `account-${accountId}`
export const keyStream = (keyId: KeyId): string => `key-${keyId}`

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

export const isUuid = (text: string): boolean => UUID.test(text)
