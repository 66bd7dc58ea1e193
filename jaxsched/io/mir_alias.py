"""Alias analysis of MIR memory operands from the embedded LLVM IR (a part of LLVM's BasicAA).

LLVM's machine scheduler orders two memory accesses only when ``MachineInstr::mayAlias`` says
they may alias; on AMDGPU (``amdgpu-use-aa-in-codegen``, on by default) that asks alias
analysis about the IR values of their memory operands (``%ir.127``, ``%ir.arrayidx``, ``@g``),
without TBAA or scoped-noalias metadata. This module reads just enough of the IR document of a
MIR file (``--- |``) to answer the part of that question that matters for kernels:

* per function, its arguments (``noalias``, ``byval``, address space) and the definitions of
  pointer values: ``getelementptr`` (its constant byte offset when every index is a constant
  into a simple type), ``bitcast``, ``addrspacecast``, ``alloca`` (entry block only),
  ``select`` and ``phi``, constant expressions of those, and the module's global variables;
  every other definition (calls, loads, ``inttoptr``...) is an unknown object;
* `underlying_object` follows GEPs and casts, at most `MAX_LOOKUP` steps
  (``llvm::getUnderlyingObject``), and the inputs of ``select``/``phi``: one object only
  when all of them lead to the same one;
* `IrFunction.may_alias`: two different underlying objects that are both identified
  (``alloca``, global variable, ``noalias``/``byval`` argument) do not alias; nor does an
  argument and a different identified function-local object (``alloca``,
  ``noalias``/``byval`` argument); two accesses at constant offsets from one base value
  (constant GEPs and bitcasts stripped, `IrFunction.base_offset`) alias only if their byte
  ranges overlap; anything else may alias.

Typed (``float addrspace(1)*``) and opaque (``ptr addrspace(1)``) pointers read alike.
Anything not understood is an unknown object, so "may alias": never an error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from jaxsched.io.mir_parse import MemOperand, find_top_level, split_top, top_level_indices

#: Steps of GEPs and casts followed to an underlying object (LLVM's ``MaxLookup``).
MAX_LOOKUP = 6
#: Values visited per lookup through selects and phis before giving up (unknown object).
_MAX_VISITS = 64
#: Constant offsets at least this large are not compared.
_MAX_OFFSET = 1 << 30

_NAME = r'(?:[-\w$.]+|"(?:[^"\\]|\\.)*")'
_DEFINE = re.compile(r"^\s*define\b[^@]*@(?P<name>" + _NAME + r")\s*\(")
_GLOBAL = re.compile(r"^\s*(?P<name>@" + _NAME + r")\s*=\s*(?P<rest>.*)$")
_ASSIGN = re.compile(r"^\s*(?P<name>%" + _NAME + r")\s*=\s*(?P<rest>.*)$")
_LABEL = re.compile(r"^\s*" + _NAME + r":")
_DOC_START = re.compile(r"^---\s+[|>]")
_ADDRSPACE = re.compile(r"addrspace\((\d+)\)")
_GEP_FLAG = re.compile(r"^(?:inbounds|nuw|nusw|inrange\([^)]*\))\s*")
_INT = re.compile(r"^-?\d+$")
_CONST_EXPRS = ("getelementptr", "bitcast", "addrspacecast")
_SCALAR_BYTES = {"half": 2, "bfloat": 2, "float": 4, "double": 8}
_OBJECTS = ("argument", "global", "alloca")


@dataclass(frozen=True)
class IrValue:
    """How a pointer value is defined (only what alias analysis needs).

    Attributes:
      op: ``argument``, ``global``, ``alloca``, ``gep``, ``bitcast``, ``addrspacecast``,
        ``select`` or ``phi`` (other definitions are not recorded: unknown objects).
      inputs: the pointer operands (gep and casts: the base; select and phi: the choices).
      noalias: an argument with ``noalias`` or ``byval``.
      addrspace: the address space of an argument, alloca or global (0 when not said).
      inbounds: a gep with ``inbounds``.
      offset: a gep's constant byte offset, or None when unknown.
    """

    op: str
    inputs: tuple[str, ...] = ()
    noalias: bool = False
    addrspace: int = 0
    inbounds: bool = False
    offset: int | None = None


@dataclass
class IrFunction:
    """The pointer definitions of one IR function; ``values`` maps ``%x`` (arguments
    included, constant expressions as ``ce:<text>``) and ``@g`` (module globals) to them."""

    name: str
    values: dict[str, IrValue]
    _objects: dict[str, str | None] = field(default_factory=dict, repr=False)

    def underlying_object(self, value: str) -> str | None:
        """See `underlying_object` (cached)."""
        if value not in self._objects:
            self._objects[value] = _walk(self.values, value)
        return self._objects[value]

    def base_offset(self, value: str) -> tuple[str, int]:
        """``value`` as a base value plus a constant byte offset: bitcasts and GEPs of known
        constant offset stripped, at most `MAX_LOOKUP` of them (``(value, 0)`` if none)."""
        offset = 0
        for _ in range(MAX_LOOKUP):
            v = self.values.get(value)
            if v is None or v.op not in ("gep", "bitcast") or (v.op == "gep" and v.offset is None):
                break
            offset += v.offset or 0
            value = v.inputs[0]
        return value, offset

    def may_alias(self, x: MemOperand, y: MemOperand) -> bool:
        """Whether two memory operands of this function may alias by the IR (see the module
        docstring); volatile and atomic operands always may."""
        nx, ny = _ir_name(x.base), _ir_name(y.base)
        if x.volatile or y.volatile or x.atomic or y.atomic or nx is None or ny is None:
            return True
        (bx, ox), (by, oy) = self.base_offset(nx), self.base_offset(ny)
        if bx == by:  # one base value: the byte ranges decide
            if x.size is None or y.size is None or max(abs(ox), abs(oy)) >= _MAX_OFFSET:
                return True  # (offsets that could wrap in a 32-bit address space: unknown)
            ax, ay = ox + x.offset, oy + y.offset
            return ax < ay + y.size and ay < ax + x.size
        objx, objy = self.underlying_object(nx), self.underlying_object(ny)
        if objx is None or objy is None or objx == objy:
            return True
        return not _distinct(self.values[objx], self.values[objy])


@dataclass
class IrModule:
    """The functions of a MIR file's embedded IR, by name (empty without IR)."""

    functions: dict[str, IrFunction]

    def function(self, name: str) -> IrFunction | None:
        return self.functions.get(name)


def underlying_object(function: IrFunction, value: str) -> str | None:
    """The underlying object of ``value`` (``%x`` or ``@g``) in ``function``: an argument,
    global or alloca, None if unknown. Like ``llvm::getUnderlyingObject`` (GEPs and casts,
    at most `MAX_LOOKUP` steps), and through selects and phis whose inputs all lead to the
    same object (pointer induction variables included)."""
    return function.underlying_object(value)


def _ir_name(base: str) -> str | None:
    """The IR value a memory operand's base names: ``%ir.x`` -> ``%x``, ``@g`` -> ``@g``."""
    if base.startswith("%ir."):
        return "%" + base[4:]
    return base if base.startswith("@") else None


def _identified(v: IrValue) -> bool:
    return v.op in ("alloca", "global") or (v.op == "argument" and v.noalias)


def _function_local(v: IrValue) -> bool:
    return v.op == "alloca" or (v.op == "argument" and v.noalias)


def _distinct(a: IrValue, b: IrValue) -> bool:
    """Whether two different underlying objects cannot overlap (BasicAA's rules)."""
    if _identified(a) and _identified(b):
        return True
    return (a.op == "argument" and _function_local(b)) or (
        b.op == "argument" and _function_local(a)
    )


def _walk(values: dict[str, IrValue], start: str) -> str | None:
    """The one object that GEPs, casts, selects and phis from ``start`` lead to, or None."""
    objects: set[str] = set()
    todo, seen = [(start, 0)], set()
    while todo:
        name, depth = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        v = values.get(name)
        if v is None or len(seen) > _MAX_VISITS:
            return None
        if v.op in _OBJECTS:
            objects.add(name)
            continue
        if depth >= MAX_LOOKUP or not v.inputs:
            return None
        step = 0 if v.op in ("select", "phi") else 1  # MAX_LOOKUP counts geps and casts
        todo += [(x, depth + step) for x in v.inputs]
    return objects.pop() if len(objects) == 1 else None


# ---------------------------------------------------------------------- reading the IR
def read_ir(lines: list[str]) -> IrModule:
    """The functions of the embedded IR document of MIR ``lines`` (the ``--- |`` block);
    an empty module when there is none. Never raises: what it cannot read is left out."""
    body = _ir_lines(lines)
    globals_: dict[str, IrValue] = {}
    starts: list[int] = []
    for k, line in enumerate(body):
        if _DEFINE.match(line):
            starts.append(k)
        elif (m := _GLOBAL.match(line)) and (g := _global(m.group("rest"))) is not None:
            globals_[m.group("name")] = g
    functions: dict[str, IrFunction] = {}
    for k in starts:
        try:
            fn = _function(body, k, globals_)
        except (ValueError, IndexError, KeyError, RecursionError):
            continue
        if fn is not None:
            functions.setdefault(fn.name, fn)
    return IrModule(functions)


def _ir_lines(lines: list[str]) -> list[str]:
    start = next((k for k, s in enumerate(lines) if _DOC_START.match(s)), None)
    if start is None:
        return []
    out = []
    for s in lines[start + 1 :]:
        if s.startswith(("...", "---")):
            break
        out.append(s.rstrip("\r\n"))
    return out


def _global(rest: str) -> IrValue | None:
    """A global variable from the text after ``@g =`` (aliases, ifuncs: None)."""
    words = rest.split()
    kind = next((w for w in words if w in ("global", "constant", "alias", "ifunc")), None)
    if kind not in ("global", "constant"):
        return None
    m = _ADDRSPACE.search(rest[: rest.find(kind)])
    return IrValue(op="global", addrspace=int(m.group(1)) if m else 0)


def _unquote(name: str) -> str:
    return name[1:-1] if len(name) >= 2 and name[0] == name[-1] == '"' else name


def _function(body: list[str], start: int, globals_: dict[str, IrValue]) -> IrFunction | None:
    """The function whose ``define`` is ``body[start]`` (None if its arguments cannot be
    read)."""
    line = body[start]
    m = _DEFINE.match(line)
    end = _closing(line, m.end() - 1)
    if end < 0:
        return None
    values = {**globals_, **_arguments(line[m.end() : end])}
    entry, started = True, False  # in the entry block; an instruction seen
    for text in body[start + 1 :]:
        stripped = text.strip()
        if stripped == "}":
            break
        if not stripped or stripped.startswith(";"):
            continue
        if _LABEL.match(text):
            entry = entry and not started
            continue
        started = True
        if a := _ASSIGN.match(text):
            v = _definition(_strip_comment(a.group("rest")), values, entry)
            if v is not None:
                values[a.group("name")] = v
    return IrFunction(name=_unquote(m.group("name")), values=values)


def _arguments(text: str) -> dict[str, IrValue]:
    """The arguments of a ``define`` (the text between its parentheses), by name (unnamed
    ones numbered as LLVM does)."""
    out: dict[str, IrValue] = {}
    slot = 0
    for arg in split_top(text):
        words = _top_words(arg)
        if not words or words[0] == "...":
            continue
        if words[-1].startswith("%"):
            name = words[-1]
        else:
            name, slot = f"%{slot}", slot + 1
        noalias = "noalias" in words or any(w == "byval" or w.startswith("byval(") for w in words)
        space = _ADDRSPACE.search(" ".join(words[:2]))
        out[name] = IrValue(
            op="argument", noalias=noalias, addrspace=int(space.group(1)) if space else 0
        )
    return out


def _closing(text: str, start: int) -> int:
    """Index of the ``)`` matching the ``(`` at ``start`` (quote-aware), or -1."""
    depth, quote = 0, False
    for i in range(start, len(text)):
        c = text[i]
        if quote:
            quote = c != '"'
        elif c == '"':
            quote = True
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i
    return -1


def _strip_comment(text: str) -> str:
    k = find_top_level(text, ";")
    return text if k < 0 else text[:k]


def _top_words(text: str) -> list[str]:
    """Words of ``text`` split at whitespace outside brackets and quotes."""
    cuts = [i for i in top_level_indices(text) if text[i].isspace()]
    words, start = [], 0
    for i in [*cuts, len(text)]:
        if i > start:
            words.append(text[start:i])
        start = i + 1
    return words


def _operands(text: str) -> list[str]:
    """Comma-separated operands, metadata attachments (``!tbaa !3``) left out."""
    return [p for p in split_top(text) if p and not p.startswith("!")]


def _definition(rhs: str, values: dict[str, IrValue], entry: bool) -> IrValue | None:
    """The pointer definition of an instruction (text after ``%x =``), or None."""
    words = rhs.split(None, 1)
    if not words:
        return None
    opcode, rest = words[0], words[1] if len(words) > 1 else ""
    if opcode == "alloca":
        if not entry:
            return None  # an alloca in a loop is a new object per iteration
        m = _ADDRSPACE.search(rest)
        return IrValue(op="alloca", addrspace=int(m.group(1)) if m else 0)
    if opcode == "getelementptr":
        return _gep(rest, values)
    if opcode in ("bitcast", "addrspacecast"):
        return _cast(opcode, rest, values)
    if opcode == "select":
        ops = _operands(rest)
        choices = [_operand(p, values) for p in ops[1:]]
        if len(ops) != 3 or None in choices:
            return None
        return IrValue(op="select", inputs=tuple(choices))
    if opcode == "phi":
        return _phi(rest, values)
    return None


def _gep(rest: str, values: dict[str, IrValue]) -> IrValue | None:
    """A ``getelementptr`` from the text after its keyword (instruction or constant)."""
    inbounds = False
    while m := _GEP_FLAG.match(rest):
        inbounds |= m.group(0).strip() == "inbounds"
        rest = rest[m.end() :]
    if rest.startswith("(") and rest.rstrip().endswith(")"):
        rest = rest.strip()[1:-1]  # a constant expression: its operands in parentheses
    ops = _operands(rest)
    if len(ops) < 2 or not _pointer_typed(ops[1]):
        return None  # e.g. a vector of pointers
    base = _operand(ops[1], values)
    if base is None:
        return None
    return IrValue(op="gep", inputs=(base,), inbounds=inbounds, offset=_gep_offset(ops[0], ops[2:]))


def _cast(opcode: str, rest: str, values: dict[str, IrValue]) -> IrValue | None:
    """A pointer ``bitcast``/``addrspacecast`` (``TYPE VALUE to TYPE``), else None."""
    rest = rest.strip()
    if rest.startswith("(") and rest.endswith(")"):
        rest = rest[1:-1]
    k = find_top_level(rest, " to ")
    if k < 0 or not _pointer_typed(rest[:k]):
        return None  # not from a (scalar) pointer
    base = _operand(rest[:k], values)
    return None if base is None else IrValue(op=opcode, inputs=(base,))


def _phi(rest: str, values: dict[str, IrValue]) -> IrValue | None:
    """A ``phi TYPE [ v, %bb ], ...`` (None unless every incoming value is a name)."""
    inputs = []
    for piece in _operands(rest):
        words = _top_words(piece)
        if not words or not (words[-1].startswith("[") and words[-1].endswith("]")):
            return None
        incoming = split_top(words[-1][1:-1])
        name = _operand(incoming[0], values) if incoming else None
        if name is None:
            return None
        inputs.append(name)
    return IrValue(op="phi", inputs=tuple(inputs)) if inputs else None


def _pointer_typed(text: str) -> bool:
    """Whether a typed operand (``TYPE VALUE``) has a scalar pointer type (``ptr ...``,
    ``float addrspace(1)*``), not a vector of pointers or another type."""
    words = _top_words(text.strip())
    k = next(
        (i for i, w in enumerate(words) if w in _CONST_EXPRS or w.startswith(("%", "@"))),
        len(words) - 1,
    )
    return k > 0 and (words[0] == "ptr" or words[k - 1].endswith("*"))


def _operand(text: str, values: dict[str, IrValue]) -> str | None:
    """The value of a (typed) operand: ``%x``, ``@g``, a constant expression of a pointer
    (recorded in ``values`` as ``ce:<text>``) or None (constants, anything else)."""
    words = _top_words(text.strip())
    for k, w in enumerate(words):
        if w in _CONST_EXPRS:
            expr = " ".join(words[k:])
            key = "ce:" + expr
            if key not in values:
                rest = " ".join(words[k + 1 :])
                v = _gep(rest, values) if w == "getelementptr" else _cast(w, rest, values)
                if v is None:
                    return None
                values[key] = v
            return key
    last = words[-1] if words else ""
    return last if last.startswith(("%", "@")) else None


def _gep_offset(source: str, indices: list[str]) -> int | None:
    """Constant byte offset of GEP ``indices`` over type ``source``, or None."""
    total, ty = 0, source.strip()
    for n, piece in enumerate(indices):
        words = piece.split()
        if len(words) < 2 or not _INT.match(words[-1]):
            return None
        if n > 0:
            ty = _element_type(ty)
        size = _type_bytes(ty) if ty is not None else None
        if size is None:
            return None
        total += int(words[-1]) * size
    return total


def _aggregate(ty: str) -> tuple[int, str, bool] | None:
    """(count, element type, is a vector) of ``[N x T]`` or ``<N x T>``, else None."""
    m = re.fullmatch(r"\[\s*(\d+)\s+x\s+(.+?)\s*\]|<\s*(\d+)\s+x\s+(.+?)\s*>", ty.strip())
    if m is None:
        return None
    if m.group(1):
        return int(m.group(1)), m.group(2), False
    return int(m.group(3)), m.group(4), True


def _element_type(ty: str) -> str | None:
    agg = _aggregate(ty)
    return agg[1] if agg else None


def _type_bytes(ty: str) -> int | None:
    """Allocation size of a simple type (integers, floats, arrays and power-of-two vectors of
    them), None for others (structs, pointers, odd vectors)."""
    ty = ty.strip()
    if ty in _SCALAR_BYTES:
        return _SCALAR_BYTES[ty]
    m = re.fullmatch(r"i(\d+)", ty)
    if m:
        return {1: 1, 8: 1, 16: 2, 32: 4, 64: 8}.get(int(m.group(1)))
    agg = _aggregate(ty)
    if agg is None:
        return None
    count, elem, vector = agg
    size = _type_bytes(elem)
    if size is None or (vector and (elem == "i1" or (count * size) & (count * size - 1))):
        return None
    return count * size
