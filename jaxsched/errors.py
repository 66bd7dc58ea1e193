"""Error classes shared by the whole package (lowest layer: imports nothing from jaxsched).

`InputError` is the base of every error a user can fix by changing their input (a malformed
region file, bad MIR, an impossible makespan option, a bad parameter value). The CLI prints such
errors as one line with exit code 2; any other exception is an internal error (exit 1).
"""

from __future__ import annotations


class InputError(ValueError):
    """Bad input the user can fix; the message names the problem and the place."""
