"""The MIR reader reads what llc reads (issue 33): bundles as llc prints them, documents
without ``---``, blank lines and comments among a block's instructions, tabs between tokens.

Each case is scheduled (latest ready instruction first, which reorders every region here),
written back, checked to keep every line exactly once and, where LLVM 19's llc is installed,
passed through its machine verifier.
"""

from __future__ import annotations

import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from jaxsched.io.mir import MirError, read_mir, write_mir
from jaxsched.io.mir_llvm import llvm_schedule, tag_instructions
from jaxsched.io.mir_regions import MirModule
from jaxsched.problem.region import Region

LLC19 = next(
    (p for p in ("/usr/lib/llvm-19/bin/llc", shutil.which("llc-19")) if p and Path(p).exists()),
    None,
)


def _latest_first(region: Region) -> tuple[int, ...]:
    """A topological order of ``region`` taking the largest ready id first."""
    indeg = [len(p) for p in region.predecessors()]
    ready = [i for i, d in enumerate(indeg) if d == 0]
    order: list[int] = []
    while ready:
        i = max(ready)
        ready.remove(i)
        order.append(i)
        for j, _ in region.successors()[i]:
            indeg[j] -= 1
            if indeg[j] == 0:
                ready.append(j)
    return tuple(order)


def _llc(
    text: str, tmp_path: Path, passes: str = "-run-pass=none"
) -> subprocess.CompletedProcess | None:
    """llc 19 running ``passes`` on ``text`` with its machine verifier on, or None without
    llc 19."""
    if LLC19 is None:
        return None
    path = tmp_path / "out.mir"
    path.write_text(text)
    args = ["-march=amdgcn", "-mcpu=gfx906", passes, "-verify-machineinstrs"]
    return subprocess.run(
        [LLC19, *args, "-o", "-", str(path)], capture_output=True, text=True, timeout=120
    )


def _llc_verifies(text: str, tmp_path: Path, passes: str = "-run-pass=none") -> None:
    """llc 19 runs ``passes`` on ``text`` and its machine verifier accepts it (nothing without
    llc 19)."""
    proc = _llc(text, tmp_path, passes)
    assert proc is None or proc.returncode == 0, proc.stderr[-2000:]


def _schedule(text: str, tmp_path: Path, sizes: list[int]) -> tuple[MirModule, str]:
    """Read ``text`` (llc accepts it), check its region sizes, write it back reordered and
    check that every line is kept exactly once and that llc accepts the result."""
    _llc_verifies(text, tmp_path)
    module = read_mir("in.mir", text=text)
    assert [len(mr) for mr in module.regions] == sizes
    assert all(mr.region is not None and mr.problem is None for mr in module.regions)
    assert write_mir(module, [None] * len(sizes)) == text
    identity = [tuple(range(len(mr))) for mr in module.regions]
    assert write_mir(module, identity) == text
    out = write_mir(module, [_latest_first(mr.region) for mr in module.regions])
    assert out != text
    assert Counter(out.splitlines(keepends=True)) == Counter(text.splitlines(keepends=True))
    again = read_mir("out.mir", text=out)
    assert [len(mr) for mr in again.regions] == sizes
    _llc_verifies(out, tmp_path)
    return module, out


# ---------------------------------------------------------------------- bundles
_BUNDLE = """\
---
name:            f
tracksRegLiveness: true
body:             |
  bb.0:
    liveins: $vgpr0
    $vgpr1 = V_MOV_B32_e32 1, implicit $exec
    BUNDLE implicit-def $vgpr2, implicit-def $vgpr3, implicit $exec, implicit $vgpr1 {
      $vgpr2 = V_MOV_B32_e32 2, implicit $exec
      $vgpr3 = V_ADD_U32_e32 $vgpr1, internal $vgpr2, implicit $exec
    }
    $vgpr4 = V_MOV_B32_e32 4, implicit $exec
    $vgpr5 = V_ADD_U32_e32 $vgpr3, $vgpr4, implicit $exec
    S_ENDPGM 0, implicit $vgpr5
...
"""
_HEADER = "    BUNDLE implicit-def $vgpr2, implicit-def $vgpr3, implicit $exec, implicit $vgpr1 {\n"
_FIRST = "      $vgpr2 = V_MOV_B32_e32 2, implicit $exec\n"
_BUNDLE_FORMS = {
    "as llc prints it": _BUNDLE,
    "bare header": _BUNDLE.replace(_HEADER, "    BUNDLE {\n"),
    "no space before the brace": _BUNDLE.replace(" {\n", "{\n"),
    "first member on the header's line": _BUNDLE.replace(" {\n" + _FIRST, " { " + _FIRST[6:]),
    "an instruction as the header": _BUNDLE.replace(_HEADER + _FIRST, _FIRST[2:-1] + " {\n"),
    "comments and blank lines inside": _BUNDLE.replace(_FIRST, _FIRST + "\n      ; inside\n"),
}


@pytest.mark.parametrize("form", list(_BUNDLE_FORMS))
def test_a_bundle_is_one_instruction_that_moves_whole(form: str, tmp_path: Path):
    text = _BUNDLE_FORMS[form]
    module, out = _schedule(text, tmp_path, [4])
    (mr,) = module.regions
    bundle = mr.instrs[1]
    assert len(bundle.parts) >= 2 and mr.groups[1][-1] == bundle.bundle_end
    # its operands: its members' (the header's, if any), not the read of the internal $vgpr2
    reads = {op.name for op in bundle.regs if not op.is_def}
    assert reads == {"$vgpr1", "$exec"}
    assert {op.name for op in bundle.regs if op.is_def} == {"$vgpr2", "$vgpr3"}
    edges = {(e.src, e.dst): e.kind for e in mr.region.edges}
    assert edges[(0, 1)] == "data" and edges[(1, 3)] == "data" and (1, 2) not in edges
    # $vgpr4's def went first; the bundle's lines moved as one block, in their order
    lines = text.splitlines(keepends=True)
    block = "".join(lines[mr.groups[1][0] : mr.groups[1][-1] + 1])
    assert _latest_first(mr.region) == (2, 0, 1, 3) and block in out
    assert out.index("$vgpr4 = V_MOV") < out.index("$vgpr1 = V_MOV") < out.index(block)


def test_an_instruction_after_the_closing_brace_moves_with_the_bundle(tmp_path: Path):
    six = "    $vgpr6 = V_MOV_B32_e32 6, implicit $exec\n"
    text = _BUNDLE.replace("    }\n    $vgpr4", "    }$vgpr4").replace(
        "    S_ENDPGM", six + "    S_ENDPGM"
    )
    module, out = _schedule(text, tmp_path, [4])
    (mr,) = module.regions
    assert [p.opcode for p in mr.instrs[1].parts] == [
        "BUNDLE",
        "V_MOV_B32_e32",
        "V_ADD_U32_e32",
        "V_MOV_B32_e32",
    ]
    assert out.index(six) < out.index("$vgpr1 = V_MOV") < out.index("    }$vgpr4")


_VIRTUAL_BUNDLE = """\
---
name:            v
tracksRegLiveness: true
registers:
  - { id: 0, class: vreg_64 }
  - { id: 1, class: vgpr_32 }
  - { id: 2, class: vgpr_32 }
  - { id: 3, class: vgpr_32 }
  - { id: 4, class: vgpr_32 }
  - { id: 5, class: vgpr_32 }
body:             |
  bb.0:
    liveins: $vgpr0_vgpr1
    %0:vreg_64 = COPY $vgpr0_vgpr1
    %2:vgpr_32 = V_MOV_B32_e32 2, implicit $exec
    %3:vgpr_32 = V_MOV_B32_e32 3, implicit $exec
    BUNDLE implicit-def %4, implicit %2, implicit %3, implicit $exec {
      %4:vgpr_32 = V_ADD_U32_e32 %2, %3, implicit $exec
    }
    %1:vgpr_32 = GLOBAL_LOAD_DWORD %0, 0, 0, implicit $exec :: (load (s32), addrspace 1)
    %5:vgpr_32 = V_ADD_U32_e32 %1, %4, implicit $exec
    S_ENDPGM 0, implicit %5
...
"""


def test_a_bundle_of_virtual_registers_compiles_after_scheduling(tmp_path: Path):
    module, out = _schedule(_VIRTUAL_BUNDLE, tmp_path, [6])
    (mr,) = module.regions
    assert mr.region.live_in == () and mr.region.live_out == ("%5",)
    assert _latest_first(mr.region) == (2, 1, 3, 0, 4, 5)
    _llc_verifies(out, tmp_path, "-start-before=machine-scheduler")
    # a second member reading the first's %4 (internal): %4 is not live into the region
    add = "      %4:vgpr_32 = V_ADD_U32_e32 %2, %3, implicit $exec\n"
    text = _VIRTUAL_BUNDLE.replace(add, add + add.replace("%4", "%6").replace("%2,", "%4,"))
    (mr,) = read_mir("in.mir", text=text.replace("%1, %4", "%1, %6")).regions
    assert mr.region.live_in == () and "%6" in mr.region.registers


def test_a_bundle_takes_its_members_memory_and_latency():
    load = "      $vgpr2 = GLOBAL_LOAD_DWORD $vgpr6_vgpr7, 0, 0, implicit $exec :: (load (s32))\n"
    text = _BUNDLE.replace(_HEADER + _FIRST, "    BUNDLE {\n" + load).replace(
        "liveins: $vgpr0", "liveins: $vgpr0, $vgpr6_vgpr7"
    )
    (mr,) = read_mir("in.mir", text=text).regions
    assert len(mr.instrs[1].mem) == 1 and mr.instrs[1].mem[0].load
    edges = {(e.src, e.dst): e for e in mr.region.edges}
    assert edges[(1, 3)].latency > 2  # the load's latency, plus one for the second member


@pytest.mark.parametrize(
    ("edit", "line", "message"),
    [
        (lambda t: t.replace(_FIRST, _FIRST[:-1] + " {\n"), 9, "bundles do not nest"),
        (lambda t: t.replace("    }\n", ""), 8, "never closed"),
        (lambda t: t.replace("implicit $exec\n    }", "implicit $exec }"), 10, "must start its"),
        (lambda t: t.replace(_FIRST, "  bb.1:\n"), 9, "block header 'bb.1:' inside the bundle"),
        (lambda t: t.replace(_HEADER, _HEADER + "    }\n"), 9, "empty bundle"),
        (lambda t: t.replace(_HEADER, "    {\n"), 8, "must follow an instruction"),
        (lambda t: t.replace("    }\n", "    }\n    }\n"), 12, "closes no bundle"),
    ],
)
def test_a_malformed_bundle_is_an_error_with_its_line(edit, line: int, message: str):
    with pytest.raises(MirError, match=rf"x\.mir \(function 'f'\):{line}: .*{message}"):
        read_mir("x.mir", text=edit(_BUNDLE))


# ---------------------------------------------------------------------- documents
_PLAIN = """\
---
name:            {name}
tracksRegLiveness: true
registers:
  - {{ id: 0, class: vgpr_32 }}
  - {{ id: 1, class: vgpr_32 }}
  - {{ id: 2, class: vgpr_32 }}
body:             |
  bb.0:
    liveins: $vgpr0
    %0:vgpr_32 = COPY $vgpr0
    %1:vgpr_32 = V_MOV_B32_e32 1, implicit $exec
    %2:vgpr_32 = V_ADD_U32_e32 %0, %1, implicit $exec
    S_ENDPGM 0, implicit %2
...
"""
_IR = """\
--- |
  define amdgpu_kernel void @f() { ret void }
  define amdgpu_kernel void @g() { ret void }
...
"""
_F, _G = _PLAIN.format(name="f"), _PLAIN.format(name="g")
_DOCUMENTS = {
    "first without ---": _F[4:] + _G,
    "after ... without ---": _F + _G[4:],
    "both without ---, a comment first": "# functions\n" + _F[4:] + _G[4:],
    "IR without ---": _IR[4:] + _F + _G,
    "IR, then functions without ---": _IR + _F[4:] + _G[4:],
    "a comment after ---": _F.replace("---", "--- # f") + _G,
}


@pytest.mark.parametrize("case", list(_DOCUMENTS))
def test_documents_may_omit_the_dashes(case: str, tmp_path: Path):
    module, _ = _schedule(_DOCUMENTS[case], tmp_path, [3, 3])
    assert [f.name for f in module.functions] == ["f", "g"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("hello\n", r"x\.mir:1: not MIR"),
        (_F + "  name: g\n", r"x\.mir:16: unexpected line '  name: g' after the end"),
        (_F + "bb.0:\n", r"x\.mir:16: unexpected line 'bb.0:' after the end"),
        (_F + "body: |\n  bb.0:\n", r"x\.mir:16: function document without a 'name:'"),
        (_F + "--- name: g\n", r"x\.mir:16: unexpected text after '---'"),
    ],
)
def test_a_stray_line_between_documents_is_an_error_with_its_line(text: str, message: str):
    with pytest.raises(MirError, match=message):
        read_mir("x.mir", text=text)


# ---------------------------------------------------------------------- blank lines
_MOVE = "    %1:vgpr_32 = V_MOV_B32_e32 1, implicit $exec"
_BLANKS = _F.replace(
    _MOVE + "\n",
    f"    ; after the copy\n\n    ; before the move\n{_MOVE} ; $vgpr9 = x\n\n",
)


def test_blank_lines_and_comments_do_not_stop_scheduling(tmp_path: Path):
    _, out = _schedule(_BLANKS, tmp_path, [3])
    # the copy (with the comment right after it) and the move swap; the blank lines, and the
    # comment after the first one, stay after as many instructions as before
    lines = out.splitlines()[10:17]
    assert lines == [
        "    %1:vgpr_32 = V_MOV_B32_e32 1, implicit $exec ; $vgpr9 = x",
        "",
        "    ; before the move",
        "    %0:vgpr_32 = COPY $vgpr0",
        "    ; after the copy",
        "",
        "    %2:vgpr_32 = V_ADD_U32_e32 %0, %1, implicit $exec",
    ]


# ---------------------------------------------------------------------- tabs
_TABS = {
    "between tokens": ("%1:vgpr_32 = V_MOV_B32_e32 1,", "%1:vgpr_32\t=\tV_MOV_B32_e32\t1,\t"),
    "no spaces at '='": ("%2:vgpr_32 = V_ADD", "%2:vgpr_32=V_ADD"),
    "after a key": ("name:            f", "name:\tf"),
    "after the indentation": ("    %0:vgpr_32", "  \t%0:vgpr_32"),
    "after a block header": ("bb.0:", "bb.0:\t"),
}


@pytest.mark.parametrize("case", list(_TABS))
def test_tabs_where_llc_reads_them(case: str, tmp_path: Path):
    old, new = _TABS[case]
    assert old in _F
    _schedule(_F.replace(old, new) + _G, tmp_path, [3, 3])


def test_a_tab_in_the_indentation_is_an_error_as_in_llc(tmp_path: Path):
    text = _F.replace("    %0:vgpr_32", "\t%0:vgpr_32")
    with pytest.raises(MirError, match=r"x\.mir:11: unexpected line '\\t%0:vgpr_32"):
        read_mir("x.mir", text=text)
    proc = _llc(text, tmp_path)
    assert proc is None or (proc.returncode != 0 and "YAML:11:" in proc.stderr)


_KILL = """\
---
name:            k
tracksRegLiveness: true
body:             |
  bb.0:
    liveins: $vgpr0
    $vgpr1 = V_MOV_B32_e32 1, implicit $exec
    $vgpr2 = V_ADD_U32_e32\t$vgpr1,\t$vgpr0, implicit $exec
    $vgpr3=V_ADD_U32_e32 killed\t$vgpr1, $vgpr0, implicit $exec
    S_ENDPGM 0, implicit $vgpr2, implicit $vgpr3
...
"""


def test_a_kill_flag_moves_on_a_tabbed_line(tmp_path: Path):
    module = read_mir("k.mir", text=_KILL)
    (mr,) = module.regions
    assert _latest_first(mr.region) == (0, 2, 1)
    out = write_mir(module, [(0, 2, 1)])
    lines = out.splitlines()
    assert lines[6:9] == [
        "    $vgpr1 = V_MOV_B32_e32 1, implicit $exec",
        "    $vgpr3 = V_ADD_U32_e32 $vgpr1, $vgpr0, implicit $exec",
        "    $vgpr2 = V_ADD_U32_e32 killed $vgpr1, $vgpr0, implicit $exec",
    ]
    _llc_verifies(_KILL, tmp_path)
    _llc_verifies(out, tmp_path)


@pytest.mark.parametrize(
    "form", ["as llc prints it", "bare header", "an instruction as the header"]
)
def test_llvm_reads_back_its_order_of_a_region_with_a_bundle(form: str):
    """The guard's tags (`tag_instructions`) go on a bundle's header, before its ``{``: llc
    reads them and LLVM's order of the region comes back whole."""
    if LLC19 is None:
        pytest.skip("llc 19 is not installed")
    module = read_mir("in.mir", text=_BUNDLE_FORMS[form])
    text, tags = tag_instructions(module)
    header = text.splitlines()[module.regions[0].instrs[1].line]
    assert header.rstrip().endswith("{") and "debug-instr-number" in header
    (order,) = llvm_schedule(module, llc=LLC19).orders
    assert order is not None and sorted(order) == [0, 1, 2, 3] and len(tags) == 4
