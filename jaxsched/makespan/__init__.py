"""Worst-case warp makespan on one SM by parallel simulated annealing.

Model and search follow ``warp-makespan.md``: W warps run the same kernel instruction string
(``L``/``C``/``S``/``D`` units) on one SM; a warp string fixes the order in which warps claim
cycles, the decoder turns it into a schedule, and annealing searches the string that maximises
the makespan. `exact_worst_case` proves the worst case on small instances.

Two layers:

* host functions (`estimate`, `decode`, `exact_worst_case`): validated input, NumPy results;
* a pure JAX core with the colony's protocol (`jaxsched.colony`): ``init(key, problem, params,
  strings)``, ``step(state, problem, params)``, ``run(state, problem, params, steps)`` over the
  problem's `Tables`, a `ChainState` that holds the key, and traced `AnnealParams` from
  `default_params`; usable under ``jax.jit``, ``jax.vmap`` and ``lax.scan``; `estimate` is a thin
  shell over it. `kernel.run_fused` is `run` as one fused Pallas kernel per 64 steps (identical
  results; chosen by `estimate(annealing=...)`, docs/makespan.md).

Limits (checked before anything is allocated) are the ``MAX_*`` / ``MIN_*`` constants, see
``docs/limits.md``.
"""

from jaxsched.makespan.anneal import AnnealParams, ChainState, default_params, init, run, step
from jaxsched.makespan.decoder import Tables, decode, tables
from jaxsched.makespan.exact import exact_worst_case
from jaxsched.makespan.host import STARTS, MakespanResult, estimate, start_strings
from jaxsched.makespan.model import SM, MakespanError, normalize

__all__ = [
    "SM",
    "STARTS",
    "AnnealParams",
    "ChainState",
    "MakespanError",
    "MakespanResult",
    "Tables",
    "decode",
    "default_params",
    "estimate",
    "exact_worst_case",
    "init",
    "normalize",
    "run",
    "start_strings",
    "step",
    "tables",
]
