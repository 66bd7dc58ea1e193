"""jaxsched: GPU instruction scheduling by vectorised search in JAX."""

from jaxsched import machines
from jaxsched.machines import Machine, RegisterFile, generic, get_machine, gfx906
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

__version__ = "0.1.0"

__all__ = [
    "Edge", "Instruction", "Machine", "Region", "RegionError", "Register", "RegisterFile",
    "__version__", "generic", "get_machine", "gfx906", "load_region", "load_regions",
    "machines", "save_regions",
]
