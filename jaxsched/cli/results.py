"""The results file of ``jaxsched schedule --out``: a header with the run's settings, then one
record per region in input order; a journal while the run goes; resume.

Layout of ``OUT`` (JSON Lines)::

    {"jaxsched": "results/1", "settings": {...}}      # seed, machine, ants, parameters, ...
    {"name": ..., "cycles": [...], ..., "fingerprint": ...}   # one per region, input order

While a run goes, records are appended (and flushed) to ``OUT.partial`` as batches finish; at
the end ``OUT`` is written in input order through a temporary file and a rename (atomic) and the
journal is removed. ``--resume`` reads ``OUT`` and ``OUT.partial``, refuses files written with
other settings, keeps every complete record whose region (name and content fingerprint) is in the
input, and redoes the rest. Since each region's random stream is keyed by its content, a resumed
run writes the same file as an uninterrupted one (timing fields aside).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from jaxsched.cli.main import UsageError

FORMAT = "results/1"
#: Fields every complete record has (`jaxsched.colony.Result` fields and the CLI's own).
REQUIRED = (
    "name",
    "cycles",
    "order",
    "length",
    "peak_rp",
    "occupancy",
    "rp_cost",
    "iterations",
    "source",
    "instructions",
    "fingerprint",
    "verified",
)
#: Fields that differ between identical runs (timings).
TIMING = ("compile_seconds", "run_seconds")


def header(settings: dict) -> str:
    return json.dumps({"jaxsched": FORMAT, "settings": settings})


def journal_path(out: Path) -> Path:
    return out.with_name(out.name + ".partial")


def _complete(rec: object, expected: dict[str, tuple[int, int]]) -> bool:
    """A record is kept when it is complete and its region (name, fingerprint, size) is in
    the input: ``expected`` maps names to (fingerprint, instructions)."""
    if not isinstance(rec, dict) or any(k not in rec for k in REQUIRED):
        return False
    want = expected.get(rec["name"]) if isinstance(rec["name"], str) else None
    return (
        want is not None
        and (rec["fingerprint"], rec["instructions"]) == want
        and isinstance(rec["order"], list)
        and len(rec["order"]) == want[1]
    )


def _read(path: Path, settings: dict, expected: dict) -> dict[str, dict]:
    """Complete records of one results file or journal (by name); `UsageError` if its header
    names other settings."""
    records: dict[str, dict] = {}
    lines = path.read_text(encoding="utf-8", errors="replace").split("\n")
    try:
        head = json.loads(lines[0])
    except json.JSONDecodeError:
        head = None
    if not isinstance(head, dict) or head.get("jaxsched") != FORMAT:
        raise UsageError(f"{path}: not a jaxsched results file (no '{FORMAT}' header line)")
    if head.get("settings") != settings:
        theirs = head.get("settings") or {}
        diff = sorted(k for k in set(theirs) | set(settings) if theirs.get(k) != settings.get(k))
        raise UsageError(
            f"--resume: {path} was written with other settings ({', '.join(diff)} differ); "
            "use the same options, or run without --resume to start over"
        )
    for lineno, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            rec = None
        if _complete(rec, expected):
            records[rec["name"]] = rec
        else:
            print(
                f"jaxsched schedule: {path}:{lineno}: redoing an incomplete or stale record",
                file=sys.stderr,
            )
    return records


def resume(out: Path, settings: dict, expected: dict[str, tuple[int, int]]) -> dict[str, dict]:
    """Records already done (from ``out`` and its journal), by name."""
    done: dict[str, dict] = {}
    for path in (out, journal_path(out)):
        if path.exists():
            done.update(_read(path, settings, expected))
    return done


def write_atomic(path: Path, lines: Sequence[str]) -> None:
    """Write ``lines`` to ``path`` through a temporary file in the same folder and a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write("".join(line + "\n" for line in lines))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class Journal:
    """``OUT.partial``: the header and the records done so far (appended and flushed)."""

    def __init__(self, out: Path, settings: dict, done: Sequence[dict]) -> None:
        self.path = journal_path(out)
        write_atomic(self.path, [header(settings), *(json.dumps(r) for r in done)])
        self._file = self.path.open("a", encoding="utf-8")

    def add(self, records: Sequence[dict]) -> None:
        self._file.write("".join(json.dumps(r) + "\n" for r in records))
        self._file.flush()
        os.fsync(self._file.fileno())

    def finish(self, out: Path, settings: dict, records: Sequence[dict]) -> None:
        """Write ``out`` (header and ``records`` in order) atomically, drop the journal."""
        self._file.close()
        write_atomic(out, [header(settings), *(json.dumps(r) for r in records)])
        self.path.unlink(missing_ok=True)

    def close(self) -> None:
        self._file.close()
