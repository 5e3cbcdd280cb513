/**
 * A page as OpenAI's list endpoints return it (files, batches, videos, conversations and their items): the rows, the
 * ids it starts and ends with, and whether more follow.
 */
export interface ListPage<A> {
  readonly object: "list"
  readonly data: ReadonlyArray<A>
  readonly first_id: string | null
  readonly last_id: string | null
  readonly has_more: boolean
}

const idOf = (row: unknown): string | null => {
  const id = typeof row === "object" && row !== null ? (row as { readonly id?: unknown }).id : undefined
  return typeof id === "string" ? id : null
}

export const listPage = <A>(data: ReadonlyArray<A>, hasMore: boolean): ListPage<A> => ({
  object: "list",
  data,
  first_id: idOf(data[0]),
  last_id: idOf(data.at(-1)),
  has_more: hasMore
})
