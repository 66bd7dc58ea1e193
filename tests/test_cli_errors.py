"""CLI error handling: user errors exit 2 with one line, internal errors exit 1 with a request
to report them, ``--debug`` shows the traceback (all in process, no JAX work)."""

from __future__ import annotations

from pathlib import Path

import pytest

import jaxsched.cli.generate
import jaxsched.cli.mir
from jaxsched.cli.main import main
from jaxsched.io.mir import read_mir
from jaxsched.io.mir_llc import find_llc, ll_to_mir
from jaxsched.verify import InvalidSchedule

DATA = Path(__file__).resolve().parent / "data"
HAND = (DATA / "hand_written.mir").read_text()
needs_llc = pytest.mark.skipif(find_llc() is None, reason="llc (LLVM 14+) is not installed")


pytestmark = pytest.mark.usefixtures("no_store")


def _err(capsys) -> str:
    return capsys.readouterr().err


def _one_error_line(err: str, command: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"jaxsched {command}: error: "), err
    return lines[0]


# ---------------------------------------------------------------------- user errors: exit 2
@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"instructions": [7]}', "instruction 0 must be an object"),
        (b"\xff\xfe", "not UTF-8"),
        (b"[" * 50_000, "nested too deeply"),
    ],
)
def test_bad_region_file_is_a_user_error(tmp_path, capsys, content, message):
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    assert main(["schedule", str(path)]) == 2
    assert message in _one_error_line(_err(capsys), "schedule")


def test_directory_and_missing_inputs(tmp_path, capsys):
    assert main(["schedule", str(tmp_path)]) == 2
    assert "is a directory" in _one_error_line(_err(capsys), "schedule")
    for action in ("import", "schedule"):
        assert main(["mir", action, str(tmp_path), "-o", str(tmp_path / "o")]) == 2
        assert "is a directory" in _one_error_line(_err(capsys), "mir")
        assert main(["mir", action, str(tmp_path / "no.mir"), "-o", str(tmp_path / "o")]) == 2
        assert "no such file" in _one_error_line(_err(capsys), "mir")
    assert main(["mir", "import", str(tmp_path / "no.ll"), "-o", str(tmp_path / "o")]) == 2
    assert "no.ll: no such file" in _one_error_line(_err(capsys), "mir")


def test_unwritable_output_is_a_user_error(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["generate", "-o", str(blocker / "r.jsonl"), "--count", "1", "--size", "4"]) == 2
    assert "file" in _one_error_line(_err(capsys), "generate")


def test_bad_options_exit_2(tmp_path, capsys):
    out = str(tmp_path / "r.jsonl")
    for argv in (
        ["generate", "-o", out, "--count", "0"],
        ["generate", "-o", out, "--size", "1"],
        ["generate", "-o", out, "--seed", "-1"],
        ["mir", "schedule", "x.mir", "-o", out, "--seed", "x"],
        ["schedule", "x.jsonl", "--time-limit", "0"],
        ["schedule", "x.jsonl", "--time-limit", "soon"],
    ):
        with pytest.raises(SystemExit) as info:
            main(argv)
        assert info.value.code == 2
    capsys.readouterr()
    assert main(["generate", "-o", out, "--min-size", "9", "--max-size", "4"]) == 2
    assert "larger than --max-size" in _one_error_line(_err(capsys), "generate")
    mir = tmp_path / "in.mir"
    mir.write_text(HAND)
    assert main(["mir", "schedule", str(mir), "-o", out, "--machine", "nope"]) == 2
    assert "unknown machine 'nope'" in _one_error_line(_err(capsys), "mir")


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda t: t[: t.index("    S_BARRIER")], "truncated MIR"),
        (lambda t: t.replace("    S_BARRIER", "S_BARRIER"), ":19: unexpected line 'S_BARRIER'"),
        (lambda t: t.replace("    S_BARRIER\n", "...\n    S_BARRIER\n"), ":20: unexpected line"),
        (lambda t: t.replace("%2.sub1, %0", "%2.sub1 %0"), ":18: cannot parse operand"),
    ],
)
def test_bad_mir_is_a_user_error_with_a_line(tmp_path, capsys, mutate, message):
    path = tmp_path / "bad.mir"
    path.write_text(mutate(HAND))
    assert main(["mir", "schedule", str(path), "-o", str(tmp_path / "o.mir")]) == 2
    line = _one_error_line(_err(capsys), "mir")
    assert "bad.mir" in line and message in line, line
    assert not (tmp_path / "o.mir").exists()


# ---------------------------------------------------------------------- internal errors: exit 1
@pytest.mark.parametrize(
    "error",
    [
        ValueError("a bug"),
        TypeError("a bug"),
        InvalidSchedule("our own schedule failed verification"),
        KeyError("a bug"),
    ],
)
def test_internal_errors_exit_1_and_ask_for_a_report(tmp_path, capsys, monkeypatch, error):
    def broken(args):
        raise error

    monkeypatch.setattr(jaxsched.cli.generate, "run", broken)
    argv = ["generate", "-o", str(tmp_path / "r.jsonl")]
    assert main(argv) == 1
    err = _err(capsys)
    assert f"jaxsched generate: internal error {type(error).__name__}" in err
    assert "please report" in err and "--debug" in err and "Traceback" not in err
    assert main(["--debug", *argv]) == 1
    err = _err(capsys)
    assert "Traceback" in err and "in broken" in err and "please report" in err


def test_debug_shows_the_traceback_of_user_errors_too(tmp_path, capsys):
    assert main(["--debug", "schedule", str(tmp_path)]) == 2
    err = _err(capsys)
    assert "Traceback" in err and err.strip().endswith("is a directory, not a file")


def test_interrupt_exits_130(tmp_path, capsys, monkeypatch):
    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(jaxsched.cli.generate, "run", interrupted)
    assert main(["generate", "-o", str(tmp_path / "r.jsonl")]) == 130
    assert "interrupted" in _err(capsys)


# ---------------------------------------------------------------------- mir schedule end to end
def _instructions_per_block(text: str) -> dict[tuple[str, int], list[str]]:
    module = read_mir("x", text=text)
    return {
        (f.name, b.number): sorted(
            module.lines[x].strip().replace("killed ", "")  # kill flags may move
            for ins, tr in zip(b.instrs, b.trailing, strict=True)
            for x in (ins.line, *tr)
        )
        for f in module.functions
        for b in f.blocks
    }


def _reverse_topological(regions):
    out = []
    for r in regions:
        indeg = [len(p) for p in r.predecessors()]
        ready = [i for i, d in enumerate(indeg) if d == 0]
        order = []
        while ready:
            i = max(ready)
            ready.remove(i)
            order.append(i)
            for j, _ in r.successors()[i]:
                indeg[j] -= 1
                if indeg[j] == 0:
                    ready.append(j)
        out.append(order)
    return out


@needs_llc
def test_mir_schedule_writes_every_instruction_once(tmp_path, capsys, monkeypatch):
    """The CLI path with a (fast, pure Python) scheduler in place of the colony."""
    monkeypatch.setattr(
        jaxsched.cli.mir,
        "scheduler_for",
        lambda *args, **kw: (_reverse_topological, "rev"),
    )
    for ll in sorted(DATA.glob("amdgpu_*.ll")):
        mir = tmp_path / f"{ll.stem}.mir"
        mir.write_text(ll_to_mir(ll))
        out = tmp_path / f"{ll.stem}.out.mir"
        assert main(["mir", "schedule", str(mir), "-o", str(out), "--method", "heuristic"]) == 0
        assert "scheduled with rev" in capsys.readouterr().out
        before, after = mir.read_text(), out.read_text()
        assert after != before
        assert _instructions_per_block(after) == _instructions_per_block(before)


@needs_llc
@pytest.mark.slow
def test_mir_schedule_with_the_heuristic(tmp_path, capsys):
    ll = DATA / "amdgpu_saxpy_loop.ll"
    out = tmp_path / "out.mir"
    assert main(["mir", "schedule", str(ll), "-o", str(out), "--method", "heuristic"]) == 0
    assert "scheduled with heuristic_schedule" in capsys.readouterr().out
    before = ll_to_mir(ll)
    assert _instructions_per_block(out.read_text()) == _instructions_per_block(before)
