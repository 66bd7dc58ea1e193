"""Worst-case warp makespan on one SM by parallel simulated annealing.

Model and search follow ``warp-makespan.md``: W warps run the same kernel instruction string
(``L``/``C``/``S``/``D`` units) on one SM; a warp string fixes the order in which warps claim
cycles, the decoder turns it into a schedule, and annealing searches the string that maximises
the makespan. `exact_worst_case` proves the worst case on small instances.

Two layers:

* host functions (`estimate`, `decode`, `exact_worst_case`): validated input, NumPy results;
* a pure JAX core in the style of optax / evosax (`init`, `step`, `run` over `Tables`,
  `ChainState` and traced `AnnealParams`), usable under ``jax.jit``, ``jax.vmap`` and
  ``lax.scan``; `estimate` is a thin shell over it.

Limits (checked before anything is allocated) are the ``MAX_*`` / ``MIN_*`` constants, see
``docs/limits.md``.
"""

from jaxsched.makespan.anneal import (
    DEFAULT_MOVES,
    DEFAULT_T0,
    MAX_ITERATIONS,
    MOVES,
    AnnealParams,
    ChainState,
    init,
    make_params,
    random_strings,
    run,
    step,
    temperature,
)
from jaxsched.makespan.decoder import Decoded, Schedule, Tables, decode, tables
from jaxsched.makespan.exact import ExactBudgetExceeded, ExactResult, exact_worst_case
from jaxsched.makespan.host import (
    MAX_CHAINS,
    STARTS,
    EstimatePlan,
    MakespanResult,
    estimate,
    plan_estimate,
    start_strings,
)
from jaxsched.makespan.model import (
    DEFAULT_MEMORY_BUDGET,
    MAX_ISSUE,
    MAX_POSITIONS,
    MAX_SCHEDULERS,
    MAX_UNIT_CYCLES,
    MAX_WARPS,
    MIN_CAPACITY,
    SM,
    UNITS,
    MakespanError,
    Normalized,
    fixed_priority,
    lower_bound,
    most_pending,
    normalize,
    round_robin,
)

__all__ = [
    "DEFAULT_MEMORY_BUDGET",
    "DEFAULT_MOVES",
    "DEFAULT_T0",
    "MAX_CHAINS",
    "MAX_ISSUE",
    "MAX_ITERATIONS",
    "MAX_POSITIONS",
    "MAX_SCHEDULERS",
    "MAX_UNIT_CYCLES",
    "MAX_WARPS",
    "MIN_CAPACITY",
    "MOVES",
    "SM",
    "STARTS",
    "UNITS",
    "AnnealParams",
    "ChainState",
    "Decoded",
    "EstimatePlan",
    "ExactBudgetExceeded",
    "ExactResult",
    "MakespanError",
    "MakespanResult",
    "Normalized",
    "Schedule",
    "Tables",
    "decode",
    "estimate",
    "exact_worst_case",
    "fixed_priority",
    "init",
    "lower_bound",
    "make_params",
    "most_pending",
    "normalize",
    "plan_estimate",
    "random_strings",
    "round_robin",
    "run",
    "start_strings",
    "step",
    "tables",
    "temperature",
]
