"""The colony's per-region preparation on the host (`jaxsched.colony.derive`, NumPy) against
the jitted JAX functions it replaces, bit for bit; and a run whose regions are all settled on
the host compiles nothing."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from compile_count import Compiles

import jaxsched
from jaxsched.colony.construction.prepared import prepare
from jaxsched.colony.derive import LATENCY_PRIORITY, RP_PRIORITY, derive_host
from jaxsched.colony.problem import canonical_shape, problem, problem_host
from jaxsched.compilation import COMPILED
from jaxsched.heuristics.bounds import length_lower_bound_jax, rp_peak_lower_bound_jax
from jaxsched.heuristics.host_schedule import target_schedule_host
from jaxsched.heuristics.list_scheduler import (
    list_schedule,
    order_peak_rp,
    stall_schedule,
    target_schedule,
)
from jaxsched.machines import generic, get_machine
from jaxsched.machines.model import MachineArrays, rp_cost_jax, rp_limits
from jaxsched.problem.format import load_regions
from jaxsched.problem.generate import generate_region
from jaxsched.problem.padded import PaddedShape, common_shape, padded_shape, stack
from jaxsched.problem.region import Region

DATA = Path(__file__).resolve().parent / "data"
#: 60 regions of 5..300 instructions from /work/shared/data/real-train.jsonl.gz (gfx906 code).
REAL_SAMPLE = DATA / "real_sample.jsonl.gz"


@partial(jax.jit, static_argnames=("ready_slots",))
def reference(dev, machine: MachineArrays, cost, feasible, *, ready_slots: int):
    """The jitted preparation `colony.problem` used before `derive_host`, per region of
    ``dev`` [B, ...]: (the fields of `Derived` but the length bound (`length_bound_jax`), the
    "list-target" schedule). That schedule is under the RP limits of cost ``cost`` (int32[B];
    -1: the RP cost lower bound, as derived) ranking ``feasible`` (int32[B, N]; derived: the
    input order). The issue width is traced (``machine.issue_width``): machines of one
    occupancy table shape share a compile at each padded shape."""

    def one(d, cost, feasible):
        N = d.valid.shape[0]
        lut, target, iw = machine.lut, machine.target_occupancy, machine.issue_width
        rp_lb = rp_cost_jax(rp_peak_lower_bound_jax(d), lut, target)
        rp = list_schedule(d, lut, priority=RP_PRIORITY, latencies=False, issue_width=iw)
        ilp = list_schedule(d, lut, priority=LATENCY_PRIORITY, latencies=True, issue_width=iw)
        inp = jnp.where(d.valid, jnp.arange(N, dtype=jnp.int32), N)
        limit = rp_limits(lut, target, jnp.where(cost < 0, rp_lb, cost))
        limited = target_schedule(d, lut, limit, target, feasible, iw)
        orders = jnp.stack([inp, rp.order, ilp.order, limited.order])
        derived = (
            prepare(d, ready_slots),
            orders,
            jax.vmap(lambda o: order_peak_rp(d, o))(orders),
            jax.vmap(lambda o: stall_schedule(d, o, iw)[1])(orders),
            rp_lb,
            jnp.max(jnp.where(d.valid, d.cp, 0)),
        )
        return derived, limited

    return jax.vmap(one)(dev, cost, feasible)


@partial(jax.jit, static_argnames=("issue_width",))
def length_bound_jax(dev, *, issue_width: int):
    """int32[B]: `length_lower_bound_jax` per region (its issue width is static)."""
    return jax.vmap(lambda d: length_lower_bound_jax(d, issue_width))(dev)


def _assert_same(host, ref, what: str) -> None:
    """Equal dtypes, shapes and values, leaf by leaf."""
    h, r = jax.tree.leaves(host), jax.tree.leaves(ref)
    assert len(h) == len(r), what
    for k, (a, b) in enumerate(zip(h, r, strict=True)):
        a, b = np.asarray(a), np.asarray(b)
        assert (a.dtype, a.shape) == (b.dtype, b.shape), f"{what} leaf {k}"
        assert np.array_equal(a, b), f"{what} leaf {k}: {a} != {b}"


def _input_order(dev) -> np.ndarray:
    """int32[B, N]: the input orders of a batch (sentinel N after n)."""
    N = dev.valid.shape[-1]
    return np.where(dev.valid, np.arange(N, dtype=np.int32), np.int32(N)).astype(np.int32)


def _check(regions: list[Region], machine, shape: PaddedShape) -> None:
    """Every region, padded to ``shape``, alone in a batch of one: host derive == the
    jitted reference (compiled once per shape and occupancy table shape)."""
    iw = machine.issue_width
    m = jax.tree.map(np.asarray, machine.arrays())
    for region in regions:
        dev, _ = stack([region], machine, shape)
        cost = np.full(1, -1, np.int32)
        ref, _ = reference(dev, machine.arrays(), cost, _input_order(dev), ready_slots=shape.ready)
        lb = length_bound_jax(dev, issue_width=iw)
        d, lb = jax.tree.map(lambda x: x[0], jax.device_get((ref, lb)))
        want = (*d[:5], lb, d[5])
        row = jax.tree.map(lambda x: x[0], dev)
        got = derive_host(row, m, ready_slots=shape.ready, issue_width=iw)
        fields = (
            got.prep, got.start_order, got.start_peak, got.start_length,
            got.rp_lower_bound, got.length_lower_bound, got.critical_path,
        )  # fmt: skip
        _assert_same(fields, want, f"{machine.name} {region.name} ({len(region)})")


def _shape(regions: list[Region], *machines) -> PaddedShape:
    """The canonical shape of the bucket of the largest of ``regions``, holding them all on
    every machine of ``machines``: one shape, so one compile per occupancy table shape."""
    shapes = [canonical_shape(common_shape(regions, m)) for m in machines]
    out = shapes[0]
    for s in shapes[1:]:
        out = out.join(s)
    return out


@pytest.fixture(scope="module")
def real_regions() -> list[Region]:
    return load_regions(REAL_SAMPLE)


GENERATED = [(1, 2), (2, 5), (3, 12), (4, 16), (5, 23), (6, 40), (7, 64), (8, 100)]
#: The machines beside gfx906: other occupancy tables and target, and issue width 2.
OTHERS = (get_machine("gfx942"), generic(issue_width=2))


@pytest.fixture(scope="module")
def generated() -> list[Region]:
    return [generate_region(s, n) for s, n in GENERATED] + [_chain(1, "one"), _chain(20, "c")]


@pytest.fixture(scope="module")
def small(real_regions, generated) -> tuple[list[Region], PaddedShape]:
    """The real and generated regions of at most 64 instructions (bucket 16 to 64), and one
    shape holding them on every machine (bucket 64's): one compile per occupancy table."""
    regions = [r for r in real_regions + generated if len(r) <= 64]
    shape = _shape(regions, jaxsched.gfx906(), *OTHERS)
    assert shape.n == 64
    return regions, shape


def test_small_regions_gfx906(small, real_regions):
    """Every real and generated region of buckets 16 to 64 (sizes 1 to 64) on gfx906."""
    regions, shape = small
    assert {padded_shape(r, jaxsched.gfx906()).n for r in regions} == {16, 32, 64}
    assert len([r for r in regions if r in real_regions]) == 39
    _check(regions, jaxsched.gfx906(), shape)


@pytest.mark.slow
def test_large_regions_gfx906(real_regions, generated):
    """Every real and generated region of buckets 128 to 512 (65 to 300 instructions) on
    gfx906, padded to bucket 512's shape."""
    machine = jaxsched.gfx906()
    regions = [r for r in real_regions + generated if len(r) > 64]
    assert {padded_shape(r, machine).n for r in regions} == {128, 256, 512}
    assert len(regions) == 22
    _check(regions, machine, _shape(regions, machine))


@pytest.mark.parametrize("machine", OTHERS, ids=["gfx942", "issue_width_2"])
def test_other_machines(small, machine):
    """gfx942 (other occupancy tables and target) and a generic machine issuing 2 per cycle
    (its occupancy table has gfx906's shape: it shares gfx906's compile) on the regions of
    1..64 instructions."""
    regions, shape = small
    _check(regions, machine, shape)


def test_target_schedule_host_under_tight_limits(small):
    """The RP-limit filter (limits no order meets, sinks deferred) on a retargeted list
    schedule, as `engine.Host.retarget` runs it: each cost of the machine's range, orders
    ranking the instructions at random ("nid" first), on the gfx906 compile of `small`."""
    machine = jaxsched.gfx906()
    regions, shape = small
    regions = [r for r in regions if len(r) > 16][:6]
    lut, target = machine.occupancy_lut, np.int32(machine.target_occupancy)
    rng = np.random.default_rng(0)
    for region in regions:
        dev, _ = stack([region], machine, shape)
        feasible = np.full((1, shape.n), shape.n, np.int32)
        feasible[0, : len(region)] = rng.permutation(len(region))
        row = jax.tree.map(lambda x: x[0], dev)
        for cost in range(0, 10, 3):
            limit = rp_limits(lut, target, np.int32(cost), xp=np)
            costs = np.full(1, cost, np.int32)
            _, want = reference(dev, machine.arrays(), costs, feasible, ready_slots=shape.ready)
            got = target_schedule_host(row, lut, limit, target, feasible[0], 1)
            want = jax.tree.map(lambda x: x[0], jax.device_get(want))
            _assert_same(got, want, f"{region.name} cost {cost}")


def test_problem_is_problem_host_on_device():
    regions = [generate_region(s, n) for s, n in [(1, 9), (2, 14), (3, 3)]]
    host = problem_host(regions, jaxsched.gfx906(), batch=4)
    dev = problem(regions, jaxsched.gfx906(), batch=4)
    assert all(isinstance(x, np.ndarray | np.generic) for x in jax.tree.leaves(host))
    assert all(isinstance(x, jax.Array) for x in jax.tree.leaves(dev))
    _assert_same(host, dev, "problem")
    derived = (host.dev, host.prep, host.start_order, host.start_peak, host.start_length)
    _assert_same(
        jax.tree.map(lambda x: x[3], derived), jax.tree.map(lambda x: x[0], derived), "pad"
    )
    assert list(host.real) == [True, True, True, False]


# ------------------------------------------------------------------------------ compilations
def _chain(n: int, name: str) -> Region:
    """A chain of ``n`` one-cycle VGPR ops: one order, at its length and RP bounds (settled)."""
    insts = [("v_mov", ["%0"], [])] + [
        (f"v_add {i}", [f"%{i}"], [f"%{i - 1}"]) for i in range(1, n)
    ]
    regs = {f"%{i}": ("VGPR", 1) for i in range(n)}
    edges = [(i - 1, i, 1) for i in range(1, n)]
    return Region.build(name, insts, regs, edges, live_out=[f"%{n - 1}"])


def test_settled_regions_compile_nothing():
    """Regions settled at init (both passes skipped: their starts meet the bounds) are
    scheduled without compiling (or loading) any executable, in a bucket new to the process."""
    machine = jaxsched.gfx906()
    warm = jaxsched.schedule([_chain(3, "warm")], machine, seed=0)  # eager ops of the run
    assert warm[0].iterations == (0, 0)
    regions = [_chain(n, f"chain{n}") for n in (37, 50, 64)]  # bucket 64
    compiles = Compiles()
    c0, l0 = COMPILED.compilations, COMPILED.loads
    with compiles:
        results = jaxsched.schedule(regions, machine, seed=1)
    assert [r.iterations for r in results] == [(0, 0)] * 3
    assert [r.length for r in results] == [37, 50, 64]
    assert (COMPILED.compilations, COMPILED.loads) == (c0, l0)
    assert compiles.count == 0
