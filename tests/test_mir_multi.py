"""``jaxsched mir schedule`` of many files in one call; ``--machine`` implies the target."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

import jaxsched.colony
from jaxsched.cli.main import main
from jaxsched.io.mir import read_mir
from jaxsched.io.mir_llc import find_llc
from jaxsched.machines.model import get_machine
from jaxsched.mir_files import schedule_files

DATA = Path(__file__).resolve().parent / "data"
REAL = DATA / "real"
GOOD = [REAL / "nn.mir", REAL / "histo_final.mir", DATA / "hand_written.mir"]
LLC19 = next(
    (p for p in ("/usr/lib/llvm-19/bin/llc", shutil.which("llc-19")) if p and Path(p).exists()),
    None,
)


@pytest.fixture(autouse=True)
def _default_llc(monkeypatch):
    monkeypatch.delenv("JAXSCHED_LLC", raising=False)


def _copy(paths: list[Path], where: Path) -> list[str]:
    where.mkdir(parents=True, exist_ok=True)
    out = []
    for p in paths:
        shutil.copy(p, where / p.name)
        out.append(str(where / p.name))
    return out


def _run(argv: list[str], capsys) -> tuple[int, str, str]:
    code = main(argv)
    got = capsys.readouterr()
    assert "Traceback" not in got.err and "internal error" not in got.err, got.err
    return code, got.out, got.err


@pytest.mark.slow
def test_one_call_writes_what_one_call_per_file_writes(tmp_path, capsys):
    inputs = _copy(GOOD, tmp_path / "in")
    code, out, err = _run(["mir", "schedule", *inputs, "-o", str(tmp_path / "all")], capsys)
    assert code == 0, err
    assert "3 of 3 files scheduled in one call" in out
    for name in ("nn.mir", "histo_final.mir", "hand_written.mir"):
        assert f"{name}: scheduled with jaxsched.colony.schedule" in out
    assert "occupancy" in out and "length" in out
    for src in inputs:
        one = tmp_path / f"one-{Path(src).name}"
        code, _, err = _run(["mir", "schedule", src, "-o", str(one)], capsys)
        assert code == 0, err
        both = (tmp_path / "all" / Path(src).name).read_text()
        assert both == one.read_text(), f"{src}: batching changed its schedule"
    assert (tmp_path / "all" / "nn.mir").read_text() != Path(inputs[0]).read_text()


def test_library_schedules_all_files_in_one_scheduler_call(tmp_path):
    calls = []

    def reverse_when_legal(regions):
        calls.append(len(regions))
        return [tuple(range(len(r))) for r in regions]

    files = schedule_files(
        [*GOOD, tmp_path / "missing.mir"],
        get_machine("gfx906"),
        scheduler=reverse_when_legal,
        guard=False,  # the text is the scheduler's (the guard may prefer LLVM's schedule)
    )
    assert len(calls) == 1 and calls[0] == sum(
        len([r for r in read_mir(p).regions if r.region is not None and not r.problem])
        for p in GOOD
    )
    assert [f.error is None for f in files] == [True, True, True, False]
    assert "missing.mir" in files[3].error and "no such file" in files[3].error
    for f, p in zip(files, GOOD, strict=False):
        assert f.text == p.read_text() and f.changed == 0
        assert f.before == f.after and f.before.length > 0


def test_a_bad_file_is_named_and_the_others_are_written(tmp_path, capsys):
    inputs = _copy(GOOD[:2], tmp_path / "in")
    bad = tmp_path / "in" / "bad.mir"
    bad.write_text(GOOD[2].read_text().replace("S_BARRIER", "%9:vgpr_32 = = S_BARRIER"))
    argv = ["mir", "schedule", inputs[0], str(bad), str(tmp_path / "no.mir"), inputs[1]]
    code, out, err = _run([*argv, "-o", str(tmp_path / "out"), "--method", "original"], capsys)
    assert code == 2
    errors = [x for x in err.splitlines() if x.startswith("jaxsched mir: error: ")]
    assert len(errors) == 2, err
    assert "bad.mir" in errors[0] and ":19: cannot parse" in errors[0]
    assert "no.mir: no such file" in errors[1]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["histo_final.mir", "nn.mir"]
    assert "2 of 4 files scheduled in one call" in out


@pytest.mark.skipif(find_llc() is None, reason="llc is not installed")
def test_an_llc_failure_is_named(tmp_path, capsys):
    bad = tmp_path / "broken.ll"
    bad.write_text("this is not LLVM IR\n")
    argv = ["mir", "schedule", str(GOOD[2]), str(bad), "-o", str(tmp_path / "out")]
    code, _, err = _run([*argv, "--method", "original"], capsys)
    assert code == 2 and "broken.ll: llc failed" in err
    assert (tmp_path / "out" / "hand_written.mir").read_text() == GOOD[2].read_text()


def test_output_must_be_a_directory_for_several_inputs(tmp_path, capsys):
    afile = tmp_path / "exists.mir"
    afile.write_text("x")
    for out in (afile, tmp_path / "new.mir"):
        code, _, err = _run(["mir", "schedule", *map(str, GOOD[:2]), "-o", str(out)], capsys)
        assert code == 2 and "-o must name a directory" in err, err
    twins = _copy([GOOD[0]], tmp_path / "a") + _copy([GOOD[0]], tmp_path / "b")
    code, _, err = _run(["mir", "schedule", *twins, "-o", str(tmp_path / "o")], capsys)
    assert code == 2 and "would both be written to" in err
    (src,) = _copy([GOOD[2]], tmp_path / "c")
    code, _, err = _run(["mir", "schedule", src, "-o", str(tmp_path / "c")], capsys)
    assert code == 2 and "would overwrite the input" in err
    assert afile.read_text() == "x"


def test_seed_time_limit_and_allowance_reach_the_colony(tmp_path, capsys, monkeypatch):
    seen = []

    def fake(regions, machine, *, seed, time_limit, headroom_allowance):
        seen.append((len(regions), machine.name, seed, time_limit, headroom_allowance))
        return [
            SimpleNamespace(
                order=tuple(range(len(r))),
                order_without_headroom=tuple(range(len(r))),
                source="colony",  # the ILP pass's: not hoisted (`colony.host.hoistable`)
                occupancy=10,  # all at the machine's: none retargeted
                length=1,
                length_lower_bound=1,
            )
            for r in regions
        ]

    monkeypatch.setattr(jaxsched.colony, "schedule", fake)
    argv = ["mir", "schedule", *map(str, GOOD), "-o", str(tmp_path / "o")]
    code, _, err = _run([*argv, "--seed", "7", "--time-limit", "2.5"], capsys)
    assert code == 0, err
    assert len(seen) == 1 and seen[0][1:] == ("gfx906", 7, 2.5, 0.0)  # the MIR path's 0
    code, _, err = _run([*argv, "--headroom-allowance", "0.25"], capsys)
    assert code == 0, err
    assert len(seen) == 2 and seen[1][1:] == ("gfx906", 0, None, 0.25)


def test_machine_names_the_target(tmp_path, capsys):
    mir = str(REAL / "nn_gfx942.mir")
    code, _, err = _run(["mir", "schedule", mir, "-o", str(tmp_path / "x.mir")], capsys)
    assert code == 2 and "nn_gfx942.mir" in err and "gfx942" in err and "gfx906" in err
    assert not (tmp_path / "x.mir").exists()
    argv = ["mir", "schedule", str(GOOD[0]), "-o", str(tmp_path / "y.mir"), "--method"]
    code, _, err = _run([*argv, "original", "--machine", "gfx942"], capsys)
    assert code == 2 and "target-cpu gfx906, not gfx942" in err
    code, _, err = _run([*argv, "original", "--machine", "gfx942", "--force-target"], capsys)
    assert code == 0, err
    code, _, err = _run([*argv, "original", "--machine", "gfx942", "--mcpu", "gfx90a"], capsys)
    assert code == 2 and "disagrees" in err
    code, _, err = _run([*argv, "original", "--llc", str(tmp_path / "nollc")], capsys)
    assert code == 2 and "no such program" in err


@pytest.mark.slow
def test_gfx942_end_to_end(tmp_path, capsys):
    """A real kernel's MIR for gfx942 (LLVM 19) scheduled for gfx942 and compiled back."""
    out = tmp_path / "out.mir"
    mir = str(REAL / "nn_gfx942.mir")
    code, stdout, err = _run(
        ["mir", "schedule", mir, "-o", str(out), "--machine", "gfx942"], capsys
    )
    assert code == 0, err
    assert "scheduled with jaxsched.colony.schedule" in stdout
    module = read_mir(out, mcpu="gfx942")
    assert [len(r) for r in module.regions] == [len(r) for r in read_mir(mir).regions]
    if LLC19 is None:
        pytest.skip("llc 19 is not installed: the gfx942 MIR was not compiled back")
    args = ["-march=amdgcn", "-mcpu=gfx942", "-start-after=machine-scheduler"]
    proc = subprocess.run(
        [LLC19, *args, "-verify-machineinstrs", str(out), "-o", "-"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "NumVgprs" in proc.stdout
