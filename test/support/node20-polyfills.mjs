// vitest 5 calls Map.groupBy/Object.groupBy (Node >= 21) in its reporter; Node 20 is this machine's runtime.
const groupBy = (items, keyOf) => {
  const groups = new Map()
  let index = 0
  for (const item of items) {
    const key = keyOf(item, index++)
    const group = groups.get(key)
    if (group === undefined) groups.set(key, [item])
    else group.push(item)
  }
  return groups
}
if (typeof Map.groupBy !== "function") Map.groupBy = groupBy
if (typeof Object.groupBy !== "function") Object.groupBy = (items, keyOf) => Object.fromEntries(groupBy(items, keyOf))
