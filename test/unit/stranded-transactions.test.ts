import { describe, expect, it } from "vitest";
import { strandedHashes, type PoolContent } from "../../chain-fixtures/stranded-transactions.js";

/** The shape of anvil's `txpool_content` (sender → decimal nonce → transaction), as captured when it stranded nonce 51. */
const A = "0x90F79bf6EB2c4f870365E785982E1f101E93b906";
const B = "0x15d34AAf54267DB7D7c367839AAf71A00a2C6A65";
const pool = (pending: PoolContent["pending"], queued: PoolContent["queued"]): PoolContent => ({
  pending,
  queued,
});

describe("a stranded transaction", () => {
  it("is the sender's lowest queued one when its nonce is already the sender's next", () => {
    const content = pool({}, { [A]: { "52": { hash: "0x52" }, "51": { hash: "0x51" } } });
    expect(strandedHashes(content, new Map([[A, 51n]]))).toEqual(new Map([[A, "0x51"]]));
  });

  it("is not one behind a real nonce gap (queued above the sender's next)", () => {
    const content = pool({}, { [A]: { "53": { hash: "0x53" } } });
    expect(strandedHashes(content, new Map([[A, 51n]]))).toEqual(new Map());
  });

  it("is not one whose sender still has a transaction pending (the node is about to promote it)", () => {
    const content = pool({ [A]: { "51": { hash: "0x51" } } }, { [A]: { "52": { hash: "0x52" } } });
    expect(strandedHashes(content, new Map([[A, 51n]]))).toEqual(new Map());
  });

  it("is judged per sender: nonces compare as numbers, not as text", () => {
    const content = pool(
      {},
      {
        [A]: { "100": { hash: "0x100" }, "99": { hash: "0x99" } },
        [B]: { "7": { hash: "0x7" } },
      },
    );
    expect(
      strandedHashes(
        content,
        new Map([
          [A, 99n],
          [B, 6n],
        ]),
      ),
    ).toEqual(new Map([[A, "0x99"]]));
  });
});
