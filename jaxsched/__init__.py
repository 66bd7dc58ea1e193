"""jaxsched: GPU instruction scheduling by vectorised search in JAX.

The curated public API (docs/api.md): the names below, and each subpackage's ``__all__``:
`jaxsched.problem` (regions and their files), `jaxsched.machines`, `jaxsched.heuristics`,
`jaxsched.colony`, `jaxsched.makespan`, `jaxsched.exact`, `jaxsched.tune`; the front ends are
`jaxsched.io.mir`, `jaxsched.io.ptx` and `jaxsched.mir_files`. Every other module and name is
internal and may change.
"""

from jaxsched import colony as colony
from jaxsched import exact as exact
from jaxsched import io as io
from jaxsched import machines as machines
from jaxsched import makespan as makespan
from jaxsched.colony import ColonyParams, Options, Result, default_params, schedule
from jaxsched.errors import InputError
from jaxsched.machines import Machine, get_machine, gfx906
from jaxsched.problem import Region, RegionError, load_region, load_regions, save_regions
from jaxsched.verify import InvalidSchedule, ScheduleReport, verify

__version__ = "0.1.0"

__all__ = [
    "ColonyParams",
    "InputError",
    "InvalidSchedule",
    "Machine",
    "Options",
    "Region",
    "RegionError",
    "Result",
    "ScheduleReport",
    "default_params",
    "get_machine",
    "gfx906",
    "load_region",
    "load_regions",
    "save_regions",
    "schedule",
    "verify",
]
