"""`jaxsched schedule --out/--resume`: results in input order, atomic writes, settings checked,
partial records redone, a region's result independent of the rest of the call (reversed and
split files), and kill -9 at random moments followed by --resume writes the same file as an
uninterrupted run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import jaxsched
from jaxsched.cli.main import main
from jaxsched.cli.results import TIMING, journal_path
from jaxsched.problem.generate import generate_regions

#: One region per call (`--max-batch 1`): every run finishes in several calls, and the whole,
#: reversed and split files share two compiled shapes (buckets 32 and 64) instead of four.
FAST = ["--ants", "64", "--wavefront", "32", "--iterations", "4", "--max-batch", "1", "--quiet"]


pytestmark = pytest.mark.usefixtures("no_store")


@pytest.fixture(scope="module")
def regions_file(tmp_path_factory):
    """Six regions in two size buckets (32, 64), interleaved, so that the run order (by
    bucket) differs from the input order."""
    path = tmp_path_factory.mktemp("resume") / "regions.jsonl"
    regions = generate_regions(11, 6, 20, 60)
    jaxsched.save_regions(regions, path)
    return path


def _records(path: Path) -> list[dict]:
    lines = path.read_text().splitlines()
    assert json.loads(lines[0])["jaxsched"] == "results/1"
    return [json.loads(x) for x in lines[1:]]


def _untimed(rec: dict) -> dict:
    return {k: v for k, v in rec.items() if k not in TIMING}


def test_out_is_in_input_order_with_a_header_and_no_journal(regions_file, tmp_path):
    out = tmp_path / "r.jsonl"
    assert main(["schedule", str(regions_file), "--out", str(out), *FAST]) == 0
    names = [r.name for r in jaxsched.load_regions(regions_file)]
    recs = _records(out)
    assert [r["name"] for r in recs] == names
    assert not journal_path(out).exists()
    machine = jaxsched.gfx906()
    for region, rec in zip(jaxsched.load_regions(regions_file), recs, strict=True):
        jaxsched.verify(region, machine, rec["cycles"], order=rec["order"])


def test_resume_redoes_partial_and_stale_records_and_refuses_other_settings(
    regions_file, tmp_path, capsys
):
    out = tmp_path / "r.jsonl"
    assert main(["schedule", str(regions_file), "--out", str(out), *FAST]) == 0
    full = out.read_text().splitlines()
    # A journal as an interrupted run leaves it: two good records, a record without results,
    # a record of a region whose content changed, and a line cut in half.
    stub = json.dumps({"name": json.loads(full[3])["name"]})
    stale = json.loads(full[4])
    stale["fingerprint"] += 1
    journal_path(out).write_text(
        "\n".join([full[0], full[1], full[2], stub, json.dumps(stale), full[5][:40]])
    )
    out.unlink()
    assert main(["schedule", str(regions_file), "--out", str(out), "--resume", *FAST]) == 0
    err = capsys.readouterr().err
    assert err.count("redoing") == 3  # the stub, the stale record and the cut line
    assert [_untimed(r) for r in _records(out)] == [_untimed(json.loads(x)) for x in full[1:]]
    # Other settings: refused with a message naming them (exit 2), the file untouched.
    before = out.read_text()
    assert (
        main(["schedule", str(regions_file), "--out", str(out), "--resume", "--seed", "1", *FAST])
        == 2
    )
    assert "seed" in capsys.readouterr().err
    assert out.read_text() == before


def test_reversed_and_split_files_give_the_same_results(regions_file, tmp_path):
    regions = jaxsched.load_regions(regions_file)
    rev, a, b = (tmp_path / f"{k}.jsonl" for k in ("rev", "a", "b"))
    jaxsched.save_regions(regions[::-1], rev)
    jaxsched.save_regions(regions[:3], a)
    jaxsched.save_regions(regions[3:], b)
    outs = {}
    for name, path in (("whole", regions_file), ("rev", rev), ("a", a), ("b", b)):
        outs[name] = tmp_path / f"out-{name}.jsonl"
        assert main(["schedule", str(path), "--out", str(outs[name]), *FAST]) == 0
    by_name = {k: {r["name"]: _untimed(r) for r in _records(v)} for k, v in outs.items()}
    assert by_name["whole"] == by_name["rev"] == {**by_name["a"], **by_name["b"]}
    assert any(r["iterations"] != [0, 0] for r in by_name["whole"].values())  # colony ran


@pytest.mark.slow
def test_kill_9_then_resume_writes_the_uninterrupted_file(regions_file, tmp_path):
    """SIGKILL at random moments of a run (own processes, a shared executable store so
    restarts are quick; moments drawn within an uninterrupted warm run's time), then --resume
    until done: the file equals an uninterrupted run's. A run that finishes before the first
    kill (faster than the warm run, on a machine whose load changed) is started over with the
    moments drawn within half the time."""
    env = {**os.environ, "JAXSCHED_CACHE_DIR": str(tmp_path / "xla")}
    cmd = [sys.executable, "-m", "jaxsched", "schedule", str(regions_file), *FAST]
    ref, warm = tmp_path / "ref.jsonl", tmp_path / "warm.jsonl"
    subprocess.run([*cmd, "--out", str(ref)], env=env, check=True, timeout=600)
    t0 = time.perf_counter()
    subprocess.run([*cmd, "--out", str(warm)], env=env, check=True, timeout=600)
    seconds = time.perf_counter() - t0
    out = tmp_path / "killed.jsonl"
    rng = np.random.default_rng(0)
    kills = 0
    for attempt in range(12):
        proc = subprocess.Popen(
            [*cmd, "--out", str(out), "--resume"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            proc.wait(timeout=float(rng.uniform(0.2, 0.95)) * seconds)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            kills += 1
            continue
        assert proc.returncode == 0, f"attempt {attempt}: exit {proc.returncode}"
        if kills:
            break
        out.unlink()  # finished before any kill: start over, killing sooner
        seconds /= 2
    else:
        subprocess.run([*cmd, "--out", str(out), "--resume"], env=env, check=True, timeout=600)
    assert kills >= 1
    assert [_untimed(r) for r in _records(out)] == [_untimed(r) for r in _records(ref)]
    assert not journal_path(out).exists()
