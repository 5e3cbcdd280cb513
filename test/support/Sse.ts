/** Reading OpenAI chat streams in tests and benchmarks (no test framework here: the benchmarks import it too). */

/** Reads a chat-completions stream to its end (or until it is cut), passing each delta's text to `into`. */
export const readDeltas = async (response: Response, into: (text: string) => void): Promise<boolean> => {
  let buffer = ""
  let done = false
  const decoder = new TextDecoder()
  try {
    for await (const part of response.body as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(part, { stream: true })
      const events = buffer.split("\n\n")
      buffer = events.pop() ?? ""
      for (const event of events) {
        if (event.startsWith(":")) continue // a comment: the closing cost lines
        const data = event.replace(/^data: /, "")
        if (data === "[DONE]") {
          done = true
          continue
        }
        const chunk = JSON.parse(data) as { choices?: Array<{ delta?: { content?: string } }> }
        into(chunk.choices?.[0]?.delta?.content ?? "")
      }
    }
  } catch {
    // cut: the gateway went away
  }
  return done
}

/**
 * Starts a streamed chat completion of `model` and records what it delivers, under its request id in `delivered`,
 * until it ends or is cut. Resolves when the stream is over.
 */
export const recordStream = async (
  origin: string,
  key: string,
  model: string,
  delivered: Map<string, string>
): Promise<void> => {
  const response = await fetch(`${origin}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({
      model,
      stream: true,
      max_tokens: 3000,
      messages: [{ role: "user", content: "Tell me a long story" }]
    })
  })
  const requestId = response.headers.get("x-request-id") as string
  delivered.set(requestId, "")
  await readDeltas(response, (text) => delivered.set(requestId, (delivered.get(requestId) ?? "") + text))
}
