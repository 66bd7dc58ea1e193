"""A region's identity for randomness: a 32-bit hash of its content.

The colony derives each region's random stream from the caller's key and this fingerprint, so a
region's result never depends on what else is in the call, its position in a file, or how the
regions are batched, split or resumed.
"""

from __future__ import annotations

import hashlib
import json

from jaxsched.problem.region import Region


def fingerprint(region: Region) -> int:
    """uint32 hash of everything that defines the scheduling problem (the name excluded):
    instructions (text, defs, uses), registers, edges, live-in/out and live-through."""
    content = [
        [list(i) for i in region.instructions],
        sorted([name, reg.file, reg.width] for name, reg in region.registers.items()),
        [list(e) for e in region.edges],
        list(region.live_in),
        list(region.live_out),
        sorted(region.live_through.items()),
    ]
    text = json.dumps(content, separators=(",", ":"), ensure_ascii=True)
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")
