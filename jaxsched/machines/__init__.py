"""Machine models: issue width, register files, occupancy tables."""

from jaxsched.machines.model import Machine, RegisterFile, generic, get_machine, gfx906

__all__ = [
    "Machine",
    "RegisterFile",
    "generic",
    "get_machine",
    "gfx906",
]
