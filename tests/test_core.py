"""The colony's device core as a JAX library: `problem` / `init` / `step` / `solution` /
`solve` under the user's own `jit`, `vmap` over parameters and `lax.scan`; no retracing; every
returned schedule verified; the shared primitives (`rp_limits`, greedy timing) pinned."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import quick_jit, random_topological_order, shuffled

import jaxsched
from jaxsched import colony
from jaxsched.colony.construction import antstate, construct, prepared
from jaxsched.colony.problem import SOURCES, canonical_shape
from jaxsched.errors import InputError
from jaxsched.heuristics import issue_cycles
from jaxsched.heuristics.hoist import hoist
from jaxsched.heuristics.list_scheduler import stall_schedule
from jaxsched.machines import generic
from jaxsched.machines.model import RP_UNLIMITED, rp_limits
from jaxsched.problem.generate import generate_region, generate_regions
from jaxsched.problem.padded import pad_region, padded_shape
from jaxsched.tune import sweep
from jaxsched.tune.train import stack_params
from jaxsched.verify import verify

# Tight registers so that both passes have work (gfx906's 256 VGPRs rarely bind on small
# generated regions).
MACHINE = generic(registers_per_file=64, max_occupancy=8)
GFX906 = jaxsched.gfx906()
CONFIG = colony.ColonyConfig(wavefronts=2, wavefront_size=32, max_iterations=6)


def _unstack(tree, k):
    return jax.tree.map(lambda x: x[k], tree)


def _check_solution(regions, sol, batch_index=None):
    """Every real region's schedule verified; lengths, peaks and costs as reported."""
    sol = jax.device_get(sol)
    for b, region in enumerate(regions):
        n = len(region)
        rep = verify(region, MACHINE, sol.cycles[b, :n], order=sol.order[b, :n])
        assert rep.length == int(sol.length[b])
        assert [rep.peak_rp[f] for f in MACHINE.file_names] == list(sol.peak[b])
        assert rep.rp_cost == int(sol.rp_cost[b]) and rep.occupancy == int(sol.occupancy[b])
        assert int(sol.length[b]) >= int(sol.length_lower_bound[b])
        assert int(sol.rp_cost[b]) >= int(sol.rp_lower_bound[b])


@pytest.fixture(scope="module")
def regions():
    # Regions of one bucket (17..32 instructions), renumbered in random topological orders.
    rng = np.random.default_rng(0)
    regs = [r for r in generate_regions(21, 40, 17, 32) if 17 <= len(r) <= 32]
    return [shuffled(r, rng) for r in regs[:4]]


@pytest.fixture(scope="module")
def prob(regions):
    # Starting from the input order alone: the RP pass runs on most of these regions.
    return colony.problem(regions, MACHINE, starts=("input",))


@pytest.fixture(scope="module")
def solve_jit():
    """`colony.solve` with CONFIG under `jit`: every solve in this file has `prob`'s shapes and
    shares one executable; traced at most once in the whole file (see the retracing test).
    Compiled at LLVM's level 0 (`helpers.quick_jit`), as `loop_jit`: the results equal the
    library's own executables (`sweep`, `schedule`)."""
    chex.clear_trace_counter()

    @quick_jit
    @chex.assert_max_traces(n=1)
    def solve(key, problem, params):
        return colony.solve(key, problem, params, config=CONFIG)

    return solve


@pytest.fixture(scope="module")
def loop_jit():
    """The loop driven by the user (as evosax tests its strategies): init, step under
    `lax.scan`; returns the final state, each step's starting phase and the `solution` of
    the state after each step."""

    @quick_jit
    def run(problem, params, key):
        state = colony.init(key, problem, params, config=CONFIG)

        def body(s, _):
            new = colony.step(s, problem, params, config=CONFIG)
            return new, (s.phase, colony.solution(new, problem, params))

        return jax.lax.scan(body, state, None, length=2 * CONFIG.max_iterations)

    return run


def test_solve_schedules_are_verified(regions, prob, solve_jit):
    params = colony.default_params(cycle_threshold=-1.0)
    sol = solve_jit(jax.random.key(0), prob, params)
    _check_solution(regions, sol)
    assert (np.asarray(sol.iterations) > 0).any(axis=0).all()  # both passes ran somewhere


def test_sweep_equals_separate_calls(regions, prob, solve_jit):
    """`jaxsched.tune.sweep` (`vmap` over stacked params; the property itself is checked on
    `colony.run` in test_contract) gives each setting's separate solve, its sums, its best,
    and the same again for the same key."""
    settings = [
        colony.default_params(cycle_threshold=-1.0, decay=d, explore_scale=x)
        for d, x in [(0.8, 5.0), (0.3, 20.0), (0.95, 1.0)]
    ]
    key = jax.random.key(4)
    out = sweep(key, prob, stack_params(settings), config=CONFIG)
    separate = [jax.device_get(solve_jit(key, prob, params)) for params in settings]
    for k, one in enumerate(separate):
        chex.assert_trees_all_equal(_unstack(out.solutions, k), one)
        _check_solution(regions, one)
    real = np.asarray(prob.real)
    np.testing.assert_array_equal(out.occupancy, [one.occupancy[real].sum() for one in separate])
    np.testing.assert_array_equal(out.length, [one.length[real].sum() for one in separate])
    best = min(range(3), key=lambda k: (-out.occupancy[k], out.length[k]))
    assert out.best == best
    again = sweep(key, prob, stack_params(settings), config=CONFIG)
    chex.assert_trees_all_equal(again.solutions, out.solutions)


def test_no_retracing_across_regions_and_params(regions, prob, solve_jit):
    """A problem of each region alone, padded to `prob`'s batch: one canonical shape per
    bucket, so `solve_jit` (`chex.assert_max_traces(n=1)` over the file) never retraces."""
    for k, region in enumerate(regions):
        p = colony.problem([region], MACHINE, batch=len(regions))
        chex.assert_trees_all_equal_shapes(p, prob)  # one canonical shape per bucket
        sol = solve_jit(jax.random.key(k), p, colony.default_params(decay=0.5 + 0.1 * k))
        _check_solution([region], sol)


def test_user_driven_loop_equals_solve(regions, prob, solve_jit, loop_jit):
    """The loop driven by the user (init, step under `lax.scan`, solution) equals `solve`."""
    params = colony.default_params(cycle_threshold=-1.0)
    key = jax.random.key(9)
    expected = solve_jit(key, prob, params)
    state, (phases, sols) = loop_jit(prob, params, key)
    assert bool((state.phase == 2).all())  # two capped passes always finish in the budget
    assert bool((phases == 0).any()) and bool((phases == 1).any())
    chex.assert_trees_all_equal(_unstack(sols, -1), expected)
    _check_solution(regions, _unstack(sols, -1))


def test_partial_loop_gives_valid_schedules(regions, prob, loop_jit):
    """`solution` of a state still in its passes is a valid (best-so-far) result: after
    every step of the loop."""
    params = colony.default_params(cycle_threshold=-1.0)
    _, (phases, sols) = loop_jit(prob, params, jax.random.key(1))
    assert bool((np.asarray(phases)[1] < 2).any())  # the first steps are inside the passes
    for t in range(phases.shape[0]):
        _check_solution(regions, _unstack(sols, t))


def test_schedule_is_a_shell_over_solve(regions, prob, solve_jit):
    """`schedule` returns what `solve` computes for the same key and settings (then
    `hoist`ed at its own peaks where `Result.hoisted` says so)."""
    res = jaxsched.schedule(
        regions, MACHINE, seed=7, config=CONFIG, filters=False, starts=("input",)
    )
    params = colony.default_params(cycle_threshold=-1.0, occ_gain=0.0)
    sol = jax.device_get(solve_jit(jax.random.key(7), prob, params))
    for b, (region, r) in enumerate(zip(regions, res, strict=True)):
        order = tuple(int(x) for x in sol.order[b, : len(region)])
        if r.hoisted:
            order = hoist(region, MACHINE, order, [int(x) for x in sol.peak[b]])[0]
        assert r.order == order
        assert r.source == SOURCES[int(sol.source[b])]


# ---------------------------------------------------------------------------- shared primitives
def test_rp_limits_pinned():
    lut, target = GFX906.occupancy_lut, GFX906.target_occupancy
    assert np.asarray(rp_limits(lut, target, 0)).tolist() == [24, 80]
    assert np.asarray(rp_limits(lut, target, 2)).tolist() == [32, 100]
    # Cost 3 allows any SGPR count (overflow occupancy 7); cost 9 any VGPR count too.
    assert np.asarray(rp_limits(lut, target, 3)).tolist() == [36, RP_UNLIMITED]
    assert np.asarray(rp_limits(lut, target, 9)).tolist() == [RP_UNLIMITED, RP_UNLIMITED]


def test_ant_above_the_table_is_alive_when_the_target_allows_it():
    """A schedule peaking above the VGPR table (spilling territory) meets an RP cost target of
    9 (occupancy 1): its ants must not die. (The colony's former limit stopped at the table's
    last column and killed them, disagreeing with the exact search.)"""
    regs = {f"v{k}": ("VGPR", 32) for k in range(10)}
    insts = [{"defs": [f"v{k}"], "uses": []} for k in range(10)]
    insts.append({"defs": [], "uses": list(regs)})
    region = jaxsched.Region.build("wide", insts, regs, [(k, 10, 1) for k in range(10)])
    shape = padded_shape(region, GFX906)
    dev = jax.tree.map(jnp.asarray, pad_region(region, GFX906, shape))
    params = colony.default_params()
    prep = prepared.prepare(dev, shape.ready)
    N = shape.n
    limit = rp_limits(GFX906.occupancy_lut, GFX906.target_occupancy, 9)
    inp = antstate.StepInputs(
        tau=jnp.ones((N + 1, N + 1)),
        q0=jnp.float32(0.5),
        rp_limit=limit,
        soft_limit=limit,
        stall_budget=jnp.float32(1.0),
        timed=jnp.bool_(True),
        key=prepared.static_key(prep, params, jnp.bool_(True)),
        issue_width=jnp.int32(1),
    )
    construct_jit = quick_jit(
        construct.construct_ants,
        static_argnames=("wavefronts", "wavefront_size", "uniform_exploration"),
    )  # one compile (eager, each of its loops compiles)
    out = construct_jit(
        prep,
        inp,
        params,
        jax.random.key(0),
        dev.n,
        wavefronts=1,
        wavefront_size=8,
        uniform_exploration=False,
    )
    assert (np.asarray(out.peak)[:, 0] == 320).all()
    assert not np.asarray(out.dead).any()
    res = jaxsched.schedule(region, GFX906, seed=0, ants=64)[0]
    assert res.peak_rp["VGPR"] == 320 and res.occupancy == 1
    verify(region, GFX906, res.cycles, order=res.order)


#: The device's greedy timing, compiled once per bucket (regions padded to their bucket's
#: canonical shape, as the colony pads them; the issue width traced, as in the colony).
_stall_schedule = quick_jit(stall_schedule)


@pytest.mark.parametrize("issue_width", [1, 2])
def test_greedy_timing_host_and_device_agree(issue_width):
    rng = np.random.default_rng(issue_width)
    for region in generate_regions(5, 12, 5, 60):
        order = np.asarray(region.topological_order())
        if rng.random() < 0.5:  # another topological order: a random one
            order = random_topological_order(region, rng)
        host = issue_cycles(region, order, issue_width)
        shape = canonical_shape(padded_shape(region, MACHINE))
        dev = pad_region(region, MACHINE, shape)
        padded = np.full(shape.n, shape.n, np.int32)
        padded[: len(region)] = order
        cycles, length = _stall_schedule(dev, jnp.asarray(padded), jnp.int32(issue_width))
        assert np.asarray(cycles)[: len(region)].tolist() == host.tolist()
        assert int(length) == int(host.max()) + 1
        verify(region, generic(issue_width=issue_width), host, order=order)


def test_problem_rejects_bad_starts():
    with pytest.raises(InputError, match="starts"):
        colony.problem([generate_region(0, 10)], MACHINE, starts=("nope",))
    with pytest.raises(InputError, match="batch"):
        colony.problem([generate_region(0, 10)] * 3, MACHINE, batch=2)
