import { describe, expect, it } from "vitest";
import { blockedReason } from "../../src/webhooks/ssrf.js";

/**
 * The SSRF guard's address table: every special, deprecated or translated range is refused,
 * IPv6 forms that carry an IPv4 address are judged (and named) by that address, and only
 * public unicast passes. Registration and connect time both use this one rule.
 */
describe("IPv4 addresses a webhook may not target", () => {
  it.each([
    ["127.0.0.1", "loopback"],
    ["127.8.9.10", "loopback"],
    ["0.0.0.0", "unspecified"],
    ["10.1.2.3", "private"],
    ["172.16.0.1", "private"],
    ["172.31.255.255", "private"],
    ["192.168.1.1", "private"],
    ["169.254.169.254", "linkLocal"],
    ["169.254.0.1", "linkLocal"],
    ["100.64.0.1", "carrierGradeNat"],
    ["100.127.255.254", "carrierGradeNat"],
    ["224.0.0.1", "multicast"],
    ["239.255.255.250", "multicast"],
    ["255.255.255.255", "broadcast"],
    ["240.0.0.1", "reserved"],
    ["192.0.0.8", "reserved"],
    ["192.0.2.1", "reserved"],
    ["198.18.0.1", "reserved"],
    ["198.51.100.7", "reserved"],
    ["203.0.113.9", "reserved"],
    ["192.88.99.1", "reserved"],
  ])("refuses %s (%s)", (address, range) => {
    expect(blockedReason(address, false)).toContain(range);
  });
});

describe("IPv6 addresses a webhook may not target", () => {
  it.each([
    // Plain special ranges.
    ["::", "unspecified"],
    ["::1", "loopback"],
    ["fe80::1", "linkLocal"],
    ["febf:ffff::1", "linkLocal"],
    ["fec0::1", "deprecatedSiteLocal"],
    ["feff::1", "deprecatedSiteLocal"],
    ["fc00::1", "uniqueLocal"],
    ["fd12:3456::1", "uniqueLocal"],
    ["ff02::1", "multicast"],
    ["ff0e::1", "multicast"],
    ["2001:db8::1", "documentation"],
    ["3fff::1", "documentation"],
    ["100::1", "discard"],
    ["2001:10::1", "ORCHID"],
    ["2001:20::1", "ORCHID"],
    ["2001:2::1", "IETF protocol assignments"],
    ["2001:1::1", "IETF protocol assignments"],
    ["5f00::1", "segmentRouting"],
    ["4000::1", "outside the global unicast space"],
    ["1::1", "outside the global unicast space"],
    // IPv4-compatible (deprecated, RFC 4291 §2.5.5.1): named by the IPv4 address inside.
    ["::127.0.0.1", "IPv4-compatible address of 127.0.0.1 (loopback)"],
    ["::7f00:1", "IPv4-compatible address of 127.0.0.1 (loopback)"],
    ["::10.0.0.1", "IPv4-compatible address of 10.0.0.1 (private)"],
    ["::169.254.169.254", "IPv4-compatible address of 169.254.169.254 (linkLocal)"],
    ["::8.8.8.8", "IPv4-compatible address of 8.8.8.8"],
    // IPv4-mapped: judged as the IPv4 address.
    ["::ffff:127.0.0.1", "127.0.0.1 is in the loopback range"],
    ["::ffff:10.0.0.1", "10.0.0.1 is in the private range"],
    ["::ffff:169.254.169.254", "169.254.169.254 is in the linkLocal range"],
    ["::ffff:7f00:1", "127.0.0.1 is in the loopback range"],
    // SIIT (RFC 6145/6052 ::ffff:0:0:0/96).
    ["::ffff:0:7f00:1", "IPv4-translated address of 127.0.0.1 (loopback)"],
    // NAT64: well-known prefix and the local-use prefix.
    ["64:ff9b::a9fe:a9fe", "NAT64 address of 169.254.169.254 (linkLocal)"],
    ["64:ff9b::7f00:1", "NAT64 address of 127.0.0.1 (loopback)"],
    ["64:ff9b::808:808", "NAT64 address of 8.8.8.8"],
    ["64:ff9b:1::a00:1", "NAT64 local-use"],
    // 6to4: the IPv4 address is bits 16–47.
    ["2002:7f00:1::1", "6to4 address of 127.0.0.1 (loopback)"],
    ["2002:a00:1::1", "6to4 address of 10.0.0.1 (private)"],
    ["2002:a9fe:a9fe::1", "6to4 address of 169.254.169.254 (linkLocal)"],
    ["2002:808:808::1", "6to4 address of 8.8.8.8"],
    // Teredo: the client's IPv4 address is the last 32 bits, inverted.
    ["2001:0:4136:e378:8000:63bf:80ff:fffe", "Teredo address of 127.0.0.1 (loopback)"],
    ["2001:0:4136:e378:8000:63bf:f5ff:fffe", "Teredo address of 10.0.0.1 (private)"],
  ])("refuses %s (%s)", (address, reason) => {
    expect(blockedReason(address, false)).toContain(reason);
  });
});

describe("addresses a webhook may target", () => {
  it.each([
    "93.184.216.34",
    "8.8.8.8",
    "1.1.1.1",
    "2606:4700:4700::1111",
    "2a00:1450:4001:82a::200e",
    "2001:4860:4860::8888",
    "::ffff:8.8.8.8",
  ])("allows the public address %s", (address) => {
    expect(blockedReason(address, false)).toBeNull();
  });
});

describe("the development escape hatch (WEBHOOK_ALLOW_PRIVATE_TARGETS)", () => {
  it("opens loopback, private and unique-local networks", () => {
    for (const address of [
      "127.0.0.1",
      "10.0.0.1",
      "192.168.0.1",
      "::1",
      "fd00::1",
      "::ffff:127.0.0.1",
    ])
      expect(blockedReason(address, true)).toBeNull();
  });

  it("never opens metadata, multicast, or addresses that embed another address", () => {
    for (const address of [
      "169.254.169.254",
      "224.0.0.1",
      "fe80::1",
      "ff02::1",
      "::127.0.0.1",
      "64:ff9b::7f00:1",
      "2002:7f00:1::1",
      "fec0::1",
    ]) {
      expect(blockedReason(address, true)).not.toBeNull();
    }
  });
});
