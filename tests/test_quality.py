"""Failure modes of the ILP pass under an RP target, pinned on small constructed regions:
ants that had to die, and the schedules now found. Every schedule verified."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import quick_jit

import jaxsched
from jaxsched import colony
from jaxsched.colony.construction import antstate, construct, prepared
from jaxsched.heuristics import list_schedule
from jaxsched.machines.model import rp_limits
from jaxsched.problem.padded import pad_region, padded_shape
from jaxsched.verify import verify, verify_order

MACHINE = jaxsched.gfx906()
LOADS = 6
LATENCY = 20

#: The device code the tests call, each compiled once per shape (called eagerly, each of its
#: loops compiles apart).
_construct = quick_jit(
    construct.construct_ants,
    static_argnames=("wavefronts", "wavefront_size", "uniform_exploration"),
)
_list_schedule = quick_jit(list_schedule, static_argnames=("priority", "latencies"))


def loads_region(loads: int = LOADS, width: int = 8, latency: int = LATENCY) -> jaxsched.Region:
    """``loads`` independent load -> use pairs: each load defines a ``width``-wide VGPR tuple
    that its use (a store) kills ``latency`` cycles later. At occupancy 10 (24 VGPRs) at most
    three loaded values fit at once, so the latency-greedy order (every load first) breaks the
    RP target, and the RP-greedy order (load, use, load, use, ...) stalls after every load."""
    regs = {f"v{k}": ("VGPR", width) for k in range(loads)}
    insts = [{"text": f"load {k}", "defs": [f"v{k}"], "uses": []} for k in range(loads)]
    insts += [{"text": f"store {k}", "defs": [], "uses": [f"v{k}"]} for k in range(loads)]
    edges = [(k, loads + k, latency) for k in range(loads)]
    return jaxsched.Region.build("loads", insts, regs, edges)


def test_ants_wait_instead_of_dying_under_the_rp_target():
    """One wavefront, no optional stalls allowed: every ready candidate of an ant that has
    issued three loads breaks the target, and the uses are not ready yet. The former rule
    (semi-ready candidates only in stall wavefronts) killed every such ant; now an ant waits
    for a use that keeps it within the target."""
    region = loads_region()
    shape = padded_shape(region, MACHINE)
    dev = jax.tree.map(jnp.asarray, pad_region(region, MACHINE, shape))
    params = colony.default_params(stall_fraction=0.0)
    prep = prepared.prepare(dev, shape.ready)
    limit = rp_limits(MACHINE.occupancy_lut, MACHINE.target_occupancy, 0)
    N = shape.n
    inp = antstate.StepInputs(
        tau=jnp.ones((N + 1, N + 1)),
        q0=jnp.float32(1.0),  # exploit: latency-greedy ants (critical path first)
        rp_limit=limit,
        soft_limit=limit,
        stall_budget=jnp.float32(10.0),
        timed=jnp.bool_(True),
        key=prepared.static_key(prep, params, jnp.bool_(True)),
        issue_width=jnp.int32(1),
    )
    out = _construct(
        prep,
        inp,
        params,
        jax.random.key(0),
        dev.n,
        wavefronts=1,
        wavefront_size=64,
        uniform_exploration=False,
    )
    assert not np.asarray(out.dead).any()
    for a in range(0, 64, 16):
        order = np.asarray(out.order[a])[: len(region)]
        rep = verify_order(region, MACHINE, order)
        assert rep.occupancy == 10
        assert int(out.length[a]) < 2 * LATENCY + 2 * LOADS  # loads overlap their latency


def test_rp_limited_list_schedule_meets_the_target_and_overlaps_latency():
    region = loads_region()
    shape = padded_shape(region, MACHINE)
    dev = jax.tree.map(jnp.asarray, pad_region(region, MACHINE, shape))
    lut = jnp.asarray(MACHINE.occupancy_lut)
    plain = _list_schedule(dev, lut, priority=("cp", "luc", "nid"), latencies=True)
    limit = rp_limits(lut, MACHINE.target_occupancy, 0)
    limited = _list_schedule(
        dev, lut, priority=("cp", "luc", "nid"), latencies=True, rp_limit=limit
    )
    assert int(plain.occupancy) < 10  # latency first: all six loads live at once
    assert int(limited.occupancy) == 10
    n = len(region)
    rep = verify(
        region, MACHINE, np.asarray(limited.cycles)[:n], order=np.asarray(limited.order)[:n]
    )
    rp_order = verify(region, MACHINE, _in_order_cycles(region, _rp_greedy(region)))
    assert rep.length == int(limited.length) < rp_order.length


@pytest.mark.parametrize("stall_fraction", [0.0, 0.25])
def test_schedule_keeps_occupancy_and_beats_the_rp_order(stall_fraction):
    region = loads_region()
    res = jaxsched.schedule(region, MACHINE, seed=0, ants=64, stall_fraction=stall_fraction)[0]
    rep = verify(region, MACHINE, res.cycles, order=res.order)
    assert rep.occupancy == res.occupancy == 10
    rp_order = verify(region, MACHINE, _in_order_cycles(region, _rp_greedy(region)))
    assert res.length <= rp_order.length - LATENCY  # at least one latency hidden


def _rp_greedy(region) -> list[int]:
    """load 0, store 0, load 1, store 1, ...: the RP pass's order (latencies ignored)."""
    k = len(region) // 2
    return [x for i in range(k) for x in (i, k + i)]


def _in_order_cycles(region, order) -> list[int]:
    pred = region.predecessors()
    cycles, cur = [0] * len(region), 0
    for j in order:
        cycles[j] = max([cur, *(cycles[p] + lat for p, lat in pred[j])])
        cur = cycles[j] + 1
    return cycles


def sinks_region(latency: int = LATENCY) -> jaxsched.Region:
    """A latency chain x0 -> x1 -> x2 -> x3 whose middle step needs two 8-wide values at once,
    and three 8-wide live-out constants without successors (k0..k2, as a loop's materialised
    constants). At occupancy 10 (24 VGPRs) the constants fit only once the chain is done: a
    latency scheduler that fills the chain's stalls with them must break the RP target."""
    regs = {r: ("VGPR", 8) for r in ("a", "b", "c", "d", "k0", "k1", "k2")}
    insts = [
        {"text": "x0", "defs": ["a"], "uses": []},
        {"text": "x1", "defs": ["b", "c"], "uses": ["a"]},
        {"text": "x2", "defs": ["d"], "uses": ["b", "c"]},
        {"text": "x3", "defs": [], "uses": ["d"]},
    ]
    insts += [{"text": f"k{k}", "defs": [f"k{k}"], "uses": []} for k in range(3)]
    edges = [(0, 1, latency), (1, 2, latency), (2, 3, latency)]
    return jaxsched.Region.build("sinks", insts, regs, edges, live_out=["k0", "k1", "k2"])


def test_target_schedule_defers_register_hungry_sinks():
    """Without deferral the RP-limited latency scheduler fills x0's stall with two constants
    (each fits then) and x1 breaks the target; `target_schedule`'s third candidate defers
    the sinks and meets it, and the best of the three is taken."""
    from jaxsched.heuristics.list_scheduler import target_schedule

    region = sinks_region()
    shape = padded_shape(region, MACHINE)
    dev = jax.tree.map(jnp.asarray, pad_region(region, MACHINE, shape))
    lut = jnp.asarray(MACHINE.occupancy_lut)
    target = jnp.int32(MACHINE.target_occupancy)
    limit = rp_limits(lut, target, 0)
    kw = dict(priority=("cp", "luc", "nid"), latencies=True, rp_limit=limit, target=target)
    plain = _list_schedule(dev, lut, **kw)
    deferred = _list_schedule(dev, lut, defer_sinks=True, **kw)
    assert int(plain.occupancy) < 10 == int(deferred.occupancy)
    feasible = jnp.arange(shape.n, dtype=jnp.int32)  # the input order meets the target
    best = quick_jit(target_schedule)(dev, lut, limit, target, feasible)
    n = len(region)
    rep = verify(region, MACHINE, np.asarray(best.cycles)[:n], order=np.asarray(best.order)[:n])
    assert rep.occupancy == int(best.occupancy) == 10
    assert rep.length == int(best.length) <= int(deferred.length)
    assert list(np.asarray(best.order)[:n][-3:]) == [4, 5, 6]  # the constants last


@pytest.mark.parametrize("cost", [40, 457])
def test_initial_pheromone_does_not_depend_on_the_ant_count(cost):
    """With the spec's ``ants / (cost + 1)`` 4,096 ants put every link at tau_max, which
    clamps the start's deposit away (m16511_mxx bb.7699 then never left its start at effort 2);
    the start's links must stand out alike for any number of ants."""
    from jaxsched.colony.params import ColonyConfig
    from jaxsched.colony.passes.iteration import start_pass

    N = 6
    order = jnp.arange(N, dtype=jnp.int32)
    params = colony.default_params()

    def table(wavefronts: int) -> np.ndarray:
        ps = start_pass(
            timed=jnp.bool_(True), skip=jnp.bool_(False), order=order, cost=jnp.int32(cost),
            peak=jnp.zeros(2, jnp.int32), stalls=jnp.int32(0), stall_budget=jnp.float32(4),
            lower_bound=jnp.int32(0), rp_target=jnp.int32(0), patience=jnp.int32(1),
            key=jax.random.key(0), params=params,
            config=ColonyConfig(wavefronts=wavefronts, wavefront_size=64, max_iterations=2),
        )  # fmt: skip
        return np.asarray(ps.tau)

    few, many = table(4), table(64)  # 256 and 4,096 ants
    np.testing.assert_array_equal(few, many)
    prev = np.concatenate([[N], np.asarray(order)[:-1]])
    on_start = many[prev, np.asarray(order)]
    off_start = np.delete(many[N], 0)  # row "nothing yet" without the start's first link
    assert on_start.min() > off_start.max()
