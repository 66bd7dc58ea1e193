"""Worst-case warp makespan on one SM by parallel simulated annealing.

Model and search follow ``warp-makespan.md``: W warps run the same kernel instruction string
(``L``/``C``/``S``/``D`` units) on one SM; a warp string fixes the order in which warps claim
cycles, the decoder turns it into a schedule, and annealing searches the string that maximises
the makespan. `exact_worst_case` proves the worst case on small instances.
"""

from jaxsched.makespan.anneal import STARTS, MakespanResult, estimate
from jaxsched.makespan.decoder import Schedule, decode
from jaxsched.makespan.exact import ExactBudgetExceeded, ExactResult, exact_worst_case
from jaxsched.makespan.model import (
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
    "SM",
    "STARTS",
    "UNITS",
    "ExactBudgetExceeded",
    "ExactResult",
    "MakespanError",
    "MakespanResult",
    "Normalized",
    "Schedule",
    "decode",
    "estimate",
    "exact_worst_case",
    "fixed_priority",
    "lower_bound",
    "most_pending",
    "normalize",
    "round_robin",
]
