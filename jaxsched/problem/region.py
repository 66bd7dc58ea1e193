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

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from jaxsched.errors import InputError

#: Largest region accepted by the loaders and solvers (instructions).
MAX_INSTRUCTIONS = 16384
#: Largest register width (32-bit units) accepted.
MAX_REGISTER_WIDTH = 32
#: Largest latency accepted (cycles).
MAX_LATENCY = 100_000

EDGE_KINDS = ("data", "anti", "output", "other")


class RegionError(InputError):
    """A region is malformed. The message names the region and the offending item."""


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
        """Validate and normalise a region; raises `RegionError` naming the problem.

        Omitted ``live_in``: registers used before any def in input order. Omitted
        ``live_out``: registers defined and never used afterwards in input order. Duplicate
        edges (same src, dst) merge into one: the larger latency wins, and the kind of the
        edge with that latency is kept (``data`` preferred on ties).
        """
        where = f"region {name!r}"
        insts = tuple(_instruction(i, x, where) for i, x in enumerate(instructions))
        n = len(insts)
        if n == 0:
            raise RegionError(f"{where}: has no instructions")
        if n > MAX_INSTRUCTIONS:
            raise RegionError(f"{where}: {n} instructions exceeds the maximum {MAX_INSTRUCTIONS}")
        regs = {str(k): _register(str(k), v, where) for k, v in registers.items()}
        for i, inst in enumerate(insts):
            for r in (*inst.defs, *inst.uses):
                if r not in regs:
                    raise RegionError(
                        f"{where}: instruction {i} ({inst.text!r}) names register {r!r} "
                        "missing from 'registers'"
                    )
        merged = _merge_edges(edges, n, where)
        live_in_t = _implied_live_in(insts) if live_in is None else tuple(sorted(set(live_in)))
        live_out_t = _implied_live_out(insts) if live_out is None else tuple(sorted(set(live_out)))
        for label, names in (("live_in", live_in_t), ("live_out", live_out_t)):
            for r in names:
                if r not in regs:
                    raise RegionError(f"{where}: {label} register {r!r} missing from 'registers'")
        lt: dict[str, int] = {}
        for f, v in (live_through or {}).items():
            if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 0:
                raise RegionError(f"{where}: live_through[{f!r}] = {v!r} is not an integer >= 0")
            lt[str(f)] = int(v)
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
        """The region file form (``jaxsched.region/1``); see `jaxsched.problem.format`."""
        from jaxsched.problem.format import region_to_dict

        return region_to_dict(self)


# ---------------------------------------------------------------------- helpers
def _instruction(i: int, x: Instruction | tuple | Mapping, where: str) -> Instruction:
    if isinstance(x, Instruction):
        text, defs, uses = x
    elif isinstance(x, Mapping):
        unknown = set(x) - {"text", "defs", "uses"}
        if unknown:
            raise RegionError(f"{where}: instruction {i} has unknown fields {sorted(unknown)}")
        text, defs, uses = x.get("text", ""), x.get("defs", []), x.get("uses", [])
    else:
        text, defs, uses = x
    for label, names in (("defs", defs), ("uses", uses)):
        if isinstance(names, str) or not isinstance(names, Sequence):
            raise RegionError(f"{where}: instruction {i} field {label!r} must be a list of names")
        for r in names:
            if not isinstance(r, str) or not r:
                raise RegionError(
                    f"{where}: instruction {i} field {label!r} has a non-string name {r!r}"
                )
    if not isinstance(text, str):
        raise RegionError(f"{where}: instruction {i} field 'text' must be a string")
    # A register named twice in one list counts once (its pressure is the same).
    return Instruction(text, tuple(dict.fromkeys(defs)), tuple(dict.fromkeys(uses)))


def _register(name: str, v: Register | tuple | Mapping, where: str) -> Register:
    if isinstance(v, Mapping):
        unknown = set(v) - {"file", "width"}
        if unknown:
            raise RegionError(f"{where}: register {name!r} has unknown fields {sorted(unknown)}")
        if "file" not in v:
            raise RegionError(f"{where}: register {name!r} has no 'file'")
        file, width = v["file"], v.get("width", 1)
    else:
        file, width = v
    if not isinstance(file, str) or not file:
        raise RegionError(f"{where}: register {name!r} has an invalid file {file!r}")
    if isinstance(width, bool) or not isinstance(width, int | np.integer):
        raise RegionError(f"{where}: register {name!r} width {width!r} is not an integer")
    if width <= 0 or width > MAX_REGISTER_WIDTH:
        raise RegionError(
            f"{where}: register {name!r} width {width} is not in 1..{MAX_REGISTER_WIDTH}"
        )
    return Register(file, int(width))


def _merge_edges(edges: Iterable[Edge | Sequence], n: int, where: str) -> tuple[Edge, ...]:
    best: dict[tuple[int, int], Edge] = {}
    for k, e in enumerate(edges):
        if isinstance(e, Edge):
            src, dst, lat, kind = e
        else:
            if not isinstance(e, Sequence) or isinstance(e, str) or len(e) not in (3, 4):
                raise RegionError(f"{where}: edge {k} {e!r} is not [src, dst, latency(, kind)]")
            src, dst, lat = e[0], e[1], e[2]
            kind = e[3] if len(e) == 4 else "data"
        for label, v in (("src", src), ("dst", dst), ("latency", lat)):
            if isinstance(v, bool) or not isinstance(v, int | np.integer):
                raise RegionError(f"{where}: edge {k} {label} {v!r} is not an integer")
        if not (0 <= src < n) or not (0 <= dst < n):
            raise RegionError(
                f"{where}: edge {k} ({src} -> {dst}) names a missing instruction "
                f"(region has {n}: ids 0..{n - 1})"
            )
        if src == dst:
            raise RegionError(f"{where}: edge {k} is a self-loop on instruction {src} (a cycle)")
        if lat < 0:
            raise RegionError(f"{where}: edge {k} ({src} -> {dst}) has negative latency {lat}")
        if lat > MAX_LATENCY:
            raise RegionError(
                f"{where}: edge {k} ({src} -> {dst}) latency {lat} exceeds {MAX_LATENCY}"
            )
        if kind not in EDGE_KINDS:
            raise RegionError(
                f"{where}: edge {k} ({src} -> {dst}) has unknown kind {kind!r} "
                f"(known: {', '.join(EDGE_KINDS)})"
            )
        new = Edge(int(src), int(dst), int(lat), str(kind))
        old = best.get((new.src, new.dst))
        if (
            old is None
            or new.latency > old.latency
            or (new.latency == old.latency and new.kind == "data")
        ):
            best[(new.src, new.dst)] = new
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
