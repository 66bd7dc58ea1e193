"""Heuristics and bounds: list scheduling priorities, length and RP lower bounds (JAX, and on
the host for padded NumPy regions: ``*_host``, written once over an array namespace where a
fixed-shape loop does not rule it out; `list_scheduler` and `bounds` say where and why not)."""

from jaxsched.heuristics.bounds import length_lower_bound, rp_lower_bound
from jaxsched.heuristics.list_scheduler import (
    HeuristicError,
    heuristic_schedule,
    issue_cycles,
    list_schedule,
    order_peak_rp,
)

__all__ = [
    "HeuristicError",
    "heuristic_schedule",
    "issue_cycles",
    "length_lower_bound",
    "list_schedule",
    "order_peak_rp",
    "rp_lower_bound",
]
