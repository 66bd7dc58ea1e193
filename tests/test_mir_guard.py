"""The guard after register allocation (`jaxsched.io.mir_guard`): a function where our order
ends worse than LLVM's keeps LLVM's schedule; the others keep ours, byte for byte."""

from __future__ import annotations

from pathlib import Path

import pytest

from jaxsched.io.mir import (
    AsmStats,
    asm_stats,
    find_llc,
    ll_to_mir,
    mir_to_asm,
    read_mir,
    schedule_orders,
    write_mir,
)
from jaxsched.io.mir_guard import (
    function_documents,
    guard,
    replace_functions,
    worse_than_llvm,
)

DATA = Path(__file__).resolve().parent / "data"
needs_llc = pytest.mark.skipif(find_llc() is None, reason="llc not installed")


def _stats(vgprs=10, occupancy=10, spills=0, scratch=0) -> AsmStats:
    return AsmStats(
        vgprs=vgprs, sgprs=8, occupancy=occupancy, scratch=scratch, spills=spills, code_size=100
    )


def test_worse_means_lower_occupancy_more_spills_or_more_scratch():
    llvm = _stats()
    assert worse_than_llvm(_stats(vgprs=30), llvm) == ""  # more VGPRs, same occupancy: fine
    assert worse_than_llvm(_stats(occupancy=11), llvm) == ""
    assert "occupancy 9" in worse_than_llvm(_stats(occupancy=9), llvm)
    assert "spills" in worse_than_llvm(_stats(spills=2), llvm)
    assert "scratch" in worse_than_llvm(_stats(scratch=16), llvm)
    # functions without an occupancy (-1: not a kernel) are judged by spills only
    assert worse_than_llvm(_stats(occupancy=-1), _stats(occupancy=-1)) == ""


def _layered(region) -> list[int]:
    """A valid order that raises pressure: by depth in the dependence graph (every load
    first), a caricature of a latency-first scheduler."""
    depth = [0] * len(region)
    for e in sorted(region.edges, key=lambda e: e.dst):
        depth[e.dst] = max(depth[e.dst], depth[e.src] + 1)
    return sorted(range(len(region)), key=lambda j: (depth[j], j))


@pytest.fixture(scope="module")
def unrolled():
    mir = ll_to_mir(DATA / "amdgpu_unrolled.ll") if find_llc() else ""
    return mir


@needs_llc
def test_a_function_that_loses_occupancy_keeps_llvms_schedule(unrolled):
    module = read_mir("unrolled", text=unrolled)
    orders, _ = schedule_orders(module, lambda rs: [_layered(r) for r in rs])
    ours = write_mir(module, orders)
    llvm = asm_stats(mir_to_asm(unrolled, start="-start-before"))["unrolled"]
    before = asm_stats(mir_to_asm(ours))["unrolled"]
    assert before.occupancy < llvm.occupancy  # the premise: this order loses occupancy
    out, decisions = guard(unrolled, ours, source="unrolled")
    assert [(d.function, d.kept) for d in decisions] == [("unrolled", "llvm")]
    assert "occupancy" in decisions[0].reason
    assert asm_stats(mir_to_asm(out))["unrolled"] == llvm  # exactly what llc makes of it


@needs_llc
@pytest.mark.parametrize("name", ["amdgpu_saxpy_loop.ll", "amdgpu_lds_stack.ll"])
def test_functions_that_do_not_lose_keep_our_order(name):
    mir = ll_to_mir(DATA / name)
    module = read_mir(name, text=mir)
    ours = write_mir(module, schedule_orders(module, None)[0])  # the input order
    out, decisions = guard(mir, ours, source=name)
    kept = {d.function for d in decisions if d.kept == "ours"}
    assert {d.function for d in decisions} == set(asm_stats(mir_to_asm(mir)))
    for d in decisions:
        assert (d.kept == "llvm") == bool(worse_than_llvm(d.ours, d.llvm))
    docs_out, docs_ours = function_documents(out), function_documents(ours)
    assert all(docs_out[fn] == docs_ours[fn] for fn in kept)
    if kept == {d.function for d in decisions}:
        assert out == ours


@needs_llc
def test_replacing_documents_by_themselves_gives_the_text_back(unrolled):
    docs = function_documents(unrolled)
    assert list(docs) == ["unrolled"]
    assert docs["unrolled"].startswith("---") and "name:" in docs["unrolled"]
    assert replace_functions(unrolled, docs) == unrolled
    assert replace_functions(unrolled, {}) == unrolled


@needs_llc
def test_schedule_files_guards_by_default_and_reports_each_function(tmp_path):
    from jaxsched.mir_files import schedule_files

    layered = [DATA / "amdgpu_unrolled.ll"]
    (f,) = schedule_files(layered, scheduler=lambda rs: [_layered(r) for r in rs])
    assert f.error is None and [(d.function, d.kept) for d in f.guard] == [("unrolled", "llvm")]
    llvm = asm_stats(mir_to_asm(f.module.text, start="-start-before"))
    assert asm_stats(mir_to_asm(f.text)) == llvm
    (off,) = schedule_files(layered, scheduler=lambda rs: [_layered(r) for r in rs], guard=False)
    assert off.guard == [] and asm_stats(mir_to_asm(off.text))["unrolled"].occupancy < 10


@needs_llc
def test_cli_prints_the_verdict_after_allocation(tmp_path, capsys):
    from jaxsched.cli.main import main

    src = str(DATA / "amdgpu_saxpy_loop.ll")
    out = tmp_path / "out.mir"
    assert main(["mir", "schedule", src, "-o", str(out), "--method", "original"]) == 0
    printed = capsys.readouterr().out
    assert "saxpy_loop: after RA (llc), LLVM's scheduler -> ours: VGPRs" in printed
    assert main(["mir", "schedule", src, "-o", str(out), "--method", "original", "--no-guard"]) == 0
    assert "after RA" not in capsys.readouterr().out


def test_guard_required_without_llc_is_the_files_error(tmp_path, monkeypatch):
    from jaxsched.mir_files import schedule_files

    monkeypatch.setenv("JAXSCHED_LLC", str(tmp_path / "no-such-llc"))
    mir = DATA / "hand_written.mir"
    (f,) = schedule_files(
        [mir], scheduler=lambda rs: [tuple(range(len(r))) for r in rs], guard=True
    )
    assert f.error is not None and "the guard needs llc" in f.error
    (g,) = schedule_files([mir], scheduler=lambda rs: [tuple(range(len(r))) for r in rs])
    assert g.error is None and g.guard == [] and g.guard_note == ""
