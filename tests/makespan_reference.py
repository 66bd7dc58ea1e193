"""Independent plain-Python code for the makespan tests, written from the spec: a decoder, a
schedule verifier and the "most pending warp first" rule (no code shared with the library)."""

from __future__ import annotations

import numpy as np

UNITS = "LCSD"


def plain_decode(kernel: str, caps: dict[str, int], sigma: int, string) -> list[list[int]]:
    """Plain-Python decoder straight from the spec: 1-based cycles per warp and instruction."""
    warps = max(string) + 1
    per_cycle: dict[int, list[str]] = {}
    cycles: list[list[int]] = [[] for _ in range(warps)]
    for w in string:
        unit = kernel[len(cycles[w])]
        c = cycles[w][-1] + 1 if cycles[w] else 1
        while True:
            used = per_cycle.get(c, [])
            if len(used) < sigma and used.count(unit) < caps.get(unit, sigma):
                break
            c += 1
        per_cycle.setdefault(c, []).append(unit)
        cycles[w].append(c)
    return cycles


def verify_schedule(kernel: str, caps: dict[str, int], sigma: int, cycles) -> int:
    """Independent check of a schedule (int[W, I], 1-based); returns its makespan."""
    cycles = np.asarray(cycles)
    assert cycles.shape[1] == len(kernel)
    assert np.all(cycles >= 1)
    assert np.all(np.diff(cycles, axis=1) >= 1), "a warp's instructions must issue in order"
    per_cycle = np.bincount(cycles.ravel())
    assert per_cycle.max() <= sigma, "more warps issue in a cycle than there are schedulers"
    for u in set(kernel):
        cols = [k for k, ch in enumerate(kernel) if ch == u]
        use = np.bincount(cycles[:, cols].ravel())
        assert use.max() <= caps.get(u, sigma), f"unit {u} over capacity"
    return int(cycles.max())


def int_caps(norm) -> dict[str, int]:
    return {u: int(norm.capacity[i]) for i, u in enumerate(UNITS)}


def verified_makespan(norm, string) -> int:
    """Makespan of warp string ``string`` (int[W*I]) by the plain decoder, checked by the
    verifier (so a wrong device decoder cannot agree with it by accident)."""
    caps = int_caps(norm)
    cycles = plain_decode(norm.kernel, caps, norm.schedulers, [int(w) for w in string])
    return verify_schedule(norm.kernel, caps, norm.schedulers, cycles)


def plain_most_pending(norm, warps: int) -> list[int]:
    """Most pending warp first, ties to the latest earliest cycle, then the lowest id: the rule
    evaluated literally (every tied warp's earliest cycle by a linear scan)."""
    caps = int_caps(norm)
    n_instr = len(norm.kernel)
    sched: dict[int, int] = {}
    used: dict[tuple[str, int], int] = {}
    count = [0] * warps
    last = [0] * warps  # 1-based; 0 = none yet
    out = []

    def earliest(w: int) -> int:
        unit = norm.kernel[count[w]]
        c = last[w] + 1
        while sched.get(c, 0) >= norm.schedulers or used.get((unit, c), 0) >= caps[unit]:
            c += 1
        return c

    for _ in range(warps * n_instr):
        most = max(n_instr - c for c in count)
        tied = [w for w in range(warps) if n_instr - count[w] == most]
        places = [earliest(w) for w in tied]
        w = tied[places.index(max(places))]
        c = places[tied.index(w)]
        sched[c] = sched.get(c, 0) + 1
        used[(norm.kernel[count[w]], c)] = used.get((norm.kernel[count[w]], c), 0) + 1
        count[w] += 1
        last[w] = c
        out.append(w)
    return out
