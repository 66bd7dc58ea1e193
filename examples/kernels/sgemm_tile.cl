// Register-tiled SGEMM: each work-item computes a 4x4 tile of C = alpha * A * B + beta * C
// (row-major, n x n, n a multiple of 4). The k loop is unrolled by 4: 16 accumulators and
// 8 loaded values per step keep many VGPRs live, where a scheduler's order decides the peak.
#define LID (__builtin_amdgcn_workitem_id_x())
#define GID (__builtin_amdgcn_workgroup_id_x() * 64u + LID)

__kernel __attribute__((reqd_work_group_size(64, 1, 1)))
void sgemm_tile4x4(__global const float *restrict A, __global const float *restrict B,
                   __global float *restrict C, uint n, float alpha, float beta) {
  uint tiles = n / 4u;
  uint row = (GID / tiles) * 4u, col = (GID % tiles) * 4u;
  if (row >= n) return;
  float acc[4][4];
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 4; j++) acc[i][j] = 0.0f;
  for (uint k = 0; k < n; k += 4u) {
#pragma unroll
    for (uint kk = 0; kk < 4u; kk++) {
      float a[4], b[4];
      for (int i = 0; i < 4; i++) a[i] = A[(row + i) * n + k + kk];
      for (int j = 0; j < 4; j++) b[j] = B[(k + kk) * n + col + j];
      for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) acc[i][j] = __builtin_fmaf(a[i], b[j], acc[i][j]);
    }
  }
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 4; j++) {
      uint at = (row + i) * n + col + j;
      C[at] = alpha * acc[i][j] + beta * C[at];
    }
}
