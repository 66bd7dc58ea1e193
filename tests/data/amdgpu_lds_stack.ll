; LDS, a barrier, private (stack) stores at disjoint offsets, atomics and a call.
target triple = "amdgcn-amd-amdhsa"

@tile = internal addrspace(3) global [256 x float] undef, align 4

declare i32 @llvm.amdgcn.workitem.id.x()
declare void @llvm.amdgcn.s.barrier()
declare float @llvm.exp2.f32(float)

define void @helper(float addrspace(1)* %p, float %v) noinline {
  %old = load float, float addrspace(1)* %p
  %n = fadd float %old, %v
  store float %n, float addrspace(1)* %p
  ret void
}

define amdgpu_kernel void @lds_stack(float addrspace(1)* %in, float addrspace(1)* %out,
                                     i32 addrspace(1)* %counter, i32 %k) {
entry:
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %slot = alloca [4 x i32], align 4, addrspace(5)
  %pin = getelementptr float, float addrspace(1)* %in, i32 %tid
  %v = load float, float addrspace(1)* %pin
  %e = call float @llvm.exp2.f32(float %v)
  %pl = getelementptr [256 x float], [256 x float] addrspace(3)* @tile, i32 0, i32 %tid
  store float %e, float addrspace(3)* %pl
  %s1 = getelementptr [4 x i32], [4 x i32] addrspace(5)* %slot, i32 0, i32 1
  %s3 = getelementptr [4 x i32], [4 x i32] addrspace(5)* %slot, i32 0, i32 3
  store volatile i32 %k, i32 addrspace(5)* %s1
  store volatile i32 %tid, i32 addrspace(5)* %s3
  call void @llvm.amdgcn.s.barrier()
  %nb = xor i32 %tid, 1
  %pn = getelementptr [256 x float], [256 x float] addrspace(3)* @tile, i32 0, i32 %nb
  %w = load float, float addrspace(3)* %pn
  %sum = fadd float %w, %e
  %x1 = load volatile i32, i32 addrspace(5)* %s1
  %x3 = load volatile i32, i32 addrspace(5)* %s3
  %xs = add i32 %x1, %x3
  %xf = sitofp i32 %xs to float
  %r = fmul float %sum, %xf
  %old = atomicrmw add i32 addrspace(1)* %counter, i32 1 monotonic
  %c = icmp eq i32 %old, 0
  br i1 %c, label %first, label %done

first:
  %po = getelementptr float, float addrspace(1)* %out, i32 %tid
  call void @helper(float addrspace(1)* %po, float %r)
  br label %done

done:
  %po2 = getelementptr float, float addrspace(1)* %out, i32 %nb
  store float %r, float addrspace(1)* %po2
  ret void
}
