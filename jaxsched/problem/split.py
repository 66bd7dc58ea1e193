"""Train / validation splits of region corpora that keep each source together.

Regions of one kernel source are alike (same code patterns, often near copies), so a split by
region would leak the validation set into training. `split_by_source` assigns whole sources
(the part of the region name before the first ``:``, e.g. ``rodinia/opencl/lavaMD/kernel``) to
one side by a hash of the source name: deterministic, and independent of file order.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from jaxsched.errors import InputError
from jaxsched.problem.region import Region


def source_of(region: Region) -> str:
    """The region's source: its name up to the first ``:`` (the whole name if none)."""
    return region.name.split(":", 1)[0]


def split_by_source(
    regions: Iterable[Region], valid_fraction: float = 0.2, *, salt: str = ""
) -> tuple[list[Region], list[Region]]:
    """(train, valid): a source goes to ``valid`` when the hash of ``salt + source`` falls in
    the first ``valid_fraction`` of the hash range. Orders within each side are kept."""
    if not 0.0 <= valid_fraction <= 1.0:
        raise InputError(f"valid_fraction must be in [0, 1], got {valid_fraction!r}")
    train: list[Region] = []
    valid: list[Region] = []
    for r in regions:
        digest = hashlib.sha256((salt + source_of(r)).encode()).digest()
        u = int.from_bytes(digest[:8], "little") / 2.0**64
        (valid if u < valid_fraction else train).append(r)
    return train, valid
