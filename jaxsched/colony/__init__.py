"""The parallel two-pass ant colony.

Device core (pure functions over pytrees; `jit`, `vmap`, `scan` them):
  * `problem(regions, machine)` -> `ColonyProblem` (prepared on the host: padding, starts
    and bounds, nothing compiled);
  * `init(key, problem, params)` -> `ColonyState`; `step(state, problem, params)` one iteration
    of every region's current pass; `solution(state, problem, params)` -> `Solution`;
  * `run(state, problem, params, k)` up to k steps;
  * `solve(key, problem, params)` = init, step until done, solution.

Host shell: `schedule(regions, machine, seed=...)` -> one `Result` per region.
Modules: `construct` (ants), `iteration` (one colony iteration), `problem` and `derive` (the
problem, on the host), `core`, `host`.
"""

from jaxsched.colony.core import (
    ColonyState,
    Solution,
    init,
    run,
    solution,
    solve,
    step,
)
from jaxsched.colony.host import Result, schedule, warmup
from jaxsched.colony.params import ColonyConfig, ColonyParams, default_params
from jaxsched.colony.problem import ColonyProblem, problem
from jaxsched.colony.settings import Options

__all__ = [
    "ColonyConfig",
    "ColonyParams",
    "ColonyProblem",
    "ColonyState",
    "Options",
    "Result",
    "Solution",
    "default_params",
    "init",
    "problem",
    "run",
    "schedule",
    "solution",
    "solve",
    "step",
    "warmup",
]
