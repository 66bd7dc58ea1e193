"""Scheduling regions of AMDGPU MIR: boundaries, dependence edges, registers and liveness.

Rules (see ``docs/frontends.md``):

* Regions: maximal runs of instructions of one basic block between boundaries (terminators,
  calls, labels, writes of EXEC, S_SETREG, GPR-index mode changes) as in LLVM's
  ``SIInstrInfo::isSchedulingBoundary``; debug instructions are skipped (they move with the
  instruction before them). Runs of one instruction are not regions (LLVM skips them too).
* Bundles: one instruction, as LLVM's scheduler takes them: the operands of all its parts
  but reads of values defined inside (`jaxsched.io.mir_parse.bundle_operands`), the memory
  accesses of all its members, a boundary if a member is, and the latency of
  ``SIInstrInfo::getInstrLatency`` (the longest member's, plus one per further member).
* Virtual registers: data, anti and output edges per 16-bit lane (sub-register aware), exactly
  LLVM's lane-mask rules (``ScheduleDAGInstrs`` with lane tracking, as the GCN scheduler uses).
* Physical registers: data, anti and output edges per register unit (``$sgpr4_sgpr5`` is
  ``sgpr4`` + ``sgpr5``); two dead defs need no output edge. They carry no pressure.
* Memory: instructions with side effects (unknown opcodes included), volatile or atomic
  accesses and memory instructions without memory operands are ordered against every memory
  access and each other; two other accesses, one a store, are ordered unless their address
  spaces cannot alias, they are different stack objects, they use one base with disjoint
  byte ranges, or the embedded IR proves their IR values apart as LLVM's BasicAA does
  (`jaxsched.io.mir_alias`: different identified objects, an argument and a function-local
  object, disjoint byte ranges at constant offsets from one base value). Invariant
  dereferenceable loads are never ordered.
* The region's end (LLVM's ``ExitSU``): a pseudo-instruction after the region's last, that
  every order issues last, once every instruction has completed (`completion_edges`).
* Pressure: virtual registers only, file and width from the register class; a tuple that an
  operand names by sub-register counts per 32-bit lane (`Lanes`), as LLVM's allocator does;
  liveness from a whole-function backward data-flow analysis, a lane only where a def of it
  reaches.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass

from jaxsched.io import latency as lat
from jaxsched.io.mir_alias import IrFunction, read_ir
from jaxsched.io.mir_parse import (
    MemOperand,
    MirBlock,
    MirFunction,
    MirInstr,
    ParsedMir,
    read_mir_text,
)
from jaxsched.problem.region import Edge, Instruction, Region, RegionError, Register

#: Lane masks use one bit per 16-bit half of a 32-bit register.
_ALL_LANES = (1 << 64) - 1
_PAIRED_PHYS = frozenset({"vcc", "exec", "flat_scr", "xnack_mask", "tba", "tma"})
_UNCONDITIONAL_END = re.compile(
    r"^(S_BRANCH|S_ENDPGM|SI_RETURN|S_SETPC_B64_return|SI_TCRETURN|S_CODE_END|SI_RETURN_TO_EPILOG"
    r"|S_TRAP)"
)
_ADDRSPACE_GROUP = {
    1: "global",
    4: "global",
    6: "global",
    7: "global",
    8: "global",
    2: "gds",
    3: "lds",
    5: "private",
}


@dataclass(frozen=True)
class MirRegion:
    """One scheduling region of a MIR module.

    Attributes:
      name: ``function:bb.N:k`` (k counts the regions of the block).
      function: function name.
      block: basic block number.
      instrs: the instructions in input order (ids of ``region`` index this tuple).
      groups: per instruction, the MIR line indices that move with it (its line, then the
        rest of its bundle, its debug values and comments), in input order. The other lines
        among them (blank lines, comments after those) keep their place among the
        instructions (`jaxsched.io.mir_write.write_mir`).
      region: the modelled region, or None when it cannot be modelled. Its instruction ids
        0..n-1 are ``instrs``; when it ends with the completion pseudo-instruction (id n,
        `EXIT_TEXT`, see `completion_edges`) every order of it issues that one last.
      problem: why it cannot be modelled (the region then keeps its input order), or None.
    """

    name: str
    function: str
    block: int
    instrs: tuple[MirInstr, ...]
    groups: tuple[tuple[int, ...], ...]
    region: Region | None
    problem: str | None = None

    def __len__(self) -> int:
        return len(self.instrs)

    def model_order(self, order: Sequence[int]) -> tuple[int, ...]:
        """An order of ``instrs`` (ids 0..n-1) as an order of ``region``: the completion
        pseudo-instruction, when the region has one, issued last."""
        order = tuple(order)
        if self.region is not None and len(self.region) > len(self.instrs):
            return (*order, len(self.instrs))
        return order


@dataclass
class MirModule(ParsedMir):
    """A parsed MIR file and its scheduling regions (in function, block, position order)."""

    regions: list[MirRegion]


def read_mir(
    source: str | os.PathLike, text: str | None = None, *, mcpu: str = lat.DEFAULT_CPU
) -> MirModule:
    """Parse MIR from a path, or from ``text`` (``source`` then only names it in errors), and
    extract its regions with ``mcpu``'s latencies (`jaxsched.io.latency.LATENCY_BY_CPU`); see
    `jaxsched.io.mir_parse.read_mir_text` for what is checked."""
    parsed = read_mir_text(source, text)
    regions = extract_regions(parsed, mcpu=mcpu)
    return MirModule(parsed.source, parsed.lines, parsed.functions, regions)


# ---------------------------------------------------------------------- registers
def register_of_class(cls: str) -> Register | None:
    """File and width (32-bit units) of an AMDGPU register class, or None if unknown.

    ``vgpr_32`` -> (VGPR, 1), ``vreg_64`` -> (VGPR, 2), ``sreg_64_xexec`` -> (SGPR, 2),
    ``sgpr_256`` -> (SGPR, 8); AGPR and AV classes count as VGPR (gfx90a shares the file);
    16-bit classes (``vgpr_lo16``) take a whole register.
    """
    c = cls.lower()
    if c.startswith(("vgpr", "vreg", "agpr", "areg", "av_")):
        file = "VGPR"
    elif c.startswith(("sgpr", "sreg", "ccr_sgpr", "sgpr_lo16")):
        file = "SGPR"
    else:
        return None
    m = re.search(r"_(\d+)(?:_|$)", c)
    if "lo16" in c or "hi16" in c:
        return Register(file, 1)
    if not m:
        return None
    bits = int(m.group(1))
    return Register(file, max(1, (bits + 31) // 32))


def lane_mask(subreg: str, width: int | None) -> int:
    """Lanes (16-bit halves) covered by a sub-register index of a register of ``width``."""
    full = _ALL_LANES if width is None else (1 << (2 * width)) - 1
    if not subreg:
        return full
    mask = 0
    parts = subreg.split("_")
    k = 0
    while k < len(parts):
        p = parts[k]
        m = re.fullmatch(r"sub(\d+)", p)
        if m:
            n = int(m.group(1))
            if k + 1 < len(parts) and parts[k + 1] in ("lo16", "hi16"):
                mask |= 1 << (2 * n + (parts[k + 1] == "hi16"))
                k += 2
                continue
            mask |= 0b11 << (2 * n)
        elif p == "lo16":
            mask |= 0b01
        elif p == "hi16":
            mask |= 0b10
        else:
            return full  # unknown index: all lanes (conservative)
        k += 1
    return mask or full


def phys_units(name: str) -> frozenset[str]:
    """Register units of a physical register: ``$sgpr4_sgpr5`` -> {sgpr4, sgpr5}."""
    n = name.lstrip("$")
    n = re.sub(r"_(lo16|hi16)$", "", n)
    if n in _PAIRED_PHYS:
        return frozenset({f"{n}_lo", f"{n}_hi"})
    if re.fullmatch(r"[a-z]+\d+(?:_[a-z]+\d+)*", n):
        return frozenset(n.split("_"))
    return frozenset({n})


_EXEC_UNITS = phys_units("$exec")


# ---------------------------------------------------------------------- instruction effects
@dataclass(frozen=True)
class _Effects:
    vuses: tuple[tuple[str, int], ...]  # (vreg, lanes) read
    vdefs: tuple[tuple[str, int, int, bool], ...]  # (vreg, def lanes, kill lanes, dead)
    puses: frozenset[str]  # physical units read
    pdefs: tuple[tuple[frozenset[str], bool], ...]  # (units, dead)
    partial_reads: frozenset[str]  # vregs read by sub-register defs without undef


def _effects(ins: MirInstr, widths: dict[str, int | None]) -> _Effects:
    vuses, vdefs, pdefs = [], [], []
    puses: set[str] = set()
    partial: set[str] = set()
    defs_by_reg: dict[str, int] = {}
    for op in ins.regs:
        if op.virtual and op.is_def and op.subreg:
            defs_by_reg[op.name] = defs_by_reg.get(op.name, 0) | lane_mask(
                op.subreg, widths.get(op.name)
            )
    for op in ins.regs:
        if op.virtual:
            mask = lane_mask(op.subreg, widths.get(op.name))
            if op.is_def:
                full_kill = not op.subreg or op.undef
                kill = _ALL_LANES if full_kill else mask
                if op.subreg and op.undef:
                    kill &= ~(defs_by_reg.get(op.name, 0) & ~mask)
                if op.subreg and not op.undef:
                    partial.add(op.name)
                vdefs.append((op.name, mask, kill, op.dead))
            elif not op.undef:
                vuses.append((op.name, mask))
        elif op.is_def:
            pdefs.append((phys_units(op.name), op.dead))
        elif not op.undef:
            puses |= phys_units(op.name)
    return _Effects(
        vuses=tuple(vuses),
        vdefs=tuple(vdefs),
        puses=frozenset(puses),
        pdefs=tuple(pdefs),
        partial_reads=frozenset(partial),
    )


def members(ins: MirInstr) -> tuple[MirInstr, ...]:
    """The instructions whose effects ``ins`` has: itself, or a bundle's parts but a
    ``BUNDLE`` header (whose operands only sum up its members)."""
    if not ins.parts:
        return (ins,)
    return tuple(p for p in ins.parts if p.opcode != "BUNDLE") or ins.parts


def instr_latency(ins: MirInstr, table: dict[str, int]) -> int:
    """The latency of ``ins`` in ``table``; a bundle's, as ``SIInstrInfo::getInstrLatency``:
    its longest member's, plus one per further member."""
    inner = members(ins)
    return max(table[lat.latency_class(x.opcode)] for x in inner) + len(inner) - 1


def _is_valu(ins: MirInstr) -> bool:
    """True if ``ins`` (or a member of its bundle) is a VALU instruction (``V_`` opcode)."""
    return any(x.opcode.startswith("V_") for x in members(ins))


def is_boundary(ins: MirInstr) -> bool:
    """True if LLVM ends a scheduling region at ``ins`` (see the module docstring)."""
    if any(lat.is_boundary_opcode(x.opcode) for x in members(ins)):
        return True
    return any(
        op.is_def and not op.virtual and phys_units(op.name) & _EXEC_UNITS for op in ins.regs
    )


# ---------------------------------------------------------------------- completion
#: The text of the pseudo-instruction that ends a modelled region: issued once every
#: instruction of the region has completed (`completion_edges`). It is no MIR instruction:
#: orders written back leave it out.
EXIT_TEXT = "<region end: every instruction complete>"


def completion_edges(
    instrs: Sequence[MirInstr], edges: Sequence[Edge], mcpu: str = lat.DEFAULT_CPU
) -> list[Edge]:
    """The edges to the completion pseudo-instruction (id ``len(instrs)``), or none when no
    instruction needs one.

    A block's time in the final code runs until every instruction has completed (llvm-mca
    times a block so; a store or a load whose value leaves the region keeps the wave's
    counters busy), not only until the last issue. Each instruction whose own latency is
    longer than every edge it has inside the region gets an edge of that latency, and every
    instruction without successors one of at least 1 cycle (so the pseudo-instruction comes
    last in every order): the region's length is then the cycle at which all of it has
    completed."""
    table = lat.latency_table(mcpu)
    longest = [0] * len(instrs)  # the longest edge out of each instruction (cycles)
    has_succ = [False] * len(instrs)
    for e in edges:
        longest[e.src] = max(longest[e.src], e.latency)
        has_succ[e.src] = True
    exit_id, out = len(instrs), []
    for i, ins in enumerate(instrs):
        own = instr_latency(ins, table)
        if own > 1 and own > longest[i]:
            out.append(Edge(src=i, dst=exit_id, latency=own, kind="other"))
        elif not has_succ[i]:
            out.append(Edge(src=i, dst=exit_id, latency=max(own, 1), kind="other"))
    return out if any(e.latency > 1 for e in out) else []


# ---------------------------------------------------------------------- memory
def _as_may_alias(a: int, b: int) -> bool:
    if a == 0 or b == 0 or a < 0 or b < 0:
        return True
    ga, gb = _ADDRSPACE_GROUP.get(a), _ADDRSPACE_GROUP.get(b)
    return ga is None or gb is None or ga == gb


def _stack_index(base: str) -> tuple[str, int] | None:
    m = re.fullmatch(r"%(stack|fixed-stack)\.(\d+)(?:\.[^\s]*)?", base)
    return (m.group(1), int(m.group(2))) if m else None


def mem_may_alias(x: MemOperand, y: MemOperand) -> bool:
    """Whether two memory operands may touch the same bytes (conservative)."""
    if not _as_may_alias(x.addrspace, y.addrspace):
        return False
    if x.volatile or y.volatile or x.atomic or y.atomic:
        return True
    sx, sy = _stack_index(x.base), _stack_index(y.base)
    if sx and sy and sx[0] == "stack" and sy[0] == "stack" and sx[1] != sy[1]:
        return False
    if x.base and x.base == y.base and (x.base.startswith("%") or sx is not None):
        if x.size is None or y.size is None:
            return True
        lo, hi = (x, y) if x.offset <= y.offset else (y, x)
        return lo.offset + lo.size > hi.offset
    return True


@dataclass(frozen=True)
class _MemKind:
    barrier: bool
    access: bool  # an ordinary load/store to check pairwise
    load: bool
    store: bool


def _mem_kind(ins: MirInstr) -> _MemKind:
    """How ``ins`` (a bundle: all its members) takes part in memory ordering."""
    kinds = [_mem_kind_one(x) for x in members(ins)]
    barrier = any(k.barrier for k in kinds)
    return _MemKind(
        barrier=barrier,
        access=not barrier and any(k.access for k in kinds),
        load=any(k.load for k in kinds),
        store=any(k.store for k in kinds),
    )


def _mem_kind_one(ins: MirInstr) -> _MemKind:
    op = ins.opcode
    if ins.mem:
        if all(
            m.load
            and not m.store
            and m.invariant
            and m.dereferenceable
            and not m.volatile
            and not m.atomic
            for m in ins.mem
        ) or all(m.load and not m.store and m.base == "constant-pool" for m in ins.mem):
            return _MemKind(barrier=False, access=False, load=True, store=False)
        ordered = any(m.volatile or m.atomic for m in ins.mem)
        load = any(m.load for m in ins.mem) or "LOAD" in op or "ATOMIC" in op
        store = any(m.store for m in ins.mem) or "STORE" in op or "ATOMIC" in op
        side = lat.has_side_effects(op) and not lat.is_memory_opcode(op)
        return _MemKind(
            barrier=ordered or side, access=not (ordered or side), load=load, store=store
        )
    if lat.is_memory_opcode(op):
        return _MemKind(
            barrier=True, access=False, load=True, store=True
        )  # no memory operands: unknown access
    if lat.has_side_effects(op):
        return _MemKind(barrier=True, access=False, load=False, store=False)
    return _MemKind(barrier=False, access=False, load=False, store=False)


# ---------------------------------------------------------------------- dependence graph
def build_edges(
    instrs: tuple[MirInstr, ...],
    widths: dict[str, int | None],
    mcpu: str = lat.DEFAULT_CPU,
    ir: IrFunction | None = None,
    sgprs: frozenset[str] = frozenset(),
) -> list[Edge]:
    """All dependence edges among ``instrs`` (ids = positions), see the module docstring;
    data edges carry ``mcpu``'s latencies; ``ir``, the function's IR, rules out memory edges
    between accesses it proves apart (`jaxsched.io.mir_alias`). ``sgprs``: the virtual
    registers of SGPR classes, whose data edges from a VALU def to a VALU use take
    ``mcpu``'s `jaxsched.io.latency.VALU_SGPR_HAZARD` wait states."""
    deps = _Dependences(instrs, widths, lat.latency_table(mcpu), ir)
    hazard = lat.VALU_SGPR_HAZARD.get(mcpu, 0)
    if hazard and sgprs:
        deps.hazard = (1 + hazard, sgprs, [_is_valu(x) for x in instrs])
    deps.div_fmas = 1 + lat.DIV_FMAS_HAZARD.get(mcpu, 0)
    for i, ins in enumerate(instrs):
        eff = _effects(ins, widths)
        for reg, mask in eff.vuses:
            deps.virtual_use(i, reg, mask)
        for reg, dmask, kmask, dead in eff.vdefs:
            deps.virtual_def(i, reg, dmask, kmask, dead)
        deps.physical(i, eff.puses, eff.pdefs)
        deps.memory(i, ins)
    return deps.edges


class _Dependences:
    """The state `build_edges` carries from one instruction to the next, and the edges so far
    (virtual registers per lane bit, physical units, memory accesses since the last barrier)."""

    def __init__(
        self,
        instrs: tuple[MirInstr, ...],
        widths: dict[str, int | None],
        table: dict[str, int],
        ir: IrFunction | None = None,
    ) -> None:
        self.instrs, self.widths, self.ir = instrs, widths, ir
        self.latency = [instr_latency(x, table) for x in instrs]  # per instruction
        self.edges: list[Edge] = []
        self.vdefs: dict[
            str, list[tuple[int, int, int, bool]]
        ] = {}  # reg -> [(i, def, kill, dead)]
        self.last_def: dict[str, dict[int, int]] = {}  # reg -> lane bit -> instr
        self.pending: dict[str, dict[int, list[int]]] = {}  # reg -> lane bit -> [instr] (uses)
        self.p_defs: dict[str, list[tuple[int, bool]]] = {}  # unit -> [(instr, dead)]
        self.p_uses: dict[str, list[int]] = {}  # unit -> [instr]
        self.last_barrier = -1
        self.accesses: list[tuple[int, _MemKind, MirInstr]] = []
        # (edge latency, SGPR virtual registers, bool per instruction: VALU) of the
        # VALU-writes-SGPR hazard (`build_edges`), or None where the target has none.
        self.hazard: tuple[int, frozenset[str], list[bool]] | None = None
        self.div_fmas = 1  # the edge latency of the VALU-writes-VCC hazard of V_DIV_FMAS

    def _edge(self, j: int, i: int, latency: int, kind: str) -> None:
        self.edges.append(Edge(src=j, dst=i, latency=latency, kind=kind))

    def _data_latency(self, j: int, i: int, reg: str) -> int:
        """The latency of the data edge j -> i through virtual ``reg``: ``j``'s, or the
        VALU-writes-SGPR hazard's (`build_edges`) where longer."""
        if self.hazard is None:
            return self.latency[j]
        cycles, sgprs, valu = self.hazard
        if valu[j] and valu[i] and reg in sgprs:
            return max(self.latency[j], cycles)
        return self.latency[j]

    def virtual_use(self, i: int, reg: str, mask: int) -> None:
        """Data edges from the defs reaching the lanes ``mask`` of ``reg``; records the use."""
        remaining = mask
        for j, dmask, kmask, dead in reversed(self.vdefs.get(reg, [])):
            if not remaining:
                break
            if dead:
                continue  # LLVM: a dead def has no uses and kills nothing
            if remaining & dmask:
                self._edge(j, i, self._data_latency(j, i, reg), "data")
            remaining &= ~kmask
        lanes = self.pending.setdefault(reg, {})
        for b in _bits(mask):
            lanes.setdefault(b, []).append(i)

    def virtual_def(self, i: int, reg: str, dmask: int, kmask: int, dead: bool) -> None:
        """Anti edges from pending uses and output edges from the last defs of the lanes."""
        lanes = self.pending.setdefault(reg, {})
        last = self.last_def.setdefault(reg, {})
        # An ``undef`` sub-register def ends the other lanes' values too: order it against
        # their defs and uses (stricter than LLVM, which instead rewrites undef flags).
        width = self.widths.get(reg)
        order_mask = kmask & (_ALL_LANES if width is None else (1 << (2 * width)) - 1)
        for b in _bits(order_mask | dmask):
            for u in lanes.pop(b, []):
                if u != i:
                    self._edge(u, i, lat.ANTI_LATENCY, "anti")
            j = last.get(b)
            if j is not None and j != i:
                self._edge(j, i, lat.OUTPUT_LATENCY, "output")
            last[b] = i
        self.vdefs.setdefault(reg, []).append((i, dmask, kmask, dead))

    def physical(self, i: int, puses, pdefs) -> None:
        """Data, anti and output edges of physical register units."""
        for u in puses:
            defs = self.p_defs.get(u, [])
            if defs and defs[-1][0] != i:
                j = defs[-1][0]
                self._edge(j, i, self.latency[j], "data")
            self.p_uses.setdefault(u, []).append(i)
        if self.div_fmas > 1 and "vcc_lo" in puses:
            self._div_fmas_hazard(i)
        for units, dead in pdefs:
            for u in units:
                for k in self.p_uses.get(u, []):
                    if k != i:
                        self._edge(k, i, lat.ANTI_LATENCY, "anti")
                for j, jdead in self.p_defs.get(u, []):
                    if j != i and not (dead and jdead):
                        self._edge(j, i, lat.OUTPUT_LATENCY, "output")
                if dead:
                    self.p_defs.setdefault(u, []).append((i, dead))
                else:
                    self.p_defs[u] = [(i, dead)]
                    self.p_uses[u] = []

    def _div_fmas_hazard(self, i: int) -> None:
        """A ``V_DIV_FMAS`` reading VCC that ``$vcc = COPY %x`` wrote: an edge from ``%x``'s
        VALU def, which the allocator makes write VCC itself (`lat.DIV_FMAS_HAZARD`)."""
        if not any(x.opcode.startswith("V_DIV_FMAS") for x in members(self.instrs[i])):
            return
        defs = self.p_defs.get("vcc_lo", [])
        if not defs or self.instrs[defs[-1][0]].opcode != "COPY":
            return
        j = defs[-1][0]
        for op in self.instrs[j].regs:
            if op.virtual and not op.is_def:
                src = [k for k, _, _, dead in self.vdefs.get(op.name, []) if k < j and not dead]
                if src and _is_valu(self.instrs[src[-1]]):
                    k = src[-1]
                    self._edge(k, i, max(self.latency[k], self.div_fmas), "data")

    def memory(self, i: int, ins: MirInstr) -> None:
        """Order edges of barriers and of memory accesses that may alias (one a store)."""
        kind = _mem_kind(ins)
        if not (kind.barrier or kind.access):
            return
        if self.last_barrier >= 0:
            self._edge(self.last_barrier, i, lat.ORDER_LATENCY, "other")
        if kind.barrier:
            for j, _, _ in self.accesses:
                self._edge(j, i, lat.ORDER_LATENCY, "other")
            self.last_barrier, self.accesses = i, []
            return
        for j, other, jins in self.accesses:
            if (other.store or kind.store) and any(
                mem_may_alias(x, y) and (self.ir is None or self.ir.may_alias(x, y))
                for x in jins.mem
                for y in ins.mem
            ):
                self._edge(j, i, lat.ORDER_LATENCY, "other")
        self.accesses.append((i, kind, ins))


def _bits(mask: int) -> list[int]:
    out = []
    b = 0
    while mask:
        if mask & 1:
            out.append(b)
        mask >>= 1
        b += 1
    return out


# ---------------------------------------------------------------------- liveness
class Lanes:
    """How pressure names the virtual registers of one function: a register of more than one
    32-bit register that some operand names by sub-register is tracked per 32-bit lane
    (``%5:0``, ``%5:1``...; one register of its file each), as LLVM's allocator and GCN
    pressure trackers follow lane masks: ``undef %5.sub0 = ...`` makes one register live, not
    the tuple, and each lane dies at its own last use. Every other register is one name."""

    def __init__(self, fn: MirFunction, regs: dict[str, Register | None]) -> None:
        self.regs = regs
        self.split = {
            op.name: reg.width
            for b in fn.blocks
            for ins in b.instrs
            for op in ins.regs
            if op.virtual and op.subreg and (reg := regs.get(op.name)) and reg.width > 1
        }

    @staticmethod
    def is_lane(name: str) -> bool:
        """Whether a pressure name is one lane of a tuple."""
        return ":" in name

    def register(self, name: str) -> Register | None:
        """File and width of a pressure name (a lane: one register of its tuple's file)."""
        base, _, lane = name.partition(":")
        reg = self.regs.get(base)
        return Register(reg.file, 1) if reg is not None and lane else reg

    def effect(self, op) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
        """(names read, names killed, names defined) by one virtual register operand. A
        sub-register def without ``undef`` reads the lanes it writes only in part (16 bits)."""
        width = self.split.get(op.name)
        if width is None:
            whole = (op.name,)
            if op.is_def:
                partial = bool(op.subreg) and not op.undef
                return (whole if partial else ()), (() if partial else whole), whole
            return ((), (), ()) if op.undef else (whole, (), ())
        mask = lane_mask(op.subreg, width)
        lanes = [i for i in range(width) if mask >> (2 * i) & 0b11]
        names = tuple(f"{op.name}:{i}" for i in lanes)
        if not op.is_def:
            return ((), (), ()) if op.undef else (names, (), ())
        if not op.subreg or op.undef:
            return (), tuple(f"{op.name}:{i}" for i in range(width)), names
        half = tuple(f"{op.name}:{i}" for i in lanes if mask >> (2 * i) & 0b11 != 0b11)
        return half, tuple(n for n in names if n not in half), names


def _reg_reads_kills(ins: MirInstr, lanes: Lanes) -> tuple[set[str], set[str]]:
    reads: set[str] = set()
    kills: set[str] = set()
    for op in ins.regs:
        if op.virtual:
            r, k, _ = lanes.effect(op)
            reads.update(r)
            kills.update(k)
    return reads, kills


def _defined(ins: MirInstr, lanes: Lanes) -> set[str]:
    return {n for op in ins.regs if op.virtual and op.is_def for n in lanes.effect(op)[2]}


def _successors(fn: MirFunction) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    numbers = [b.number for b in fn.blocks]
    for k, b in enumerate(fn.blocks):
        if b.successors is not None:
            out[b.number] = list(b.successors)
            continue
        succ: list[int] = []
        real = [p for x in b.instrs if not x.is_debug for p in (x.parts or (x,))]
        for x in real:
            if lat.is_boundary_opcode(x.opcode):
                succ += [int(s) for s in re.findall(r"%bb\.(\d+)", x.text)]
        if (not real or not _UNCONDITIONAL_END.match(real[-1].opcode)) and k + 1 < len(numbers):
            succ.append(numbers[k + 1])
        out[b.number] = succ
    return out


def function_liveness(fn: MirFunction, lanes: Lanes) -> dict[int, set[str]]:
    """Pressure names (`Lanes`) live at the end of each block (by block number)."""
    gen: dict[int, set[str]] = {}
    kill: dict[int, set[str]] = {}
    for b in fn.blocks:
        g: set[str] = set()
        k: set[str] = set()
        for ins in reversed(b.instrs):
            if ins.is_debug:
                continue
            reads, kills = _reg_reads_kills(ins, lanes)
            g -= kills
            k |= kills
            g |= reads
        gen[b.number], kill[b.number] = g, k - g
    succ = _successors(fn)
    live_in = {b.number: set(gen[b.number]) for b in fn.blocks}
    live_out: dict[int, set[str]] = {b.number: set() for b in fn.blocks}
    changed = True
    while changed:
        changed = False
        for b in reversed(fn.blocks):
            out = set()
            for s in succ.get(b.number, []):
                out |= live_in.get(s, set())
            if out != live_out[b.number]:
                live_out[b.number] = out
                new_in = gen[b.number] | (out - kill[b.number])
                if new_in != live_in[b.number]:
                    live_in[b.number] = new_in
                changed = True
    return live_out


def function_definitions(fn: MirFunction, lanes: Lanes) -> dict[int, set[str]]:
    """Pressure names that a def may reach at the start of each block (by block number): a
    lane read where no def reaches (a tuple built in part) holds no register, as in LLVM's
    live intervals."""
    succ = _successors(fn)
    defs = {
        b.number: {n for ins in b.instrs if not ins.is_debug for n in _defined(ins, lanes)}
        for b in fn.blocks
    }
    reach: dict[int, set[str]] = {b.number: set() for b in fn.blocks}
    changed = True
    while changed:
        changed = False
        for b in fn.blocks:
            out = reach[b.number] | defs[b.number]
            for s in succ.get(b.number, []):
                if s in reach and not out <= reach[s]:
                    reach[s] |= out
                    changed = True
    return reach


def _live_before_each(
    b: MirBlock, live_out: set[str], reached: set[str], lanes: Lanes
) -> list[set[str]]:
    """live[k] = pressure names live before instruction k of the block (k = len: at end):
    read later on some path; a lane also reached by a def (``reached``: at the block's
    start), as a tuple built in part leaves its other lanes undefined."""
    live = set(live_out)
    out = [set() for _ in range(len(b.instrs) + 1)]
    out[len(b.instrs)] = set(live)
    for k in range(len(b.instrs) - 1, -1, -1):
        ins = b.instrs[k]
        if not ins.is_debug:
            reads, kills = _reg_reads_kills(ins, lanes)
            live = (live - kills) | reads
        out[k] = set(live)
    defined = set(reached)
    for k, ins in enumerate(b.instrs):
        out[k] = {n for n in out[k] if n in defined or not Lanes.is_lane(n)}
        if not ins.is_debug:
            defined |= _defined(ins, lanes)
    out[-1] = {n for n in out[-1] if n in defined or not Lanes.is_lane(n)}
    return out


# ---------------------------------------------------------------------- regions
def split_block(b: MirBlock) -> list[list[int]]:
    """Indices (into ``b.instrs``) of each run between boundaries; debug instructions skipped."""
    runs: list[list[int]] = []
    cur: list[int] = []
    for k, ins in enumerate(b.instrs):
        if ins.is_debug:
            continue
        if is_boundary(ins):
            if cur:
                runs.append(cur)
            cur = []
            continue
        cur.append(k)
    if cur:
        runs.append(cur)
    return runs


def _class_of(fn: MirFunction, reg: str, inline: dict[str, str]) -> str:
    return fn.reg_classes.get(reg) or inline.get(reg, "")


def extract_regions(
    module: ParsedMir, min_size: int = 2, *, mcpu: str = lat.DEFAULT_CPU
) -> list[MirRegion]:
    """Every scheduling region of ``module`` with at least ``min_size`` instructions, edges
    with ``mcpu``'s latencies."""
    lat.latency_table(mcpu)  # an unknown target fails here, before any work
    ir = read_ir(module.lines)
    out: list[MirRegion] = []
    for fn in module.functions:
        inline: dict[str, str] = {}
        for b in fn.blocks:
            for ins in b.instrs:
                for op in ins.regs:
                    if op.virtual and op.reg_class:
                        inline.setdefault(op.name, op.reg_class)
        regs_all = {
            r: register_of_class(_class_of(fn, r, inline))
            for r in set(fn.reg_classes) | set(inline)
        }
        widths = {r: (v.width if v else None) for r, v in regs_all.items()}
        sgprs = frozenset(r for r, v in regs_all.items() if v and v.file == "SGPR")
        lanes = Lanes(fn, regs_all)
        live_out = function_liveness(fn, lanes)
        reach = function_definitions(fn, lanes)
        for b in fn.blocks:
            runs = [r for r in split_block(b) if len(r) >= min_size]
            if not runs:
                continue
            live = _live_before_each(b, live_out[b.number], reach[b.number], lanes)
            for k, run in enumerate(runs):
                name = f"{fn.name}:bb.{b.number}:{k}"
                region = _make_region(
                    name, fn, b, run, live, lanes, widths, inline, mcpu, ir.function(fn.name), sgprs
                )
                out.append(region)
    return out


def _make_region(
    name: str,
    fn: MirFunction,
    b: MirBlock,
    run: list[int],
    live: list[set[str]],
    lanes: Lanes,
    widths: dict[str, int | None],
    inline: dict[str, str],
    mcpu: str,
    ir: IrFunction | None = None,
    sgprs: frozenset[str] = frozenset(),
) -> MirRegion:
    instrs = tuple(b.instrs[k] for k in run)
    groups = tuple((b.instrs[k].line, *b.trailing[k]) for k in run)
    problem = None
    try:
        before, after = live[run[0]], live[run[-1] + 1]
        insts, used = _pressure(instrs, fn, lanes, inline, before)
        referenced = set(used)
        read = {r for x in insts for r in x.uses}
        live_in = sorted(read & before)
        live_out = sorted(referenced & after)
        through: dict[str, int] = {}
        for r in sorted((before & after) - referenced):
            reg = lanes.register(r)
            if reg is not None:
                through[reg.file] = through.get(reg.file, 0) + reg.width
        edges = build_edges(instrs, widths, mcpu, ir, sgprs)
        exits = completion_edges(instrs, edges, mcpu)
        if exits:
            insts.append(Instruction(EXIT_TEXT, (), ()))
        region = Region.build(name, insts, used, [*edges, *exits], live_in, live_out, through)
    except RegionError as e:
        region, problem = None, str(e)
    return MirRegion(
        name=name,
        function=fn.name,
        block=b.number,
        instrs=instrs,
        groups=groups,
        region=region,
        problem=problem,
    )


def _pressure(
    instrs: tuple[MirInstr, ...],
    fn: MirFunction,
    lanes: Lanes,
    inline: dict[str, str],
    before: set[str],
) -> tuple[list[Instruction], dict[str, Register]]:
    """The region's instructions with the pressure names (`Lanes`) each defines and reads,
    and those names' registers. A read of a lane that is neither live before the region nor
    defined earlier in it (undefined: a tuple built in part) holds no register and is left
    out."""
    used: dict[str, Register] = {}
    insts = []
    defined: set[str] = set()
    for ins in instrs:
        defs: list[str] = []
        uses: list[str] = []
        for op in ins.regs:
            if not op.virtual:
                continue
            if lanes.regs.get(op.name) is None:
                cls = _class_of(fn, op.name, inline) or "<none>"
                raise RegionError(
                    f"line {ins.line + 1}: register {op.name} has unknown class {cls!r}"
                )
            reads, _, writes = lanes.effect(op)
            uses += [r for r in reads if r in before or r in defined or not Lanes.is_lane(r)]
            defs += writes
        for r in (*defs, *uses):
            used[r] = lanes.register(r)
        defined.update(defs)
        insts.append(Instruction(ins.text, tuple(dict.fromkeys(defs)), tuple(dict.fromkeys(uses))))
    return insts, used
