; ModuleID = 'rodinia/opencl/nn/nearestNeighbor_kernel.cl'
source_filename = "rodinia/opencl/nn/nearestNeighbor_kernel.cl"
target datalayout = "e-p:64:64-p1:64:64-p2:32:32-p3:32:32-p4:64:64-p5:32:32-p6:32:32-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-v512:512-v1024:1024-v2048:2048-n32:64-S32-A5-G1-ni:7"
target triple = "amdgcn-amd-amdhsa"

%struct.latLong = type { float, float }

; Function Attrs: argmemonly mustprogress nofree norecurse nosync nounwind willreturn
define protected amdgpu_kernel void @NearestNeighbor(ptr addrspace(1) nocapture noundef readonly align 4 %0, ptr addrspace(1) nocapture noundef writeonly align 4 %1, i32 noundef %2, float noundef %3, float noundef %4) local_unnamed_addr #0 !kernel_arg_addr_space !5 !kernel_arg_access_qual !6 !kernel_arg_type !7 !kernel_arg_base_type !8 !kernel_arg_type_qual !9 {
  %6 = tail call ptr addrspace(4) @llvm.amdgcn.implicitarg.ptr()
  %7 = load i64, ptr addrspace(4) %6, align 8, !tbaa !10
  %8 = tail call i32 @llvm.amdgcn.workgroup.id.x()
  %9 = tail call align 4 ptr addrspace(4) @llvm.amdgcn.dispatch.ptr()
  %10 = getelementptr i8, ptr addrspace(4) %9, i64 4
  %11 = load i16, ptr addrspace(4) %10, align 4
  %12 = zext i16 %11 to i32
  %13 = mul i32 %8, %12
  %14 = tail call i32 @llvm.amdgcn.workitem.id.x(), !range !14
  %15 = add i32 %13, %14
  %16 = zext i32 %15 to i64
  %17 = add i64 %7, %16
  %18 = trunc i64 %17 to i32
  %19 = icmp slt i32 %18, %2
  br i1 %19, label %20, label %33

20:                                               ; preds = %5
  %21 = shl i64 %17, 32
  %22 = ashr exact i64 %21, 32
  %23 = getelementptr inbounds %struct.latLong, ptr addrspace(1) %0, i64 %22
  %24 = getelementptr inbounds float, ptr addrspace(1) %1, i64 %22
  %25 = load float, ptr addrspace(1) %23, align 4, !tbaa !15, !amdgpu.noclobber !18
  %26 = fsub float %3, %25
  %27 = getelementptr inbounds %struct.latLong, ptr addrspace(1) %0, i64 %22, i32 1
  %28 = load float, ptr addrspace(1) %27, align 4, !tbaa !19, !amdgpu.noclobber !18
  %29 = fsub float %4, %28
  %30 = fmul float %29, %29
  %31 = tail call float @llvm.fmuladd.f32(float %26, float %26, float %30)
  %32 = tail call float @llvm.sqrt.f32(float %31)
  store float %32, ptr addrspace(1) %24, align 4, !tbaa !20
  br label %33

33:                                               ; preds = %20, %5
  ret void
}

; Function Attrs: mustprogress nocallback nofree nosync nounwind readnone speculatable willreturn
declare float @llvm.fmuladd.f32(float, float, float) #1

; Function Attrs: mustprogress nocallback nofree nosync nounwind readnone speculatable willreturn
declare float @llvm.sqrt.f32(float) #1

; Function Attrs: mustprogress nofree nosync nounwind readnone speculatable willreturn
declare align 4 ptr addrspace(4) @llvm.amdgcn.dispatch.ptr() #2

; Function Attrs: mustprogress nofree nosync nounwind readnone speculatable willreturn
declare align 4 ptr addrspace(4) @llvm.amdgcn.implicitarg.ptr() #2

; Function Attrs: mustprogress nofree nosync nounwind readnone speculatable willreturn
declare i32 @llvm.amdgcn.workgroup.id.x() #2

; Function Attrs: mustprogress nofree nosync nounwind readnone speculatable willreturn
declare i32 @llvm.amdgcn.workitem.id.x() #2

attributes #0 = { argmemonly mustprogress nofree norecurse nosync nounwind willreturn "amdgpu-flat-work-group-size"="1,256" "frame-pointer"="none" "min-legal-vector-width"="0" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="gfx906" "target-features"="+16-bit-insts,+ci-insts,+dl-insts,+dot1-insts,+dot2-insts,+dot7-insts,+dpp,+flat-address-space,+gfx8-insts,+gfx9-insts,+s-memrealtime,+s-memtime-inst" "uniform-work-group-size"="true" }
attributes #1 = { mustprogress nocallback nofree nosync nounwind readnone speculatable willreturn }
attributes #2 = { mustprogress nofree nosync nounwind readnone speculatable willreturn }

!llvm.module.flags = !{!0, !1}
!opencl.ocl.version = !{!2}
!llvm.ident = !{!3, !4}

!0 = !{i32 1, !"wchar_size", i32 4}
!1 = !{i32 7, !"PIC Level", i32 1}
!2 = !{i32 1, i32 2}
!3 = !{!"Debian clang version 15.0.6"}
!4 = !{!"Debian clang version 15.0.5"}
!5 = !{i32 1, i32 1, i32 0, i32 0, i32 0}
!6 = !{!"none", !"none", !"none", !"none", !"none"}
!7 = !{!"LatLong*", !"float*", !"int", !"float", !"float"}
!8 = !{!"struct latLong*", !"float*", !"int", !"float", !"float"}
!9 = !{!"", !"", !"", !"", !""}
!10 = !{!11, !11, i64 0}
!11 = !{!"long", !12, i64 0}
!12 = !{!"omnipotent char", !13, i64 0}
!13 = !{!"Simple C/C++ TBAA"}
!14 = !{i32 0, i32 1024}
!15 = !{!16, !17, i64 0}
!16 = !{!"latLong", !17, i64 0, !17, i64 4}
!17 = !{!"float", !12, i64 0}
!18 = !{}
!19 = !{!16, !17, i64 4}
!20 = !{!17, !17, i64 0}
