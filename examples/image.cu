// The kernel of examples/image.mlir, built by nvcc at build time into the
// build tree (build/examples/image.ptx, next to the staged image.mlir):
//   nvcc -ptx -arch=compute_75 image.cu -o image.ptx
// It follows the C ABI that crec.image modules use: a memref arrives as a
// pointer to its first element, a scalar by value.

// RMS normalization of each row of a rows x cols matrix, scaled by a weight
// per column:  y[r][c] = x[r][c] / sqrt(mean(x[r]^2) + eps) * w[c].
// One block of 256 threads per row; the sum of squares is reduced in shared
// memory in a fixed order, so every run gives the same bits.
extern "C" __global__ void rmsnorm(float *y, const float *x, const float *w, float eps, int cols) {
  __shared__ float partial[256];
  const float *row = x + (size_t)blockIdx.x * cols;
  float *out = y + (size_t)blockIdx.x * cols;
  float sum = 0.0f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) sum += row[c] * row[c];
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  float scale = rsqrtf(partial[0] / (float)cols + eps);
  for (int c = threadIdx.x; c < cols; c += blockDim.x) out[c] = row[c] * scale * w[c];
}
