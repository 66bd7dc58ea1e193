"""MIR of LLVM 15, 16 and 19: read, scheduled, written back, and accepted by the same llc's
machine verifier (``-start-after=machine-scheduler -verify-machineinstrs``); kill flags."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

from jaxsched.cli.main import main
from jaxsched.io.mir import find_llc, ll_to_mir, mir_to_asm, read_mir, write_mir

DATA = Path(__file__).resolve().parent / "data"
KERNELS = [DATA / "real" / "nn.ll", DATA / "real" / "histo_final_base.ll"]
VERSIONS = (15, 16, 19)


def llc_of(version: int) -> str | None:
    """The llc of LLVM ``version`` (Debian's /usr/lib/llvm-N or llc-N on the PATH), or None."""
    for p in (f"/usr/lib/llvm-{version}/bin/llc", shutil.which(f"llc-{version}")):
        if p and Path(p).exists():
            return p
    return None


def _llc_or_skip(version: int) -> str:
    llc = llc_of(version)
    if llc is None:
        pytest.skip(f"llc {version} is not installed (apt-get install llvm-{version})")
    return llc


def _random_topological(region, rng: random.Random) -> tuple[int, ...]:
    indeg = [len(p) for p in region.predecessors()]
    ready = [i for i, d in enumerate(indeg) if d == 0]
    order = []
    while ready:
        i = ready.pop(rng.randrange(len(ready)))
        order.append(i)
        for j, _ in region.successors()[i]:
            indeg[j] -= 1
            if indeg[j] == 0:
                ready.append(j)
    return tuple(order)


_KILLS = """\
---
name:            kills
registers:
  - { id: 0, class: sreg_32 }
  - { id: 1, class: sreg_32 }
  - { id: 2, class: sreg_32 }
  - { id: 3, class: sreg_32 }
body:             |
  bb.0:
    liveins: $sgpr0, $sgpr1
    %0:sreg_32 = COPY $sgpr0
    %1:sreg_32 = COPY $sgpr1
    S_CMP_GE_U32 %0, %1, implicit-def $scc
    %2:sreg_32 = S_CSELECT_B32 %0, %1, implicit $scc
    %3:sreg_32 = S_CSELECT_B32 %1, killed %0.sub0, implicit killed $scc
    S_ENDPGM 0, implicit %2, implicit %3
...
"""


def test_kill_flags_move_to_the_new_last_read():
    module = read_mir("kills.mir", text=_KILLS)
    assert len(module.regions) == 1
    out = write_mir(module, [(0, 1, 2, 4, 3)])
    lines = out.splitlines()
    # $scc: same register, moved; %0.sub0 vs %0: another sub-register, only cleared.
    assert "    %3:sreg_32 = S_CSELECT_B32 %1, %0.sub0, implicit $scc" in lines
    assert "    %2:sreg_32 = S_CSELECT_B32 %0, %1, implicit killed $scc" in lines
    assert out.count("killed") == 1
    assert write_mir(module, [(0, 1, 2, 3, 4)]) == _KILLS
    plain = _KILLS.replace("killed %0.sub0", "killed %0")
    out = write_mir(read_mir("kills.mir", text=plain), [(0, 1, 2, 4, 3)])
    assert "S_CSELECT_B32 killed %0, %1, implicit killed $scc" in out


@pytest.mark.parametrize("version", VERSIONS)
def test_random_orders_pass_the_machine_verifier(version: int):
    """Every region in random legal orders: the written MIR passes llc's verifier."""
    llc = _llc_or_skip(version)
    rng = random.Random(version)
    for ll in KERNELS:
        text = ll_to_mir(ll, llc=llc)
        module = read_mir(str(ll), text=text)
        assert module.regions and write_mir(module, [None] * len(module.regions)) == text
        for _ in range(2):
            orders = [
                _random_topological(r.region, rng) if r.region is not None else None
                for r in module.regions
            ]
            out = write_mir(module, orders)
            assert out != text
            assert "NumVgprs" in mir_to_asm(out, llc=llc, verify=True), ll.name


@pytest.mark.slow
@pytest.mark.parametrize("version", VERSIONS)
def test_mir_schedule_per_llvm_version(version: int, tmp_path: Path, capsys):
    """`mir schedule` of one .ll (through --llc) and one MIR file of that version, in one
    call; the same llc compiles both outputs with its machine verifier on."""
    llc = _llc_or_skip(version)
    mir = tmp_path / "histo_final_base.mir"
    mir.write_text(ll_to_mir(KERNELS[1], llc=llc))
    argv = ["mir", "schedule", str(KERNELS[0]), str(mir), "-o", str(tmp_path / "out")]
    assert main([*argv, "--llc", llc]) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert "2 of 2 files scheduled in one call" in out
    for name in ("nn.mir", "histo_final_base.mir"):
        asm = mir_to_asm((tmp_path / "out" / name).read_text(), llc=llc, verify=True)
        assert "NumVgprs" in asm


def test_llc_choice(monkeypatch, tmp_path: Path):
    fake = tmp_path / "my-llc"
    fake.write_text("#!/bin/sh\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("JAXSCHED_LLC", str(fake))
    assert find_llc() == str(fake)
    assert find_llc("/bin/true") == "/bin/true"
    monkeypatch.setenv("JAXSCHED_LLC", str(tmp_path / "none"))
    assert find_llc() is None
