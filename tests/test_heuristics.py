"""List scheduler, stall schedule and order RP: every schedule checked by `jaxsched.verify`, the
choices replayed by an independent plain-Python list scheduler, and the host scheduler
(`jaxsched.heuristics.host_schedule`, a Python loop over the candidates) equal to the device one
(a fixed-shape `lax` loop) on every region, priority, mode and issue width.

The gfx906 batches share one padded shape and batch size (`REGIONS`, `SHAPE`): one compile per
mode, every priority as traced codes."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from compile_count import Compiles
from helpers import peaks_of, random_topological_order

from jaxsched.heuristics import (
    HeuristicError,
    heuristic_schedule,
    issue_cycles,
    list_schedule,
    order_peak_rp,
)
from jaxsched.heuristics.host_schedule import (
    host_region,
    list_schedule_host,
    order_peak_rp_host,
    stall_schedule_host,
)
from jaxsched.heuristics.list_scheduler import (
    DEFAULT_PRIORITY,
    DEFAULT_TARGET,
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
WIDE = generic(issue_width=2)
COMBOS = [("luc", "cp", "nid"), ("cp", "luc", "nid"), ("succ", "cp"), ("nid", "cp")]
ALL_PRIORITIES = [(p,) for p in PRIORITIES] + COMBOS
#: Every batch test's regions: 48 of 2..32 instructions (`SMALL`: replayed by the reference),
#: then 80 of 2..128; 128 in all (a power of two: `list_schedule_batch` pads nothing).
SMALL = 48
REGIONS = generate_regions(5, SMALL, 2, 32) + generate_regions(11, 80, 2, 128)
#: One padded shape for all (bucket 128's): one compile per mode and machine.
SHAPE = common_shape(REGIONS, MACHINE).join(common_shape(REGIONS, WIDE))


# ------------------------------------------------------------------------------ helpers


@partial(jax.jit, static_argnames=("issue_width",))
def _stall_and_peak(dev, orders, *, issue_width):
    def one(d, o):
        cycles, length = stall_schedule(d, o, issue_width)
        return cycles, length, order_peak_rp(d, o)

    return jax.vmap(one)(dev, orders)


def stall_and_peak(orders, machine=MACHINE, regions=REGIONS):
    """Per region of ``regions`` (a permutation of `REGIONS`): (cycles int[n], length, peak
    int[F]) of issuing ``orders[i]`` in order. All are padded to `SHAPE`: one batch, one
    compile per issue width."""
    dev, shape = stack(regions, machine, SHAPE)
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
def schedules():
    """(machine name, priority, latencies) -> the `HostSchedule`s of `REGIONS` (computed on
    first use: every batch has `SHAPE` and 128 regions, so each mode compiles once)."""
    cache: dict = {}

    def get(priority: tuple[str, ...], latencies: bool, machine=MACHINE):
        key = (machine.name, priority, latencies)
        if key not in cache:
            cache[key] = list_schedule_batch(
                REGIONS, machine, priority=priority, latencies=latencies, shape=SHAPE
            )
        return cache[key]

    return get


@pytest.fixture(scope="module")
def host_regions():
    """`REGIONS` padded to `SHAPE` as the host scheduler reads them (`host_region`)."""
    return [host_region(pad_region(r, MACHINE, SHAPE)) for r in REGIONS]


def assert_host_equals(hr, machine, s, priority, latencies: bool, what: str) -> None:
    """The host scheduler on the padded region ``hr`` gives the device's `HostSchedule` ``s``
    exactly (order, cycles, length, peak, occupancy, RP cost)."""
    h = list_schedule_host(
        hr, machine.occupancy_lut, priority=priority, latencies=latencies,
        issue_width=machine.issue_width, target=machine.target_occupancy,
    )  # fmt: skip
    n = hr.n
    np.testing.assert_array_equal(h.order[:n], s.order, err_msg=what)
    assert np.all(h.order[n:] == hr.N), what
    np.testing.assert_array_equal(h.cycles[:n], s.cycles, err_msg=what)
    np.testing.assert_array_equal(h.peak, s.peak, err_msg=what)
    assert (h.length, h.occupancy, h.rp_cost) == (s.length, s.occupancy, s.rp_cost), what


# ------------------------------------------------------------------------------ tests
@pytest.mark.parametrize("latencies", [False, True])
def test_default_priority_verified_on_many(schedules, host_regions, latencies):
    """Every region's schedule verified; the host scheduler's equal to it."""
    priority = DEFAULT_PRIORITY if not latencies else DEFAULT_TARGET
    out = schedules(priority, latencies)
    assert len(out) == len(REGIONS) == 128
    assert 64 < max(len(r) for r in REGIONS) <= SHAPE.n == 128
    for region, hr, s in zip(REGIONS, host_regions, out, strict=True):
        check(region, MACHINE, s, latencies)
        assert_host_equals(hr, MACHINE, s, priority, latencies, region.name)


@pytest.mark.parametrize("latencies", [False, True])
@pytest.mark.parametrize("priority", ALL_PRIORITIES, ids=lambda p: "-".join(p))
def test_priorities_match_reference(schedules, host_regions, priority, latencies):
    """Each priority: the schedules of the small regions verified, replayed by the reference
    scheduler, and the host scheduler's equal to them."""
    out = schedules(priority, latencies)
    for region, hr, s in zip(REGIONS[:SMALL], host_regions, out, strict=False):
        check(region, MACHINE, s, latencies)
        ref_cycles, ref_order = reference_list_schedule(region, priority, latencies)
        np.testing.assert_array_equal(s.order, ref_order, err_msg=region.name)
        np.testing.assert_array_equal(s.cycles, ref_cycles, err_msg=region.name)
        assert_host_equals(hr, MACHINE, s, priority, latencies, region.name)


def test_nid_rp_order_is_smallest_id_topological_order(schedules):
    for region, s in zip(REGIONS, schedules(("nid",), False), strict=True):
        assert list(s.order) == region.topological_order()


def test_latency_schedules_are_non_delay(schedules):
    """No instruction could have issued in an earlier cycle that had a free slot."""
    for region, s in zip(REGIONS, schedules(DEFAULT_PRIORITY, True), strict=True):
        check(region, MACHINE, s, True)
        count = np.bincount(s.cycles, minlength=s.length)
        for j, preds in enumerate(region.predecessors()):
            ready = max((s.cycles[p] + lat for p, lat in preds), default=0)
            assert np.all(count[ready : s.cycles[j]] >= MACHINE.issue_width), (region.name, j)


@pytest.mark.parametrize("priority", [("cp",), DEFAULT_PRIORITY], ids=["cp", "luc-cp-nid"])
def test_issue_width_two(schedules, host_regions, priority):
    """Issue width 2: verified, at most 2 per cycle, replayed by the reference on the small
    regions, and the host scheduler's equal on every region."""
    out = schedules(priority, True, WIDE)
    for k, (region, hr, s) in enumerate(zip(REGIONS, host_regions, out, strict=True)):
        rep = check(region, WIDE, s, True)
        assert np.bincount(s.cycles).max() <= 2
        assert rep.length >= -(-len(region) // 2)
        assert_host_equals(hr, WIDE, s, priority, True, region.name)
        if k < SMALL:
            ref_cycles, _ = reference_list_schedule(region, priority, True, issue_width=2)
            np.testing.assert_array_equal(s.cycles, ref_cycles)


def test_stall_schedule_of_list_order_reproduces_list_cycles(schedules):
    out = schedules(DEFAULT_TARGET, True)
    stalled = stall_and_peak([s.order for s in out])
    for s, (cycles, length, peak) in zip(out, stalled, strict=True):
        np.testing.assert_array_equal(cycles, s.cycles)
        assert length == s.length
        np.testing.assert_array_equal(peak, s.peak)


@pytest.mark.parametrize("machine", [MACHINE, WIDE], ids=["width1", "width2"])
def test_stall_schedule_and_order_peak_on_random_orders(host_regions, machine):
    """Random topological orders issued in order: verified, each instruction at the earliest
    cycle the order allows; the host's `stall_schedule_host`, `order_peak_rp_host` and
    `issue_cycles` equal."""
    rng = np.random.default_rng(3)
    orders = [random_topological_order(r, rng) for r in REGIONS]
    iw = machine.issue_width
    for region, hr, order, (cycles, length, peak) in zip(
        REGIONS, host_regions, orders, stall_and_peak(orders, machine), strict=True
    ):
        rep = verify(region, machine, cycles, order=order, latencies=True)
        assert rep.order == tuple(order)  # same order, stalls inserted
        assert rep.length == length
        assert list(peak) == peaks_of(rep, machine)
        assert np.bincount(cycles).max() <= iw
        # In-order issue: each instruction at the earliest cycle the order allows.
        prev, used = 0, 0
        for k, j in enumerate(order):
            ready = max((cycles[p] + lat for p, lat in region.predecessors()[j]), default=0)
            expect = max(ready, prev + 1 if k and used >= iw else prev)
            assert cycles[j] == expect, (region.name, k)
            used = used + 1 if cycles[j] == prev and k else 1
            prev = cycles[j]
        padded = np.full(hr.N, hr.N, np.int32)
        padded[: len(order)] = order
        host_cycles, host_length = stall_schedule_host(hr, padded, iw)
        np.testing.assert_array_equal(host_cycles[: len(order)], cycles)
        assert host_length == length
        np.testing.assert_array_equal(order_peak_rp_host(hr, padded), peak)
        np.testing.assert_array_equal(issue_cycles(region, order, iw), cycles)


@pytest.mark.parametrize("kernel", ["sgemm_tile.gfx906.mir", "stencil.gfx906.mir"])
def test_order_peak_from_live_ranges_equals_the_step_loop(kernel):
    """`order_peak_rp_host` counts a whole order from its registers' live ranges; on real MIR
    regions (sub-register lanes, partial defs, live-in and live-out tuples) it gives the peaks
    of the step loop the list scheduler runs (`_issue_regs`), on random orders."""
    from jaxsched.heuristics import host_schedule
    from jaxsched.io.mir import read_mir

    module = read_mir(Path(__file__).parents[1] / "examples" / "kernels" / kernel)
    rng = np.random.default_rng(7)
    regions = [mr.region for mr in module.regions if mr.region is not None]
    assert regions
    for region in regions:
        hr = host_region(pad_region(region, MACHINE))
        assert hr.lives is not None
        for _ in range(3):
            order = random_topological_order(region, rng)
            regs = host_schedule._init_regs(hr)
            for j in order.tolist():
                host_schedule._issue_regs(hr, regs, j)
            np.testing.assert_array_equal(order_peak_rp_host(hr, order), regs.peak)


def test_no_recompile_within_the_shape(schedules):
    """Other regions in the same padded shape and batch size (`REGIONS` reversed) compile
    nothing: the list schedule, the stall schedule and the order's RP."""
    out = schedules(DEFAULT_PRIORITY, True)
    stall_and_peak([s.order for s in out])  # compiled here, if not yet
    others = REGIONS[::-1]
    with Compiles() as compiles:
        again = list_schedule_batch(others, MACHINE, priority=DEFAULT_PRIORITY, shape=SHAPE)
        stalled = stall_and_peak([s.order for s in again], regions=others)
    assert compiles.count == 0
    for region, s, (cycles, _, peak) in zip(others, again, stalled, strict=True):
        rep = verify(region, MACHINE, cycles, latencies=True)
        np.testing.assert_array_equal(cycles, s.cycles)
        assert list(peak) == peaks_of(rep, MACHINE)


#: One 16-instruction region for the `list_schedule_jit` tests (they share its compiles).
ONE = generate_region(7, 16)


def test_priority_codes_do_not_recompile():
    dev = pad_region(ONE, MACHINE)
    lut = jnp.asarray(MACHINE.occupancy_lut)
    list_schedule_jit(dev, lut, priority=DEFAULT_PRIORITY, latencies=True)  # compiled here
    with Compiles() as compiles:
        for priority in ALL_PRIORITIES:
            codes = priority_codes(priority)
            assert codes.shape == (len(PRIORITIES),)
            s = jax.device_get(list_schedule_jit(dev, lut, priority=codes, latencies=True))
            n = len(ONE)
            ref_cycles, ref_order = reference_list_schedule(ONE, priority, True)
            np.testing.assert_array_equal(s.order[:n], ref_order)
            np.testing.assert_array_equal(s.cycles[:n], ref_cycles)
    assert compiles.count == 0


@pytest.mark.parametrize("latencies", [False, True])
def test_jit_and_eager_agree(latencies):
    dev = pad_region(ONE, MACHINE)
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
    dev = pad_region(ONE, MACHINE)
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
