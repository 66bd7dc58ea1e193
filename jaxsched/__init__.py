"""jaxsched: GPU instruction scheduling by vectorised search in JAX.

The curated public API. Submodules: `jaxsched.problem` (regions, file format, padded form),
`jaxsched.machines`, `jaxsched.heuristics`, `jaxsched.colony`, `jaxsched.makespan`,
`jaxsched.exact`, `jaxsched.io` (MIR, PTX front ends).
"""

from jaxsched import colony, exact, io, machines, makespan
from jaxsched.colony import (
    ColonyConfig,
    ColonyParams,
    ColonyProblem,
    Options,
    Result,
    Solution,
    default_params,
    schedule,
)
from jaxsched.heuristics import heuristic_schedule, length_lower_bound, rp_lower_bound
from jaxsched.machines import Machine, MachineArrays, RegisterFile, generic, get_machine, gfx906
from jaxsched.problem import (
    Edge,
    Instruction,
    Region,
    RegionError,
    Register,
    load_region,
    load_regions,
    save_regions,
)
from jaxsched.problem.generate import generate_region, generate_regions
from jaxsched.verify import InvalidSchedule, ScheduleReport, verify, verify_order

__version__ = "0.1.0"

__all__ = [
    "ColonyConfig",
    "ColonyParams",
    "ColonyProblem",
    "Edge",
    "Instruction",
    "InvalidSchedule",
    "Machine",
    "MachineArrays",
    "Options",
    "Region",
    "RegionError",
    "Register",
    "RegisterFile",
    "Result",
    "ScheduleReport",
    "Solution",
    "__version__",
    "colony",
    "default_params",
    "exact",
    "generate_region",
    "generate_regions",
    "generic",
    "get_machine",
    "gfx906",
    "heuristic_schedule",
    "io",
    "length_lower_bound",
    "load_region",
    "load_regions",
    "machines",
    "makespan",
    "rp_lower_bound",
    "save_regions",
    "schedule",
    "verify",
    "verify_order",
]
