"""Problem model: regions, their file format and their padded device form."""

from jaxsched.problem.format import (
    FORMAT,
    iter_regions,
    load_region,
    load_regions,
    region_from_dict,
    region_to_dict,
    save_regions,
)
from jaxsched.problem.padded import (
    DeviceRegion,
    PaddedShape,
    bucket_size,
    common_shape,
    pad_region,
    padded_shape,
    stack,
)
from jaxsched.problem.region import (
    EDGE_KINDS,
    MAX_INSTRUCTIONS,
    Edge,
    Instruction,
    Region,
    RegionError,
    Register,
)

__all__ = [
    "EDGE_KINDS",
    "FORMAT",
    "MAX_INSTRUCTIONS",
    "DeviceRegion",
    "Edge",
    "Instruction",
    "PaddedShape",
    "Region",
    "RegionError",
    "Register",
    "bucket_size",
    "common_shape",
    "iter_regions",
    "load_region",
    "load_regions",
    "pad_region",
    "padded_shape",
    "region_from_dict",
    "region_to_dict",
    "save_regions",
    "stack",
]
