"""The region file format ``jaxsched.region/1`` (JSON; JSON Lines for many regions).

    {"format": "jaxsched.region/1",
     "name": "kernel:bb.2",
     "instructions": [{"text": "...", "defs": ["%5"], "uses": ["%3", "%4"]}, ...],
     "registers": {"%3": {"file": "VGPR", "width": 1}, ...},
     "edges": [[src, dst, latency], [src, dst, latency, "anti"], ...],
     "live_in": ["%3"], "live_out": ["%5"],
     "live_through": {"VGPR": 3, "SGPR": 10}}

See ``docs/region-format.md`` for the full rules.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from jaxsched.problem.region import Region, RegionError

FORMAT = "jaxsched.region/1"
_FIELDS = {
    "format",
    "name",
    "instructions",
    "registers",
    "edges",
    "live_in",
    "live_out",
    "live_through",
}


def region_from_dict(d: object, where: str = "<input>") -> Region:
    """Build a validated `Region` from a parsed JSON object; `RegionError` names the place."""
    if not isinstance(d, dict):
        raise RegionError(f"{where}: a region must be a JSON object, got {type(d).__name__}")
    name = d.get("name", where)
    if not isinstance(name, str):
        raise RegionError(f"{where}: 'name' must be a string")
    here = f"{where} (region {name!r})"
    fmt = d.get("format", FORMAT)
    if fmt != FORMAT:
        raise RegionError(f"{here}: unsupported format {fmt!r} (expected {FORMAT!r})")
    unknown = set(d) - _FIELDS
    if unknown:
        raise RegionError(f"{here}: unknown fields {sorted(unknown)}")
    for key, typ in (("instructions", list), ("registers", dict), ("edges", list)):
        if key not in d:
            if key == "registers" or key == "edges":
                continue
            raise RegionError(f"{here}: missing field {key!r}")
        if not isinstance(d[key], typ):
            raise RegionError(f"{here}: field {key!r} must be a JSON {typ.__name__}")
    for key in ("live_in", "live_out"):
        if key in d and (
            not isinstance(d[key], list) or not all(isinstance(x, str) for x in d[key])
        ):
            raise RegionError(f"{here}: field {key!r} must be a list of register names")
    if "live_through" in d and not isinstance(d["live_through"], dict):
        raise RegionError(f"{here}: field 'live_through' must be an object")
    try:
        return Region.build(
            name,
            d["instructions"],
            d.get("registers", {}),
            d.get("edges", []),
            d.get("live_in"),
            d.get("live_out"),
            d.get("live_through"),
        )
    except RegionError as e:
        raise RegionError(f"{where}: {e}") from None


def region_to_dict(region: Region) -> dict:
    """The JSON object of a region (explicit live_in / live_out, edges with their kind)."""
    return {
        "format": FORMAT,
        "name": region.name,
        "instructions": [
            {"text": i.text, "defs": list(i.defs), "uses": list(i.uses)}
            for i in region.instructions
        ],
        "registers": {
            k: {"file": r.file, "width": r.width} for k, r in sorted(region.registers.items())
        },
        "edges": [
            [e.src, e.dst, e.latency] if e.kind == "data" else [e.src, e.dst, e.latency, e.kind]
            for e in region.edges
        ],
        "live_in": list(region.live_in),
        "live_out": list(region.live_out),
        "live_through": dict(sorted(region.live_through.items())),
    }


def iter_regions(path: str | os.PathLike) -> Iterator[Region]:
    """Regions of a file, lazily: a JSON file holds one region (or a list of regions), a
    ``.jsonl`` file one region per non-empty line. Errors name the file and line."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise RegionError(f"{path}: cannot read ({e.strerror})") from None
    if not text.strip():
        raise RegionError(f"{path}: empty file (no regions)")
    if path.suffix == ".jsonl":
        count = 0
        for lineno, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            where = f"{path}:{lineno}"
            yield region_from_dict(_parse(line, where), where)
            count += 1
        if count == 0:
            raise RegionError(f"{path}: empty file (no regions)")
        return
    data = _parse(text, str(path))
    if isinstance(data, list):
        if not data:
            raise RegionError(f"{path}: empty list (no regions)")
        for k, item in enumerate(data):
            yield region_from_dict(item, f"{path}[{k}]")
    else:
        yield region_from_dict(data, str(path))


def load_regions(*paths: str | os.PathLike) -> list[Region]:
    """All regions of one or more files (see `iter_regions`)."""
    return [r for p in paths for r in iter_regions(p)]


def load_region(path: str | os.PathLike) -> Region:
    """The single region of a file; error if it holds several."""
    regions = load_regions(path)
    if len(regions) != 1:
        raise RegionError(f"{path}: holds {len(regions)} regions, expected one")
    return regions[0]


def save_regions(regions: Iterable[Region], path: str | os.PathLike) -> None:
    """Write regions: JSON Lines when ``path`` ends in ``.jsonl``, else one JSON region."""
    path = Path(path)
    regions = list(regions)
    if path.suffix == ".jsonl":
        with path.open("w") as f:
            for r in regions:
                f.write(json.dumps(region_to_dict(r), separators=(",", ":")) + "\n")
    else:
        if len(regions) != 1:
            raise ValueError(f"{path}: a .json file holds one region; use .jsonl for many")
        path.write_text(json.dumps(region_to_dict(regions[0]), indent=1) + "\n")


def _parse(text: str, where: str) -> object:
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise RegionError(
            f"{where}: invalid JSON at line {e.lineno} column {e.colno}: {e.msg}"
        ) from None
