"""AMDGPU opcode classes: latency per target, scheduling boundaries, side effects.

Each class's latency on a target is the one llvm-mca 19 (``-instruction-info``, LLVM's
scheduling model of the target, the judge of the final code: `jaxsched.io.mir_judge`) reports
most often for the class's instructions in the real kernels compiled for the target
(``benchmarks/mca_latency.py`` derives them; ``tests/data/mca_latency.json`` holds the survey).
The numbers are the cycles from issue until a dependent instruction may issue:

=====================================================  =========================================
class (first matching rule wins)                        examples
=====================================================  =========================================
vmem: vector memory (GLOBAL_, FLAT_, BUFFER_, SCRATCH_,  GLOBAL_LOAD_DWORD
TBUFFER_, IMAGE_, SI_SPILL_V*)
smem: scalar memory (S_LOAD_, S_BUFFER_LOAD_, S_STORE_,  S_LOAD_DWORDX2_IMM
S_SCRATCH_, S_ATOMIC_, SI_SPILL_S*)
lds: LDS / GDS (DS_)                                     DS_READ_B32
export (EXP)                                             EXP_DONE
f64_div: double division steps                           V_DIV_SCALE_F64_e64, V_DIV_FMAS_F64_e64
f64_cvt: conversions to or from double                   V_CVT_F64_F32_e32, V_CVT_I32_F64_e32
f64: other double precision (F64 in the opcode)          V_FMA_F64_e64, V_CMP_LT_F64_e64
div: single division steps                               V_DIV_SCALE_F32_e64, V_DIV_FMAS_F32_e64
cvt: conversions between float and 32-bit integers       V_CVT_F32_I32_e32, V_CVT_U32_F32_e32
trans: transcendental (EXP, LOG, RCP, RSQ, SQRT, SIN,    V_SQRT_F32_e32
COS)
quarter: quarter-rate integer (V_MUL_LO/HI 32,           V_MUL_LO_U32_e64
V_MAD_U64_U32)
b64: 64-bit shifts and compares, V_MOV_B64_PSEUDO        V_LSHLREV_B64_e64, V_CMP_LT_U64_e64
salu: other scalar ALU (S_ not matched above)            S_ADD_I32, S_LSHL_B32
alu: everything else (VALU, COPY, pseudos)               V_ADD_F32_e32, COPY
=====================================================  =========================================

========  =====  ====  ===  ======  =======  =======  ===  ===  ===  =====  =======  ===  ===  ====
cpu       vmem   smem  lds  export  f64_div  f64_cvt  f64  div  cvt  trans  quarter  b64  alu  salu
========  =====  ====  ===  ======  =======  =======  ===  ===  ===  =====  =======  ===  ===  ====
gfx906    80     5     5    4       16       4        8    16   4    4      4        2    1    1
gfx90a    80     5     5    4       1        1        1    1    4    4      1        1    1    1
gfx942    80     5     5    4       1        1        1    1    4    4      1        1    1    1
gfx1100   320    20    20   16      38       38       38   5    5    10     8        6    5    2
gfx1201   320    20    20   16      38       38       38   5    5    10     8        6    5    2
========  =====  ====  ===  ======  =======  =======  ===  ===  ===  =====  =======  ===  ===  ====

(gfx90a/gfx942 have no exports: 4 is ``SISchedule.td``'s ``WriteExport``; gfx906 has none in
the survey either: 4 as before.) Until 2026-11-28 gfx906 kept a hand-written table (F64 16,
single division and conversions 1, 64-bit compares 1): with the division steps at 1 cycle
instead of 16, the model saw nothing to gain in interleaving divisions, which llvm-mca runs
much faster interleaved. Wave32 and
wave64 share a table (llvm-mca reports the same latencies).

Edge latencies derived from it: a data edge carries the latency of its source; an anti edge 0
(LLVM's value: the redefinition may issue right after the read); output and memory-order
edges 1.
"""

from __future__ import annotations

import re

from jaxsched.errors import InputError

#: Latency of each class on gfx906 (cycles).
LATENCY = {
    "vmem": 80,
    "smem": 5,
    "lds": 5,
    "export": 4,
    "f64_div": 16,
    "f64_cvt": 4,
    "f64": 8,
    "div": 16,
    "cvt": 4,
    "trans": 4,
    "quarter": 4,
    "b64": 2,
    "alu": 1,
    "salu": 1,
}
_GFX90A = {
    **LATENCY,
    "f64_div": 1,
    "f64_cvt": 1,
    "f64": 1,
    "div": 1,
    "quarter": 1,
    "b64": 1,
}
_GFX11 = {
    "vmem": 320,
    "smem": 20,
    "lds": 20,
    "export": 16,
    "f64_div": 38,
    "f64_cvt": 38,
    "f64": 38,
    "div": 5,
    "cvt": 5,
    "trans": 10,
    "quarter": 8,
    "b64": 6,
    "alu": 5,
    "salu": 2,
}
#: Latency of each class (cycles) by llc ``-mcpu`` (see the module docstring).
LATENCY_BY_CPU = {
    "gfx906": LATENCY,
    "gfx90a": _GFX90A,
    "gfx942": _GFX90A,
    "gfx1100": _GFX11,
    "gfx1201": _GFX11,
}
#: Wait states between a VALU instruction that writes an SGPR (a compare's lane mask, a carry
#: out, ``v_readfirstlane``) and a VALU instruction that reads it, by llc ``-mcpu``: LLVM's
#: hazard recognizer puts ``s_nop 1`` between the two on the gfx940 family (on the shared
#: kernels' gfx942 code through llc 19, 445 of the 603 ``s_nop`` of LLVM's schedules sit
#: before a ``v_cndmask`` or ``v_addc_co`` right after the compare or add that feeds it);
#: gfx906 needs none. A data edge of that kind takes at least 1 + these cycles.
VALU_SGPR_HAZARD = {"gfx942": 2}
#: Wait states between a VALU instruction that writes VCC and a ``v_div_fmas`` that reads it
#: (LLVM's ``checkDivFMasHazards``, every GCN target): on the shared kernels' code, 90 of
#: gfx942's ``s_nop`` and 64 of gfx906's. In the MIR the value reaches VCC by ``$vcc = COPY``
#: (coalesced by the allocator): the edge goes from the copied value's VALU def to the
#: ``V_DIV_FMAS`` and takes at least 1 + these cycles.
DIV_FMAS_HAZARD = {"gfx906": 4, "gfx90a": 4, "gfx942": 4}
#: The target whose latencies the MIR front end uses unless told otherwise.
DEFAULT_CPU = "gfx906"
ANTI_LATENCY = 0
OUTPUT_LATENCY = 1
ORDER_LATENCY = 1

_VMEM = re.compile(r"^(GLOBAL_|FLAT_|BUFFER_|SCRATCH_|TBUFFER_|IMAGE_|SI_SPILL_[VA])")
_SMEM = re.compile(
    r"^(S_LOAD_|S_BUFFER_LOAD_|S_STORE_|S_BUFFER_STORE_|S_SCRATCH_|S_ATOMIC_|"
    r"S_BUFFER_ATOMIC_|SI_SPILL_S)"
)
_LDS = re.compile(r"^DS_")
_LDS_NOT_MEMORY = re.compile(r"^DS_(SWIZZLE|PERMUTE|BPERMUTE)_")
_TRANS = re.compile(r"^V_(EXP|LOG|RCP|RSQ|SQRT|SIN|COS)(_|$)")
_QUARTER = re.compile(r"^V_(MUL_LO_[UI]32|MUL_HI_[UI]32|MAD_[UI]64_[UI]32|MUL_LO_I32)")
_B64 = re.compile(
    r"^(V_(LSHLREV|LSHRREV|ASHRREV|LSHL|LSHR|ASHR)_[BI]64|V_MOV_B64_PSEUDO|V_CMPX?_\w+_[IU]64)"
)
_DIV = re.compile(r"^V_DIV_(SCALE|FMAS)_F(32|64)")
_CVT = re.compile(r"^V_CVT_(F32_[IU]32|[IU]32_F32|F64_F32|F32_F64|F64_[IU]32|[IU]32_F64)(_|$)")

#: Opcodes that end a scheduling region (LLVM: terminators, calls, labels, EXEC writes,
#: S_SETREG, GPR-index mode changes). EXEC writes are detected from operands in `is_boundary`.
_BOUNDARY = re.compile(
    r"^(S_BRANCH|S_CBRANCH_|S_ENDPGM|S_SETPC_|S_SWAPPC_|S_CALL_|S_RFE_|S_SETREG_|"
    r"S_SET_GPR_IDX_|SET_GPR_IDX|SI_CALL|SI_TCRETURN|SI_RETURN|SI_IF|SI_ELSE|SI_LOOP|SI_END_CF|"
    r"SI_KILL_.*TERMINATOR|SI_EARLY_TERMINATE|SI_BR_UNDEF|SI_MASK_BRANCH|SI_NON_UNIFORM_BRCOND|"
    r"SI_WATERFALL|SI_RETURN_TO_EPILOG|S_TRAP|S_.*_term$|.*_term$|"
    r"EH_LABEL|GC_LABEL|ANNOTATION_LABEL|CFI_INSTRUCTION|INLINEASM_BR|BUNDLE|TCRETURN|"
    r"S_CODE_END|RETURN|G_BR)"
)
#: Known instructions without side effects beyond their operands (safe to move around memory).
_PURE = re.compile(
    r"^(V_|COPY$|IMPLICIT_DEF$|REG_SEQUENCE$|INSERT_SUBREG$|EXTRACT_SUBREG$|SUBREG_TO_REG$|"
    r"KILL$|COPY_TO_REGCLASS$|SI_INIT_M0$|SI_PC_ADD_REL_OFFSET$|DS_SWIZZLE_|DS_PERMUTE_|"
    r"DS_BPERMUTE_|S_(MOV|MOVK|CMOV|CMOVK|ADD|ADDC|ADDK|SUB|SUBB|SUBK|MUL|MULK|MUL_HI|AND|OR|"
    r"XOR|ANDN2|ORN2|NAND|NOR|XNOR|NOT|WQM|BREV|BCNT0|BCNT1|FF0|FF1|FLBIT|SEXT|BITSET0|BITSET1|"
    r"LSHL|LSHR|ASHR|LSHL1_ADD|LSHL2_ADD|LSHL3_ADD|LSHL4_ADD|BFE|BFM|CSELECT|CMP|CMPK|ABS|"
    r"ABSDIFF|MIN|MAX|PACK|GETPC|CVT|QUADMASK|MOVRELD|MOVRELS|BITREPLICATE|AND_SAVEEXEC|"
    r"OR_SAVEEXEC|XOR_SAVEEXEC|ANDN2_SAVEEXEC|ORN2_SAVEEXEC|NAND_SAVEEXEC|NOR_SAVEEXEC|"
    r"XNOR_SAVEEXEC|ANDN1_SAVEEXEC|ORN1_SAVEEXEC|ANDN1_WREXEC|ANDN2_WREXEC)_)"
)
_MEMORY = re.compile(
    r"^(GLOBAL_|FLAT_|BUFFER_|SCRATCH_|TBUFFER_|IMAGE_|DS_|S_LOAD_|S_BUFFER_LOAD_|S_STORE_|"
    r"S_BUFFER_STORE_|S_SCRATCH_|S_ATOMIC_|S_BUFFER_ATOMIC_|SI_SPILL_)"
)


def latency(opcode: str, mcpu: str = DEFAULT_CPU) -> int:
    """Issue-to-use latency of an opcode (cycles) on ``mcpu`` (a key of `LATENCY_BY_CPU`),
    from the tables in the module docstring."""
    return latency_table(mcpu)[latency_class(opcode)]


def latency_table(mcpu: str) -> dict[str, int]:
    """The class latencies of ``mcpu``; `InputError` naming the known targets if it has none."""
    table = LATENCY_BY_CPU.get(mcpu)
    if table is None:
        raise InputError(
            f"no latency table for target {mcpu!r} (known: {', '.join(LATENCY_BY_CPU)})"
        )
    return table


def latency_class(opcode: str) -> str:
    """The class name of an opcode (a key of `LATENCY`)."""
    if _VMEM.match(opcode):
        return "vmem"
    if _SMEM.match(opcode):
        return "smem"
    if _LDS.match(opcode):
        return "lds" if not _LDS_NOT_MEMORY.match(opcode) else "alu"
    if opcode.startswith("EXP"):
        return "export"
    double = opcode.startswith("V_") and "F64" in opcode
    if _DIV.match(opcode):
        return "f64_div" if double else "div"
    if _CVT.match(opcode):
        return "f64_cvt" if double else "cvt"
    if double:
        return "f64"
    if _TRANS.match(opcode):
        return "trans"
    if _QUARTER.match(opcode):
        return "quarter"
    if _B64.match(opcode):
        return "b64"
    if opcode.startswith("S_"):
        return "salu"
    return "alu"


def is_boundary_opcode(opcode: str) -> bool:
    """True for opcodes LLVM never schedules across (the region ends before them)."""
    return bool(_BOUNDARY.match(opcode))


def is_memory_opcode(opcode: str) -> bool:
    """True for opcodes that access memory (loads, stores, atomics; not DS swizzles)."""
    return bool(_MEMORY.match(opcode)) and not _LDS_NOT_MEMORY.match(opcode)


def has_side_effects(opcode: str) -> bool:
    """True unless the opcode is known to have no effect beyond its operands and memory.

    Unknown opcodes count as having side effects (ordered against every memory access and every
    other side-effect instruction), which is never looser than LLVM.
    """
    if is_memory_opcode(opcode):
        return False
    return not _PURE.match(opcode)
