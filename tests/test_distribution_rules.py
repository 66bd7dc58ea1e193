"""The rules of distribution that need no second device or process: the deterministic split of
region files, reading only a process's share, the mesh's ant columns, and the CLI's errors."""

from __future__ import annotations

import json

import pytest
from conftest import EXAMPLES

from jaxsched.cli.main import main
from jaxsched.colony.drivers.sharding import ant_columns
from jaxsched.distributed import allgather_json, owner
from jaxsched.problem.format import iter_regions
from jaxsched.problem.region import RegionError


@pytest.fixture
def lines(tmp_path, kernel_regions):
    """A .jsonl file of 10 regions (region 3 malformed) and the names of the others."""
    from jaxsched.problem.format import region_to_dict

    rows = [json.dumps(region_to_dict(r)) for r in kernel_regions[:10]]
    rows[3] = '{"name": "broken"'
    path = tmp_path / "regions.jsonl"
    path.write_text("\n".join(rows) + "\n\n")
    return path, [r.name for r in kernel_regions[:10]]


@pytest.mark.parametrize("processes", [1, 2, 3, 7])
def test_every_region_has_exactly_one_owner(processes):
    owners = [owner(k, processes) for k in range(100)]
    assert all(0 <= p < processes for p in owners)
    assert sorted(owners) == sorted(k % processes for k in range(100))


@pytest.mark.parametrize("processes", [2, 3])
def test_shares_partition_the_file_and_only_the_share_is_parsed(lines, processes):
    path, names = lines
    got = {}
    for p in range(processes):
        keep = lambda k, p=p: k != 3 and owner(k, processes) == p  # noqa: E731
        for region in iter_regions(path, keep):
            got.setdefault(region.name, []).append(p)
    want = [n for k, n in enumerate(names) if k != 3]
    assert sorted(got) == sorted(want)
    assert all(len(v) == 1 for v in got.values())
    with pytest.raises(RegionError, match=r"regions.jsonl:4"):
        list(iter_regions(path, lambda k: k == 3))


def test_keep_sees_every_region_in_order(lines):
    path, _ = lines
    seen = []
    list(iter_regions(path, lambda k: seen.append(k) or False))
    assert seen == list(range(10))


@pytest.mark.parametrize(
    ("most", "per_process", "wavefronts", "cols"),
    [
        (16, 8, 4, 1),  # a region for every device: split regions only
        (8, 8, 4, 1),
        (1, 8, 4, 4),  # one region: its ants over 4 devices (4 wavefronts)
        (1, 8, 64, 8),
        (2, 8, 64, 4),
        (3, 8, 64, 2),
        (0, 4, 2, 2),
        (1, 6, 4, 2),  # 6 devices, 4 wavefronts: 2 columns divide both
        (1, 1, 4, 1),
    ],
)
def test_ant_columns(most, per_process, wavefronts, cols):
    assert ant_columns(most, per_process, wavefronts) == cols


def test_allgather_json_with_one_process():
    assert allgather_json({"a": [1, 2]}) == [{"a": [1, 2]}]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--devices", "3"], "devices must be 'all' or an integer in 1..1"),
        (["--coordinator", "127.0.0.1:1"], "go together"),
        (["--num-processes", "2", "--process-id", "0"], "go together"),
        (
            ["--coordinator", "127.0.0.1:1", "--num-processes", "2", "--process-id", "2"],
            "--process-id must be in 0..1",
        ),
        (["--distributed", "--process-id", "0"], "--distributed detects the layout"),
    ],
)
def test_cli_errors(capsys, args, message):
    assert main(["schedule", str(EXAMPLES / "small.json"), "--quiet", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
