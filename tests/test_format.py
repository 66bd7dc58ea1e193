"""The region file format: round trips and every loader rejection (message names region + item)."""

from __future__ import annotations

import copy
import gzip
import json

import pytest

from jaxsched.machines.model import gfx906
from jaxsched.problem.format import (
    FORMAT,
    load_region,
    load_regions,
    region_from_dict,
    region_to_dict,
    save_regions,
)
from jaxsched.problem.generate import generate_regions
from jaxsched.problem.region import (
    MAX_INSTRUCTIONS,
    MAX_LIVE_THROUGH,
    MAX_NAME_LENGTH,
    MAX_OPERANDS,
    MAX_TEXT_LENGTH,
    Edge,
    Instruction,
    Region,
    RegionError,
)


def base() -> dict:
    """A valid 3-instruction region named r1."""
    return {
        "format": FORMAT,
        "name": "r1",
        "instructions": [
            {
                "text": "%1:vgpr_32 = V_MOV_B32_e32 %0, implicit $exec",
                "defs": ["%1"],
                "uses": ["%0"],
            },
            {"text": "%2:vreg_64 = GLOBAL_LOAD_DWORDX2 %3, 0, 0", "defs": ["%2"], "uses": ["%3"]},
            {"text": "GLOBAL_STORE_DWORD %3, %1, 0, 0", "defs": [], "uses": ["%3", "%1"]},
        ],
        "registers": {
            "%0": {"file": "SGPR", "width": 1},
            "%1": {"file": "VGPR", "width": 1},
            "%2": {"file": "VGPR", "width": 2},
            "%3": {"file": "VGPR", "width": 2},
        },
        "edges": [[0, 2, 1], [1, 2, 0, "other"]],
        "live_in": ["%0", "%3"],
        "live_out": ["%2"],
        "live_through": {"VGPR": 3, "SGPR": 10},
    }


def rejects(d: dict, *patterns: str) -> str:
    """Assert that loading ``d`` fails naming region r1 and each pattern; returns the message."""
    with pytest.raises(RegionError) as info:
        region_from_dict(d, "in.json")
    msg = str(info.value)
    assert "'r1'" in msg and "in.json" in msg, msg
    for p in patterns:
        assert p in msg, msg
    return msg


# ---------------------------------------------------------------------- round trips
def test_dict_round_trip():
    r = region_from_dict(base())
    assert region_to_dict(r) == base()
    assert r.edges == (
        Edge(src=0, dst=2, latency=1, kind="data"),
        Edge(src=1, dst=2, latency=0, kind="other"),
    )
    again = region_from_dict(json.loads(json.dumps(region_to_dict(r))))
    assert region_to_dict(again) == region_to_dict(r)


def test_file_round_trip(tmp_path, small_region, kernel_regions):
    save_regions([small_region], tmp_path / "one.json")
    assert region_to_dict(load_region(tmp_path / "one.json")) == region_to_dict(small_region)
    regions = [small_region, *kernel_regions[:5], *generate_regions(9, 10, 2, 200)]
    save_regions(regions, tmp_path / "many.jsonl")
    back = load_regions(tmp_path / "many.jsonl")
    assert [region_to_dict(r) for r in back] == [region_to_dict(r) for r in regions]
    # a .json file may also hold a list of regions
    (tmp_path / "list.json").write_text(json.dumps([region_to_dict(r) for r in regions[:3]]))
    assert [r.name for r in load_regions(tmp_path / "list.json")] == [r.name for r in regions[:3]]
    with pytest.raises(ValueError, match=r"use \.jsonl"):
        save_regions(regions[:2], tmp_path / "two.json")


def test_examples_load(small_region, kernel_regions):
    small_region.check_machine(gfx906())
    assert len(small_region) == 13
    assert len(kernel_regions) == 40
    assert all(8 <= len(r) <= 300 for r in kernel_regions)
    for r in kernel_regions:
        r.check_machine(gfx906())


# ---------------------------------------------------------------------- rejections
def test_rejects_cycles():
    d = base()
    d["edges"] = [[0, 1, 1], [1, 2, 1], [2, 0, 1]]
    rejects(d, "dependence cycle", "0 -> 1 -> 2 -> 0")
    d["edges"] = [[1, 1, 0]]
    rejects(d, "self-loop on instruction 1")


def test_rejects_edges_to_missing_instructions():
    d = base()
    d["edges"] = [[0, 3, 1]]
    rejects(d, "edge 0 (0 -> 3) names a missing instruction", "ids 0..2")
    d["edges"] = [[-1, 2, 1]]
    rejects(d, "missing instruction")


def test_rejects_negative_and_bad_latencies():
    d = base()
    d["edges"] = [[0, 2, -1]]
    rejects(d, "edge 0 (0 -> 2) has negative latency -1")
    d["edges"] = [[0, 2, 1.5]]
    rejects(d, "latency 1.5 is not an integer")
    d["edges"] = [[0, 2]]
    rejects(d, "is not [src, dst, latency(, kind)]")
    d["edges"] = [[0, 2, 1, "flow"]]
    rejects(d, "unknown kind 'flow'")


def test_rejects_registers_missing_from_registers():
    d = base()
    del d["registers"]["%3"]
    rejects(d, "instruction 1", "register '%3' missing from 'registers'")
    d = base()
    d["live_out"] = ["%9"]
    rejects(d, "live_out register '%9' missing from 'registers'")


def test_rejects_unknown_register_files_for_machine():
    d = base()
    d["registers"]["%2"] = {"file": "AGPR", "width": 2}
    r = region_from_dict(d)  # the format itself knows no files ...
    with pytest.raises(RegionError, match=r"region 'r1': register '%2' is in file 'AGPR', unknown"):
        r.check_machine(gfx906())  # ... the machine does
    d = base()
    d["live_through"] = {"AGPR": 4}
    with pytest.raises(RegionError, match="region 'r1': live_through names file 'AGPR'"):
        region_from_dict(d).check_machine(gfx906())


@pytest.mark.parametrize("width", [0, -2, 1.5, "2", True, None, 33])
def test_rejects_bad_widths(width):
    d = base()
    d["registers"]["%1"] = {"file": "VGPR", "width": width}
    rejects(d, "register '%1' width")


def test_rejects_empty_files(tmp_path):
    for name, text in [("e.json", ""), ("w.jsonl", "\n  \n"), ("l.json", "[]")]:
        (tmp_path / name).write_text(text)
        with pytest.raises(RegionError, match="empty") as info:
            load_regions(tmp_path / name)
        assert name in str(info.value)
    d = base()
    d["instructions"] = []
    d["edges"] = []
    rejects(d, "has no instructions")


def test_rejects_sizes_above_maximum():
    d = {"name": "r1", "instructions": [{"text": "s_nop 0"}] * (MAX_INSTRUCTIONS + 1)}
    rejects(d, f"{MAX_INSTRUCTIONS + 1} instructions exceeds the maximum {MAX_INSTRUCTIONS}")
    d["instructions"] = d["instructions"][:MAX_INSTRUCTIONS]
    assert len(region_from_dict(d)) == MAX_INSTRUCTIONS


def test_rejects_invalid_json_with_file_and_line(tmp_path):
    good = json.dumps(base())
    p = tmp_path / "bad.jsonl"
    p.write_text(good + "\n" + good[:-5] + "\n" + good + "\n")
    with pytest.raises(RegionError, match=r"bad\.jsonl:2: invalid JSON"):
        load_regions(p)
    p = tmp_path / "bad.json"
    p.write_text('{\n "name": "r1",\n "instructions": [,]\n}\n')
    with pytest.raises(RegionError, match=r"bad\.json: invalid JSON at line 3"):
        load_regions(p)
    # a valid JSON line holding a bad region names the line and the region
    p = tmp_path / "bad2.jsonl"
    d = base()
    d["edges"] = [[0, 2, -4]]
    p.write_text(good + "\n" + json.dumps(d) + "\n")
    with pytest.raises(RegionError, match=r"bad2\.jsonl:2.*'r1'.*negative latency -4"):
        load_regions(p)


def test_rejects_malformed_fields():
    d = base()
    d["format"] = "jaxsched.region/2"
    rejects(d, "unsupported format")
    d = base()
    d["colour"] = 1
    rejects(d, "unknown fields ['colour']")
    d = base()
    d["live_in"] = "%0"
    rejects(d, "'live_in' must be a JSON list")
    d = base()
    d["live_through"] = {"VGPR": -1}
    rejects(d, "live_through['VGPR']")
    d = base()
    d["instructions"][0]["defs"] = "%1"
    rejects(d, "instruction 0 field 'defs'")
    with pytest.raises(RegionError, match="must be a JSON object"):
        region_from_dict([1, 2])


# ---------------------------------------------------------------------- merging and defaults
def test_duplicate_edges_merge_larger_latency_wins():
    d = base()
    d["edges"] = [[0, 2, 2], [0, 2, 5, "anti"], [0, 2, 3], [1, 2, 4, "anti"], [1, 2, 4]]
    r = region_from_dict(d)
    assert r.edges == (
        Edge(src=0, dst=2, latency=5, kind="anti"),
        Edge(src=1, dst=2, latency=4, kind="data"),
    )


def test_omitted_live_in_and_live_out_defaults():
    d = base()
    del d["live_in"], d["live_out"], d["live_through"]
    r = region_from_dict(d)
    assert r.live_in == ("%0", "%3")  # used before any def
    assert r.live_out == ("%2",)  # defined, never used afterwards
    assert dict(r.live_through) == {}
    d = copy.deepcopy(base())
    del d["registers"], d["edges"]
    d["instructions"] = [{"text": "s_nop 0"}, {"text": "s_endpgm"}]
    d["live_in"], d["live_out"] = [], []
    r = region_from_dict(d)
    assert len(r) == 2 and r.edges == () and r.live_in == ()


# ---------------------------------------------------------------------- hostile files
@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"instructions": [7]}', 'instruction 0 must be an object {"text", "defs", "uses"}'),
        (b'{"instructions": [null]}', "instruction 0 must be an object"),
        (b'{"instructions": [["V_ADD"]]}', "instruction 0 must be an object"),
        (b'{"instructions": [["t", [], []]]}', "instruction 0 must be an object"),
        (b'{"instructions": [{}], "registers": {"%1": 5}}', "register '%1' must be an object"),
        (b'{"instructions": [{}], "registers": {"%1": ["VGPR", 1]}}', "must be an object"),
        (b'{"instructions": [{}], "live_through": {"VGPR": 2147483648}}', "not in 0..65,536"),
        (b'{"instructions": [{}], "edges": [[0, 1, 1' + b"7" * 5000 + b"]]}", "5001 digits"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        (b'\xff{"instructions": [{}]}', ":1:1: not UTF-8 text (byte 0xff)"),
        (b'{"instructions": [{}], "instructions": [{}]}', "duplicate key 'instructions'"),
        (b'{"instructions": [{}], "edges": NaN}', "NaN is not a JSON value"),
        (b'{"name": "", "instructions": [{}]}', "name must be a non-empty string"),
        (b'{"name": "\\ud800", "instructions": [{}]}', "not valid Unicode"),
        (b'{"instructions": [{"text": 5}]}', "field 'text' must be a string"),
        (b'{"instructions": [{"defs": [""]}]}', "field 'defs' name must be a non-empty string"),
    ],
)
def test_hostile_files_raise_region_error(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(RegionError) as info:
        load_regions(path)
    assert message in str(info.value) and "bad.json" in str(info.value)


def test_limits_of_values():
    d = base()
    d["edges"] = [[0, 2, 100_001]]
    rejects(d, "latency 100001 exceeds 100000")
    d = base()
    d["instructions"][0]["text"] = "x" * (MAX_TEXT_LENGTH + 1)
    rejects(d, "instruction 0 field 'text'", "longer than 65,536")
    d = base()
    d["registers"]["%1"]["file"] = "F" * (MAX_NAME_LENGTH + 1)
    rejects(d, "register '%1' file", "longer than 4,096")
    d = base()
    d["instructions"][0]["uses"] = [f"%u{k}" for k in range(MAX_OPERANDS + 1)]
    d["registers"].update({f"%u{k}": {"file": "VGPR"} for k in range(MAX_OPERANDS + 1)})
    rejects(d, f"names {MAX_OPERANDS + 1} registers (at most {MAX_OPERANDS})")
    d = base()
    d["live_through"] = {"VGPR": MAX_LIVE_THROUGH}
    assert region_from_dict(d).live_through["VGPR"] == MAX_LIVE_THROUGH


def test_region_build_rejects_any_python_value():
    """The Python API takes tuples too, but anything else is a RegionError, never a crash."""
    ok = Region.build(
        "p",
        [("a", ["%1"], []), Instruction("b", (), ("%1",))],
        {"%1": ("VGPR", 1)},
        [Edge(src=0, dst=1, latency=1)],
    )
    assert ok.edges == (Edge(src=0, dst=1, latency=1, kind="data"),)
    for args in [
        ("p", 7, {}, []),
        ("p", [7], {}, []),
        ("p", [("a", [], [])], {"%1": 3}, []),
        ("p", [("a", [], [])], [], []),
        ("p", [("a", [], [])], {}, 5),
        ("p", [("a", [], [])], {}, [(0, 0)]),
        ("p", [("a", [], []), ("b", [], [])], {}, [(0, 1, 1, ["x"])]),
        ("p", [("a", [], [])], {}, [], "%1"),
        ("p", [("a", [], [])], {}, [], [3]),
        ("p", [("a", [], [])], {}, [], None, None, {"VGPR": 10**5000}),
        ("p", [("a", [], [])], {}, [], None, None, [1]),
        (None, [("a", [], [])], {}, []),
        ("p", [("a", [], [])], {5: ("VGPR", 1)}, []),
    ]:
        with pytest.raises(RegionError):
            Region.build(*args)


def test_json_lines_split_on_newline_only(tmp_path):
    """U+2028 and other Unicode line breaks are valid inside JSON strings."""
    p = tmp_path / "u.jsonl"
    p.write_text(
        json.dumps({"name": "a\u2028b\x85c", "instructions": [{}]}, ensure_ascii=False)
        + "\r\n\n"
        + json.dumps({"name": "d", "instructions": [{}]})
    )
    assert [r.name for r in load_regions(p)] == ["a\u2028b\x85c", "d"]


def test_directory_missing_and_gzip(tmp_path):
    with pytest.raises(RegionError, match="is a directory"):
        load_regions(tmp_path)
    with pytest.raises(RegionError, match=r"nope\.json: no such file"):
        load_regions(tmp_path / "nope.json")
    regions = generate_regions(2, 3, 4, 9)
    save_regions(regions, tmp_path / "r.jsonl")
    gz = tmp_path / "r.jsonl.gz"
    gz.write_bytes(gzip.compress((tmp_path / "r.jsonl").read_bytes()))
    assert [r.to_dict() for r in load_regions(gz)] == [r.to_dict() for r in regions]
    gz.write_bytes(gz.read_bytes()[:-12])
    with pytest.raises(RegionError, match=r"r\.jsonl\.gz.*truncated"):
        load_regions(gz)
