"""The region file format ``jaxsched.region/1`` (JSON; JSON Lines for many regions).

    {"format": "jaxsched.region/1",
     "name": "kernel:bb.2",
     "instructions": [{"text": "...", "defs": ["%5"], "uses": ["%3", "%4"]}, ...],
     "registers": {"%3": {"file": "VGPR", "width": 1}, ...},
     "edges": [[src, dst, latency], [src, dst, latency, "anti"], ...],
     "live_in": ["%3"], "live_out": ["%5"],
     "live_through": {"VGPR": 3, "SGPR": 10}}

See ``docs/region-format.md`` for the rules and ``docs/limits.md`` for the limits. Loading
checks the JSON structure before using it: any file (any bytes, size, nesting or JSON shape)
either loads or raises `RegionError` naming the file, the line (JSON Lines), the region and the
item.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from jaxsched.files import decode, open_binary, read_bytes, read_lines
from jaxsched.problem.region import FORMAT, Region, RegionError, brief

__all__ = [
    "FORMAT",
    "MAX_NUMBER_DIGITS",
    "MAX_REGION_BYTES",
    "iter_regions",
    "load_region",
    "load_regions",
    "region_from_dict",
    "region_to_dict",
    "save_regions",
]

#: Largest JSON text of one region: a line of a ``.jsonl`` file or a whole ``.json`` file.
MAX_REGION_BYTES = 256 << 20
#: Most digits in one JSON integer (every number of the format fits in far fewer).
MAX_NUMBER_DIGITS = 20

#: The whitespace characters of JSON (a line of only these is blank).
_JSON_SPACE = " \t\r\n"
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
    """Build a validated `Region` from a parsed JSON object; `RegionError` names the place.

    Only the JSON forms of docs/region-format.md are accepted: instructions and registers are
    objects, edges are lists (the tuple forms of `Region.build` are for Python callers).
    """
    if not isinstance(d, dict):
        raise RegionError(f"{where}: a region must be a JSON object, got {brief(d)}")
    name = d.get("name", where)
    if not isinstance(name, str):
        raise RegionError(f"{where}: 'name' must be a string, got {brief(name)}")
    here = f"{where} (region {brief(name)})" if "name" in d else where
    fmt = d.get("format", FORMAT)
    if fmt != FORMAT:
        raise RegionError(f"{here}: unsupported format {brief(fmt)} (expected {FORMAT!r})")
    unknown = sorted(set(d) - _FIELDS)
    if unknown:
        raise RegionError(f"{here}: unknown fields {brief(unknown)}")
    if "instructions" not in d:
        raise RegionError(f"{here}: missing field 'instructions'")
    _check_json_forms(d, here)
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


def _check_json_forms(d: dict, here: str) -> None:
    """Containers have the JSON type the format names (values are checked by `Region.build`)."""
    for key, typ in (
        ("instructions", list),
        ("registers", dict),
        ("edges", list),
        ("live_in", list),
        ("live_out", list),
        ("live_through", dict),
    ):
        if key in d and not isinstance(d[key], typ):
            kind = "list" if typ is list else "object"
            raise RegionError(f"{here}: field {key!r} must be a JSON {kind}, got {brief(d[key])}")
    for k, x in enumerate(d["instructions"]):
        if not isinstance(x, dict):
            raise RegionError(
                f'{here}: instruction {k} must be an object {{"text", "defs", "uses"}}, '
                f"got {brief(x)}"
            )
    for name, v in d.get("registers", {}).items():
        if not isinstance(v, dict):
            raise RegionError(
                f'{here}: register {brief(name)} must be an object {{"file", "width"}}, '
                f"got {brief(v)}"
            )


def region_to_dict(region: Region) -> dict:
    """The JSON object of a region (`Region.to_dict`)."""
    return region.to_dict()


def iter_regions(
    path: str | os.PathLike, keep: Callable[[int], bool] | None = None
) -> Iterator[Region]:
    """Regions of a file, lazily: a ``.json`` file holds one region (or a list of regions), a
    ``.jsonl`` file one region per non-empty line (lines end with ``\\n``); ``.gz`` files are
    decompressed (``regions.jsonl.gz``). Errors name the file and line.

    ``keep(k)`` (called in order for every region k of the file, just before it would be
    yielded): only kept regions are built and yielded; a ``.jsonl`` line not kept is not even
    parsed (a process of a multi-process run reads only its share this way).
    """
    path = Path(path)
    keep = keep or (lambda k: True)
    inner = Path(path.stem) if path.suffix == ".gz" else path
    with open_binary(path, RegionError) as f:
        if inner.suffix == ".jsonl":
            yield from _iter_jsonl(f, str(path), keep)
            return
        text = decode(
            read_bytes(f, str(path), RegionError, MAX_REGION_BYTES), str(path), RegionError
        )
    if not text.strip(_JSON_SPACE):
        raise RegionError(f"{path}: empty file (no regions)")
    data = _parse(text, str(path))
    if isinstance(data, list):
        if not data:
            raise RegionError(f"{path}: empty list (no regions)")
        for k, item in enumerate(data):
            if keep(k):
                yield region_from_dict(item, f"{path}[{k}]")
    elif keep(0):
        yield region_from_dict(data, str(path))


def _iter_jsonl(f, path: str, keep: Callable[[int], bool]) -> Iterator[Region]:
    count = 0
    for lineno, raw in read_lines(f, path, RegionError, MAX_REGION_BYTES):
        where = f"{path}:{lineno}"
        text = decode(raw, where, RegionError, one_line=True)
        if not text.strip(_JSON_SPACE):
            continue
        if keep(count):
            yield region_from_dict(_parse(text, where), where)
        count += 1
    if count == 0:
        raise RegionError(f"{path}: empty file (no regions)")


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
                f.write(json.dumps(r.to_dict(), separators=(",", ":")) + "\n")
    else:
        if len(regions) != 1:
            raise RegionError(f"{path}: a .json file holds one region; use .jsonl for many")
        path.write_text(json.dumps(regions[0].to_dict(), indent=1) + "\n")


# ---------------------------------------------------------------------- strict JSON
class _Reject(Exception):
    """Raised by the JSON hooks; carries the message."""


def _object(pairs: list[tuple[str, object]]) -> dict:
    d = dict(pairs)
    if len(d) != len(pairs):
        seen: set[str] = set()
        for k, _ in pairs:
            if k in seen:
                raise _Reject(f"duplicate key {brief(k)} in an object")
            seen.add(k)
    return d


def _int(s: str) -> int:
    if len(s.lstrip("-")) > MAX_NUMBER_DIGITS:
        raise _Reject(f"an integer of {len(s.lstrip('-'))} digits (at most {MAX_NUMBER_DIGITS})")
    return int(s)


def _constant(s: str) -> object:
    raise _Reject(f"{s} is not a JSON value")


_DECODER = json.JSONDecoder(object_pairs_hook=_object, parse_int=_int, parse_constant=_constant)


def _parse(text: str, where: str) -> object:
    """Strict JSON: no duplicate keys, no NaN/Infinity, bounded integers and nesting."""
    try:
        return _DECODER.decode(text)
    except json.JSONDecodeError as e:
        raise RegionError(
            f"{where}: invalid JSON at line {e.lineno} column {e.colno}: {e.msg}"
        ) from None
    except _Reject as e:
        raise RegionError(f"{where}: invalid region file: {e}") from None
    except RecursionError:
        raise RegionError(f"{where}: invalid region file: JSON nested too deeply") from None
