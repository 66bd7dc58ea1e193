"""MIR front end: parsing, edges checked against LLVM's scheduler, write-back, llc round trip."""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

import pytest

from jaxsched.heuristics import issue_cycles
from jaxsched.io.mir import MirError, OrderError, read_mir, schedule_orders, write_mir
from jaxsched.io.mir_llc import asm_stats, find_llc, ll_to_mir, mir_to_asm, run_llc
from jaxsched.io.mir_parse import parse_mem_operand
from jaxsched.io.mir_regions import (
    EXIT_TEXT,
    lane_mask,
    mem_may_alias,
    phys_units,
    register_of_class,
)
from jaxsched.machines.model import gfx906
from jaxsched.problem.format import load_regions, region_to_dict
from jaxsched.verify import verify, verify_order

DATA = Path(__file__).resolve().parent / "data"
KERNELS = sorted(DATA.glob("amdgpu_*.ll"))
needs_llc = pytest.mark.skipif(find_llc() is None, reason="llc (LLVM 14+) is not installed")


def _mir(path: Path, stop: str = "machine-scheduler") -> str:
    return ll_to_mir(path, stop_before=stop)


def _topo(region, rng: random.Random | None = None, reverse: bool = False) -> list[int]:
    """A topological order: random (rng), largest id first (reverse) or smallest id first."""
    n = len(region)
    indeg = [0] * n
    for e in region.edges:
        indeg[e.dst] += 1
    ready = [i for i in range(n) if indeg[i] == 0]
    out: list[int] = []
    succ = region.successors()
    while ready:
        if rng is not None:
            i = ready.pop(rng.randrange(len(ready)))
        else:
            i = max(ready) if reverse else min(ready)
            ready.remove(i)
        out.append(i)
        for j, _ in succ[i]:
            indeg[j] -= 1
            if indeg[j] == 0:
                ready.append(j)
    return out


# ---------------------------------------------------------------------- unit rules
def test_register_classes():
    assert register_of_class("vgpr_32") == ("VGPR", 1)
    assert register_of_class("vreg_64") == ("VGPR", 2)
    assert register_of_class("vreg_96") == ("VGPR", 3)
    assert register_of_class("vreg_64_align2") == ("VGPR", 2)
    assert register_of_class("sreg_32") == ("SGPR", 1)
    assert register_of_class("sgpr_32") == ("SGPR", 1)
    assert register_of_class("sreg_64_xexec") == ("SGPR", 2)
    assert register_of_class("sgpr_256") == ("SGPR", 8)
    assert register_of_class("agpr_32") == ("VGPR", 1)
    assert register_of_class("areg_128") == ("VGPR", 4)
    assert register_of_class("ccr_sgpr_64") == ("SGPR", 2)
    assert register_of_class("weird_class") is None


def test_lanes_and_units():
    assert lane_mask("", 2) == 0b1111
    assert lane_mask("sub1", 2) == 0b1100
    assert lane_mask("sub0_sub1", 4) == 0b1111
    assert lane_mask("lo16", 1) == 0b01
    assert lane_mask("bogus", 2) == 0b1111
    assert phys_units("$sgpr4_sgpr5") == {"sgpr4", "sgpr5"}
    assert phys_units("$vcc") == {"vcc_lo", "vcc_hi"}
    assert phys_units("$vcc_lo") == {"vcc_lo"}
    assert phys_units("$scc") == {"scc"}


def test_memory_alias_rules():
    st4 = parse_mem_operand("store (s32) into %stack.0 + 4, addrspace 5")
    st12 = parse_mem_operand("store (s32) into %stack.0 + 12, addrspace 5")
    st6 = parse_mem_operand("store (s32) into %stack.0 + 6, addrspace 5")
    other = parse_mem_operand("store (s32) into %stack.1, addrspace 5")
    glob = parse_mem_operand("load (s32) from %ir.p, addrspace 1")
    lds = parse_mem_operand("store (s32) into %ir.q, addrspace 3")
    flat = parse_mem_operand("store (s32) into %ir.r")
    vol = parse_mem_operand("volatile store (s32) into %stack.0 + 12, addrspace 5")
    assert st4.size == 4 and st4.offset == 4 and st4.addrspace == 5 and st4.store
    assert not mem_may_alias(st4, st12)
    assert mem_may_alias(st4, st6)
    assert not mem_may_alias(st4, other)
    assert not mem_may_alias(glob, lds)
    assert mem_may_alias(glob, flat) and mem_may_alias(lds, flat)
    assert mem_may_alias(st4, vol)


_HAND = (DATA / "hand_written.mir").read_text()


def test_hand_written_edges():
    m = read_mir("hand.mir", text=_HAND)
    (mr,) = m.regions
    r = mr.region
    assert r is not None and len(mr) == 10
    # the completion pseudo-instruction (id 10) after everything: the stores' latency
    assert len(r) == 11 and r.instructions[10].text == EXIT_TEXT
    assert {e.src for e in r.edges if e.dst == 10} >= {1, 2}
    edges = {(e.src, e.dst): e for e in r.edges}
    # disjoint offsets of one stack slot: no edge between the two stores
    assert (1, 2) not in edges
    # two dead implicit defs of $scc: no output edge from that; %3 gives data + output edges
    assert edges[(3, 4)].kind == "data"
    # sub-register aware: use of %2.sub1 depends on the sub1 def, not through sub0 data
    assert edges[(6, 7)].kind == "data"
    assert (5, 7) not in edges or edges[(5, 7)].kind != "data"
    # undef sub0 def is ordered before the sub1 def (the undef ends the other lanes)
    assert (5, 6) in edges
    # the barrier orders against the stores, not against ALU instructions
    assert edges[(1, 8)].kind == "other" and edges[(2, 8)].kind == "other"
    assert (7, 8) not in edges
    # latencies from the table: store -> nothing; COPY -> store data edge latency 1
    assert edges[(0, 1)].latency == 1
    assert r.live_out == ("%1", "%3")
    assert "%3" in r.live_in


_LANES = """---
name:            lanes
registers:
  - { id: 0, class: vgpr_32 }
  - { id: 1, class: vreg_64 }
  - { id: 2, class: vgpr_32 }
  - { id: 4, class: vreg_64 }
body:             |
  bb.0:
    liveins: $vgpr0
    %0:vgpr_32 = COPY $vgpr0
    undef %1.sub0:vreg_64 = V_ADD_U32_e32 1, %0, implicit $exec
    %1.sub1:vreg_64 = V_ADD_U32_e32 2, %0, implicit $exec
    %2:vgpr_32 = V_ADD_U32_e32 %1.sub0, %1.sub1, implicit $exec
    undef %4.sub0:vreg_64 = V_MOV_B32_e32 0, implicit $exec
    S_ENDPGM 0, implicit %2, implicit %4

...
"""


def test_pressure_follows_lanes():
    """A tuple that an operand names by sub-register counts per 32-bit lane, as LLVM's
    allocator sees it: a lane is live from its own def to its own last use, and a lane no
    def reaches holds no register."""
    (mr,) = read_mir("lanes.mir", text=_LANES).regions
    r = mr.region
    assert r is not None
    assert r.registers["%1:0"] == ("VGPR", 1) and "%1" not in r.registers
    assert r.instructions[2].defs == ("%1:1",) and r.instructions[2].uses == ("%0",)
    assert r.instructions[3].uses == ("%1:0", "%1:1")
    # %4's high lane is never defined: only its low lane leaves the region live
    assert r.live_out == ("%2", "%4:0")
    order = list(range(len(r)))
    rep = verify(r, gfx906(), issue_cycles(r, order), order=order)
    # whole registers: %0 with both lanes of %1 (3); per lane: %0 and one lane at a time (2)
    assert rep.peak_rp["VGPR"] == 2


def test_bad_mir_has_line_numbers():
    bad = _HAND.replace("S_BARRIER", "%9:vgpr_32 = = S_BARRIER")
    with pytest.raises(MirError, match=r"hand.mir \(function 'hand'\):19"):
        read_mir("hand.mir", text=bad)
    truncated = _HAND[: _HAND.index("    S_BARRIER")]
    with pytest.raises(MirError, match="truncated"):
        read_mir("cut.mir", text=truncated)
    with pytest.raises(MirError, match="not MIR"):
        read_mir("x.mir", text="hello\n")


def test_unmodelled_region_is_kept_and_reported():
    text = _HAND.replace("class: vreg_64", "class: mystery_64")
    m = read_mir("hand.mir", text=text)
    (mr,) = m.regions
    assert mr.region is None and "mystery_64" in mr.problem
    orders, notes = schedule_orders(m, None)
    assert orders == [None] and any("mystery_64" in n for n in notes)
    assert write_mir(m, orders) == text
    with pytest.raises(OrderError, match="cannot be reordered"):
        write_mir(m, [tuple(reversed(range(len(mr))))])


def test_order_errors():
    m = read_mir("hand.mir", text=_HAND)
    with pytest.raises(OrderError, match="permutation"):
        write_mir(m, [(0, 1)])
    with pytest.raises(OrderError, match="breaking a data edge"):
        write_mir(m, [(1, 0, *range(2, 10))])
    with pytest.raises(OrderError, match="unknown regions"):
        write_mir(m, {"nope": (0,)})


# ---------------------------------------------------------------------- with llc
@needs_llc
@pytest.mark.parametrize("path", KERNELS, ids=lambda p: p.stem)
def test_llvm_order_satisfies_every_edge(path: Path):
    before = read_mir(str(path), text=_mir(path))
    after = read_mir(str(path), text=_mir(path, "si-wqm"))
    blocks = {
        (f.name, b.number): [i.text for i in b.instrs] for f in after.functions for b in f.blocks
    }
    checked = reordered = 0
    for mr in before.regions:
        assert mr.region is not None, mr.problem
        texts = blocks[(mr.function, mr.block)]
        seen: dict[str, int] = {}
        pos = []
        for ins in mr.instrs:
            k = seen.get(ins.text, 0)
            matches = [j for j, t in enumerate(texts) if t == ins.text]
            assert len(matches) > k, f"{ins.text!r} not found after LLVM's scheduler"
            pos.append(matches[k])
            seen[ins.text] = k + 1
        reordered += pos != sorted(pos)
        for e in mr.region.edges:
            if e.dst == len(mr):
                continue  # the completion pseudo-instruction
            assert pos[e.src] < pos[e.dst], (
                mr.name,
                e,
                mr.instrs[e.src].text,
                mr.instrs[e.dst].text,
            )
            checked += 1
    assert checked > 0 and reordered > 0  # LLVM really moved something


@needs_llc
@pytest.mark.parametrize("path", KERNELS, ids=lambda p: p.stem)
def test_round_trip_and_reordered_mir_compiles(path: Path, tmp_path: Path):
    text = _mir(path)
    m = read_mir(str(path), text=text)
    machine = gfx906()
    assert write_mir(m, [None] * len(m.regions)) == text
    assert write_mir(m, [tuple(range(len(r))) for r in m.regions]) == text
    rng = random.Random(0)
    for variant in ("reverse", "random"):
        orders = []
        for mr in m.regions:
            r = mr.region
            order = _topo(r, rng) if variant == "random" else _topo(r, reverse=True)
            verify_order(r, machine, order)
            verify(r, machine, issue_cycles(r, order), order=order)
            orders.append(tuple(order))
        out = write_mir(m, orders)
        assert out != text
        # only moved lines (and kill flags moved to the new last reads)
        unkilled = [sorted(t.replace("killed ", "").splitlines()) for t in (out, text)]
        assert unkilled[0] == unkilled[1]
        again = read_mir("re", text=out)
        assert [len(r) for r in again.regions] == [len(r) for r in m.regions]
        p = tmp_path / f"{variant}.mir"
        p.write_text(out)
        asm = run_llc(
            [
                "-march=amdgcn",
                "-mcpu=gfx906",
                "-verify-machineinstrs",
                "-start-after=machine-scheduler",
                str(p),
                "-o",
                "-",
            ]
        )
        stats = asm_stats(asm)
        assert stats and all(s.vgprs > 0 and s.code_size > 0 for s in stats.values())


@needs_llc
def test_regions_file_and_liveness(tmp_path: Path):
    path = DATA / "amdgpu_saxpy_loop.ll"
    m = read_mir(str(path), text=_mir(path))
    loop = [r for r in m.regions if r.region is not None and "%112" in r.region.live_in]
    assert loop, "the loop counter must be live into the loop body"
    body = loop[0].region
    # the counter, the accumulators and the parameters are live around the loop
    assert {"%110", "%111", "%112"} <= set(body.live_out)
    assert body.live_through.get("VGPR", 0) > 0 and body.live_through.get("SGPR", 0) > 0
    out = tmp_path / "r.jsonl"
    from jaxsched.problem.format import save_regions

    save_regions([r.region for r in m.regions], out)
    back = load_regions(out)
    assert [region_to_dict(r) for r in back] == [region_to_dict(r.region) for r in m.regions]


@needs_llc
def test_asm_stats_match_llvm_output():
    path = DATA / "amdgpu_unrolled.ll"
    text = _mir(path)
    asm = mir_to_asm(text, start="-start-before")
    full = subprocess.run(
        [find_llc(), "-march=amdgcn", "-mcpu=gfx906", str(path), "-o", "-"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert asm_stats(asm) == asm_stats(full)
    (s,) = asm_stats(full).values()
    assert s.occupancy == 10 and s.spills == 0 and s.scratch == 0


@needs_llc
def test_cli_import_schedule_compare(tmp_path: Path, capsys):
    from jaxsched.cli.main import main

    ll = DATA / "amdgpu_unrolled.ll"
    mir = tmp_path / "in.mir"
    mir.write_text(_mir(ll))
    assert main(["mir", "import", str(mir), "-o", str(tmp_path / "r.jsonl")]) == 0
    assert len(load_regions(tmp_path / "r.jsonl")) == 1
    assert (
        main(
            [
                "mir",
                "schedule",
                str(mir),
                "-o",
                str(tmp_path / "out.mir"),
                "--method",
                "original",
                "--no-guard",
            ]
        )
        == 0
    )
    assert (tmp_path / "out.mir").read_text() == mir.read_text()
    assert main(["mir", "compare", str(ll), "--method", "original"]) == 0
    out = capsys.readouterr().out
    assert "unrolled" in out and "VGPRs" in out
    bad = tmp_path / "bad.mir"
    bad.write_text(_HAND.replace("S_BARRIER", "%9:vgpr_32 = = S_BARRIER"))
    assert main(["mir", "import", str(bad), "-o", str(tmp_path / "x.jsonl")]) == 2
    assert ":19:" in capsys.readouterr().err


def test_schedule_orders_takes_the_scheduler_from_the_caller():
    m = read_mir("hand.mir", text=_HAND)
    seen = []

    def reverse_topo(regions):
        seen.extend(regions)
        return [_topo(r, reverse=True) for r in regions]

    orders, notes = schedule_orders(m, reverse_topo, name="reverse")
    assert seen == [m.regions[0].region]
    full = tuple(_topo(m.regions[0].region, reverse=True))
    assert full[-1] == len(m.regions[0])  # the completion pseudo-instruction: always last
    assert orders[0] == full[:-1] and not notes
    out = write_mir(m, orders)
    assert out != _HAND and sorted(out.splitlines()) == sorted(_HAND.splitlines())

    def reverse(regions):
        return [tuple(reversed(range(len(r)))) for r in regions]

    orders, notes = schedule_orders(m, reverse, name="reverse")
    assert orders == [None] and "reverse order rejected" in notes[0]
    with pytest.raises(ValueError, match="gave 0 orders for 1 regions"):
        schedule_orders(m, lambda regions: [])
