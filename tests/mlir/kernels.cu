// Kernels for tests/mlir/image.mlir (crec.image): built with
//   nvcc -ptx -arch=compute_75 kernels.cu -o kernels.ptx
// They follow the C ABI: memrefs arrive as pointers to element 0, scalars by value.
extern "C" __global__ void axpy(float *y, const float *x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += a * x[i];
}

// Counts *counter down to zero and sets *flag to (*counter != 0).
extern "C" __global__ void step(int *counter, unsigned char *flag) {
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    int c = *counter;
    if (c > 0) c--;
    *counter = c;
    *flag = c != 0;
  }
}

extern "C" __global__ void fill(float *y, float v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = v;
}
