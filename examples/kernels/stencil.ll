; ModuleID = 'stencil.cl'
source_filename = "stencil.cl"
target datalayout = "e-p:64:64-p1:64:64-p2:32:32-p3:32:32-p4:64:64-p5:32:32-p6:32:32-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-v512:512-v1024:1024-v2048:2048-n32:64-S32-A5-G1-ni:7"
target triple = "amdgcn-amd-amdhsa"

; Function Attrs: argmemonly nofree norecurse nosync nounwind
define protected amdgpu_kernel void @stencil7_z4(float addrspace(1)* noalias nocapture noundef readonly align 4 %0, float addrspace(1)* noalias nocapture noundef writeonly align 4 %1, i32 noundef %2, i32 noundef %3, i32 noundef %4, float noundef %5, float noundef %6) local_unnamed_addr #0 !kernel_arg_addr_space !4 !kernel_arg_access_qual !5 !kernel_arg_type !6 !kernel_arg_base_type !6 !kernel_arg_type_qual !7 !reqd_work_group_size !8 {
  %8 = tail call i32 @llvm.amdgcn.workgroup.id.x()
  %9 = shl i32 %8, 6
  %10 = tail call i32 @llvm.amdgcn.workitem.id.x(), !range !9
  %11 = add i32 %9, %10
  %12 = freeze i32 %11
  %13 = udiv i32 %12, %2
  %14 = mul i32 %13, %2
  %15 = sub i32 %12, %14
  %16 = urem i32 %13, %3
  %17 = mul i32 %3, %2
  %18 = udiv i32 %11, %17
  %19 = shl i32 %18, 2
  %20 = icmp ne i32 %15, 0
  %21 = icmp ne i32 %16, 0
  %22 = select i1 %20, i1 %21, i1 false
  %23 = add i32 %2, -1
  %24 = icmp ult i32 %15, %23
  %25 = and i1 %24, %22
  br i1 %25, label %26, label %158

26:                                               ; preds = %7
  %27 = add i32 %3, -1
  %28 = icmp ult i32 %16, %27
  %29 = icmp ne i32 %19, 0
  %30 = select i1 %28, i1 %29, i1 false
  %31 = add i32 %19, 4
  %32 = icmp ult i32 %31, %4
  %33 = select i1 %30, i1 %32, i1 false
  br i1 %33, label %34, label %158

34:                                               ; preds = %26
  %35 = mul i32 %19, %17
  %36 = mul i32 %16, %2
  %37 = add i32 %36, %15
  %38 = add i32 %37, %35
  %39 = sub i32 %38, %17
  %40 = zext i32 %39 to i64
  %41 = getelementptr inbounds float, float addrspace(1)* %0, i64 %40
  %42 = load float, float addrspace(1)* %41, align 4, !tbaa !10, !amdgpu.noclobber !14
  %43 = zext i32 %38 to i64
  %44 = getelementptr inbounds float, float addrspace(1)* %0, i64 %43
  %45 = load float, float addrspace(1)* %44, align 4, !tbaa !10, !amdgpu.noclobber !14
  %46 = add i32 %38, %17
  %47 = zext i32 %46 to i64
  %48 = getelementptr inbounds float, float addrspace(1)* %0, i64 %47
  %49 = load float, float addrspace(1)* %48, align 4, !tbaa !10, !amdgpu.noclobber !14
  %50 = add i32 %38, -1
  %51 = zext i32 %50 to i64
  %52 = getelementptr inbounds float, float addrspace(1)* %0, i64 %51
  %53 = load float, float addrspace(1)* %52, align 4, !tbaa !10, !amdgpu.noclobber !14
  %54 = add i32 %38, 1
  %55 = zext i32 %54 to i64
  %56 = getelementptr inbounds float, float addrspace(1)* %0, i64 %55
  %57 = load float, float addrspace(1)* %56, align 4, !tbaa !10, !amdgpu.noclobber !14
  %58 = fadd float %53, %57
  %59 = sub i32 %38, %2
  %60 = zext i32 %59 to i64
  %61 = getelementptr inbounds float, float addrspace(1)* %0, i64 %60
  %62 = load float, float addrspace(1)* %61, align 4, !tbaa !10, !amdgpu.noclobber !14
  %63 = fadd float %58, %62
  %64 = add i32 %38, %2
  %65 = zext i32 %64 to i64
  %66 = getelementptr inbounds float, float addrspace(1)* %0, i64 %65
  %67 = load float, float addrspace(1)* %66, align 4, !tbaa !10, !amdgpu.noclobber !14
  %68 = fadd float %63, %67
  %69 = fadd float %42, %68
  %70 = fadd float %49, %69
  %71 = fmul float %70, %6
  %72 = tail call float @llvm.fmuladd.f32(float %5, float %45, float %71)
  %73 = getelementptr inbounds float, float addrspace(1)* %1, i64 %43
  store float %72, float addrspace(1)* %73, align 4, !tbaa !10
  %74 = add i32 %46, %17
  %75 = zext i32 %74 to i64
  %76 = getelementptr inbounds float, float addrspace(1)* %0, i64 %75
  %77 = load float, float addrspace(1)* %76, align 4, !tbaa !10, !amdgpu.noclobber !14
  %78 = add i32 %46, -1
  %79 = zext i32 %78 to i64
  %80 = getelementptr inbounds float, float addrspace(1)* %0, i64 %79
  %81 = load float, float addrspace(1)* %80, align 4, !tbaa !10, !amdgpu.noclobber !14
  %82 = add i32 %46, 1
  %83 = zext i32 %82 to i64
  %84 = getelementptr inbounds float, float addrspace(1)* %0, i64 %83
  %85 = load float, float addrspace(1)* %84, align 4, !tbaa !10, !amdgpu.noclobber !14
  %86 = fadd float %81, %85
  %87 = sub i32 %46, %2
  %88 = zext i32 %87 to i64
  %89 = getelementptr inbounds float, float addrspace(1)* %0, i64 %88
  %90 = load float, float addrspace(1)* %89, align 4, !tbaa !10, !amdgpu.noclobber !14
  %91 = fadd float %86, %90
  %92 = add i32 %46, %2
  %93 = zext i32 %92 to i64
  %94 = getelementptr inbounds float, float addrspace(1)* %0, i64 %93
  %95 = load float, float addrspace(1)* %94, align 4, !tbaa !10, !amdgpu.noclobber !14
  %96 = fadd float %91, %95
  %97 = fadd float %45, %96
  %98 = fadd float %77, %97
  %99 = fmul float %98, %6
  %100 = tail call float @llvm.fmuladd.f32(float %5, float %49, float %99)
  %101 = getelementptr inbounds float, float addrspace(1)* %1, i64 %47
  store float %100, float addrspace(1)* %101, align 4, !tbaa !10
  %102 = add i32 %74, %17
  %103 = zext i32 %102 to i64
  %104 = getelementptr inbounds float, float addrspace(1)* %0, i64 %103
  %105 = load float, float addrspace(1)* %104, align 4, !tbaa !10, !amdgpu.noclobber !14
  %106 = add i32 %74, -1
  %107 = zext i32 %106 to i64
  %108 = getelementptr inbounds float, float addrspace(1)* %0, i64 %107
  %109 = load float, float addrspace(1)* %108, align 4, !tbaa !10, !amdgpu.noclobber !14
  %110 = add i32 %74, 1
  %111 = zext i32 %110 to i64
  %112 = getelementptr inbounds float, float addrspace(1)* %0, i64 %111
  %113 = load float, float addrspace(1)* %112, align 4, !tbaa !10, !amdgpu.noclobber !14
  %114 = fadd float %109, %113
  %115 = sub i32 %74, %2
  %116 = zext i32 %115 to i64
  %117 = getelementptr inbounds float, float addrspace(1)* %0, i64 %116
  %118 = load float, float addrspace(1)* %117, align 4, !tbaa !10, !amdgpu.noclobber !14
  %119 = fadd float %114, %118
  %120 = add i32 %74, %2
  %121 = zext i32 %120 to i64
  %122 = getelementptr inbounds float, float addrspace(1)* %0, i64 %121
  %123 = load float, float addrspace(1)* %122, align 4, !tbaa !10, !amdgpu.noclobber !14
  %124 = fadd float %119, %123
  %125 = fadd float %49, %124
  %126 = fadd float %105, %125
  %127 = fmul float %126, %6
  %128 = tail call float @llvm.fmuladd.f32(float %5, float %77, float %127)
  %129 = getelementptr inbounds float, float addrspace(1)* %1, i64 %75
  store float %128, float addrspace(1)* %129, align 4, !tbaa !10
  %130 = add i32 %102, %17
  %131 = zext i32 %130 to i64
  %132 = getelementptr inbounds float, float addrspace(1)* %0, i64 %131
  %133 = load float, float addrspace(1)* %132, align 4, !tbaa !10, !amdgpu.noclobber !14
  %134 = add i32 %102, -1
  %135 = zext i32 %134 to i64
  %136 = getelementptr inbounds float, float addrspace(1)* %0, i64 %135
  %137 = load float, float addrspace(1)* %136, align 4, !tbaa !10, !amdgpu.noclobber !14
  %138 = add i32 %102, 1
  %139 = zext i32 %138 to i64
  %140 = getelementptr inbounds float, float addrspace(1)* %0, i64 %139
  %141 = load float, float addrspace(1)* %140, align 4, !tbaa !10, !amdgpu.noclobber !14
  %142 = fadd float %137, %141
  %143 = sub i32 %102, %2
  %144 = zext i32 %143 to i64
  %145 = getelementptr inbounds float, float addrspace(1)* %0, i64 %144
  %146 = load float, float addrspace(1)* %145, align 4, !tbaa !10, !amdgpu.noclobber !14
  %147 = fadd float %142, %146
  %148 = add i32 %102, %2
  %149 = zext i32 %148 to i64
  %150 = getelementptr inbounds float, float addrspace(1)* %0, i64 %149
  %151 = load float, float addrspace(1)* %150, align 4, !tbaa !10, !amdgpu.noclobber !14
  %152 = fadd float %147, %151
  %153 = fadd float %77, %152
  %154 = fadd float %133, %153
  %155 = fmul float %154, %6
  %156 = tail call float @llvm.fmuladd.f32(float %5, float %105, float %155)
  %157 = getelementptr inbounds float, float addrspace(1)* %1, i64 %103
  store float %156, float addrspace(1)* %157, align 4, !tbaa !10
  br label %158

158:                                              ; preds = %34, %7, %26
  ret void
}

; Function Attrs: mustprogress nofree nosync nounwind readnone speculatable willreturn
declare i32 @llvm.amdgcn.workgroup.id.x() #1

; Function Attrs: mustprogress nofree nosync nounwind readnone speculatable willreturn
declare i32 @llvm.amdgcn.workitem.id.x() #1

; Function Attrs: mustprogress nocallback nofree nosync nounwind readnone speculatable willreturn
declare float @llvm.fmuladd.f32(float, float, float) #2

attributes #0 = { argmemonly nofree norecurse nosync nounwind "amdgpu-flat-work-group-size"="64,64" "frame-pointer"="none" "min-legal-vector-width"="0" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="gfx906" "target-features"="+16-bit-insts,+ci-insts,+dl-insts,+dot1-insts,+dot2-insts,+dot7-insts,+dpp,+flat-address-space,+gfx8-insts,+gfx9-insts,+s-memrealtime,+s-memtime-inst" "uniform-work-group-size"="true" }
attributes #1 = { mustprogress nofree nosync nounwind readnone speculatable willreturn }
attributes #2 = { mustprogress nocallback nofree nosync nounwind readnone speculatable willreturn }

!llvm.module.flags = !{!0, !1}
!opencl.ocl.version = !{!2}
!llvm.ident = !{!3}

!0 = !{i32 1, !"wchar_size", i32 4}
!1 = !{i32 7, !"PIC Level", i32 1}
!2 = !{i32 1, i32 2}
!3 = !{!"Debian clang version 15.0.6"}
!4 = !{i32 1, i32 1, i32 0, i32 0, i32 0, i32 0, i32 0}
!5 = !{!"none", !"none", !"none", !"none", !"none", !"none", !"none"}
!6 = !{!"float*", !"float*", !"uint", !"uint", !"uint", !"float", !"float"}
!7 = !{!"restrict const", !"restrict", !"", !"", !"", !"", !""}
!8 = !{i32 64, i32 1, i32 1}
!9 = !{i32 0, i32 1024}
!10 = !{!11, !11, i64 0}
!11 = !{!"float", !12, i64 0}
!12 = !{!"omnipotent char", !13, i64 0}
!13 = !{!"Simple C/C++ TBAA"}
!14 = !{}
