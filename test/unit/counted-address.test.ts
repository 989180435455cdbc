import { describe, expect, it } from "vitest";
import { countedAddress } from "../../src/http/client-address.js";

describe("the address a per-address limit counts", () => {
  it("counts an IPv6 client by its /64, however the address is written", () => {
    expect(countedAddress("2001:db8:1:2::5")).toBe("2001:db8:1:2::/64");
    expect(countedAddress("2001:DB8:1:2:ffff:ffff:ffff:ffff")).toBe("2001:db8:1:2::/64");
    expect(countedAddress("2001:0db8:0001:0002:0000:0000:0000:0001")).toBe("2001:db8:1:2::/64");
    expect(countedAddress("2001:db8:1:3::5")).toBe("2001:db8:1:3::/64");
    expect(countedAddress("::1")).toBe("::/64");
  });

  it("counts an IPv4-mapped IPv6 address as the IPv4 address, and IPv4 as itself", () => {
    expect(countedAddress("::ffff:198.51.100.7")).toBe("198.51.100.7");
    expect(countedAddress("::ffff:c633:6407")).toBe("198.51.100.7");
    expect(countedAddress("198.51.100.7")).toBe("198.51.100.7");
  });

  it("leaves what is not an address as it is, and names a missing one", () => {
    expect(countedAddress("not-an-address")).toBe("not-an-address");
    expect(countedAddress(undefined)).toBe("unknown");
  });
});
