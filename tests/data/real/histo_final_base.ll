; ModuleID = 'parboil/benchmarks/histo/src/opencl_base/histo_final.cl'
source_filename = "parboil/benchmarks/histo/src/opencl_base/histo_final.cl"
target datalayout = "e-p:64:64-p1:64:64-p2:32:32-p3:32:32-p4:64:64-p5:32:32-p6:32:32-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-v512:512-v1024:1024-v2048:2048-n32:64-S32-A5-G1-ni:7"
target triple = "amdgcn-amd-amdhsa"

%0 = type { i16, i16, i16, i16, i16, i16, i32, i32, i32, i32, i32, i64, ptr addrspace(1), i64, %1 }
%1 = type { i64 }

; Function Attrs: argmemonly nofree norecurse nosync nounwind
define protected amdgpu_kernel void @histo_final_kernel(i32 noundef %0, i32 noundef %1, i32 noundef %2, i32 noundef %3, ptr addrspace(1) nocapture noundef readonly align 4 %4, ptr addrspace(1) nocapture noundef align 4 %5, ptr addrspace(1) nocapture noundef writeonly align 4 %6, ptr addrspace(1) nocapture noundef writeonly align 4 %7) local_unnamed_addr #0 !kernel_arg_addr_space !5 !kernel_arg_access_qual !6 !kernel_arg_type !7 !kernel_arg_base_type !7 !kernel_arg_type_qual !8 {
  %9 = tail call align 4 dereferenceable(64) ptr addrspace(4) @llvm.amdgcn.dispatch.ptr()
  %10 = getelementptr inbounds %0, ptr addrspace(4) %9, i64 0, i32 6
  %11 = load i32, ptr addrspace(4) %10, align 4, !tbaa !9
  %12 = tail call i32 @llvm.amdgcn.workgroup.id.x()
  %13 = getelementptr i8, ptr addrspace(4) %9, i64 4
  %14 = load i16, ptr addrspace(4) %13, align 4, !range !18, !invariant.load !19
  %15 = zext i16 %14 to i32
  %16 = mul i32 %12, %15
  %17 = sub i32 %11, %16
  %18 = tail call i32 @llvm.umin.i32(i32 %17, i32 %15)
  %19 = udiv i32 %11, %15
  %20 = mul i32 %19, %15
  %21 = icmp ugt i32 %11, %20
  %22 = zext i1 %21 to i32
  %23 = add i32 %19, %22
  %24 = tail call i32 @llvm.amdgcn.workitem.id.x(), !range !20
  %25 = mul i32 %18, %12
  %26 = add i32 %25, %24
  %27 = mul i32 %0, 24576
  %28 = sub i32 %1, %0
  %29 = mul i32 %28, 24576
  %30 = lshr exact i32 %27, 2
  %31 = icmp ult i32 %26, %30
  br i1 %31, label %32, label %34

32:                                               ; preds = %8
  %33 = mul i32 %23, %18
  br label %42

34:                                               ; preds = %42, %8
  %35 = add i32 %26, %30
  %36 = add i32 %27, 24576
  %37 = add i32 %36, %29
  %38 = lshr exact i32 %37, 2
  %39 = icmp ult i32 %35, %38
  br i1 %39, label %40, label %74

40:                                               ; preds = %34
  %41 = mul i32 %23, %18
  br label %81

42:                                               ; preds = %32, %42
  %43 = phi i32 [ %26, %32 ], [ %72, %42 ]
  %44 = shl i32 %43, 2
  %45 = zext i32 %44 to i64
  %46 = getelementptr inbounds i16, ptr addrspace(1) %5, i64 %45
  %47 = load i16, ptr addrspace(1) %46, align 4, !tbaa !21
  %48 = or i32 %44, 1
  %49 = zext i32 %48 to i64
  %50 = getelementptr inbounds i16, ptr addrspace(1) %5, i64 %49
  %51 = load i16, ptr addrspace(1) %50, align 2, !tbaa !21
  %52 = or i32 %44, 2
  %53 = zext i32 %52 to i64
  %54 = getelementptr inbounds i16, ptr addrspace(1) %5, i64 %53
  %55 = load i16, ptr addrspace(1) %54, align 4, !tbaa !21
  %56 = or i32 %44, 3
  %57 = zext i32 %56 to i64
  %58 = getelementptr inbounds i16, ptr addrspace(1) %5, i64 %57
  %59 = load i16, ptr addrspace(1) %58, align 2, !tbaa !21
  store i16 0, ptr addrspace(1) %46, align 4, !tbaa !21
  store i16 0, ptr addrspace(1) %50, align 2, !tbaa !21
  store i16 0, ptr addrspace(1) %54, align 4, !tbaa !21
  store i16 0, ptr addrspace(1) %58, align 2, !tbaa !21
  %60 = tail call i16 @llvm.umin.i16(i16 %47, i16 255)
  %61 = tail call i16 @llvm.umin.i16(i16 %51, i16 255)
  %62 = tail call i16 @llvm.umin.i16(i16 %55, i16 255)
  %63 = tail call i16 @llvm.umin.i16(i16 %59, i16 255)
  %64 = trunc i16 %60 to i8
  %65 = getelementptr inbounds i8, ptr addrspace(1) %7, i64 %45
  store i8 %64, ptr addrspace(1) %65, align 4, !tbaa !22
  %66 = trunc i16 %61 to i8
  %67 = getelementptr inbounds i8, ptr addrspace(1) %7, i64 %49
  store i8 %66, ptr addrspace(1) %67, align 1, !tbaa !22
  %68 = trunc i16 %62 to i8
  %69 = getelementptr inbounds i8, ptr addrspace(1) %7, i64 %53
  store i8 %68, ptr addrspace(1) %69, align 2, !tbaa !22
  %70 = trunc i16 %63 to i8
  %71 = getelementptr inbounds i8, ptr addrspace(1) %7, i64 %57
  store i8 %70, ptr addrspace(1) %71, align 1, !tbaa !22
  %72 = add i32 %43, %33
  %73 = icmp ult i32 %72, %30
  br i1 %73, label %42, label %34

74:                                               ; preds = %81, %34
  %75 = add i32 %26, %38
  %76 = mul i32 %3, %2
  %77 = lshr i32 %76, 2
  %78 = icmp ult i32 %75, %77
  br i1 %78, label %79, label %117

79:                                               ; preds = %74
  %80 = mul i32 %23, %18
  br label %118

81:                                               ; preds = %40, %81
  %82 = phi i32 [ %35, %40 ], [ %115, %81 ]
  %83 = shl i32 %82, 2
  %84 = zext i32 %83 to i64
  %85 = getelementptr inbounds i32, ptr addrspace(1) %6, i64 %84
  %86 = or i32 %83, 1
  %87 = zext i32 %86 to i64
  %88 = getelementptr inbounds i32, ptr addrspace(1) %6, i64 %87
  %89 = or i32 %83, 2
  %90 = zext i32 %89 to i64
  %91 = getelementptr inbounds i32, ptr addrspace(1) %6, i64 %90
  %92 = or i32 %83, 3
  %93 = zext i32 %92 to i64
  %94 = getelementptr inbounds i32, ptr addrspace(1) %6, i64 %93
  store i32 0, ptr addrspace(1) %85, align 4, !tbaa !23
  store i32 0, ptr addrspace(1) %88, align 4, !tbaa !23
  store i32 0, ptr addrspace(1) %91, align 4, !tbaa !23
  store i32 0, ptr addrspace(1) %94, align 4, !tbaa !23
  %95 = getelementptr inbounds i32, ptr addrspace(1) %4, i64 %84
  %96 = load i32, ptr addrspace(1) %95, align 4, !tbaa !23
  %97 = getelementptr inbounds i32, ptr addrspace(1) %4, i64 %87
  %98 = load i32, ptr addrspace(1) %97, align 4, !tbaa !23
  %99 = getelementptr inbounds i32, ptr addrspace(1) %4, i64 %90
  %100 = load i32, ptr addrspace(1) %99, align 4, !tbaa !23
  %101 = getelementptr inbounds i32, ptr addrspace(1) %4, i64 %93
  %102 = load i32, ptr addrspace(1) %101, align 4, !tbaa !23
  %103 = tail call i32 @llvm.umin.i32(i32 %96, i32 255)
  %104 = tail call i32 @llvm.umin.i32(i32 %98, i32 255)
  %105 = tail call i32 @llvm.umin.i32(i32 %100, i32 255)
  %106 = tail call i32 @llvm.umin.i32(i32 %102, i32 255)
  %107 = trunc i32 %103 to i8
  %108 = getelementptr inbounds i8, ptr addrspace(1) %7, i64 %84
  store i8 %107, ptr addrspace(1) %108, align 4, !tbaa !22
  %109 = trunc i32 %104 to i8
  %110 = getelementptr inbounds i8, ptr addrspace(1) %7, i64 %87
  store i8 %109, ptr addrspace(1) %110, align 1, !tbaa !22
  %111 = trunc i32 %105 to i8
  %112 = getelementptr inbounds i8, ptr addrspace(1) %7, i64 %90
  store i8 %111, ptr addrspace(1) %112, align 2, !tbaa !22
  %113 = trunc i32 %106 to i8
  %114 = getelementptr inbounds i8, ptr addrspace(1) %7, i64 %93
  store i8 %113, ptr addrspace(1) %114, align 1, !tbaa !22
  %115 = add i32 %82, %41
  %116 = icmp ult i32 %115, %38
  br i1 %116, label %81, label %74

117:                                              ; preds = %118, %74
  ret void

118:                                              ; preds = %79, %118
  %119 = phi i32 [ %75, %79 ], [ %148, %118 ]
  %120 = shl i32 %119, 2
  %121 = zext i32 %120 to i64
  %122 = getelementptr inbounds i16, ptr addrspace(1) %5, i64 %121
  %123 = load i16, ptr addrspace(1) %122, align 4, !tbaa !21
  %124 = or i32 %120, 1
  %125 = zext i32 %124 to i64
  %126 = getelementptr inbounds i16, ptr addrspace(1) %5, i64 %125
  %127 = load i16, ptr addrspace(1) %126, align 2, !tbaa !21
  %128 = or i32 %120, 2
  %129 = zext i32 %128 to i64
  %130 = getelementptr inbounds i16, ptr addrspace(1) %5, i64 %129
  %131 = load i16, ptr addrspace(1) %130, align 4, !tbaa !21
  %132 = or i32 %120, 3
  %133 = zext i32 %132 to i64
  %134 = getelementptr inbounds i16, ptr addrspace(1) %5, i64 %133
  %135 = load i16, ptr addrspace(1) %134, align 2, !tbaa !21
  store i16 0, ptr addrspace(1) %122, align 4, !tbaa !21
  store i16 0, ptr addrspace(1) %126, align 2, !tbaa !21
  store i16 0, ptr addrspace(1) %130, align 4, !tbaa !21
  store i16 0, ptr addrspace(1) %134, align 2, !tbaa !21
  %136 = tail call i16 @llvm.umin.i16(i16 %123, i16 255)
  %137 = tail call i16 @llvm.umin.i16(i16 %127, i16 255)
  %138 = tail call i16 @llvm.umin.i16(i16 %131, i16 255)
  %139 = tail call i16 @llvm.umin.i16(i16 %135, i16 255)
  %140 = trunc i16 %136 to i8
  %141 = getelementptr inbounds i8, ptr addrspace(1) %7, i64 %121
  store i8 %140, ptr addrspace(1) %141, align 4, !tbaa !22
  %142 = trunc i16 %137 to i8
  %143 = getelementptr inbounds i8, ptr addrspace(1) %7, i64 %125
  store i8 %142, ptr addrspace(1) %143, align 1, !tbaa !22
  %144 = trunc i16 %138 to i8
  %145 = getelementptr inbounds i8, ptr addrspace(1) %7, i64 %129
  store i8 %144, ptr addrspace(1) %145, align 2, !tbaa !22
  %146 = trunc i16 %139 to i8
  %147 = getelementptr inbounds i8, ptr addrspace(1) %7, i64 %133
  store i8 %146, ptr addrspace(1) %147, align 1, !tbaa !22
  %148 = add i32 %119, %80
  %149 = icmp ult i32 %148, %77
  br i1 %149, label %118, label %117
}

; Function Attrs: mustprogress nocallback nofree nosync nounwind readnone speculatable willreturn
declare i32 @llvm.umin.i32(i32, i32) #1

; Function Attrs: mustprogress nocallback nofree nosync nounwind readnone speculatable willreturn
declare i16 @llvm.umin.i16(i16, i16) #1

; Function Attrs: mustprogress nofree nosync nounwind readnone speculatable willreturn
declare align 4 ptr addrspace(4) @llvm.amdgcn.dispatch.ptr() #2

; Function Attrs: mustprogress nofree nosync nounwind readnone speculatable willreturn
declare i32 @llvm.amdgcn.workgroup.id.x() #2

; Function Attrs: mustprogress nofree nosync nounwind readnone speculatable willreturn
declare i32 @llvm.amdgcn.workitem.id.x() #2

attributes #0 = { argmemonly nofree norecurse nosync nounwind "amdgpu-flat-work-group-size"="1,256" "frame-pointer"="none" "min-legal-vector-width"="0" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "target-cpu"="gfx906" "target-features"="+16-bit-insts,+ci-insts,+dl-insts,+dot1-insts,+dot2-insts,+dot7-insts,+dpp,+flat-address-space,+gfx8-insts,+gfx9-insts,+s-memrealtime,+s-memtime-inst" "uniform-work-group-size"="true" }
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
!5 = !{i32 0, i32 0, i32 0, i32 0, i32 1, i32 1, i32 1, i32 1}
!6 = !{!"none", !"none", !"none", !"none", !"none", !"none", !"none", !"none"}
!7 = !{!"uint", !"uint", !"uint", !"uint", !"uint*", !"uint*", !"uint*", !"uint*"}
!8 = !{!"", !"", !"", !"", !"", !"", !"", !""}
!9 = !{!10, !14, i64 12}
!10 = !{!"hsa_kernel_dispatch_packet_s", !11, i64 0, !11, i64 2, !11, i64 4, !11, i64 6, !11, i64 8, !11, i64 10, !14, i64 12, !14, i64 16, !14, i64 20, !14, i64 24, !14, i64 28, !15, i64 32, !16, i64 40, !15, i64 48, !17, i64 56}
!11 = !{!"short", !12, i64 0}
!12 = !{!"omnipotent char", !13, i64 0}
!13 = !{!"Simple C/C++ TBAA"}
!14 = !{!"int", !12, i64 0}
!15 = !{!"long", !12, i64 0}
!16 = !{!"any pointer", !12, i64 0}
!17 = !{!"hsa_signal_s", !15, i64 0}
!18 = !{i16 1, i16 1025}
!19 = !{}
!20 = !{i32 0, i32 1024}
!21 = !{!11, !11, i64 0}
!22 = !{!12, !12, i64 0}
!23 = !{!14, !14, i64 0}
