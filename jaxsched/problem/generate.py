"""Seeded random regions that look like GPU (AMDGPU MIR) code, for tests and benchmarks.

A generated region is a short prologue (scalar loads of kernel arguments, a little scalar ALU)
followed by *groups*: each group is an unrolled loop body of independent *chains*, and a chain is
an address computation, one to a few vector memory loads (long latency), an ALU chain (latency
1-4) that combines the loaded values with scalars, results of earlier chains or an accumulator,
and optionally a store. Within a group the instructions are emitted layer by layer (all address
computations, then all loads, then ALU step 0 of every chain, step 1, ..., then stores), the way
a compiler hoists loads: the input order has high register pressure, and a better order exists.

Registers are SSA-like (each defined at most once, named ``%k``): VGPRs (``vgpr_32`` width 1,
``vreg_64`` width 2) and SGPRs (``sgpr_32`` width 1, ``sreg_64`` width 2). Every def -> use pair
gets a ``data`` edge with the producer's latency; a few ``other`` edges (latency 0 or 1) order
loads and stores that may alias. Live-in: the kernel argument pointer, the thread id,
accumulators and any register used without a def; live-out: values defined and never used, the
accumulators' final values and a few chosen values. Regions are deterministic per (seed, n,
knobs) and take O(n) time (4,096 instructions in about 0.1-0.2 s on this CPU).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from jaxsched.problem.region import MAX_INSTRUCTIONS, Edge, Instruction, Region, Register

__all__ = ["Knobs", "generate_region", "generate_regions"]

_CLASS = {
    ("VGPR", 1): "vgpr_32",
    ("VGPR", 2): "vreg_64",
    ("SGPR", 1): "sgpr_32",
    ("SGPR", 2): "sreg_64",
}
_ALU_F32 = (
    ("V_ADD_F32_e32", 1),
    ("V_MUL_F32_e32", 2),
    ("V_SUB_F32_e32", 1),
    ("V_MAX_F32_e32", 1),
    ("V_MIN_F32_e32", 1),
)
_ALU_F64 = (("V_ADD_F64", 4), ("V_MUL_F64", 4))
_UNARY_F32 = (
    ("V_EXP_F32_e32", 4),
    ("V_RCP_F32_e32", 4),
    ("V_SQRT_F32_e32", 4),
    ("V_CVT_F32_I32_e32", 1),
)


#: Unconsumed chain results kept for later chains; beyond this a chain stores its result.
_MAX_RESULTS = 4


class Knobs(NamedTuple):
    """Generator parameters (keyword arguments of `generate_region`). Ranges are inclusive."""

    group_size: tuple[int, int] = (2, 8)  # chains per group (unroll factor)
    chain_length: tuple[int, int] = (1, 6)  # ALU instructions per chain
    loads_per_chain: tuple[int, int] = (1, 3)  # vector loads per chain
    f64_chain_prob: float = 0.15  # chain works on 64-bit values (vreg_64 loads, F64 ALU)
    scalar_operand_prob: float = 0.2  # an ALU operand is a scalar (SGPR) kernel argument
    cross_chain_prob: float = 0.25  # an ALU operand is the result of an earlier chain
    accumulate_prob: float = 0.3  # a chain's result is added into an accumulator
    store_prob: float = 0.5  # a chain ends with a store (and when 4 results wait, if > 0)
    memory_edge_prob: float = 0.3  # per store: add load->store / store->load ordering edges
    load_latency: tuple[int, int] = (20, 80)  # vector memory load latency (cycles)
    scalar_load_latency: tuple[int, int] = (4, 6)  # scalar memory load latency (cycles)
    extra_live_out: int = 4  # at most this many used values are also live-out
    live_through: tuple[int, int] = (4, 8)  # max constant live-through pressure (VGPR, SGPR)


def _check_knobs(knobs: dict) -> Knobs:
    unknown = set(knobs) - set(Knobs._fields)
    if unknown:
        raise ValueError(
            f"generate_region: unknown knobs {sorted(unknown)} (known: {', '.join(Knobs._fields)})"
        )
    k = Knobs(**knobs)
    for name in (
        "group_size",
        "chain_length",
        "loads_per_chain",
        "load_latency",
        "scalar_load_latency",
        "live_through",
    ):
        v = getattr(k, name)
        low = 1 if name in ("group_size", "loads_per_chain") else 0
        ok = (
            isinstance(v, tuple | list)
            and len(v) == 2
            and all(isinstance(x, int) and not isinstance(x, bool) and x >= low for x in v)
        )
        if not ok or (name != "live_through" and v[0] > v[1]):
            what = (
                "two integers >= 0"
                if name == "live_through"
                else f"a range lo..hi, {low} <= lo <= hi"
            )
            raise ValueError(f"generate_region: knob {name}={v!r} is not {what}")
    for name in (
        "f64_chain_prob",
        "scalar_operand_prob",
        "cross_chain_prob",
        "accumulate_prob",
        "store_prob",
        "memory_edge_prob",
    ):
        p = getattr(k, name)
        if isinstance(p, bool) or not isinstance(p, int | float) or not 0.0 <= p <= 1.0:
            raise ValueError(f"generate_region: knob {name}={p!r} is not a probability")
    e = k.extra_live_out
    if isinstance(e, bool) or not isinstance(e, int) or e < 0:
        raise ValueError(f"generate_region: knob extra_live_out={e!r} is not an integer >= 0")
    return k


@dataclass
class _Builder:
    """Accumulates instructions in emission (= original, topological) order."""

    rng: np.random.Generator
    texts: list[str] = field(default_factory=list)
    defs: list[tuple[str, ...]] = field(default_factory=list)
    uses: list[tuple[str, ...]] = field(default_factory=list)
    registers: dict[str, Register] = field(default_factory=dict)
    edges: list[Edge] = field(default_factory=list)
    producer: dict[str, tuple[int, int]] = field(default_factory=dict)  # reg -> (inst, latency)
    live_in: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.texts)

    def reg(self, file: str, width: int) -> str:
        name = f"%{len(self.registers)}"
        self.registers[name] = Register(file, width)
        return name

    def live_in_reg(self, file: str, width: int) -> str:
        r = self.reg(file, width)
        self.live_in.append(r)
        return r

    def emit(
        self,
        opcode: str,
        dst: tuple[str, int] | None,
        operands: list[str | int | float],
        latency: int,
        suffix: str = ", implicit $exec",
    ) -> tuple[str | None, int]:
        """Append one instruction; returns (defined register or None, instruction id)."""
        i = len(self.texts)
        used = tuple(dict.fromkeys(o for o in operands if isinstance(o, str)))
        ops = ", ".join(str(o) for o in operands)
        out = None
        if dst is not None:
            out = self.reg(*dst)
            self.texts.append(f"{out}:{_CLASS[dst]} = {opcode} {ops}{suffix}")
            self.producer[out] = (i, latency)
        else:
            self.texts.append(f"{opcode} {ops}{suffix}")
        self.defs.append(() if out is None else (out,))
        self.uses.append(used)
        for r in used:
            if r in self.producer:
                src, lat = self.producer[r]
                self.edges.append(Edge(src=src, dst=i, latency=lat, kind="data"))
        return out, i


@dataclass
class _Chain:
    f64: bool
    address: str | None = None
    pending: list[str] = field(default_factory=list)  # loaded values not yet combined
    value: str | None = None
    loads: list[int] = field(default_factory=list)  # instruction ids of its loads


def generate_region(seed: int, n: int, *, name: str | None = None, **knobs) -> Region:
    """A random GPU-like region of exactly ``n`` instructions (deterministic per arguments).

    Args:
      seed: any integer >= 0 (NumPy ``default_rng`` seed).
      n: instruction count, 2..`MAX_INSTRUCTIONS`.
      name: region name; default ``gen:<seed>:n<n>``.
      **knobs: fields of `Knobs` (unknown names raise ``ValueError``).

    Returns:
      A validated `Region` with files ``VGPR`` and ``SGPR``.
    """
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or not 2 <= n <= MAX_INSTRUCTIONS:
        raise ValueError(f"generate_region: n={n!r} is not an integer in 2..{MAX_INSTRUCTIONS}")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"generate_region: seed={seed!r} is not an integer >= 0")
    k = _check_knobs(knobs)
    n = int(n)
    rng = np.random.default_rng(int(seed))
    b = _Builder(rng=rng)

    bases, scalars = _prologue(b, k, n)
    tid = b.live_in_reg("VGPR", 1)
    accs = [b.live_in_reg("VGPR", 1) for _ in range(rng.integers(0, 3))] if n >= 16 else []
    results: list[str] = []  # chain results available to later groups
    prev_stores: list[int] = []
    while len(b) < n:
        prev_stores = _group(b, n, k, bases, scalars, tid, accs, results, prev_stores)

    lt = {
        "VGPR": int(rng.integers(0, k.live_through[0] + 1)),
        "SGPR": int(rng.integers(0, k.live_through[1] + 1)),
    }
    return _finish(b, k, n, name or f"gen:{seed}:n{n}", lt)


def _prologue(b: _Builder, k: Knobs, n: int) -> tuple[list[str], list[str]]:
    """Kernel-argument loads. Returns (64-bit base pointers, 32-bit scalars) in SGPRs."""
    rng = b.rng
    if n < 16:  # small block: arguments already in registers
        bases = [b.live_in_reg("SGPR", 2) for _ in range(1 + int(rng.integers(0, 2)))]
        scalars = [b.live_in_reg("SGPR", 1) for _ in range(int(rng.integers(0, 2)))]
        return bases, scalars
    kernarg = b.live_in_reg("SGPR", 2)
    n_bases = 1 + int(rng.integers(0, 2 + min(2, n // 128)))
    n_scalars = int(rng.integers(int(n >= 64), 2 + min(3, n // 64)))
    offset = 36
    bases, scalars = [], []
    for _ in range(n_bases):
        lat = int(rng.integers(k.scalar_load_latency[0], k.scalar_load_latency[1] + 1))
        r, _ = b.emit(
            "S_LOAD_DWORDX2_IMM",
            ("SGPR", 2),
            [kernarg, offset, 0],
            lat,
            " :: (dereferenceable invariant load (s64), addrspace 4)",
        )
        bases.append(r)
        offset += 8
    for _ in range(n_scalars):
        lat = int(rng.integers(k.scalar_load_latency[0], k.scalar_load_latency[1] + 1))
        r, _ = b.emit(
            "S_LOAD_DWORD_IMM",
            ("SGPR", 1),
            [kernarg, offset, 0],
            lat,
            " :: (dereferenceable invariant load (s32), addrspace 4)",
        )
        scalars.append(r)
        offset += 4
    if scalars and rng.random() < 0.5:  # a little scalar ALU on the arguments
        r, _ = b.emit("S_LSHL_B32", ("SGPR", 1), [scalars[0], 2], 1, ", implicit-def dead $scc")
        scalars.append(r)
    return bases, scalars


def _operand(
    b: _Builder, k: Knobs, ch: _Chain, scalars: list[str], results: list[str], accs: list[str]
) -> str | float:
    """Second operand of an ALU step: a pending load, an earlier result, a scalar or a constant."""
    rng = b.rng
    if ch.pending:
        return ch.pending.pop(0)
    u = rng.random()
    if not ch.f64 and results and u < k.cross_chain_prob:
        j = int(rng.integers(0, len(results)))
        return results.pop(j) if rng.random() < 0.5 else results[j]
    if not ch.f64 and scalars and u < k.cross_chain_prob + k.scalar_operand_prob:
        return scalars[int(rng.integers(0, len(scalars)))]
    return float(rng.choice([0.5, 2.0, 1.0, -1.0, 4.0]))


def _group(
    b: _Builder,
    target: int,
    k: Knobs,
    bases: list[str],
    scalars: list[str],
    tid: str,
    accs: list[str],
    results: list[str],
    prev_stores: list[int],
) -> list[int]:
    """Emit one unrolled group layer by layer; returns the ids of its stores."""
    rng = b.rng
    g = int(rng.integers(k.group_size[0], k.group_size[1] + 1))
    g = max(1, min(g, (target - len(b)) // 5))  # small regions: a whole group still fits
    chains = [_Chain(f64=bool(rng.random() < k.f64_chain_prob)) for _ in range(g)]
    # Layer 0: the group's index (thread id + a scalar offset or a constant).
    off = scalars[int(rng.integers(0, len(scalars)))] if scalars else int(rng.integers(1, 64)) * 64
    idx, _ = b.emit("V_ADD_U32_e32", ("VGPR", 1), [off, tid], 1)
    # Layer 1: per-chain 64-bit addresses.
    for c, ch in enumerate(chains):
        base = bases[int(rng.integers(0, len(bases)))]
        ch.address, _ = b.emit(
            "V_MAD_U64_U32_e64", ("VGPR", 2), [idx, 4 * (c + 1), base], 2, ", 0, implicit $exec"
        )
    _load_layer(b, k, chains)
    for i in (ch.loads[0] for ch in chains if prev_stores and rng.random() < k.memory_edge_prob):
        b.edges.append(
            Edge(
                src=prev_stores[int(rng.integers(0, len(prev_stores)))],
                dst=i,
                latency=1,
                kind="other",
            )
        )
    # Layers 3..: ALU steps, round-robin over chains (a chain consumes all its loads).
    lengths = [
        max(int(rng.integers(k.chain_length[0], k.chain_length[1] + 1)), len(ch.pending))
        for ch in chains
    ]
    for step in range(max(lengths)):
        for ch, length in zip(chains, lengths, strict=True):
            if step < length:
                _alu_step(b, k, ch, scalars, results, accs)
    stores = _tail(b, k, chains, accs, results)
    return stores or prev_stores


def _load_layer(b: _Builder, k: Knobs, chains: list[_Chain]) -> None:
    """Layer 2 of a group: each chain's vector loads (long latency) from its address; the
    first becomes the chain's value, the rest wait in ``pending``."""
    rng = b.rng
    for ch in chains:
        for j in range(int(rng.integers(k.loads_per_chain[0], k.loads_per_chain[1] + 1))):
            lat = int(rng.integers(k.load_latency[0], k.load_latency[1] + 1))
            opc, w, s = ("GLOBAL_LOAD_DWORDX2", 2, 64) if ch.f64 else ("GLOBAL_LOAD_DWORD", 1, 32)
            r, i = b.emit(
                opc,
                ("VGPR", w),
                [ch.address, (8 if ch.f64 else 4) * j, 0],
                lat,
                f", implicit $exec :: (load (s{s}), addrspace 1)",
            )
            ch.pending.append(r)
            ch.loads.append(i)
        ch.value = ch.pending.pop(0)


def _tail(
    b: _Builder, k: Knobs, chains: list[_Chain], accs: list[str], results: list[str]
) -> list[int]:
    """The end of a group: accumulate, publish or store each chain's result; the ids of the
    stores."""
    rng = b.rng
    stores: list[int] = []
    for ch in chains:
        val = ch.value
        if ch.f64 and (accs or rng.random() >= k.store_prob):
            val, _ = b.emit("V_CVT_F32_F64_e32", ("VGPR", 1), [val], 4)
        if accs and not ch.f64 and rng.random() < k.accumulate_prob:
            a = int(rng.integers(0, len(accs)))
            accs[a], _ = b.emit("V_ADD_F32_e32", ("VGPR", 1), [accs[a], val], 1)
        elif (k.store_prob > 0 and len(results) >= _MAX_RESULTS) or rng.random() < k.store_prob:
            opc, s = (
                ("GLOBAL_STORE_DWORDX2", 64)
                if b.registers[val].width == 2
                else ("GLOBAL_STORE_DWORD", 32)
            )
            _, i = b.emit(
                opc,
                None,
                [ch.address, val, 0, 0],
                0,
                f", implicit $exec :: (store (s{s}), addrspace 1)",
            )
            stores.append(i)
            others = [j for c in chains if c is not ch for j in c.loads]
            if others and rng.random() < k.memory_edge_prob:
                b.edges.append(
                    Edge(
                        src=others[int(rng.integers(0, len(others)))],
                        dst=i,
                        latency=0,
                        kind="other",
                    )
                )
        else:
            results.append(val)
    return stores


def _alu_step(
    b: _Builder, k: Knobs, ch: _Chain, scalars: list[str], results: list[str], accs: list[str]
) -> None:
    rng = b.rng
    if ch.f64:
        if len(ch.pending) >= 2 and rng.random() < 0.5:
            x, y = ch.pending.pop(0), ch.pending.pop(0)
            ch.value, _ = b.emit(
                "V_FMA_F64_e64",
                ("VGPR", 2),
                [0, ch.value, 0, x, 0, y],
                4,
                ", 0, 0, implicit $mode, implicit $exec",
            )
            return
        opc, lat = _ALU_F64[int(rng.integers(0, len(_ALU_F64)))]
        y = ch.pending.pop(0) if ch.pending else 1.0
        ch.value, _ = b.emit(
            opc, ("VGPR", 2), [0, ch.value, 0, y], lat, ", 0, 0, implicit $mode, implicit $exec"
        )
        return
    if not ch.pending and rng.random() < 0.15:
        opc, lat = _UNARY_F32[int(rng.integers(0, len(_UNARY_F32)))]
        ch.value, _ = b.emit(opc, ("VGPR", 1), [ch.value], lat, ", implicit $mode, implicit $exec")
        return
    if len(ch.pending) >= 2 and rng.random() < 0.5:
        x, y = ch.pending.pop(0), ch.pending.pop(0)
        ch.value, _ = b.emit(
            "V_FMA_F32_e64",
            ("VGPR", 1),
            [0, x, 0, y, 0, ch.value],
            3,
            ", 0, 0, implicit $mode, implicit $exec",
        )
        return
    opc, lat = _ALU_F32[int(rng.integers(0, len(_ALU_F32)))]
    y = _operand(b, k, ch, scalars, results, accs)
    ch.value, _ = b.emit(opc, ("VGPR", 1), [y, ch.value], lat, ", implicit $mode, implicit $exec")


def _finish(b: _Builder, k: Knobs, n: int, name: str, live_through: dict[str, int]) -> Region:
    """Cut to the first ``n`` instructions (closed under predecessors) and build the Region."""
    rng = b.rng
    defs, uses = b.defs[:n], b.uses[:n]
    insts = [Instruction(t, d, u) for t, d, u in zip(b.texts[:n], defs, uses, strict=True)]
    edges = [e for e in b.edges if e.dst < n]
    used = {r for u in uses for r in u}
    defined = {r for d in defs for r in d}
    regs = {r: v for r, v in b.registers.items() if r in used or r in defined}
    live_in = sorted(r for r in b.live_in if r in used)
    live_out = {r for r in defined if r not in used}
    candidates = sorted(defined & used, key=lambda s: int(s[1:]))
    extra = int(rng.integers(0, 1 + min(k.extra_live_out, n // 16)))
    if candidates and extra:
        picks = rng.choice(len(candidates), size=min(extra, len(candidates)), replace=False)
        live_out.update(candidates[int(p)] for p in picks)
    return Region.build(
        name,
        insts,
        regs,
        edges,
        live_in=live_in,
        live_out=sorted(live_out),
        live_through=live_through,
    )


def generate_regions(
    seed: int, count: int, min_size: int = 2, max_size: int = 64, **knobs
) -> list[Region]:
    """``count`` regions with sizes drawn log-uniformly from ``min_size..max_size``.

    Region ``k`` is ``generate_region(child_seed_k, size_k, name=f"gen:{seed}:{k}", **knobs)``
    with child seeds from ``numpy.random.SeedSequence([seed, k])``; deterministic per seed.
    """
    if isinstance(count, bool) or not isinstance(count, int | np.integer) or count < 0:
        raise ValueError(f"generate_regions: count={count!r} is not an integer >= 0")
    if not 2 <= min_size <= max_size <= MAX_INSTRUCTIONS:
        raise ValueError(
            f"generate_regions: need 2 <= min_size ({min_size}) <= max_size ({max_size}) "
            f"<= {MAX_INSTRUCTIONS}"
        )
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"generate_regions: seed={seed!r} is not an integer >= 0")
    rng = np.random.default_rng(int(seed))
    logs = rng.uniform(np.log(min_size), np.log(max_size + 1), size=int(count))
    sizes = np.clip(np.floor(np.exp(logs)).astype(np.int64), min_size, max_size)
    out = []
    for i, size in enumerate(sizes):
        child = int(np.random.SeedSequence([int(seed), i]).generate_state(1, np.uint32)[0])
        out.append(generate_region(child, int(size), name=f"gen:{seed}:{i}", **knobs))
    return out
