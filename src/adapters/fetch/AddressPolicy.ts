/**
 * Which network addresses a server-side fetch of a user-supplied URL may reach: public unicast only. Loopback,
 * private, link-local, unique-local, multicast, CGNAT, reserved and cloud-metadata addresses are refused, also when
 * they hide inside an IPv6 form (IPv4-mapped, IPv4-compatible, NAT64, 6to4, Teredo). An operator allow-list of host
 * names and CIDR ranges lifts the rule for internal deployments and tests.
 */
import ipaddr from "ipaddr.js"

/** What an address is, for a refusal message: `"public"` is the only class a fetch may connect to. */
export type AddressClass = string

/** Metadata services that sit on otherwise routable addresses, or that deserve their own name in a refusal. */
const METADATA_ADDRESSES = new Set([
  "169.254.169.254", // AWS, GCP, Azure, OpenStack, DigitalOcean
  "169.254.170.2", // AWS ECS task metadata
  "168.63.129.16", // Azure wire server (a public address)
  "100.100.100.200", // Alibaba Cloud
  "192.0.0.192", // Oracle Cloud
  "fd00:ec2:0:0:0:0:0:254" // AWS IMDS over IPv6
])

/** Host names of metadata services, refused by name before any DNS lookup. */
const METADATA_HOSTS = new Set(["metadata.google.internal", "metadata.goog", "metadata", "instance-data"])

const RANGE_NAMES: Readonly<Record<string, string>> = {
  unspecified: "unspecified",
  broadcast: "broadcast",
  multicast: "multicast",
  linkLocal: "link-local",
  loopback: "loopback",
  carrierGradeNat: "carrier-grade NAT",
  private: "private",
  reserved: "reserved",
  uniqueLocal: "unique-local",
  discard: "discard-only",
  benchmarking: "benchmarking",
  amt: "AMT",
  as112: "AS112",
  deprecated: "deprecated",
  orchid2: "ORCHIDv2",
  droneRemoteIdProtocolEntityTags: "reserved",
  segmentRouting: "segment routing"
}

const describeRange = (range: string): string => RANGE_NAMES[range] ?? range

const classifyV4 = (address: ipaddr.IPv4): AddressClass => {
  if (METADATA_ADDRESSES.has(address.toString())) return "cloud metadata"
  const range = address.range()
  return range === "unicast" ? "public" : describeRange(range)
}

const v4FromBits = (high: number, low: number): ipaddr.IPv4 =>
  new ipaddr.IPv4([(high >> 8) & 0xff, high & 0xff, (low >> 8) & 0xff, low & 0xff])

/** The IPv4 address an IPv6 transition form carries, checked as if it had been given directly. */
const embedded = (label: string, inner: AddressClass): AddressClass =>
  inner === "public" ? "public" : `${inner} (in ${label})`

const classifyV6 = (address: ipaddr.IPv6): AddressClass => {
  if (METADATA_ADDRESSES.has(address.toNormalizedString())) return "cloud metadata"
  const parts = address.parts
  const range = address.range()
  switch (range) {
    case "ipv4Mapped":
      return embedded("an IPv4-mapped IPv6 address", classifyV4(address.toIPv4Address()))
    case "rfc6145":
    case "rfc6052":
      return embedded("a NAT64 IPv6 address", classifyV4(v4FromBits(parts[6]!, parts[7]!)))
    case "6to4":
      return embedded("a 6to4 IPv6 address", classifyV4(v4FromBits(parts[1]!, parts[2]!)))
    case "teredo": {
      const server = classifyV4(v4FromBits(parts[2]!, parts[3]!))
      const client = classifyV4(v4FromBits(parts[6]! ^ 0xffff, parts[7]! ^ 0xffff))
      return embedded("a Teredo IPv6 address", server !== "public" ? server : client)
    }
    case "unicast": {
      // ::a.b.c.d, the deprecated IPv4-compatible form, which ipaddr.js files under unicast.
      if (parts.slice(0, 6).every((part) => part === 0)) {
        const inner = classifyV4(v4FromBits(parts[6]!, parts[7]!))
        return inner === "public"
          ? "IPv4-compatible IPv6 (deprecated)"
          : `${inner} (in an IPv4-compatible IPv6 address)`
      }
      return "public"
    }
    default:
      return describeRange(range)
  }
}

/** Strips the brackets a URL puts around an IPv6 literal. */
export const unbracket = (host: string): string =>
  host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host

/**
 * `"public"` for an address a fetch may reach, otherwise what it is (`"loopback"`, `"private (in an IPv4-mapped IPv6
 * address)"`, `"cloud metadata"`, …). Only canonical IP literals are accepted (the WHATWG URL parser already turns
 * `0x7f.1` and `2130706433` into `127.0.0.1`); anything else is `"not an IP address"`.
 */
export const classifyAddress = (address: string): AddressClass => {
  const literal = unbracket(address)
  if (ipaddr.IPv4.isValidFourPartDecimal(literal)) return classifyV4(ipaddr.IPv4.parse(literal))
  if (ipaddr.IPv6.isValid(literal)) {
    // ipaddr.js reads `::a.b.c.d` as `::ffff:a.b.c.d`; the WHATWG URL parser writes it as `::7f00:1`, what it is.
    const hex =
      literal.includes(".") && URL.canParse(`http://[${literal}]/`)
        ? unbracket(new URL(`http://[${literal}]/`).hostname)
        : literal
    return classifyV6(ipaddr.IPv6.parse(hex))
  }
  return "not an IP address"
}

/** Whether a host name itself names a metadata service. */
export const isMetadataHost = (hostname: string): boolean => METADATA_HOSTS.has(normalizeHost(hostname))

/** Lower case, no trailing dot, no brackets: the form allow-list entries are compared in. */
export const normalizeHost = (hostname: string): string => unbracket(hostname.toLowerCase()).replace(/\.$/, "")

export interface AllowList {
  readonly hosts: ReadonlySet<string>
  readonly ranges: ReadonlyArray<readonly [ipaddr.IPv4 | ipaddr.IPv6, number]>
}

/**
 * Parses operator entries: CIDRs (`10.0.0.0/8`, `fd00::/8`), single addresses (`127.0.0.1`, `::1`) and host names
 * (`images.internal`). Throws on an entry with a `/` that is not a CIDR: a configuration bug to surface at startup.
 */
export const parseAllowList = (entries: ReadonlyArray<string>): AllowList => {
  const hosts = new Set<string>()
  const ranges: Array<readonly [ipaddr.IPv4 | ipaddr.IPv6, number]> = []
  for (const raw of entries) {
    const entry = unbracket(raw.trim())
    if (entry.includes("/")) ranges.push(ipaddr.parseCIDR(entry))
    else if (ipaddr.isValid(entry)) {
      const address = ipaddr.parse(entry)
      ranges.push([address, address.kind() === "ipv4" ? 32 : 128])
    } else if (entry !== "") hosts.add(normalizeHost(entry))
  }
  return { hosts, ranges }
}

export const allowsHost = (list: AllowList, hostname: string): boolean => list.hosts.has(normalizeHost(hostname))

/** Whether an address falls in an allow-listed range; IPv4-mapped IPv6 addresses match IPv4 ranges. */
export const allowsAddress = (list: AllowList, address: string): boolean => {
  const literal = unbracket(address)
  if (!ipaddr.isValid(literal)) return false
  const parsed = ipaddr.process(literal)
  return list.ranges.some(([range, bits]) => range.kind() === parsed.kind() && parsed.match(range, bits))
}
