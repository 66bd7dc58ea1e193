"""PTX front end: classification table and kernel strings of llc -march=nvptx64 output."""

from __future__ import annotations

from pathlib import Path

import pytest

from jaxsched.io.mir_llc import find_llc, run_llc
from jaxsched.io.ptx import PtxError, classify, kernel_string, read_ptx

DATA = Path(__file__).resolve().parent / "data"
needs_llc = pytest.mark.skipif(find_llc() is None, reason="llc (LLVM 14+) is not installed")


@pytest.mark.parametrize(
    ("text", "unit"),
    [
        ("ld.global.f32 %f1, [%rd8]", "L"),
        ("st.shared.u32 [%r1], %r2", "L"),
        ("atom.global.add.u32 %r1, [%rd1], 1", "L"),
        ("@%p1 bra LBB1_3", "C"),
        ("setp.lt.s32 %p1, %r3, 1", "C"),
        ("mov.u32 %r1, %tid.x", "C"),
        ("fma.rn.f32 %f1, %f2, %f3, %f4", "C"),
        ("cvta.to.global.u64 %rd3, %rd2", "C"),
        ("sin.approx.f32 %f2, %f1", "S"),
        ("ex2.approx.ftz.f32 %f3, %f2", "S"),
        ("rsqrt.approx.f32 %f4, %f3", "S"),
        ("sqrt.approx.f32 %f4, %f3", "S"),
        ("rcp.approx.f32 %f4, %f3", "S"),
        ("fma.rn.f64 %fd1, %fd2, %fd3, %fd4", "D"),
        ("rcp.rn.f64 %fd1, %fd2", "D"),
        ("cvt.rn.f32.f64 %f5, %fd3", "D"),
        ("setp.lt.f64 %p1, %fd1, %fd2", "D"),
        ("mov.f64 %fd1, %fd2", "C"),
        ("ld.global.f64 %fd1, [%rd10]", "L"),
    ],
)
def test_classify_table(text: str, unit: str):
    assert classify(text) == unit


_HAND = """
.version 6.0
.target sm_70
.address_size 64
.func (.param .b32 func_retval0) helper(.param .b32 helper_param_0);
.visible .entry straight(.param .u64 p)
{
	.reg .f32 %f<4>;
	.reg .b64 %rd<3>;
	ld.param.u64 %rd1, [p]; cvta.to.global.u64 %rd2, %rd1;
	ld.global.f32 %f1, [%rd2];
	{ // inline scope
	.reg .b32 temp;
	lg2.approx.f32 %f2, %f1;
	}
	st.global.f32 [%rd2], %f2;
	ret;
}
"""


def test_hand_written_ptx():
    (fn,) = read_ptx(_HAND)
    assert fn.name == "straight" and fn.kind == "entry"
    assert kernel_string(_HAND) == "LCLSLC"
    assert kernel_string(_HAND, "straight") == "LCLSLC"
    with pytest.raises(PtxError, match="no function 'nope'"):
        kernel_string(_HAND, "nope")
    with pytest.raises(PtxError, match="not closed"):
        kernel_string(_HAND[: _HAND.index("ret;")])


@needs_llc
def test_llc_ptx_kernel_strings(tmp_path: Path):
    ptx = run_llc(["-march=nvptx64", "-mcpu=sm_70", str(DATA / "nvptx_kernels.ll"), "-o", "-"])
    path = tmp_path / "k.ptx"
    path.write_text(ptx)
    fns = {f.name: f for f in read_ptx(ptx)}
    assert set(fns) == {"mixed", "loop"}
    s = kernel_string(str(path), "mixed")
    n_instr = sum(len(b.instructions) for b in fns["mixed"].blocks)
    assert len(s) == n_instr and set(s) == set("LCSD")
    assert s.count("S") == 3  # sin, ex2, rsqrt
    assert s.count("D") == 3  # mul.f64, add.f64, cvt.f32.f64
    assert s.count("L") == 6  # three ld.param, two ld.global, one st.global
    assert s == kernel_string(path, "mixed")  # a PathLike works too
    with pytest.raises(PtxError, match="not straight-line"):
        kernel_string(str(path), "loop")
    with pytest.raises(PtxError, match="several functions"):
        kernel_string(str(path))
    body = [b.name for b in fns["loop"].blocks if any("bra" in t for t, _ in b.instructions)]
    loop_body = kernel_string(str(path), "loop", path=body[-1])
    assert loop_body.count("S") == 1 and loop_body.count("L") == 2
    assert loop_body.endswith("C")  # the back branch
    both = kernel_string(str(path), "loop", path=[fns["loop"].blocks[0].name, body[-1]])
    assert both.endswith(loop_body)
    with pytest.raises(PtxError, match="no basic block"):
        kernel_string(str(path), "loop", path="LBB9_9")
