"""Fuzzing the region loader with a seeded mutator.

Every mutated file (JSON values swapped, fields dropped or added, text cut or spliced, bad
bytes, huge numbers, deep nesting, damaged gzip) must either raise `RegionError` naming the file
(and the line, for JSON Lines) or load regions that agree with the file as docs/region-format.md
reads it, round-trip through `to_dict`, and pad for the device without error.
"""

from __future__ import annotations

import copy
import functools
import gzip
import json
import random
import re
from pathlib import Path

import pytest

from jaxsched.machines.model import gfx906
from jaxsched.problem.format import load_regions, region_from_dict
from jaxsched.problem.generate import generate_regions
from jaxsched.problem.padded import pad_region
from jaxsched.problem.region import RegionError

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
MACHINE = gfx906()

# ---------------------------------------------------------------------- corpus and values
_NAMES = ["%0", "%1", "%2", "%9", "", "VGPR", "SGPR", "AGPR", "data", "anti", "x" * 5000]
_FIELDS = [
    *("format", "name", "instructions", "registers", "edges", "live_in", "live_out"),
    *("live_through", "text", "defs", "uses", "file", "width", "colour"),
]
_NUMBERS = [0, 1, 2, 3, -1, 32, 33, 100_000, 100_001, 65_536, 65_537, 2**31, 2**63, 10**19]
_NUMBERS += [1.5, 1e308, -0.0]
_SNIPPETS = ['"', "{", "}", "[", "]", ",", ":", "null", "7", "-", "1e9", '"\\ud800"', "\\"]
_SNIPPETS += ["\u2028", "\x00", "\n", "\r", " ", "NaN", '"%1"', "[[[[", "]]]]", "9" * 30]
_BYTES = [b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xef\xbb\xbf", b"\x80\x80", b"\x00"]


@functools.cache
def _seed_corpus() -> tuple[dict, ...]:
    """The unmutated region objects, built once (generating them cost half the fuzz time)."""
    small = json.loads((EXAMPLES / "small.json").read_text())
    gen = [r.to_dict() for r in generate_regions(5, 2, 3, 12)]
    tiny = {
        "name": "t",
        "instructions": [{"defs": ["%1"]}, {"text": "b", "uses": ["%1", "%1"]}],
        "registers": {"%1": {"file": "VGPR"}},
        "edges": [[0, 1, 4], [0, 1, 2, "anti"]],
    }
    return (small, *gen, tiny)


def _corpus() -> list[dict]:
    """A fresh copy of the corpus for one case (the mutators change it in place)."""
    return copy.deepcopy(list(_seed_corpus()))


def _value(rng: random.Random, depth: int = 0) -> object:
    """A random JSON value, biased to shapes and numbers near the format's limits."""
    k = rng.randrange(9 if depth < 3 else 5)
    if k == 0:
        return rng.choice(_NUMBERS)
    if k == 1:
        return rng.choice(_NAMES)
    if k == 2:
        return rng.choice([None, True, False])
    if k == 3:
        return rng.randrange(-3, 40)
    if k == 4:
        return rng.choice(["", "%1", "text", "\u2028", "é"])
    if k in (5, 6):
        return [_value(rng, depth + 1) for _ in range(rng.randrange(5))]
    return {
        rng.choice(_FIELDS + _NAMES[:4]): _value(rng, depth + 1) for _ in range(rng.randrange(4))
    }


def _paths(v: object, path: tuple = ()) -> list[tuple]:
    """Every location in a JSON tree (as a key/index path)."""
    out = [path]
    if isinstance(v, dict):
        for k, x in v.items():
            out += _paths(x, (*path, k))
    elif isinstance(v, list):
        for k, x in enumerate(v[:6]):
            out += _paths(x, (*path, k))
    return out


def _mutate_tree(rng: random.Random, d: dict) -> object:
    """Change 1-3 places of a region object: replace, delete, add, wrap, or retype a value."""
    for _ in range(rng.randint(1, 3)):
        path = rng.choice(_paths(d))
        if not path:
            continue
        parent = d
        for k in path[:-1]:
            parent = parent[k]
        key = path[-1]
        op = rng.randrange(6)
        if op == 0:
            parent[key] = _value(rng)
        elif op == 1:
            del parent[key]
        elif op == 2 and isinstance(parent, dict):
            parent[rng.choice(_FIELDS + _NAMES[:4])] = _value(rng)
        elif op == 3:
            parent[key] = [parent[key]]
        elif op == 4 and isinstance(parent[key], dict):
            parent[key] = list(parent[key].values())
        elif op == 5 and isinstance(parent[key], list) and parent[key]:
            parent[key].append(rng.choice(parent[key]))
    return d


def _mutate_text(rng: random.Random, text: str) -> str:
    """Cut, splice or duplicate pieces of the JSON text."""
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(text) + 1)
        j = min(len(text), i + rng.randrange(12))
        op = rng.randrange(4)
        if op == 0:
            text = text[:i] + text[j:]
        elif op == 1:
            text = text[:i] + rng.choice(_SNIPPETS) + text[i:]
        elif op == 2:
            text = text[:j] + text[i:j] + text[j:]
        else:
            text = text[:i]
    return text


def _mutate_bytes(rng: random.Random, data: bytes) -> bytes:
    i = rng.randrange(len(data) + 1)
    return data[:i] + rng.choice(_BYTES) + data[i + rng.randrange(2) :]


def _special(rng: random.Random) -> bytes:
    """The pathological files: huge numbers, deep nesting, huge strings, junk."""
    deep = rng.choice([50, 999, 100_000])
    return rng.choice(
        [
            ('{"instructions": [{}], "edges": [[0, 0, 1' + "7" * 5000 + "]]}").encode(),
            ("[" * deep + "]" * deep).encode(),
            ('{"instructions": ' + "[" * deep + "]" * deep + "}").encode(),
            ('{"name": "' + "n" * 10_000 + '", "instructions": [{}]}').encode(),
            b"\xff\xfe{}",
            b"",
            b"\n\n",
            bytes(rng.randrange(256) for _ in range(64)),
        ]
    )


def _case(rng: random.Random) -> tuple[str, bytes]:
    """(file suffix, content) of one mutated region file."""
    regions = _corpus()
    d = rng.choice(regions)
    if rng.random() < 0.05:
        return rng.choice([".json", ".jsonl"]), _special(rng)
    if rng.random() < 0.6:
        d = _mutate_tree(rng, d)
    suffix = rng.choice([".json", ".jsonl", ".jsonl", ".json_list", ".jsonl.gz"])
    texts = [json.dumps(x, ensure_ascii=rng.random() < 0.5) for x in regions[:2]]
    text = json.dumps(d, ensure_ascii=rng.random() < 0.5, indent=rng.choice([None, 1]))
    if suffix in (".jsonl", ".jsonl.gz"):
        text = "\n".join([*texts, text.replace("\n", "")] if rng.random() < 0.5 else [text])
    elif suffix == ".json_list":
        suffix, text = ".json", "[" + ",".join([*texts, text]) + "]"
    if rng.random() < 0.4:
        text = _mutate_text(rng, text)
    data = text.encode("utf-8", "surrogatepass")
    if rng.random() < 0.15:
        data = _mutate_bytes(rng, data)
    if suffix == ".jsonl.gz":
        data = gzip.compress(data, mtime=0)
        if rng.random() < 0.3:
            data = data[: rng.randrange(len(data))]
    return suffix, data


# ---------------------------------------------------------------------- the expected reading
def _merged_edges(edges: list) -> list:
    """Edges merged as docs/region-format.md says: larger latency wins, `data` on ties."""
    best: dict[tuple[int, int], tuple[int, str]] = {}
    for e in edges:
        src, dst, lat, kind = (*e, "data") if len(e) == 3 else e
        old = best.get((src, dst))
        if old is None or lat > old[0] or (lat == old[0] and kind == "data"):
            best[(src, dst)] = (lat, kind)
    return [
        [s, d, lat] if kind == "data" else [s, d, lat, kind]
        for (s, d), (lat, kind) in sorted(best.items())
    ]


def _agrees(region, d: dict, where: str) -> None:
    """The loaded region is what the file says (no field silently dropped or changed)."""
    got = region.to_dict()
    assert got["name"] == d.get("name", where)
    assert got["instructions"] == [
        {
            "text": x.get("text", ""),
            "defs": list(dict.fromkeys(x.get("defs", []))),
            "uses": list(dict.fromkeys(x.get("uses", []))),
        }
        for x in d["instructions"]
    ]
    assert got["registers"] == {
        k: {"file": v["file"], "width": v.get("width", 1)}
        for k, v in d.get("registers", {}).items()
    }
    assert got["edges"] == _merged_edges(d.get("edges", []))
    for key in ("live_in", "live_out"):
        if key in d:
            assert got[key] == sorted(set(d[key]))
    assert got["live_through"] == dict(d.get("live_through", {}))
    again = region_from_dict(json.loads(json.dumps(got)))
    assert again.to_dict() == got
    try:
        region.check_machine(MACHINE)
    except RegionError:
        return
    pad_region(region, MACHINE)


def _check(path: Path) -> str:
    """'rejected' or 'accepted'; asserts the loader's promise for ``path``."""
    try:
        regions = load_regions(path)
    except RegionError as e:
        msg = str(e)
        assert path.name in msg and "\n" not in msg and len(msg) < 2000, msg
        if ".jsonl" in path.name and "empty file" not in msg:
            assert re.search(re.escape(path.name) + r":\d+", msg), msg
        return "rejected"
    raw = path.read_bytes()
    text = (gzip.decompress(raw) if path.suffix == ".gz" else raw).decode("utf-8-sig")
    if ".jsonl" in path.name:
        lines = enumerate(text.split("\n"), 1)
        items = [(json.loads(x), f"{path}:{k}") for k, x in lines if x.strip(" \t\r\n")]
    else:
        data = json.loads(text)
        items = (
            [(x, f"{path}[{k}]") for k, x in enumerate(data)]
            if isinstance(data, list)
            else [(data, str(path))]
        )
    assert len(items) == len(regions)
    for region, (d, where) in zip(regions, items, strict=True):
        _agrees(region, d, where)
    return "accepted"


def _run(seeds: range, tmp_path: Path) -> dict[str, int]:
    counts = {"rejected": 0, "accepted": 0}
    for seed in seeds:
        suffix, data = _case(random.Random(seed))
        path = tmp_path / f"case{seed}{suffix}"
        path.write_bytes(data)
        try:
            counts[_check(path)] += 1
        except Exception as e:
            raise AssertionError(f"seed {seed}: {type(e).__name__}: {e}\n{data[:300]!r}") from e
        path.unlink()
    return counts


def test_fuzz_region_files(tmp_path):
    counts = _run(range(400), tmp_path)
    # the mutator must exercise both outcomes, or the test proves little
    assert counts["rejected"] > 100 and counts["accepted"] > 40, counts


@pytest.mark.slow
def test_fuzz_region_files_long(tmp_path):
    """The module's property on 2,800 more mutated files."""
    counts = _run(range(400, 3200), tmp_path)
    assert counts["rejected"] > 500 and counts["accepted"] > 200, counts
