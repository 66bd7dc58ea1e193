"""A quick MIR corpus (issue 33): the repository's kernels compiled by every installed llc (15,
16, 19) for every modelled target it knows, then ``jaxsched mir schedule --mcpu TARGET``: each
file is written as MIR that the same llc's machine verifier accepts, or refused with an error
naming the file and line. `benchmarks/mir_corpus.py` runs the full corpus; this test uses its
functions on a small real kernel (Rodinia ``nn``), with the list-scheduling heuristic (the
cheapest method that reorders) and no guard."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
KERNELS = [ROOT / "tests" / "data" / "real" / name for name in ("nn.ll",)]
VERSIONS = (15, 16, 19)


def _script(name: str):
    """benchmarks/NAME.py as a module, registered under its name as when the script runs (its
    dataclasses look their module up; mir_corpus imports harness, which Python finds beside a
    script it runs)."""
    path = ROOT / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


_script("harness")
CORPUS = _script("mir_corpus")


def _generate(llc: str, target: str, where: Path) -> list[Path]:
    """The kernels retargeted to ``target`` and compiled by ``llc`` up to the scheduler."""
    out = []
    for ll in KERNELS:
        src = where / "ll" / ll.name
        src.parent.mkdir(parents=True, exist_ok=True)
        src.write_text(CORPUS.retarget(ll.read_text(), target))
        mir = where / "in" / f"{ll.stem}.mir"
        ok, err, _ = CORPUS.compile_to_mir(llc, src, target, mir)
        assert ok, f"{llc} -mcpu={target} {ll.name}: {err}"
        assert f'"target-cpu"="{target}"' in mir.read_text(), mir
        out.append(mir)
    return out


def _check(llc: str, target: str, inputs: list[Path], where: Path) -> tuple[int, int]:
    """``mir schedule INPUTS -o DIR --mcpu TARGET`` (heuristic, no guard): every file written
    and accepted by llc's verifier (where llc's verifier accepts the input), or refused naming
    the file and line, never for its syntax when llc reads it; (files verified, files in which
    an instruction moved)."""
    out = where / "out"
    out.mkdir()  # a directory: each output keeps its input's name
    argv = ["mir", "schedule", *map(str, inputs), "-o", str(out), "--mcpu", target]
    run = CORPUS.run_cli([*argv, "--method", "heuristic", "--no-guard"])
    assert not CORPUS.crashed(run), run.err
    verified = moved = 0
    for mir in inputs:
        written = out / mir.name
        if not written.is_file():
            message = CORPUS.error_of(run.err, str(mir))
            assert CORPUS.names_line(message, str(mir)), f"{target}: unclear refusal: {message}"
            llc_reads = CORPUS.reads(llc, mir, target)[0]
            assert not (llc_reads and CORPUS.SYNTAX.search(message)), f"{target}: {message}"
            continue
        if CORPUS.verify(llc, mir, target, "pipeline")[0]:  # else llc rejects its own MIR
            ok, err, _ = CORPUS.verify(llc, written, target, "pipeline")
            assert ok, f"llc's verifier, {target} {mir.name}: {err}"
            verified += 1
        text = CORPUS.instruction_lines(mir.read_text())
        moved += text != CORPUS.instruction_lines(written.read_text())
    return verified, moved


@pytest.mark.slow  # about 30 s of CPU cold: the heuristic's compilation per machine model
@pytest.mark.parametrize("version", VERSIONS)
def test_every_llc_and_target_schedules_into_verified_mir(version: int, tmp_path: Path):
    llc = CORPUS.llc_of(version)
    if llc is None:
        pytest.skip(f"llc {version} is not installed (apt-get install llvm-{version})")
    known = CORPUS.llc_processors(llc)
    targets = [t for t in CORPUS.modelled_targets() if t in known]
    assert {"gfx906", "gfx90a", "gfx1100"} <= set(targets), known
    verified = moved = 0
    for target in targets:
        where = tmp_path / target
        v, m = _check(llc, target, _generate(llc, target, where), where)
        verified, moved = verified + v, moved + m
    assert verified >= len(targets), f"only {verified} outputs verified"
    assert moved > 0, "no schedule moved any instruction"


def test_the_run_line_names_the_target():
    assert CORPUS.run_line_target("# RUN: llc -march=amdgcn -mcpu=gfx908 -run-pass=x") == "gfx908"
    assert CORPUS.run_line_target("# RUN: llc -mtriple=amdgpu9.0a -run-pass=x %s") == "gfx90a"
    assert CORPUS.run_line_target("# RUN: llc -mtriple=amdgpu11.00-amd-amdhsa") == "gfx1100"
    assert CORPUS.run_line_target("# RUN: llc -mtriple=amdgcn -run-pass=x") == "generic"


def test_retarget_rewrites_the_cpu_and_drops_the_features():
    ir = 'attributes #0 = { nounwind "target-cpu"="gfx906" "target-features"="+dpp,+gfx9-insts" }'
    assert CORPUS.retarget(ir, "gfx1100") == 'attributes #0 = { nounwind "target-cpu"="gfx1100" }'


def test_instruction_order_ignores_kill_flags_and_layout():
    a = "---\nname: f\nbody: |\n  bb.0:\n    liveins: $vgpr0\n\n    %0 = COPY killed $vgpr0\n"
    b = "---\nname: f\nbody: |\n  bb.0:\n    liveins: $vgpr0\n    %0 = COPY $vgpr0\n"
    c = a.replace("%0 = COPY killed $vgpr0", "S_NOP 0\n    %0 = COPY $vgpr0")
    assert CORPUS.instruction_lines(a) == CORPUS.instruction_lines(b) == ["%0 = COPY $vgpr0"]
    assert CORPUS.instruction_lines(c) != CORPUS.instruction_lines(b)


def _entry(**kw):
    base = {"corpus": "llvm-tests", "path": "/x/t.mir", "target": "gfx906", "llvm": 19}
    return CORPUS.Entry(**(base | {"import_code": 0, "schedule_code": 0} | kw))


@pytest.mark.parametrize(
    ("fields", "cls"),
    [
        (
            {"llc19_reads": True, "schedule_code": 2, "schedule_error": "t.mir:4: cannot parse x"},
            "refused-syntax",
        ),
        (
            {"llc19_reads": False, "schedule_code": 2, "schedule_error": "t.mir:4: cannot parse x"},
            "refused-clear",
        ),
        ({"schedule_code": 2, "schedule_error": "--mcpu x disagrees"}, "refused-unclear"),
        ({"schedule_code": 1, "schedule_error": "internal error"}, "crash"),
        ({"output": "/o/t.mir", "verify_ok": False}, "verifier-rejected"),
        ({"output": "/o/t.mir", "verify_ok": True, "reordered": True}, "scheduled+verified"),
        ({"output": "/o/t.mir", "verify_ok": True, "reordered": False}, "scheduled-unchanged"),
        ({"output": "/o/t.mir"}, "scheduled-unverified"),
    ],
)
def test_classes(fields: dict, cls: str):
    assert CORPUS.classify(_entry(**fields)) == cls


def test_llc_verifier_message_names_the_pass():
    stderr = "# After Greedy Register Allocator\n...\n*** Bad machine code: Bad kill ***\n- x\n"
    got = CORPUS.first_error(stderr)
    assert got.startswith("*** Bad machine code: Bad kill ***") and "Greedy" in got
