"""Exact, bound-guided search over partially specified schedules (both passes of the two-pass
problem): best-first branch and bound on schedule prefixes with a jitted, batched frontier
expansion. See `jaxsched.exact.search` for the method and the objectives."""

from jaxsched.exact.search import (
    ExactError,
    ExactResult,
    TwoPassResult,
    solve_exact,
    solve_two_pass,
)

__all__ = [
    "ExactError",
    "ExactResult",
    "TwoPassResult",
    "solve_exact",
    "solve_two_pass",
]
