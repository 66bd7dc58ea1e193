"""The parallel two-pass ant colony: construction (`construct`), the device iteration loop
(`loop`), and the driver with `schedule` / `solve_batch` (`solve`)."""

from jaxsched.colony.params import ColonyConfig, ColonyParams, default_params
from jaxsched.colony.solve import Options, Result, schedule, solve_batch

__all__ = [
    "ColonyConfig",
    "ColonyParams",
    "Options",
    "Result",
    "default_params",
    "schedule",
    "solve_batch",
]
