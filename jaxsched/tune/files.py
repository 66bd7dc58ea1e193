"""Colony parameters as a small JSON file (`save_params`, `load_params`).

The file: ``{"format": "jaxsched-params", "version": 1, "machine": NAME | null,
"params": {FIELD: number | nested list}, "notes": {...}}``. ``params`` may hold any subset of
the `ColonyParams` fields (the others keep their defaults); heuristic weights may be per pass
(``[RP, ILP]``) and per file (``[[RP files...], [ILP files...]]``), see `param_array`.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from jaxsched.colony.params import DEFAULTS, PER_FILE_WEIGHTS, ColonyParams, param_array
from jaxsched.errors import InputError

FORMAT = "jaxsched-params"
VERSION = 1


class ParamsFileError(InputError):
    """A parameters file that cannot be read: not JSON, wrong format, unknown field or shape."""


def params_dict(params: ColonyParams) -> dict:
    """Every field as a number or nested list (JSON-ready)."""
    return {k: np.asarray(v).tolist() for k, v in params._asdict().items()}


def save_params(
    path: str | Path, params: ColonyParams, *, machine: str | None = None, notes: dict | None = None
) -> None:
    """Write ``params`` (all fields) to ``path``; ``machine`` names the target they were tuned
    for, ``notes`` any JSON-ready provenance (data, steps, validation numbers)."""
    doc = {
        "format": FORMAT,
        "version": VERSION,
        "machine": machine,
        "params": params_dict(params),
        "notes": notes or {},
    }
    Path(path).write_text(json.dumps(doc, indent=1) + "\n")


def load_params(path: str | Path, *, files: int | None = None) -> ColonyParams:
    """The parameters in ``path``: the defaults with the file's fields (`ColonyParams`).
    ``files``: the machine's register file count, to check per-file weights. Raises
    `ParamsFileError` naming the file and the problem."""
    try:
        doc = json.loads(Path(path).read_text())
    except OSError as e:
        raise ParamsFileError(f"{path}: cannot read parameters: {e.strerror or e}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ParamsFileError(f"{path}: not a JSON parameters file ({e})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ParamsFileError(f'{path}: not a parameters file (no "format": "{FORMAT}")')
    if doc.get("version") != VERSION:
        raise ParamsFileError(f"{path}: version {doc.get('version')!r}, expected {VERSION}")
    values = doc.get("params")
    if not isinstance(values, dict):
        raise ParamsFileError(f'{path}: "params" must be an object of field: value')
    unknown = sorted(set(values) - set(DEFAULTS))
    if unknown:
        raise ParamsFileError(
            f"{path}: unknown parameters {unknown} (known: {', '.join(ColonyParams._fields)})"
        )
    out = {}
    for name, value in {**DEFAULTS, **values}.items():
        if isinstance(value, bool) or _has_text(value):
            raise ParamsFileError(f"{path}: parameter {name} must be numbers, got {value!r}")
        try:
            out[name] = param_array(name, value, files if name in PER_FILE_WEIGHTS else None)
        except InputError as e:
            raise ParamsFileError(f"{path}: {e}") from None
    return ColonyParams(**out)


def _has_text(value) -> bool:
    """True for strings anywhere in ``value`` (numpy would parse "1.5")."""
    if isinstance(value, list):
        return any(_has_text(v) for v in value)
    return isinstance(value, str)
