/* GPU suite for library ops lowered from MLIR: tests/mlir/gemm.mlir (linalg.matmul,
 * a bias/ReLU kernel, "crec.gemm" with a transposed operand and a fused epilogue,
 * linalg.batch_matmul) against a CPU reference and the eager executor over
 * rotated replays; tests/mlir/collectives.mlir on one rank; tests/mlir/custom.mlir
 * with a handler registered here. Skips without a device (or without NCCL for
 * the collectives). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "gpu_util.h"

static crec_stream stream;

static void setup(void) {
  REQUIRE_DEVICE();
  crec_test_require_mlir();
  EXPECT_OK(crec_stream_create(0, &stream));
}
static void teardown(void) { crec_stream_destroy(stream); }

TestSuite(gpu_lower_library, .init = setup, .fini = teardown);

/* Multiples of 1/4 in [-0.5, 0.5]: every product and sum below is exact in f32
 * (and in TF32 inputs), whatever order cuBLASLt adds in. */
static void fill_quarters(float *h, size_t n, uint32_t seed) {
  uint32_t s = seed * 2654435761u + 7;
  for (size_t i = 0; i < n; i++) {
    s = s * 1664525u + 1013904223u;
    h[i] = (float)((int)(s >> 24) % 5 - 2) / 4.0f;
  }
}

static void expect_exact(const float *got, const double *want, size_t n, const char *what, int run) {
  for (size_t i = 0; i < n; i++)
    cr_assert_eq((double)got[i], want[i], "run %d: %s[%zu] is %.9g, expected %.9g", run, what, i, (double)got[i],
                 want[i]);
}

/* ---- gemm.mlir: an MLP of two layers and a batched product ---- */

enum { M = 20, K1 = 37, N1 = 45, N2 = 13, B = 3, BM = 4, BK = 5, BN = 6, ROT = 3, RUNS = 6 };

/* y = relu(0.5 * relu(x·w1 + b1)·w2ᵀ + b2); z = z0 + p·q for each matrix of the batch. */
static void mlp_reference(const float *x, const float *w1, const float *b1, const float *w2, const float *b2,
                          double *y) {
  static double h[M * N1];
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N1; j++) {
      double acc = 0;
      for (int l = 0; l < K1; l++) acc += (double)x[i * K1 + l] * w1[l * N1 + j];
      acc += b1[j];
      h[i * N1 + j] = acc > 0 ? acc : 0;
    }
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N2; j++) {
      double acc = 0;
      for (int l = 0; l < N1; l++) acc += h[i * N1 + l] * w2[j * N1 + l];
      acc = 0.5 * acc + b2[j];
      y[i * N2 + j] = acc > 0 ? acc : 0;
    }
}

static void batch_reference(const float *p, const float *q, const float *z0, double *z) {
  for (int b = 0; b < B; b++)
    for (int i = 0; i < BM; i++)
      for (int j = 0; j < BN; j++) {
        double acc = z0[(b * BM + i) * BN + j];
        for (int l = 0; l < BK; l++) acc += (double)p[(b * BM + i) * BK + l] * q[(b * BK + l) * BN + j];
        z[(b * BM + i) * BN + j] = acc;
      }
}

Test(gpu_lower_library, mlp_and_batched_gemm_match_the_cpu_and_eager_over_rotated_replays) {
  crec_program *p = crec_test_lower_file("gemm.mlir");
  static float hx[M * K1], hw1[K1 * N1], hb1[N1], hw2[N2 * N1], hb2[N2], hp[B * BM * BK], hq[B * BK * BN],
      hz0[B * BM * BN], got_y[M * N2], got_z[B * BM * BN];
  static double want_y[M * N2], want_z[B * BM * BN];
  fill_quarters(hw1, K1 * N1, 1);
  fill_quarters(hb1, N1, 2);
  fill_quarters(hw2, N2 * N1, 3);
  fill_quarters(hb2, N2, 4);
  fill_quarters(hp, B * BM * BK, 5);
  fill_quarters(hq, B * BK * BN, 6);
  /* fixed: weights, biases, p and q; rotated: x, y, z (and eager's own y and z) */
  void *w1 = gt_alloc(sizeof hw1), *b1 = gt_alloc(sizeof hb1), *w2 = gt_alloc(sizeof hw2), *b2 = gt_alloc(sizeof hb2);
  void *dp = gt_alloc(sizeof hp), *dq = gt_alloc(sizeof hq);
  gt_upload(w1, hw1, sizeof hw1);
  gt_upload(b1, hb1, sizeof hb1);
  gt_upload(w2, hw2, sizeof hw2);
  gt_upload(b2, hb2, sizeof hb2);
  gt_upload(dp, hp, sizeof hp);
  gt_upload(dq, hq, sizeof hq);
  void *x[ROT], *y[ROT], *z[ROT], *ye = gt_alloc(sizeof got_y), *ze = gt_alloc(sizeof got_z);
  for (int s = 0; s < ROT; s++) {
    x[s] = gt_alloc(sizeof hx);
    y[s] = gt_alloc(sizeof got_y);
    z[s] = gt_alloc(sizeof got_z);
  }
  crec_binding bd[9] = {{x[0], sizeof hx}, {w1, sizeof hw1}, {b1, sizeof hb1}, {w2, sizeof hw2}, {b2, sizeof hb2},
                        {y[0], sizeof got_y}, {dp, sizeof hp}, {dq, sizeof hq}, {z[0], sizeof got_z}};
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = bd;
  bs.num_buffers = 9;
  crec_exec *ex = NULL;
  EXPECT_OK(crec_record(p, &bs, NULL, &ex));
  for (int it = 0; it < RUNS; it++) {
    int s = it % ROT;
    fill_quarters(hx, M * K1, 100 + (uint32_t)it);
    fill_quarters(hz0, B * BM * BN, 200 + (uint32_t)it);
    gt_upload(x[s], hx, sizeof hx);
    gt_upload(z[s], hz0, sizeof hz0);
    gt_upload(ze, hz0, sizeof hz0);
    gt_fill(y[s], sizeof got_y, (uint32_t)it); /* layer2 overwrites y: beta is 0 */
    bd[0].ptr = x[s];
    bd[5].ptr = y[s];
    bd[8].ptr = z[s];
    gt_replay(ex, &bs, stream);
    bd[5].ptr = ye;
    bd[8].ptr = ze;
    gt_eager(p, &bs, stream);
    gt_expect_same(y[s], ye, sizeof got_y, "y (graph vs eager)");
    gt_expect_same(z[s], ze, sizeof got_z, "z (graph vs eager)");
    mlp_reference(hx, hw1, hb1, hw2, hb2, want_y);
    batch_reference(hp, hq, hz0, want_z);
    gt_download(got_y, y[s], sizeof got_y);
    gt_download(got_z, z[s], sizeof got_z);
    expect_exact(got_y, want_y, M * N2, "y", it);
    expect_exact(got_z, want_z, B * BM * BN, "z (accumulated into)", it);
  }
  crec_exec_stats st = CREC_EXEC_STATS_INIT;
  EXPECT_OK(crec_exec_get_stats(ex, &st));
  cr_expect_eq(st.replays, RUNS);
  cr_expect_eq(st.traced_nodes, 3, "three GEMMs, three child graphs: %llu", (unsigned long long)st.traced_nodes);
  /* each GEMM sees sets 1 and 2 once (replay 0 keeps the recorded set 0), then finds every set in its cache */
  cr_expect_eq(st.trace_misses, 3 * 2, "misses: %llu", (unsigned long long)st.trace_misses);
  cr_expect_eq(st.trace_hits, 3 * (RUNS - 1 - 2), "hits: %llu", (unsigned long long)st.trace_hits);
  cr_expect_eq(st.trace_recaptures, 0);
  crec_exec_destroy(ex);
  crec_program_destroy(p);
  void *all[] = {w1, b1, w2, b2, dp, dq, ye, ze};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) crec_device_free(all[i]);
  for (int s = 0; s < ROT; s++) {
    crec_device_free(x[s]);
    crec_device_free(y[s]);
    crec_device_free(z[s]);
  }
}

/* A communicator of one rank on device 0; skips the test without NCCL. */
static crec_comm *one_rank_comm(void) {
  crec_comm_id id;
  crec_status s = crec_comm_get_unique_id(&id);
  if (s == CREC_ERR_UNSUPPORTED) cr_skip_test("NCCL is missing: %s", crec_last_error());
  EXPECT_OK(s);
  crec_comm *comm = NULL;
  EXPECT_OK(crec_comm_create(0, &id, 0, 1, &comm));
  return comm;
}

/* ---- ids.mlir on one rank ---- */

Test(gpu_lower_library, replica_and_partition_ids_write_the_ranks_place_at_each_replay) {
  crec_comm *comm = one_rank_comm();
  crec_program *p = crec_test_lower_file("ids.mlir");
  void *mem[2][3];
  for (int s = 0; s < 2; s++)
    for (int i = 0; i < 3; i++) mem[s][i] = gt_alloc(4);
  crec_binding bd[3];
  crec_comm *comms[1] = {comm};
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = bd;
  bs.num_buffers = 3;
  bs.communicators = comms;
  bs.num_communicators = 1;
  crec_exec *ex = NULL;
  for (int it = 0; it < 6; it++) {
    int s = it % 2, eager = it == 5;
    for (int i = 0; i < 3; i++) {
      gt_fill(mem[s][i], 4, (uint32_t)(it * 10 + i + 1)); /* not 0: a value not written shows */
      bd[i] = (crec_binding){mem[s][i], 4};
    }
    if (!ex) EXPECT_OK(crec_record(p, &bs, NULL, &ex));
    if (eager) gt_eager(p, &bs, stream);
    else gt_replay(ex, &bs, stream);
    for (int i = 0; i < 3; i++) {
      int32_t v = -1;
      gt_download(&v, mem[s][i], 4);
      cr_expect_eq(v, 0, "%s, buffer %d: rank 0 of 1 wrote %d", eager ? "eager" : "replay", i, (int)v);
    }
  }
  crec_exec_stats st = CREC_EXEC_STATS_INIT;
  EXPECT_OK(crec_exec_get_stats(ex, &st));
  cr_expect_eq(st.traced_nodes, 0, "no NCCL: %llu traced nodes", (unsigned long long)st.traced_nodes);
  cr_expect_eq(st.nodes, 3, "three memset nodes: %llu nodes", (unsigned long long)st.nodes);
  crec_exec_destroy(ex);
  crec_program_destroy(p);
  for (int s = 0; s < 2; s++)
    for (int i = 0; i < 3; i++) crec_device_free(mem[s][i]);
  crec_comm_destroy(comm);
}

/* ---- collectives.mlir on one rank ---- */

Test(gpu_lower_library, collectives_on_one_rank_through_nccl_and_copies) {
  crec_comm *comm = one_rank_comm();
  crec_program *p = crec_test_lower_file("collectives.mlir");
  cr_assert_eq(crec_program_communicator_count(p), 1);
  enum { NX = 256 * 4, NI = 64 * 4, SETS = 2 };
  void *mem[SETS][5];
  const uint64_t sizes[5] = {NX, NX, NX, NI, NI};
  for (int s = 0; s < SETS; s++)
    for (int i = 0; i < 5; i++) mem[s][i] = gt_alloc(sizes[i]);
  crec_binding bd[5];
  crec_comm *comms[1] = {comm};
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = bd;
  bs.num_buffers = 5;
  bs.communicators = comms;
  bs.num_communicators = 1;
  crec_exec *ex = NULL;
  for (int it = 0; it < 5; it++) {
    int s = it % SETS, eager = it == 4;
    /* x holds ordinary floats (a reduction need not keep the bits of a NaN); the
     * others random bytes, so that a result not written shows */
    float hx[256];
    fill_quarters(hx, 256, (uint32_t)it);
    for (int i = 0; i < 5; i++) {
      if (i == 0) gt_upload(mem[s][0], hx, sizeof hx);
      else gt_fill(mem[s][i], sizes[i], (uint32_t)(it * 10 + i));
      bd[i] = (crec_binding){mem[s][i], sizes[i]};
    }
    if (!ex) EXPECT_OK(crec_record(p, &bs, NULL, &ex));
    if (eager) gt_eager(p, &bs, stream);
    else gt_replay(ex, &bs, stream);
    /* one rank: the sum is x, the gather of one rank is x, the permute 0 -> 0 copies */
    gt_expect_same(mem[s][1], mem[s][0], NX, eager ? "eager sum vs x" : "sum vs x");
    gt_expect_same(mem[s][2], mem[s][0], NX, eager ? "eager gathered vs x" : "gathered vs x");
    gt_expect_same(mem[s][4], mem[s][3], NI, eager ? "eager moved vs ids" : "moved vs ids");
  }
  crec_exec_stats st = CREC_EXEC_STATS_INIT;
  EXPECT_OK(crec_exec_get_stats(ex, &st));
  cr_expect_eq(st.traced_nodes, 1, "only the all_reduce calls NCCL: %llu", (unsigned long long)st.traced_nodes);
  cr_expect_eq(st.trace_misses, 1, "set 1 is captured once");
  cr_expect_eq(st.trace_hits, 2);
  crec_exec_destroy(ex);
  crec_program_destroy(p);
  for (int s = 0; s < SETS; s++)
    for (int i = 0; i < 5; i++) crec_device_free(mem[s][i]);
  crec_comm_destroy(comm);
}

/* ---- custom.mlir with a handler registered here ---- */

typedef struct axpb_counts {
  int creates, updates;
  int calls_ok; /* every call saw dst, a NULL hole, src, one kernel and the attribute text */
  float a, b;
} axpb_counts;

/* Launches kernel 0 (@kernels::@axpb, bare pointers: dst, src, a, b) over 256 elements. */
static crec_status axpb_launch(axpb_counts *k, crec_custom_context *ctx, const crec_custom_call *call, int update) {
  k->calls_ok &= call->num_operands == 3 && call->operands[0] && !call->operands[1] && call->operand_sizes[1] == 0 &&
                 call->operands[2] && call->num_kernels == 1 && call->attributes_size == strlen(call->attributes) + 1;
  float a = 0, b = 0;
  k->calls_ok &= sscanf(call->attributes, "{a = %f : f32, b = %f : f32}", &a, &b) == 2;
  k->a = a;
  k->b = b;
  void *dst = call->operands[0], *src = call->operands[2];
  void *params[4] = {&dst, &src, &a, &b};
  crec_custom_launch l = CREC_CUSTOM_LAUNCH_INIT;
  l.kernel = 0;
  l.grid[0] = 2;
  l.block[0] = 128;
  l.params = params;
  return update ? crec_custom_context_update(ctx, 0, &l) : crec_custom_context_launch(ctx, &l, NULL);
}

static crec_status axpb_create(void *user, crec_custom_context *ctx, const crec_custom_call *call) {
  axpb_counts *k = user;
  k->creates++;
  return axpb_launch(k, ctx, call, 0);
}

static crec_status axpb_update(void *user, crec_custom_context *ctx, const crec_custom_call *call) {
  axpb_counts *k = user;
  k->updates++;
  return axpb_launch(k, ctx, call, 1);
}

Test(gpu_lower_library, custom_call_runs_the_registered_handler_with_rotated_operands) {
  axpb_counts k = {0, 0, 1, 0, 0};
  crec_custom_handler h = CREC_CUSTOM_HANDLER_INIT;
  h.create = axpb_create;
  h.update = axpb_update;
  h.user = &k;
  EXPECT_OK(crec_custom_register("example.axpb", &h));
  crec_program *p = crec_test_lower_file("custom.mlir");
  enum { N = 256, SETS = 3, CALLS = 7 };
  float hs[N], hd[N];
  void *src[SETS], *dst[SETS], *edst = gt_alloc(N * 4);
  for (int s = 0; s < SETS; s++) {
    src[s] = gt_alloc(N * 4);
    dst[s] = gt_alloc(N * 4);
  }
  crec_binding bd[2];
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = bd;
  bs.num_buffers = 2;
  crec_exec *ex = NULL;
  for (int it = 0; it < CALLS; it++) {
    int s = it % SETS, eager = it == CALLS - 1;
    for (int i = 0; i < N; i++) hs[i] = (float)(i - it);
    gt_upload(src[s], hs, sizeof hs);
    gt_fill(eager ? edst : dst[s], N * 4, (uint32_t)it);
    bd[0] = (crec_binding){src[s], N * 4};
    bd[1] = (crec_binding){eager ? edst : dst[s], N * 4};
    if (!ex) EXPECT_OK(crec_record(p, &bs, NULL, &ex));
    if (eager) gt_eager(p, &bs, stream);
    else gt_replay(ex, &bs, stream);
    gt_download(hd, eager ? edst : dst[s], sizeof hd);
    for (int i = 0; i < N; i++)
      cr_assert_eq(hd[i], hs[i] * 3.0f + 0.5f, "%s %d: dst[%d] = %g, expected %g", eager ? "eager run" : "replay", it, i,
                   (double)hd[i], (double)(hs[i] * 3.0f + 0.5f));
  }
  cr_expect(k.calls_ok, "a call did not see (dst, NULL, src), one kernel and the attributes");
  cr_expect(k.a == 3.0f && k.b == 0.5f, "the handler read a = %g, b = %g", (double)k.a, (double)k.b);
  cr_expect_eq(k.creates, 2, "create() at record and in the eager run: %d", k.creates);
  /* replay 0 keeps the recorded operands; replays 1 to 5 change them */
  cr_expect_eq(k.updates, CALLS - 2, "update() on each change of operands: %d", k.updates);
  crec_exec_destroy(ex);
  crec_program_destroy(p);
  EXPECT_OK(crec_custom_unregister("example.axpb"));
  for (int s = 0; s < SETS; s++) {
    crec_device_free(src[s]);
    crec_device_free(dst[s]);
  }
  crec_device_free(edst);
}
