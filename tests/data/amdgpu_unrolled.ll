; Straight-line unrolled dot products: many independent 32- and 64-bit loads (pressure).
target triple = "amdgcn-amd-amdhsa"

declare i32 @llvm.amdgcn.workitem.id.x()

define amdgpu_kernel void @unrolled(<4 x float> addrspace(1)* %a, <4 x float> addrspace(1)* %b,
                                    double addrspace(1)* %d, float addrspace(1)* %out) {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %i0 = mul i32 %tid, 4
  %i1 = add i32 %i0, 1
  %i2 = add i32 %i0, 2
  %i3 = add i32 %i0, 3
  %pa0 = getelementptr <4 x float>, <4 x float> addrspace(1)* %a, i32 %i0
  %pa1 = getelementptr <4 x float>, <4 x float> addrspace(1)* %a, i32 %i1
  %pa2 = getelementptr <4 x float>, <4 x float> addrspace(1)* %a, i32 %i2
  %pa3 = getelementptr <4 x float>, <4 x float> addrspace(1)* %a, i32 %i3
  %pb0 = getelementptr <4 x float>, <4 x float> addrspace(1)* %b, i32 %i0
  %pb1 = getelementptr <4 x float>, <4 x float> addrspace(1)* %b, i32 %i1
  %pb2 = getelementptr <4 x float>, <4 x float> addrspace(1)* %b, i32 %i2
  %pb3 = getelementptr <4 x float>, <4 x float> addrspace(1)* %b, i32 %i3
  %a0 = load <4 x float>, <4 x float> addrspace(1)* %pa0
  %a1 = load <4 x float>, <4 x float> addrspace(1)* %pa1
  %a2 = load <4 x float>, <4 x float> addrspace(1)* %pa2
  %a3 = load <4 x float>, <4 x float> addrspace(1)* %pa3
  %b0 = load <4 x float>, <4 x float> addrspace(1)* %pb0
  %b1 = load <4 x float>, <4 x float> addrspace(1)* %pb1
  %b2 = load <4 x float>, <4 x float> addrspace(1)* %pb2
  %b3 = load <4 x float>, <4 x float> addrspace(1)* %pb3
  %m0 = fmul <4 x float> %a0, %b0
  %m1 = fmul <4 x float> %a1, %b1
  %m2 = fmul <4 x float> %a2, %b2
  %m3 = fmul <4 x float> %a3, %b3
  %s01 = fadd <4 x float> %m0, %m1
  %s23 = fadd <4 x float> %m2, %m3
  %s = fadd <4 x float> %s01, %s23
  %e0 = extractelement <4 x float> %s, i32 0
  %e1 = extractelement <4 x float> %s, i32 1
  %e2 = extractelement <4 x float> %s, i32 2
  %e3 = extractelement <4 x float> %s, i32 3
  %t0 = fadd float %e0, %e1
  %t1 = fadd float %e2, %e3
  %t = fadd float %t0, %t1
  %pd = getelementptr double, double addrspace(1)* %d, i32 %tid
  %dv = load double, double addrspace(1)* %pd
  %dq = fmul double %dv, %dv
  %df = fptrunc double %dq to float
  %res = fadd float %t, %df
  %po = getelementptr float, float addrspace(1)* %out, i32 %tid
  store float %res, float addrspace(1)* %po
  ret void
}
