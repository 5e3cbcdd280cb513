import { assert, describe, it } from "@effect/vitest"
import {
  allowsAddress,
  allowsHost,
  classifyAddress,
  isMetadataHost,
  parseAllowList
} from "../../../src/adapters/fetch/AddressPolicy.ts"

describe("AddressPolicy.classifyAddress", () => {
  const table: ReadonlyArray<readonly [string, string]> = [
    ["8.8.8.8", "public"],
    ["93.184.216.34", "public"],
    ["2606:4700:4700::1111", "public"],
    ["127.0.0.1", "loopback"],
    ["127.255.255.254", "loopback"],
    ["0.0.0.0", "unspecified"],
    ["10.0.0.1", "private"],
    ["172.16.0.1", "private"],
    ["172.31.255.255", "private"],
    ["192.168.1.1", "private"],
    ["169.254.1.1", "link-local"],
    ["169.254.169.254", "cloud metadata"],
    ["168.63.129.16", "cloud metadata"],
    ["100.64.0.1", "carrier-grade NAT"],
    ["100.100.100.200", "cloud metadata"],
    ["224.0.0.1", "multicast"],
    ["255.255.255.255", "broadcast"],
    ["240.0.0.1", "reserved"],
    ["192.0.2.1", "reserved"],
    ["::1", "loopback"],
    ["[::1]", "loopback"],
    ["::", "unspecified"],
    ["fe80::1", "link-local"],
    ["fe80::1%eth0", "link-local"],
    ["fc00::1", "unique-local"],
    ["fd12:3456::1", "unique-local"],
    ["fd00:ec2::254", "cloud metadata"],
    ["ff02::1", "multicast"],
    ["::ffff:127.0.0.1", "loopback (in an IPv4-mapped IPv6 address)"],
    ["::ffff:7f00:1", "loopback (in an IPv4-mapped IPv6 address)"],
    ["::ffff:10.1.2.3", "private (in an IPv4-mapped IPv6 address)"],
    ["::ffff:169.254.169.254", "cloud metadata (in an IPv4-mapped IPv6 address)"],
    ["::ffff:8.8.8.8", "public"],
    ["::127.0.0.1", "loopback (in an IPv4-compatible IPv6 address)"],
    ["::7f00:1", "loopback (in an IPv4-compatible IPv6 address)"],
    ["::8.8.8.8", "IPv4-compatible IPv6 (deprecated)"],
    ["64:ff9b::7f00:1", "loopback (in a NAT64 IPv6 address)"],
    ["64:ff9b::808:808", "public"],
    ["2002:7f00:1::1", "loopback (in a 6to4 IPv6 address)"],
    ["2002:c0a8:101::1", "private (in a 6to4 IPv6 address)"],
    ["2002:808:808::1", "public"],
    // Teredo: server 65.54.227.120, client 10.0.0.1 stored inverted (f5ff:fffe).
    ["2001:0:4136:e378:8000:63bf:f5ff:fffe", "private (in a Teredo IPv6 address)"],
    ["2001:0:4136:e378:8000:63bf:f7f7:f7f7", "public"],
    ["2001:0:4136:e378:8000:63bf:3fff:fdd2", "reserved (in a Teredo IPv6 address)"],
    ["localhost", "not an IP address"],
    ["2130706433", "not an IP address"]
  ]
  for (const [address, expected] of table) {
    it(`${address} → ${expected}`, () => {
      assert.strictEqual(classifyAddress(address), expected)
    })
  }

  it("the WHATWG URL parser turns decimal, octal, hex and short IPv4 spellings into dotted quads", () => {
    const hosts = [
      "http://2130706433/",
      "http://0x7f.1/",
      "http://017700000001/",
      "http://0177.0.0.1/",
      "http://127.1/",
      "http://0x7f000001/"
    ].map((url) => new URL(url).hostname)
    assert.deepStrictEqual(hosts, Array(6).fill("127.0.0.1"))
    assert.strictEqual(new URL("http://[::ffff:127.0.0.1]/").hostname, "[::ffff:7f00:1]")
    assert.strictEqual(new URL("http://[0:0:0:0:0:0:0:1]/").hostname, "[::1]")
    assert.strictEqual(new URL("http://169.254.169.254./").hostname, "169.254.169.254")
    assert.strictEqual(new URL("http://[::127.0.0.1]/").hostname, "[::7f00:1]")
    for (const host of hosts) assert.strictEqual(classifyAddress(host), "loopback")
    assert.strictEqual(
      classifyAddress(new URL("http://[::ffff:127.0.0.1]/").hostname),
      classifyAddress("::ffff:7f00:1")
    )
  })

  it("metadata host names are refused by name", () => {
    assert.isTrue(isMetadataHost("metadata.google.internal"))
    assert.isTrue(isMetadataHost("METADATA.google.internal."))
    assert.isFalse(isMetadataHost("example.com"))
  })

  it("allow-list: host names, single addresses and CIDRs; mapped IPv6 matches IPv4 ranges", () => {
    const list = parseAllowList(["127.0.0.1", "10.0.0.0/8", "Images.Internal", "[::1]", "fd00::/8"])
    assert.isTrue(allowsHost(list, "images.internal."))
    assert.isFalse(allowsHost(list, "evil.test"))
    assert.isTrue(allowsAddress(list, "127.0.0.1"))
    assert.isFalse(allowsAddress(list, "127.0.0.2"))
    assert.isTrue(allowsAddress(list, "10.200.3.4"))
    assert.isTrue(allowsAddress(list, "::ffff:10.0.0.1"))
    assert.isTrue(allowsAddress(list, "::1"))
    assert.isTrue(allowsAddress(list, "fd12::1"))
    assert.isFalse(allowsAddress(list, "192.168.0.1"))
    assert.isFalse(allowsAddress(list, "not-an-ip"))
    assert.throws(() => parseAllowList(["10.0.0.0/99"]))
  })
})
