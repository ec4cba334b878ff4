// Kernels for the GPU suites and benchmarks: integer arithmetic only, so graph
// replay and eager runs compare byte for byte. Built by nvcc to PTX and fatbin.
#include <stdint.h>

#define IDX (blockIdx.x * blockDim.x + threadIdx.x)

// dst[i] = src[i] * 3 + c
extern "C" __global__ void t_scale(uint32_t *dst, const uint32_t *src, uint32_t c, int n) {
  int i = IDX;
  if (i < n) dst[i] = src[i] * 3u + c;
}

// dst[i] = a[i] ^ (b[i] + i)
extern "C" __global__ void t_mix(uint32_t *dst, const uint32_t *a, const uint32_t *b, int n) {
  int i = IDX;
  if (i < n) dst[i] = a[i] ^ (b[i] + (uint32_t)i);
}

// x[i] += 1
extern "C" __global__ void t_inc(uint32_t *x, int n) {
  int i = IDX;
  if (i < n) x[i] += 1u;
}

// x[i] = x[i] * 5 + k (in place, read-write)
extern "C" __global__ void t_affine(uint32_t *x, uint32_t k, int n) {
  int i = IDX;
  if (i < n) x[i] = x[i] * 5u + k;
}

// *counter -= 1; *pred = (*counter > 0)   (one thread)
extern "C" __global__ void t_countdown(int *counter, unsigned char *pred) {
  int c = *counter - 1;
  *counter = c;
  *pred = c > 0;
}

// *pred = (*counter > 0)
extern "C" __global__ void t_test_positive(const int *counter, unsigned char *pred) { *pred = *counter > 0; }

// *dst = v
extern "C" __global__ void t_store_i32(int *dst, int v) { *dst = v; }

// log[*pos] = tag; *pos += 1   (one thread: records which branch ran, in order)
extern "C" __global__ void t_log(int *log, int *pos, int tag) {
  log[*pos] = tag;
  *pos += 1;
}

// Every kind of parameter written out, one word each (a replay's marshalling):
// a 24-byte struct by value, a scalar, a 2-byte and a 1-byte immediate.
struct t_six {
  uint32_t v[6];
};
extern "C" __global__ void t_params(uint32_t *dst, t_six s, int k, unsigned short h, unsigned char b) {
  for (int i = 0; i < 6; i++) dst[i] = s.v[i];
  dst[6] = (uint32_t)k;
  dst[7] = h;
  dst[8] = b;
}

// An empty kernel (benchmarks of launch overhead).
extern "C" __global__ void t_empty(void) {}

// x[0] += 1: the smallest kernel that does something (benchmark chains).
extern "C" __global__ void t_tick(uint32_t *x) { x[0] += 1u; }

// Bias and ReLU over a row-major batch of rows of `cols` elements (the MLP
// benchmark, after each GEMM): x[i] += b[i % cols]; x[i] = max(x[i], 0).
// Arithmetic in f32 for every element type.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#define CREC_BIAS_RELU(T, SUFFIX, TO_F, FROM_F)                                              \
  extern "C" __global__ void t_bias_##SUFFIX(T *x, const T *b, int cols, int n) {           \
    int i = IDX;                                                                             \
    if (i < n) x[i] = FROM_F(TO_F(x[i]) + TO_F(b[i % cols]));                                \
  }                                                                                          \
  extern "C" __global__ void t_relu_##SUFFIX(T *x, int n) {                                  \
    int i = IDX;                                                                             \
    if (i < n) x[i] = FROM_F(fmaxf(TO_F(x[i]), 0.0f));                                       \
  }

static __device__ float f32_id(float v) { return v; }
CREC_BIAS_RELU(float, f32, f32_id, f32_id)
CREC_BIAS_RELU(__half, f16, __half2float, __float2half)
CREC_BIAS_RELU(__nv_bfloat16, bf16, __bfloat162float, __float2bfloat16)

// Spins for `cycles` clock cycles, then x[0] += 1 (one thread): work of a known
// relative length, for the profile tests.
extern "C" __global__ void t_spin(uint32_t *x, long long cycles) {
  long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
  x[0] += 1u;
}

// Parameters as captured libraries lay them out (tests/gpu_capture.c):
// pointers at 4-byte offsets, as cuDNN's nchwToNhwcKernel packs a pointer after a
// float: dst at byte 4, src at byte 12 (each as two 32-bit halves, which is how
// such a pointer sits in the bytes). dst[i] = src[i] * k + 1.
struct t_split {
  uint32_t k;
  uint32_t dst_lo, dst_hi;
  uint32_t src_lo, src_hi;
  int n;
};
extern "C" __global__ void t_split_axpb(t_split p) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  uint32_t *dst = (uint32_t *)(((uint64_t)p.dst_hi << 32) | p.dst_lo);
  const uint32_t *src = (const uint32_t *)(((uint64_t)p.src_hi << 32) | p.src_lo);
  if (i < p.n) dst[i] = src[i] * p.k + 1u;
}

// A struct with padding (7 bytes after `flag`, 6 after `h`, 4 at the end) whose
// bytes are whatever the host's stack held: dst[i] = src[i] + flag + h.
struct t_padded {
  unsigned char flag;
  uint32_t *dst;
  unsigned short h;
  const uint32_t *src;
  int n;
};
extern "C" __global__ void t_padded_add(t_padded p) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < p.n) p.dst[i] = p.src[i] + p.flag + p.h;
}

// x = *table (a pointer kept in device memory); x[i] = x[i] * k + y[i].
extern "C" __global__ void t_indirect(uint32_t *const *table, const uint32_t *y, uint32_t k, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  uint32_t *x = table[0];
  if (i < n) x[i] = x[i] * k + y[i];
}

// dst[i] = src[i] * 3 + c, for launches with CREC_LAUNCH_EARLY_START (programmatic
// dependent launch): on sm_90 and later it waits for the kernels before it
// (griddepcontrol.wait) before its first read, and lets the next one launch after
// its last write. Below sm_90 (the compute_75 PTX) there is nothing to wait for,
// and that PTX has no wait: crec refuses the flag for it.
extern "C" __global__ void t_scale_early(uint32_t *dst, const uint32_t *src, uint32_t c, int n) {
  int i = IDX;
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
  if (i < n) dst[i] = src[i] * 3u + c;
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
