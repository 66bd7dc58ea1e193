"""The host driver of `schedule` on one device: decide on the host, iterate on the device.

A region goes through its two passes as in the device core (`core`), with the decisions
between passes (`rules`) taken on the host:

* its RP pass starts from its best start; a pass that cannot improve (its start meets the
  pass's bound, or an exact start is proven) is skipped, so a region whose passes are both
  skipped is settled on the host and never reaches the device;
* the passes that run share a *pool* of slots per bucket shape: one compiled executable
  (`advance`) starts the passes the host puts into free slots and iterates every running pass
  until one of them ends; the host then starts the region's ILP pass in the same slot, or
  finishes the region and refills the slot with the next one. No slot waits for the slowest
  region of a batch, and no list scheduler is compiled into the device program.

Results are those of `core.solve` for the same key (region b's stream is keyed by its
fingerprint; a pass's iterations by its pass number), whatever the pool's composition.
"""

from __future__ import annotations

import dataclasses
import time
from collections import deque
from collections.abc import Callable, Sequence
from functools import partial
from types import SimpleNamespace
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxsched.colony.construction.prepared import Prepared
from jaxsched.colony.core import select_rows
from jaxsched.colony.drivers.planning import choose_batch
from jaxsched.colony.params import ColonyConfig, ColonyParams
from jaxsched.colony.passes import rules, transitions
from jaxsched.colony.passes.iteration import PassState, iterate, running, start_pass
from jaxsched.colony.passes.transitions import PassSummary, Schedule, Solution
from jaxsched.colony.problem import ColonyProblem
from jaxsched.compilation import COMPILED
from jaxsched.heuristics.host_schedule import target_schedule_host
from jaxsched.heuristics.list_scheduler import issue_cycles
from jaxsched.machines.model import Machine, MachineArrays, rp_limits
from jaxsched.problem.region import Region

#: Seconds of one device call below which the pool doubles its iteration chunk.
CHUNK_SECONDS = 1.0


# ------------------------------------------------------------------------------ device
class SlotFill(NamedTuple):
    """Passes the host starts in a pool's slots (leading axis S)."""

    start: rules.PassStart  # [S, ...]: each slot's pass start (ignored where not ``fill``)
    ids: jax.Array  # uint32[S]: the slot's region fingerprint
    pass_no: jax.Array  # int32[S]: 1 (RP pass) or 2 (ILP pass): the pass's key is
    #                       fold_in(fold_in(key, id), pass_no), as in `core`
    fill: jax.Array  # bool[S]: start this pass in the slot now


def advance(
    pass_states: PassState,
    prep: Prepared,
    machine: MachineArrays,
    params: ColonyParams,
    key: jax.Array,
    fill: SlotFill,
    steps: jax.Array,
    *,
    config: ColonyConfig,
) -> tuple[PassState, jax.Array]:
    """Start the passes of ``fill``, then iterate every running pass (all of the pool's slots
    at once) up to ``steps`` times, stopping early once a pass that was running ends.
    Returns (pass states, bool[S] running)."""

    def start(pass_start: rules.PassStart, region_id: jax.Array, pass_no: jax.Array) -> PassState:
        k = jax.random.fold_in(jax.random.fold_in(key, region_id), pass_no)
        return start_pass(**pass_start._asdict(), key=k, params=params, config=config)

    def refill(pass_states: PassState) -> PassState:
        new = jax.vmap(start)(fill.start, fill.ids, fill.pass_no)
        return select_rows(fill.fill, new, pass_states)

    pass_states = lax.cond(fill.fill.any(), refill, lambda unchanged: unchanged, pass_states)
    live_at_start = _running(pass_states, config)

    def cond(carry):
        ps, k = carry
        live = _running(ps, config)
        return (k < steps) & live.any() & (live == live_at_start).all()

    def body(carry):
        ps, k = carry
        live = _running(ps, config)
        num_steps = jnp.max(jnp.where(live, prep.n, 0))

        def one(region_prep: Prepared, pass_state: PassState, active: jax.Array) -> PassState:
            return iterate(
                pass_state, region_prep, machine, params, num_steps,
                config=config, batch_axis="regions", active=active,
            )  # fmt: skip

        new = jax.vmap(one, axis_name="regions")(prep, ps, live)
        return select_rows(live, new, ps), k + 1

    pass_states, _ = lax.while_loop(cond, body, (pass_states, jnp.int32(0)))
    return pass_states, _running(pass_states, config)


def _running(pass_states: PassState, config: ColonyConfig) -> jax.Array:
    return jax.vmap(partial(running, config=config))(pass_states)


_advance_jit = jax.jit(advance, static_argnames=("config",), donate_argnames=("pass_states",))


# ------------------------------------------------------------------------------ host
def _skipped(start: rules.PassStart, iterations_cap: int) -> PassSummary:
    """The result of a pass that did not run: its start, no iterations, empty history."""
    hist = np.full(iterations_cap, -1, np.int32)
    return PassSummary(
        order=np.asarray(start.order, np.int32),
        cost=np.asarray(start.cost, np.int32),
        peak=np.asarray(start.peak, np.int32),
        length=np.int32(0),
        iterations=np.int32(0),
        history_best=hist,
        history_winner=hist,
        history_alive=hist,
    )


@dataclasses.dataclass
class Job:
    """One region's way through the engine (host state)."""

    index: int  # position in the caller's list
    region: Region
    prob: ColonyProblem  # NumPy, no batch axis
    phase: int = 0  # 0: RP pass, 1: ILP pass, 2: done
    s1: int = 0  # the RP pass's start
    rp: PassSummary | None = None  # the RP pass, once ended
    retarget: Schedule | None = None  # "list-target" at the RP pass's cost
    ilp: rules.IlpStart | None = None  # where the ILP pass started
    solution: Solution | None = None  # batch of one, NumPy


class Decisions:
    """The decisions between a region's passes, taken on the host (`transitions` with NumPy):
    the machine and parameters as NumPy arrays, the list schedule and greedy timing there."""

    def __init__(self, machine: Machine, params: ColonyParams, config: ColonyConfig) -> None:
        self.machine = machine
        self.arrays = jax.tree.map(np.asarray, machine.arrays())
        self.params = jax.tree.map(np.asarray, params)
        self.config = config

    def rp_start(self, job: Job) -> rules.PassStart:
        s1, start = transitions.first_pass(job.prob, self.params, np)
        job.s1 = int(s1)
        return start

    def ilp_start(self, job: Job, rp: PassSummary) -> rules.PassStart:
        """The ILP pass after the RP pass ``rp`` (`transitions.after_rp`)."""
        end = transitions.after_rp(
            job.prob, rp, job.prob.length_lower_bound, self.params, self.side(job)
        )
        job.phase, job.rp, job.retarget, job.ilp = 1, end.rp, end.retarget, end.ilp
        return end.pass_start

    def finish(self, job: Job, ilp: PassSummary) -> Solution:
        """The region's result (`transitions.finish`), batch of one."""
        sol = transitions.finish(
            job.prob, job.retarget, job.rp, ilp, job.ilp, self.params, self.side(job)
        )
        job.phase, job.solution = 2, jax.tree.map(lambda leaf: np.asarray(leaf)[None], sol)
        return job.solution

    def side(self, job: Job) -> transitions.Side:
        """How the host computes the schedules of ``job``'s pass transitions."""
        return transitions.Side(
            xp=np, retarget=partial(self.retarget, job), timing=partial(self.timing, job)
        )

    def retarget(self, job: Job, cost, feasible: np.ndarray) -> Schedule:
        """The list schedule under the RP limits of ``cost`` (`target_schedule`, on the host:
        `target_schedule_host`)."""
        m = self.arrays
        limit = rp_limits(m.lut, m.target_occupancy, cost, xp=np)
        ls = target_schedule_host(
            job.prob.dev, m.lut, limit, m.target_occupancy, feasible, self.machine.issue_width
        )
        return Schedule(order=ls.order, peak=ls.peak, length=self.timing(job, ls.order)[1])

    def timing(self, job: Job, order: np.ndarray) -> tuple[np.ndarray, np.int32]:
        """(cycles int32[N], length) of ``order`` issued in order (`issue_cycles`)."""
        n = len(job.region)
        cycles = np.zeros(order.shape[0], np.int32)
        cycles[:n] = issue_cycles(job.region, order[:n], self.machine.issue_width)
        return cycles, np.int32(cycles[:n].max() + 1 if n else 0)


# ------------------------------------------------------------------------------ the pool
def _read_passes(states: PassState, slots: list[int]) -> list[PassSummary]:
    """The best-so-far of the passes in ``slots`` (one device read)."""
    keep = ("best_order", "best_cost", "best_peak", "iteration", *PassSummary._fields[5:])
    host = jax.device_get({k: getattr(states, k) for k in keep})
    rows = [SimpleNamespace(**{k: v[s] for k, v in host.items()}) for s in slots]
    return [
        transitions.summary(row, cost=row.best_cost, length=np.int32(0), iterations=row.iteration)
        for row in rows
    ]


class Pool:
    """The slots of one bucket shape and config on the default device, and their executable."""

    def __init__(
        self, size: int, jobs: Sequence[Job], config: ColonyConfig, run: RunShared
    ) -> None:
        self.size, self.config, self.run = size, config, run
        self.jobs: list[Job | None] = [None] * size
        template = jobs[0].prob.prep
        self.prep_host = jax.tree.map(
            lambda leaf: np.repeat(np.asarray(leaf)[None], size, 0), template
        )
        self.prep: Prepared | None = None
        self.passes = _empty_passes(size, jobs[0].prob, config, run)
        empty = _skipped_start(jobs[0].prob)
        self.fill = SlotFill(
            start=jax.tree.map(lambda leaf: np.repeat(np.asarray(leaf)[None], size, 0), empty),
            ids=np.zeros(size, np.uint32),
            pass_no=np.ones(size, np.int32),
            fill=np.zeros(size, bool),
        )
        self.exe = None
        self.compile_seconds = 0.0

    def free(self) -> list[int]:
        return [s for s, j in enumerate(self.jobs) if j is None]

    def busy(self) -> bool:
        return any(j is not None for j in self.jobs)

    def put(self, slot: int, job: Job, start: rules.PassStart, pass_no: int) -> None:
        """Start ``job``'s pass ``pass_no`` (1: RP, 2: ILP) in ``slot`` at the next call."""
        if self.jobs[slot] is not job:
            for name, arr in zip(Prepared._fields, self.prep_host, strict=True):
                arr[slot] = getattr(job.prob.prep, name)
            self.prep = None
        self.jobs[slot] = job
        for arr, value in zip(self.fill.start, start, strict=True):
            arr[slot] = value
        self.fill.ids[slot] = job.prob.ids
        self.fill.pass_no[slot] = pass_no
        self.fill.fill[slot] = True

    def executable(self):
        """The pool's `advance`, compiled or loaded from the store (once per pool)."""
        if self.exe is None:
            prep, fill = _device_copy(self.prep_host), _device_copy(self.fill)
            self.exe, self.compile_seconds = self.run.compiled(self.passes, prep, fill)
        return self.exe

    def stop(self) -> list[tuple[int, PassSummary]]:
        """(slot, best so far) of every busy slot's pass (a pass not started yet: its
        start); the slots are then free."""
        busy = [s for s, j in enumerate(self.jobs) if j is not None]
        read = dict(zip(busy, _read_passes(self.passes, busy), strict=True))
        cap = self.config.max_iterations
        out = [
            (s, _skipped(_row(self.fill.start, s), cap) if self.fill.fill[s] else read[s])
            for s in busy
        ]
        return out

    def call(self, steps: int) -> list[tuple[int, PassSummary]]:
        """Run the executable; returns (slot, result) for every pass that ended."""
        # Copies, never views: the host edits its arrays while the device runs.
        if self.prep is None:
            self.prep = _device_copy(self.prep_host)
        fill = _device_copy(self.fill)
        self.fill.fill[:] = False
        self.passes, live = self.executable()(
            self.passes, self.prep, self.run.machine, self.run.params, self.run.key,
            fill, jnp.int32(steps),
        )  # fmt: skip
        live = np.asarray(live)
        ended = [s for s, j in enumerate(self.jobs) if j is not None and not live[s]]
        return list(zip(ended, _read_passes(self.passes, ended), strict=True))


class RunShared(NamedTuple):
    """What every pool call of a run shares."""

    machine: MachineArrays  # on device
    params: ColonyParams  # on device
    key: jax.Array
    config: ColonyConfig

    def compiled(self, pass_states, prep, fill):
        static = {"config": self.config}
        args = (pass_states, prep, self.machine, self.params, self.key, fill, jnp.int32(1))
        return COMPILED.compiled(_advance_jit, static, *args)


def _device_copy(tree):
    """``tree``'s host arrays copied, then put on the default device (`jnp.array` would
    compile one small copy per shape and dtype in every process)."""
    return jax.tree.map(lambda leaf: jax.device_put(np.array(leaf)), tree)


def _row(tree, index: int):
    return jax.tree.map(lambda leaf: leaf[index], tree)


def _skipped_start(region: ColonyProblem) -> rules.PassStart:
    """A placeholder pass start of the problem's shapes (never run: ``skip``)."""
    return rules.PassStart(
        timed=np.bool_(False),
        skip=np.bool_(True),
        order=np.asarray(region.start_order[0]),
        cost=np.int32(0),
        peak=np.asarray(region.start_peak[0]),
        stalls=np.int32(0),
        stall_budget=np.float32(1.0),
        lower_bound=np.int32(0),
        rp_target=np.int32(rules.BIG),
        patience=np.int32(1),
    )


def _empty_passes(
    size: int, region: ColonyProblem, config: ColonyConfig, run: RunShared
) -> PassState:
    """Pass states of ``size`` idle slots (zeros: never running)."""
    one = jax.eval_shape(
        lambda start, key: start_pass(**start._asdict(), key=key, params=run.params, config=config),
        _skipped_start(region),
        run.key,
    )

    # Zeros made on the host and put on the device: `jnp.zeros` would compile one small
    # computation per shape and dtype in every process (about a second for a pool's leaves).
    def zeros(leaf):
        if jnp.issubdtype(leaf.dtype, jax.dtypes.prng_key):
            data = np.zeros((size, *jax.random.key_data(run.key).shape), np.uint32)
            return jax.random.wrap_key_data(jax.device_put(data), impl=jax.random.key_impl(run.key))
        return jax.device_put(np.zeros((size, *leaf.shape), leaf.dtype))

    return jax.tree.map(zeros, one)


# ------------------------------------------------------------------------------ driver
class Group(NamedTuple):
    """Regions of one bucket shape and config: their jobs and the largest pool that fits."""

    config: ColonyConfig
    cap: int  # most slots (memory budget)
    jobs: list[Job]


def drive(
    groups: Sequence[Group],
    decisions: Decisions,
    run_of: Callable[[ColonyConfig], RunShared],
    *,
    on_done: Callable[[Job, float, float], None],
    on_iteration: Callable[[int, int], None] | None = None,
    deadline: float | None = None,
) -> None:
    """Take every job through its passes: host decisions, then a pool per group for the
    passes that run (`choose_batch` slots for its open regions, at most ``cap``).
    ``on_done(job, compile_seconds, run_seconds)`` as each region finishes. Past ``deadline``
    (`time.perf_counter` seconds; checked between device calls) no device call starts: every
    region ends with the best schedules its passes have found so far."""
    for group in groups:
        queue = deque()
        for job in group.jobs:
            start, pass_no = _first_pass(decisions, job)
            if start is None:
                on_done(job, 0.0, 0.0)
            else:
                queue.append((job, start, pass_no))
        if queue and not _past(deadline):
            size = choose_batch(len(queue), group.cap)
            pool = Pool(size, [j for j, _, _ in queue], group.config, run_of(group.config))
            _run_pool(pool, queue, decisions, on_done, on_iteration, deadline)
        for job, start, _ in queue:  # left by the deadline
            _stop(decisions, job, _skipped(start, decisions.config.max_iterations))
            on_done(job, 0.0, 0.0)


def _past(deadline: float | None) -> bool:
    return deadline is not None and time.perf_counter() >= deadline


def _run_pool(
    pool: Pool, queue: deque, decisions: Decisions, on_done, on_iteration, deadline
) -> None:
    """Fill free slots from ``queue`` and call the pool until every pass has ended (or the
    deadline has passed: then the passes in the slots stop where they are)."""
    chunk, done, t_pool = 1, 0, time.perf_counter()
    max_chunk = 2 * pool.config.max_iterations
    while queue or pool.busy():
        for slot in pool.free()[: len(queue)]:
            pool.put(slot, *queue.popleft())
        if _past(deadline):
            for slot, result in pool.stop():
                _stop(decisions, pool.jobs[slot], result)
                on_done(pool.jobs[slot], pool.compile_seconds, time.perf_counter() - t_pool)
            return
        t0 = time.perf_counter()
        ended = pool.call(chunk)
        done += chunk
        if on_iteration is not None:
            on_iteration(sum(j is not None for j in pool.jobs), done)
        for slot, result in ended:
            job = pool.jobs[slot]
            start = _next_pass(decisions, job, result)
            if start is None:
                pool.jobs[slot] = None
                on_done(job, pool.compile_seconds, time.perf_counter() - t_pool)
            else:
                pool.put(slot, job, start, 2)
        if time.perf_counter() - t0 < CHUNK_SECONDS:
            chunk = min(2 * chunk, max_chunk)


def _stop(decisions: Decisions, job: Job, result: PassSummary) -> None:
    """Finish ``job`` now: its current pass ends with ``result``, a later pass is skipped."""
    start = _next_pass(decisions, job, result, stop=True)
    assert start is None


def _first_pass(decisions: Decisions, job: Job) -> tuple[rules.PassStart | None, int]:
    """The first pass of ``job`` that runs (1: RP, 2: ILP), or None when both are skipped
    (then ``job`` is finished)."""
    start = decisions.rp_start(job)
    if not start.skip:
        return start, 1
    return _next_pass(decisions, job, _skipped(start, decisions.config.max_iterations)), 2


def _next_pass(
    decisions: Decisions, job: Job, result: PassSummary, *, stop: bool = False
) -> rules.PassStart | None:
    """After a pass: the ILP pass's start, or None when the region is finished (``stop``:
    finish it, skipping the ILP pass)."""
    if job.phase == 0:
        start = decisions.ilp_start(job, result)
        if not (start.skip or stop):
            return start
        result = _skipped(start, decisions.config.max_iterations)
    decisions.finish(job, result)
    return None
