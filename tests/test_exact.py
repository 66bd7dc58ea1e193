"""Exact search: optimum equals brute force, bounds never exceed a completion, schedules verify."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import quick_jit
from test_exact_reference import (
    brute_length,
    brute_rp,
    random_region,
    rp_key,
    simulate_peaks,
    timed,
    topo_orders,
)

from jaxsched.exact import ExactError, solve_exact, solve_two_pass
from jaxsched.exact.bounds import optimistic_bound, prefix_bound
from jaxsched.exact.expand import MachineConstants, Nodes, expand, expand_impl, root
from jaxsched.exact.tables import build_tables
from jaxsched.machines.model import generic, gfx906
from jaxsched.problem.generate import generate_region, generate_regions
from jaxsched.verify import verify, verify_order

#: A small register budget so the RP cost varies (occupancy steps at 8, 12, 16, 20, 32 regs).
TIGHT = generic(registers_per_file=64)
DUAL = generic(registers_per_file=64, issue_width=2)
MACHINES = {"gfx906": gfx906(), "tight": TIGHT, "dual": DUAL}
#: For searches that must finish: the node budget decides. The default time budget (10 s)
#: counts compilation, which a loaded machine can spend alone ("bounded" instead of "optimal").
FINISH = dict(time_budget=600.0)


def _check_rp(region, machine, res) -> None:
    report = verify_order(region, machine, res.order)
    peaks = tuple(report.peak_rp[f] for f in machine.file_names)
    assert res.peaks == peaks
    assert res.upper == rp_key(machine, peaks)
    assert res.lower <= res.upper


def _check_length(region, machine, res, rp_target) -> None:
    report = verify(region, machine, res.cycles, order=res.order)
    assert report.length == res.length == res.upper[0]
    assert report.rp_cost <= rp_target
    assert res.lower <= res.upper


def _regions(seed: int, count: int, max_size: int) -> list:
    gen = generate_regions(seed, count, min_size=3, max_size=max_size)
    rnd = [random_region(seed * 1000 + k, 3 + k % (max_size - 2)) for k in range(count)]
    return gen + rnd


def test_rp_pass_equals_brute_force() -> None:
    """The RP pass's optimum (RP cost, then the sum of the peaks) equals brute force, on a
    register file small enough that the cost varies (on gfx906 every one of these regions has
    an optimum of cost 0: only the peak sums would be compared, as here at equal cost)."""
    machine = TIGHT
    for region in _regions(1, 60, 12):
        res = solve_exact(region, machine, objective="rp", **FINISH)
        assert res.status == "optimal", region.name
        _check_rp(region, machine, res)
        assert res.upper == brute_rp(region, machine), region.name


@pytest.mark.slow
def test_rp_pass_equals_brute_force_14() -> None:
    for region in _regions(2, 40, 14):
        res = solve_exact(region, TIGHT, objective="rp", **FINISH)
        assert res.status == "optimal"
        _check_rp(region, TIGHT, res)
        assert res.upper == brute_rp(region, TIGHT), region.name


@pytest.mark.parametrize("machine_name", ["tight", "dual"])
def test_length_pass_equals_brute_force(machine_name: str) -> None:
    """The length pass's optimum (or infeasibility) under an RP target equals brute force
    over issue orders: at issue widths 1 and 2, on a register file small enough that the
    targets bind (gfx906's tables are the same code with other numbers: the RP pass and
    CP-SAT compare on gfx906)."""
    machine = MACHINES[machine_name]
    rng = np.random.default_rng(3)
    for region in _regions(4, 40, 8):
        target = int(rng.integers(0, 3))
        want = brute_length(region, machine, target)
        res = solve_exact(region, machine, objective="length", rp_target=target, **FINISH)
        if want is None:
            assert res.status == "infeasible" and res.cycles is None, region.name
            continue
        assert res.status == "optimal", region.name
        _check_length(region, machine, res, target)
        assert res.upper == (want,), region.name


def test_two_pass_equals_brute_force() -> None:
    for region in _regions(5, 40, 8):
        res = solve_two_pass(region, TIGHT, **FINISH)
        assert res.optimal
        _check_rp(region, TIGHT, res.rp)
        assert res.rp.upper == brute_rp(region, TIGHT)
        _check_length(region, TIGHT, res.length, res.rp.rp_cost)
        assert res.length.upper == (brute_length(region, TIGHT, res.rp.rp_cost),)


def _random_schedule(region, width: int, rng) -> list[int]:
    """A random valid issue order (random ready choice)."""
    orders = []
    done: set[int] = set()
    preds = [{p for p, _ in ps} for ps in region.predecessors()]
    while len(orders) < len(region):
        ready = [i for i in range(len(region)) if i not in done and preds[i] <= done]
        j = int(rng.choice(ready))
        orders.append(j)
        done.add(j)
    return orders


@pytest.mark.parametrize("machine_name", ["tight", "dual"])
def test_prefix_bound_never_exceeds_a_completion(machine_name: str) -> None:
    """The length, RP and RP-targeted bounds of a random prefix never exceed the key of a
    random completion: at issue widths 1 and 2, on a register file small enough that RP
    costs vary (on gfx906 they are mostly 0)."""
    machine = MACHINES[machine_name]
    rng = np.random.default_rng(7)
    for k, region in enumerate(_regions(6, 12, 20)):
        for _ in range(4):
            order = _random_schedule(region, machine.issue_width, rng)
            cut = int(rng.integers(0, len(order) + 1))
            length = max(timed(region, machine.issue_width, order)) + 1
            # Any schedule issuing in this order is no shorter than its greedy timing.
            stretched = [
                c + int(rng.integers(0, 3)) * i
                for i, c in enumerate(timed(region, machine.issue_width, order))
            ]
            assert length <= max(stretched) + 1
            peaks = simulate_peaks(region, machine, order)
            lb = prefix_bound(region, machine, order[:cut], objective="length")
            assert lb is not None and lb[0] <= length, (region.name, cut)
            lb_rp = prefix_bound(region, machine, order[:cut], objective="rp")
            assert lb_rp <= rp_key(machine, peaks), (region.name, cut)
            target = machine.rp_cost(peaks)
            lb_t = prefix_bound(region, machine, order[:cut], objective="length", rp_target=target)
            assert lb_t is not None and lb_t[0] <= length, (region.name, cut, k)
        if cut == len(order):
            assert lb == (length,)


def test_optimistic_bound_never_exceeds_a_completion() -> None:
    rng = np.random.default_rng(8)
    for region in _regions(9, 15, 24):
        assert optimistic_bound(region) == region.critical_path_length() + 1
        for width in (1, 2):
            order = _random_schedule(region, width, rng)
            cyc = timed(region, width, order)
            length = max(cyc) + 1
            n = len(region)
            pairs = [(a, b) for a in range(n) for b in range(n) if cyc[a] < cyc[b]]
            pick = [p for p in pairs if rng.random() < 0.3]
            assert optimistic_bound(region, pick) <= length
            if width == 1 and all(e.latency <= 1 for e in region.edges):
                assert optimistic_bound(region, pairs) == length


def test_optimistic_bound_rejects_cycles() -> None:
    region = generate_region(0, 6)
    with pytest.raises(ExactError, match="cycle"):
        optimistic_bound(region, [(0, 1), (1, 0)])
    with pytest.raises(ExactError, match="distinct"):
        optimistic_bound(region, [(0, 9)])


def test_budget_gives_a_proven_interval() -> None:
    """A search stopped by its node budget reports an interval holding the optimum (on a
    region whose one-node interval is wide: 91..95 cycles, optimum 92)."""
    region = generate_region(11, 32)
    full = solve_exact(region, gfx906(), objective="length", **FINISH)
    assert full.status == "optimal"
    cut = solve_exact(region, gfx906(), objective="length", node_budget=1)
    assert cut.status in ("bounded", "optimal")
    assert cut.lower <= full.upper <= cut.upper
    _check_length(region, gfx906(), cut, rp_target=10)


def test_incumbent_and_errors() -> None:
    region = generate_region(12, 10)
    m = gfx906()
    base = solve_exact(region, m, objective="length", **FINISH)
    again = solve_exact(region, m, objective="length", incumbent_cycles=base.cycles, **FINISH)
    assert again.upper == base.upper and again.status == "optimal"
    with pytest.raises(ExactError, match="objective"):
        solve_exact(region, m, objective="speed")
    with pytest.raises(ExactError, match="rp_target"):
        solve_exact(region, m, objective="length", rp_target=-1)
    with pytest.raises(ExactError, match="node_budget"):
        solve_exact(region, m, node_budget=0)
    bad = np.zeros(len(region), np.int64)  # everything in cycle 0 breaks dependences
    bad[list(region.topological_order())] = np.arange(len(region))[::-1]
    with pytest.raises(ValueError, match="incumbent_cycles"):
        solve_exact(region, m, incumbent_cycles=bad)
    with pytest.raises(ValueError, match="incumbent_order"):
        solve_exact(region, m, incumbent_order=[0, 0, 1])


def test_same_inputs_same_result() -> None:
    region = generate_region(13, 20)
    # The node budget decides where the search stops; the time budget never does (a search
    # that stops on time depends on the machine's load).
    kw = dict(node_budget=3000, time_budget=3600.0)
    a = solve_two_pass(region, TIGHT, **kw)
    b = solve_two_pass(region, TIGHT, **kw)
    assert a.rp.status == b.rp.status and a.length.status == b.length.status
    assert np.array_equal(a.length.cycles, b.length.cycles)
    assert np.array_equal(a.rp.order, b.rp.order)


def _batch(region, machine):
    t = build_tables(region, machine)
    nodes = root(t, 8)
    params = MachineConstants(
        issue_width=jnp.int32(machine.issue_width),
        rp_limit=jnp.full(machine.num_files, 1 << 20, jnp.int32),
        lut=jnp.asarray(machine.occupancy_lut),
        target=jnp.int32(machine.target_occupancy),
    )
    return jax.tree.map(jnp.asarray, t), nodes, params


def test_expand_jit_matches_eager_and_does_not_retrace() -> None:
    region = generate_region(14, 12)
    t, nodes, params = _batch(region, gfx906())
    traced = quick_jit(
        chex.assert_max_traces(expand_impl, n=1), static_argnames=("capacity", "objective")
    )
    first = traced(t, nodes, params, capacity=64, objective="length")
    # New parent contents and new tunable values: same compiled code.
    k = int(np.flatnonzero(np.asarray(first.valid))[0])
    nodes2 = Nodes(
        sched=np.asarray(nodes.sched).copy(),
        est=np.asarray(nodes.est).copy(),
        slot=np.asarray(nodes.slot).copy(),
        peaks=np.asarray(nodes.peaks).copy(),
        valid=np.asarray(nodes.valid).copy(),
    )
    nodes2.sched[1] = np.asarray(first.sched[k])
    nodes2.est[1] = np.asarray(first.est[k])
    nodes2.slot[1] = np.asarray(first.slot[k])
    nodes2.valid[1] = True
    second = traced(
        t, nodes2, params._replace(target=jnp.int32(9)), capacity=64, objective="length"
    )
    with chex.fake_jit():
        eager = expand(
            t, nodes2, params._replace(target=jnp.int32(9)), capacity=64, objective="length"
        )
    for a, b in zip(jax.tree.leaves(second), jax.tree.leaves(eager), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert int(second.count) > int(first.count) - 1


def test_expand_reports_overflow() -> None:
    region = generate_region(15, 14)
    t, nodes, params = _batch(region, gfx906())
    ch = expand(t, nodes, params, capacity=1, objective="rp")
    n_ready = sum(1 for ps in region.predecessors() if not ps)
    assert int(ch.count) == n_ready
    assert bool(ch.overflow) == (n_ready > 1)
    assert int(np.asarray(ch.valid).sum()) == 1


def test_large_region_is_bounded_and_valid() -> None:
    """A 60-instruction region's search stopped by a node budget, then by a 1 s time budget
    (of search: the first search compiled the executables, which the budget would count):
    valid schedules, and a length bound no lower than the critical path."""
    region = generate_region(16, 60)
    for budget in (dict(node_budget=64, **FINISH), dict(time_budget=1.0)):
        res = solve_two_pass(region, gfx906(), **budget)
        _check_rp(region, gfx906(), res.rp)
        _check_length(region, gfx906(), res.length, res.rp.rp_cost)
        assert res.length.lower[0] >= region.critical_path_length() + 1, budget


def test_brute_force_orders_match_search_orders_on_a_tiny_region() -> None:
    region = random_region(99, 5)
    m = TIGHT
    best = min(rp_key(m, simulate_peaks(region, m, o)) for o in topo_orders(region))
    assert solve_exact(region, m, objective="rp", **FINISH).upper == best
