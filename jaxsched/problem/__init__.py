"""Problem model: regions, their file format and their padded device form."""

from jaxsched.problem.format import load_region, load_regions, save_regions
from jaxsched.problem.region import Edge, Instruction, Region, RegionError, Register

__all__ = [
    "Edge",
    "Instruction",
    "Region",
    "RegionError",
    "Register",
    "load_region",
    "load_regions",
    "save_regions",
]
