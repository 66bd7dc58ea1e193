"""PTX to kernel instruction strings for the warp makespan model (L, C, S, D per instruction).

Classification table (first matching rule wins; the opcode is the first word of an
instruction after its ``@%p`` guard, split on ``.`` into a base and modifiers):

====  ==========================================================================================
L     memory: ld, ldu, st, atom, red, prefetch, prefetchu, cp (cp.async), ldmatrix, stmatrix,
      tex, tld4, txq, suld, sust, sured, suq, membar, fence, discard, applypriority
D     double precision: a ``.f64`` arithmetic, comparison or conversion (add, sub, mul, fma,
      mad, div, rcp, sqrt, rsqrt, abs, neg, min, max, setp, set, cvt, testp, copysign, ex2, lg2,
      sin, cos)
S     special function unit: sin, cos, ex2, lg2, rsqrt, sqrt, rcp, tanh (any rounding: the
      ``.rn`` forms also run through the SFU)
C     everything else: integer and single-precision ALU, moves, setp, selp, cvt without f64,
      cvta, branches (bra, ret, exit, call), barriers (bar, barrier), shuffles, votes
====  ==========================================================================================

A basic block starts at the function entry, at a label (``LBB1_2:``) and after a branch
(``bra``, ``brx``, ``ret``, ``exit``); blocks are named by their label, else by LLVM's
``// %bb.N:`` comment, else by their index.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from jaxsched.errors import InputError
from jaxsched.files import read_text

__all__ = ["PtxBlock", "PtxError", "PtxFunction", "classify", "kernel_string", "read_ptx"]

_MEMORY = frozenset(
    {
        "ld",
        "ldu",
        "st",
        "atom",
        "red",
        "prefetch",
        "prefetchu",
        "cp",
        "ldmatrix",
        "stmatrix",
        "tex",
        "tld4",
        "txq",
        "suld",
        "sust",
        "sured",
        "suq",
        "membar",
        "fence",
        "discard",
        "applypriority",
    }
)
_DOUBLE_OPS = frozenset(
    {
        "add",
        "sub",
        "mul",
        "fma",
        "mad",
        "div",
        "rcp",
        "sqrt",
        "rsqrt",
        "abs",
        "neg",
        "min",
        "max",
        "setp",
        "set",
        "cvt",
        "testp",
        "copysign",
        "ex2",
        "lg2",
        "sin",
        "cos",
    }
)
_SPECIAL = frozenset({"sin", "cos", "ex2", "lg2", "rsqrt", "sqrt", "rcp", "tanh"})
_BRANCH = frozenset({"bra", "brx", "ret", "exit"})


class PtxError(InputError):
    """Malformed PTX or an impossible request; the message names the function and line."""


@dataclass
class PtxBlock:
    """A basic block: name and its instructions (text, 1-based line number)."""

    name: str
    instructions: list[tuple[str, int]] = field(default_factory=list)


@dataclass
class PtxFunction:
    """A PTX function (``.entry`` or ``.func``) and its basic blocks in layout order."""

    name: str
    kind: str
    line: int
    blocks: list[PtxBlock]

    def block(self, name: str) -> PtxBlock:
        for b in self.blocks:
            if b.name == name:
                return b
        raise PtxError(
            f"function {self.name!r}: no basic block {name!r} "
            f"(blocks: {', '.join(b.name for b in self.blocks)})"
        )


def opcode_of(instruction: str) -> str:
    """The opcode (``ld.global.f32``) of an instruction text, without its predicate guard."""
    s = instruction.strip()
    if s.startswith("@"):
        parts = s.split(None, 1)
        s = parts[1] if len(parts) > 1 else ""
    return s.split(None, 1)[0] if s else ""


def classify(instruction: str) -> str:
    """``L``, ``C``, ``S`` or ``D`` for one PTX instruction (see the module table)."""
    op = opcode_of(instruction)
    if not op:
        raise PtxError(f"empty instruction {instruction!r}")
    base, *mods = op.split(".")
    if base in _MEMORY:
        return "L"
    if base in _DOUBLE_OPS and "f64" in mods:
        return "D"
    if base in _SPECIAL:
        return "S"
    return "C"


def read_ptx(text: str, source: str = "<ptx>") -> list[PtxFunction]:
    """Functions with a body in PTX ``text`` (declarations without a body are skipped)."""
    lines = text.splitlines()
    funcs: list[PtxFunction] = []
    i = 0
    head = re.compile(r"^\s*(?:\.visible\s+|\.extern\s+|\.weak\s+)*\.(entry|func)\b(.*)$")
    while i < len(lines):
        m = head.match(_strip_comment(lines[i]))
        if not m:
            i += 1
            continue
        kind, start = m.group(1), i
        sig = m.group(2)
        j = i
        while "{" not in _strip_comment(lines[j]) and ";" not in _strip_comment(lines[j]):
            j += 1
            if j >= len(lines):
                raise PtxError(f"{source}:{start + 1}: function header never finished")
            sig += " " + _strip_comment(lines[j])
        if "{" not in _strip_comment(lines[j]):
            i = j + 1  # a declaration (prototype)
            continue
        name = _function_name(sig, f"{source}:{start + 1}")
        blocks, i = _parse_body(lines, j, name, source)
        funcs.append(PtxFunction(name=name, kind=kind, line=start + 1, blocks=blocks))
    return funcs


def _strip_comment(line: str) -> str:
    return re.sub(r"//.*$", "", line)


def _function_name(sig: str, where: str) -> str:
    s = sig.strip()
    if s.startswith("("):  # return parameter list
        depth = 0
        for k, c in enumerate(s):
            depth += c == "("
            depth -= c == ")"
            if depth == 0:
                s = s[k + 1 :].strip()
                break
    m = re.match(r"([A-Za-z_$%][\w$%]*)", s)
    if not m:
        raise PtxError(f"{where}: cannot find the function name in {sig.strip()!r}")
    return m.group(1)


def _parse_body(lines: list[str], j: int, fname: str, source: str) -> tuple[list[PtxBlock], int]:
    """Parse from the line holding the opening ``{``; returns blocks and the next line index."""
    depth = 0
    blocks: list[PtxBlock] = [PtxBlock("0")]
    pending = ""
    pending_line = 0
    bb_comment = ""
    started = False
    i = j
    while i < len(lines):
        raw = lines[i]
        cm = re.search(r"//\s*(%bb\.\d+):", raw)
        if cm:
            bb_comment = cm.group(1)
        line = _strip_comment(raw)
        if not started:
            line = line[line.index("{") + 1 :]
            depth = 1
            started = True
        k = 0
        while k < len(line):
            c = line[k]
            if c == "{" and not pending.strip():
                depth += 1
                k += 1
                continue
            if c == "}" and not pending.strip():
                depth -= 1
                k += 1
                if depth == 0:
                    return [b for b in blocks if b.instructions], i + 1
                continue
            if c == ";":
                _add_instruction(blocks, pending.strip(), pending_line, bb_comment)
                bb_comment = ""
                pending = ""
                k += 1
                continue
            if not pending.strip():
                pending_line = i + 1
                lm = re.match(r"\s*([\w$.]+):", line[k:])
                if lm and not line[k:].lstrip().startswith("."):
                    _new_block(blocks, lm.group(1))
                    k += lm.end()
                    continue
            pending += c
            k += 1
        pending += " "
        i += 1
    raise PtxError(f"{source}: function {fname!r} body is not closed (truncated PTX?)")


def _new_block(blocks: list[PtxBlock], name: str) -> None:
    if blocks[-1].instructions:
        blocks.append(PtxBlock(name))
    else:
        blocks[-1].name = name


def _add_instruction(blocks: list[PtxBlock], text: str, line: int, bb_comment: str) -> None:
    if not text or text.startswith("."):
        return  # directives: .reg, .local, .shared, .pragma, .loc ...
    if bb_comment and blocks[-1].instructions:
        blocks.append(PtxBlock(bb_comment))
    elif bb_comment and blocks[-1].name.isdigit():
        blocks[-1].name = bb_comment
    blocks[-1].instructions.append((" ".join(text.split()), line))
    base = opcode_of(text).split(".")[0]
    if base in _BRANCH:
        blocks.append(PtxBlock(str(len(blocks))))


#: Largest PTX file read (bytes).
MAX_PTX_BYTES = 1 << 30


def _read_text(path_or_text: str | os.PathLike) -> tuple[str, str]:
    """(text, name for messages) of a path or of PTX text (a string with a newline or ``{``)."""
    if not isinstance(path_or_text, os.PathLike):
        s = str(path_or_text)
        if "\n" in s or "{" in s:
            return s, "<ptx>"
    return read_text(path_or_text, PtxError, MAX_PTX_BYTES), str(path_or_text)


def kernel_string(
    path_or_text: str | os.PathLike,
    function: str | None = None,
    *,
    path: str | Sequence[str] | None = None,
) -> str:
    """The kernel instruction string (one of ``LCSD`` per instruction) of a PTX function.

    Args:
      path_or_text: a PTX file path or PTX text.
      function: the function name; may be omitted when the PTX holds exactly one function.
      path: basic blocks to take, in order (names as in the module docstring; a string may
        list several separated by commas), e.g. a loop body ``"LBB1_2"``. Without it the
        function must be straight-line (a single basic block).
    Returns:
      e.g. ``"LLCCSSSDDDCCL C"`` without spaces: one letter per instruction, in program order.
    """
    text, source = _read_text(path_or_text)
    funcs = read_ptx(text, source)
    if not funcs:
        raise PtxError(f"{source}: no function with a body")
    if function is None:
        if len(funcs) != 1:
            raise PtxError(
                f"{source}: several functions ({', '.join(f.name for f in funcs)}); choose one"
            )
        fn = funcs[0]
    else:
        match = [f for f in funcs if f.name == function]
        if not match:
            raise PtxError(
                f"{source}: no function {function!r} "
                f"(functions: {', '.join(f.name for f in funcs)})"
            )
        fn = match[0]
    if path is None:
        if len(fn.blocks) != 1:
            raise PtxError(
                f"{source}: function {fn.name!r} is not straight-line ({len(fn.blocks)} basic "
                f"blocks: {', '.join(b.name for b in fn.blocks)}); choose blocks with path="
            )
        blocks = fn.blocks
    else:
        names = [x.strip() for x in path.split(",")] if isinstance(path, str) else list(path)
        blocks = [fn.block(n) for n in names]
    return "".join(classify(t) for b in blocks for t, _ in b.instructions)
