"""Length and RP lower bounds: host == JAX, never above any verified schedule, known answers."""

from __future__ import annotations

from functools import partial

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import peaks_of, random_topological_order

from jaxsched.heuristics import length_lower_bound, order_peak_rp, rp_lower_bound
from jaxsched.heuristics.bounds import (
    head_times,
    length_lower_bound_jax,
    rp_peak_lower_bound_jax,
    simple_length_lower_bound,
)
from jaxsched.heuristics.list_scheduler import PRIORITIES, list_schedule_batch, stall_schedule
from jaxsched.machines.model import generic, gfx906
from jaxsched.problem.generate import generate_region, generate_regions
from jaxsched.problem.padded import common_shape, pad_region, stack
from jaxsched.problem.region import Region
from jaxsched.verify import verify, verify_order

MACHINE = gfx906()
WIDE = generic(issue_width=2)


@partial(jax.jit, static_argnames=("issue_width",))
def _bounds_jax(dev, *, issue_width):
    return jax.vmap(lambda d: (length_lower_bound_jax(d, issue_width), rp_peak_lower_bound_jax(d)))(
        dev
    )


@partial(jax.jit, static_argnames=("issue_width",))
def _issue(dev, orders, *, issue_width):
    def one(d, o):
        cycles, _ = stall_schedule(d, o, issue_width)
        return cycles, order_peak_rp(d, o)

    return jax.vmap(one)(dev, orders)


@pytest.fixture(scope="module")
def regions() -> list[Region]:
    return generate_regions(23, 160, 2, 512)


# ------------------------------------------------------------------------------ host == JAX
@pytest.mark.parametrize("machine", [MACHINE, WIDE], ids=["width1", "width2"])
def test_host_and_jax_bounds_agree(regions, machine):
    dev, _ = stack(regions, machine)
    length, peaks = jax.device_get(_bounds_jax(dev, issue_width=machine.issue_width))
    for b, region in enumerate(regions):
        assert int(length[b]) == length_lower_bound(region, machine), region.name
        host, cost = rp_lower_bound(region, machine)
        assert list(peaks[b]) == list(host.values()), region.name
        assert cost == machine.rp_cost(list(host.values()))


def test_head_times_match_jax_relaxation(regions):
    from jaxsched.heuristics.bounds import _head_times_jax

    sub = regions[:40]
    dev, _ = stack(sub, MACHINE)
    heads = jax.device_get(jax.jit(jax.vmap(_head_times_jax))(dev))
    for b, region in enumerate(sub):
        np.testing.assert_array_equal(heads[b, : len(region)], head_times(region))
        # head + tail never exceeds the critical path
        assert np.all(head_times(region) + region.critical_path() <= region.critical_path_length())


# ------------------------------------------------------------------------------ validity
@pytest.mark.parametrize("machine", [MACHINE, WIDE], ids=["width1", "width2"])
def test_bounds_below_every_list_schedule(regions, machine):
    regions = [r for r in regions if len(r) <= 128][:80]  # every priority, both modes: keep small
    shape = common_shape(regions, machine)
    lbs = [length_lower_bound(r, machine) for r in regions]
    rps = [rp_lower_bound(r, machine) for r in regions]
    for priority in [*PRIORITIES, ("luc", "cp", "nid"), ("cp", "luc", "nid")]:
        for latencies in (False, True):
            out = list_schedule_batch(
                regions, machine, priority=priority, latencies=latencies, shape=shape
            )
            for region, s, lb, (rp, cost) in zip(regions, out, lbs, rps, strict=True):
                rep = verify(region, machine, s.cycles, order=s.order, latencies=latencies)
                if latencies:
                    assert lb <= rep.length, (region.name, priority)
                assert all(rp[f] <= rep.peak_rp[f] for f in machine.file_names), region.name
                assert cost <= rep.rp_cost


@pytest.mark.parametrize("machine", [MACHINE, WIDE], ids=["width1", "width2"])
def test_bounds_below_random_orders(regions, machine):
    rng = np.random.default_rng(5)
    sub = regions[:100]
    dev, shape = stack(sub, machine)
    for _ in range(3):
        orders = [random_topological_order(r, rng) for r in sub]
        o = np.full((len(sub), shape.n), shape.n, np.int32)
        for b, order in enumerate(orders):
            o[b, : len(order)] = order
        cycles, peaks = jax.device_get(_issue(dev, o, issue_width=machine.issue_width))
        for b, (region, order) in enumerate(zip(sub, orders, strict=True)):
            rep = verify(region, machine, cycles[b, : len(region)], order=order)
            rp_rep = verify_order(region, machine, order)
            assert list(peaks[b]) == peaks_of(rp_rep, machine)
            assert length_lower_bound(region, machine) <= rep.length, region.name
            rp, cost = rp_lower_bound(region, machine)
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


def test_fan_out_bound_beats_critical_path():
    # s -> x, y, z with latency 5: heads 5, 5, 5; three issues from cycle 5 on: length 8.
    region = _region(4, [(0, 1, 5), (0, 2, 5), (0, 3, 5)])
    assert simple_length_lower_bound(region, MACHINE) == 6
    assert length_lower_bound(region, MACHINE) == 8
    assert length_lower_bound(region, WIDE) == 7  # two issue at cycle 5, one at 6
    dev = pad_region(region, MACHINE)
    assert int(jax.jit(length_lower_bound_jax, static_argnums=1)(dev, 1)) == 8
    (s,) = list_schedule_batch([region], MACHINE, priority="cp")
    assert s.length == 8  # the bound is reached


def test_fan_in_bound_uses_tails():
    # a, b, c -> t with latency 4: a, b, c take cycles 0..2, t issues at 2 + 4: length 7.
    region = _region(4, [(0, 3, 4), (1, 3, 4), (2, 3, 4)])
    assert simple_length_lower_bound(region, MACHINE) == 5
    assert length_lower_bound(region, MACHINE) == 7
    (s,) = list_schedule_batch([region], MACHINE, priority="cp")
    assert s.length == 7


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
    dev = pad_region(region, MACHINE)
    assert list(np.asarray(rp_peak_lower_bound_jax(dev))) == [1, 0]


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


def test_no_retrace_and_jit_equals_eager():
    regions = [generate_region(s, n) for s, n in [(1, 40), (2, 60), (3, 33)]]
    shape = common_shape(regions, MACHINE)

    @jax.jit
    @chex.assert_max_traces(n=1)
    def both(dev):
        return length_lower_bound_jax(dev, 1), rp_peak_lower_bound_jax(dev)

    for r in regions:
        dev = pad_region(r, MACHINE, shape)
        lb, rp = both(dev)
        with jax.disable_jit():
            lb_e, rp_e = length_lower_bound_jax(dev, 1), rp_peak_lower_bound_jax(dev)
        assert int(lb) == int(lb_e) == length_lower_bound(r, MACHINE)
        np.testing.assert_array_equal(np.asarray(rp), np.asarray(rp_e))
    chex.clear_trace_counter()


def test_bad_issue_width():
    dev = pad_region(generate_region(1, 8), MACHINE)
    with pytest.raises(ValueError, match="issue_width"):
        length_lower_bound_jax(dev, 0)
    assert jnp.asarray(length_lower_bound_jax(dev, 3)).dtype == jnp.int32


# ------------------------------------------------------------------------------ at occupancy
TIGHT = generic(registers_per_file=48, max_occupancy=8)


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
def test_bound_at_occupancy_below_random_orders_and_list_schedules(regions, machine):
    """Every schedule reaching an occupancy is at least `length_lower_bound_at` it (generated
    regions, and load regions where the register-time bound binds)."""
    from jaxsched.heuristics import issue_cycles
    from jaxsched.heuristics.bounds import length_lower_bound_at

    rng = np.random.default_rng(11)
    pool = [r for r in regions if len(r) <= 64][:30]
    pool += [
        loads(c, w, lat)
        for c, w, lat in [(6, 8, 20), (10, 4, 80), (16, 2, 40), (5, 1, 9), (6, 5, 20), (9, 3, 30)]
    ]
    pool += [framed_loads(6, 8, 20, 10, 5), framed_loads(7, 4, 30, 3, 0)]
    # The list schedules of the whole pool: one call per priority (one compile per bucket).
    listed = [
        list_schedule_batch(pool, machine, priority=priority, latencies=True)
        for priority in (("cp", "luc", "nid"), ("luc", "cp", "nid"))
    ]
    active = 0
    for k, region in enumerate(pool):
        orders = [random_topological_order(region, rng) for _ in range(6)]
        orders += [np.asarray(schedules[k].order) for schedules in listed]
        for order in orders:
            rep = verify(region, machine, issue_cycles(region, order), order=order)
            bound = length_lower_bound_at(region, machine, rep.occupancy)
            assert bound <= rep.length, (region.name, bound, rep.length)
            active += bound > length_lower_bound(region, machine)
    assert active > 0  # the register-time area bound binds somewhere


def test_bound_at_occupancy_known_answer():
    """Six 8-wide loads with 20-cycle latency at occupancy 10 (24 VGPRs): 6 * 8 * 20 register
    cycles through 24 registers take at least 40 cycles, and the last cycle holds none (a
    value dies at its last use's cycle, and a use ends the schedule at the latest): 41. The
    latency bound is 26 (six loads, then a 20-cycle latency)."""
    from jaxsched.heuristics.bounds import length_lower_bound_at

    region = loads(6, 8, 20)
    assert length_lower_bound(region, MACHINE) == 26
    assert length_lower_bound_at(region, MACHINE, 10) == 41
    assert length_lower_bound_at(region, MACHINE, 1) == 26  # 256 VGPRs: all loads fit


def test_bound_at_occupancy_counts_slots_when_wide_values_do_not_pack():
    """Six 5-wide loads (20-cycle latency) in 24 VGPRs: only 4 fit at once, so 6 * 20 load
    cycles through 4 slots take at least 30 cycles (the area argument gives 6 * 5 * 20 / 24,
    i.e. 25, and the latency bound 26); every schedule at occupancy 10 is at least that."""
    from jaxsched.heuristics.bounds import length_lower_bound_at

    region = loads(6, 5, 20)
    assert length_lower_bound_at(region, MACHINE, 10) == 31  # + the last cycle, as above
    _check_at_occupancy_10(region, 31, seed=3)


def test_bound_at_occupancy_adds_the_cycles_the_dependences_keep_values_out_of():
    """Six 8-wide loads as above, born no earlier than cycle 10 (their address) and dead at
    least 5 cycles before the end (the final instruction): 40 + 10 + 5 + 1 = 56 cycles."""
    from jaxsched.heuristics.bounds import length_lower_bound_at

    region = framed_loads(6, 8, 20, 10, 5)
    assert length_lower_bound_at(region, MACHINE, 10) == 56
    _check_at_occupancy_10(region, 56, seed=4)


def _check_at_occupancy_10(region: Region, bound: int, seed: int) -> None:
    """Random orders reaching occupancy 10 are at least ``bound`` long (and some do)."""
    from jaxsched.heuristics import issue_cycles

    rng = np.random.default_rng(seed)
    seen = 0
    for _ in range(300):
        order = random_topological_order(region, rng)
        rep = verify(region, MACHINE, issue_cycles(region, order), order=order)
        if rep.occupancy >= 10:
            assert rep.length >= bound
            seen += 1
    assert seen > 0
