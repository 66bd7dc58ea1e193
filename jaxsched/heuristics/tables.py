"""Array helpers of the padded-region tables, written once over an array namespace ``xp``:
`jax.numpy` on the device (traceable, under `jit` and `vmap`) or `numpy` on the host (nothing
to compile), with the same results, dtypes and shapes on both.

The tables give the sentinels (instruction ``N``, register ``R``, ready slot ``K``) a dummy
row (`append_row`), so that padding reads and writes are harmless. NumPy has no functional
scatter (``x.at[i].add(v)``): `scatter_add` and `scatter_set` are the one place that tells
the two namespaces apart.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np

Array = Any  # a NumPy or JAX array
Index = Any  # an index (array, slice or tuple of them) as ``x[index]`` takes it

#: Larger than any count, cycle, id or cost of a region: "never" / "none" in the tables
#: (a dummy instruction's predecessor count) and in min / max reductions.
BIG = 2**30


def append_row(values: Array, fill: Any, xp: ModuleType) -> Array:
    """``values`` (any shape [M, ...]) with one extra leading-axis row of ``fill`` (the
    sentinel's dummy row): shape [M + 1, ...], dtype of ``values``."""
    values = xp.asarray(values)
    row = xp.full((1, *values.shape[1:]), fill, values.dtype)
    return xp.concatenate([values, row], axis=0)


def scatter_add(target: Array, index: Index, values: Array, xp: ModuleType) -> Array:
    """A new array: ``target`` with ``values`` added at ``index`` (repeated indices add up;
    ``values`` broadcast to ``target[index]``'s shape); ``target`` is unchanged."""
    if xp is np:
        out = target.copy()
        np.add.at(out, index, values)
        return out
    return target.at[index].add(values)


def scatter_set(target: Array, index: Index, values: Array, xp: ModuleType) -> Array:
    """A new array: ``target`` with ``values`` written at ``index``; ``target`` is unchanged.
    A repeated index gets one of its values (which one is unspecified: callers overwrite such
    slots, e.g. a sentinel's, afterwards)."""
    if xp is np:
        out = target.copy()
        out[index] = values
        return out
    return target.at[index].set(values)
