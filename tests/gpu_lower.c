/* GPU suite for the MLIR front end: the programs under tests/mlir/ lowered,
 * recorded and replayed, compared byte for byte with the eager executor and
 * with values computed here on the CPU; a dynamic size changed across replays
 * updates nodes in place instead of recording again. Skips without a device. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu_util.h"

static crec_stream stream;

static void setup(void) {
  REQUIRE_DEVICE();
  crec_test_require_mlir();
  EXPECT_OK(crec_stream_create(0, &stream));
}
static void teardown(void) { crec_stream_destroy(stream); }

TestSuite(gpu_lower, .init = setup, .fini = teardown);

static crec_exec_stats stats(const crec_exec *e) {
  crec_exec_stats st = CREC_EXEC_STATS_INIT;
  EXPECT_OK(crec_exec_get_stats(e, &st));
  return st;
}

static void fill_floats(float *h, size_t n, uint32_t seed) {
  uint32_t s = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; i++) {
    s = s * 1664525u + 1013904223u;
    h[i] = (float)((int)(s >> 20) % 1000) / 64.0f; /* exact in float: sums stay exact */
  }
}

static void expect_floats(const float *got, const float *want, size_t n, const char *what) {
  for (size_t i = 0; i < n; i++)
    cr_assert_eq(got[i], want[i], "%s[%zu] is %g, expected %g", what, i, (double)got[i], (double)want[i]);
}

/* ---- an inline gpu.launch, outlined by crec ---- */

Test(gpu_lower, an_inline_gpu_launch_runs_as_its_outlined_kernel) {
  enum { N = 256 };
  crec_program *p = crec_test_lower_file("inline_launch.mlir");
  float hx[N], want[N], got[N];
  fill_floats(hx, N, 3);
  float *x = gt_alloc(N * 4), *y = gt_alloc(N * 4), *ye = gt_alloc(N * 4);
  gt_upload(x, hx, sizeof hx);
  crec_binding bb[2] = {{x, N * 4}, {y, N * 4}};
  crec_value b = {.f32 = 0.75f};
  crec_bindings bind = CREC_BINDINGS_INIT;
  bind.buffers = bb, bind.num_buffers = 2, bind.scalars = &b, bind.num_scalars = 1;
  crec_exec *e = NULL;
  EXPECT_OK(crec_record(p, &bind, NULL, &e));
  for (int it = 0; it < 3; it++) {
    b.f32 = 0.75f + (float)it;
    bb[1].ptr = y;
    gt_replay(e, &bind, stream);
    bb[1].ptr = ye;
    gt_eager(p, &bind, stream);
    gt_expect_same(y, ye, N * 4, "y (graph vs eager)");
    for (int i = 0; i < N; i++) want[i] = 2.0f * hx[i] + b.f32;
    gt_download(got, y, sizeof got);
    expect_floats(got, want, N, "y");
  }
  crec_exec_destroy(e);
  crec_device_free(x);
  crec_device_free(y);
  crec_device_free(ye);
  crec_program_destroy(p);
}

/* ---- host code ---- */

/* Runs executions of program `name` of tests/mlir (`replays` replays of one
 * recording, then an eager run) with the output captured; returns it without
 * the addresses printed. */
static char *program_output(const char *name, int replays) {
  crec_program *p = crec_test_lower_file(name);
  crec_test_capture out;
  crec_test_capture_begin(&out);
  crec_bindings bind = CREC_BINDINGS_INIT;
  crec_exec *e = NULL;
  EXPECT_OK(crec_record(p, &bind, NULL, &e));
  for (int i = 0; i < replays; i++) gt_replay(e, &bind, stream);
  gt_eager(p, &bind, stream);
  EXPECT_OK(crec_stream_synchronize(stream));
  crec_exec_destroy(e);
  crec_program_destroy(p);
  char *text = crec_test_capture_end(&out);
  /* each execution's address differs: drop it */
  for (char *a = text; (a = strstr(a, "base@ = 0x"));) {
    a += 8;
    char *end = a + 2;
    while (isxdigit((unsigned char)*end)) end++;
    memmove(a, end, strlen(end) + 1);
  }
  return text;
}

/* The host code around the kernel runs as host nodes in every replay and in
 * the eager run: each fills the host temporary, the kernel doubles it through
 * unified addressing, and each prints what mlir-runner prints, in order. */
Test(gpu_lower, host_code_runs_as_host_nodes_in_every_execution) {
  char *out = program_output("host_code.mlir", 3);
  static const char once[] = "Unranked Memref base@ =  rank = 1 offset = 0 sizes = [13] strides = [1] data = \n"
                             "[0,  2,  4,  6,  8,  10,  12,  14,  16,  18,  20,  22,  24]\n7\n";
  char want[4 * sizeof once];
  want[0] = '\0';
  for (int i = 0; i < 4; i++) strcat(want, once);
  cr_assert_str_eq(out, want, "3 replays and an eager run print 4 times");
  free(out);
}

/* ---- upstream-style programs: what their CHECK lines expect ---- */

static void require_sm80(void) {
  char name[128];
  int major = 0, minor = 0;
  EXPECT_OK(crec_device_describe(0, name, sizeof name, &major, &minor));
  if (major < 8) cr_skip_test("%s is sm_%d%d: cp.async and mma.sync need sm_80", name, major, minor);
}

/* What printMemrefF32/I32 print of a rows x cols matrix (rows 0: a vector) whose
 * element (i, j) is value(i, j), the address left out, `times` times. */
static char *memref_text(int rows, int cols, int (*value)(int, int), int times) {
  char one[4096];
  size_t n = 0;
  if (rows)
    n += (size_t)snprintf(one + n, sizeof one - n,
                          "Unranked Memref base@ =  rank = 2 offset = 0 sizes = [%d, %d] strides = [%d, 1] data = \n[",
                          rows, cols, cols);
  else
    n += (size_t)snprintf(one + n, sizeof one - n,
                          "Unranked Memref base@ =  rank = 1 offset = 0 sizes = [%d] strides = [1] data = \n", cols);
  for (int i = 0; i < (rows ? rows : 1); i++) {
    n += (size_t)snprintf(one + n, sizeof one - n, "%s[", i ? " " : "");
    for (int j = 0; j < cols; j++)
      n += (size_t)snprintf(one + n, sizeof one - n, "%d%s", value(i, j), j + 1 < cols ? (rows ? ",   " : ",  ") : "");
    n += (size_t)snprintf(one + n, sizeof one - n, "%s", !rows ? "]\n" : i + 1 < rows ? "], \n" : "]]\n");
  }
  char *all = malloc(times * n + 1);
  cr_assert_not_null(all);
  all[0] = '\0';
  for (int t = 0; t < times; t++) strcat(all, one);
  return all;
}

static int twice_index(int i, int j) { return (void)i, 2 * j; }
static int i_plus_10j(int i, int j) { return i + 10 * j; }
static int square_of_4i_plus_j(int i, int j) { return (4 * i + j) * (4 * i + j); }
static int ten_times_1_to_4(int i, int j) { return (void)i, 10 * (j + 1); }
static int cluster_of_block(int by, int bx) { return 4400 + 10 * (bx / 4) + by / 4; }

/* Clusters of 4 x 4 blocks (cluster.mlir): each block reads its cluster's size
 * (gpu.cluster_dim_blocks, %cluster_nctaid) and its cluster's place; 16 blocks
 * a cluster is a non-portable size, which crec allows the kernel. */
Test(gpu_lower, clusters_of_16_blocks_read_their_size_and_place) {
  char name[128];
  int major = 0, minor = 0;
  EXPECT_OK(crec_device_describe(0, name, sizeof name, &major, &minor));
  if (major < 9) cr_skip_test("%s is sm_%d%d: thread block clusters need sm_90", name, major, minor);
  char *out = program_output("cluster.mlir", 2), *want = memref_text(16, 16, cluster_of_block, 3);
  cr_assert_str_eq(out, want);
  free(out);
  free(want);
}

/* cp.async copies through shared memory (nvgpu.mlir): y = 2x. */
Test(gpu_lower, nvgpu_async_copies_stage_x_through_shared_memory) {
  require_sm80();
  char *out = program_output("nvgpu.mlir", 2), *want = memref_text(0, 32, twice_index, 3);
  cr_assert_str_eq(out, want);
  free(out);
  free(want);
}

/* The kernel a transform schedule rewrote into nvgpu.mma.sync (transform.mlir):
 * res = i + 10 j. */
Test(gpu_lower, a_transform_schedules_mma_sync_kernel_computes_the_product) {
  require_sm80();
  char *out = program_output("transform.mlir", 2), *want = memref_text(16, 8, i_plus_10j, 3);
  cr_assert_str_eq(out, want);
  free(out);
  free(want);
}

/* Allocations of sizes the text fixes (known_sizes.mlir): the squares of 4i + j. */
Test(gpu_lower, allocations_of_known_sizes_run_as_written) {
  char *out = program_output("known_sizes.mlir", 2), *want = memref_text(3, 4, square_of_4i_plus_j, 3);
  cr_assert_str_eq(out, want);
  free(out);
  free(want);
}

/* async.execute regions run in place, in order (async.mlir): 10 x [1, 2, 3, 4]. */
Test(gpu_lower, async_regions_run_in_place_in_order) {
  char *out = program_output("async.mlir", 2), *want = memref_text(0, 4, ten_times_1_to_4, 3);
  cr_assert_str_eq(out, want);
  free(out);
  free(want);
}

/* ---- ahead-of-time cubin ---- */

/* The inline-launch program lowered to a cubin for this device's chip (as crec
 * compile --cubin does) records and replays like its PTX. */
Test(gpu_lower, a_cubin_lowering_records_and_replays_like_its_ptx) {
  if (!crec_test_have_nvjitlink()) cr_skip_test("no libnvJitLink.so.13 (the CUDA 13 toolkit's): cubin lowering cannot run");
  enum { N = 256 };
  char name[128], chip[16], path[1024];
  int major = 0, minor = 0;
  EXPECT_OK(crec_device_describe(0, name, sizeof name, &major, &minor));
  /* LLVM 19 knows chips up to sm_90: a later chip runs sm_90 only through PTX */
  if (major * 10 + minor > 90) cr_skip_test("%s is sm_%d%d, after the sm_90 LLVM 19 compiles for", name, major, minor);
  snprintf(chip, sizeof chip, "sm_%d%d", major, minor);
  snprintf(path, sizeof path, "%sinline_launch.mlir", crec_test_mlir_dir());
  crec_program *prog[2];
  for (int cubin = 0; cubin < 2; cubin++) {
    crec_lower_options o = CREC_LOWER_OPTIONS_INIT;
    o.chip = chip;
    o.cubin = cubin;
    EXPECT_OK(crec_lower_mlir_file(path, &o, &prog[cubin]));
  }
  crec_module_info mi;
  EXPECT_OK(crec_module_get_info(prog[1], crec_program_module(prog[1], 0), &mi));
  cr_assert_eq(mi.format, CREC_IMAGE_CUBIN);
  float hx[N], got[2][N];
  fill_floats(hx, N, 5);
  float *x = gt_alloc(N * 4), *y[2] = {gt_alloc(N * 4), gt_alloc(N * 4)};
  gt_upload(x, hx, sizeof hx);
  for (int cubin = 0; cubin < 2; cubin++) {
    crec_binding bb[2] = {{x, N * 4}, {y[cubin], N * 4}};
    crec_value b = {.f32 = 1.25f};
    crec_bindings bind = CREC_BINDINGS_INIT;
    bind.buffers = bb, bind.num_buffers = 2, bind.scalars = &b, bind.num_scalars = 1;
    crec_exec *e = NULL;
    EXPECT_OK(crec_record(prog[cubin], &bind, NULL, &e));
    crec_exec_stats st = CREC_EXEC_STATS_INIT;
    EXPECT_OK(crec_exec_get_stats(e, &st));
    cr_expect_eq(st.modules_loaded, 1, "%s: %llu modules loaded", cubin ? "cubin" : "PTX",
                 (unsigned long long)st.modules_loaded);
    cr_expect_eq(st.modules_jit, cubin ? 0 : 1, "%s: %llu compiled from PTX", cubin ? "cubin" : "PTX",
                 (unsigned long long)st.modules_jit);
    gt_replay(e, &bind, stream);
    gt_download(got[cubin], y[cubin], sizeof got[cubin]);
    crec_exec_destroy(e);
  }
  expect_floats(got[1], got[0], N, "y (cubin vs PTX)");
  for (int i = 0; i < N; i++) cr_assert_eq(got[1][i], 2.0f * hx[i] + 1.25f, "y[%d]", i);
  crec_device_free(x);
  crec_device_free(y[0]);
  crec_device_free(y[1]);
  crec_program_destroy(prog[0]);
  crec_program_destroy(prog[1]);
}

/* ---- calls inlined: a helper called twice ---- */

Test(gpu_lower, inlined_calls_run_in_call_order) {
  enum { N = 128, ROT = 3 };
  crec_program *p = crec_test_lower_file("call.mlir");
  float hx[N], want[N], got[N];
  float *x[ROT], *xe = gt_alloc(N * 4);
  for (int k = 0; k < ROT; k++) x[k] = gt_alloc(N * 4);
  crec_binding bb = {x[0], N * 4};
  crec_value b = {.f32 = 0.5f};
  crec_bindings bind = CREC_BINDINGS_INIT;
  bind.buffers = &bb, bind.num_buffers = 1, bind.scalars = &b, bind.num_scalars = 1;
  fill_floats(hx, N, 5);
  gt_upload(x[0], hx, sizeof hx);
  crec_exec *e = NULL;
  EXPECT_OK(crec_record(p, &bind, NULL, &e));
  for (int it = 0; it < 6; it++) {
    int k = it % ROT;
    fill_floats(hx, N, 20 + (uint32_t)it);
    b.f32 = 0.25f * (float)it;
    gt_upload(x[k], hx, sizeof hx);
    gt_upload(xe, hx, sizeof hx);
    bb.ptr = x[k];
    gt_replay(e, &bind, stream);
    bb.ptr = xe;
    gt_eager(p, &bind, stream);
    gt_expect_same(x[k], xe, N * 4, "x (graph vs eager)");
    /* the first call computes 2x + b, the second 3 * that + 1 */
    for (int i = 0; i < N; i++) want[i] = 3.0f * (2.0f * hx[i] + b.f32) + 1.0f;
    gt_download(got, x[k], sizeof got);
    expect_floats(got, want, N, "x");
  }
  crec_exec_destroy(e);
  for (int k = 0; k < ROT; k++) crec_device_free(x[k]);
  crec_device_free(xe);
  crec_program_destroy(p);
}

/* ---- scf.for: a device loop, and an unrolled one ---- */

Test(gpu_lower, scf_for_loops_run_their_trip_counts) {
  enum { N = 256, ROWS = 4, COLS = 64, ROT = 3 };
  crec_program *p = crec_test_lower_file("for.mlir");
  float hx[N], got[N], want[N], gy[ROWS * COLS], junk[ROWS * COLS];
  float *x[ROT], *y[ROT], *xe = gt_alloc(N * 4), *ye = gt_alloc(ROWS * COLS * 4);
  for (int k = 0; k < ROT; k++) x[k] = gt_alloc(N * 4), y[k] = gt_alloc(ROWS * COLS * 4);
  for (int i = 0; i < ROWS * COLS; i++) junk[i] = -1.0f;
  crec_binding bb[2] = {{x[0], N * 4}, {y[0], ROWS * COLS * 4}};
  crec_bindings bind = CREC_BINDINGS_INIT;
  bind.buffers = bb, bind.num_buffers = 2;
  crec_exec *e = NULL;
  EXPECT_OK(crec_record(p, &bind, NULL, &e));
  /* each replay runs the device loop ten times again: its counter starts at 0 each time */
  for (int it = 0; it < 6; it++) {
    int k = it % ROT;
    fill_floats(hx, N, 40 + (uint32_t)it);
    gt_upload(x[k], hx, sizeof hx);
    gt_upload(xe, hx, sizeof hx);
    gt_upload(y[k], junk, sizeof junk);
    gt_upload(ye, junk, sizeof junk);
    bb[0].ptr = x[k], bb[1].ptr = y[k];
    gt_replay(e, &bind, stream);
    bb[0].ptr = xe, bb[1].ptr = ye;
    gt_eager(p, &bind, stream);
    gt_expect_same(x[k], xe, N * 4, "x (graph vs eager)");
    gt_expect_same(y[k], ye, ROWS * COLS * 4, "y (graph vs eager)");
    for (int i = 0; i < N; i++) want[i] = hx[i] + 10.0f;
    gt_download(got, x[k], sizeof got);
    expect_floats(got, want, N, "x");
    gt_download(gy, y[k], sizeof gy);
    for (int r = 0; r < ROWS; r++)
      for (int t = 0; t < COLS; t++)
        cr_assert_eq(gy[r * COLS + t], (float)(100 * r + t), "y[%d][%d] is %g", r, t, (double)gy[r * COLS + t]);
  }
  cr_assert_eq(stats(e).replays, 6);
  crec_exec_destroy(e);
  for (int k = 0; k < ROT; k++) crec_device_free(x[k]), crec_device_free(y[k]);
  crec_device_free(xe);
  crec_device_free(ye);
  crec_program_destroy(p);
}

/* ---- linalg.fill, linalg.copy, memref.copy, gpu.alloc ---- */

Test(gpu_lower, fills_and_copies_compute_the_expected_bytes) {
  enum { N = 256, F = 64, ROT = 2 };
  crec_program *p = crec_test_lower_file("fill_copy.mlir");
  float hx[N], got[N], want[N];
  int16_t flags[F], junk[F];
  for (int i = 0; i < F; i++) junk[i] = -3;
  float *x[ROT], *y[ROT], *xe = gt_alloc(N * 4), *ye = gt_alloc(N * 4);
  int16_t *fl[ROT], *fle = gt_alloc(F * 2);
  for (int k = 0; k < ROT; k++) x[k] = gt_alloc(N * 4), y[k] = gt_alloc(N * 4), fl[k] = gt_alloc(F * 2);
  crec_binding bb[3] = {{x[0], N * 4}, {y[0], N * 4}, {fl[0], F * 2}};
  crec_bindings bind = CREC_BINDINGS_INIT;
  bind.buffers = bb, bind.num_buffers = 3;
  crec_exec *e = NULL;
  EXPECT_OK(crec_record(p, &bind, NULL, &e));
  for (int it = 0; it < 4; it++) {
    int k = it % ROT;
    fill_floats(hx, N, 60 + (uint32_t)it);
    gt_upload(x[k], hx, sizeof hx);
    gt_upload(xe, hx, sizeof hx);
    gt_upload(fl[k], junk, sizeof junk);
    gt_upload(fle, junk, sizeof junk);
    bb[0].ptr = x[k], bb[1].ptr = y[k], bb[2].ptr = fl[k];
    gt_replay(e, &bind, stream);
    bb[0].ptr = xe, bb[1].ptr = ye, bb[2].ptr = fle;
    gt_eager(p, &bind, stream);
    gt_expect_same(x[k], xe, N * 4, "x (graph vs eager)");
    gt_expect_same(y[k], ye, N * 4, "y (graph vs eager)");
    gt_expect_same(fl[k], fle, F * 2, "flags (graph vs eager)");
    for (int i = 0; i < N; i++) want[i] = hx[i] + 0.5f;
    gt_download(got, y[k], sizeof got);
    expect_floats(got, want, N, "y");
    gt_download(got, x[k], sizeof got);
    expect_floats(got, want, N, "x (the copy of y)");
    gt_download(flags, fl[k], sizeof flags);
    for (int i = 0; i < F; i++) cr_assert_eq(flags[i], i < 32 ? 7 : 9, "flags[%d] is %d", i, flags[i]);
  }
  crec_exec_destroy(e);
  for (int k = 0; k < ROT; k++) crec_device_free(x[k]), crec_device_free(y[k]), crec_device_free(fl[k]);
  crec_device_free(xe);
  crec_device_free(ye);
  crec_device_free(fle);
  crec_program_destroy(p);
}

/* ---- saxpy: a static kernel compiled from its body ---- */

Test(gpu_lower, saxpy_replays_match_eager_and_the_cpu) {
  enum { N = 1024, ROT = 3 };
  crec_program *p = crec_test_lower_file("saxpy.mlir");
  float hx[N], hy[ROT][N], want[N], got[N];
  float *x = gt_alloc(N * 4), *y[ROT], *ye[ROT];
  fill_floats(hx, N, 1);
  gt_upload(x, hx, sizeof hx);
  for (int k = 0; k < ROT; k++) {
    fill_floats(hy[k], N, 10 + (uint32_t)k);
    y[k] = gt_alloc(N * 4);
    ye[k] = gt_alloc(N * 4);
    gt_upload(y[k], hy[k], sizeof hy[k]);
    gt_upload(ye[k], hy[k], sizeof hy[k]);
  }
  crec_binding b[2] = {{x, N * 4}, {y[0], N * 4}};
  crec_value a = {.f32 = 0.5f};
  crec_bindings bind = CREC_BINDINGS_INIT;
  bind.buffers = b, bind.num_buffers = 2, bind.scalars = &a, bind.num_scalars = 1;
  crec_exec *e = NULL;
  EXPECT_OK(crec_record(p, &bind, NULL, &e));
  for (int it = 0; it < 9; it++) {
    int k = it % ROT;
    a.f32 = (float)(it + 1) * 0.25f;
    b[1].ptr = y[k];
    gt_replay(e, &bind, stream);
    b[1].ptr = ye[k];
    gt_eager(p, &bind, stream);
    gt_expect_same(y[k], ye[k], N * 4, "y (graph vs eager)");
    for (int i = 0; i < N; i++) hy[k][i] = a.f32 * hx[i] + hy[k][i];
    gt_download(got, y[k], sizeof got);
    memcpy(want, hy[k], sizeof want);
    expect_floats(got, want, N, "y");
  }
  crec_exec_stats st = stats(e);
  cr_assert_eq(st.replays, 9);
  crec_exec_destroy(e);
  crec_device_free(x);
  for (int k = 0; k < ROT; k++) {
    crec_device_free(y[k]);
    crec_device_free(ye[k]);
  }
  crec_program_destroy(p);
}

/* ---- dynamic n: descriptors, ceildiv grid, node updates ---- */

Test(gpu_lower, dynamic_n_changes_across_replays_without_recording_again) {
  enum { MAX = 5000 };
  crec_program *p = crec_test_lower_file("dynamic.mlir");
  static float hx[MAX], hy[MAX], got[MAX], eager[MAX];
  fill_floats(hx, MAX, 3);
  float *x = gt_alloc(MAX * 4), *y = gt_alloc(MAX * 4), *ye = gt_alloc(MAX * 4);
  gt_upload(x, hx, sizeof hx);
  const size_t ns[] = {1000, 1000, 3000, 257, 5000, 257};
  crec_binding b[2] = {{x, 1000 * 4}, {y, 1000 * 4}};
  crec_bindings bind = CREC_BINDINGS_INIT;
  bind.buffers = b, bind.num_buffers = 2;
  crec_exec *e = NULL;
  EXPECT_OK(crec_record(p, &bind, NULL, &e));
  crec_exec_stats prev = stats(e);
  for (size_t it = 0; it < sizeof ns / sizeof ns[0]; it++) {
    size_t n = ns[it];
    for (size_t i = 0; i < MAX; i++) hy[i] = -1.0f;
    gt_upload(y, hy, sizeof hy);
    gt_upload(ye, hy, sizeof hy);
    b[0].size = b[1].size = n * 4;
    b[1].ptr = y;
    gt_replay(e, &bind, stream);
    b[1].ptr = ye;
    gt_eager(p, &bind, stream);
    gt_download(got, y, sizeof got);
    gt_download(eager, ye, sizeof eager);
    for (size_t i = 0; i < MAX; i++) {
      float want = i < n ? 2 * hx[i] : -1.0f; /* nothing past n is written */
      cr_assert_eq(got[i], want, "n=%zu: y[%zu] is %g, expected %g", n, i, (double)got[i], (double)want);
      cr_assert_eq(eager[i], want, "n=%zu: eager y[%zu] is %g, expected %g", n, i, (double)eager[i], (double)want);
    }
    crec_exec_stats st = stats(e);
    cr_assert_eq(st.replays, prev.replays + 1);
    if (it > 0 && n == ns[it - 1]) {
      cr_assert_eq(st.last_nodes_updated, 0, "n=%zu again: nothing to update", n);
      cr_assert_eq(st.host_function_calls, prev.host_function_calls, "unchanged sizes run no host function");
    } else if (it > 0) {
      cr_assert_gt(st.last_nodes_updated, 0, "n=%zu: the launch node is updated in place", n);
      cr_assert_gt(st.host_function_calls, prev.host_function_calls, "new sizes run the JIT-compiled host function");
    }
    prev = st;
  }
  crec_exec_destroy(e);
  crec_device_free(x);
  crec_device_free(y);
  crec_device_free(ye);
  crec_program_destroy(p);
}

/* ---- control flow on the device ---- */

typedef struct control_side {
  int32_t *counter, *which;
  int8_t *flag, *cond;
  float *x;
} control_side;

static void control_alloc(control_side *s) {
  s->counter = gt_alloc(4);
  s->flag = gt_alloc(1);
  s->cond = gt_alloc(2);
  s->which = gt_alloc(4);
  s->x = gt_alloc(64 * 4);
}
static void control_free(control_side *s) {
  crec_device_free(s->counter);
  crec_device_free(s->flag);
  crec_device_free(s->cond);
  crec_device_free(s->which);
  crec_device_free(s->x);
}
static void control_reset(control_side *s, int32_t counter, int8_t cond, int32_t which, const float *x) {
  int8_t c[2] = {0, cond}, f = 0;
  gt_upload(s->counter, &counter, 4);
  gt_upload(s->flag, &f, 1);
  gt_upload(s->cond, c, 2);
  gt_upload(s->which, &which, 4);
  gt_upload(s->x, x, 64 * 4);
}
static void control_bind(control_side *s, crec_binding *b) {
  b[0] = (crec_binding){s->counter, 4};
  b[1] = (crec_binding){s->flag, 1};
  b[2] = (crec_binding){s->cond, 2};
  b[3] = (crec_binding){s->which, 4};
  b[4] = (crec_binding){s->x, 64 * 4};
}

Test(gpu_lower, while_if_and_switch_run_on_the_device) {
  crec_program *p = crec_test_lower_file("control.mlir");
  control_side g, e;
  control_alloc(&g);
  control_alloc(&e);
  crec_binding gb[5], eb[5];
  crec_bindings bg = CREC_BINDINGS_INIT, be = CREC_BINDINGS_INIT;
  bg.buffers = gb, be.buffers = eb, bg.num_buffers = be.num_buffers = 5;
  control_bind(&g, gb);
  control_bind(&e, eb);
  float x0[64], got[64];
  fill_floats(x0, 64, 7);
  crec_exec *ex = NULL;
  EXPECT_OK(crec_record(p, &bg, NULL, &ex));
  const int32_t counters[] = {5, 1, 0, 12};
  const int8_t conds[] = {1, 0, 1, 0};
  const int32_t whiches[] = {0, 5, 7, -1};
  for (int it = 0; it < 4; it++) {
    control_reset(&g, counters[it], conds[it], whiches[it], x0);
    control_reset(&e, counters[it], conds[it], whiches[it], x0);
    gt_replay(ex, &bg, stream);
    gt_eager(p, &be, stream);
    gt_expect_same(g.x, e.x, 64 * 4, "x (graph vs eager)");
    gt_expect_same(g.counter, e.counter, 4, "counter (graph vs eager)");
    /* the loop adds 1 per iteration: counter-1 times (step runs before each test) */
    float add = (float)(counters[it] > 1 ? counters[it] - 1 : 0);
    add += conds[it] ? 10.0f : 100.0f;
    add += whiches[it] == 0 ? 1.0f : whiches[it] == 5 ? 0.0f : 10.0f;
    gt_download(got, g.x, sizeof got);
    for (int i = 0; i < 64; i++)
      cr_assert_eq(got[i], x0[i] + add, "run %d: x[%d] is %g, expected %g", it, i, (double)got[i], (double)(x0[i] + add));
    int32_t c;
    gt_download(&c, g.counter, 4);
    cr_assert_eq(c, 0, "run %d: the loop ran the counter down", it);
  }
  crec_exec_destroy(ex);
  control_free(&g);
  control_free(&e);
  crec_program_destroy(p);
}

/* ---- memory: temporaries, constants, views ---- */

Test(gpu_lower, temporaries_constants_and_views_compute_the_expected_bytes) {
  crec_program *p = crec_test_lower_file("memory.mlir");
  float *out = gt_alloc(64), *oute = gt_alloc(64), init[16], got[16];
  for (int i = 0; i < 16; i++) init[i] = -7.0f;
  gt_upload(out, init, sizeof init);
  gt_upload(oute, init, sizeof init);
  crec_binding b = {out, 64};
  crec_bindings bind = CREC_BINDINGS_INIT;
  bind.buffers = &b, bind.num_buffers = 1;
  crec_exec *e = NULL;
  EXPECT_OK(crec_record(p, &bind, NULL, &e));
  gt_replay(e, &bind, stream);
  b.ptr = oute;
  gt_eager(p, &bind, stream);
  gt_expect_same(out, oute, 64, "out (graph vs eager)");
  gt_download(got, out, sizeof got);
  const float want[16] = {1, 16, 81, 256, -7, -7, -7, -7, 1, 4, 9, 16, 1, 4, 9, 16};
  expect_floats(got, want, 16, "out");
  crec_exec_destroy(e);
  crec_device_free(out);
  crec_device_free(oute);
  crec_program_destroy(p);
}

/* ---- external kernels: an nvcc image and a gpu.binary ---- */

Test(gpu_lower, crec_image_kernels_run_with_the_c_abi) {
  enum { MAX = 1000 };
  crec_program *p = crec_test_lower_file("image.mlir");
  static float hx[MAX], hy[MAX], got[MAX];
  fill_floats(hx, MAX, 5);
  fill_floats(hy, MAX, 6);
  float *x = gt_alloc(MAX * 4), *y = gt_alloc(MAX * 4), *ye = gt_alloc(MAX * 4);
  gt_upload(x, hx, sizeof hx);
  crec_binding b[2] = {{x, MAX * 4}, {y, MAX * 4}};
  crec_value sc[2] = {{.f32 = 3.0f}, {.i32 = 700}};
  crec_bindings bind = CREC_BINDINGS_INIT;
  bind.buffers = b, bind.num_buffers = 2, bind.scalars = sc, bind.num_scalars = 2;
  crec_exec *e = NULL;
  EXPECT_OK(crec_record(p, &bind, NULL, &e));
  const int32_t ns[] = {700, 999, 1};
  for (int it = 0; it < 3; it++) {
    sc[1].i32 = ns[it];
    gt_upload(y, hy, sizeof hy);
    gt_upload(ye, hy, sizeof hy);
    b[1].ptr = y;
    gt_replay(e, &bind, stream);
    b[1].ptr = ye;
    gt_eager(p, &bind, stream);
    gt_expect_same(y, ye, MAX * 4, "y (graph vs eager)");
    gt_download(got, y, sizeof got);
    for (int i = 0; i < MAX; i++) {
      float want = i < ns[it] ? 3.0f * hx[i] : hy[i];
      cr_assert_eq(got[i], want, "n=%d: y[%d] is %g, expected %g", ns[it], i, (double)got[i], (double)want);
    }
  }
  crec_exec_destroy(e);
  crec_device_free(x);
  crec_device_free(y);
  crec_device_free(ye);
  crec_program_destroy(p);
}

Test(gpu_lower, gpu_binary_kernels_run_with_descriptors) {
  enum { N = 256, M = 200 };
  crec_program *p = crec_test_lower_file("binary.mlir");
  int32_t hx[N], hy[N], got[N];
  for (int i = 0; i < N; i++) hx[i] = i * 3, hy[i] = -1;
  int32_t *x = gt_alloc(N * 4), *y = gt_alloc(N * 4);
  gt_upload(x, hx, sizeof hx);
  gt_upload(y, hy, sizeof hy);
  crec_binding b[2] = {{x, N * 4}, {y, M * 4}};
  crec_bindings bind = CREC_BINDINGS_INIT;
  bind.buffers = b, bind.num_buffers = 2;
  crec_exec *e = NULL;
  EXPECT_OK(crec_record(p, &bind, NULL, &e));
  gt_replay(e, &bind, stream);
  gt_download(got, y, sizeof got);
  for (int i = 0; i < N; i++) {
    int32_t want = i < M ? i * 3 + 1 : -1;
    cr_assert_eq(got[i], want, "y[%d] is %d, expected %d", i, got[i], want);
  }
  gt_download(got, x, sizeof got);
  for (int i = 0; i < N; i++) cr_assert_eq(got[i], i * 3 + 1);
  crec_exec_destroy(e);
  crec_device_free(x);
  crec_device_free(y);
  crec_program_destroy(p);
}

/* ---- host arithmetic feeding dims and kernel scalars ---- */

Test(gpu_lower, host_arithmetic_sets_grid_and_scalars_at_each_replay) {
  enum { MAX = 4096 };
  crec_program *p = crec_test_lower_file("host.mlir");
  static float hx[MAX], got[MAX], eager[MAX];
  fill_floats(hx, MAX, 9);
  float *x = gt_alloc(MAX * 4), *xe = gt_alloc(MAX * 4);
  crec_binding b = {x, MAX * 4};
  crec_value sc[3] = {{.i64 = 10}, {.i64 = 30}, {.f32 = 0.75f}};
  crec_bindings bind = CREC_BINDINGS_INIT;
  bind.buffers = &b, bind.num_buffers = 1, bind.scalars = sc, bind.num_scalars = 3;
  crec_exec *e = NULL;
  EXPECT_OK(crec_record(p, &bind, NULL, &e));
  const int64_t shapes[][2] = {{10, 30}, {64, 64}, {1, 129}, {0, 5}};
  for (int it = 0; it < 4; it++) {
    sc[0].i64 = shapes[it][0];
    sc[1].i64 = shapes[it][1];
    int64_t n = shapes[it][0] * shapes[it][1];
    gt_upload(x, hx, sizeof hx);
    gt_upload(xe, hx, sizeof hx);
    b.ptr = x;
    gt_replay(e, &bind, stream);
    b.ptr = xe;
    gt_eager(p, &bind, stream);
    gt_download(got, x, sizeof got);
    gt_download(eager, xe, sizeof eager);
    for (int64_t i = 0; i < MAX; i++) {
      float want = i < n ? hx[i] * 1.5f : hx[i];
      cr_assert_eq(got[i], want, "%lldx%lld: x[%lld] is %g, expected %g", (long long)shapes[it][0],
                   (long long)shapes[it][1], (long long)i, (double)got[i], (double)want);
      cr_assert_eq(eager[i], want, "eager x[%lld]", (long long)i);
    }
  }
  crec_exec_destroy(e);
  crec_device_free(x);
  crec_device_free(xe);
  crec_program_destroy(p);
}

/* Host code on an entry argument works on a copy that follows the binding: each
 * replay (on one of two rotating buffers, reset to 1 2 3 4) stores 7 into x[0]
 * on the host, the kernel doubles x, and the host prints it. */
Test(gpu_lower, host_code_on_an_argument_follows_its_binding) {
  crec_program *p = crec_test_lower_text(
      "func.func @main(%x: memref<4xi32> {crec.name = \"x\"}) {\n"
      "  %c0 = arith.constant 0 : index\n"
      "  %c1 = arith.constant 1 : index\n"
      "  %c4 = arith.constant 4 : index\n"
      "  %v = arith.constant 7 : i32\n"
      "  memref.store %v, %x[%c0] : memref<4xi32>\n"
      "  gpu.launch blocks(%b0, %b1, %b2) in (%g0 = %c1, %g1 = %c1, %g2 = %c1)\n"
      "             threads(%t0, %t1, %t2) in (%s0 = %c4, %s1 = %c1, %s2 = %c1) {\n"
      "    %e = memref.load %x[%t0] : memref<4xi32>\n"
      "    %d = arith.addi %e, %e : i32\n"
      "    memref.store %d, %x[%t0] : memref<4xi32>\n"
      "    gpu.terminator\n"
      "  }\n"
      "  %u = memref.cast %x : memref<4xi32> to memref<*xi32>\n"
      "  call @printMemrefI32(%u) : (memref<*xi32>) -> ()\n"
      "  return\n"
      "}\n"
      "func.func private @printMemrefI32(memref<*xi32>)\n");
  static const int32_t init[4] = {1, 2, 3, 4};
  void *x[2] = {gt_alloc(16), gt_alloc(16)};
  crec_binding bd[1] = {{x[0], 16}};
  crec_bindings bind = CREC_BINDINGS_INIT;
  bind.buffers = bd;
  bind.num_buffers = 1;
  crec_test_capture out;
  crec_test_capture_begin(&out);
  crec_exec *e = NULL;
  EXPECT_OK(crec_record(p, &bind, NULL, &e));
  for (int i = 0; i < 4; i++) {
    bd[0].ptr = x[i % 2];
    gt_upload(x[i % 2], init, sizeof init);
    gt_replay(e, &bind, stream);
    EXPECT_OK(crec_stream_synchronize(stream));
  }
  crec_exec_destroy(e);
  char *text = crec_test_capture_end(&out);
  int32_t got[4];
  gt_download(got, x[1], sizeof got);
  cr_assert(got[0] == 14 && got[1] == 4 && got[2] == 6 && got[3] == 8, "x = %d %d %d %d", got[0], got[1], got[2],
            got[3]);
  int lines = 0;
  for (const char *a = text; (a = strstr(a, "[14,  4,  6,  8]\n")); a++) lines++;
  cr_assert_eq(lines, 4, "4 replays print x each time: %s", text);
  free(text);
  crec_device_free(x[0]);
  crec_device_free(x[1]);
  crec_program_destroy(p);
}

/* An scf.for whose upper bound is a bound scalar (tests/mlir/for_scalar.mlir):
 * each replay runs the body as many times as that replay's n says
 * (max(ceil((n - 1) / 2), 0) there). */
Test(gpu_lower, scf_for_with_a_bound_scalar_runs_each_replays_trip_count) {
  crec_program *p = crec_test_lower_file("for_scalar.mlir");
  void *x = gt_alloc(16);
  crec_binding bd[1] = {{x, 16}};
  crec_value n;
  crec_bindings bind = CREC_BINDINGS_INIT;
  bind.buffers = bd;
  bind.num_buffers = 1;
  bind.scalars = &n;
  bind.num_scalars = 1;
  n.i64 = 7;
  crec_exec *e = NULL;
  EXPECT_OK(crec_record(p, &bind, NULL, &e));
  static const int64_t ns[] = {7, 0, 2, 10};
  static const int32_t trips[] = {3, 0, 1, 5};
  static const int32_t zero[4] = {0};
  for (int i = 0; i < 4; i++) {
    gt_upload(x, zero, sizeof zero);
    n.i64 = ns[i];
    gt_replay(e, &bind, stream);
    EXPECT_OK(crec_stream_synchronize(stream));
    int32_t got[4];
    gt_download(got, x, sizeof got);
    cr_assert_eq(got[0], trips[i], "n = %lld: the body ran %d times, %d expected", (long long)ns[i], got[0], trips[i]);
  }
  crec_exec_destroy(e);
  crec_device_free(x);
  crec_program_destroy(p);
}

/* A TMA load (tests/mlir/tma.mlir): the host fills x, the kernel copies it into
 * shared memory through the descriptor crec encodes from x's address, and
 * writes y = 2x. Over 6 replays that rotate x and y among 3 buffer sets, each
 * replay's y is 2x of its own x (a descriptor left on another set's x would
 * read that one's bytes, so every set's x starts as something else), the
 * descriptor is encoded again each time x moves, and an eager run agrees. */
Test(gpu_lower, a_tma_descriptor_follows_its_tensor_across_rotated_replays) {
  char name[128];
  int major = 0, minor = 0;
  EXPECT_OK(crec_device_describe(0, name, sizeof name, &major, &minor));
  if (major < 9) cr_skip_test("%s is sm_%d%d: TMA needs sm_90", name, major, minor);
  enum { N = 32 * 32 };
  crec_program *p = crec_test_lower_file("tma.mlir");
  void *x[3], *y[3];
  float stale[N], got[N];
  for (int k = 0; k < 3; k++) {
    x[k] = gt_alloc(N * 4), y[k] = gt_alloc(N * 4);
    for (int i = 0; i < N; i++) stale[i] = (float)(-1000 * (k + 1));
    gt_upload(x[k], stale, sizeof stale);
    gt_upload(y[k], stale, sizeof stale);
  }
  crec_binding bd[2] = {{x[0], N * 4}, {y[0], N * 4}};
  crec_bindings bind = CREC_BINDINGS_INIT;
  bind.buffers = bd;
  bind.num_buffers = 2;
  crec_test_capture out; /* printMemrefF32's lines, not checked here */
  crec_test_capture_begin(&out);
  crec_exec *e = NULL;
  EXPECT_OK(crec_record(p, &bind, NULL, &e));
  for (int r = 0; r < 6; r++) {
    int k = r % 3;
    for (int i = 0; i < N; i++) stale[i] = (float)(-7 * r - 1); /* y is rewritten whole, x by the host code */
    gt_upload(y[k], stale, sizeof stale);
    gt_upload(x[k], stale, sizeof stale);
    bd[0].ptr = x[k], bd[1].ptr = y[k];
    gt_replay(e, &bind, stream);
    EXPECT_OK(crec_stream_synchronize(stream));
    gt_download(got, y[k], sizeof got);
    for (int i = 0; i < N; i++)
      if (got[i] != 2.0f * (float)i) cr_assert_fail("replay %d (set %d): y[%d] = %g, not %g", r, k, i, got[i], 2.0 * i);
  }
  crec_exec_stats st = stats(e);
  cr_assert_geq(st.custom_updates, 5, "the descriptor was encoded again %llu times for 5 moves of x",
                (unsigned long long)st.custom_updates);
  bd[0].ptr = x[1], bd[1].ptr = y[1];
  gt_upload(y[1], stale, sizeof stale);
  gt_eager(p, &bind, stream);
  EXPECT_OK(crec_stream_synchronize(stream));
  gt_download(got, y[1], sizeof got);
  for (int i = 0; i < N; i++)
    if (got[i] != 2.0f * (float)i) cr_assert_fail("eager: y[%d] = %g, not %g", i, got[i], 2.0 * i);
  free(crec_test_capture_end(&out));
  crec_exec_destroy(e);
  for (int k = 0; k < 3; k++) crec_device_free(x[k]), crec_device_free(y[k]);
  crec_program_destroy(p);
}
