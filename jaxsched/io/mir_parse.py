"""A tolerant line-level reader for LLVM Machine IR (MIR) text, as ``llc -stop-before=...`` prints.

Only what scheduling needs is parsed: functions (``name:``, ``registers:``, ``body: |``), basic
blocks (``bb.N``, ``successors:``), and per instruction its register operands (virtual ``%N`` /
physical ``$name``, sub-register index, flags), opcode and memory operands (after ``::``). The
original text is kept line by line (with line endings) so a writer can reorder instruction lines
and leave every other byte unchanged. Syntax the reader cannot follow raises `MirError` naming
the line number.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from jaxsched.errors import InputError


class MirError(InputError):
    """Malformed MIR; the message names the file and 1-based line number."""


@dataclass(frozen=True)
class RegOperand:
    """A register operand.

    Attributes:
      name: ``%12`` / ``%name`` (virtual) or ``$sgpr4_sgpr5`` (physical).
      subreg: sub-register index (``sub0_sub1``) or ``""``.
      is_def: a definition (explicit def before ``=``, ``implicit-def`` or ``def``).
      implicit: an ``implicit`` / ``implicit-def`` operand.
      flags: the other flags (``dead``, ``undef``, ``killed``, ``early-clobber``...).
      reg_class: the class annotation (``vreg_64``) or ``""``.
    """

    name: str
    subreg: str
    is_def: bool
    implicit: bool
    flags: frozenset[str]
    reg_class: str = ""

    @property
    def virtual(self) -> bool:
        return self.name.startswith("%")

    @property
    def dead(self) -> bool:
        return "dead" in self.flags

    @property
    def undef(self) -> bool:
        return "undef" in self.flags


@dataclass(frozen=True)
class MemOperand:
    """One ``(...)`` memory operand after ``::``.

    Attributes:
      load / store: access kind (an atomic read-modify-write has both).
      size: access size in bytes, or None when unknown.
      base: ``%ir.px`` / ``%stack.0`` / ``%fixed-stack.1`` / ``constant-pool`` ... or ``""``.
      offset: byte offset added to the base (``+ 4``).
      addrspace: address space (MIR omits 0, the flat address space).
      volatile, atomic, invariant, dereferenceable: the flags of that name (atomic: an ordering
        other than ``unordered``).
    """

    load: bool
    store: bool
    size: int | None
    base: str
    offset: int
    addrspace: int
    volatile: bool
    atomic: bool
    invariant: bool
    dereferenceable: bool


@dataclass(frozen=True)
class MirInstr:
    """One machine instruction line.

    Attributes:
      line: 0-based index into `MirModule.lines`.
      text: the instruction text (the line stripped of indentation and line ending).
      opcode: e.g. ``V_ADD_F32_e32``.
      regs: register operands in textual order.
      mem: memory operands.
      bundle_end: for a ``BUNDLE ... {`` header, the line index of the closing ``}``; else -1.
    """

    line: int
    text: str
    opcode: str
    regs: tuple[RegOperand, ...]
    mem: tuple[MemOperand, ...]
    bundle_end: int = -1

    @property
    def is_debug(self) -> bool:
        return self.opcode.startswith("DBG_") or self.opcode == "PSEUDO_PROBE"


@dataclass
class MirBlock:
    """A basic block: header line, successors (block numbers) and instructions (with debug)."""

    number: int
    name: str
    header_line: int
    successors: list[int] | None
    instrs: list[MirInstr] = field(default_factory=list)
    #: per instruction, the line indices after it that belong to it (debug values, comments).
    trailing: list[list[int]] = field(default_factory=list)


@dataclass
class MirFunction:
    """A machine function: name, virtual register classes and blocks in layout order."""

    name: str
    reg_classes: dict[str, str]
    blocks: list[MirBlock]
    name_line: int


@dataclass
class MirModule:
    """A parsed MIR file; ``lines`` joined give the input back byte for byte."""

    source: str
    lines: list[str]
    functions: list[MirFunction]
    _regions: list | None = field(default=None, repr=False)

    @property
    def text(self) -> str:
        return "".join(self.lines)

    @property
    def regions(self) -> list:
        """The scheduling regions (`jaxsched.io.mir_regions.MirRegion`), built once."""
        if self._regions is None:
            from jaxsched.io.mir_regions import extract_regions

            self._regions = extract_regions(self)
        return self._regions


# ---------------------------------------------------------------------- lexical helpers
_VREG = r"%(?!(?:bb|ir|ir-block|stack|fixed-stack|const|jump-table|subreg)\.)[A-Za-z0-9_$-]+"
_PREG = r"\$[A-Za-z0-9_]+"
_REG_OPERAND = re.compile(
    r"^(?P<flags>(?:(?:implicit-def|implicit|def|dead|killed|undef|internal|early-clobber|"
    r"debug-use|renamable)\s+)*)"
    r"(?P<reg>" + _VREG + "|" + _PREG + r")"
    r"(?:\.(?P<sub>[A-Za-z0-9_]+))?"
    r"(?::(?P<cls>[A-Za-z0-9_]+))?"
    r"(?:\s*\((?P<paren>[^()]*)\))?\s*$"
)
_OPCODE_FLAGS = frozenset(
    {
        "frame-setup",
        "frame-destroy",
        "nnan",
        "ninf",
        "nsz",
        "arcp",
        "contract",
        "afn",
        "reassoc",
        "nuw",
        "nsw",
        "exact",
        "nofpexcept",
        "nomerge",
        "unpredictable",
        "noconvergent",
    }
)
_OPCODE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_BLOCK = re.compile(r"^bb\.(?P<num>\d+)(?:\.(?P<name>[^\s:(]+))?\s*(?:\([^)]*\))?\s*:\s*$")
_REGISTER_ENTRY = re.compile(r"id:\s*(?P<id>[^,\s}]+)\s*,\s*class:\s*(?P<cls>[A-Za-z0-9_]+)")
_SIZE = re.compile(r"^\((?:s(?P<s>\d+)|<(?P<n>\d+)\s*x\s*s(?P<e>\d+)>|[^)]*)\)$")
_ORDERINGS = ("monotonic", "acquire", "release", "acq_rel", "seq_cst")


def _top_level(s: str):
    """Indices of the characters of ``s`` outside (), [], {}, <> and double quotes (bracket and
    quote characters themselves excluded)."""
    depth = 0
    quote = False
    i = 0
    while i < len(s):
        c = s[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == '"':
                quote = False
        elif c == '"':
            quote = True
        elif c in "([{<":
            depth += 1
        elif c in ")]}>":
            depth = max(0, depth - 1)
        elif depth == 0:
            yield i
        i += 1


def split_top(s: str, sep: str = ",") -> list[str]:
    """Split ``s`` on ``sep`` outside (), [], {}, <> and double quotes; pieces are stripped."""
    out: list[str] = []
    start = 0
    for i in _top_level(s):
        if s[i] == sep:
            out.append(s[start:i].strip())
            start = i + 1
    tail = s[start:].strip()
    if tail or out:
        out.append(tail)
    return out


def _find_top(s: str, token: str) -> int:
    """Index of the first ``token`` in ``s`` outside brackets and quotes, or -1."""
    return next((i for i in _top_level(s) if s.startswith(token, i)), -1)


def parse_reg_operand(text: str, in_defs: bool) -> RegOperand | None:
    """A register operand, or None when ``text`` is not one (immediate, block, symbol...)."""
    m = _REG_OPERAND.match(text)
    if m is None:
        return None
    flags = set(m.group("flags").split())
    name = m.group("reg")
    if name == "$noreg":
        return None
    is_def = in_defs or "implicit-def" in flags or "def" in flags
    implicit = "implicit" in flags or "implicit-def" in flags
    flags -= {"implicit", "implicit-def", "def"}
    return RegOperand(
        name, m.group("sub") or "", is_def, implicit, frozenset(flags), m.group("cls") or ""
    )


def parse_mem_operand(text: str) -> MemOperand:
    """One memory operand, without its parentheses (tolerant: unknown words are ignored)."""
    parts = split_top(text)
    head = parts[0] if parts else ""
    addrspace = 0
    for p in parts[1:]:
        if p.startswith("addrspace"):
            try:
                addrspace = int(p.split()[1])
            except (IndexError, ValueError):
                addrspace = -1
    words = head.replace("(", " (").split()
    load = "load" in words
    store = "store" in words
    size: int | None = None
    base = ""
    offset = 0
    # Size: "(s32)", "(<2 x s32>)" (LLVM >= 13) or a byte count (older LLVM).
    size_m = re.search(r"(?:load|store)\s+(?:[a-z_]+\s+)*(\([^()]*\)|\d+|unknown-size)", head)
    if size_m:
        tok = size_m.group(1)
        if tok.isdigit():
            size = int(tok)
        elif tok.startswith("("):
            sm = _SIZE.match(tok)
            if sm and sm.group("s"):
                size = (int(sm.group("s")) + 7) // 8
            elif sm and sm.group("n"):
                size = (int(sm.group("n")) * int(sm.group("e")) + 7) // 8
    bm = re.search(r"\b(?:from|into|on)\s+(?P<base>\S+)(?:\s*(?P<sign>[+-])\s*(?P<off>\d+))?", head)
    if bm:
        base = bm.group("base")
        if bm.group("off"):
            offset = int(bm.group("off")) * (-1 if bm.group("sign") == "-" else 1)
    return MemOperand(
        load=load,
        store=store,
        size=size,
        base=base,
        offset=offset,
        addrspace=addrspace,
        volatile="volatile" in words,
        atomic=any(o in words for o in _ORDERINGS),
        invariant="invariant" in words,
        dereferenceable="dereferenceable" in words,
    )


def parse_instruction(text: str, line: int, where: str) -> MirInstr:
    """Parse one instruction line (stripped text); `MirError` on syntax it cannot follow."""
    body = text
    mem_text = ""
    k = _find_top(body, " :: ")
    if k >= 0:
        body, mem_text = body[:k], body[k + 4 :]
    defs_text = ""
    k = _find_top(body, " = ")
    if k >= 0:
        defs_text, body = body[:k], body[k + 3 :]
    words = body.split(None, 1)
    while words and words[0] in _OPCODE_FLAGS:
        words = words[1].split(None, 1) if len(words) > 1 else []
    if not words or not _OPCODE.match(words[0]):
        raise MirError(f"{where}:{line + 1}: cannot parse instruction {text!r} (no opcode)")
    opcode = words[0]
    rest = words[1] if len(words) > 1 else ""
    regs: list[RegOperand] = []
    if defs_text:
        for piece in split_top(defs_text):
            op = parse_reg_operand(piece, in_defs=True)
            if op is None:
                raise MirError(f"{where}:{line + 1}: cannot parse definition {piece!r} in {text!r}")
            regs.append(op)
    for piece in split_top(rest):
        op = parse_reg_operand(piece, in_defs=False)
        if op is not None:
            regs.append(op)
    mem: list[MemOperand] = []
    if mem_text:
        for piece in split_top(mem_text):
            if not (piece.startswith("(") and piece.endswith(")")):
                raise MirError(f"{where}:{line + 1}: cannot parse memory operand {piece!r}")
            mem.append(parse_mem_operand(piece[1:-1]))
    return MirInstr(line, text, opcode, tuple(regs), tuple(mem))


# ---------------------------------------------------------------------- document structure
def read_mir(source: str | os.PathLike, text: str | None = None) -> MirModule:
    """Parse MIR from a path, or from ``text`` (``source`` then only names it in errors)."""
    if text is None:
        path = Path(source)
        if not path.exists():
            raise FileNotFoundError(f"{path}: no such MIR file")
        text = path.read_text()
    where = str(source)
    lines = text.splitlines(keepends=True)
    functions: list[MirFunction] = []
    i = 0
    n = len(lines)
    doc_start = -1
    saw_document = False
    while i < n:
        raw = lines[i].rstrip("\r\n")
        if raw.startswith("---"):
            saw_document = True
            doc_start = i
            i += 1
            if raw.rstrip() in ("--- |", "---|") or raw.startswith("--- |"):
                i = _skip_ir_document(lines, i)
                continue
            i = _parse_function(lines, i, where, functions)
            continue
        i += 1
    if not saw_document:
        raise MirError(f"{where}:1: not MIR (no '---' document)")
    del doc_start
    return MirModule(where, lines, functions)


def _skip_ir_document(lines: list[str], i: int) -> int:
    """Skip an embedded LLVM IR document (``--- |`` ... ``...``)."""
    while i < len(lines):
        raw = lines[i].rstrip("\r\n")
        if raw == "..." or raw.startswith("---"):
            return i + 1 if raw == "..." else i
        i += 1
    return i


def _parse_function(lines: list[str], i: int, where: str, out: list[MirFunction]) -> int:
    """Parse one function document starting after its ``---`` line; returns the next index."""
    name = ""
    name_line = i
    classes: dict[str, str] = {}
    blocks: list[MirBlock] = []
    n = len(lines)
    while i < n:
        raw = lines[i].rstrip("\r\n")
        if raw == "..." or raw.startswith("---"):
            break
        if raw.startswith("name:"):
            name = raw.split(":", 1)[1].strip().strip("'\"")
            name_line = i
        elif raw.startswith("registers:"):
            i += 1
            while i < n and (lines[i].startswith(" ") or not lines[i].strip()):
                m = _REGISTER_ENTRY.search(lines[i])
                if m:
                    rid = m.group("id").strip("'\"")
                    classes[rid if rid.startswith("%") else f"%{rid}"] = m.group("cls")
                i += 1
            continue
        elif raw.startswith("body:"):
            i = _parse_body(lines, i + 1, where, name, blocks)
            break
        i += 1
    else:
        if not blocks:
            raise MirError(f"{where}:{n}: truncated MIR: function {name!r} has no 'body:'")
    if not name:
        raise MirError(f"{where}:{name_line + 1}: function document without 'name:'")
    while i < n:
        raw = lines[i].rstrip("\r\n")
        if raw == "...":
            i += 1
            break
        if raw.startswith("---"):
            break
        i += 1
    else:
        if lines and lines[-1].rstrip("\r\n") != "...":
            raise MirError(f"{where}:{n}: truncated MIR: function {name!r} does not end with '...'")
    out.append(MirFunction(name, classes, blocks, name_line))
    return i


def _parse_body(lines: list[str], i: int, where: str, fname: str, blocks: list[MirBlock]) -> int:
    """Parse the ``body: |`` block scalar; returns the index of the first line after it."""
    n = len(lines)
    block: MirBlock | None = None
    last_owner: list[int] | None = None  # trailing list of the last instruction
    while i < n:
        line = lines[i]
        raw = line.rstrip("\r\n")
        if raw and not raw[0].isspace():
            break  # the block scalar ended (e.g. '...')
        s = raw.strip()
        here = f"{where}:{i + 1}"
        if not s:
            last_owner = None  # blank lines stay where they are
            i += 1
            continue
        m = _BLOCK.match(s)
        if m:
            block = MirBlock(int(m.group("num")), m.group("name") or "", i, None)
            blocks.append(block)
            last_owner = None
            i += 1
            continue
        if block is None:
            if s.startswith(";"):
                i += 1
                continue
            raise MirError(f"{here}: expected a basic block header 'bb.N:', got {s!r}")
        if s.startswith(";"):
            if last_owner is not None:
                last_owner.append(i)
            i += 1
            continue
        if s.startswith("successors:") and not block.instrs:
            block.successors = [int(x) for x in re.findall(r"%bb\.(\d+)", s)]
            i += 1
            continue
        if s.startswith("liveins:") and not block.instrs:
            i += 1
            continue
        instr = parse_instruction(s, i, f"{where} (function {fname!r})")
        if s.endswith("{"):
            j = i + 1
            while j < n and lines[j].strip() != "}":
                if lines[j].strip() and not lines[j][0].isspace():
                    j = n
                    break
                j += 1
            if j >= n:
                raise MirError(f"{here}: bundle opened here is never closed with '}}'")
            instr = MirInstr(instr.line, instr.text, instr.opcode, instr.regs, instr.mem, j)
            block.instrs.append(instr)
            block.trailing.append(list(range(i + 1, j + 1)))
            last_owner = block.trailing[-1]
            i = j + 1
            continue
        if instr.is_debug and block.instrs:
            # Debug values travel with the instruction before them (as LLVM's scheduler does).
            block.trailing[-1].append(i)
            i += 1
            continue
        block.instrs.append(instr)
        block.trailing.append([])
        last_owner = block.trailing[-1]
        i += 1
    if not blocks:
        raise MirError(f"{where}:{i + 1}: function {fname!r} has an empty body")
    return i
