"""`jaxsched.heuristics.hoist`: shorter orders at the same register peaks, and the colony's
results shortened by it where its ants all die (a byte-histogram reduction over loaded words,
the shape of parboil's ``histo_final_kernel`` loop)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import jaxsched
from jaxsched.heuristics.hoist import hoist
from jaxsched.heuristics.host_schedule import host_region, order_peak_rp_host
from jaxsched.heuristics.list_scheduler import issue_cycles
from jaxsched.machines.model import get_machine
from jaxsched.problem.format import load_regions
from jaxsched.problem.padded import pad_region
from jaxsched.problem.region import Region
from jaxsched.verify import verify

LOAD = 80
DATA = Path(__file__).parent / "data"


def byte_histogram(loads: int = 8, bytes_per_word: int = 4) -> Region:
    """Pairs of loaded words: each word's bytes extracted, each pair's bytes added into the
    running sums (``acc``), loads one after another in input order."""
    ins, regs = [], {"base": ("SGPR", 2), "idx": ("VGPR", 1)}
    acc = [f"acc{j}" for j in range(bytes_per_word)]
    regs.update({a: ("VGPR", 1) for a in acc})
    for p in range(loads // 2):
        parts = []
        for w in (2 * p, 2 * p + 1):
            regs[f"a{w}"], regs[f"w{w}"] = ("VGPR", 2), ("VGPR", 1)
            ins.append((f"addr{w}", [f"a{w}"], ["idx", "base"]))
            ins.append((f"LOAD{w}", [f"w{w}"], [f"a{w}"]))
            for j in range(bytes_per_word):
                regs[f"b{w}_{j}"] = ("VGPR", 1)
                ins.append((f"bfe{w}_{j}", [f"b{w}_{j}"], [f"w{w}"]))
            parts.append(w)
        for j in range(bytes_per_word):
            new = f"s{p}_{j}"
            regs[new] = ("VGPR", 1)
            ins.append((f"add3_{p}_{j}", [new], [f"b{parts[0]}_{j}", f"b{parts[1]}_{j}", acc[j]]))
            acc[j] = new
    edges, last_def = [], {}
    for i, (_text, defs, uses) in enumerate(ins):
        for r in uses:
            if r in last_def:
                src = last_def[r]
                edges.append((src, i, LOAD if ins[src][0].startswith("LOAD") else 1))
        for r in defs:
            last_def[r] = i
    return Region.build(
        "byte_histogram",
        ins,
        regs,
        edges,
        live_in=["base", "idx", *[f"acc{j}" for j in range(bytes_per_word)]],
        live_out=acc,
    )


def _length(region: Region, order) -> int:
    return int(issue_cycles(region, order).max()) + 1


def test_hoist_shortens_at_the_same_peaks():
    region, machine = byte_histogram(), get_machine("gfx906")
    order = list(range(len(region)))
    peaks = order_peak_rp_host(host_region(pad_region(region, machine)), np.asarray(order))
    found = hoist(region, machine, order, peaks)
    assert found is not None
    new, length = found
    assert length == _length(region, new) < _length(region, order) * 0.7
    report = verify(region, machine, issue_cycles(region, new), order=np.asarray(new))
    assert [report.peak_rp[f] for f in machine.file_names] <= [int(p) for p in peaks]
    assert hoist(region, machine, order, peaks) == found  # deterministic
    # no room: a cap below the order's own peak admits no move
    assert hoist(region, machine, order, [int(p) - 8 for p in peaks]) is None


@pytest.mark.parametrize("issue_width", [1, 2])
def test_timing_from_a_departure_equals_issue_cycles(issue_width):
    """Hoist times a trial order only from where it departs from the current one, and stops
    once it cannot be shorter than a bound; its lengths are `issue_cycles`' lengths."""
    from helpers import random_topological_order

    from jaxsched.heuristics.hoist import _Timing
    from jaxsched.problem.generate import generate_regions

    rng = np.random.default_rng(5)
    for region in [byte_histogram(), *generate_regions(2, 12, 8, 96)]:
        timing = _Timing(region.predecessors(), issue_width)
        cur = [int(j) for j in random_topological_order(region, rng)]
        assert timing.reset(cur) == _length_at(region, cur, issue_width)
        for _ in range(4):
            new = [int(j) for j in random_topological_order(region, rng)]
            p = next((k for k, (a, b) in enumerate(zip(cur, new, strict=True)) if a != b), 0)
            true = _length_at(region, new, issue_width)
            assert timing.length(new, p, bound=10**9) == true
            assert timing.length(new, p, bound=true + 1) == true
            assert timing.length(new, p, bound=true) >= true


def _length_at(region: Region, order, issue_width: int) -> int:
    return int(issue_cycles(region, order, issue_width).max()) + 1


def test_schedule_results_are_hoisted_where_far_from_the_bound():
    """parboil's histo_final_kernel loop (gfx906, occupancy 10): every ant of the ILP pass dies
    and the list schedulers keep the input order (1,387 cycles); hoisted with registers up to
    the headroom of the level (21 of 24 VGPRs: the headroom rule keeps the top eighth free),
    the result is under 500 (the latency bound: 266; at its own peak, 18, it was 545)."""
    (region,) = load_regions(DATA / "histo_final_loop.gfx906.jsonl")
    machine = get_machine("gfx906")
    (result,) = jaxsched.schedule([region], machine, seed=0)
    assert result.hoisted and result.length < 500 < _length(region, range(len(region)))
    report = verify(region, machine, result.cycles, order=np.asarray(result.order))
    assert report.length == result.length
    assert report.peak_rp == result.peak_rp
    assert result.occupancy == report.occupancy == 10
    assert 18 < result.peak_rp["VGPR"] <= 21
    # Every ant dies in every iteration: 4 cautious iterations, then one that ends the pass.
    assert result.history["ilp_alive"] == [0] * 5


def test_a_dead_iteration_once_the_caution_is_spent_ends_the_pass():
    """The same loop with the caution capped at 2: the ILP pass ends after 3 iterations in
    which every ant died (it used to wait out its patience as well), with the same result."""
    (region,) = load_regions(DATA / "histo_final_loop.gfx906.jsonl")
    machine = get_machine("gfx906")
    params = jaxsched.default_params(caution_max=2.0)
    (result,) = jaxsched.schedule([region], machine, seed=0, params=params)
    assert result.iterations[1] == 3 and result.history["ilp_alive"] == [0] * 3
    (default,) = jaxsched.schedule([region], machine, seed=0)
    assert result.order == default.order
    verify(region, machine, result.cycles, order=np.asarray(result.order))


def test_the_guard_gets_orders_hoisted_toward_the_level_limit():
    """`mir_files`' hoisted candidates: a far region's order hoisted up to 4 and 8 VGPRs under
    its occupancy level's limit (24 at occupancy 10 on gfx906): shorter where it takes more
    registers, never above the cap."""
    from types import SimpleNamespace

    from jaxsched.heuristics import length_lower_bound
    from jaxsched.mir_files import _hoisted_to_level

    (region,) = load_regions(DATA / "histo_final_loop.gfx906.jsonl")
    machine = get_machine("gfx906")
    order = tuple(range(len(region)))
    own = verify(region, machine, issue_cycles(region, order), order=np.asarray(order))
    start = SimpleNamespace(
        order=order,
        peak_rp=own.peak_rp,
        rp_cost=own.rp_cost,
        source="input",
        length=own.length,
        length_lower_bound=length_lower_bound(region, machine),
    )
    found = _hoisted_to_level([region], [start], [10], machine)
    for below in (4, 8):
        (hoisted,) = found[f"ours-hoist{below}"]
        cycles = issue_cycles(region, hoisted)
        report = verify(region, machine, cycles, order=np.asarray(hoisted))
        assert report.peak_rp["VGPR"] <= max(24 - below, own.peak_rp["VGPR"])
        assert report.occupancy == 10 and report.length < own.length
