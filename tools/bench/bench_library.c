/* crec_bench_library: library calls in graphs (issue "Library calls in graphs").
 *
 *   crec_bench_library [--json FILE] [--quick] [--type f16|bf16|f32]
 *
 * Workloads:
 *  1. mlp: 8 layers of GEMM, then bias and ReLU kernels; batch 32, width 1024;
 *  2. mlp_fused: the same with bias and ReLU as the GEMMs' epilogue (for comparison);
 *  3. gemm_chain: 100 small GEMMs (64 x 64 x 64), each reading the one before;
 *  4. gemm_loop: one small GEMM in a device while loop of 100 iterations;
 *  5. fft_chain: 100 FFTs (cuFFT, complex f32 whatever --type says; 16
 *     transforms of 256 points each), forward and scaled inverse in turn, each
 *     reading the one before;
 *  6. cholesky_chain: 100 Cholesky factorizations (cuSOLVER, f32 64 x 64,
 *     whatever --type says) of the matrices of one argument, after one copy
 *     of them into the buffer factored in place;
 *  7. conv_chain: 100 forward convolutions (cuDNN, 3 x 3, 32 channels on
 *     8 x 32 x 32 NHWC images, with a bias and a ReLU fused), each reading the
 *     one before.
 * mlp, mlp_fused and gemm_chain run again recorded with trace_child_graphs
 * ("/child" rows: their GEMMs as child graph nodes, as before inlining), with
 * device_updates ("/device"), and with variants 3 ("/variants": an executable
 * graph per buffer set, so a rotated replay launches the one holding its set).
 * Columns, microseconds per execution (wall time, stream synchronized):
 *  - eager: crec_run_eager (the while loop driven from the host);
 *  - replay: crec_exec_replay with the same bindings;
 *  - replay rotated: input and output cycling through three buffer sets;
 *  - rot/rep: replay rotated / replay (p50);
 *  - h:rep, h:rot: the host's part of replay and replay rotated (until
 *    crec_exec_replay returned);
 *  - capture: the same commands issued by hand (cuBLASLt through the same
 *    plans, cuLaunchKernel) under plain cuStreamBeginCapture/EndCapture,
 *    instantiated once, then launched (fixed buffers);
 *  - capture rotated: that capture redone for each rotated set, applied with
 *    cuGraphExecUpdate, then launched (how stream capture follows new buffers).
 * Stream capture cannot express the device loop: those cells stay empty. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

static crec_element type = CREC_ELEMENT_F16;
static const char *suffix = "f16";

/* Fills `n` elements of device memory with small random values of `type`. */
static void fill_random(void *dst, size_t n, float scale, uint32_t seed) {
  size_t es = crec_element_size(type);
  unsigned char *h = malloc(n * es);
  if (!h) exit(2);
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; i++) {
    x = x * 1664525u + 1013904223u;
    float v = ((float)((x >> 8) & 0xffff) / 32768.0f - 1.0f) * scale;
    uint32_t bits;
    memcpy(&bits, &v, 4);
    if (type == CREC_ELEMENT_F32) {
      memcpy(h + i * 4, &v, 4);
    } else if (type == CREC_ELEMENT_BF16) {
      uint16_t b = (uint16_t)((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
      memcpy(h + i * 2, &b, 2);
    } else { /* f16, normal numbers only: |v| in [2^-14, 1] or zero-ish flushed */
      uint32_t sign = (bits >> 16) & 0x8000;
      int32_t e = (int32_t)((bits >> 23) & 0xff) - 127 + 15;
      uint16_t hv = (uint16_t)(e <= 0 ? sign : sign | ((uint32_t)e << 10) | ((bits & 0x7fffff) >> 13));
      memcpy(h + i * 2, &hv, 2);
    }
  }
  BENCH_OK(crec_copy(dst, h, n * es));
  free(h);
}

/* ---- programs ---- */

typedef struct workload {
  const char *name;
  crec_program *p;
  crec_buffer x, y;      /* rotated between sets */
  size_t x_arg, y_arg;   /* their binding positions */
  uint64_t x_bytes, y_bytes;
  crec_binding *b;       /* one per argument */
  size_t num_args;
  void *xs[3], *ys[3];
  int has_loop;
  void (*fill_x)(void *dst, uint64_t bytes, uint32_t seed); /* x's contents when random ones do not fit */
} workload;

static crec_module test_module(crec_program *p) {
  crec_module m;
  BENCH_OK(crec_program_add_module(p, "kernels", CREC_IMAGE_PTX, crec_test_kernels_ptx, crec_test_kernels_ptx_size, &m));
  return m;
}

static crec_kernel kernel(crec_program *p, crec_module m, const char *base) {
  char entry[64];
  snprintf(entry, sizeof entry, "%s_%s", base, suffix);
  crec_kernel k;
  BENCH_OK(crec_program_add_kernel(p, m, entry, NULL, &k));
  return k;
}

static void add_arg(workload *w, const char *name, uint64_t bytes, crec_buffer *out) {
  crec_argument_options o = CREC_ARGUMENT_OPTIONS_INIT;
  o.element = type;
  BENCH_OK(crec_program_add_argument(w->p, name, bytes, &o, out));
  w->b = realloc(w->b, (w->num_args + 1) * sizeof *w->b);
  void *mem = bench_alloc(bytes);
  fill_random(mem, bytes / crec_element_size(type), 1.0f, (uint32_t)w->num_args);
  w->b[w->num_args++] = (crec_binding){mem, bytes};
}

static void elementwise(crec_program *p, crec_kernel k, const crec_arg *args, size_t n, uint32_t elems) {
  crec_launch l = CREC_LAUNCH_INIT;
  l.kernel = k;
  l.grid[0] = crec_dim_of((elems + 255) / 256);
  l.block[0] = crec_dim_of(256);
  l.args = args;
  l.num_args = n;
  crec_command c;
  BENCH_OK(crec_program_add_launch(p, crec_program_body(p), NULL, &l, &c));
}

/* The MLP: h_{l+1} = relu(h_l W_l + b_l), h_0 = x, h_8 = y; bias and ReLU as
 * kernels after each GEMM, or (`fused`) as the GEMM's epilogue. */
static void build_mlp_as(workload *w, int fused) {
  enum { L = 8, BATCH = 32, WIDTH = 1024 };
  size_t es = crec_element_size(type);
  memset(w, 0, sizeof *w);
  w->name = fused ? "mlp_fused" : "mlp";
  BENCH_OK(crec_program_create(&w->p));
  crec_module m = test_module(w->p);
  crec_kernel bias = kernel(w->p, m, "t_bias"), relu = kernel(w->p, m, "t_relu");
  crec_buffer weights, biases;
  w->x_arg = w->num_args;
  add_arg(w, "x", BATCH * WIDTH * es, &w->x);
  w->y_arg = w->num_args;
  add_arg(w, "y", BATCH * WIDTH * es, &w->y);
  add_arg(w, "weights", (uint64_t)L * WIDTH * WIDTH * es, &weights);
  add_arg(w, "biases", (uint64_t)L * WIDTH * es, &biases);
  /* weights ~ U(-1, 1)/32 keep activations of width 1024 in range */
  fill_random(w->b[2].ptr, (size_t)L * WIDTH * WIDTH, 1.0f / 32, 7);
  w->x_bytes = w->y_bytes = BATCH * WIDTH * es;
  crec_buffer h[L + 1];
  h[0] = w->x;
  h[L] = w->y;
  for (int l = 1; l < L; l++) {
    char name[16];
    snprintf(name, sizeof name, "h%d", l);
    BENCH_OK(crec_program_add_temporary(w->p, name, BATCH * WIDTH * es, &h[l]));
  }
  crec_region body = crec_program_body(w->p);
  for (int l = 0; l < L; l++) {
    crec_gemm g = CREC_GEMM_INIT;
    g.type = type;
    g.a = crec_matrix_of(crec_range_whole(h[l]), BATCH, WIDTH);
    g.b = crec_matrix_of(crec_range_of(weights, (uint64_t)l * WIDTH * WIDTH * es, WIDTH * WIDTH * es), WIDTH, WIDTH);
    g.d = crec_matrix_of(crec_range_whole(h[l + 1]), BATCH, WIDTH);
    crec_range b_l = crec_range_of(biases, (uint64_t)l * WIDTH * es, WIDTH * es);
    if (fused) {
      g.epilogue = CREC_GEMM_EPILOGUE_BIAS_RELU;
      g.bias = b_l;
    }
    char name[16];
    snprintf(name, sizeof name, "fc%d", l);
    crec_command c;
    BENCH_OK(crec_program_add_gemm(w->p, body, name, &g, &c));
    if (fused) continue;
    crec_arg ba[] = {crec_arg_buffer(crec_range_whole(h[l + 1]), CREC_ACCESS_READ_WRITE),
                     crec_arg_buffer(b_l, CREC_ACCESS_READ),
                     crec_arg_i32(WIDTH), crec_arg_i32(BATCH * WIDTH)};
    elementwise(w->p, bias, ba, 4, BATCH * WIDTH);
    crec_arg ra[] = {crec_arg_buffer(crec_range_whole(h[l + 1]), CREC_ACCESS_READ_WRITE), crec_arg_i32(BATCH * WIDTH)};
    elementwise(w->p, relu, ra, 2, BATCH * WIDTH);
  }
}

static void build_mlp(workload *w) { build_mlp_as(w, 0); }
static void build_mlp_fused(workload *w) { build_mlp_as(w, 1); }

enum { SG = 64, CHAIN = 100 };

/* The buffer link `k` of a chain of CHAIN commands writes: a temporary t<k+1> of
 * `bytes`, or y for the last. */
static crec_buffer chain_link(workload *w, int k, uint64_t bytes) {
  crec_buffer next = w->y;
  if (k + 1 < CHAIN) {
    char name[16];
    snprintf(name, sizeof name, "t%d", k + 1);
    BENCH_OK(crec_program_add_temporary(w->p, name, bytes, &next));
  }
  return next;
}

/* 100 GEMMs: t_{k+1} = t_k W_k with t_0 = x, t_100 = y. */
static void build_chain(workload *w) {
  size_t es = crec_element_size(type);
  memset(w, 0, sizeof *w);
  w->name = "gemm_chain";
  BENCH_OK(crec_program_create(&w->p));
  crec_buffer weights;
  w->x_arg = w->num_args;
  add_arg(w, "x", SG * SG * es, &w->x);
  w->y_arg = w->num_args;
  add_arg(w, "y", SG * SG * es, &w->y);
  add_arg(w, "weights", (uint64_t)CHAIN * SG * SG * es, &weights);
  fill_random(w->b[2].ptr, (size_t)CHAIN * SG * SG, 1.0f / 8, 9);
  w->x_bytes = w->y_bytes = SG * SG * es;
  crec_buffer prev = w->x;
  for (int k = 0; k < CHAIN; k++) {
    crec_buffer next = chain_link(w, k, SG * SG * es);
    crec_gemm g = CREC_GEMM_INIT;
    g.type = type;
    g.a = crec_matrix_of(crec_range_whole(prev), SG, SG);
    g.b = crec_matrix_of(crec_range_of(weights, (uint64_t)k * SG * SG * es, SG * SG * es), SG, SG);
    g.d = crec_matrix_of(crec_range_whole(next), SG, SG);
    g.workspace_bytes = 1 << 20;
    crec_command c;
    BENCH_OK(crec_program_add_gemm(w->p, crec_program_body(w->p), NULL, &g, &c));
    prev = next;
  }
}

enum { FFT_N = 256, FFT_BATCH = 16 };

/* 100 FFTs: t_{k+1} = fft(t_k) for even k, ifft(t_k) / 256 for odd k; t_0 = x, t_100 = y. */
static void build_fft_chain(workload *w) {
  const uint64_t bytes = 2 * 4 * FFT_N * FFT_BATCH;
  memset(w, 0, sizeof *w);
  w->name = "fft_chain";
  BENCH_OK(crec_program_create(&w->p));
  w->x_arg = w->num_args;
  add_arg(w, "x", bytes, &w->x);
  w->y_arg = w->num_args;
  add_arg(w, "y", bytes, &w->y);
  w->x_bytes = w->y_bytes = bytes;
  crec_buffer prev = w->x;
  for (int k = 0; k < CHAIN; k++) {
    crec_buffer next = chain_link(w, k, bytes);
    crec_fft f = CREC_FFT_INIT;
    f.type = k % 2 ? CREC_FFT_INVERSE : CREC_FFT_FORWARD;
    f.scale = k % 2 ? 1.0 / FFT_N : 1.0;
    f.length[0] = FFT_N;
    f.batch = FFT_BATCH;
    f.input = crec_range_whole(prev);
    f.output = crec_range_whole(next);
    f.workspace_bytes = 1 << 16;
    crec_command c;
    BENCH_OK(crec_program_add_fft(w->p, crec_program_body(w->p), NULL, &f, &c));
    prev = next;
  }
}

enum { CHOL_N = 64 };

/* CHAIN symmetric positive definite f32 matrices of order CHOL_N (diagonally dominant). */
static void fill_spd(void *dst, uint64_t bytes, uint32_t seed) {
  float *h = malloc(bytes);
  uint32_t r = seed * 2654435761u + 1;
  for (uint64_t m = 0; m < bytes / (4 * CHOL_N * CHOL_N); m++)
    for (int i = 0; i < CHOL_N; i++)
      for (int j = 0; j <= i; j++) {
        r = r * 1664525u + 1013904223u;
        float v = i == j ? (float)CHOL_N : (float)(r >> 8) / (float)(1u << 24) - 0.5f;
        h[m * CHOL_N * CHOL_N + i * CHOL_N + j] = h[m * CHOL_N * CHOL_N + j * CHOL_N + i] = v;
      }
  BENCH_OK(crec_copy(dst, h, bytes));
  free(h);
}

/* y = x, then 100 factorizations of y's matrices in place. */
static void build_cholesky_chain(workload *w) {
  const uint64_t one = 4 * CHOL_N * CHOL_N, bytes = CHAIN * one;
  memset(w, 0, sizeof *w);
  w->name = "cholesky_chain";
  w->fill_x = fill_spd;
  BENCH_OK(crec_program_create(&w->p));
  w->x_arg = w->num_args;
  add_arg(w, "x", bytes, &w->x);
  fill_spd(w->b[w->x_arg].ptr, bytes, 0);
  w->y_arg = w->num_args;
  add_arg(w, "y", bytes, &w->y);
  w->x_bytes = w->y_bytes = bytes;
  crec_buffer info;
  BENCH_OK(crec_program_add_temporary(w->p, "info", 4 * CHAIN, &info));
  crec_region body = crec_program_body(w->p);
  crec_command c;
  BENCH_OK(crec_program_add_memcpy(w->p, body, NULL, crec_range_whole(w->y), crec_range_whole(w->x), &c));
  for (int k = 0; k < CHAIN; k++) {
    crec_cholesky d = CREC_CHOLESKY_INIT;
    d.n = CHOL_N;
    d.a = crec_range_of(w->y, (uint64_t)k * one, one);
    d.info = crec_range_of(info, 4 * (uint64_t)k, 4);
    d.workspace_bytes = 1 << 18;
    BENCH_OK(crec_program_add_cholesky(w->p, body, NULL, &d, &c));
  }
}

enum { CONV_N = 8, CONV_C = 32, CONV_HW = 32 };

/* 100 convolutions: t_{k+1} = relu(conv(t_k, w_k) + b_k), t_0 = x, t_100 = y (same padding). */
static void build_conv_chain(workload *w) {
  size_t es = crec_element_size(type);
  const uint64_t act = (uint64_t)CONV_N * CONV_HW * CONV_HW * CONV_C * es, filt = (uint64_t)CONV_C * 9 * CONV_C * es;
  memset(w, 0, sizeof *w);
  w->name = "conv_chain";
  BENCH_OK(crec_program_create(&w->p));
  crec_buffer weights, biases;
  w->x_arg = w->num_args;
  add_arg(w, "x", act, &w->x);
  w->y_arg = w->num_args;
  add_arg(w, "y", act, &w->y);
  add_arg(w, "weights", CHAIN * filt, &weights);
  fill_random(w->b[2].ptr, CHAIN * filt / es, 1.0f / 16, 13);
  add_arg(w, "biases", CHAIN * CONV_C * es, &biases);
  w->x_bytes = w->y_bytes = act;
  crec_buffer prev = w->x;
  for (int k = 0; k < CHAIN; k++) {
    crec_buffer next = chain_link(w, k, act);
    crec_conv d = CREC_CONV_INIT;
    d.type = type, d.layout = CREC_CONV_NHWC;
    d.batch = CONV_N, d.in_channels = d.out_channels = CONV_C;
    d.in_size[0] = d.in_size[1] = CONV_HW;
    d.filter_size[0] = d.filter_size[1] = 3;
    d.padding[0] = d.padding[1] = 1;
    d.input = crec_range_whole(prev), d.output = crec_range_whole(next);
    d.filter = crec_range_of(weights, (uint64_t)k * filt, filt);
    d.bias = crec_range_of(biases, (uint64_t)k * CONV_C * es, CONV_C * es);
    d.activation = CREC_CONV_ACTIVATION_RELU;
    d.workspace_bytes = 8 << 20;
    crec_command c;
    BENCH_OK(crec_program_add_conv(w->p, crec_program_body(w->p), NULL, &d, &c));
    prev = next;
  }
}

/* One GEMM in a device loop of 100 iterations: y = x W; x = y (a copy). */
static void build_loop(workload *w) {
  size_t es = crec_element_size(type);
  memset(w, 0, sizeof *w);
  w->name = "gemm_loop";
  w->has_loop = 1;
  BENCH_OK(crec_program_create(&w->p));
  crec_module m;
  BENCH_OK(crec_program_add_module(w->p, "kernels", CREC_IMAGE_PTX, crec_test_kernels_ptx, crec_test_kernels_ptx_size, &m));
  crec_kernel store, countdown;
  BENCH_OK(crec_program_add_kernel(w->p, m, "t_store_i32", NULL, &store));
  BENCH_OK(crec_program_add_kernel(w->p, m, "t_countdown", NULL, &countdown));
  crec_buffer wt, state;
  w->x_arg = w->num_args;
  add_arg(w, "x", SG * SG * es, &w->x);
  w->y_arg = w->num_args;
  add_arg(w, "y", SG * SG * es, &w->y);
  add_arg(w, "w", SG * SG * es, &wt);
  fill_random(w->b[2].ptr, SG * SG, 1.0f / 8, 11);
  crec_argument_options o = CREC_ARGUMENT_OPTIONS_INIT;
  BENCH_OK(crec_program_add_argument(w->p, "state", 16, &o, &state));
  w->b = realloc(w->b, (w->num_args + 1) * sizeof *w->b);
  w->b[w->num_args++] = (crec_binding){bench_alloc(16), 16};
  w->x_bytes = w->y_bytes = SG * SG * es;
  crec_region body = crec_program_body(w->p), cond, loop;
  crec_launch l = CREC_LAUNCH_INIT;
  crec_arg st[] = {crec_arg_buffer(crec_range_of(state, 0, 4), CREC_ACCESS_WRITE), crec_arg_i32(CHAIN + 1)};
  l.kernel = store;
  l.args = st;
  l.num_args = 2;
  crec_command c;
  BENCH_OK(crec_program_add_launch(w->p, body, NULL, &l, &c));
  BENCH_OK(crec_program_add_while(w->p, body, "loop", crec_range_of(state, 8, 1), &c, &cond, &loop));
  crec_arg cd[] = {crec_arg_buffer(crec_range_of(state, 0, 4), CREC_ACCESS_READ_WRITE),
                   crec_arg_buffer(crec_range_of(state, 8, 1), CREC_ACCESS_WRITE)};
  l.kernel = countdown;
  l.args = cd;
  BENCH_OK(crec_program_add_launch(w->p, cond, NULL, &l, &c));
  crec_gemm g = CREC_GEMM_INIT;
  g.type = type;
  g.a = crec_matrix_of(crec_range_whole(w->x), SG, SG);
  g.b = crec_matrix_of(crec_range_whole(wt), SG, SG);
  g.d = crec_matrix_of(crec_range_whole(w->y), SG, SG);
  g.workspace_bytes = 1 << 20;
  BENCH_OK(crec_program_add_gemm(w->p, loop, "step", &g, &c));
  BENCH_OK(crec_program_add_memcpy(w->p, loop, NULL, crec_range_whole(w->x), crec_range_whole(w->y), &c));
}

/* The three buffer sets (once: a workload measured again keeps them). */
static void workload_sets(workload *w) {
  if (w->xs[1]) return;
  w->xs[0] = w->b[w->x_arg].ptr;
  w->ys[0] = w->b[w->y_arg].ptr;
  for (int s = 1; s < 3; s++) {
    w->xs[s] = bench_alloc(w->x_bytes);
    w->ys[s] = bench_alloc(w->y_bytes);
    if (w->fill_x) w->fill_x(w->xs[s], w->x_bytes, (uint32_t)(100 + s));
    else fill_random(w->xs[s], w->x_bytes / crec_element_size(type), 1.0f, (uint32_t)(100 + s));
  }
}

static void workload_bind(workload *w, int set) {
  w->b[w->x_arg].ptr = w->xs[set];
  w->b[w->y_arg].ptr = w->ys[set];
}

static void workload_free(workload *w) {
  for (size_t i = 0; i < w->num_args; i++)
    if (i != w->x_arg && i != w->y_arg) crec_device_free(w->b[i].ptr);
  for (int s = 0; s < 3; s++) {
    crec_device_free(w->xs[s]);
    crec_device_free(w->ys[s]);
  }
  free(w->b);
  crec_program_destroy(w->p);
}

/* ---- stream capture of the same commands, issued by hand ---- */

/* Issues every top-level command of the exec's program with values `v` on `s`:
 * GEMMs, FFTs, Cholesky factorizations and convolutions through the exec's
 * cuBLASLt, cuFFT, cuSOLVER and cuDNN state, launches with cuLaunchKernel, copies with cuMemcpyAsync. */
static void issue_by_hand(const crec_exec *e, const crec__values *v, CUstream s) {
  const crec_program *p = e->program;
  const crec__region *body = &p->regions[0];
  const crec__cu *cu = bench_cu();
  for (size_t k = 0; k < body->num_commands; k++) {
    uint32_t ci = body->commands[k];
    const crec__command *c = &p->commands[ci];
    if (c->kind == CREC_COMMAND_GEMM) {
      BENCH_OK(crec__gemm_issue(p, e->state, v, ci, s, "bench"));
    } else if (c->kind == CREC_COMMAND_FFT) {
      BENCH_OK(crec__fft_issue(p, e->state, v, ci, s, "bench"));
    } else if (c->kind == CREC_COMMAND_CHOLESKY) {
      BENCH_OK(crec__cholesky_issue(p, e->state, v, ci, s, "bench"));
    } else if (c->kind == CREC_COMMAND_CONV) {
      BENCH_OK(crec__conv_issue(p, e->state, v, ci, s, "bench"));
    } else if (c->kind == CREC_COMMAND_MEMCPY) {
      CU_OK(cu->cuMemcpyAsync(crec__range_addr(v, c->dst), crec__range_addr(v, c->src), c->bytes, s));
    } else if (c->kind == CREC_COMMAND_LAUNCH) {
      uint32_t grid[3], block[3], shared;
      BENCH_OK(crec__launch_dims(p, v, c, grid, block, &shared, "bench"));
      _Alignas(16) uint8_t params[CREC_MAX_PARAM_BYTES];
      void *ptrs[16];
      crec__marshal_args(p, v, c, params, ptrs);
      CUlaunchConfig cfg;
      memset(&cfg, 0, sizeof cfg);
      cfg.gridDimX = grid[0], cfg.gridDimY = grid[1], cfg.gridDimZ = grid[2];
      cfg.blockDimX = block[0], cfg.blockDimY = block[1], cfg.blockDimZ = block[2];
      cfg.sharedMemBytes = shared;
      cfg.hStream = s;
      CU_OK(cu->cuLaunchKernelEx(&cfg, e->state->functions[c->kernel], ptrs, NULL));
    } else {
      fprintf(stderr, "bench: no hand-issued form of %s commands\n", crec_command_kind_name(c->kind));
      exit(1);
    }
  }
}

static CUgraph capture_by_hand(const crec_exec *e, const crec__values *v) {
  const crec__cu *cu = bench_cu();
  CUgraph g;
  CU_OK(cu->cuStreamBeginCapture(bench_stream(), CU_STREAM_CAPTURE_MODE_RELAXED));
  issue_by_hand(e, v, bench_stream());
  CU_OK(cu->cuStreamEndCapture(bench_stream(), &g));
  return g;
}

/* ---- measuring ---- */

typedef struct columns {
  bench_stats eager, replay, rotated, capture, capture_rotated;
  bench_stats replay_host, rotated_host; /* until crec_exec_replay() returned */
  double record_ms;
  crec_exec_stats st;
} columns;

static void measure(workload *w, int reps, const crec_record_options *o, columns *out) {
  const crec__cu *cu = bench_cu();
  CUstream s = bench_stream();
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = w->b;
  bs.num_buffers = w->num_args;
  workload_sets(w);
  workload_bind(w, 0);
  double t0 = bench_now_us();
  crec_exec *ex;
  BENCH_OK(crec_record(w->p, &bs, o, &ex));
  out->record_ms = (bench_now_us() - t0) / 1000;
  bench_stats_init(&out->eager, reps), bench_stats_init(&out->replay, reps), bench_stats_init(&out->rotated, reps);
  bench_stats_init(&out->capture, reps), bench_stats_init(&out->capture_rotated, reps);
  bench_stats_init(&out->replay_host, reps), bench_stats_init(&out->rotated_host, reps);

  /* the hand capture works on a copy of the exec's values (arena, constants),
   * with the bases of x and y set per buffer set */
  crec__values v;
  CUgraphExec hand = NULL;
  size_t xb = w->p->arguments[w->x_arg], yb = w->p->arguments[w->y_arg];
  if (!w->has_loop) {
    BENCH_OK(crec__values_alloc(w->p, &v));
    memcpy(v.base, ex->cur.base, w->p->num_buffers * sizeof *v.base);
    memcpy(v.size, ex->cur.size, w->p->num_buffers * sizeof *v.size);
    CUgraph g = capture_by_hand(ex, &v);
    CU_OK(cu->cuGraphInstantiateWithFlags(&hand, g, 0));
    CU_OK(cu->cuGraphUpload(hand, s));
    cu->cuGraphDestroy(g);
  }
  for (int i = -3; i < reps; i++) { /* three rounds of warm-up */
    int set = 1 + (i + 3) % 2;      /* the rotated runs alternate sets 1 and 2 after set 0 */
    double a;
    workload_bind(w, 0);
    a = bench_now_us();
    BENCH_OK(crec_run_eager(w->p, &bs, s));
    BENCH_OK(crec_stream_synchronize(s));
    if (i >= 0) bench_stats_add(&out->eager, bench_now_us() - a);
    /* unchanged bindings: the first replay brings set 0 back (untimed) */
    BENCH_OK(crec_exec_replay(ex, &bs, s));
    BENCH_OK(crec_stream_synchronize(s));
    a = bench_now_us();
    BENCH_OK(crec_exec_replay(ex, &bs, s));
    double h = bench_now_us();
    BENCH_OK(crec_stream_synchronize(s));
    if (i >= 0) bench_stats_add(&out->replay, bench_now_us() - a), bench_stats_add(&out->replay_host, h - a);
    workload_bind(w, set);
    a = bench_now_us();
    BENCH_OK(crec_exec_replay(ex, &bs, s));
    h = bench_now_us();
    BENCH_OK(crec_stream_synchronize(s));
    if (i >= 0) bench_stats_add(&out->rotated, bench_now_us() - a), bench_stats_add(&out->rotated_host, h - a);
    if (!hand) continue;
    a = bench_now_us();
    CU_OK(cu->cuGraphLaunch(hand, s));
    CU_OK(cu->cuStreamSynchronize(s));
    if (i >= 0) bench_stats_add(&out->capture, bench_now_us() - a);
    CUgraphExecUpdateResultInfo info;
    for (int step = 0; step < 2; step++) {
      /* step 0, timed: capture for the rotated set, update, launch; step 1,
       * untimed: back to set 0 for the next fixed-buffer launch */
      int to = step == 0 ? set : 0;
      a = bench_now_us();
      v.base[xb] = (CUdeviceptr)(uintptr_t)w->xs[to];
      v.base[yb] = (CUdeviceptr)(uintptr_t)w->ys[to];
      CUgraph g = capture_by_hand(ex, &v);
      CU_OK(cu->cuGraphExecUpdate(hand, g, &info));
      if (step == 0) {
        CU_OK(cu->cuGraphLaunch(hand, s));
        CU_OK(cu->cuStreamSynchronize(s));
        if (i >= 0) bench_stats_add(&out->capture_rotated, bench_now_us() - a);
      }
      cu->cuGraphDestroy(g);
    }
  }
  out->st = (crec_exec_stats)CREC_EXEC_STATS_INIT;
  BENCH_OK(crec_exec_get_stats(ex, &out->st));
  if (hand) {
    cu->cuGraphExecDestroy(hand);
    crec__values_free(&v);
  }
  workload_bind(w, 0);
  crec_exec_destroy(ex);
}

static void report(bench_json *js, workload *w, const char *name, columns *c) {
  double speedup = bench_p50(&c->eager) / bench_p50(&c->replay);
  double rot = bench_p50(&c->rotated) / bench_p50(&c->replay);
  char cap[32] = "-", caprot[32] = "-";
  if (!w->has_loop) {
    snprintf(cap, sizeof cap, "%8.1f [%5.1f]", bench_p50(&c->capture), bench_p90(&c->capture));
    snprintf(caprot, sizeof caprot, "%8.1f [%5.1f]", bench_p50(&c->capture_rotated), bench_p90(&c->capture_rotated));
  }
  printf("%-17s %9.1f %8.1f [%5.1f] %8.1f [%5.1f] %8.1f [%5.1f] %7.2fx %16s %16s %8.2fx %5llu/%-4llu %5.1f %5.1f\n",
         name, c->record_ms, bench_p50(&c->eager), bench_p90(&c->eager), bench_p50(&c->replay), bench_p90(&c->replay),
         bench_p50(&c->rotated), bench_p90(&c->rotated), rot, cap, caprot, speedup,
         (unsigned long long)c->st.traced_inline, (unsigned long long)c->st.traced_nodes, bench_p50(&c->replay_host),
         bench_p50(&c->rotated_host));
  bench_json_open_object(js, name);
  bench_json_num(js, "record_ms", c->record_ms);
  bench_json_stats(js, "eager_us", &c->eager);
  bench_json_stats(js, "replay_us", &c->replay);
  bench_json_stats(js, "replay_rotated_us", &c->rotated);
  if (!w->has_loop) {
    bench_json_stats(js, "capture_us", &c->capture);
    bench_json_stats(js, "capture_rotated_us", &c->capture_rotated);
  }
  bench_json_num(js, "speedup_replay_vs_eager", speedup);
  bench_json_num(js, "rotated_vs_unchanged", rot);
  bench_json_stats(js, "replay_host_us", &c->replay_host);
  bench_json_stats(js, "replay_rotated_host_us", &c->rotated_host);
  bench_json_int(js, "nodes", (long long)c->st.nodes);
  bench_json_int(js, "traced_nodes", (long long)c->st.traced_nodes);
  bench_json_int(js, "traced_inline", (long long)c->st.traced_inline);
  bench_json_int(js, "trace_captures", (long long)c->st.trace_captures);
  bench_json_int(js, "trace_hits", (long long)c->st.trace_hits);
  bench_json_int(js, "trace_misses", (long long)c->st.trace_misses);
  bench_json_int(js, "trace_recaptures", (long long)c->st.trace_recaptures);
  bench_json_close(js);
  bench_stats_free(&c->eager), bench_stats_free(&c->replay), bench_stats_free(&c->rotated);
  bench_stats_free(&c->capture), bench_stats_free(&c->capture_rotated);
  bench_stats_free(&c->replay_host), bench_stats_free(&c->rotated_host);
}

int main(int argc, char **argv) {
  const char *json_path = NULL;
  int quick = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--json") == 0 && i + 1 < argc) {
      json_path = argv[++i];
    } else if (strcmp(argv[i], "--quick") == 0) {
      quick = 1;
    } else if (strcmp(argv[i], "--type") == 0 && i + 1 < argc) {
      suffix = argv[++i];
      if (strcmp(suffix, "f16") == 0) type = CREC_ELEMENT_F16;
      else if (strcmp(suffix, "bf16") == 0) type = CREC_ELEMENT_BF16;
      else if (strcmp(suffix, "f32") == 0) type = CREC_ELEMENT_F32;
      else {
        fprintf(stderr, "crec_bench_library: --type is f16, bf16 or f32, not '%s'\n", suffix);
        return 2;
      }
    } else {
      fprintf(stderr, "usage: %s [--json FILE] [--quick] [--type f16|bf16|f32]\n", argv[0]);
      return 2;
    }
  }
  if (!bench_init()) return 0;
  int reps = quick ? 30 : 200;
  bench_json js;
  bench_json_begin(&js);
  bench_json_int(&js, "repetitions", reps);
  printf("\n== library calls in graphs, %s (us per execution: p50 [p90]; record in ms)\n", suffix);
  printf("%-17s %9s %16s %16s %16s %8s %16s %16s %9s %10s %5s %5s\n", "workload", "record", "eager", "replay",
         "replay rotated", "rot/rep", "capture", "capture rotated", "speedup", "inlined", "h:rep", "h:rot");
  void (*builders[7])(workload *) = {build_mlp, build_mlp_fused, build_chain, build_loop, build_fft_chain,
                                     build_cholesky_chain, build_conv_chain};
  double mlp_speedup = 0;
  for (int k = 0; k < 7; k++) {
    /* the FFTs and factorizations are f32 whatever --type says: their buffers are filled as f32 */
    crec_element given = type;
    if (builders[k] == build_fft_chain || builders[k] == build_cholesky_chain) type = CREC_ELEMENT_F32;
    workload w;
    builders[k](&w);
    columns c;
    int n = builders[k] == build_loop ? (quick ? 10 : 50) : reps;
    measure(&w, n, NULL, &c);
    if (k == 0) mlp_speedup = bench_p50(&c.eager) / bench_p50(&c.replay);
    report(&js, &w, w.name, &c);
    if (builders[k] == build_mlp || builders[k] == build_mlp_fused || builders[k] == build_chain) {
      /* the same, its traced commands kept as child graphs (as before inlining),
       * then with device-side updates, then with an executable graph per buffer set */
      for (int v = 0; v < 3; v++) {
        static const char *const how[] = {"child", "device", "variants"};
        crec_record_options o = CREC_RECORD_OPTIONS_INIT;
        o.trace_child_graphs = v == 0;
        o.device_updates = v == 1;
        o.variants = v == 2 ? 3 : 1;
        char name[40];
        snprintf(name, sizeof name, "%s/%s", w.name, how[v]);
        measure(&w, n, &o, &c);
        report(&js, &w, name, &c);
      }
    }
    workload_free(&w);
    type = given;
  }
  printf("speedup = eager / replay (p50). MLP: %.2fx (aim: at least 3x)\n", mlp_speedup);
  printf("capture rotated = re-capture + cuGraphExecUpdate + launch for each new buffer set\n");
  printf("rot/rep = replay rotated / replay (p50; aim for the MLP: at most 1.05x); inlined = traced commands "
         "inlined / traced commands\n");
  printf("h:rep, h:rot: host us of the replay call alone (p50), unchanged and rotated\n");
  printf("/child: the same workload recorded with trace_child_graphs (every traced command a child graph node); "
         "/device: with device_updates; /variants: with variants 3, an executable graph per buffer set "
         "(its rotated replays update nothing)\n");
  printf("fft_chain: complex f32 FFTs of 16 x 256 points; cholesky_chain: f32 64 x 64; both whatever --type says\n");
  bench_json_end(&js, json_path);
  return 0;
}
