/* crec_bench_multi: collectives across GPUs in replayed graphs, one process per rank.
 *
 *   tools/crec-launch -n 2 --timeout 600 -- build/tools/bench/crec_bench_multi [--json FILE] [--quick]
 *
 * 1. all_reduce (f32 sum) from 4 KiB to 256 MiB, microseconds per all_reduce,
 *    each column timed over back-to-back launches, then one wait:
 *     - nccl: ncclAllReduce issued on the stream (NCCL's own launch);
 *     - graph: that call captured by hand once, the graph launched per all_reduce;
 *     - crec: a one-command program, crec_exec_replay per all_reduce;
 *     - crec x10: ten all_reduces in one program, one replay per ten (per all_reduce).
 *    Bus bandwidth follows nccl-tests: bytes / time * 2 (n - 1) / n.
 * 2. an 8-layer tensor-parallel MLP in bf16, hidden 8192: each layer multiplies
 *    this rank's slice of the activations (columns r*H/n ...) by its H/n x H
 *    shard of the weights (GEMM), then sums the partial products of every rank
 *    (all_reduce). Microseconds per forward pass, crec_run_eager against
 *    crec_exec_replay, each synchronized.
 * Rank 0 prints the table and writes the JSON; every rank takes part. Without a
 * device (or NCCL) it says so and exits 0. */
#include <dlfcn.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "ranks.h"

static mr_world W;
static crec_comm *comm;
static CUstream stream;
static const crec__cu *cu;
static int wait_ms;
static int quick;

typedef ncclResult_t (*all_reduce_fn)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                                      cudaStream_t);
static all_reduce_fn nccl_all_reduce;

/* Every wait outside the timed blocks is bounded: a rank that stops turns into
 * an error, not a hang. */
static void wait_all(void) { BENCH_OK(crec_comm_synchronize(comm, stream, wait_ms)); }

/* The wait that ends a timed block: the driver's own, which returns the moment
 * the work is done (the launcher's --timeout bounds it). */
static void wait_timed(void) { BENCH_OK(crec_stream_synchronize(stream)); }

/* Lines up the ranks before a timed block. */
static void line_up(void) { BENCH_OK(crec_comm_agree(comm, CREC_OK, wait_ms)); }

static void *dev_alloc(uint64_t size) {
  void *p;
  BENCH_OK(crec_device_alloc(W.device, size, &p));
  CU_OK(cu->cuMemsetD8Async((CUdeviceptr)(uintptr_t)p, 0, size, stream));
  wait_all();
  return p;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* ---- 1. all_reduce sizes ---- */

enum { REPS = 5 };

typedef void (*issue_fn)(void *arg);

/* Median over REPS of (time of `iters` issues, then one wait) / (iters * per_issue). */
static double time_per_op(issue_fn issue, void *arg, int iters, int per_issue) {
  for (int w = 0; w < 3; w++) issue(arg);
  wait_all();
  double t[REPS];
  for (int r = 0; r < REPS; r++) {
    line_up();
    double a = bench_now_us();
    for (int i = 0; i < iters; i++) issue(arg);
    wait_timed();
    t[r] = (bench_now_us() - a) / ((double)iters * per_issue);
  }
  qsort(t, REPS, sizeof *t, cmp_double);
  return t[REPS / 2];
}

typedef struct ar_case {
  void *send, *recv;
  size_t count;
  CUgraphExec graph;
  crec_exec *exec;
  crec_bindings *b;
} ar_case;

static void issue_nccl(void *arg) {
  ar_case *c = arg;
  ncclResult_t r = nccl_all_reduce(c->send, c->recv, c->count, ncclFloat32, ncclSum, (ncclComm_t)crec_comm_native(comm),
                                   (cudaStream_t)stream);
  if (r != ncclSuccess) {
    fprintf(stderr, "bench: rank %d: ncclAllReduce failed (%d)\n", W.rank, (int)r);
    exit(1);
  }
}

static void issue_graph(void *arg) { CU_OK(cu->cuGraphLaunch(((ar_case *)arg)->graph, stream)); }

static void issue_replay(void *arg) {
  ar_case *c = arg;
  BENCH_OK(crec_exec_replay(c->exec, c->b, stream));
}

/* A program of `k` all_reduces of `bytes` from send to recv. */
static crec_program *ar_program(uint64_t bytes, int k) {
  crec_program *p;
  BENCH_OK(crec_program_create(&p));
  crec_comm_slot world;
  BENCH_OK(crec_program_add_communicator(p, "world", W.size, &world));
  crec_buffer send, recv;
  BENCH_OK(crec_program_add_argument(p, "send", bytes, NULL, &send));
  BENCH_OK(crec_program_add_argument(p, "recv", bytes, NULL, &recv));
  for (int i = 0; i < k; i++) {
    crec_collective d = CREC_COLLECTIVE_INIT;
    d.communicator = world;
    d.type = CREC_ELEMENT_F32;
    d.send = crec_range_whole(send);
    d.recv = crec_range_whole(recv);
    crec_command c;
    BENCH_OK(crec_program_add_collective(p, crec_program_body(p), NULL, &d, &c));
  }
  return p;
}

static crec_record_options record_options(void) {
  crec_record_options o = CREC_RECORD_OPTIONS_INIT;
  o.device = W.device;
  return o;
}

static void format_bytes(uint64_t b, char *out, size_t size) {
  if (b >= 1u << 20) snprintf(out, size, "%llu MiB", (unsigned long long)(b >> 20));
  else snprintf(out, size, "%llu KiB", (unsigned long long)(b >> 10));
}

static void sweep_all_reduce(bench_json *js) {
  uint64_t max = quick ? 16u << 20 : 256u << 20;
  void *send = dev_alloc(max), *recv = dev_alloc(max);
  if (W.rank == 0) {
    printf("\n== all_reduce, f32 sum, %d rank(s): us per all_reduce (median of %d), bus bandwidth of crec's replay\n",
           W.size, REPS);
    printf("%-9s %11s %11s %11s %11s %10s %12s\n", "bytes", "nccl", "graph", "crec", "crec x10", "crec/nccl",
           "busbw GB/s");
  }
  bench_json_open_array(js, "all_reduce");
  for (uint64_t bytes = 4096; bytes <= max; bytes *= 4) {
    ar_case c = {send, recv, (size_t)(bytes / 4), NULL, NULL, NULL};
    int iters = bytes <= (1u << 20) ? 200 : (int)(200.0 * (1u << 20) / (double)bytes) + 10;
    double nccl_us = time_per_op(issue_nccl, &c, iters, 1);
    /* the same call captured by hand, launched as a graph */
    CUgraph g;
    CU_OK(cu->cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_RELAXED));
    issue_nccl(&c);
    CU_OK(cu->cuStreamEndCapture(stream, &g));
    CU_OK(cu->cuGraphInstantiateWithFlags(&c.graph, g, 0));
    CU_OK(cu->cuGraphUpload(c.graph, stream));
    double graph_us = time_per_op(issue_graph, &c, iters, 1);
    /* crec: one all_reduce per replay, then ten */
    crec_binding bd[2] = {{send, bytes}, {recv, bytes}};
    crec_comm *comms[1] = {comm};
    crec_bindings b = CREC_BINDINGS_INIT;
    b.buffers = bd;
    b.num_buffers = 2;
    b.communicators = comms;
    b.num_communicators = 1;
    c.b = &b;
    crec_record_options o = record_options();
    double t[2];
    for (int k = 0; k < 2; k++) {
      crec_program *p = ar_program(bytes, k ? 10 : 1);
      BENCH_OK(crec_record(p, &b, &o, &c.exec));
      t[k] = time_per_op(issue_replay, &c, k ? (iters + 9) / 10 : iters, k ? 10 : 1);
      crec_exec_destroy(c.exec);
      crec_program_destroy(p);
    }
    cu->cuGraphExecDestroy(c.graph);
    cu->cuGraphDestroy(g);
    double busbw = W.size > 1 ? (double)bytes / (t[0] * 1e3) * 2.0 * (W.size - 1) / W.size : 0;
    if (W.rank == 0) {
      char label[32];
      format_bytes(bytes, label, sizeof label);
      printf("%-9s %11.1f %11.1f %11.1f %11.1f %9.2fx %12.1f\n", label, nccl_us, graph_us, t[0], t[1], t[0] / nccl_us,
             busbw);
    }
    bench_json_open_object(js, NULL);
    bench_json_int(js, "bytes", (long long)bytes);
    bench_json_int(js, "iterations", iters);
    bench_json_num(js, "nccl_us", nccl_us);
    bench_json_num(js, "graph_us", graph_us);
    bench_json_num(js, "crec_us", t[0]);
    bench_json_num(js, "crec_x10_us", t[1]);
    bench_json_num(js, "crec_over_nccl", t[0] / nccl_us);
    bench_json_num(js, "busbw_gbs", busbw);
    bench_json_close(js);
  }
  bench_json_close(js);
  crec_device_free(send);
  crec_device_free(recv);
}

/* ---- 2. the tensor-parallel MLP ---- */

enum { LAYERS = 8, HIDDEN = 8192 };

/* Fills `n` bf16 elements with values uniform in [-scale, scale) from a 4 MiB tile. */
static void fill_bf16(void *dst, uint64_t n, float scale, uint32_t seed) {
  enum { TILE = 2u << 20 };
  uint16_t *h = malloc(TILE * sizeof *h);
  if (!h) exit(2);
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < TILE; i++) {
    x = x * 1664525u + 1013904223u;
    float v = ((float)((x >> 8) & 0xffff) / 32768.0f - 1.0f) * scale;
    uint32_t bits;
    memcpy(&bits, &v, 4);
    h[i] = (uint16_t)((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
  }
  for (uint64_t at = 0; at < n; at += TILE) {
    uint64_t m = n - at < TILE ? n - at : TILE;
    BENCH_OK(crec_copy((uint16_t *)dst + at, h, m * 2));
  }
  free(h);
}

typedef struct mlp {
  crec_program *p;
  crec_binding bd[3]; /* x, y, weights */
  void *y_eager;
} mlp;

/* act_{l+1} = all_reduce(act_l[:, r*k .. (r+1)*k] . W_l), act_0 = x, act_8 = y. */
static mlp build_mlp(uint64_t tokens) {
  const uint64_t es = 2, H = HIDDEN, k = HIDDEN / (uint64_t)W.size;
  mlp m;
  memset(&m, 0, sizeof m);
  BENCH_OK(crec_program_create(&m.p));
  crec_comm_slot world;
  BENCH_OK(crec_program_add_communicator(m.p, "world", W.size, &world));
  crec_argument_options o = CREC_ARGUMENT_OPTIONS_INIT;
  o.element = CREC_ELEMENT_BF16;
  crec_buffer x, y, w, act[LAYERS + 1], part[LAYERS];
  BENCH_OK(crec_program_add_argument(m.p, "x", tokens * H * es, &o, &x));
  BENCH_OK(crec_program_add_argument(m.p, "y", tokens * H * es, &o, &y));
  BENCH_OK(crec_program_add_argument(m.p, "weights", LAYERS * k * H * es, &o, &w));
  act[0] = x;
  act[LAYERS] = y;
  char name[32];
  for (int l = 0; l < LAYERS; l++) {
    if (l > 0) {
      snprintf(name, sizeof name, "act%d", l);
      BENCH_OK(crec_program_add_temporary(m.p, name, tokens * H * es, &act[l]));
    }
    snprintf(name, sizeof name, "partial%d", l);
    BENCH_OK(crec_program_add_temporary(m.p, name, tokens * H * es, &part[l]));
  }
  crec_region body = crec_program_body(m.p);
  for (int l = 0; l < LAYERS; l++) {
    crec_gemm g = CREC_GEMM_INIT;
    g.type = CREC_ELEMENT_BF16;
    /* this rank's columns of the activations: a strided view (ld = H) */
    g.a.range = crec_range_of(act[l], (uint64_t)W.rank * k * es, ((tokens - 1) * H + k) * es);
    g.a.rows = tokens, g.a.cols = k, g.a.ld = H;
    g.b = crec_matrix_of(crec_range_of(w, (uint64_t)l * k * H * es, k * H * es), k, H);
    g.d = crec_matrix_of(crec_range_whole(part[l]), tokens, H);
    snprintf(name, sizeof name, "fc%d", l);
    crec_command c;
    BENCH_OK(crec_program_add_gemm(m.p, body, name, &g, &c));
    crec_collective d = CREC_COLLECTIVE_INIT;
    d.communicator = world;
    d.type = CREC_ELEMENT_BF16;
    d.send = crec_range_whole(part[l]);
    d.recv = crec_range_whole(act[l + 1]);
    snprintf(name, sizeof name, "sum%d", l);
    BENCH_OK(crec_program_add_collective(m.p, body, name, &d, &c));
  }
  m.bd[0] = (crec_binding){dev_alloc(tokens * H * es), tokens * H * es};
  m.bd[1] = (crec_binding){dev_alloc(tokens * H * es), tokens * H * es};
  m.bd[2] = (crec_binding){dev_alloc(LAYERS * k * H * es), LAYERS * k * H * es};
  m.y_eager = dev_alloc(tokens * H * es);
  fill_bf16(m.bd[0].ptr, tokens * H, 1.0f, 11 + (uint32_t)W.rank);
  /* weights ~ U(-1, 1) / sqrt(H) keep the activations in range over 8 layers */
  fill_bf16(m.bd[2].ptr, LAYERS * k * H, 1.0f / 90.0f, 17 + (uint32_t)W.rank);
  return m;
}

static void mlp_free(mlp *m) {
  for (int i = 0; i < 3; i++) crec_device_free(m->bd[i].ptr);
  crec_device_free(m->y_eager);
  crec_program_destroy(m->p);
}

static void measure_mlp(bench_json *js, uint64_t tokens) {
  mlp m = build_mlp(tokens);
  crec_comm *comms[1] = {comm};
  crec_bindings b = CREC_BINDINGS_INIT;
  b.buffers = m.bd;
  b.num_buffers = 3;
  b.communicators = comms;
  b.num_communicators = 1;
  crec_record_options o = record_options();
  line_up();
  double t0 = bench_now_us();
  crec_exec *e;
  BENCH_OK(crec_record(m.p, &b, &o, &e));
  double record_ms = (bench_now_us() - t0) / 1000;
  int reps = quick ? 10 : 50;
  bench_stats eager, replay;
  bench_stats_init(&eager, reps);
  bench_stats_init(&replay, reps);
  for (int i = -3; i < reps; i++) {
    line_up();
    double a = bench_now_us();
    BENCH_OK(crec_run_eager(m.p, &b, stream));
    wait_timed();
    if (i >= 0) bench_stats_add(&eager, bench_now_us() - a);
    line_up();
    a = bench_now_us();
    BENCH_OK(crec_exec_replay(e, &b, stream));
    wait_timed();
    if (i >= 0) bench_stats_add(&replay, bench_now_us() - a);
  }
  /* the same output? (bf16 sums: the same bytes unless NCCL's order differs) */
  uint64_t bytes = m.bd[1].size;
  uint8_t *hr = malloc(bytes), *he = malloc(bytes);
  if (!hr || !he) exit(2);
  BENCH_OK(crec_copy(hr, m.bd[1].ptr, bytes));
  void *y = m.bd[1].ptr;
  m.bd[1].ptr = m.y_eager;
  BENCH_OK(crec_run_eager(m.p, &b, stream));
  wait_all();
  m.bd[1].ptr = y;
  BENCH_OK(crec_copy(he, m.y_eager, bytes));
  int identical = memcmp(hr, he, bytes) == 0;
  free(hr);
  free(he);
  double speedup = bench_p50(&eager) / bench_p50(&replay);
  if (W.rank == 0)
    printf("%-7llu %9.1f %9.1f [%7.1f] %9.1f [%7.1f] %8.2fx %10s\n", (unsigned long long)tokens, record_ms,
           bench_p50(&eager), bench_p90(&eager), bench_p50(&replay), bench_p90(&replay), speedup,
           identical ? "yes" : "no");
  bench_json_open_object(js, NULL);
  bench_json_int(js, "tokens", (long long)tokens);
  bench_json_num(js, "record_ms", record_ms);
  bench_json_stats(js, "eager_us", &eager);
  bench_json_stats(js, "replay_us", &replay);
  bench_json_num(js, "speedup_replay_vs_eager", speedup);
  bench_json_int(js, "identical_to_eager", identical);
  bench_json_close(js);
  bench_stats_free(&eager);
  bench_stats_free(&replay);
  crec_exec_destroy(e);
  mlp_free(&m);
}

/* ---- setup ---- */

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const char *json_path = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--json") == 0 && i + 1 < argc) {
      json_path = argv[++i];
    } else if (strcmp(argv[i], "--quick") == 0) {
      quick = 1;
    } else {
      fprintf(stderr, "usage: %s [--json FILE] [--quick]   (start it with tools/crec-launch -n N --)\n", argv[0]);
      return 2;
    }
  }
  char why[1200];
  if (mr_world_from_env(&W, why, sizeof why)) {
    fprintf(stderr, "crec_bench_multi: %s\n", why);
    return 2;
  }
  wait_ms = mr_wait_ms(&W, 120000);
  if (!crec_device_available()) {
    printf("crec_bench_multi: rank %d: no CUDA device (%s); nothing measured\n", W.rank, crec_last_error());
    return 0;
  }
  crec_comm_id id;
  crec_status ns;
  if (mr_share_id(&W, wait_ms, &id, &ns, why, sizeof why)) {
    printf("crec_bench_multi: %s%s\n", why, ns == CREC_ERR_UNSUPPORTED ? "; nothing measured" : "");
    return ns == CREC_ERR_UNSUPPORTED ? 0 : 1;
  }
  char reason[600];
  void *lib = crec__open_library("libnccl.so.2", reason, sizeof reason);
  nccl_all_reduce = lib ? (all_reduce_fn)dlsym(lib, "ncclAllReduce") : NULL;
  if (!nccl_all_reduce) {
    printf("crec_bench_multi: NCCL is missing (%s); nothing measured\n", lib ? "no ncclAllReduce" : reason);
    return 0;
  }
  cu = crec__driver("crec_bench_multi");
  CUcontext ctx;
  BENCH_OK(crec__use_device(cu, W.device, "crec_bench_multi", &ctx));
  CU_OK(cu->cuCtxSetCurrent(ctx));
  BENCH_OK(crec_comm_create(W.device, &id, W.rank, W.size, &comm));
  BENCH_OK(crec_stream_create(W.device, &stream));
  if (W.rank == 0) {
    char name[128];
    int major, minor, version;
    BENCH_OK(crec_device_describe(W.device, name, sizeof name, &major, &minor));
    BENCH_OK(crec_driver_version(&version));
    printf("%d rank(s); rank 0 on %s (sm_%d%d), driver %d.%d; NCCL_NVLS_ENABLE=%s\n", W.size, name, major, minor,
           version / 1000, version % 1000 / 10, getenv("NCCL_NVLS_ENABLE") ? getenv("NCCL_NVLS_ENABLE") : "unset");
  }
  bench_json js;
  bench_json_begin(&js);
  bench_json_int(&js, "ranks", W.size);
  sweep_all_reduce(&js);
  if (HIDDEN % W.size) {
    if (W.rank == 0) printf("\n(the MLP needs a rank count that divides %d: skipped)\n", HIDDEN);
  } else {
    if (W.rank == 0) {
      printf("\n== %d-layer tensor-parallel MLP, bf16, hidden %d, %d rank(s) (GEMM of a %d-column shard + all_reduce "
             "per layer): us per forward, p50 [p90]; record in ms\n",
             LAYERS, HIDDEN, W.size, HIDDEN / W.size);
      printf("%-7s %9s %19s %19s %9s %10s\n", "tokens", "record", "eager", "replay", "speedup", "identical");
    }
    bench_json_open_array(&js, "mlp");
    static const uint64_t tokens[] = {8, 128};
    for (int i = 0; i < (quick ? 1 : 2); i++) measure_mlp(&js, tokens[i]);
    bench_json_close(&js);
  }
  line_up();
  if (W.rank == 0) {
    printf("crec/nccl = crec replay / NCCL's own launch; identical = replay's output bytes equal the eager run's\n");
    bench_json_end(&js, json_path);
  } else {
    bench_json_end(&js, NULL);
  }
  crec_stream_destroy(stream);
  crec_comm_destroy(comm);
  return 0;
}
