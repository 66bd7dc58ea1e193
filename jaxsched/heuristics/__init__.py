"""Heuristics and bounds: list scheduling priorities, length and RP lower bounds."""

from jaxsched.heuristics.list_scheduler import (
    DEFAULT_PRIORITY,
    PRIORITIES,
    HeuristicError,
    HostSchedule,
    ListSchedule,
    heuristic_schedule,
    list_schedule,
    list_schedule_batch,
    list_schedule_jit,
    normalize_priority,
    order_peak_rp,
    stall_schedule,
)

__all__ = [
    "DEFAULT_PRIORITY",
    "PRIORITIES",
    "HeuristicError",
    "HostSchedule",
    "ListSchedule",
    "heuristic_schedule",
    "list_schedule",
    "list_schedule_batch",
    "list_schedule_jit",
    "normalize_priority",
    "order_peak_rp",
    "stall_schedule",
]
