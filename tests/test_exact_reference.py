"""Independent references for the exact-search tests: a liveness simulator written from the spec,
brute force over subsets (RP pass) and over issue orders (length pass), and random regions with
irregular liveness (redefinitions, dead defs, unused live-ins). Shares no code with
`jaxsched.exact`."""

from __future__ import annotations

import itertools

import numpy as np

from jaxsched.machines.model import Machine
from jaxsched.problem.region import Instruction, Region, Register


def _users(region: Region) -> dict[str, int]:
    out: dict[str, int] = {}
    for inst in region.instructions:
        for r in inst.uses:
            out[r] = out.get(r, 0) + 1
    return out


def step(region: Region, machine: Machine, live: frozenset, remaining: dict, i: int):
    """Issue instruction i: returns (new live set, new remaining, RP per file at i)."""
    inst = region.instructions[i]
    rem = dict(remaining)
    live_s = set(live)
    for r in inst.uses:
        rem[r] -= 1
        if rem[r] == 0 and r not in region.live_out:
            live_s.discard(r)
    live_s.update(inst.defs)
    rp = pressure(region, machine, live_s)
    for r in inst.defs:
        if rem.get(r, 0) == 0 and r not in region.live_out:
            live_s.discard(r)
    return frozenset(live_s), rem, rp


def pressure(region: Region, machine: Machine, live) -> tuple[int, ...]:
    out = [region.live_through.get(f, 0) for f in machine.file_names]
    for r in live:
        reg = region.registers[r]
        out[machine.file_names.index(reg.file)] += reg.width
    return tuple(out)


def simulate_peaks(region: Region, machine: Machine, order) -> tuple[int, ...]:
    live = frozenset(region.live_in)
    rem = _users(region)
    peak = pressure(region, machine, live)
    for i in order:
        live, rem, rp = step(region, machine, live, rem, int(i))
        peak = tuple(max(a, b) for a, b in zip(peak, rp, strict=True))
    return peak


def rp_key(machine: Machine, peaks) -> tuple[int, int]:
    return (machine.rp_cost(peaks), int(sum(peaks)))


def brute_rp(region: Region, machine: Machine) -> tuple[int, int]:
    """Optimal (rp_cost, peak sum) by dynamic programming over (scheduled set, live set)."""
    n = len(region)
    preds = [0] * n
    for e in region.edges:
        preds[e.dst] |= 1 << e.src
    users = _users(region)
    start_live = frozenset(region.live_in)
    layer: dict[tuple[int, frozenset], list[tuple[int, ...]]] = {
        (0, start_live): [pressure(region, machine, start_live)]
    }
    for _ in range(n):
        nxt: dict[tuple[int, frozenset], list[tuple[int, ...]]] = {}
        for (s, live), fronts in layer.items():
            rem = dict(users)
            for i in range(n):
                if s >> i & 1:
                    for r in region.instructions[i].uses:
                        rem[r] -= 1
            for i in range(n):
                if s >> i & 1 or preds[i] & ~s:
                    continue
                live2, _, rp = step(region, machine, live, rem, i)
                k = (s | 1 << i, live2)
                cur = nxt.setdefault(k, [])
                for p in fronts:
                    q = tuple(max(a, b) for a, b in zip(p, rp, strict=True))
                    if any(all(x <= y for x, y in zip(o, q, strict=True)) for o in cur):
                        continue
                    cur[:] = [o for o in cur if not all(y <= x for x, y in zip(o, q, strict=True))]
                    cur.append(q)
        layer = nxt
    return min(rp_key(machine, p) for fronts in layer.values() for p in fronts)


def topo_orders(region: Region):
    n = len(region)
    preds = [0] * n
    for e in region.edges:
        preds[e.dst] |= 1 << e.src

    def rec(s: int, prefix: list[int]):
        if len(prefix) == n:
            yield list(prefix)
            return
        for i in range(n):
            if not s >> i & 1 and not preds[i] & ~s:
                prefix.append(i)
                yield from rec(s | 1 << i, prefix)
                prefix.pop()

    yield from rec(0, [])


def timed(region: Region, width: int, order) -> list[int]:
    """Earliest cycles for an issue order (cycles non-decreasing along the order)."""
    cyc = [0] * len(region)
    used: dict[int, int] = {}
    last = 0
    for i in order:
        t = max([last] + [cyc[e.src] + e.latency for e in region.edges if e.dst == i])
        while used.get(t, 0) >= width:
            t += 1
        cyc[i], last = t, t
        used[t] = used.get(t, 0) + 1
    return cyc


def brute_length(region: Region, machine: Machine, rp_target: int) -> int | None:
    """Shortest length over all issue orders meeting the RP target (None if none does)."""
    best = None
    for order in topo_orders(region):
        if machine.rp_cost(simulate_peaks(region, machine, order)) > rp_target:
            continue
        length = max(timed(region, machine.issue_width, order)) + 1
        best = length if best is None else min(best, length)
    return best


def random_region(seed: int, n: int, regs: int = 5) -> Region:
    """A random DAG with irregular liveness: shared registers, redefinitions, dead defs,
    unused live-ins, explicit live sets; widths 1-2 in VGPR and SGPR."""
    rng = np.random.default_rng(seed)
    names = [f"r{k}" for k in range(regs)]
    registers = {
        r: Register("VGPR" if rng.random() < 0.7 else "SGPR", int(rng.integers(1, 3)))
        for r in names
    }
    insts = []
    for i in range(n):
        defs = list(rng.choice(names, size=int(rng.integers(0, 3)), replace=False))
        uses = list(rng.choice(names, size=int(rng.integers(0, 3)), replace=False))
        insts.append(Instruction(f"i{i}", tuple(defs), tuple(uses)))
    edges = []
    for i, j in itertools.combinations(range(n), 2):
        if rng.random() < 0.25:
            edges.append((i, j, int(rng.choice([0, 1, 1, 2, 4, 8]))))
    live_in = [r for r in names if rng.random() < 0.4]
    live_out = [r for r in names if rng.random() < 0.3]
    return Region.build(
        f"rand:{seed}:n{n}",
        insts,
        registers,
        edges,
        live_in=live_in,
        live_out=live_out,
        live_through={"VGPR": int(rng.integers(0, 3))},
    )


# ---------------------------------------------------------------- self-checks of the references
def test_simulator_agrees_with_verifier() -> None:
    """The reference liveness simulator and `jaxsched.verify` agree on irregular regions."""
    from jaxsched.machines.model import gfx906
    from jaxsched.verify import verify_order

    m = gfx906()
    for seed in range(40):
        region = random_region(seed, 7)
        order = next(topo_orders(region))
        report = verify_order(region, m, order)
        assert simulate_peaks(region, m, order) == tuple(report.peak_rp[f] for f in m.file_names)


def test_brute_rp_is_the_minimum_over_orders() -> None:
    """The subset DP equals plain enumeration of every order on tiny regions."""
    from jaxsched.machines.model import generic

    m = generic(registers_per_file=32)
    for seed in range(15):
        region = random_region(seed, 6)
        best = min(rp_key(m, simulate_peaks(region, m, o)) for o in topo_orders(region))
        assert brute_rp(region, m) == best
