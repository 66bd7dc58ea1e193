"""Heuristics and bounds: list scheduling priorities, length and RP lower bounds."""

from jaxsched.heuristics.bounds import (
    head_times,
    length_lower_bound,
    length_lower_bound_jax,
    rp_lower_bound,
    rp_peak_lower_bound_jax,
    simple_length_lower_bound,
)
from jaxsched.heuristics.list_scheduler import (
    DEFAULT_PRIORITY,
    PRIORITIES,
    HeuristicError,
    HostSchedule,
    ListSchedule,
    heuristic_schedule,
    issue_cycles,
    list_schedule,
    list_schedule_batch,
    list_schedule_jit,
    normalize_priority,
    order_peak_rp,
    priority_codes,
    stall_schedule,
)

__all__ = [
    "DEFAULT_PRIORITY",
    "PRIORITIES",
    "HeuristicError",
    "HostSchedule",
    "ListSchedule",
    "head_times",
    "heuristic_schedule",
    "issue_cycles",
    "length_lower_bound",
    "length_lower_bound_jax",
    "list_schedule",
    "list_schedule_batch",
    "list_schedule_jit",
    "normalize_priority",
    "order_peak_rp",
    "priority_codes",
    "rp_lower_bound",
    "rp_peak_lower_bound_jax",
    "simple_length_lower_bound",
    "stall_schedule",
]
