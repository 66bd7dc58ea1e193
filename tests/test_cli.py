"""The `jaxsched schedule` and `jaxsched generate` commands (in process, small sizes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import jaxsched
from jaxsched.cli.main import main

FAST = ["--ants", "64", "--wavefront", "32", "--iterations", "4", "--quiet"]


pytestmark = pytest.mark.usefixtures("no_store")


@pytest.fixture(scope="module")
def regions_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli") / "regions.jsonl"
    assert (
        main(
            [
                "generate",
                "-o",
                str(path),
                "--count",
                "5",
                "--min-size",
                "9",
                "--max-size",
                "16",
                "--seed",
                "3",
            ]
        )
        == 0
    )
    return path


def test_generate_writes_loadable_regions(regions_file):
    regions = jaxsched.load_regions(regions_file)
    assert len(regions) == 5
    assert all(9 <= len(r) <= 16 for r in regions)


def test_schedule_json_results_verify(regions_file, capsys):
    assert main(["schedule", str(regions_file), "--json", *FAST]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.strip()]
    regions = {r.name: r for r in jaxsched.load_regions(regions_file)}
    assert sorted(d["name"] for d in lines) == sorted(regions)
    machine = jaxsched.gfx906()
    for d in lines:
        rep = jaxsched.verify(regions[d["name"]], machine, d["cycles"], order=d["order"])
        assert rep.length == d["length"] and rep.occupancy == d["occupancy"]


def test_schedule_table(regions_file, capsys):
    assert main(["schedule", str(regions_file), *FAST]) == 0
    out = capsys.readouterr().out
    assert "all verified" in out and "gen:3:0" in out


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "empty file"),
        ("{not json", "invalid JSON"),
        ('{"name": "c", "instructions": [{}, {}], "edges": [[0, 1, 1], [1, 0, 1]]}', "cycle"),
        ('{"name": "u", "instructions": [{"uses": ["%9"]}]}', "missing from 'registers'"),
        (
            '{"name": "f", "instructions": [{"defs": ["%1"]}], "registers": '
            '{"%1": {"file": "AGPR2", "width": 1}}}',
            "unknown to machine",
        ),
    ],
)
def test_bad_input_exits_2_with_a_message(tmp_path, capsys, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content)
    assert main(["schedule", str(path), *FAST]) == 2
    err = capsys.readouterr().err
    assert message in err and "bad.json" in err and "Traceback" not in err


def test_missing_file_and_bad_options(tmp_path, capsys):
    assert main(["schedule", str(tmp_path / "nope.json")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["schedule", str(tmp_path / "nope.json"), "--resume"]) == 2


def test_exact_flag_proves_small_regions(capsys):
    example = str(Path(__file__).parent.parent / "examples" / "small.json")
    assert main(["schedule", example, "--exact", "--budget", "120", "--json", *FAST]) == 0
    (d,) = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.strip()]
    region = jaxsched.load_region(example)
    rep = jaxsched.verify(region, jaxsched.gfx906(), d["cycles"], order=d["order"])
    assert d["exact"] == "optimal" and d["optimal_length"] and d["optimal_rp"]
    assert rep.length == d["length"] == d["length_lower_bound"]
