"""Length and RP lower bounds: host == JAX, never above any verified schedule, known answers.

The batch tests share one set of regions (`regions`: generated, and loads where the
register-time bound binds), one padded shape and one batch size, and trace the issue width:
one compile for the JAX bounds and in-order issue (`jax_side`), one per mode and occupancy
table for the list schedules (`schedules`)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from compile_count import Compiles
from helpers import peaks_of, random_topological_order

from jaxsched.heuristics import issue_cycles, length_lower_bound, order_peak_rp, rp_lower_bound
from jaxsched.heuristics.bounds import (
    head_times,
    head_times_jax,
    length_lower_bound_at,
    length_lower_bound_jax,
    rp_peak_lower_bound_jax,
    simple_length_lower_bound,
)
from jaxsched.heuristics.host_schedule import list_schedule_host
from jaxsched.heuristics.list_scheduler import (
    DEFAULT_PRIORITY,
    PRIORITIES,
    list_schedule_batch,
    stall_schedule,
)
from jaxsched.machines.model import generic, gfx906
from jaxsched.problem.generate import generate_region, generate_regions
from jaxsched.problem.padded import PaddedShape, common_shape, pad_region, stack
from jaxsched.problem.region import Region
from jaxsched.verify import verify, verify_order

MACHINE = gfx906()
WIDE = generic(issue_width=2)
TIGHT = generic(registers_per_file=48, max_occupancy=8)
#: (count, width, latency) of the `loads` regions.
LOADS = [(6, 8, 20), (10, 4, 80), (16, 2, 40), (5, 1, 9), (6, 5, 20), (9, 3, 30)]
#: Random topological orders per region issued in order (`jax_side`).
ROUNDS = 3


@jax.jit
def _jax_side(dev, orders, issue_width):
    """Per region of ``dev`` [B, ...]: (length lower bound, RP peak lower bound int32[F],
    heads int32[N], and the cycles int32[N] and peak RP int32[F] of issuing ``orders``
    (int32[B, N]) in order). The issue width (int32[]) is traced: one compile for both."""

    def one(d, o):
        cycles, _ = stall_schedule(d, o, issue_width)
        bounds = (length_lower_bound_jax(d, issue_width), rp_peak_lower_bound_jax(d))
        return (*bounds, head_times_jax(d), cycles, order_peak_rp(d, o))

    return jax.vmap(one)(dev, orders)


@pytest.fixture(scope="module")
def regions() -> list[Region]:
    """120 generated regions of 2..128 instructions and the 8 load regions (`loads`,
    `framed_loads`): 128, a power of two (`list_schedule_batch` pads nothing)."""
    out = generate_regions(23, 120, 2, 128)
    out += [loads(c, w, lat) for c, w, lat in LOADS]
    out += [framed_loads(6, 8, 20, 10, 5), framed_loads(7, 4, 30, 3, 0)]
    assert len(out) == 128
    return out


@pytest.fixture(scope="module")
def shape(regions) -> PaddedShape:
    """One padded shape holding every region on every machine here."""
    out = common_shape(regions, MACHINE)
    for machine in (WIDE, TIGHT):
        out = out.join(common_shape(regions, machine))
    return out


@pytest.fixture(scope="module")
def jax_side(regions, shape):
    """machine -> per round: (orders (random topological orders, one per region), what
    `_jax_side` returns for them); computed once per machine."""
    cache: dict = {}

    def get(machine):
        if id(machine) not in cache:
            rng = np.random.default_rng(5)
            dev, _ = stack(regions, machine, shape)
            rounds = []
            for _ in range(ROUNDS):
                orders = [random_topological_order(r, rng) for r in regions]
                padded = np.full((len(regions), shape.n), shape.n, np.int32)
                for b, order in enumerate(orders):
                    padded[b, : len(order)] = order
                out = _jax_side(dev, padded, np.int32(machine.issue_width))
                rounds.append((orders, jax.device_get(out)))
            cache[id(machine)] = rounds
        return cache[id(machine)]

    return get


@pytest.fixture(scope="module")
def schedules(regions, shape):
    """(machine, priority, latencies) -> the list schedules of `regions` (one batch of
    ``shape``: one compile per machine and mode, the priority as traced codes)."""
    cache: dict = {}

    def get(machine, priority, latencies: bool):
        key = (id(machine), priority, latencies)
        if key not in cache:
            cache[key] = list_schedule_batch(
                regions, machine, priority=priority, latencies=latencies, shape=shape
            )
        return cache[key]

    return get


# ------------------------------------------------------------------------------ host == JAX
@pytest.mark.parametrize("machine", [MACHINE, WIDE], ids=["width1", "width2"])
def test_host_and_jax_bounds_agree(regions, jax_side, machine):
    _, (length, peaks, *_) = jax_side(machine)[0]
    for b, region in enumerate(regions):
        assert int(length[b]) == length_lower_bound(region, machine), region.name
        host, cost = rp_lower_bound(region, machine)
        assert list(peaks[b]) == list(host.values()), region.name
        assert cost == machine.rp_cost(list(host.values()))


def test_head_times_match_jax_relaxation(regions, jax_side):
    _, (_, _, heads, *_) = jax_side(MACHINE)[0]
    for b, region in enumerate(regions):
        np.testing.assert_array_equal(heads[b, : len(region)], head_times(region))
        # head + tail never exceeds the critical path
        assert np.all(head_times(region) + region.critical_path() <= region.critical_path_length())


# ------------------------------------------------------------------------------ validity
@pytest.mark.parametrize("machine", [MACHINE, WIDE], ids=["width1", "width2"])
def test_bounds_below_every_list_schedule(regions, schedules, machine):
    lbs = [length_lower_bound(r, machine) for r in regions]
    rps = [rp_lower_bound(r, machine) for r in regions]
    for priority in [*((p,) for p in PRIORITIES), ("luc", "cp", "nid"), ("cp", "luc", "nid")]:
        for latencies in (False, True):
            out = schedules(machine, priority, latencies)
            for region, s, lb, (rp, cost) in zip(regions, out, lbs, rps, strict=True):
                rep = verify(region, machine, s.cycles, order=s.order, latencies=latencies)
                if latencies:
                    assert lb <= rep.length, (region.name, priority)
                assert all(rp[f] <= rep.peak_rp[f] for f in machine.file_names), region.name
                assert cost <= rep.rp_cost


@pytest.mark.parametrize("machine", [MACHINE, WIDE], ids=["width1", "width2"])
def test_bounds_below_random_orders(regions, jax_side, machine):
    lbs = [length_lower_bound(r, machine) for r in regions]
    rps = [rp_lower_bound(r, machine) for r in regions]
    for orders, (*_, cycles, peaks) in jax_side(machine):
        for b, (region, order) in enumerate(zip(regions, orders, strict=True)):
            rep = verify(region, machine, cycles[b, : len(region)], order=order)
            rp_rep = verify_order(region, machine, order)
            assert list(peaks[b]) == peaks_of(rp_rep, machine)
            assert lbs[b] <= rep.length, region.name
            rp, cost = rps[b]
            assert all(rp[f] <= rp_rep.peak_rp[f] for f in machine.file_names), region.name
            assert cost <= rp_rep.rp_cost


def test_length_bound_at_least_simple_bound(regions):
    tighter = 0
    for region in regions:
        lb = length_lower_bound(region, MACHINE)
        simple = simple_length_lower_bound(region, MACHINE)
        cp = int(region.critical_path().max())
        assert simple == max(cp + 1, len(region))
        assert lb >= simple
        tighter += lb > simple
    assert tighter > 0  # the head/tail relaxation does improve on generated regions


# ------------------------------------------------------------------------------ known answers
def _region(n, edges, instructions=None, registers=None, **kw) -> Region:
    insts = instructions or [{"text": f"i{k}"} for k in range(n)]
    return Region.build("hand", insts, registers or {}, edges, **kw)


#: Three generated regions (bucket 64) the single-region JAX bounds are checked on.
THREE = [generate_region(s, n) for s, n in [(1, 40), (2, 60), (3, 33)]]
#: One padded shape for every single region below (`_one_bounds`: one compile).
ONE_SHAPE = common_shape(THREE, MACHINE)


@jax.jit
def _one_bounds(dev):
    """(int32[] length lower bound at issue width 1, int32[F] RP peak lower bound) of one
    region padded to `ONE_SHAPE`."""
    return length_lower_bound_jax(dev, 1), rp_peak_lower_bound_jax(dev)


def _cp_list_length(region: Region) -> int:
    """The length of the region's critical-path-first list schedule (the host scheduler,
    equal to the device one: tests/test_heuristics.py)."""
    dev = pad_region(region, MACHINE)
    s = list_schedule_host(dev, MACHINE.occupancy_lut, priority="cp", latencies=True)
    return int(s.length)


def test_fan_out_bound_beats_critical_path():
    # s -> x, y, z with latency 5: heads 5, 5, 5; three issues from cycle 5 on: length 8.
    region = _region(4, [(0, 1, 5), (0, 2, 5), (0, 3, 5)])
    assert simple_length_lower_bound(region, MACHINE) == 6
    assert length_lower_bound(region, MACHINE) == 8
    assert length_lower_bound(region, WIDE) == 7  # two issue at cycle 5, one at 6
    assert int(_one_bounds(pad_region(region, MACHINE, ONE_SHAPE))[0]) == 8
    assert _cp_list_length(region) == 8  # the bound is reached


def test_fan_in_bound_uses_tails():
    # a, b, c -> t with latency 4: a, b, c take cycles 0..2, t issues at 2 + 4: length 7.
    region = _region(4, [(0, 3, 4), (1, 3, 4), (2, 3, 4)])
    assert simple_length_lower_bound(region, MACHINE) == 5
    assert length_lower_bound(region, MACHINE) == 7
    assert _cp_list_length(region) == 7


def test_resource_bound_on_independent_instructions():
    region = _region(5, [])
    assert length_lower_bound(region, MACHINE) == 5
    assert length_lower_bound(region, WIDE) == 3


def test_rp_bound_respects_uses_before_defs():
    # i0 defines a; i1 uses a (its last use) and defines b (live-out). a dies before b is
    # born, so the peak is 1, not uses + defs = 2.
    region = _region(
        2,
        [(0, 1, 1)],
        instructions=[{"defs": ["a"]}, {"uses": ["a"], "defs": ["b"]}],
        registers={"a": {"file": "VGPR"}, "b": {"file": "VGPR"}},
        live_out=["b"],
    )
    rp, cost = rp_lower_bound(region, MACHINE)
    assert rp == {"VGPR": 1, "SGPR": 0}
    assert cost == 0
    assert verify_order(region, MACHINE, [0, 1]).peak_rp["VGPR"] == 1
    assert list(np.asarray(_one_bounds(pad_region(region, MACHINE, ONE_SHAPE))[1])) == [1, 0]


def test_rp_bound_counts_uses_that_stay_live():
    # a (width 2) is live-in; i0 uses a and defines b; i1 uses a and b. After i0, a (still
    # needed by i1) and b are live together: 3, plus live-through 4.
    region = _region(
        2,
        [(0, 1, 1)],
        instructions=[{"uses": ["a"], "defs": ["b"]}, {"uses": ["a", "b"]}],
        registers={"a": {"file": "VGPR", "width": 2}, "b": {"file": "VGPR"}},
        live_through={"VGPR": 4, "SGPR": 1},
    )
    rp, _ = rp_lower_bound(region, MACHINE)
    assert rp == {"VGPR": 7, "SGPR": 1}
    assert verify_order(region, MACHINE, [0, 1]).peak_rp == rp


def test_rp_cost_bound_from_machine():
    # 30 live-in VGPRs used by one instruction: occupancy 8 at best, cost 2 on gfx906.
    regs = {f"v{k}": {"file": "VGPR"} for k in range(30)}
    region = _region(1, [], instructions=[{"uses": list(regs)}], registers=regs)
    rp, cost = rp_lower_bound(region, MACHINE)
    assert rp["VGPR"] == 30 and cost == MACHINE.rp_cost([30, 0]) == 2


def test_no_recompile_and_jit_equals_eager():
    """Regions padded to one shape compile once; the eager functions agree with the jitted
    ones (on one region: eager runs each operation on its own)."""
    _one_bounds(pad_region(THREE[0], MACHINE, ONE_SHAPE))  # compiled here, if not yet
    with Compiles() as compiles:
        got = [_one_bounds(pad_region(r, MACHINE, ONE_SHAPE)) for r in THREE]
    assert compiles.count == 0
    for r, (lb, rp) in zip(THREE, got, strict=True):
        assert int(lb) == length_lower_bound(r, MACHINE)
        host, _ = rp_lower_bound(r, MACHINE)
        assert list(np.asarray(rp)) == list(host.values())
    dev = pad_region(THREE[0], MACHINE, ONE_SHAPE)
    with jax.disable_jit():
        lb_e, rp_e = length_lower_bound_jax(dev, 1), rp_peak_lower_bound_jax(dev)
    assert int(lb_e) == int(got[0][0])
    np.testing.assert_array_equal(np.asarray(rp_e), np.asarray(got[0][1]))


def test_bad_issue_width():
    dev = pad_region(generate_region(1, 8), MACHINE)
    with pytest.raises(ValueError, match="issue_width"):
        length_lower_bound_jax(dev, 0)
    assert jax.eval_shape(lambda d: length_lower_bound_jax(d, 3), dev).dtype == jnp.int32


# ------------------------------------------------------------------------------ at occupancy


def loads(count: int, width: int, latency: int) -> Region:
    """``count`` independent ``width``-wide loads, each used ``latency`` cycles later."""
    regs = {f"v{k}": ("VGPR", width) for k in range(count)}
    insts = [{"defs": [f"v{k}"], "uses": []} for k in range(count)]
    insts += [{"defs": [], "uses": [f"v{k}"]} for k in range(count)]
    return Region.build("loads", insts, regs, [(k, count + k, latency) for k in range(count)])


def framed_loads(count: int, width: int, latency: int, before: int, after: int) -> Region:
    """`loads` between an address computation (an SGPR, ``before`` cycles to every load) and
    a final instruction (``after`` cycles after every use): the loaded values can be live
    only in the cycles between."""
    regs = {f"v{k}": ("VGPR", width) for k in range(count)} | {"s": ("SGPR", 1)}
    insts = [{"defs": ["s"], "uses": []}]
    insts += [{"defs": [f"v{k}"], "uses": ["s"]} for k in range(count)]
    insts += [{"defs": [], "uses": [f"v{k}"]} for k in range(count)]
    insts += [{"defs": [], "uses": []}]
    last = 2 * count + 1
    edges = [(0, 1 + k, before) for k in range(count)]
    edges += [(1 + k, 1 + count + k, latency) for k in range(count)]
    edges += [(1 + count + k, last, after) for k in range(count)]
    return Region.build("framed", insts, regs, edges)


@pytest.mark.parametrize("machine", [MACHINE, TIGHT], ids=["gfx906", "tight"])
def test_bound_at_occupancy_below_random_orders_and_list_schedules(regions, schedules, machine):
    """Every schedule reaching an occupancy is at least `length_lower_bound_at` it (generated
    regions, and load regions where the register-time bound binds)."""
    rng = np.random.default_rng(11)
    pick = [k for k, r in enumerate(regions[: -len(LOADS) - 2]) if len(r) <= 64][:30]
    pick += range(len(regions) - len(LOADS) - 2, len(regions))  # the loads
    # The list schedules of every region: one batch per priority (one compile per machine).
    listed = [
        schedules(machine, priority, True) for priority in (("cp", "luc", "nid"), DEFAULT_PRIORITY)
    ]
    active = 0
    for k in pick:
        region = regions[k]
        orders = [random_topological_order(region, rng) for _ in range(6)]
        orders += [np.asarray(out[k].order) for out in listed]
        bounds = {}  # occupancy -> bound
        for order in orders:
            rep = verify(region, machine, issue_cycles(region, order), order=order)
            if rep.occupancy not in bounds:
                bounds[rep.occupancy] = length_lower_bound_at(region, machine, rep.occupancy)
            bound = bounds[rep.occupancy]
            assert bound <= rep.length, (region.name, bound, rep.length)
            active += bound > length_lower_bound(region, machine)
    assert active > 0  # the register-time area bound binds somewhere


def test_bound_at_occupancy_known_answer():
    """Six 8-wide loads with 20-cycle latency at occupancy 10 (24 VGPRs): 6 * 8 * 20 register
    cycles through 24 registers take at least 40 cycles, and the last cycle holds none (a
    value dies at its last use's cycle, and a use ends the schedule at the latest): 41. The
    latency bound is 26 (six loads, then a 20-cycle latency)."""
    region = loads(6, 8, 20)
    assert length_lower_bound(region, MACHINE) == 26
    assert length_lower_bound_at(region, MACHINE, 10) == 41
    assert length_lower_bound_at(region, MACHINE, 1) == 26  # 256 VGPRs: all loads fit


def test_bound_at_occupancy_counts_slots_when_wide_values_do_not_pack():
    """Six 5-wide loads (20-cycle latency) in 24 VGPRs: only 4 fit at once, so 6 * 20 load
    cycles through 4 slots take at least 30 cycles (the area argument gives 6 * 5 * 20 / 24,
    i.e. 25, and the latency bound 26); every schedule at occupancy 10 is at least that."""
    region = loads(6, 5, 20)
    assert length_lower_bound_at(region, MACHINE, 10) == 31  # + the last cycle, as above
    _check_at_occupancy_10(region, 31, seed=3)


def test_bound_at_occupancy_adds_the_cycles_the_dependences_keep_values_out_of():
    """Six 8-wide loads as above, born no earlier than cycle 10 (their address) and dead at
    least 5 cycles before the end (the final instruction): 40 + 10 + 5 + 1 = 56 cycles."""
    region = framed_loads(6, 8, 20, 10, 5)
    assert length_lower_bound_at(region, MACHINE, 10) == 56
    _check_at_occupancy_10(region, 56, seed=4)


def _check_at_occupancy_10(region: Region, bound: int, seed: int) -> None:
    """Random orders reaching occupancy 10 are at least ``bound`` long (and some do)."""
    rng = np.random.default_rng(seed)
    seen = 0
    for _ in range(300):
        order = random_topological_order(region, rng)
        rep = verify(region, MACHINE, issue_cycles(region, order), order=order)
        if rep.occupancy >= 10:
            assert rep.length >= bound
            seen += 1
    assert seen > 0
