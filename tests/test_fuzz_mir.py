"""Fuzzing the MIR reader with a seeded mutator over llc's own output.

Every mutated MIR file (lines deleted, repeated, swapped, dedented or cut, junk lines, edited
characters, bad bytes) must either raise `MirError` naming the file and a line, or be read so
that every instruction line of every body belongs to the parse; then scheduling it with a random
legal order and writing it back keeps every instruction of every block exactly once.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from pathlib import Path

import pytest

from jaxsched.io.mir import MirError, read_mir, schedule_orders, write_mir
from jaxsched.io.mir_llc import find_llc, ll_to_mir
from jaxsched.machines.model import gfx906
from jaxsched.verify import verify_order

DATA = Path(__file__).resolve().parent / "data"
MACHINE = gfx906()

_JUNK = [
    "garbage",
    "...",
    "---",
    "--- |",
    "bb.9:",
    "  bb.0:",
    "  bb.77:",
    "    S_NOP 0",
    "S_NOP 0",
    "    %99:vgpr_32 = COPY %1",
    "    %5:vgpr_32 = V_ADD_U32_e32 %3 %4, implicit $exec",
    "    successors: %bb.42",
    "    liveins: $vgpr0",
    "    }",
    "    BUNDLE {",
    "\tS_NOP 0",
    " x",
    "name: again",
    "body: |",
    "registers:",
    "# a comment",
    "    ; a comment",
    "    DBG_VALUE $noreg, $noreg",
    "    %7:vgpr_32 = ,",
    "  define void @ghost() {",
]
_CHARS = [*",%$=:(){}[] \t;.\"'-", "\u2028", "\x00", "é"]
_BYTES = [b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x80"]


@pytest.fixture(scope="module")
def corpus() -> list[str]:
    texts = [(DATA / "hand_written.mir").read_text()]
    if find_llc() is not None:
        texts += [ll_to_mir(p) for p in sorted(DATA.glob("amdgpu_*.ll"))]
    return texts


def _body_lines(lines: list[str]) -> list[int]:
    """Indices of the lines inside ``body:`` blocks (where mutations matter most)."""
    out, inside = [], False
    for k, ln in enumerate(lines):
        if ln.strip() and not ln.startswith((" ", "\t")):
            inside = ln.startswith("body:")
        elif inside:
            out.append(k)
    return out


def _mutate_lines(rng: random.Random, lines: list[str]) -> list[str]:
    body = _body_lines(lines) or list(range(len(lines)))
    for _ in range(rng.randint(1, 3)):
        if not lines:
            break
        k = rng.choice(body) if rng.random() < 0.7 else rng.randrange(len(lines))
        k = min(k, len(lines) - 1)
        op = rng.randrange(7)
        if op == 0:
            del lines[k]
        elif op == 1:
            lines.insert(k, lines[k])
        elif op == 2:
            j = min(len(lines) - 1, k + rng.choice([1, 1, 2, 5]))
            lines[k], lines[j] = lines[j], lines[k]
        elif op == 3:
            lines.insert(k, rng.choice(_JUNK) + "\n")
        elif op == 4:
            lines[k] = lines[k].lstrip(" ") if rng.random() < 0.5 else lines[k][1:]
        elif op == 5:
            line = lines[k]
            i = rng.randrange(len(line) + 1)
            lines[k] = line[:i] + rng.choice(_CHARS) + line[i + rng.randrange(2) :]
        else:
            del lines[k + 1 :]
    return lines


def _case(rng: random.Random, corpus: list[str]) -> bytes:
    text = rng.choice(corpus)
    if rng.random() < 0.85:
        text = "".join(_mutate_lines(rng, text.splitlines(keepends=True)))
    data = text.encode("utf-8", "surrogatepass")
    if rng.random() < 0.1:
        i = rng.randrange(len(data) + 1)
        data = data[:i] + rng.choice(_BYTES) + data[i:]
    if rng.random() < 0.1:
        data = data[: rng.randrange(len(data) + 1)]
    return data


# ---------------------------------------------------------------------- independent reading
def instruction_lines(text: str) -> tuple[set[int], dict[tuple[int, str], Counter]]:
    """(indices of instruction lines, per (document, block header) the multiset of instruction
    lines, ``killed`` flags removed) of a MIR text, read without the parser: inside ``body:``,
    every non-blank line that is not a comment, block header, ``successors:``/``liveins:`` or
    ``}``."""
    indices: set[int] = set()
    blocks: dict[tuple[int, str], Counter] = {}
    doc, inside, block = 0, False, ""
    for k, ln in enumerate(text.split("\n")):
        s = ln.strip()
        if ln.strip() and not ln.startswith((" ", "\t")):
            doc += ln.startswith("---")
            inside, block = ln.startswith("body:"), ""
            continue
        if not inside or not s or s.startswith(";") or s == "}":
            continue
        if re.fullmatch(r"bb\.\d+.*:", s):
            block = s
        elif not s.startswith(("successors:", "liveins:")):
            indices.add(k)
            # write_mir may move a ``killed`` flag to the new last read: not part of identity
            blocks.setdefault((doc, block), Counter())[s.replace("killed ", "")] += 1
    return indices, blocks


def _parsed_lines(module) -> set[int]:
    out: set[int] = set()
    for fn in module.functions:
        for b in fn.blocks:
            for ins, trailing in zip(b.instrs, b.trailing, strict=True):
                out.add(ins.line)
                out |= {x for x in trailing if module.lines[x].strip() not in ("}", "")}
                out -= {x for x in trailing if module.lines[x].strip().startswith(";")}
    return out


def _random_topological(rng: random.Random):
    def scheduler(regions):
        orders = []
        for r in regions:
            indeg = [len(p) for p in r.predecessors()]
            ready = [i for i, d in enumerate(indeg) if d == 0]
            order = []
            while ready:
                i = ready.pop(rng.randrange(len(ready)))
                order.append(i)
                for j, _ in r.successors()[i]:
                    indeg[j] -= 1
                    if indeg[j] == 0:
                        ready.append(j)
            orders.append(order)
        return orders

    return scheduler


def _check(path: Path, rng: random.Random) -> str:
    try:
        module = read_mir(path)
    except MirError as e:
        msg = str(e)
        assert re.search(re.escape(path.name) + r"[^:]*:\d+", msg), msg
        assert "\n" not in msg and len(msg) < 1000, msg
        return "rejected"
    text = module.text
    lines, blocks = instruction_lines(text)
    assert _parsed_lines(module) == lines, "parser and file disagree on instruction lines"
    orders, _ = schedule_orders(module, _random_topological(rng), name="random")
    for mr, order in zip(module.regions, orders, strict=True):
        if order is not None:
            verify_order(mr.region, MACHINE, list(mr.model_order(order)))
    out = write_mir(module, orders)
    assert instruction_lines(out)[1] == blocks, "an instruction was lost or repeated"
    again = read_mir(f"{path}.out", text=out)
    assert [len(r) for r in again.regions] == [len(r) for r in module.regions]
    return "accepted"


def _run(corpus: list[str], seeds: range, tmp_path: Path) -> dict[str, int]:
    counts = {"rejected": 0, "accepted": 0}
    for seed in seeds:
        rng = random.Random(seed)
        data = _case(rng, corpus)
        path = tmp_path / f"case{seed}.mir"
        path.write_bytes(data)
        try:
            counts[_check(path, rng)] += 1
        except Exception as e:
            raise AssertionError(f"seed {seed}: {type(e).__name__}: {e}") from e
        path.unlink()
    return counts


def test_fuzz_mir_files(corpus, tmp_path):
    counts = _run(corpus, range(300), tmp_path)
    assert counts["rejected"] > 50 and counts["accepted"] > 50, counts


@pytest.mark.slow
def test_fuzz_mir_files_long(corpus, tmp_path):
    """The module's property on 1,000 more mutated files."""
    counts = _run(corpus, range(300, 1300), tmp_path)
    assert counts["rejected"] > 200 and counts["accepted"] > 150, counts
