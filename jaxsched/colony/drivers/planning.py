"""Where regions are batched: the calls of a `schedule` run planned on the host.

Regions are grouped by instruction bucket (`canonical_shape`) and by the config that fits
each region alone in the memory budget (`fit_ants`: fewer wavefronts, then a float16
pheromone table), then split into calls of a few batch sizes (`batch_sizes`, `choose_batch`)
within the budget (`estimate_bytes`, `batch_cap`). With several devices or processes,
`jaxsched.colony.drivers.sharding.plan_calls` turns the same groups into calls every process
agrees on.

The budget is per device: a call on several devices gives each device its own share of the
batch (and, when a region's ants are split, its share of the ants).
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Sequence
from typing import NamedTuple

import jax

from jaxsched.colony.params import ColonyConfig
from jaxsched.colony.problem import canonical_shape
from jaxsched.colony.settings import Options
from jaxsched.machines.model import Machine
from jaxsched.problem.padded import PaddedShape, padded_shape
from jaxsched.problem.region import Region


def estimate_bytes(
    shape: PaddedShape, ants: int, batch: int = 1, pheromone_dtype: str = "float32"
) -> int:
    """Rough device bytes of one colony call (pheromone, per-ant state, results, temporaries).

    Calibrated with XLA's memory analysis of compiled calls (N = 512..2048: the real use is
    0.6-0.7x this estimate; the pheromone table and its in-loop copy dominate large regions).
    """
    N, K, R, F = shape.n + 1, shape.ready + 1, shape.regs + 1, shape.files
    per_ant = 4 * (2 * K + 4 * N + 3 * R + 4 * F + 8) + R
    per_ant += 4 * shape.ready * 8  # scoring temporaries over the ready slots
    tau_bytes = 2 if pheromone_dtype == "float16" else 4
    per_region = 3 * tau_bytes * N * N + ants * per_ant * 2
    return batch * per_region


def fit_ants(shape: PaddedShape, config: ColonyConfig, budget: int) -> ColonyConfig:
    """The config for one region of ``shape`` within ``budget`` bytes: all wavefronts if they
    fit, else fewer (halving), else a float16 pheromone table with as many as fit; a
    `MemoryError` naming the need when not even one wavefront fits."""
    for dtype in (config.pheromone_dtype, "float16"):
        waves = config.wavefronts
        while waves > 1 and estimate_bytes(shape, waves * config.wavefront_size, 1, dtype) > budget:
            waves //= 2
        if estimate_bytes(shape, waves * config.wavefront_size, 1, dtype) <= budget:
            return dataclasses.replace(config, wavefronts=waves, pheromone_dtype=dtype)
    need = estimate_bytes(shape, config.wavefront_size, 1, "float16")
    raise MemoryError(
        f"a region of {shape.n} instructions (padded) needs about {need / 2**20:.0f} MiB with one "
        f"wavefront of {config.wavefront_size} ants, over the memory budget of "
        f"{budget / 2**20:.0f} MiB; raise the memory budget or lower the wavefront size"
    )


def batch_sizes(cap: int) -> tuple[int, ...]:
    """The batch sizes (regions per device) a call uses up to ``cap`` (a power of two): powers
    of 4 below it, and ``cap``. Few sizes mean few executables per bucket (`warmup` compiles
    them all)."""
    out, b = [], 1
    while b < cap:
        out.append(b)
        b *= 4
    return (*out, cap)


def choose_batch(count: int, cap: int) -> int:
    """Batch size for ``count`` regions of a group (all its calls use it): one call padded to
    the next size up to ``cap``; beyond, the largest size padding at most 1/8 more."""
    sizes = batch_sizes(cap)
    if count <= cap:
        return min(b for b in sizes if b >= count)
    return max(b for b in sizes if -(-count // b) * b * 8 <= count * 9)


def batch_cap(shape: PaddedShape, config: ColonyConfig, budget: int, max_batch: int) -> int:
    """The largest batch size (a power of two) of regions of ``shape`` run with ``config``
    (fitted by `fit_ants`; its ants on one device) within ``budget`` bytes and ``max_batch``."""
    per_region = estimate_bytes(shape, config.ants, 1, config.pheromone_dtype)
    cap = max(1, min(max_batch, budget // per_region))
    return 1 << (cap.bit_length() - 1)


class Placement(NamedTuple):
    """Where one call runs: the mesh, and how many regions each row holds."""

    mesh: jax.sharding.Mesh  # devices [rows, columns], axes (REGION_AXIS, ANT_AXIS)
    per_row: int

    @property
    def local_batch(self) -> int:
        """Regions this process feeds to the call (its rows times ``per_row``)."""
        return self.mesh.devices.shape[0] // jax.process_count() * self.per_row


class Batch(NamedTuple):
    """One colony call of `schedule`."""

    indices: list[int]  # regions of the call (input positions; in a multi-process run, this
    # process's, possibly none)
    shape: PaddedShape  # the group's padded shape
    config: ColonyConfig  # ants (and pheromone dtype) fitted to the memory budget
    size: int  # regions this process feeds (>= len(indices); padded)
    placement: Placement | None = None  # the devices of the call; None: the default


def group_regions(
    regions: Sequence[Region], machine: Machine, config: ColonyConfig, options: Options
) -> dict[tuple[int, ColonyConfig], tuple[list[int], PaddedShape]]:
    """Regions grouped by instruction bucket and by the config that fits each region alone in
    the memory budget (so a region's ants never depend on the other regions of the call):
    (bucket, config) -> (region indices, a padded shape they all fit)."""
    groups: dict[tuple[int, ColonyConfig], list[int]] = {}
    shapes: dict[int, PaddedShape] = {}
    for i, r in enumerate(regions):
        shapes[i] = canonical_shape(padded_shape(r, machine))
        cfg = fit_ants(shapes[i], config, options.memory_budget)
        groups.setdefault((shapes[i].n, cfg), []).append(i)
    out = {}
    for (n, cfg), idxs in groups.items():
        if cfg != config:
            warnings.warn(
                f"regions of {n} instructions (padded) run with {cfg.ants} ants "
                f"instead of {config.ants} and a {cfg.pheromone_dtype} pheromone table to fit "
                f"the memory budget of {options.memory_budget >> 20} MiB",
                stacklevel=4,
            )
        shape = shapes[idxs[0]]
        for i in idxs[1:]:
            shape = shape.join(shapes[i])
        out[n, cfg] = (idxs, shape)
    return out


def plan_batches(
    regions: Sequence[Region], machine: Machine, config: ColonyConfig, options: Options
) -> list[Batch]:
    """Batches of regions on the default device: `group_regions`, each group split into calls
    of one batch size (`choose_batch`: few distinct batch shapes) that fit the memory budget."""
    groups = group_regions(regions, machine, config, options)
    return split_groups(groups, options)


def split_groups(groups: dict, options: Options) -> list[Batch]:
    """The calls of `group_regions`'s groups on one device: each group split into calls of one
    batch size (`choose_batch`) within the memory budget, smallest buckets first."""
    plan = []
    for (_, cfg), (idxs, shape) in sorted(
        groups.items(), key=lambda group: (group[0][0], -group[0][1].ants)
    ):
        cap = batch_cap(shape, cfg, options.memory_budget, options.max_batch)
        size = choose_batch(len(idxs), cap)
        plan += [
            Batch(indices=idxs[k : k + size], shape=shape, config=cfg, size=size)
            for k in range(0, len(idxs), size)
        ]
    return plan
