"""Device memory of colony calls: the estimate from shapes, the ants that fit a budget, and the
batch sizes a call may use.

The budget is per device: a call on several devices gives each device its own share of the
batch (and, when a region's ants are split, its share of the ants).
"""

from __future__ import annotations

import dataclasses

from jaxsched.colony.params import ColonyConfig
from jaxsched.problem.padded import PaddedShape

#: Default device-memory budget of one colony call on one device (bytes); larger batches are
#: split.
DEFAULT_MEMORY_BUDGET = 2 << 30


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
