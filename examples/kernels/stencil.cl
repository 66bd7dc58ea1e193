// 3-D 7-point stencil (a Jacobi step of the heat equation): each work-item updates four
// consecutive points along z, so neighbouring loads are shared and reused across outputs.
#define LID (__builtin_amdgcn_workitem_id_x())
#define GID (__builtin_amdgcn_workgroup_id_x() * 64u + LID)

__kernel __attribute__((reqd_work_group_size(64, 1, 1)))
void stencil7_z4(__global const float *restrict in, __global float *restrict out,
                 uint nx, uint ny, uint nz, float c0, float c1) {
  uint x = GID % nx, y = (GID / nx) % ny, z0 = (GID / (nx * ny)) * 4u;
  if (x == 0 || y == 0 || x >= nx - 1 || y >= ny - 1 || z0 == 0 || z0 + 4u >= nz) return;
  uint plane = nx * ny;
  uint at = z0 * plane + y * nx + x;
  float below = in[at - plane];
  float centre = in[at];
#pragma unroll
  for (int k = 0; k < 4; k++) {
    float above = in[at + plane];
    float sum = in[at - 1] + in[at + 1] + in[at - nx] + in[at + nx] + below + above;
    out[at] = c0 * centre + c1 * sum;
    below = centre;
    centre = above;
    at += plane;
  }
}
