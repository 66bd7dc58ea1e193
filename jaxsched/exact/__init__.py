"""Exact, bound-guided search over partially specified schedules (both passes of the two-pass
problem): best-first branch and bound on schedule prefixes with a jitted, batched frontier
expansion. See `jaxsched.exact.search` for the method and the objectives."""

from jaxsched.exact.bounds import optimistic_bound, prefix_bound
from jaxsched.exact.expand import Children, Nodes, Params, expand, expand_impl
from jaxsched.exact.search import (
    OBJECTIVES,
    ExactError,
    ExactResult,
    TwoPassResult,
    solve_exact,
    solve_two_pass,
)
from jaxsched.exact.tables import Tables, build_tables

__all__ = [
    "OBJECTIVES",
    "Children",
    "ExactError",
    "ExactResult",
    "Nodes",
    "Params",
    "Tables",
    "TwoPassResult",
    "build_tables",
    "expand",
    "expand_impl",
    "optimistic_bound",
    "prefix_bound",
    "solve_exact",
    "solve_two_pass",
]
