; ModuleID = 'sgemm_tile.cl'
source_filename = "sgemm_tile.cl"
target datalayout = "e-p:64:64-p1:64:64-p2:32:32-p3:32:32-p4:64:64-p5:32:32-p6:32:32-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-v512:512-v1024:1024-v2048:2048-n32:64-S32-A5-G1-ni:7"
target triple = "amdgcn-amd-amdhsa"

; Function Attrs: argmemonly nofree norecurse nosync nounwind
define protected amdgpu_kernel void @sgemm_tile4x4(float addrspace(1)* noalias nocapture noundef readonly align 4 %0, float addrspace(1)* noalias nocapture noundef readonly align 4 %1, float addrspace(1)* noalias nocapture noundef align 4 %2, i32 noundef %3, float noundef %4, float noundef %5) local_unnamed_addr #0 !kernel_arg_addr_space !4 !kernel_arg_access_qual !5 !kernel_arg_type !6 !kernel_arg_base_type !6 !kernel_arg_type_qual !7 !reqd_work_group_size !8 {
  %7 = lshr i32 %3, 2
  %8 = tail call i32 @llvm.amdgcn.workgroup.id.x()
  %9 = shl i32 %8, 6
  %10 = tail call i32 @llvm.amdgcn.workitem.id.x(), !range !9
  %11 = add i32 %9, %10
  %12 = freeze i32 %11
  %13 = udiv i32 %12, %7
  %14 = shl i32 %13, 2
  %15 = mul i32 %13, %7
  %16 = sub i32 %12, %15
  %17 = shl nuw i32 %16, 2
  %18 = icmp ult i32 %14, %3
  br i1 %18, label %19, label %343

19:                                               ; preds = %6
  %20 = mul i32 %14, %3
  %21 = or i32 %14, 1
  %22 = mul i32 %21, %3
  %23 = or i32 %14, 2
  %24 = mul i32 %23, %3
  %25 = or i32 %14, 3
  %26 = mul i32 %25, %3
  br label %27

27:                                               ; preds = %19, %27
  %28 = phi float [ 0.000000e+00, %19 ], [ %243, %27 ]
  %29 = phi float [ 0.000000e+00, %19 ], [ %242, %27 ]
  %30 = phi float [ 0.000000e+00, %19 ], [ %241, %27 ]
  %31 = phi float [ 0.000000e+00, %19 ], [ %240, %27 ]
  %32 = phi float [ 0.000000e+00, %19 ], [ %239, %27 ]
  %33 = phi float [ 0.000000e+00, %19 ], [ %238, %27 ]
  %34 = phi float [ 0.000000e+00, %19 ], [ %237, %27 ]
  %35 = phi float [ 0.000000e+00, %19 ], [ %236, %27 ]
  %36 = phi float [ 0.000000e+00, %19 ], [ %235, %27 ]
  %37 = phi float [ 0.000000e+00, %19 ], [ %234, %27 ]
  %38 = phi float [ 0.000000e+00, %19 ], [ %233, %27 ]
  %39 = phi float [ 0.000000e+00, %19 ], [ %232, %27 ]
  %40 = phi float [ 0.000000e+00, %19 ], [ %231, %27 ]
  %41 = phi float [ 0.000000e+00, %19 ], [ %230, %27 ]
  %42 = phi float [ 0.000000e+00, %19 ], [ %229, %27 ]
  %43 = phi float [ 0.000000e+00, %19 ], [ %228, %27 ]
  %44 = phi i32 [ 0, %19 ], [ %244, %27 ]
  %45 = add i32 %44, %20
  %46 = zext i32 %45 to i64
  %47 = getelementptr inbounds float, float addrspace(1)* %0, i64 %46
  %48 = load float, float addrspace(1)* %47, align 4, !tbaa !10, !amdgpu.noclobber !14
  %49 = add i32 %44, %22
  %50 = zext i32 %49 to i64
  %51 = getelementptr inbounds float, float addrspace(1)* %0, i64 %50
  %52 = load float, float addrspace(1)* %51, align 4, !tbaa !10, !amdgpu.noclobber !14
  %53 = add i32 %44, %24
  %54 = zext i32 %53 to i64
  %55 = getelementptr inbounds float, float addrspace(1)* %0, i64 %54
  %56 = load float, float addrspace(1)* %55, align 4, !tbaa !10, !amdgpu.noclobber !14
  %57 = add i32 %44, %26
  %58 = zext i32 %57 to i64
  %59 = getelementptr inbounds float, float addrspace(1)* %0, i64 %58
  %60 = load float, float addrspace(1)* %59, align 4, !tbaa !10, !amdgpu.noclobber !14
  %61 = mul i32 %44, %3
  %62 = add i32 %61, %17
  %63 = zext i32 %62 to i64
  %64 = getelementptr inbounds float, float addrspace(1)* %1, i64 %63
  %65 = load float, float addrspace(1)* %64, align 4, !tbaa !10, !amdgpu.noclobber !14
  %66 = or i32 %62, 1
  %67 = zext i32 %66 to i64
  %68 = getelementptr inbounds float, float addrspace(1)* %1, i64 %67
  %69 = load float, float addrspace(1)* %68, align 4, !tbaa !10, !amdgpu.noclobber !14
  %70 = or i32 %62, 2
  %71 = zext i32 %70 to i64
  %72 = getelementptr inbounds float, float addrspace(1)* %1, i64 %71
  %73 = load float, float addrspace(1)* %72, align 4, !tbaa !10, !amdgpu.noclobber !14
  %74 = or i32 %62, 3
  %75 = zext i32 %74 to i64
  %76 = getelementptr inbounds float, float addrspace(1)* %1, i64 %75
  %77 = load float, float addrspace(1)* %76, align 4, !tbaa !10, !amdgpu.noclobber !14
  %78 = tail call float @llvm.fma.f32(float %48, float %65, float %43)
  %79 = tail call float @llvm.fma.f32(float %48, float %69, float %42)
  %80 = tail call float @llvm.fma.f32(float %48, float %73, float %41)
  %81 = tail call float @llvm.fma.f32(float %48, float %77, float %40)
  %82 = tail call float @llvm.fma.f32(float %52, float %65, float %39)
  %83 = tail call float @llvm.fma.f32(float %52, float %69, float %38)
  %84 = tail call float @llvm.fma.f32(float %52, float %73, float %37)
  %85 = tail call float @llvm.fma.f32(float %52, float %77, float %36)
  %86 = tail call float @llvm.fma.f32(float %56, float %65, float %35)
  %87 = tail call float @llvm.fma.f32(float %56, float %69, float %34)
  %88 = tail call float @llvm.fma.f32(float %56, float %73, float %33)
  %89 = tail call float @llvm.fma.f32(float %56, float %77, float %32)
  %90 = tail call float @llvm.fma.f32(float %60, float %65, float %31)
  %91 = tail call float @llvm.fma.f32(float %60, float %69, float %30)
  %92 = tail call float @llvm.fma.f32(float %60, float %73, float %29)
  %93 = tail call float @llvm.fma.f32(float %60, float %77, float %28)
  %94 = or i32 %44, 1
  %95 = add i32 %94, %20
  %96 = zext i32 %95 to i64
  %97 = getelementptr inbounds float, float addrspace(1)* %0, i64 %96
  %98 = load float, float addrspace(1)* %97, align 4, !tbaa !10, !amdgpu.noclobber !14
  %99 = add i32 %94, %22
  %100 = zext i32 %99 to i64
  %101 = getelementptr inbounds float, float addrspace(1)* %0, i64 %100
  %102 = load float, float addrspace(1)* %101, align 4, !tbaa !10, !amdgpu.noclobber !14
  %103 = add i32 %94, %24
  %104 = zext i32 %103 to i64
  %105 = getelementptr inbounds float, float addrspace(1)* %0, i64 %104
  %106 = load float, float addrspace(1)* %105, align 4, !tbaa !10, !amdgpu.noclobber !14
  %107 = add i32 %94, %26
  %108 = zext i32 %107 to i64
  %109 = getelementptr inbounds float, float addrspace(1)* %0, i64 %108
  %110 = load float, float addrspace(1)* %109, align 4, !tbaa !10, !amdgpu.noclobber !14
  %111 = mul i32 %94, %3
  %112 = add i32 %111, %17
  %113 = zext i32 %112 to i64
  %114 = getelementptr inbounds float, float addrspace(1)* %1, i64 %113
  %115 = load float, float addrspace(1)* %114, align 4, !tbaa !10, !amdgpu.noclobber !14
  %116 = add i32 %112, 1
  %117 = zext i32 %116 to i64
  %118 = getelementptr inbounds float, float addrspace(1)* %1, i64 %117
  %119 = load float, float addrspace(1)* %118, align 4, !tbaa !10, !amdgpu.noclobber !14
  %120 = add i32 %112, 2
  %121 = zext i32 %120 to i64
  %122 = getelementptr inbounds float, float addrspace(1)* %1, i64 %121
  %123 = load float, float addrspace(1)* %122, align 4, !tbaa !10, !amdgpu.noclobber !14
  %124 = add i32 %112, 3
  %125 = zext i32 %124 to i64
  %126 = getelementptr inbounds float, float addrspace(1)* %1, i64 %125
  %127 = load float, float addrspace(1)* %126, align 4, !tbaa !10, !amdgpu.noclobber !14
  %128 = tail call float @llvm.fma.f32(float %98, float %115, float %78)
  %129 = tail call float @llvm.fma.f32(float %98, float %119, float %79)
  %130 = tail call float @llvm.fma.f32(float %98, float %123, float %80)
  %131 = tail call float @llvm.fma.f32(float %98, float %127, float %81)
  %132 = tail call float @llvm.fma.f32(float %102, float %115, float %82)
  %133 = tail call float @llvm.fma.f32(float %102, float %119, float %83)
  %134 = tail call float @llvm.fma.f32(float %102, float %123, float %84)
  %135 = tail call float @llvm.fma.f32(float %102, float %127, float %85)
  %136 = tail call float @llvm.fma.f32(float %106, float %115, float %86)
  %137 = tail call float @llvm.fma.f32(float %106, float %119, float %87)
  %138 = tail call float @llvm.fma.f32(float %106, float %123, float %88)
  %139 = tail call float @llvm.fma.f32(float %106, float %127, float %89)
  %140 = tail call float @llvm.fma.f32(float %110, float %115, float %90)
  %141 = tail call float @llvm.fma.f32(float %110, float %119, float %91)
  %142 = tail call float @llvm.fma.f32(float %110, float %123, float %92)
  %143 = tail call float @llvm.fma.f32(float %110, float %127, float %93)
  %144 = or i32 %44, 2
  %145 = add i32 %144, %20
  %146 = zext i32 %145 to i64
  %147 = getelementptr inbounds float, float addrspace(1)* %0, i64 %146
  %148 = load float, float addrspace(1)* %147, align 4, !tbaa !10, !amdgpu.noclobber !14
  %149 = add i32 %144, %22
  %150 = zext i32 %149 to i64
  %151 = getelementptr inbounds float, float addrspace(1)* %0, i64 %150
  %152 = load float, float addrspace(1)* %151, align 4, !tbaa !10, !amdgpu.noclobber !14
  %153 = add i32 %144, %24
  %154 = zext i32 %153 to i64
  %155 = getelementptr inbounds float, float addrspace(1)* %0, i64 %154
  %156 = load float, float addrspace(1)* %155, align 4, !tbaa !10, !amdgpu.noclobber !14
  %157 = add i32 %144, %26
  %158 = zext i32 %157 to i64
  %159 = getelementptr inbounds float, float addrspace(1)* %0, i64 %158
  %160 = load float, float addrspace(1)* %159, align 4, !tbaa !10, !amdgpu.noclobber !14
  %161 = mul i32 %144, %3
  %162 = add i32 %161, %17
  %163 = zext i32 %162 to i64
  %164 = getelementptr inbounds float, float addrspace(1)* %1, i64 %163
  %165 = load float, float addrspace(1)* %164, align 4, !tbaa !10, !amdgpu.noclobber !14
  %166 = or i32 %162, 1
  %167 = zext i32 %166 to i64
  %168 = getelementptr inbounds float, float addrspace(1)* %1, i64 %167
  %169 = load float, float addrspace(1)* %168, align 4, !tbaa !10, !amdgpu.noclobber !14
  %170 = add i32 %162, 2
  %171 = zext i32 %170 to i64
  %172 = getelementptr inbounds float, float addrspace(1)* %1, i64 %171
  %173 = load float, float addrspace(1)* %172, align 4, !tbaa !10, !amdgpu.noclobber !14
  %174 = add i32 %162, 3
  %175 = zext i32 %174 to i64
  %176 = getelementptr inbounds float, float addrspace(1)* %1, i64 %175
  %177 = load float, float addrspace(1)* %176, align 4, !tbaa !10, !amdgpu.noclobber !14
  %178 = tail call float @llvm.fma.f32(float %148, float %165, float %128)
  %179 = tail call float @llvm.fma.f32(float %148, float %169, float %129)
  %180 = tail call float @llvm.fma.f32(float %148, float %173, float %130)
  %181 = tail call float @llvm.fma.f32(float %148, float %177, float %131)
  %182 = tail call float @llvm.fma.f32(float %152, float %165, float %132)
  %183 = tail call float @llvm.fma.f32(float %152, float %169, float %133)
  %184 = tail call float @llvm.fma.f32(float %152, float %173, float %134)
  %185 = tail call float @llvm.fma.f32(float %152, float %177, float %135)
  %186 = tail call float @llvm.fma.f32(float %156, float %165, float %136)
  %187 = tail call float @llvm.fma.f32(float %156, float %169, float %137)
  %188 = tail call float @llvm.fma.f32(float %156, float %173, float %138)
  %189 = tail call float @llvm.fma.f32(float %156, float %177, float %139)
  %190 = tail call float @llvm.fma.f32(float %160, float %165, float %140)
  %191 = tail call float @llvm.fma.f32(float %160, float %169, float %141)
  %192 = tail call float @llvm.fma.f32(float %160, float %173, float %142)
  %193 = tail call float @llvm.fma.f32(float %160, float %177, float %143)
  %194 = or i32 %44, 3
  %195 = add i32 %194, %20
  %196 = zext i32 %195 to i64
  %197 = getelementptr inbounds float, float addrspace(1)* %0, i64 %196
  %198 = load float, float addrspace(1)* %197, align 4, !tbaa !10, !amdgpu.noclobber !14
  %199 = add i32 %194, %22
  %200 = zext i32 %199 to i64
  %201 = getelementptr inbounds float, float addrspace(1)* %0, i64 %200
  %202 = load float, float addrspace(1)* %201, align 4, !tbaa !10, !amdgpu.noclobber !14
  %203 = add i32 %194, %24
  %204 = zext i32 %203 to i64
  %205 = getelementptr inbounds float, float addrspace(1)* %0, i64 %204
  %206 = load float, float addrspace(1)* %205, align 4, !tbaa !10, !amdgpu.noclobber !14
  %207 = add i32 %194, %26
  %208 = zext i32 %207 to i64
  %209 = getelementptr inbounds float, float addrspace(1)* %0, i64 %208
  %210 = load float, float addrspace(1)* %209, align 4, !tbaa !10, !amdgpu.noclobber !14
  %211 = mul i32 %194, %3
  %212 = add i32 %211, %17
  %213 = zext i32 %212 to i64
  %214 = getelementptr inbounds float, float addrspace(1)* %1, i64 %213
  %215 = load float, float addrspace(1)* %214, align 4, !tbaa !10, !amdgpu.noclobber !14
  %216 = add i32 %212, 1
  %217 = zext i32 %216 to i64
  %218 = getelementptr inbounds float, float addrspace(1)* %1, i64 %217
  %219 = load float, float addrspace(1)* %218, align 4, !tbaa !10, !amdgpu.noclobber !14
  %220 = add i32 %212, 2
  %221 = zext i32 %220 to i64
  %222 = getelementptr inbounds float, float addrspace(1)* %1, i64 %221
  %223 = load float, float addrspace(1)* %222, align 4, !tbaa !10, !amdgpu.noclobber !14
  %224 = add i32 %212, 3
  %225 = zext i32 %224 to i64
  %226 = getelementptr inbounds float, float addrspace(1)* %1, i64 %225
  %227 = load float, float addrspace(1)* %226, align 4, !tbaa !10, !amdgpu.noclobber !14
  %228 = tail call float @llvm.fma.f32(float %198, float %215, float %178)
  %229 = tail call float @llvm.fma.f32(float %198, float %219, float %179)
  %230 = tail call float @llvm.fma.f32(float %198, float %223, float %180)
  %231 = tail call float @llvm.fma.f32(float %198, float %227, float %181)
  %232 = tail call float @llvm.fma.f32(float %202, float %215, float %182)
  %233 = tail call float @llvm.fma.f32(float %202, float %219, float %183)
  %234 = tail call float @llvm.fma.f32(float %202, float %223, float %184)
  %235 = tail call float @llvm.fma.f32(float %202, float %227, float %185)
  %236 = tail call float @llvm.fma.f32(float %206, float %215, float %186)
  %237 = tail call float @llvm.fma.f32(float %206, float %219, float %187)
  %238 = tail call float @llvm.fma.f32(float %206, float %223, float %188)
  %239 = tail call float @llvm.fma.f32(float %206, float %227, float %189)
  %240 = tail call float @llvm.fma.f32(float %210, float %215, float %190)
  %241 = tail call float @llvm.fma.f32(float %210, float %219, float %191)
  %242 = tail call float @llvm.fma.f32(float %210, float %223, float %192)
  %243 = tail call float @llvm.fma.f32(float %210, float %227, float %193)
  %244 = add i32 %44, 4
  %245 = icmp ult i32 %244, %3
  br i1 %245, label %27, label %246

246:                                              ; preds = %27
  %247 = add i32 %20, %17
  %248 = zext i32 %247 to i64
  %249 = getelementptr inbounds float, float addrspace(1)* %2, i64 %248
  %250 = load float, float addrspace(1)* %249, align 4, !tbaa !10
  %251 = fmul float %250, %5
  %252 = tail call float @llvm.fmuladd.f32(float %4, float %228, float %251)
  store float %252, float addrspace(1)* %249, align 4, !tbaa !10
  %253 = or i32 %247, 1
  %254 = zext i32 %253 to i64
  %255 = getelementptr inbounds float, float addrspace(1)* %2, i64 %254
  %256 = load float, float addrspace(1)* %255, align 4, !tbaa !10
  %257 = fmul float %256, %5
  %258 = tail call float @llvm.fmuladd.f32(float %4, float %229, float %257)
  store float %258, float addrspace(1)* %255, align 4, !tbaa !10
  %259 = or i32 %247, 2
  %260 = zext i32 %259 to i64
  %261 = getelementptr inbounds float, float addrspace(1)* %2, i64 %260
  %262 = load float, float addrspace(1)* %261, align 4, !tbaa !10
  %263 = fmul float %262, %5
  %264 = tail call float @llvm.fmuladd.f32(float %4, float %230, float %263)
  store float %264, float addrspace(1)* %261, align 4, !tbaa !10
  %265 = or i32 %247, 3
  %266 = zext i32 %265 to i64
  %267 = getelementptr inbounds float, float addrspace(1)* %2, i64 %266
  %268 = load float, float addrspace(1)* %267, align 4, !tbaa !10
  %269 = fmul float %268, %5
  %270 = tail call float @llvm.fmuladd.f32(float %4, float %231, float %269)
  store float %270, float addrspace(1)* %267, align 4, !tbaa !10
  %271 = add i32 %22, %17
  %272 = zext i32 %271 to i64
  %273 = getelementptr inbounds float, float addrspace(1)* %2, i64 %272
  %274 = load float, float addrspace(1)* %273, align 4, !tbaa !10
  %275 = fmul float %274, %5
  %276 = tail call float @llvm.fmuladd.f32(float %4, float %232, float %275)
  store float %276, float addrspace(1)* %273, align 4, !tbaa !10
  %277 = add i32 %271, 1
  %278 = zext i32 %277 to i64
  %279 = getelementptr inbounds float, float addrspace(1)* %2, i64 %278
  %280 = load float, float addrspace(1)* %279, align 4, !tbaa !10
  %281 = fmul float %280, %5
  %282 = tail call float @llvm.fmuladd.f32(float %4, float %233, float %281)
  store float %282, float addrspace(1)* %279, align 4, !tbaa !10
  %283 = add i32 %271, 2
  %284 = zext i32 %283 to i64
  %285 = getelementptr inbounds float, float addrspace(1)* %2, i64 %284
  %286 = load float, float addrspace(1)* %285, align 4, !tbaa !10
  %287 = fmul float %286, %5
  %288 = tail call float @llvm.fmuladd.f32(float %4, float %234, float %287)
  store float %288, float addrspace(1)* %285, align 4, !tbaa !10
  %289 = add i32 %271, 3
  %290 = zext i32 %289 to i64
  %291 = getelementptr inbounds float, float addrspace(1)* %2, i64 %290
  %292 = load float, float addrspace(1)* %291, align 4, !tbaa !10
  %293 = fmul float %292, %5
  %294 = tail call float @llvm.fmuladd.f32(float %4, float %235, float %293)
  store float %294, float addrspace(1)* %291, align 4, !tbaa !10
  %295 = add i32 %24, %17
  %296 = zext i32 %295 to i64
  %297 = getelementptr inbounds float, float addrspace(1)* %2, i64 %296
  %298 = load float, float addrspace(1)* %297, align 4, !tbaa !10
  %299 = fmul float %298, %5
  %300 = tail call float @llvm.fmuladd.f32(float %4, float %236, float %299)
  store float %300, float addrspace(1)* %297, align 4, !tbaa !10
  %301 = or i32 %295, 1
  %302 = zext i32 %301 to i64
  %303 = getelementptr inbounds float, float addrspace(1)* %2, i64 %302
  %304 = load float, float addrspace(1)* %303, align 4, !tbaa !10
  %305 = fmul float %304, %5
  %306 = tail call float @llvm.fmuladd.f32(float %4, float %237, float %305)
  store float %306, float addrspace(1)* %303, align 4, !tbaa !10
  %307 = add i32 %295, 2
  %308 = zext i32 %307 to i64
  %309 = getelementptr inbounds float, float addrspace(1)* %2, i64 %308
  %310 = load float, float addrspace(1)* %309, align 4, !tbaa !10
  %311 = fmul float %310, %5
  %312 = tail call float @llvm.fmuladd.f32(float %4, float %238, float %311)
  store float %312, float addrspace(1)* %309, align 4, !tbaa !10
  %313 = add i32 %295, 3
  %314 = zext i32 %313 to i64
  %315 = getelementptr inbounds float, float addrspace(1)* %2, i64 %314
  %316 = load float, float addrspace(1)* %315, align 4, !tbaa !10
  %317 = fmul float %316, %5
  %318 = tail call float @llvm.fmuladd.f32(float %4, float %239, float %317)
  store float %318, float addrspace(1)* %315, align 4, !tbaa !10
  %319 = add i32 %26, %17
  %320 = zext i32 %319 to i64
  %321 = getelementptr inbounds float, float addrspace(1)* %2, i64 %320
  %322 = load float, float addrspace(1)* %321, align 4, !tbaa !10
  %323 = fmul float %322, %5
  %324 = tail call float @llvm.fmuladd.f32(float %4, float %240, float %323)
  store float %324, float addrspace(1)* %321, align 4, !tbaa !10
  %325 = add i32 %319, 1
  %326 = zext i32 %325 to i64
  %327 = getelementptr inbounds float, float addrspace(1)* %2, i64 %326
  %328 = load float, float addrspace(1)* %327, align 4, !tbaa !10
  %329 = fmul float %328, %5
  %330 = tail call float @llvm.fmuladd.f32(float %4, float %241, float %329)
  store float %330, float addrspace(1)* %327, align 4, !tbaa !10
  %331 = add i32 %319, 2
  %332 = zext i32 %331 to i64
  %333 = getelementptr inbounds float, float addrspace(1)* %2, i64 %332
  %334 = load float, float addrspace(1)* %333, align 4, !tbaa !10
  %335 = fmul float %334, %5
  %336 = tail call float @llvm.fmuladd.f32(float %4, float %242, float %335)
  store float %336, float addrspace(1)* %333, align 4, !tbaa !10
  %337 = add i32 %319, 3
  %338 = zext i32 %337 to i64
  %339 = getelementptr inbounds float, float addrspace(1)* %2, i64 %338
  %340 = load float, float addrspace(1)* %339, align 4, !tbaa !10
  %341 = fmul float %340, %5
  %342 = tail call float @llvm.fmuladd.f32(float %4, float %243, float %341)
  store float %342, float addrspace(1)* %339, align 4, !tbaa !10
  br label %343

343:                                              ; preds = %6, %246
  ret void
}

; Function Attrs: mustprogress nofree nosync nounwind readnone speculatable willreturn
declare i32 @llvm.amdgcn.workgroup.id.x() #1

; Function Attrs: mustprogress nofree nosync nounwind readnone speculatable willreturn
declare i32 @llvm.amdgcn.workitem.id.x() #1

; Function Attrs: mustprogress nocallback nofree nosync nounwind readnone speculatable willreturn
declare float @llvm.fma.f32(float, float, float) #2

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
!4 = !{i32 1, i32 1, i32 1, i32 0, i32 0, i32 0}
!5 = !{!"none", !"none", !"none", !"none", !"none", !"none"}
!6 = !{!"float*", !"float*", !"float*", !"uint", !"float", !"float"}
!7 = !{!"restrict const", !"restrict const", !"restrict", !"", !"", !""}
!8 = !{i32 64, i32 1, i32 1}
!9 = !{i32 0, i32 1024}
!10 = !{!11, !11, i64 0}
!11 = !{!"float", !12, i64 0}
!12 = !{!"omnipotent char", !13, i64 0}
!13 = !{!"Simple C/C++ TBAA"}
!14 = !{}
