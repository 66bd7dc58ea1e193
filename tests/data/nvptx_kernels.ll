; NVPTX kernels for the PTX front end: straight-line mixed L/C/S/D code and a loop.
target triple = "nvptx64-nvidia-cuda"

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare float @llvm.nvvm.sin.approx.f(float)
declare float @llvm.nvvm.ex2.approx.f(float)
declare float @llvm.nvvm.rsqrt.approx.f(float)

define void @mixed(float* %x, double* %d, float* %out) {
entry:
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %px = getelementptr float, float* %x, i32 %tid
  %pd = getelementptr double, double* %d, i32 %tid
  %v = load float, float* %px
  %w = load double, double* %pd
  %s = call float @llvm.nvvm.sin.approx.f(float %v)
  %e = call float @llvm.nvvm.ex2.approx.f(float %s)
  %r = call float @llvm.nvvm.rsqrt.approx.f(float %e)
  %dw = fmul double %w, %w
  %dd = fadd double %dw, 1.0
  %df = fptrunc double %dd to float
  %a = fadd float %r, %df
  %po = getelementptr float, float* %out, i32 %tid
  store float %a, float* %po
  ret void
}

define void @loop(float* %x, i32 %n) {
entry:
  %c0 = icmp sgt i32 %n, 0
  br i1 %c0, label %body, label %exit
body:
  %i = phi i32 [ 0, %entry ], [ %i2, %body ]
  %p = getelementptr float, float* %x, i32 %i
  %v = load float, float* %p
  %m = fmul float %v, %v
  %q = call float @llvm.nvvm.ex2.approx.f(float %m)
  store float %q, float* %p
  %i2 = add i32 %i, 1
  %c = icmp slt i32 %i2, %n
  br i1 %c, label %body, label %exit
exit:
  ret void
}

!nvvm.annotations = !{!0, !1}
!0 = !{void (float*, double*, float*)* @mixed, !"kernel", i32 1}
!1 = !{void (float*, i32)* @loop, !"kernel", i32 1}
