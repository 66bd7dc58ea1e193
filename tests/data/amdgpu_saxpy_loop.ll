; A small AMDGPU kernel: several basic blocks, loads, stores, 64-bit values and a loop.
target triple = "amdgcn-amd-amdhsa"

declare i32 @llvm.amdgcn.workitem.id.x()
declare float @llvm.sqrt.f32(float)

define amdgpu_kernel void @saxpy_loop(float addrspace(1)* %x, float addrspace(1)* %y,
                                      double addrspace(1)* %d, i64 addrspace(1)* %q,
                                      float %a, i32 %n) {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %tid64 = zext i32 %tid to i64
  %px = getelementptr float, float addrspace(1)* %x, i64 %tid64
  %py = getelementptr float, float addrspace(1)* %y, i64 %tid64
  %pd = getelementptr double, double addrspace(1)* %d, i64 %tid64
  %pq = getelementptr i64, i64 addrspace(1)* %q, i64 %tid64
  %vx = load float, float addrspace(1)* %px
  %vy = load float, float addrspace(1)* %py
  %vd = load double, double addrspace(1)* %pd
  %vq = load i64, i64 addrspace(1)* %pq
  %ax = fmul float %a, %vx
  %s = fadd float %ax, %vy
  %dd = fmul double %vd, %vd
  %q2 = mul i64 %vq, 7
  %cmp = icmp sgt i32 %n, 0
  br i1 %cmp, label %loop, label %exit

loop:
  %i = phi i32 [ 0, %entry ], [ %inext, %loop ]
  %acc = phi float [ %s, %entry ], [ %acc2, %loop ]
  %dacc = phi double [ %dd, %entry ], [ %dacc2, %loop ]
  %fi = sitofp i32 %i to float
  %t = fmul float %acc, %fi
  %r = call float @llvm.sqrt.f32(float %t)
  %acc2 = fadd float %r, %a
  %di = sitofp i32 %i to double
  %dacc2 = fadd double %dacc, %di
  %inext = add i32 %i, 1
  %done = icmp eq i32 %inext, %n
  br i1 %done, label %exit, label %loop

exit:
  %res = phi float [ %s, %entry ], [ %acc2, %loop ]
  %resd = phi double [ %dd, %entry ], [ %dacc2, %loop ]
  store float %res, float addrspace(1)* %py
  store double %resd, double addrspace(1)* %pd
  %q3 = add i64 %q2, %tid64
  store i64 %q3, i64 addrspace(1)* %pq
  ret void
}
