"""A line-level reader for LLVM Machine IR (MIR) text, as ``llc -stop-before=...`` prints.

The reader knows the document structure (a YAML stream: an optional ``--- |`` LLVM IR document,
then one ``---`` ... ``...`` document per machine function whose ``body: |`` holds the blocks;
as in YAML, a document at the start of the stream or after ``...`` may omit its ``---``) and
places every line of the file: a truncated document, a stray line, a block or key defined
twice, a reference to a missing block or an instruction it cannot parse raises `MirError`
naming the file and 1-based line; nothing is skipped silently. It is tolerant where LLVM
versions differ: unknown function keys, instruction flags and operand kinds are carried through.

Only what scheduling needs is parsed: functions (``name:``, ``registers:``, ``body: |``), basic
blocks (``bb.N``, ``successors:``), and per instruction its register operands (virtual ``%N`` /
physical ``$name``, sub-register index, flags), opcode and memory operands (after ``::``);
spaces and tabs between tokens are free, as in LLVM's lexer. A bundle (an instruction followed
by ``{``, its members, ``}``) is one instruction to the scheduler. The original text is kept
line by line (with line endings) so a writer can reorder instruction lines and leave every
other byte unchanged.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import NamedTuple

from jaxsched.errors import InputError
from jaxsched.files import read_text
from jaxsched.problem.region import brief


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
    """One machine instruction, or one bundle taken as a whole.

    Attributes:
      line: 0-based index into `MirModule.lines` (a bundle: the line of its header).
      text: the instruction text (stripped of indentation, line ending and a ``;`` comment); a
        bundle: the instructions and braces of its first line, joined by spaces.
      opcode: e.g. ``V_ADD_F32_e32`` (a bundle: its header's, e.g. ``BUNDLE``).
      regs: register operands in textual order (a bundle: `bundle_operands` of its parts).
      mem: memory operands (a bundle: those of all its parts).
      bundle_end: for a bundle, the line index of its last closing ``}``; else -1.
      parts: for a bundle, its header and members (and any instruction after ``}`` on the
        closing line), each parsed on its own; else empty.
      slots: for a bundle, per operand of ``regs``: (index into ``parts``, index into that
        part's ``regs``); else empty.
    """

    line: int
    text: str
    opcode: str
    regs: tuple[RegOperand, ...]
    mem: tuple[MemOperand, ...]
    bundle_end: int = -1
    parts: tuple[MirInstr, ...] = ()
    slots: tuple[tuple[int, int], ...] = ()

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
class ParsedMir:
    """A MIR file parsed to functions and blocks; ``lines`` joined give the input back byte for
    byte. (`jaxsched.io.mir_regions.MirModule` adds the scheduling regions.)"""

    source: str
    lines: list[str]
    functions: list[MirFunction]

    @property
    def text(self) -> str:
        return "".join(self.lines)


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
#: Instruction flags before the opcode are lowercase words (``nnan``, ``frame-setup``,
#: ``nofpexcept``...); opcodes start with a capital or an underscore (``V_ADD_F32_e32``).
_FLAG_WORD = re.compile(r"^[a-z][a-z0-9-]*$")
_OPCODE = re.compile(r"^[A-Z_][A-Za-z0-9_]*$")
#: A register name at the start of a word (what an operand that names a register contains).
_REG_WORD = re.compile(r"(?:^|\s)(?:" + _VREG + "|" + _PREG + ")")
_BLOCK = re.compile(r"^bb\.(?P<num>\d+)(?:\.(?P<name>[^\s:(]+))?\s*(?:\([^)]*\))?\s*:\s*$")
_REGISTER_ENTRY = re.compile(r"id:\s*(?P<id>[^,\s}]+)\s*,\s*class:\s*(?P<cls>[A-Za-z0-9_]+)")
_SIZE = re.compile(r"^\((?:s(?P<s>\d+)|<(?P<n>\d+)\s*x\s*s(?P<e>\d+)>|[^)]*)\)$")
_ORDERINGS = ("monotonic", "acquire", "release", "acq_rel", "seq_cst")


_BRACKET_OR_QUOTE = re.compile(r'[()\[\]{}<>"\\]')


def top_level_spans(s: str) -> list[tuple[int, int]]:
    """The maximal runs ``[start, end)`` of characters of ``s`` outside (), [], {}, <> and
    double quotes (bracket and quote characters themselves excluded; a backslash in quotes
    escapes the next character). Jumps from one bracket or quote character to the next."""
    spans: list[tuple[int, int]] = []
    depth, quote, start, skip = 0, False, 0, -1
    for m in _BRACKET_OR_QUOTE.finditer(s):
        i, c = m.start(), m.group()
        if quote:
            if i == skip:
                continue
            if c == "\\":
                skip = i + 1
            elif c == '"':
                quote, start = False, i + 1
            continue
        if c == "\\":
            continue
        if depth == 0 and start < i:
            spans.append((start, i))
        if c == '"':
            quote = True
        elif c in "([{<":
            depth += 1
        else:
            depth = max(0, depth - 1)
        start = i + 1 if depth == 0 else len(s)
    if not quote and depth == 0 and start < len(s):
        spans.append((start, len(s)))
    return spans


def top_level_indices(s: str):
    """Indices of the characters of ``s`` outside (), [], {}, <> and double quotes (bracket and
    quote characters themselves excluded)."""
    for start, end in top_level_spans(s):
        yield from range(start, end)


def split_top(s: str, sep: str = ",") -> list[str]:
    """Split ``s`` on ``sep`` (one character) outside (), [], {}, <> and double quotes; pieces
    are stripped."""
    out: list[str] = []
    start = 0
    for lo, hi in top_level_spans(s):
        i = s.find(sep, lo, hi)
        while i != -1:
            out.append(s[start:i].strip())
            start = i + 1
            i = s.find(sep, i + 1, hi)
    tail = s[start:].strip()
    if tail or out:
        out.append(tail)
    return out


def find_top_level(s: str, token: str) -> int:
    """Index of the first ``token`` in ``s`` outside brackets and quotes, or -1 (the token starts
    at a top-level character)."""
    for lo, hi in top_level_spans(s):
        i = s.find(token, lo)
        if i != -1 and i < hi:
            return i
    return -1


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
        name=name,
        subreg=m.group("sub") or "",
        is_def=is_def,
        implicit=implicit,
        flags=frozenset(flags),
        reg_class=m.group("cls") or "",
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
    """Parse one instruction (stripped text, no comment; spaces and tabs between tokens are
    free, ``=`` and ``::`` need none); `MirError` on syntax it cannot follow: no opcode, a
    definition or memory operand it cannot read, an empty operand, or an operand that names a
    register but is not a register operand (e.g. a missing comma)."""
    here = f"{where}:{line + 1}"
    body = text
    mem_text = ""
    k = find_top_level(body, "::")
    if k >= 0:
        body, mem_text = body[:k], body[k + 2 :]
    defs_text = ""
    k = find_top_level(body, "=")
    if k >= 0:
        defs_text, body = body[:k], body[k + 1 :]
    words = body.split(None, 1)
    while words and _FLAG_WORD.match(words[0]):
        words = words[1].split(None, 1) if len(words) > 1 else []
    if not words or not _OPCODE.match(words[0]):
        raise MirError(f"{here}: cannot parse instruction {brief(text)} (no opcode)")
    opcode = words[0]
    regs: list[RegOperand] = []
    for piece in split_top(defs_text):
        op = parse_reg_operand(piece, in_defs=True)
        if op is None:
            raise MirError(f"{here}: cannot parse definition {brief(piece)} in {brief(text)}")
        regs.append(op)
    for piece in split_top(words[1] if len(words) > 1 else ""):
        op = parse_reg_operand(piece, in_defs=False)
        if op is not None:
            regs.append(op)
        elif not piece or (_REG_OPERAND.match(piece) is None and _names_register(piece)):
            raise MirError(f"{here}: cannot parse operand {brief(piece)} in {brief(text)}")
    mem: list[MemOperand] = []
    for piece in split_top(mem_text):
        if not (piece.startswith("(") and piece.endswith(")")):
            raise MirError(f"{here}: cannot parse memory operand {brief(piece)}")
        mem.append(parse_mem_operand(piece[1:-1]))
    return MirInstr(line=line, text=text, opcode=opcode, regs=tuple(regs), mem=tuple(mem))


def _names_register(piece: str) -> bool:
    """Whether ``piece`` names a register outside brackets and quoted strings."""
    keep = set(top_level_indices(piece))
    top = "".join(c if i in keep else " " for i, c in enumerate(piece))
    return _REG_WORD.search(top) is not None


# ---------------------------------------------------------------------- document structure
#: Largest MIR file read (bytes).
MAX_MIR_BYTES = 1 << 30

_KEY = re.compile(r"^(?P<key>[A-Za-z_][A-Za-z0-9_-]*):(?:[ \t]+(?P<value>.*))?$")
_BLOCK_SCALAR = re.compile(r"^[|>][-+]?[1-9]?[-+]?\s*(?:#.*)?$")
_DEFINE = re.compile(r"^\s+define\b[^@]*@(?P<name>\"(?:[^\"\\]|\\.)*\"|[-\w$.]+)")
_BB_REF = re.compile(r"%bb\.(\d+)")


def split_lines(text: str) -> list[str]:
    """``text`` cut after each ``\\n`` (the only line break of YAML and LLVM's reader; other
    Unicode line separators stay inside their line). Joined, the pieces give ``text``."""
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def read_mir_text(source: str | os.PathLike, text: str | None = None) -> ParsedMir:
    """Parse MIR from a path, or from ``text`` (``source`` then only names it in errors).

    The file is a YAML stream as ``llc`` writes it: an optional embedded LLVM IR document
    (``--- |`` ... ``...``) and one document per machine function. Anything the reader cannot
    place (a stray line, a truncated document, an unparsable instruction) raises `MirError`
    naming the file and line; nothing is skipped silently.
    """
    where = str(source)
    if text is None:
        text = read_text(source, MirError, MAX_MIR_BYTES)
    lines = split_lines(text)
    pending: list[_FunctionDoc] = []
    defined: dict[str, int] = {}  # IR functions with a body -> line index of their define
    i, n = 0, len(lines)
    last: tuple[str, int, bool] | None = None  # (kind, first line, ended with '...')
    while i < n:
        raw = lines[i].rstrip("\r\n")
        if not raw.strip() or raw.startswith(("#", "%")):  # blank, comment, YAML directive
            i += 1
            continue
        rest, start = _document_head(raw, i, where, last is None)
        if _BLOCK_SCALAR.match(rest):
            j, ended = _ir_document(lines, start, where, defined)
            last = ("the embedded LLVM IR", i, ended)
        else:
            j, ended, doc = _function_document(lines, start, i, where)
            pending += [doc] if doc else []
            last = (f"function {doc.name!r}" if doc else "an empty document", i, ended)
        i = j
    if last is None:
        raise MirError(f"{where}:1: not MIR (no '---' document)")
    if not last[2]:
        raise MirError(
            f"{where}:{n}: truncated MIR: {last[0]} (document from line {last[1] + 1}) "
            "does not end with '...'"
        )
    functions = [
        MirFunction(
            name=d.name,
            reg_classes=d.classes,
            blocks=_parse_body(lines, *d.body, where, d.name),
            name_line=d.name_line,
        )
        for d in pending
    ]
    _check_every_define_has_a_function(defined, functions, where)
    return ParsedMir(where, lines, functions)


def _document_head(raw: str, i: int, where: str, first: bool) -> tuple[str, int]:
    """How the document starting at line ``i`` (``raw``) opens: (``"|"`` or the like for the
    embedded IR, ``""`` for a function document; the index of its first content line). YAML
    lets a document without ``---`` start the stream (``first``) or follow ``...``, as llc
    reads it: a ``key: value`` line then starts a function document, a block scalar indicator
    (``|``) the IR."""
    if _is_doc_start(raw):
        rest = raw[3:].strip()
        rest = "" if rest.startswith("#") else rest
        if rest and not _BLOCK_SCALAR.match(rest):
            raise MirError(f"{where}:{i + 1}: unexpected text after '---': {brief(rest)}")
        return rest, i + 1
    if _BLOCK_SCALAR.match(raw):
        return raw.strip(), i + 1
    if _KEY.match(raw):
        return "", i
    if first:
        raise MirError(
            f"{where}:{i + 1}: not MIR: expected '---' or 'key: value', got {brief(raw)}"
        )
    raise MirError(
        f"{where}:{i + 1}: unexpected line {brief(raw)} after the end of a document "
        "(expected '---')"
    )


def _is_doc_start(raw: str) -> bool:
    return raw.startswith("---") and (len(raw) == 3 or raw[3] in " \t")


def _is_doc_end(raw: str) -> bool:
    return raw.startswith("...") and not raw[3:].strip()


def _ir_document(lines: list[str], i: int, where: str, defined: dict[str, int]):
    """Read the embedded LLVM IR block (indented lines) from ``i``; returns (next index, whether
    it ended with ``...``). Records the functions it defines."""
    while i < len(lines):
        raw = lines[i].rstrip("\r\n")
        if _is_doc_end(raw):
            return i + 1, True
        if _is_doc_start(raw):
            return i, False
        if raw.strip() and not raw.startswith(" "):
            raise MirError(
                f"{where}:{i + 1}: line {brief(raw)} inside the embedded LLVM IR is not "
                "indented (a truncated or damaged IR document)"
            )
        m = _DEFINE.match(raw)
        if m:
            defined.setdefault(_unquote(m.group("name")), i)
        i += 1
    return i, False


def _check_every_define_has_a_function(
    defined: dict[str, int], functions: list[MirFunction], where: str
) -> None:
    """LLVM needs a machine function for every IR function with a body (else: truncated)."""
    have = {f.name for f in functions}
    for name, line in defined.items():
        if name not in have:
            raise MirError(
                f"{where}:{line + 1}: function {name!r} is defined in the IR but has no machine "
                "function document (truncated MIR?)"
            )


def _unquote(s: str) -> str:
    s = s.strip()
    if len(s) >= 2 and s[0] == s[-1] and s[0] in "'\"":
        return s[1:-1]
    return s


class _FunctionDoc(NamedTuple):
    """A function document whose body is not parsed yet."""

    name: str
    name_line: int
    classes: dict[str, str]
    body: tuple[int, int]  # line range [start, end) of the body block scalar


def _function_document(
    lines: list[str], i: int, head: int, where: str
) -> tuple[int, bool, _FunctionDoc | None]:
    """Read one function document from ``i`` (its first line after any ``---``, which is at
    ``head``); returns (next index, whether it ended with ``...``, the document, or None for
    an empty one). Top-level lines are ``key: value`` (each key once); indented lines belong
    to the key above them; ``body: |`` holds the blocks."""
    keys: dict[str, int] = {}
    name, classes, body = "", {}, None
    ended = False
    while i < len(lines):
        raw = lines[i].rstrip("\r\n")
        if _is_doc_end(raw):
            ended = True
            i += 1
            break
        if _is_doc_start(raw):
            break
        if not raw.strip() or raw.startswith("#"):
            i += 1
            continue
        if raw.startswith(" "):
            if not keys:
                raise MirError(f"{where}:{i + 1}: indented line {brief(raw)} before any key")
            i += 1  # part of the value of the key above (nested mapping or list)
            continue
        m = _KEY.match(raw)
        if m is None:
            raise MirError(
                f"{where}:{i + 1}: unexpected line {brief(raw)} in a function document "
                "(expected 'key: value', '...' or '---')"
            )
        key, value = m.group("key"), (m.group("value") or "").strip()
        if key in keys:
            raise MirError(f"{where}:{i + 1}: key {key!r} repeated (first at line {keys[key] + 1})")
        keys[key] = i
        i += 1
        if key == "name":
            name = _unquote(value)
        elif key == "registers":
            i, classes = _register_classes(lines, i)
        elif key == "body":
            if not _BLOCK_SCALAR.match(value):
                raise MirError(f"{where}:{i}: 'body:' must be a block scalar ('body: |')")
            body = (i, _block_scalar_end(lines, i, where))
            i = body[1]
    if not keys:
        return i, ended, None  # an empty document: llc skips it
    if not name:
        at = keys.get("name", head) + 1
        raise MirError(f"{where}:{at}: function document without a 'name:'")
    if body is None:
        raise MirError(f"{where}:{keys['name'] + 1}: function {name!r} has no 'body:'")
    return i, ended, _FunctionDoc(name=name, name_line=keys["name"], classes=classes, body=body)


def _register_classes(lines: list[str], i: int) -> tuple[int, dict[str, str]]:
    """The ``registers:`` list from ``i``: virtual register -> class; returns (next, classes)."""
    entries: list[str] = []
    while i < len(lines) and (lines[i].startswith(" ") or not lines[i].strip()):
        s = lines[i].strip()
        if s.startswith("- ") or s == "-":
            entries.append(s[1:])
        elif entries:
            entries[-1] += " " + s
        i += 1
    classes: dict[str, str] = {}
    for e in entries:
        m = _REGISTER_ENTRY.search(e)
        if m:
            rid = _unquote(m.group("id"))
            classes[rid if rid.startswith("%") else f"%{rid}"] = m.group("cls")
    return i, classes


def _block_scalar_end(lines: list[str], i: int, where: str) -> int:
    """End (exclusive) of the indented block scalar starting at ``i``; a line indented less
    than its first line but not at column 0 is an error (YAML rejects it too)."""
    indent = 0
    while i < len(lines):
        raw = lines[i].rstrip("\r\n")
        if not raw.strip():
            i += 1
            continue
        k = len(raw) - len(raw.lstrip(" "))
        if k == 0:
            break
        if indent == 0:
            indent = k
        elif k < indent:
            raise MirError(
                f"{where}:{i + 1}: line {brief(raw)} is indented less than the body above it"
            )
        i += 1
    return i


def _parse_body(lines: list[str], i: int, end: int, where: str, fname: str) -> list[MirBlock]:
    """Parse the body lines ``[i, end)`` into blocks. Every non-blank line is a block header,
    ``successors:`` / ``liveins:`` (before the block's instructions), a comment or an
    instruction (a bundle: `_statement`); anything else raises `MirError`. Comments and debug
    instructions right after an instruction belong to it (`MirBlock.trailing`); blank lines,
    and comments after them, belong to no instruction."""
    here_fn = f"{where} (function {fname!r})"
    blocks: list[MirBlock] = []
    refs: list[tuple[int, int]] = []  # (line, block number) of each %bb.N reference
    block: MirBlock | None = None
    last_owner: list[int] | None = None  # trailing list of the last instruction
    while i < end:
        s = lines[i].strip()
        here = f"{here_fn}:{i + 1}"
        m = _BLOCK.match(s)
        if not s or m:
            if m:
                block = _new_block(m, i, blocks, here)
            last_owner = None  # blank lines stay where they are
            i += 1
            continue
        if s.startswith(";"):
            if block is not None and last_owner is not None:
                last_owner.append(i)
            i += 1
            continue
        if block is None:
            raise MirError(f"{here}: expected a basic block header 'bb.N:', got {brief(s)}")
        if s.startswith(("successors:", "liveins:")):
            if block.instrs:
                raise MirError(f"{here}: {s.split(':')[0]!r} after the block's instructions")
            if s.startswith("successors:"):
                block.successors = [int(x) for x in _BB_REF.findall(s)]
                refs += [(i, x) for x in block.successors]
            i += 1
            continue
        instr, j = _statement(lines, i, end, here_fn, refs)
        if instr.is_debug and block.instrs and not instr.parts:
            # Debug values travel with the instruction before them (as LLVM's scheduler does).
            block.trailing[-1].append(i)
        else:
            block.instrs.append(instr)
            block.trailing.append(list(range(i + 1, j)))
            last_owner = block.trailing[-1]
        i = j
    if not blocks:
        raise MirError(f"{here_fn}:{i}: the body has no basic block")
    _check_block_refs(blocks, refs, here_fn)
    return blocks


def _statement(
    lines: list[str], i: int, end: int, where: str, refs: list[tuple[int, int]]
) -> tuple[MirInstr, int]:
    """The instruction starting at line ``i`` and the index of the line after it. A ``{``
    after an instruction opens a bundle, up to the ``}`` that starts a later line (as llc
    reads it: ``{`` on the header's line, the first member may follow it there, another
    instruction may follow the ``}``); the bundle, with the lines inside it, is one
    instruction (`MirInstr.parts`). Records the ``%bb.N`` references in ``refs``."""
    parts: list[MirInstr] = []
    inside, close, opened = False, -1, 0
    j = i
    while True:
        here = f"{where}:{j + 1}"
        s = lines[j].strip()
        if j > i and _BLOCK.match(s):
            raise MirError(f"{here}: block header {brief(s)} inside the bundle of line {i + 1}")
        prev = ""
        for tok in _split_statements(s):
            refs += [(j, int(x)) for x in _BB_REF.findall(tok)]
            if tok == "{" and (inside or prev in ("", "{", "}")):
                raise MirError(f"{here}: '{{' must follow an instruction (bundles do not nest)")
            if tok == "}" and not inside:
                raise MirError(f"{here}: '}}' closes no bundle")
            if tok == "}" and prev:
                raise MirError(
                    f"{here}: '}}' must start its line (llc reads no '}}' after operands)"
                )
            if tok == "}" and len(parts) == opened:
                raise MirError(f"{here}: empty bundle (llc cannot read one)")
            if tok == "{":
                inside, opened = True, len(parts)
            elif tok == "}":
                inside, close = False, j
            else:
                parts.append(parse_instruction(tok, j, where))
            prev = tok
        j += 1
        if not inside:
            break
        if j >= end:
            raise MirError(f"{where}:{i + 1}: bundle opened here is never closed with '}}'")
    if close < 0:
        return parts[0], j
    regs, slots = bundle_operands(parts)
    unit = MirInstr(
        line=i,
        text=" ".join(_split_statements(lines[i].strip())),
        opcode=parts[0].opcode,
        regs=regs,
        mem=tuple(m for p in parts for m in p.mem),
        bundle_end=close,
        parts=tuple(parts),
        slots=slots,
    )
    return unit, j


def _split_statements(s: str) -> list[str]:
    """A body line (stripped) cut into its instruction texts and bundle braces (``{``, ``}``
    outside brackets and quotes; ``!{`` opens metadata), in order; a ``;`` comment outside
    brackets and quotes ends the line."""
    if not any(c in s for c in "{};"):
        return [s] if s else []
    out: list[str] = []
    start, depth, quote, i = 0, 0, False, 0
    while i < len(s):
        c = s[i]
        if quote:
            i += c == "\\"
            quote = c != '"'
        elif c == '"':
            quote = True
        elif c in "([<" or (c == "{" and s[i - 1 : i] == "!"):
            depth += 1
        elif c in ")]>" or (c == "}" and depth):
            depth = max(0, depth - 1)
        elif depth == 0 and c == ";":
            break
        elif depth == 0 and c in "{}":
            out += [t for t in (s[start:i].strip(), c) if t]
            start = i + 1
        i += 1
    tail = s[start:i].strip()
    return [*out, tail] if tail else out


def bundle_operands(
    parts: list[MirInstr],
) -> tuple[tuple[RegOperand, ...], tuple[tuple[int, int], ...]]:
    """The register operands of a bundle as one instruction, and where each comes from
    (`MirInstr.slots`): every operand of its parts but the reads of a value defined inside the
    bundle (flagged ``internal``, or a register, or that sub-register, an earlier part
    defines). A ``BUNDLE`` header's operands sum up its members (LLVM's ``finalizeBundle``):
    they are kept and define nothing inside."""
    regs: list[RegOperand] = []
    slots: list[tuple[int, int]] = []
    inside: set[tuple[str, str]] = set()
    for p, part in enumerate(parts):
        for k, op in enumerate(part.regs):
            if not op.is_def and (
                "internal" in op.flags or (op.name, op.subreg) in inside or (op.name, "") in inside
            ):
                continue
            regs.append(op)
            slots.append((p, k))
        if part.opcode != "BUNDLE":
            inside |= {(op.name, op.subreg) for op in part.regs if op.is_def}
    return tuple(regs), tuple(slots)


def _new_block(m: re.Match, i: int, blocks: list[MirBlock], here: str) -> MirBlock:
    number = int(m.group("num"))
    for b in blocks:
        if b.number == number:
            raise MirError(
                f"{here}: block bb.{number} defined twice (first at line {b.header_line + 1})"
            )
    blocks.append(
        MirBlock(number=number, name=m.group("name") or "", header_line=i, successors=None)
    )
    return blocks[-1]


def _check_block_refs(blocks: list[MirBlock], refs: list[tuple[int, int]], here: str) -> None:
    numbers = {b.number for b in blocks}
    for line, number in refs:
        if number not in numbers:
            raise MirError(f"{here}:{line + 1}: reference to undefined block %bb.{number}")
