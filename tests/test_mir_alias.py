"""Memory edges from the embedded IR (`jaxsched.io.mir_alias`): hand-written IR and MIR, the
stencil example, and LLVM's own schedule of real kernels checked against our edges."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from jaxsched.io import mir_regions
from jaxsched.io.mir_alias import IrModule, read_ir, underlying_object
from jaxsched.io.mir_llvm import llvm_orders
from jaxsched.io.mir_parse import MemOperand, parse_mem_operand, split_top
from jaxsched.io.mir_regions import MirModule, read_mir

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"


# ---------------------------------------------------------------------- hand-written cases
def _mir(ir: str, accesses: list[tuple[str, str]], name: str = "f") -> str:
    """MIR of function ``name`` whose IR document is ``ir`` (without indentation) and whose one
    block does ``accesses`` in order: (``load``/``store``/``volatile store``, memory operand
    tail such as ``%ir.p, addrspace 1``); flat instructions, so any address space fits."""
    body = []
    for k, (kind, where) in enumerate(accesses):
        if kind.endswith("store"):
            body.append(
                f"FLAT_STORE_DWORD %0, %1, 0, 0, implicit $exec, implicit $flat_scr :: "
                f"({kind} (s32) into {where})"
            )
        else:
            body.append(
                f"%{10 + k}:vgpr_32 = FLAT_LOAD_DWORD %0, 0, 0, implicit $exec, "
                f"implicit $flat_scr :: (load (s32) from {where})"
            )
    registers = "".join(f"  - {{ id: {10 + k}, class: vgpr_32 }}\n" for k in range(len(body)))
    ir_doc = "--- |\n" + "".join(f"  {line}\n" for line in ir.strip().splitlines()) + "...\n"
    return (
        (ir_doc if ir else "")
        + f"---\nname:            {name}\nregisters:\n"
        + "  - { id: 0, class: vreg_64 }\n  - { id: 1, class: vgpr_32 }\n"
        + registers
        + "body:             |\n  bb.0:\n"
        + "".join(f"    {line}\n" for line in body)
        + "    S_ENDPGM 0\n...\n"
    )


def _order_edges(text: str) -> set[tuple[int, int]]:
    (mr,) = read_mir("t.mir", text=text).regions
    assert mr.region is not None, mr.problem
    return {(e.src, e.dst) for e in mr.region.edges if e.kind == "other" and e.dst < len(mr)}


def _ordered(ir: str, first: str, second: str, kinds=("store", "load")) -> bool:
    """Whether the two accesses (store then load by default) are ordered."""
    return (0, 1) in _order_edges(_mir(ir, [(kinds[0], first), (kinds[1], second)]))


_ARGS = """
define amdgpu_kernel void @f(ptr addrspace(1) noalias %a, ptr addrspace(1) noalias %b, \
ptr addrspace(1) %c, ptr addrspace(1) %d, i64 %i) {
  %pa = getelementptr inbounds float, ptr addrspace(1) %a, i64 %i
  %pb = getelementptr inbounds float, ptr addrspace(1) %b, i64 %i
  %pc = getelementptr float, ptr addrspace(1) %c, i64 %i
  %pd = getelementptr inbounds float, ptr addrspace(1) %d, i64 %i
  %v = getelementptr float, ptr addrspace(1) %c, i64 %i
  %v4 = getelementptr inbounds i8, ptr addrspace(1) %v, i64 4
  %v6 = getelementptr inbounds i8, ptr addrspace(1) %v, i64 6
  %v8 = getelementptr inbounds i8, ptr addrspace(1) %v, i64 8
  ret void
}
"""


def test_noalias_arguments_are_not_ordered_plain_ones_are():
    assert not _ordered(_ARGS, "%ir.pa, addrspace 1", "%ir.pb, addrspace 1")
    assert not _ordered(_ARGS, "%ir.b, addrspace 1", "%ir.pa, addrspace 1")
    # a noalias argument and a plain one: an argument vs an identified function-local object
    assert not _ordered(_ARGS, "%ir.pa, addrspace 1", "%ir.pc, addrspace 1")
    assert _ordered(_ARGS, "%ir.pc, addrspace 1", "%ir.pd, addrspace 1")
    assert _ordered(_ARGS, "%ir.pa, addrspace 1", "%ir.a, addrspace 1")
    # two stores too
    assert not _ordered(_ARGS, "%ir.pa, addrspace 1", "%ir.pb, addrspace 1", ("store", "store"))
    # loads never order loads; an unknown value orders
    assert not _ordered(_ARGS, "%ir.pc, addrspace 1", "%ir.pd, addrspace 1", ("load", "load"))
    assert _ordered(_ARGS, "%ir.pa, addrspace 1", "%ir.nothere, addrspace 1")


def test_constant_offsets_from_one_base_value():
    # CodeGenPrepare's %sunkaddr, LSR's %uglygep: constant GEPs of one (variable) pointer
    assert not _ordered(_ARGS, "%ir.v4, addrspace 1", "%ir.v8, addrspace 1")
    assert not _ordered(_ARGS, "%ir.v, addrspace 1", "%ir.v4, addrspace 1")
    assert _ordered(_ARGS, "%ir.v4, addrspace 1", "%ir.v6, addrspace 1")  # 4..8 and 6..10
    assert _ordered(_ARGS, "%ir.v4 + 4, addrspace 1", "%ir.v8, addrspace 1")
    assert _ordered(_ARGS, "%ir.v8, addrspace 1", "%ir.pd, addrspace 1")


def test_volatile_stays_ordered():
    assert _ordered(_ARGS, "%ir.pa, addrspace 1", "%ir.pb, addrspace 1", ("volatile store", "load"))


_LOCAL = """
@lds = internal addrspace(3) global [64 x float] undef, align 4
@lds2 = internal addrspace(3) global [64 x float] undef, align 4

define void @f(ptr %x, ptr addrspace(3) %l, i32 %j) {
  %a = alloca [16 x float], align 4, addrspace(5)
  %b = alloca [16 x float], align 4, addrspace(5)
  %fa = addrspacecast ptr addrspace(5) %a to ptr
  %fa4 = getelementptr inbounds [16 x float], ptr %fa, i32 0, i32 %j
  %fb = addrspacecast ptr addrspace(5) %b to ptr
  %q = load ptr, ptr %x, align 8
  %g1 = getelementptr inbounds [64 x float], ptr addrspace(3) @lds, i32 0, i32 1
  %g2 = getelementptr inbounds [64 x float], ptr addrspace(3) @lds, i32 0, i32 2
  %g2b = getelementptr inbounds i8, ptr addrspace(3) @lds, i32 8
  %h = getelementptr inbounds [64 x float], ptr addrspace(3) @lds2, i32 0, i32 %j
  ret void
}
"""


def test_allocas_globals_and_arguments():
    assert not _ordered(_LOCAL, "%ir.fa4", "%ir.x")  # alloca vs argument
    assert not _ordered(_LOCAL, "%ir.fa4", "%ir.fb")  # two allocas
    assert _ordered(_LOCAL, "%ir.fa4", "%ir.q")  # alloca vs a loaded pointer
    assert _ordered(_LOCAL, "%ir.fa4", "%ir.fa")  # one alloca, unknown offset
    assert not _ordered(_LOCAL, "%ir.g1, addrspace 3", "%ir.h, addrspace 3")  # two globals
    assert _ordered(_LOCAL, "%ir.g1, addrspace 3", "%ir.l, addrspace 3")  # global vs argument
    # one global, constant offsets: 4..8 and 8..12 are disjoint, 8..12 twice is not
    assert not _ordered(_LOCAL, "%ir.g1, addrspace 3", "%ir.g2, addrspace 3")
    assert _ordered(_LOCAL, "%ir.g2, addrspace 3", "%ir.g2b, addrspace 3")
    assert _ordered(_LOCAL, "%ir.g1 + 4, addrspace 3", "%ir.g2, addrspace 3")
    assert not _ordered(_LOCAL, "@lds, addrspace 3", "%ir.g1, addrspace 3")  # 0..4 and 4..8


_CHAINS = """
@g = addrspace(3) global [4 x float] zeroinitializer
define amdgpu_kernel void @f(float addrspace(1)* noalias %a, \
float addrspace(1)* noalias %b, i64 %i, i1 %c) {
entry:
  %a1 = getelementptr inbounds float, float addrspace(1)* %a, i64 %i
  %a2 = bitcast float addrspace(1)* %a1 to <4 x float> addrspace(1)*
  %a3 = getelementptr <4 x float>, <4 x float> addrspace(1)* %a2, i64 1
  %a4 = bitcast <4 x float> addrspace(1)* %a3 to i32 addrspace(1)*
  %a5 = getelementptr i32, i32 addrspace(1)* %a4, i64 %i
  %a6 = bitcast i32 addrspace(1)* %a5 to float addrspace(1)*
  %a7 = getelementptr float, float addrspace(1)* %a6, i64 %i
  %b1 = getelementptr inbounds float, float addrspace(1)* %b, i64 %i
  %s = select i1 %c, float addrspace(1)* %a1, float addrspace(1)* %b1
  %s2 = select i1 %c, float addrspace(1)* %a1, float addrspace(1)* %a6
  %z = select i1 %c, float addrspace(1)* %a1, float addrspace(1)* null
  %cl = getelementptr inbounds float, float addrspace(3)* getelementptr inbounds \
([4 x float], [4 x float] addrspace(3)* @g, i32 0, i32 0), i32 2
  br label %loop

loop:                                             ; preds = %loop, %entry
  %p = phi float addrspace(1)* [ %a1, %entry ], [ %p.next, %loop ]
  %m = phi float addrspace(1)* [ %a1, %entry ], [ %b1, %loop ]
  %p.next = getelementptr inbounds float, float addrspace(1)* %p, i64 1
  %x = alloca float, align 4, addrspace(5)
  br i1 %c, label %loop, label %exit

exit:
  ret void
}
"""


def test_gep_chains_casts_select_and_phi():
    fn = read_ir(_mir(_CHAINS, []).splitlines(keepends=True)).function("f")
    assert fn is not None
    assert underlying_object(fn, "%a6") == "%a"  # 6 steps: found
    assert underlying_object(fn, "%a7") is None  # 7 steps: LLVM's limit, unknown
    assert underlying_object(fn, "%s2") == "%a"  # a select of one object
    assert underlying_object(fn, "%s") is None  # a select of two objects
    assert underlying_object(fn, "%z") is None
    assert underlying_object(fn, "%p") == "%a"  # a pointer induction variable
    assert underlying_object(fn, "%p.next") == "%a"
    assert underlying_object(fn, "%m") is None  # a phi of two objects
    assert underlying_object(fn, "%cl") == "@g"  # through a constant expression
    assert underlying_object(fn, "%x") is None  # an alloca outside the entry block
    assert fn.base_offset("%cl") == ("@g", 8) and fn.base_offset("%a3") == ("%a1", 16)
    assert fn.base_offset("%a7") == ("%a7", 0)
    assert not _ordered(_CHAINS, "%ir.a6, addrspace 1", "%ir.b1, addrspace 1")
    assert _ordered(_CHAINS, "%ir.a7, addrspace 1", "%ir.b1, addrspace 1")
    assert not _ordered(_CHAINS, "%ir.p.next, addrspace 1", "%ir.b1, addrspace 1")
    # different objects through a select or phi stay ordered
    assert _ordered(_CHAINS, "%ir.s, addrspace 1", "%ir.b1, addrspace 1")
    assert _ordered(_CHAINS, "%ir.m, addrspace 1", "%ir.b, addrspace 1")
    assert _ordered(_CHAINS, "%ir.b1, addrspace 1", "%ir.s, addrspace 1")


def test_unknown_or_unreadable_ir_stays_ordered():
    where = ("%ir.pa, addrspace 1", "%ir.pb, addrspace 1")
    assert _ordered("", *where)  # no IR document
    broken = _ARGS.replace("@f(", "@f(((")  # arguments cannot be read: no function
    assert read_ir(_mir(broken, []).splitlines(keepends=True)).function("f") is None
    assert _ordered(broken, *where)
    garbage = _ARGS.replace("getelementptr inbounds float,", "getelementptr ??? (,")
    assert _ordered(garbage, *where)
    assert read_ir(["--- |\n", "  define void @f(\n"]).functions == {}


def test_may_alias_on_memory_operands():
    fn = read_ir(_mir(_LOCAL, []).splitlines(keepends=True)).function("f")
    assert fn is not None

    def alias(x: str, y: str) -> bool:
        return fn.may_alias(parse_mem_operand(x), parse_mem_operand(y))

    assert not alias("store (s32) into %ir.fa4", "load (s32) from %ir.x")
    assert alias("store (s32) into %ir.fa4", "load (s64) from `ptr undef`")
    assert alias("store (s32) into %stack.0, addrspace 5", "load (s32) from %ir.x")
    assert not alias("store (s32) into %ir.g1, addrspace 3", "load (s32) from %ir.g2, addrspace 3")
    assert alias("store (s64) into %ir.g1, addrspace 3", "load (s32) from %ir.g2, addrspace 3")
    assert alias("store (<2 x s32>) into %ir.g1, addrspace 3", "load (s32) from %ir.g2b")
    assert alias("volatile store (s32) into %ir.fa4", "load (s32) from %ir.x")


# ---------------------------------------------------------------------- the stencil example
def _without_ir(monkeypatch: pytest.MonkeyPatch, path: Path, mcpu: str) -> MirModule:
    with monkeypatch.context() as m:
        m.setattr(mir_regions, "read_ir", lambda lines: IrModule({}))
        return read_mir(path, mcpu=mcpu)


def _store_to_load(mr) -> int:
    return sum(
        e.kind == "other"
        and "STORE" in mr.instrs[e.src].opcode
        and "LOAD" in mr.instrs[e.dst].opcode
        for e in mr.region.edges
        if e.dst < len(mr)  # not the completion pseudo-instruction
    )


@pytest.mark.parametrize("target", ["gfx906", "gfx942"])
def test_stencil_loads_move_above_stores(monkeypatch, target):
    path = ROOT / "examples" / "kernels" / f"stencil.{target}.mir"
    name = "stencil7_z4:bb.1:0"
    (before,) = [r for r in _without_ir(monkeypatch, path, target).regions if r.name == name]
    (after,) = [r for r in read_mir(path, mcpu=target).regions if r.name == name]
    assert _store_to_load(before) == 30 and _store_to_load(after) == 0
    # of 94 order edges (loads before stores too), the 6 among the 4 stores into the one
    # output array stay (variable indices)
    others = [e for e in after.region.edges if e.kind == "other" and e.dst < len(after)]
    assert sum(e.kind == "other" and e.dst < len(before) for e in before.region.edges) == 94
    assert len(others) == 6
    assert all("STORE" in after.instrs[e.src].opcode for e in others)


# ---------------------------------------------------------------------- LLVM's own order
def llvm_tool(version: int, tool: str = "llc") -> str | None:
    """``tool`` (llc, opt) of LLVM ``version`` (Debian's /usr/lib/llvm-N or TOOL-N on the
    PATH), or None."""
    for p in (f"/usr/lib/llvm-{version}/bin/{tool}", shutil.which(f"{tool}-{version}")):
        if p and Path(p).exists():
            return p
    return None


def violations(module: MirModule, orders: list[tuple[int, ...] | None]) -> list[tuple]:
    """Our edges that LLVM's orders (`llvm_orders`) break: (region, edge)."""
    out = []
    for mr, order in zip(module.regions, orders, strict=True):
        if mr.region is None or order is None:
            continue
        place = {i: p for p, i in enumerate(order)}
        out += [(mr, e) for e in mr.region.edges if e.dst < len(mr) and place[e.src] > place[e.dst]]
    return out


def explained(mr, edge, ir: IrModule) -> str | None:
    """Why LLVM may break one of our edges, where we are stricter than LLVM by design: an
    ``undef`` sub-register def ordered against the other lanes' defs and uses (see
    docs/frontends.md), or two accesses of one IR object at offsets LLVM's GEP analysis
    proves apart and ours does not (constant expressions, variable indices); None
    otherwise."""
    a, b = mr.instrs[edge.src], mr.instrs[edge.dst]
    if edge.kind in ("output", "anti"):
        undef = {op.name for op in (*a.regs, *b.regs) if op.is_def and op.undef and op.subreg}
        if undef & {op.name for op in a.regs} & {op.name for op in b.regs}:
            return "undef sub-register def"
    fn = ir.function(mr.function)
    if edge.kind == "other" and all(m.base.startswith("`") for m in a.mem + b.mem):
        return "constant expressions"  # MIR prints them in backquotes: unknown values to us
    if edge.kind == "other" and fn is not None:
        names = {"%" + m.base[4:] if m.base.startswith("%ir.") else m.base for m in a.mem + b.mem}
        objects = {underlying_object(fn, n) for n in names}
        if len(objects) == 1 and None not in objects:
            return "one IR object"
    return None


SAMPLES = [
    *sorted((ROOT / "examples" / "kernels").glob("*.mir")),
    DATA / "real" / "nn.mir",
    DATA / "real" / "histo_final.mir",
    DATA / "real" / "nn_gfx942.mir",
]


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_llvm_order_is_a_topological_order_of_our_dag(path: Path):
    target = "gfx942" if "942" in path.name else "gfx906"
    llc = llvm_tool(19 if target == "gfx942" else 15)
    if llc is None:
        pytest.skip("the llc that wrote this MIR is not installed")
    module = read_mir(path, mcpu=target)
    orders = llvm_orders(module, mcpu=target, llc=llc)
    assert any(o is not None and list(o) != sorted(o) for o in orders)  # LLVM moved things
    ir = read_ir(module.lines)
    broken = [
        f"{mr.name} {e.kind}: {mr.instrs[e.src].text} -> {mr.instrs[e.dst].text}"
        for mr, e in violations(module, orders)
        if explained(mr, e, ir) is None
    ]
    assert broken == []


# ---------------------------------------------------------------------- LLVM's BasicAA
_BYTES = {"i8": 1, "i16": 2, "half": 2, "i32": 4, "float": 4, "i64": 8, "double": 8}
_AA_LINE = re.compile(r"^\s+(NoAlias|MayAlias|MustAlias|PartialAlias):\s+(.*)$")


def _access(typed: str) -> MemOperand | None:
    """A load of ``TYPE* %x`` (as aa-eval prints a pointer and its access type)."""
    words = typed.rsplit(" ", 1)
    if len(words) != 2 or not words[1].startswith(("%", "@")):
        return None
    ty = re.sub(r"\s*(addrspace\(\d+\))?\*$", "", words[0].strip())
    m = re.fullmatch(r"<(\d+) x (\w+)>", ty)
    size = int(m.group(1)) * _BYTES[m.group(2)] if m and m.group(2) in _BYTES else _BYTES.get(ty)
    base = "%ir." + words[1][1:] if words[1].startswith("%") else words[1]
    access = "unknown-size" if size is None else f"(s{8 * size})"
    return parse_mem_operand(f"load {access} from {base}")


def basic_aa(opt: str, ir_text: str, tmp: Path) -> list[tuple[str, str, str, str]]:
    """LLVM's BasicAA on every pair of pointers the IR loads or stores through (``opt
    -passes=aa-eval``): (function, verdict, first, second) with ``TYPE* %x`` operands."""
    (tmp / "ir.ll").write_text(ir_text)
    modes = ("no", "may", "must", "partial")
    proc = subprocess.run(
        [opt, "-aa-pipeline=basic-aa", "-passes=aa-eval", "-disable-output", str(tmp / "ir.ll")]
        + [f"--print-{m}-aliases" for m in modes],
        check=True,
        capture_output=True,
        text=True,
        timeout=600,
    )
    out, function = [], ""
    for line in proc.stderr.splitlines():
        if line.startswith("Function: "):
            function = line.split()[1].rstrip(":")
        elif (m := _AA_LINE.match(line)) and len(pair := split_top(m.group(2))) == 2:
            out.append((function, m.group(1), *pair))
    return out


def _against_basic_aa(opt: str, mir_text: str, tmp: Path) -> tuple[int, list[str]]:
    """(pairs both call NoAlias, pairs we call NoAlias and LLVM's BasicAA does not)."""
    lines = mir_text.splitlines(keepends=True)
    end = next(k for k, line in enumerate(lines) if line.startswith("..."))
    ir_text = "".join(line.removeprefix("  ") for line in lines[1:end])
    ir = read_ir(lines)
    agreed, wrong = 0, []
    for function, verdict, first, second in basic_aa(opt, ir_text, tmp):
        fn, x, y = ir.function(function), _access(first), _access(second)
        if fn is None or x is None or y is None or fn.may_alias(x, y):
            continue
        agreed += verdict == "NoAlias"
        if verdict != "NoAlias":
            wrong.append(f"{function}: {verdict} {first}, {second}")
    return agreed, wrong


def _opt_or_skip() -> str:
    opt = llvm_tool(19, "opt")
    if opt is None:
        pytest.skip("opt 19 is not installed")
    return opt


_AA_IR = """
@g = internal addrspace(3) global [64 x float] undef, align 4
@h = internal addrspace(3) global [64 x float] undef, align 4

define void @f(ptr addrspace(1) noalias %a, ptr addrspace(1) %c, ptr addrspace(1) %d, \
ptr %x, ptr addrspace(3) %l, i64 %i, i32 %j, i1 %s) {
entry:
  %al = alloca [16 x float], align 4, addrspace(5)
  %fa = addrspacecast ptr addrspace(5) %al to ptr
  %pa = getelementptr inbounds float, ptr addrspace(1) %a, i64 %i
  %pc = getelementptr float, ptr addrspace(1) %c, i64 %i
  %c4 = getelementptr inbounds i8, ptr addrspace(1) %pc, i64 4
  %c6 = getelementptr inbounds i8, ptr addrspace(1) %pc, i64 6
  %c8 = getelementptr inbounds i8, ptr addrspace(1) %pc, i64 8
  %sel = select i1 %s, ptr addrspace(1) %pa, ptr addrspace(1) %c
  %sel2 = select i1 %s, ptr addrspace(1) %pa, ptr addrspace(1) %a
  %g1 = getelementptr inbounds [64 x float], ptr addrspace(3) @g, i32 0, i32 1
  %g2 = getelementptr inbounds i8, ptr addrspace(3) @g, i32 8
  %hj = getelementptr inbounds [64 x float], ptr addrspace(3) @h, i32 0, i32 %j
  %fx = getelementptr inbounds float, ptr %fa, i32 %j
  br label %loop

loop:
  %p = phi ptr addrspace(1) [ %pa, %entry ], [ %p.next, %loop ]
  %p.next = getelementptr inbounds float, ptr addrspace(1) %p, i64 1
  %v1 = load float, ptr addrspace(1) %pa, align 4
  %v2 = load float, ptr addrspace(1) %pc, align 4
  %v3 = load float, ptr addrspace(1) %d, align 4
  %v4 = load float, ptr addrspace(1) %c4, align 4
  %v5 = load float, ptr addrspace(1) %c6, align 4
  %v6 = load float, ptr addrspace(1) %c8, align 4
  %v7 = load float, ptr addrspace(1) %sel, align 4
  %v8 = load float, ptr addrspace(1) %sel2, align 4
  %v9 = load float, ptr addrspace(1) %p, align 4
  %v10 = load float, ptr addrspace(3) %g1, align 4
  %v11 = load float, ptr addrspace(3) %g2, align 4
  %v12 = load float, ptr addrspace(3) %hj, align 4
  %v13 = load float, ptr addrspace(3) %l, align 4
  %v14 = load float, ptr %fx, align 4
  %v15 = load float, ptr %x, align 4
  br i1 %s, label %loop, label %exit

exit:
  ret void
}
"""


def test_no_alias_only_where_llvm_basic_aa_says_so_by_hand(tmp_path: Path):
    agreed, wrong = _against_basic_aa(_opt_or_skip(), _mir(_AA_IR, []), tmp_path)
    assert wrong == []
    assert agreed >= 45  # of 51 BasicAA finds (it also splits selects)


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_no_alias_only_where_llvm_basic_aa_says_so(path: Path, tmp_path: Path):
    agreed, wrong = _against_basic_aa(_opt_or_skip(), path.read_text(), tmp_path)
    assert wrong == []
    assert agreed > 0 or "stencil" not in path.name
