"""The region file format: round trips and every loader rejection (message names region + item)."""

from __future__ import annotations

import copy
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
from jaxsched.problem.region import MAX_INSTRUCTIONS, Edge, RegionError


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
    assert r.edges == (Edge(0, 2, 1, "data"), Edge(1, 2, 0, "other"))
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
    rejects(d, "'live_in' must be a list")
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
    assert r.edges == (Edge(0, 2, 5, "anti"), Edge(1, 2, 4, "data"))


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
