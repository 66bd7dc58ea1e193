"""List scheduler, stall schedule and order RP: every schedule checked by `jaxsched.verify`, and
the choices replayed by an independent plain-Python list scheduler."""

from __future__ import annotations

from functools import partial

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import peaks_of, random_topological_order

from jaxsched.heuristics import HeuristicError, heuristic_schedule, list_schedule, order_peak_rp
from jaxsched.heuristics.list_scheduler import (
    PRIORITIES,
    list_schedule_batch,
    list_schedule_jit,
    priority_codes,
    stall_schedule,
)
from jaxsched.machines.model import generic, gfx906
from jaxsched.problem.generate import generate_region, generate_regions
from jaxsched.problem.padded import common_shape, pad_region, stack
from jaxsched.problem.region import Region
from jaxsched.verify import verify

MACHINE = gfx906()
COMBOS = [("luc", "cp", "nid"), ("cp", "luc", "nid"), ("succ", "cp"), ("nid", "cp")]


# ------------------------------------------------------------------------------ helpers


@partial(jax.jit, static_argnames=("issue_width",))
def _stall_and_peak(dev, orders, *, issue_width):
    def one(d, o):
        cycles, length = stall_schedule(d, o, issue_width)
        return cycles, length, order_peak_rp(d, o)

    return jax.vmap(one)(dev, orders)


def stall_and_peak(regions, orders, machine=MACHINE):
    """Per region: (cycles int[n], length, peak int[F]) of issuing ``orders[i]`` in order.

    All regions are padded to one common shape: one batch, one compile.
    """
    dev, shape = stack(regions, machine)
    o = np.full((len(regions), shape.n), shape.n, np.int32)
    for b, order in enumerate(orders):
        o[b, : len(order)] = order
    cyc, length, peak = jax.device_get(_stall_and_peak(dev, o, issue_width=machine.issue_width))
    return [(cyc[b, : len(r)], int(length[b]), peak[b]) for b, r in enumerate(regions)]


def check(region, machine, s, latencies):
    """Verify a `HostSchedule` and compare everything it claims with the verifier."""
    rep = verify(region, machine, s.cycles, order=s.order, latencies=latencies)
    assert s.length == rep.length
    assert list(s.peak) == peaks_of(rep, machine)
    assert s.occupancy == rep.occupancy and s.rp_cost == rep.rp_cost
    assert tuple(s.order) == rep.order
    if not latencies:
        assert np.array_equal(s.cycles[s.order], np.arange(len(region)))
    return rep


# ------------------------------------------------------------------------------ reference
def reference_list_schedule(region: Region, priority, latencies: bool, issue_width: int = 1):
    """Plain-Python list scheduler (the documented algorithm, written independently)."""
    n = len(region)
    succ, pred = region.successors(), region.predecessors()
    if latencies:
        cp = [int(x) for x in region.critical_path()]
    else:
        cp = [0] * n
        for i in reversed(region.topological_order()):
            cp[i] = max((cp[j] + 1 for j, _ in succ[i]), default=0)
    remaining: dict[str, int] = {}
    for inst in region.instructions:
        for u in inst.uses:
            remaining[u] = remaining.get(u, 0) + 1
    live = set(region.live_in)
    live_out = set(region.live_out)

    def key(j):
        out = []
        for name in priority:
            if name == "cp":
                out.append(cp[j])
            elif name == "succ":
                out.append(len(succ[j]))
            elif name == "nid":
                out.append(-j)
            else:
                insts = region.instructions[j]
                out.append(
                    sum(remaining[u] == 1 and u in live and u not in live_out for u in insts.uses)
                )
        return (*out, -j)

    done = [False] * n
    cycles = [0] * n
    order = []
    cycle, used = 0, 0
    for k in range(n):
        cands = [j for j in range(n) if not done[j] and all(done[p] for p, _ in pred[j])]
        if latencies:
            ear = {j: max((cycles[p] + lat for p, lat in pred[j]), default=0) for j in cands}
            if used >= issue_width:
                cycle, used = cycle + 1, 0
            if not any(ear[j] <= cycle for j in cands):
                cycle, used = min(ear.values()), 0
            cands = [j for j in cands if ear[j] <= cycle]
        else:
            cycle = k
        j = max(cands, key=key)
        done[j], cycles[j] = True, cycle
        used += 1
        order.append(j)
        inst = region.instructions[j]
        for u in inst.uses:
            remaining[u] -= 1
            if remaining[u] == 0 and u not in live_out:
                live.discard(u)
        live.update(inst.defs)
        for d in inst.defs:
            if remaining.get(d, 0) == 0 and d not in live_out:
                live.discard(d)
    return np.array(cycles), np.array(order)


# ------------------------------------------------------------------------------ fixtures
@pytest.fixture(scope="module")
def many_regions() -> list[Region]:
    """Hundreds of generated regions, sizes 2..512 (log-uniform)."""
    return generate_regions(11, 240, 2, 512)


@pytest.fixture(scope="module")
def small_regions() -> list[Region]:
    return generate_regions(5, 48, 2, 32)


# ------------------------------------------------------------------------------ tests
@pytest.mark.parametrize("latencies", [False, True])
def test_default_priority_verified_on_hundreds(many_regions, latencies):
    priority = ("luc", "cp", "nid") if not latencies else ("cp", "luc", "nid")
    shape = common_shape(many_regions, MACHINE)  # one batch, one compile
    out = list_schedule_batch(
        many_regions, MACHINE, priority=priority, latencies=latencies, shape=shape
    )
    assert len(out) == len(many_regions)
    for region, s in zip(many_regions, out, strict=True):
        check(region, MACHINE, s, latencies)


@pytest.mark.parametrize("latencies", [False, True])
@pytest.mark.parametrize("priority", [*PRIORITIES, *COMBOS])
def test_priorities_match_reference(small_regions, priority, latencies):
    out = list_schedule_batch(small_regions, MACHINE, priority=priority, latencies=latencies)
    names = (priority,) if isinstance(priority, str) else priority
    for region, s in zip(small_regions, out, strict=True):
        check(region, MACHINE, s, latencies)
        ref_cycles, ref_order = reference_list_schedule(region, names, latencies)
        np.testing.assert_array_equal(s.order, ref_order, err_msg=region.name)
        np.testing.assert_array_equal(s.cycles, ref_cycles, err_msg=region.name)


def test_nid_rp_order_is_smallest_id_topological_order(small_regions):
    out = list_schedule_batch(small_regions, MACHINE, priority="nid", latencies=False)
    for region, s in zip(small_regions, out, strict=True):
        assert list(s.order) == region.topological_order()


def test_latency_schedules_are_non_delay(many_regions):
    """No instruction could have issued in an earlier cycle that had a free slot."""
    regions = many_regions[:80]
    out = list_schedule_batch(regions, MACHINE, shape=common_shape(regions, MACHINE))
    for region, s in zip(regions, out, strict=True):
        check(region, MACHINE, s, True)
        count = np.bincount(s.cycles, minlength=s.length)
        for j, preds in enumerate(region.predecessors()):
            ready = max((s.cycles[p] + lat for p, lat in preds), default=0)
            assert np.all(count[ready : s.cycles[j]] >= MACHINE.issue_width), (region.name, j)


@pytest.mark.parametrize("priority", ["cp", ("luc", "cp", "nid")])
def test_issue_width_two(small_regions, priority):
    machine = generic(issue_width=2)
    out = list_schedule_batch(small_regions, machine, priority=priority, latencies=True)
    for region, s in zip(small_regions, out, strict=True):
        rep = check(region, machine, s, True)
        assert np.bincount(s.cycles).max() <= 2
        names = (priority,) if isinstance(priority, str) else priority
        ref_cycles, _ = reference_list_schedule(region, names, True, issue_width=2)
        np.testing.assert_array_equal(s.cycles, ref_cycles)
        assert rep.length >= -(-len(region) // 2)


def test_stall_schedule_of_list_order_reproduces_list_cycles(many_regions):
    regions = many_regions[:120]
    out = list_schedule_batch(
        regions, MACHINE, priority=("cp", "luc", "nid"), shape=common_shape(regions, MACHINE)
    )
    stalled = stall_and_peak(regions, [s.order for s in out])
    for s, (cycles, length, peak) in zip(out, stalled, strict=True):
        np.testing.assert_array_equal(cycles, s.cycles)
        assert length == s.length
        np.testing.assert_array_equal(peak, s.peak)


def test_stall_schedule_and_order_peak_on_random_orders(many_regions):
    rng = np.random.default_rng(3)
    regions = many_regions[:120]
    orders = [random_topological_order(r, rng) for r in regions]
    for region, order, (cycles, length, peak) in zip(
        regions, orders, stall_and_peak(regions, orders), strict=True
    ):
        rep = verify(region, MACHINE, cycles, order=order, latencies=True)
        assert rep.order == tuple(order)  # same order, stalls inserted
        assert rep.length == length
        assert list(peak) == peaks_of(rep, MACHINE)
        # In-order issue: each instruction at the earliest cycle the order allows.
        prev = 0
        for k, j in enumerate(order):
            ready = max((cycles[p] + lat for p, lat in region.predecessors()[j]), default=0)
            expect = max(ready, prev + 1 if k else 0)
            assert cycles[j] == expect, (region.name, k)
            prev = cycles[j]


def test_stall_schedule_width_two():
    machine = generic(issue_width=2)
    rng = np.random.default_rng(8)
    regions = generate_regions(9, 30, 2, 60)
    orders = [random_topological_order(r, rng) for r in regions]
    for region, order, (cycles, length, _) in zip(
        regions, orders, stall_and_peak(regions, orders, machine), strict=True
    ):
        rep = verify(region, machine, cycles, order=order, latencies=True)
        assert rep.order == tuple(order) and rep.length == length
        assert np.bincount(cycles).max() <= 2


def test_no_retrace_within_bucket():
    regions = [generate_region(s, n) for s, n in [(1, 20), (2, 31), (3, 17), (4, 25)]]
    shape = common_shape(regions, MACHINE)
    lut = jnp.asarray(MACHINE.occupancy_lut)

    @jax.jit
    @chex.assert_max_traces(n=1)
    def run(dev):
        s = list_schedule(dev, lut, priority=("luc", "cp", "nid"), latencies=True)
        return s, stall_schedule(dev, s.order), order_peak_rp(dev, s.order)

    for r in regions:
        _, (cycles, _), peak = run(pad_region(r, MACHINE, shape))
        rep = verify(r, MACHINE, np.asarray(cycles)[: len(r)], latencies=True)
        assert list(np.asarray(peak)) == peaks_of(rep, MACHINE)
    chex.clear_trace_counter()


def test_priority_codes_do_not_recompile():
    region = generate_region(7, 30)
    dev = pad_region(region, MACHINE)
    lut = jnp.asarray(MACHINE.occupancy_lut)

    @jax.jit
    @chex.assert_max_traces(n=1)
    def run(codes):
        return list_schedule(dev, lut, priority=codes, latencies=True)

    for priority in [*PRIORITIES, *COMBOS]:
        codes = priority_codes(priority)
        assert codes.shape == (len(PRIORITIES),)
        s = jax.device_get(run(codes))
        n = len(region)
        names = (priority,) if isinstance(priority, str) else priority
        ref_cycles, ref_order = reference_list_schedule(region, names, True)
        np.testing.assert_array_equal(s.order[:n], ref_order)
        np.testing.assert_array_equal(s.cycles[:n], ref_cycles)
    chex.clear_trace_counter()


@pytest.mark.parametrize("latencies", [False, True])
def test_jit_and_eager_agree(latencies):
    region = generate_region(21, 12)
    dev = pad_region(region, MACHINE)
    lut = jnp.asarray(MACHINE.occupancy_lut)
    kw = dict(priority=("luc", "cp", "nid"), latencies=latencies, issue_width=1)
    jitted = list_schedule_jit(dev, lut, **kw)
    with jax.disable_jit():
        eager = list_schedule(dev, lut, **kw)
    chex.assert_trees_all_equal(jax.device_get(jitted), jax.device_get(eager))


def test_heuristic_schedule_host(small_region, gfx906_machine):
    cycles, order = heuristic_schedule(small_region, gfx906_machine)
    rep = verify(small_region, gfx906_machine, cycles, order=order, latencies=True)
    assert rep.order == tuple(order)
    cycles_rp, order_rp = heuristic_schedule(small_region, gfx906_machine, latencies=False)
    verify(small_region, gfx906_machine, cycles_rp, order=order_rp, latencies=False)


def test_target_sets_rp_cost():
    region = generate_region(4, 40)
    dev = pad_region(region, MACHINE)
    lut = jnp.asarray(MACHINE.occupancy_lut)
    s = list_schedule_jit(dev, lut, latencies=False, target=jnp.int32(10))
    assert int(s.rp_cost) == max(0, 10 - int(s.occupancy))
    s0 = list_schedule_jit(dev, lut, latencies=False, target=jnp.int32(0))
    assert int(s0.rp_cost) == 0


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(priority="lru"), "unknown name 'lru'"),
        (dict(priority=()), "at least one"),
        (dict(priority=("cp", "height")), "unknown name 'height'"),
        (dict(issue_width=0), "issue_width 0"),
        (dict(priority=np.zeros((2, 2), np.int32)), "int codes of shape"),
    ],
)
def test_bad_arguments(kwargs, match):
    dev = pad_region(generate_region(1, 8), MACHINE)
    lut = jnp.asarray(MACHINE.occupancy_lut)
    with pytest.raises(HeuristicError, match=match):
        list_schedule(dev, lut, latencies=True, **kwargs)
    assert issubclass(HeuristicError, ValueError)


def test_list_schedule_batch_rejects_bad_priority(small_region, gfx906_machine):
    with pytest.raises(HeuristicError, match="unknown name"):
        list_schedule_batch([small_region], gfx906_machine, priority="random")
    assert list_schedule_batch([], gfx906_machine) == []
