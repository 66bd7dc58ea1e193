"""MIR of LLVM 15, 16 and 19: read, scheduled, written back, and accepted by the same llc's
machine verifier (``-start-after=machine-scheduler -verify-machineinstrs``); kill flags."""

from __future__ import annotations

import random
import re
import shutil
from pathlib import Path

import pytest

from jaxsched.cli.main import main
from jaxsched.io.mir import LlcError, read_mir, write_mir
from jaxsched.io.mir_llc import (
    find_llc,
    ll_to_mir,
    llc_candidates,
    llc_reading,
    mir_to_asm,
    run_llc,
)

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


def _fake_llc(path: Path, version: int, stderr: str, marker: Path | None = None) -> Path:
    """An llc of LLVM ``version`` that fails every compile, printing ``stderr`` (and touching
    ``marker``)."""
    touch = f": > {marker}\n" if marker else ""
    path.write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = --version ]; then echo "LLVM version {version}.0.0"; exit 0; fi\n'
        f"{touch}/bin/cat >&2 <<'EOF'\n{stderr}\nEOF\nexit 1\n"
    )
    path.chmod(0o755)
    return path


def _llc_path(monkeypatch, tmp_path: Path) -> Path:
    """An empty folder that is the whole PATH, with no llc chosen: the test puts llcs in it."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    monkeypatch.setenv("PATH", str(bin_))
    monkeypatch.delenv("JAXSCHED_LLC", raising=False)
    return bin_


def test_the_default_llc_passes_over_one_that_cannot_read_the_input(monkeypatch, tmp_path):
    """With no llc chosen, an llc that stops at a parse error of its input (an older LLVM
    reading a newer one's MIR), or one that fails otherwise, is passed over for the next by
    LLVM version; when none succeeds, each one's error is named. A chosen llc is the only one
    run."""
    real = next((p for v in reversed(VERSIONS) if (p := llc_of(v))), None)
    if real is None:
        pytest.skip("no llc of LLVM 15 or newer is installed")
    text = ll_to_mir(KERNELS[1], llc=real)
    bin_ = _llc_path(monkeypatch, tmp_path)
    old = _fake_llc(bin_ / "llc", 14, "error: /tmp/x/in.mir:6:73: expected type")
    (bin_ / "llc-19").symlink_to(real)
    assert llc_candidates() == [str(old), str(bin_ / "llc-19")]
    ours = mir_to_asm(text)
    assert "NumVgprs" in ours and ours == mir_to_asm(text, llc=real)
    # The chosen llc alone: its own parse error.
    with pytest.raises(LlcError, match=re.escape("in.mir:6:73: expected type")):
        mir_to_asm(text, llc=old)
    # Any failure (a crash too): the next llc is tried, newest last, until one succeeds.
    marker = tmp_path / "tried"
    _fake_llc(bin_ / "llc", 14, "LLVM ERROR: out of registers")
    _fake_llc(bin_ / "llc-15", 15, "error: in.mir:1:1: x", marker)
    assert mir_to_asm(text) == ours and marker.exists()
    # None succeeds: each llc named with its own error line.
    (bin_ / "llc-19").unlink()
    with pytest.raises(LlcError, match="llc failed, each installed one: ") as e:
        mir_to_asm(text)
    assert f"{bin_}/llc: LLVM ERROR: out of registers" in str(e.value)
    assert f"{bin_}/llc-15: error: in.mir:1:1: x" in str(e.value)


#: What llc prints when it aborts: its own error line, then a stack dump whose frames name
#: ``report_fatal_error``.
CRASH = """LLVM ERROR: Cannot select: intrinsic %llvm.amdgcn.mfma.f32.32x32x1f32
PLEASE submit a bug report to https://github.com/llvm/llvm-project/issues/ and include ...
Stack dump:
0.	Program arguments: llc -march=amdgcn -mcpu=gfx906 in.ll
1.	Running pass 'AMDGPU DAG->DAG Pattern Instruction Selection' on function '@k'
 #0 0x00007f0 llvm::sys::PrintStackTrace(llvm::raw_ostream&, int)
 #7 0x00007f7 llvm::report_fatal_error(llvm::Twine const&, bool)
 #8 0x00007f8 llvm::SelectionDAGISel::CannotYetSelect(llvm::SDNode*)"""


def test_an_llc_crash_is_reported_by_its_own_error_line(monkeypatch, tmp_path):
    """llc's ``LLVM ERROR:`` line, not a stack frame, is the error's message."""
    crash = _fake_llc(tmp_path / "llc", 19, CRASH)
    with pytest.raises(LlcError) as e:
        run_llc(["in.ll"], llc=crash)
    assert str(e.value).endswith(
        "LLVM ERROR: Cannot select: intrinsic %llvm.amdgcn.mfma.f32.32x32x1f32"
    )
    assert "#7" not in str(e.value) and "Stack dump" in e.value.stderr


def test_the_llc_reading_a_module_is_pinned(monkeypatch, tmp_path):
    """`llc_reading`: the chosen llc as is; else the first installed one that reads the
    MIR; every llc's error when none does."""
    real = next((p for v in VERSIONS if (p := llc_of(v))), None)
    if real is None:
        pytest.skip("no llc of LLVM 15 or newer is installed")
    text = ll_to_mir(KERNELS[1], llc=real)
    bin_ = _llc_path(monkeypatch, tmp_path)
    old = _fake_llc(bin_ / "llc", 14, "error: in.mir:6:73: expected type")
    assert llc_reading(text, llc=old) == str(old)
    assert llc_reading(text) == str(old)  # one candidate: nothing to choose
    (bin_ / "llc-19").symlink_to(real)
    assert llc_reading(text) == str(bin_ / "llc-19")
    (bin_ / "llc-19").unlink()
    _fake_llc(bin_ / "llc-16", 16, "error: in.mir:2:1: unknown key")
    with pytest.raises(LlcError, match="llc failed, each installed one: "):
        llc_reading(text)


def test_schedule_files_guards_newer_mir_with_the_default_llc(monkeypatch, tmp_path):
    """MIR of LLVM 15+ on a PATH whose default llc is older: the guard runs (no note)."""
    real = next((p for v in VERSIONS if (p := llc_of(v))), None)
    if real is None:
        pytest.skip("no llc of LLVM 15 or newer is installed")
    from jaxsched.mir_files import schedule_files

    mir = tmp_path / "histo_final_base.mir"
    mir.write_text(ll_to_mir(KERNELS[1], llc=real))
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    _fake_llc(bin_ / "llc", 14, f"{tmp_path}/in.mir:6:73: warning: ptr type is only supported")
    (bin_ / "llc-15").symlink_to(real)
    monkeypatch.setenv("PATH", str(bin_))
    monkeypatch.delenv("JAXSCHED_LLC", raising=False)
    (f,) = schedule_files([mir], scheduler=lambda rs: [tuple(range(len(r))) for r in rs])
    assert f.error is None and f.guard_note == "", f.guard_note
    assert f.guard and all(c.llvm.stats.vgprs > 0 and c.final.stats.vgprs > 0 for c in f.guard)
