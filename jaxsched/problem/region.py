"""The scheduling region: instructions, dependences and registers (host side, plain Python/NumPy).

A `Region` is immutable and validated on construction. Instruction ids are positions in
``instructions``. Edges are authoritative for ordering; the defs/uses of instructions are used for
register pressure only.

Liveness model (shared by every solver and re-implemented independently by the verifier):
  * live-in registers (and constant live-through pressure) are live from the start;
  * when an instruction issues, its uses are processed first: a use that is the register's last
    remaining use kills it, unless the register is live-out;
  * then its defs: a register that is not live becomes live;
  * the RP after the instruction is recorded (peak = max over the start and every instruction);
  * a def with no remaining use that is not live-out dies right after (a dead def occupies its
    register only at its own instruction).
"""

from __future__ import annotations

import reprlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from jaxsched.errors import InputError

# Limits (docs/limits.md); `Region.build` rejects anything beyond them with `RegionError`.
#: Largest region accepted by the loaders and solvers (instructions).
MAX_INSTRUCTIONS = 16384
#: Most dependence edges in one region (after reading, before merging duplicates).
MAX_EDGES = 1 << 22
#: Most registers named in one region's ``registers``.
MAX_REGISTERS = 1 << 20
#: Most distinct registers in one instruction's ``defs`` (and, separately, ``uses``).
MAX_OPERANDS = 1024
#: Largest register width (32-bit units) accepted.
MAX_REGISTER_WIDTH = 32
#: Largest latency accepted (cycles).
MAX_LATENCY = 100_000
#: Largest live-through pressure of one register file (32-bit units).
MAX_LIVE_THROUGH = 1 << 16
#: Longest region, register or register-file name (characters).
MAX_NAME_LENGTH = 4096
#: Longest instruction ``text`` (characters).
MAX_TEXT_LENGTH = 1 << 16

#: The region file format written by `Region.to_dict` (see `jaxsched.problem.format`).
FORMAT = "jaxsched.region/1"

EDGE_KINDS = ("data", "anti", "output", "other")


class RegionError(InputError):
    """A region is malformed. The message names the region and the offending item."""


class _Brief(reprlib.Repr):
    """`reprlib.Repr` that never fails: huge integers are described, not converted."""

    def repr_int(self, x: int, level: int) -> str:
        if x.bit_length() > 128:
            return f"<an integer of {x.bit_length()} bits>"
        return repr(x)


_BRIEF = _Brief(maxlevel=2, maxstring=60, maxother=60, maxlist=4, maxdict=4, maxtuple=4)


def brief(value: object) -> str:
    """A short, safe ``repr`` of any value for an error message (bounded size and depth)."""
    try:
        return _BRIEF.repr(value)
    except Exception:  # an object whose repr fails: name its type
        return f"<{type(value).__name__}>"


class Instruction(NamedTuple):
    text: str
    defs: tuple[str, ...]
    uses: tuple[str, ...]


class Register(NamedTuple):
    file: str
    width: int


class Edge(NamedTuple):
    src: int
    dst: int
    latency: int
    kind: str = "data"


@dataclass(frozen=True, eq=False)
class Region:
    """A validated scheduling region.

    Attributes:
      name: region name (e.g. ``"kernel:bb.2"``).
      instructions: the instructions in input order.
      registers: register name -> (file, width in 32-bit units).
      edges: merged dependence edges, sorted by (src, dst).
      live_in: registers live at entry (sorted).
      live_out: registers live at exit (sorted).
      live_through: constant pressure per register file of values live across the region.
    """

    name: str
    instructions: tuple[Instruction, ...]
    registers: Mapping[str, Register]
    edges: tuple[Edge, ...]
    live_in: tuple[str, ...]
    live_out: tuple[str, ...]
    live_through: Mapping[str, int]
    _cache: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    # ------------------------------------------------------------------ construction
    @classmethod
    def build(
        cls,
        name: str,
        instructions: Sequence[Instruction | tuple | Mapping],
        registers: Mapping[str, Register | tuple | Mapping],
        edges: Iterable[Edge | Sequence],
        live_in: Iterable[str] | None = None,
        live_out: Iterable[str] | None = None,
        live_through: Mapping[str, int] | None = None,
    ) -> Region:
        """Validate and normalise a region; raises `RegionError` naming the problem and item.

        Besides the file form (see `region_to_dict`), Python callers may give an instruction as
        an `Instruction` or a ``(text, defs, uses)`` tuple, a register as a `Register` or a
        ``(file, width)`` tuple and an edge as an `Edge`. Every value is checked against the
        limits of this module (``MAX_*``, listed in docs/limits.md).

        Omitted ``live_in``: registers used before any def in input order. Omitted
        ``live_out``: registers defined and never used afterwards in input order. Duplicate
        edges (same src, dst) merge into one: the larger latency wins, and the kind of the
        edge with that latency is kept (``data`` preferred on ties).
        """
        name = _string(name, "name", "region")
        where = f"region {name!r}"
        insts = _instructions(instructions, where)
        n = len(insts)
        regs = _registers(registers, where)
        for i, inst in enumerate(insts):
            for r in (*inst.defs, *inst.uses):
                if r not in regs:
                    raise RegionError(
                        f"{where}: instruction {i} ({brief(inst.text)}) names register {r!r} "
                        "missing from 'registers'"
                    )
        merged = _merge_edges(edges, n, where)
        if live_in is None:
            live_in_t = _implied_live_in(insts)
        else:
            live_in_t = _live_names(live_in, "live_in", regs, where)
        if live_out is None:
            live_out_t = _implied_live_out(insts)
        else:
            live_out_t = _live_names(live_out, "live_out", regs, where)
        lt = _live_through(live_through, where)
        region = cls(name, insts, regs, merged, live_in_t, live_out_t, lt)
        region._check_acyclic()
        return region

    # ------------------------------------------------------------------ basic views
    @property
    def num_instructions(self) -> int:
        return len(self.instructions)

    def __len__(self) -> int:
        return len(self.instructions)

    def __repr__(self) -> str:
        return (
            f"Region({self.name!r}, n={len(self)}, edges={len(self.edges)}, "
            f"registers={len(self.registers)})"
        )

    @property
    def register_names(self) -> tuple[str, ...]:
        """Registers in a fixed order (sorted by name); indices into per-register arrays."""
        if "regnames" not in self._cache:
            self._cache["regnames"] = tuple(sorted(self.registers))
        return self._cache["regnames"]

    def files_used(self) -> set[str]:
        return {r.file for r in self.registers.values()} | set(self.live_through)

    def check_machine(self, machine) -> None:
        """Raise `RegionError` if a register file is unknown to ``machine``."""
        known = set(machine.file_names)
        for rname, reg in sorted(self.registers.items()):
            if reg.file not in known:
                raise RegionError(
                    f"region {self.name!r}: register {rname!r} is in file {reg.file!r}, unknown "
                    f"to machine {machine.name!r} (known: {', '.join(machine.file_names)})"
                )
        for f in self.live_through:
            if f not in known:
                raise RegionError(
                    f"region {self.name!r}: live_through names file {f!r}, unknown to machine "
                    f"{machine.name!r}"
                )

    # ------------------------------------------------------------------ graph arrays
    def edge_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(src int32[E], dst int32[E], latency int32[E])."""
        if "edges" not in self._cache:
            if self.edges:
                a = np.array([(e.src, e.dst, e.latency) for e in self.edges], dtype=np.int32)
            else:
                a = np.zeros((0, 3), dtype=np.int32)
            self._cache["edges"] = (a[:, 0].copy(), a[:, 1].copy(), a[:, 2].copy())
        return self._cache["edges"]

    def successors(self) -> list[list[tuple[int, int]]]:
        """Per instruction: ``[(dst, latency), ...]``."""
        if "succ" not in self._cache:
            out: list[list[tuple[int, int]]] = [[] for _ in self.instructions]
            for e in self.edges:
                out[e.src].append((e.dst, e.latency))
            self._cache["succ"] = out
        return self._cache["succ"]

    def predecessors(self) -> list[list[tuple[int, int]]]:
        """Per instruction: ``[(src, latency), ...]``."""
        if "pred" not in self._cache:
            out: list[list[tuple[int, int]]] = [[] for _ in self.instructions]
            for e in self.edges:
                out[e.dst].append((e.src, e.latency))
            self._cache["pred"] = out
        return self._cache["pred"]

    def topological_order(self) -> list[int]:
        """A topological order (Kahn, smallest id first); the region is acyclic."""
        if "topo" not in self._cache:
            self._check_acyclic()
        return self._cache["topo"]

    def _check_acyclic(self) -> None:
        import heapq

        n = len(self)
        indeg = [0] * n
        for e in self.edges:
            indeg[e.dst] += 1
        heap = [i for i in range(n) if indeg[i] == 0]
        heapq.heapify(heap)
        order: list[int] = []
        succ = self.successors()
        while heap:
            i = heapq.heappop(heap)
            order.append(i)
            for j, _ in succ[i]:
                indeg[j] -= 1
                if indeg[j] == 0:
                    heapq.heappush(heap, j)
        if len(order) != n:
            stuck = sorted(i for i in range(n) if indeg[i] > 0)
            cycle = _find_cycle(stuck, self.predecessors())
            raise RegionError(
                f"region {self.name!r}: dependence cycle through instructions "
                f"{' -> '.join(map(str, cycle))}"
            )
        self._cache["topo"] = order

    def critical_path(self) -> np.ndarray:
        """int32[n]: latency-weighted longest path from each instruction to any sink."""
        if "cp" not in self._cache:
            cp = np.zeros(len(self), dtype=np.int64)
            succ = self.successors()
            for i in reversed(self.topological_order()):
                best = 0
                for j, lat in succ[i]:
                    best = max(best, cp[j] + lat)
                cp[i] = best
            self._cache["cp"] = cp.astype(np.int32)
        return self._cache["cp"]

    def critical_path_length(self) -> int:
        """Longest latency-weighted path through the region (cycles between first and last)."""
        cp = self.critical_path()
        return int(cp.max()) if len(cp) else 0

    def transitive_closure(self) -> np.ndarray:
        """bool[n, n]: ``reach[i, j]`` iff a dependence path leads from i to j (i != j)."""
        if "closure" not in self._cache:
            n = len(self)
            words = (n + 63) // 64
            bits = np.zeros((n, words), dtype=np.uint64)
            succ = self.successors()
            for i in reversed(self.topological_order()):
                for j, _ in succ[i]:
                    bits[i] |= bits[j]
                    bits[i, j // 64] |= np.uint64(1) << np.uint64(j % 64)
            reach = np.unpackbits(bits.view(np.uint8), axis=1, bitorder="little")[:, :n]
            self._cache["closure"] = reach.astype(bool)
        return self._cache["closure"]

    def ready_list_bound(self) -> int:
        """1 + the largest number of instructions independent of one instruction.

        No ready list (set of instructions whose predecessors are all scheduled) can be larger:
        its members are pairwise independent.
        """
        if "ready_bound" not in self._cache:
            reach = self.transitive_closure()
            related = reach | reach.T
            independent = len(self) - 1 - related.sum(axis=1)
            self._cache["ready_bound"] = int(1 + independent.max()) if len(self) else 1
            self._cache["ready_bound"] = min(self._cache["ready_bound"], len(self))
        return self._cache["ready_bound"]

    def to_dict(self) -> dict:
        """The region file form (``jaxsched.region/1``, docs/region-format.md): explicit
        live_in / live_out, edges with their kind when not ``data``."""
        return {
            "format": FORMAT,
            "name": self.name,
            "instructions": [
                {"text": i.text, "defs": list(i.defs), "uses": list(i.uses)}
                for i in self.instructions
            ],
            "registers": {
                k: {"file": r.file, "width": r.width} for k, r in sorted(self.registers.items())
            },
            "edges": [[e.src, e.dst, e.latency] if e.kind == "data" else [*e] for e in self.edges],
            "live_in": list(self.live_in),
            "live_out": list(self.live_out),
            "live_through": dict(sorted(self.live_through.items())),
        }

    def renumbered(self, order: Sequence[int]) -> Region:
        """The same region with its instructions in ``order`` (instruction k of the result is
        instruction ``order[k]`` of this one; a permutation of every instruction), edges
        renumbered: its input order is ``order``, so a solver that starts from the input order
        starts there. Map a result's order back with ``[order[j] for j in result_order]``."""
        pos = {int(j): k for k, j in enumerate(order)}
        if sorted(pos) != list(range(len(self))) or len(order) != len(self):
            raise RegionError(f"region {self.name!r}: renumbered needs a permutation of 0..n-1")
        edges = [e._replace(src=pos[e.src], dst=pos[e.dst]) for e in self.edges]
        insts = [self.instructions[int(j)] for j in order]
        return Region.build(
            self.name, insts, self.registers, edges, self.live_in, self.live_out, self.live_through
        )


# ---------------------------------------------------------------------- validation helpers
def _string(v: object, what: str, where: str, limit: int = MAX_NAME_LENGTH) -> str:
    """``v`` if it is a non-empty string of at most ``limit`` characters (valid Unicode)."""
    if type(v) is str and 0 < len(v) <= limit and v.isascii():
        return v  # the common case, checked fast
    if not isinstance(v, str) or not v:
        raise RegionError(f"{where}: {what} must be a non-empty string, got {brief(v)}")
    if len(v) > limit:
        raise RegionError(f"{where}: {what} {brief(v)} is longer than {limit:,} characters")
    try:
        v.encode("utf-8")
    except UnicodeEncodeError:
        raise RegionError(f"{where}: {what} {brief(v)} is not valid Unicode") from None
    return v


def _integer(v: object, what: str, where: str, lo: int, hi: int) -> int:
    """``v`` if it is an integer (not a bool) in ``lo..hi``."""
    if isinstance(v, bool) or not isinstance(v, int | np.integer):
        raise RegionError(f"{where}: {what} {brief(v)} is not an integer")
    if not lo <= v <= hi:
        raise RegionError(f"{where}: {what} {brief(v)} is not in {lo}..{hi:,}")
    return int(v)


def _is_list(v: object) -> bool:
    t = type(v)
    return t is list or t is tuple or (isinstance(v, Sequence) and not isinstance(v, str | bytes))


def _is_mapping(v: object) -> bool:
    return type(v) is dict or isinstance(v, Mapping)


def _unknown_fields(d: Mapping, known: set[str], what: str, where: str) -> None:
    unknown = [k for k in d if k not in known]
    if unknown:
        names = sorted(brief(k) for k in unknown)
        raise RegionError(f"{where}: {what} has unknown fields [{', '.join(names)}]")


def _instructions(xs: object, where: str) -> tuple[Instruction, ...]:
    if not _is_list(xs):
        raise RegionError(f"{where}: 'instructions' must be a list, got {brief(xs)}")
    if not xs:
        raise RegionError(f"{where}: has no instructions")
    if len(xs) > MAX_INSTRUCTIONS:
        raise RegionError(f"{where}: {len(xs)} instructions exceeds the maximum {MAX_INSTRUCTIONS}")
    return tuple(_instruction(i, x, where) for i, x in enumerate(xs))


def _instruction(i: int, x: object, where: str) -> Instruction:
    item = f"instruction {i}"
    if _is_mapping(x):
        _unknown_fields(x, {"text", "defs", "uses"}, item, where)
        text, defs, uses = x.get("text", ""), x.get("defs", []), x.get("uses", [])
    elif _is_list(x) and len(x) == 3:
        text, defs, uses = x
    else:
        raise RegionError(
            f"{where}: {item} must be an object with 'text', 'defs', 'uses'; got {brief(x)}"
        )
    if not isinstance(text, str):
        raise RegionError(f"{where}: {item} field 'text' must be a string, got {brief(text)}")
    if text:
        _string(text, f"{item} field 'text'", where, MAX_TEXT_LENGTH)
    out = []
    for label, names in (("defs", defs), ("uses", uses)):
        what = f"{item} field {label!r}"
        if not _is_list(names):
            raise RegionError(f"{where}: {what} must be a list of register names")
        # A register named twice in one list counts once (its pressure is the same).
        unique = tuple(dict.fromkeys(_string(r, f"{what} name", where) for r in names))
        if len(unique) > MAX_OPERANDS:
            raise RegionError(
                f"{where}: {what} names {len(unique)} registers (at most {MAX_OPERANDS})"
            )
        out.append(unique)
    return Instruction(text, out[0], out[1])


def _registers(regs: object, where: str) -> dict[str, Register]:
    if not isinstance(regs, Mapping):
        raise RegionError(f"{where}: 'registers' must be an object, got {brief(regs)}")
    if len(regs) > MAX_REGISTERS:
        raise RegionError(f"{where}: {len(regs)} registers exceeds the maximum {MAX_REGISTERS}")
    return {_string(k, "register name", where): _register(k, v, where) for k, v in regs.items()}


def _register(name: str, v: object, where: str) -> Register:
    item = f"register {name!r}"
    if _is_mapping(v):
        _unknown_fields(v, {"file", "width"}, item, where)
        if "file" not in v:
            raise RegionError(f"{where}: {item} has no 'file'")
        file, width = v["file"], v.get("width", 1)
    elif _is_list(v) and len(v) == 2:
        file, width = v
    else:
        raise RegionError(
            f"{where}: {item} must be an object with 'file' and 'width'; got {brief(v)}"
        )
    file = _string(file, f"{item} file", where)
    return Register(file, _integer(width, f"{item} width", where, 1, MAX_REGISTER_WIDTH))


def _live_names(names: object, label: str, regs: Mapping[str, Register], where: str):
    if isinstance(names, str | bytes) or not isinstance(names, Iterable):
        raise RegionError(f"{where}: {label!r} must be a list of register names")
    out = set()
    for r in names:
        if not isinstance(r, str) or r not in regs:
            raise RegionError(f"{where}: {label} register {brief(r)} missing from 'registers'")
        out.add(r)
    return tuple(sorted(out))


def _live_through(lt: object, where: str) -> dict[str, int]:
    if lt is None:
        return {}
    if not isinstance(lt, Mapping):
        raise RegionError(f"{where}: 'live_through' must be an object, got {brief(lt)}")
    return {
        _string(f, "live_through file", where): _integer(
            v, f"live_through[{f!r}] =", where, 0, MAX_LIVE_THROUGH
        )
        for f, v in lt.items()
    }


def _edge_fields(k: int, e: object, where: str) -> tuple[int, int, int, str]:
    """(src, dst, latency, kind) of edge ``k`` with their types checked (not their ranges)."""
    if type(e) is list and len(e) == 3 and type(e[0]) is type(e[1]) is type(e[2]) is int:
        return e[0], e[1], e[2], "data"  # the common case, checked fast
    if isinstance(e, Edge):
        src, dst, lat, kind = e
    elif _is_list(e) and len(e) in (3, 4):
        src, dst, lat, kind = e[0], e[1], e[2], (e[3] if len(e) == 4 else "data")
    else:
        raise RegionError(f"{where}: edge {k} {brief(e)} is not [src, dst, latency(, kind)]")
    for label, v in (("src", src), ("dst", dst), ("latency", lat)):
        if isinstance(v, bool) or not isinstance(v, int | np.integer):
            raise RegionError(f"{where}: edge {k} {label} {brief(v)} is not an integer")
    if not isinstance(kind, str) or kind not in EDGE_KINDS:
        raise RegionError(
            f"{where}: edge {k} ({brief(src)} -> {brief(dst)}) has unknown kind {brief(kind)} "
            f"(known: {', '.join(EDGE_KINDS)})"
        )
    return int(src), int(dst), int(lat), kind


def _merge_edges(edges: object, n: int, where: str) -> tuple[Edge, ...]:
    if isinstance(edges, str | bytes | Mapping) or not isinstance(edges, Iterable):
        raise RegionError(f"{where}: 'edges' must be a list, got {brief(edges)}")
    best: dict[tuple[int, int], Edge] = {}
    for k, e in enumerate(edges):
        if k >= MAX_EDGES:
            raise RegionError(f"{where}: more than the maximum of {MAX_EDGES:,} edges")
        src, dst, lat, kind = _edge_fields(k, e, where)
        if not (0 <= src < n) or not (0 <= dst < n):
            raise RegionError(
                f"{where}: edge {k} ({brief(src)} -> {brief(dst)}) names a missing instruction "
                f"(region has {n}: ids 0..{n - 1})"
            )
        if src == dst:
            raise RegionError(f"{where}: edge {k} is a self-loop on instruction {src} (a cycle)")
        if lat < 0:
            raise RegionError(f"{where}: edge {k} ({src} -> {dst}) has negative latency {lat}")
        if lat > MAX_LATENCY:
            raise RegionError(
                f"{where}: edge {k} ({src} -> {dst}) latency {brief(lat)} exceeds {MAX_LATENCY}"
            )
        old = best.get((src, dst))
        if old is None or lat > old.latency or (lat == old.latency and kind == "data"):
            best[(src, dst)] = Edge(src=src, dst=dst, latency=lat, kind=kind)
    return tuple(best[k] for k in sorted(best))


def _implied_live_in(insts: Sequence[Instruction]) -> tuple[str, ...]:
    defined: set[str] = set()
    live_in: set[str] = set()
    for inst in insts:
        for r in inst.uses:
            if r not in defined:
                live_in.add(r)
        defined.update(inst.defs)
    return tuple(sorted(live_in))


def _implied_live_out(insts: Sequence[Instruction]) -> tuple[str, ...]:
    last_def: dict[str, int] = {}
    last_use: dict[str, int] = {}
    for i, inst in enumerate(insts):
        for r in inst.uses:
            last_use[r] = i
        for r in inst.defs:
            last_def[r] = i
    return tuple(sorted(r for r, d in last_def.items() if last_use.get(r, -1) <= d))


def _find_cycle(stuck: list[int], pred: list[list[tuple[int, int]]]) -> list[int]:
    """A cycle among ``stuck`` nodes (each has a stuck predecessor), in edge direction."""
    stuck_set = set(stuck)
    start = stuck[0]
    path: list[int] = []
    seen: dict[int, int] = {}
    node = start
    while node not in seen:
        seen[node] = len(path)
        path.append(node)
        node = next(j for j, _ in pred[node] if j in stuck_set)
    cycle = [*path[seen[node] :], node]
    return cycle[::-1]
