// What one parked run holds, read from a heap snapshot written by `shared-rows.mjs --scenario s4
// --snapshot-dir`: the objects reachable from the handle `globalThis.keep[i]` and from no other
// handle (`keep[j]`, `keep[k]`) — its own bytes, as a tree by the edge that reached each object.
//
//   node parked-snapshot.mjs <file.heapsnapshot> [--index 5000]
import { readFileSync } from "node:fs"
import { parseArgs } from "node:util"

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { index: { type: "string", default: "5000" } },
})
const snap = JSON.parse(readFileSync(positionals[0], "utf8"))
const { node_fields, edge_fields, node_types, edge_types } = snap.snapshot.meta
const NF = node_fields.length
const EF = edge_fields.length
const nodes = snap.nodes
const edges = snap.edges
const strings = snap.strings
const nTypes = node_types[0]
const eTypes = edge_types[0]
const [N_TYPE, N_NAME, N_SIZE, N_EDGES] = ["type", "name", "self_size", "edge_count"].map((f) =>
  node_fields.indexOf(f),
)
const [E_TYPE, E_NAME, E_TO] = ["type", "name_or_index", "to_node"].map((f) => edge_fields.indexOf(f))
const count = nodes.length / NF
const firstEdge = new Uint32Array(count + 1)
for (let i = 0, e = 0; i < count; i++) {
  firstEdge[i] = e
  e += nodes[i * NF + N_EDGES] * EF
}
firstEdge[count] = edges.length
const nameOf = (n) => strings[nodes[n * NF + N_NAME]]
const typeOf = (n) => nTypes[nodes[n * NF + N_TYPE]]
function* out(n) {
  for (let e = firstEdge[n]; e < firstEdge[n + 1]; e += EF) {
    const type = eTypes[edges[e + E_TYPE]]
    const nameOrIndex = edges[e + E_NAME]
    const name = type === "element" || type === "hidden" ? `[${nameOrIndex}]` : strings[nameOrIndex]
    yield { type, name, to: edges[e + E_TO] / NF }
  }
}
// find globalThis.keep: a property edge named "keep" to an Array
let keep
for (let n = 0; n < count && keep === undefined; n++)
  for (const e of out(n))
    if (e.type === "property" && e.name === "keep" && nameOf(e.to) === "Array") keep = e.to
if (keep === undefined) throw new Error("no globalThis.keep")
let elements
for (const e of out(keep)) if (e.name === "elements") elements = e.to
const handle = (i) => {
  for (const e of out(elements))
    if (
      (e.type === "element" || e.type === "internal" || e.type === "hidden") &&
      (e.name === `[${i}]` || e.name === String(i))
    )
      return e.to
  throw new Error(`no keep[${i}]`)
}
const i = Number(values.index)
const skipEdge = (e) =>
  e.type === "weak" ||
  (e.type === "internal" && e.name === "map") ||
  e.name === "map" ||
  e.name === "__proto__"
function reach(root) {
  const seen = new Set([root])
  const stack = [root]
  while (stack.length) {
    const n = stack.pop()
    for (const e of out(n)) {
      if (skipEdge(e) || seen.has(e.to)) continue
      const t = typeOf(e.to)
      if (t === "hidden" && nameOf(e.to) === "system / Map") continue
      if (t === "synthetic" || t === "code") continue
      seen.add(e.to)
      stack.push(e.to)
    }
  }
  return seen
}
const others = new Set([...reach(handle(i + 1)), ...reach(handle(i + 2))])
// own = reachable from keep[i] and from neither neighbour (shared strings, maps and constants excluded)
const mine = reach(handle(i))
const own = new Set([...mine].filter((n) => !others.has(n)))
let total = 0
const printed = new Set()
function show(n, label, depth) {
  if (!own.has(n) || printed.has(n)) return
  printed.add(n)
  const size = nodes[n * NF + N_SIZE]
  total += size
  let desc = nameOf(n)
  if (typeOf(n) === "string" || typeOf(n) === "concatenated string" || typeOf(n) === "sliced string")
    desc = JSON.stringify(desc.slice(0, 60))
  console.log(`${"  ".repeat(depth)}${label}: ${typeOf(n)} ${desc} ${size} B`)
  for (const e of out(n)) if (!skipEdge(e)) show(e.to, `${e.type}:${e.name}`, depth + 1)
}
show(handle(i), `keep[${i}]`, 0)
console.log(`own bytes of keep[${i}]: ${total} (${own.size} objects)`)
