// Set-condition kernels for conditional graph nodes (WHILE, IF, SWITCH).
// Built by nvcc to PTX for a low virtual architecture and embedded in libcrec;
// loaded once per CUDA context in their own module, so a load failure names
// this module instead of breaking the program's kernels. Each runs as <<<1,1>>>.

// while / if: handle = (*pred != 0)
extern "C" __global__ void crec_set_while(cudaGraphConditionalHandle h, const unsigned char *pred) {
  cudaGraphSetConditional(h, *pred ? 1u : 0u);
}

// while with an iteration limit (crec_program_set_loop_limit). The set before the
// loop (entry) zeroes the loop's count; the set at the end of the body counts the
// iteration just run, and when `limit` iterations ran and the loop would go on,
// ends it and stores `loop` (command index + 1) in *tripped, mapped host memory
// the exec reads at its next replay. A loop that trips while another's report
// is pending leaves that one (two tripping at the same moment: either is
// reported; no atomics, which host memory over PCIe may not support).
extern "C" __global__ void crec_set_while_limited(cudaGraphConditionalHandle h, const unsigned char *pred,
                                                  unsigned long long *count, unsigned long long limit,
                                                  volatile unsigned *tripped, unsigned loop, int entry) {
  unsigned v = *pred ? 1u : 0u;
  if (entry) {
    *count = 0;
  } else {
    unsigned long long n = *count + 1;
    *count = n;
    if (v && n >= limit) {
      v = 0;
      if (*tripped == 0) *tripped = loop;
    }
  }
  cudaGraphSetConditional(h, v);
}

// if/else with two bodies in one IF node (CUDA 12.8+): the value picks the body
// (1 runs body 0 = then, 0 runs body 1 = else); as one IF node per branch on older
// drivers, `else_h` gets the opposite value.
extern "C" __global__ void crec_set_if(cudaGraphConditionalHandle then_h,
                                       cudaGraphConditionalHandle else_h, int has_else,
                                       const unsigned char *pred) {
  unsigned v = *pred ? 1u : 0u;
  cudaGraphSetConditional(then_h, v);
  if (has_else) cudaGraphSetConditional(else_h, 1u - v);
}

// Branch taken by a switch: with no case table, `index` itself for
// 0 <= index < n-1, else the default n-1; with a table of n-1 case values, the
// first branch whose value equals index, else n-1.
__device__ static unsigned branch_of(int index, const int *cases, int n) {
  if (!cases) return (index >= 0 && index < n - 1) ? (unsigned)index : (unsigned)(n - 1);
  for (int i = 0; i < n - 1; i++)
    if (cases[i] == index) return (unsigned)i;
  return (unsigned)(n - 1);
}

// switch as one SWITCH node (CUDA 12.8+): the handle's value is the branch.
extern "C" __global__ void crec_set_switch(cudaGraphConditionalHandle h, const int *index,
                                           const int *cases, int n) {
  cudaGraphSetConditional(h, branch_of(*index, cases, n));
}

// switch as one IF node per branch (older drivers): handles[i] = (branch == first + i)
// for the `count` handles of branches first .. first+count-1. The handles come by
// value in the kernel's parameters, as crec_set_if's do; a switch of more
// branches takes one such kernel per CREC_SET_IFS_MAX of them.
#define CREC_SET_IFS_MAX 32
struct crec_ifs_handles {
  cudaGraphConditionalHandle h[CREC_SET_IFS_MAX];
};
extern "C" __global__ void crec_set_switch_ifs(crec_ifs_handles hs, int first, int count, const int *index,
                                               const int *cases, int n) {
  unsigned b = branch_of(*index, cases, n);
  for (int i = 0; i < count; i++) cudaGraphSetConditional(hs.h[i], b == (unsigned)(first + i) ? 1u : 0u);
}

// An empty body still gets one node: empty conditional bodies hung before CUDA 12.8.
extern "C" __global__ void crec_noop(void) {}

// FFT output scaling (crec_fft.scale): x[i] *= s for n reals, grid-stride.
// Not a set-condition kernel, but as small and loaded with them per context.
extern "C" __global__ void crec_scale_f32(float *x, unsigned long long n, float s) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x)
    x[i] *= s;
}
extern "C" __global__ void crec_scale_f64(double *x, unsigned long long n, double s) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x)
    x[i] *= s;
}

// A convolution filter between HWIO (spatial..., C/groups, K: linalg's hwcf) and
// the K-first layout cuDNN takes: KRSC (kcrs 0) or KCRS (kcrs 1), for `rs`
// spatial positions and `es`-byte elements (2 or 4). to_k_first: dst K-first
// from src HWIO; else dst HWIO from src K-first (after a backward-filter pass).
extern "C" __global__ void crec_filter_layout(unsigned char *dst, const unsigned char *src, unsigned long long k,
                                              unsigned long long rs, unsigned long long cg, int es, int kcrs,
                                              int to_k_first) {
  unsigned long long n = k * rs * cg;
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x) {
    unsigned long long kk = i % k, c = (i / k) % cg, r = i / (k * cg); /* i: the HWIO element (r, c, kk) */
    unsigned long long j = kcrs ? (kk * cg + c) * rs + r : (kk * rs + r) * cg + c;
    unsigned long long to = to_k_first ? j : i, from = to_k_first ? i : j;
    if (es == 2) ((unsigned short *)dst)[to] = ((const unsigned short *)src)[from];
    else ((unsigned *)dst)[to] = ((const unsigned *)src)[from];
  }
}

// A copy and a fill inside a conditional body (record/graph.c): memcpy and memset
// nodes there keep the addresses they were made with on an H100 (their update
// failed: CUDA_ERROR_INVALID_VALUE), kernel nodes take new ones. Grid-stride;
// 16 bytes at a time where both ends and the size allow it.
extern "C" __global__ void crec_copy_bytes(unsigned char *dst, const unsigned char *src, unsigned long long n) {
  unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  if ((((unsigned long long)dst | (unsigned long long)src | n) & 15) == 0) {
    for (; i < n / 16; i += stride) ((uint4 *)dst)[i] = ((const uint4 *)src)[i];
    return;
  }
  for (; i < n; i += stride) dst[i] = src[i];
}

// `count` elements of `size` bytes (1, 2 or 4) set to `value`.
extern "C" __global__ void crec_fill_elements(unsigned char *dst, unsigned long long count, unsigned value,
                                              unsigned size) {
  unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < count; i += stride) {
    if (size == 4) ((unsigned *)dst)[i] = value;
    else if (size == 2) ((unsigned short *)dst)[i] = (unsigned short)value;
    else dst[i] = (unsigned char)value;
  }
}
