/**
 * The benches' calls to a gateway's admin API: a POST with the admin token, and a funded account's key. (The faults
 * bench keeps its own caller: it reads refusals' statuses instead of throwing on them.)
 */

/** A POST to the admin API; a status of 300 or more throws with the answer's text. */
export const adminPost = async (origin: string, token: string, path: string, body?: unknown) => {
  const response = await fetch(`${origin}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body)
  })
  const text = await response.text()
  if (response.status >= 300) throw new Error(`${path}: HTTP ${response.status} ${text}`)
  return JSON.parse(text) as Record<string, unknown>
}

/** An account named `name` with `amount` (a decimal string) deposited, and a key on it: the key's secret. */
export const fundedKey = async (origin: string, token: string, name: string, amount: string): Promise<string> => {
  const account = await adminPost(origin, token, "/admin/accounts", { name })
  await adminPost(origin, token, `/admin/accounts/${account.id}/deposits`, { amount, reference: `bench-${name}` })
  return String((await adminPost(origin, token, `/admin/accounts/${account.id}/keys`, { name: `${name}-key` })).key)
}
