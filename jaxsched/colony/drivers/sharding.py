"""The colony on many devices and processes: each batch is one `jax.shard_map` call.

The mesh has two axes over the run's devices (`select_devices`, process-major, so each process
holds whole rows): `REGION_AXIS` rows and `ANT_AXIS` columns.

* Regions are split over the rows. Each row runs `core.init` / `core.run` / `core.solution` on
  its own regions (the ``lax.pmax`` over the "regions" `vmap` and the loop predicates stay on
  the row), so nothing crosses devices inside the loop and a row stops when its regions are
  done; `run` ends with one ``pmin`` telling every process whether all rows are done.
* When a group has fewer regions than a process has devices, the columns split each region's
  ants (whole wavefronts, `core.step`'s ``ant_axis``, `antshard`): the iteration winner is the only
  collective of an iteration; the pheromone update is then the same on every column.

Results do not depend on the layout: a region's stream is ``fold_in(key, fingerprint)``, its
ants' seeds are drawn as on one device and sliced, and padding regions are skipped. Every
process runs the same calls in the same order (`plan_calls` agrees on them through
`jaxsched.distributed.allgather_json`), each feeding its own regions
(`jax.make_array_from_process_local_data`) and reading back its own rows (`local_rows`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from jaxsched.colony.core import DONE, ColonyState, init, run, solution
from jaxsched.colony.drivers.planning import Placement, batch_cap, choose_batch
from jaxsched.colony.params import ColonyConfig, ColonyParams
from jaxsched.colony.passes.transitions import Solution
from jaxsched.colony.problem import ColonyProblem
from jaxsched.compilation import COMPILED
from jaxsched.distributed import allgather_json, barrier
from jaxsched.errors import InputError
from jaxsched.problem.padded import PaddedShape
from jaxsched.problem.region import Region

#: Mesh axes: regions are split over rows, one region's ants over columns.
REGION_AXIS, ANT_AXIS = "region_shards", "ant_shards"


def select_devices(devices: int | str) -> list[jax.Device]:
    """The run's devices: ``"all"``, or the first ``devices`` of every process; ordered by
    process, then id. Raises `InputError` when a process has fewer."""
    local = len(jax.local_devices())
    count = local if devices == "all" else devices
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= local:
        raise InputError(
            f"devices must be 'all' or an integer in 1..{local} (the devices of each process), "
            f"got {devices!r}"
        )
    by_process: dict[int, list[jax.Device]] = {}
    for d in sorted(jax.devices(), key=lambda device: (device.process_index, device.id)):
        by_process.setdefault(d.process_index, []).append(d)
    if len({len(ds) for ds in by_process.values()}) > 1:
        raise InputError("every process of a multi-process run needs the same number of devices")
    return [d for p in sorted(by_process) for d in by_process[p][:count]]


def ant_columns(most: int, per_process: int, wavefronts: int) -> int:
    """Columns of the mesh: 1 when a process has a region for every device, else the largest
    count dividing both the process's devices and the wavefronts that leaves each of the
    process's ``most`` regions a row."""
    fits = [c for c in range(1, per_process + 1) if c * max(most, 1) <= per_process]
    return max(c for c in [1, *fits] if per_process % c == 0 and wavefronts % c == 0)


def _group_calls(idxs: list[int], shape: PaddedShape, cfg: ColonyConfig, most: int, options,
                 devices: Sequence[jax.Device]) -> list:  # fmt: skip
    """The calls of one group: ``most`` = the largest count of its regions on one process.
    Each row holds a batch of `choose_batch` regions, as one device would (the ants of one
    device, ``cfg.ants / columns``, within the per-device budget)."""
    per_process = len(devices) // jax.process_count()
    cols = ant_columns(most, per_process, cfg.wavefronts)
    rows = per_process // cols
    one_device = dataclasses.replace(cfg, wavefronts=cfg.wavefronts // cols)
    cap = batch_cap(shape, one_device, options.memory_budget, options.max_batch)
    per_row = choose_batch(max(1, -(-most // rows)), cap)
    mesh = Mesh(np.array(devices).reshape(-1, cols), (REGION_AXIS, ANT_AXIS))
    place, take = Placement(mesh, per_row), rows * per_row
    return [
        dict(
            indices=idxs[k * take : (k + 1) * take],
            shape=shape,
            config=cfg,
            size=place.local_batch,
            placement=place,
        )
        for k in range(max(1, -(-most // take)))
    ]


def plan_calls(groups: dict, options, devices: Sequence[jax.Device]) -> list:
    """Every call of the run, the same sequence on every process (collective).

    ``groups`` maps (bucket, config) to (this process's region indices, joined shape), as
    `planning.group_regions` returns them. The processes' groups are gathered and joined; each
    group is cut into calls of equal shape (one compilation per group) sized by the per-device
    memory budget. Returns the fields of a `planning.Batch` per call, by name: local indices,
    shape, config, regions this process feeds, `Placement`.
    """
    mine = [[n, dataclasses.asdict(c), s._asdict(), len(i)] for (n, c), (i, s) in groups.items()]
    joined: dict[tuple[int, ColonyConfig], tuple[PaddedShape, int]] = {}
    for items in allgather_json(mine):
        for n, cfg, shape, count in items:
            key = (n, ColonyConfig(**cfg))
            old = joined.get(key, (PaddedShape(**shape), 0))
            joined[key] = (old[0].join(PaddedShape(**shape)), max(old[1], count))
    calls = []
    for key in sorted(joined, key=lambda group: (group[0], -group[1].ants, repr(group[1]))):
        shape, most = joined[key]
        idxs = groups.get(key, ([], None))[0]
        calls += _group_calls(idxs, shape, key[1], most, options, devices)
    return calls


def placeholder() -> Region:
    """A one-instruction region: the batch of a process with no region left in a call
    (marked not real, so it is skipped)."""
    return Region.build("placeholder", [("nop", (), ())], {}, [])


# ------------------------------------------------------------------------------ device calls
def _specs(prob: ColonyProblem) -> ColonyProblem:
    """`shard_map` specs of a problem: regions over the rows, the machine replicated."""
    specs = jax.tree.map(lambda _: P(REGION_AXIS), prob)
    return specs._replace(machine=jax.tree.map(lambda _: P(), prob.machine))


def _ant_axis(mesh: Mesh) -> str | None:
    """The mesh axis a region's ants are split over (None: one column, all ants here)."""
    return ANT_AXIS if mesh.shape[ANT_AXIS] > 1 else None


def _shard(fn, mesh: Mesh, in_specs: tuple, out_specs):
    # check_vma off: the ant columns compute replicated values from varying ones (the winner
    # after its reduction), which the type check cannot see.
    return jax.shard_map(fn, mesh=mesh, in_specs=in_specs, out_specs=out_specs, check_vma=False)


def _all_done(state: ColonyState) -> jax.Array:
    """int32[]: 1 when every region of every row is done (the same on every device)."""
    return lax.pmin((state.phase == DONE).all().astype(jnp.int32), (REGION_AXIS, ANT_AXIS))


@partial(jax.jit, static_argnames=("config", "mesh", "impl"))
def _init(prob, params, key_data, *, config: ColonyConfig, mesh: Mesh, impl: str):
    """(initial state, int32[]: 1 when every pass of every region is skipped)."""

    def fn(local_problem, par, local_key_data):
        s = init(
            jax.random.wrap_key_data(local_key_data, impl=impl), local_problem, par, config=config
        )
        return s, _all_done(s)

    specs = (_specs(prob), P(), P())
    return _shard(fn, mesh, specs, (P(REGION_AXIS), P()))(prob, params, key_data)


@partial(jax.jit, static_argnames=("config", "mesh"), donate_argnames=("state",))
def _run(state, prob, params, steps, *, config: ColonyConfig, mesh: Mesh):
    """(state after up to ``steps`` iterations, int32[]: 1 when every region of every row is
    done)."""

    def fn(local_state, local_problem, par, max_steps):
        local_state = run(
            local_state, local_problem, par, max_steps, config=config, ant_axis=_ant_axis(mesh)
        )
        return local_state, _all_done(local_state)

    specs = (P(REGION_AXIS), _specs(prob), P(), P())
    return _shard(fn, mesh, specs, (P(REGION_AXIS), P()))(state, prob, params, steps)


@partial(jax.jit, static_argnames=("mesh",))
def _solution(state, prob, params, *, mesh: Mesh) -> Solution:
    specs = (P(REGION_AXIS), _specs(prob), P())
    return _shard(solution, mesh, specs, P(REGION_AXIS))(state, prob, params)


def local_rows(tree):
    """This process's rows of a pytree of arrays split over `REGION_AXIS` (NumPy, in the order
    the process fed them)."""

    def rows(x: jax.Array) -> np.ndarray:
        parts = {s.index[0].start or 0: s.data for s in x.addressable_shards}
        return np.concatenate([np.asarray(parts[k]) for k in sorted(parts)])

    return jax.tree.map(rows, tree)


class ShardedCalls:
    """The device calls of `jaxsched.colony.host.solve_batch` for a `Placement` (collective:
    every process makes the same calls). ``init`` and ``run`` return (state, flag);
    ``finished(flag)`` is True when every region of the call is done, on every process;
    ``slowest(seconds)`` is the longest of the processes' times for the last call, so every
    process picks the same next chunk."""

    def __init__(self, config: ColonyConfig, place: Placement) -> None:
        self.config, self.mesh = config, place.mesh

    def prepare(self, prob: ColonyProblem) -> ColonyProblem:
        """This process's part of the batch as a global array over the mesh (a problem
        already placed there is returned as it is)."""

        def put(x, spec: P) -> jax.Array:
            sharding = NamedSharding(self.mesh, spec)
            if isinstance(x, jax.Array) and x.sharding == sharding:
                return x
            return jax.make_array_from_process_local_data(sharding, np.asarray(x))

        return jax.tree.map(put, prob, _specs(prob))

    def _init_args(self, key: jax.Array) -> tuple[dict, np.ndarray]:
        static = {"config": self.config, "mesh": self.mesh, "impl": jax.random.key_impl(key)}
        return static, np.asarray(jax.random.key_data(key))

    def compile(self, prob: ColonyProblem, params: ColonyParams, key: jax.Array) -> None:
        """Compile init, run and solution for ``prob`` (placed by `prepare`)."""
        static, kd = self._init_args(key)
        exe, _ = COMPILED.compiled(_init, static, prob, _host(params), kd)
        state = exe.out_info[0]  # shapes and shardings
        static = {"config": self.config, "mesh": self.mesh}
        COMPILED.compiled(_run, static, state, prob, _host(params), np.int32(1))
        COMPILED.compiled(_solution, {"mesh": self.mesh}, state, prob, _host(params))

    def init(self, prob: ColonyProblem, params: ColonyParams, key: jax.Array):
        # The processes start the call's collectives together (each compiled it at its own
        # pace): the transport connects them on first use with a 30 s limit.
        barrier()
        static, kd = self._init_args(key)
        return COMPILED(_init, static, prob, _host(params), kd)

    def run(self, state, prob, params, steps: int):
        static = {"config": self.config, "mesh": self.mesh}
        return COMPILED(_run, static, state, prob, _host(params), np.int32(steps))

    def finished(self, flag: jax.Array) -> bool:
        return bool(np.asarray(flag.addressable_data(0)))

    def slowest(self, seconds: float) -> float:
        return max(allgather_json(seconds))

    def agree(self, flag: bool) -> bool:
        """True when ``flag`` is True on any process (every process gets the same answer)."""
        return any(allgather_json(bool(flag)))

    def solution(self, state, prob, params) -> Solution:
        return local_rows(COMPILED(_solution, {"mesh": self.mesh}, state, prob, _host(params)))


def _host(tree):
    """Host copies (replicated arguments of a multi-process call must not live on one
    device)."""
    return jax.tree.map(np.asarray, tree)
