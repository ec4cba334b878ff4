/* crec_bench_replay: record/replay costs against a hand-built CUDA graph of the
 * same nodes, measured side by side in one run (issue "Record and replay").
 *
 *   crec_bench_replay [--json FILE] [--quick] [--only SECTION,...]
 *
 * Sections (--only takes their names: chains, small, record, crossover,
 * parallel, bind, device, variants, launch, upload, bookkeeping, early):
 *  1. serial chains of N tiny kernels (N = 1 .. 10,000): record, eager, replay
 *     unchanged, hand-built graph; host cost of an update with every pointer
 *     changed against per-node and whole-graph updates of the hand-built graph;
 *     1% changed against per-node set-params of those nodes alone;
 *  2. the per-node / whole-graph crossover (fraction of 1,000 nodes changed);
 *  3. k independent chains (1,000 nodes in total);
 *  4. bind as you go (crec_exec_bind_buffer + crec_exec_launch) against whole
 *     bindings and the hand-built graph, all and 1% of N changed;
 *  5. device-side updates against the host path and the hand-built graph, and
 *     the wall time an update adds per node;
 *  6. variants: every pointer alternating between two sets, with one executable
 *     graph and with two; then 100 launches queued back to back, where the wall
 *     time is the GPU's: one hand-built graph, two alternating, two with an event
 *     recorded after each launch (as crec orders its variants), crec with one
 *     graph and with two variants;
 *  7. early start: serial chains of 2 to 1,000 launches without and with
 *     CREC_LAUNCH_EARLY_START (programmatic edges on sm_90 and later).
 * Times are microseconds per execution: wall time with the stream synchronized,
 * or host time of the call alone ("host"). Percentiles over the repetitions. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"

/* A program of `k` independent chains over `n` kernels in total: kernel i of
 * chain j does c_j[0..4) = c_j ^ (x_i + idx), reading its own argument x_i. */
typedef struct chains {
  crec_program *p;
  int n, k;
  crec_kernel mix;
  void **xs[2];   /* two sets of per-node arguments */
  void **cs;      /* chain accumulators */
  crec_binding *b;
  crec_bindings bs;
} chains;

static void chains_build(chains *c, int n, int k) {
  memset(c, 0, sizeof *c);
  c->n = n;
  c->k = k;
  crec_module m;
  BENCH_OK(crec_program_create(&c->p));
  BENCH_OK(crec_program_add_module(c->p, "k", CREC_IMAGE_PTX, crec_test_kernels_ptx, crec_test_kernels_ptx_size, &m));
  BENCH_OK(crec_program_add_kernel(c->p, m, "t_mix", NULL, &c->mix));
  crec_buffer *cb = calloc((size_t)k, sizeof *cb);
  char name[32];
  for (int j = 0; j < k; j++) {
    snprintf(name, sizeof name, "c%d", j);
    BENCH_OK(crec_program_add_argument(c->p, name, 16, NULL, &cb[j]));
  }
  for (int i = 0; i < n; i++) {
    crec_buffer x;
    snprintf(name, sizeof name, "x%d", i);
    BENCH_OK(crec_program_add_argument(c->p, name, 16, NULL, &x));
    crec_buffer acc = cb[i % k];
    crec_arg a[] = {crec_arg_buffer(crec_range_whole(acc), CREC_ACCESS_WRITE),
                    crec_arg_buffer(crec_range_whole(acc), CREC_ACCESS_READ),
                    crec_arg_buffer(crec_range_whole(x), CREC_ACCESS_READ), crec_arg_i32(4)};
    crec_launch l = CREC_LAUNCH_INIT;
    l.kernel = c->mix;
    l.block[0] = crec_dim_of(128); /* as the hand-built graph's nodes */
    l.args = a;
    l.num_args = 4;
    crec_command cmd;
    BENCH_OK(crec_program_add_launch(c->p, crec_program_body(c->p), NULL, &l, &cmd));
  }
  free(cb);
  c->cs = calloc((size_t)k, sizeof *c->cs);
  for (int j = 0; j < k; j++) c->cs[j] = bench_alloc(16);
  for (int s = 0; s < 2; s++) {
    c->xs[s] = calloc((size_t)n, sizeof *c->xs[s]);
    /* one allocation per set, sliced: thousands of tiny allocations are slow */
    uint8_t *base = bench_alloc((uint64_t)n * 256);
    for (int i = 0; i < n; i++) c->xs[s][i] = base + (size_t)i * 256;
  }
  c->b = calloc((size_t)(n + k), sizeof *c->b);
  c->bs = (crec_bindings)CREC_BINDINGS_INIT;
  c->bs.buffers = c->b;
  c->bs.num_buffers = (size_t)(n + k);
  for (int j = 0; j < k; j++) c->b[j] = (crec_binding){c->cs[j], 16};
  for (int i = 0; i < n; i++) c->b[k + i] = (crec_binding){c->xs[0][i], 16};
}

/* Binds set 0, except the nodes whose index is a multiple of `every` (0: none) use set 1 when `flip`. */
static void chains_bind(chains *c, int every, int flip) {
  for (int i = 0; i < c->n; i++) c->b[c->k + i].ptr = c->xs[(flip && every && i % every == 0) ? 1 : 0][i];
}

static void chains_free(chains *c) {
  for (int j = 0; j < c->k; j++) crec_device_free(c->cs[j]);
  for (int s = 0; s < 2; s++) {
    crec_device_free(c->xs[s][0]);
    free(c->xs[s]);
  }
  free(c->cs);
  free(c->b);
  crec_program_destroy(c->p);
}

/* Records the chains in order (CREC_SCHEDULE_SEQUENTIAL, as the hand-built graph
 * chains them); `device`: with device updates, each replay through the updater. */
static crec_exec *record_chains(chains *c, int device) {
  crec_record_options o = CREC_RECORD_OPTIONS_INIT;
  o.schedule = CREC_SCHEDULE_SEQUENTIAL;
  if (device) o.device_updates = 1, o.update_strategy = CREC_UPDATE_DEVICE;
  crec_exec *ex;
  BENCH_OK(crec_record(c->p, &c->bs, &o, &ex));
  return ex;
}

/* Records the chains in order with `variants` executable graphs. */
static crec_exec *record_variants(chains *c, uint32_t variants) {
  crec_record_options o = CREC_RECORD_OPTIONS_INIT;
  o.schedule = CREC_SCHEDULE_SEQUENTIAL;
  o.variants = variants;
  crec_exec *ex;
  BENCH_OK(crec_record(c->p, &c->bs, &o, &ex));
  return ex;
}

/* The same nodes, built by hand with the driver API. */
typedef struct hand {
  CUgraph g;
  CUgraphExec e;
  CUgraphNode *nodes;
  CUDA_KERNEL_NODE_PARAMS *kp;
  void **params;  /* per node: 4 parameter pointers, in one block */
  CUdeviceptr *vals; /* per node: 3 pointers + n */
  int n;
} hand;

static void hand_set_ptrs(hand *h, chains *c, int every, int flip, int i) {
  CUdeviceptr *v = &h->vals[(size_t)i * 4];
  v[0] = v[1] = (CUdeviceptr)(uintptr_t)c->cs[i % c->k];
  v[2] = (CUdeviceptr)(uintptr_t)c->xs[(flip && every && i % every == 0) ? 1 : 0][i];
}

static void hand_build_on(hand *h, chains *c, CUfunction f, int upload, double *us);

static void hand_build(hand *h, chains *c, CUfunction f) { hand_build_on(h, c, f, 1, NULL); }

/* upload: 0 none (the first launch uploads), 1 on the benchmark's stream, 2 on the legacy NULL stream;
 * `us` (may be NULL) gets the microseconds of building the graph and of instantiating it */
static void hand_build_on(hand *h, chains *c, CUfunction f, int upload, double *us) {
  const crec__cu *cu = bench_cu();
  double t0 = bench_now_us();
  int n = c->n;
  memset(h, 0, sizeof *h);
  h->n = n;
  h->nodes = calloc((size_t)n, sizeof *h->nodes);
  h->kp = calloc((size_t)n, sizeof *h->kp);
  h->params = calloc((size_t)n * 4, sizeof *h->params);
  h->vals = calloc((size_t)n * 4, sizeof *h->vals);
  CU_OK(cu->cuGraphCreate(&h->g, 0));
  CUgraphNode *last = calloc((size_t)c->k, sizeof *last);
  for (int i = 0; i < n; i++) {
    hand_set_ptrs(h, c, 0, 0, i);
    int32_t *nn = (int32_t *)&h->vals[(size_t)i * 4 + 3];
    *nn = 4;
    for (int a = 0; a < 4; a++) h->params[(size_t)i * 4 + a] = &h->vals[(size_t)i * 4 + a];
    CUDA_KERNEL_NODE_PARAMS *kp = &h->kp[i];
    kp->func = f;
    kp->gridDimX = kp->gridDimY = kp->gridDimZ = 1;
    kp->blockDimX = 128, kp->blockDimY = kp->blockDimZ = 1;
    kp->kernelParams = &h->params[(size_t)i * 4];
    int j = i % c->k;
    CU_OK(cu->cuGraphAddKernelNode(&h->nodes[i], h->g, last[j] ? &last[j] : NULL, last[j] ? 1 : 0, kp));
    last[j] = h->nodes[i];
  }
  free(last);
  double t1 = bench_now_us();
  CU_OK(cu->cuGraphInstantiateWithFlags(&h->e, h->g, 0));
  if (us) us[0] = t1 - t0, us[1] = bench_now_us() - t1;
  if (upload) {
    CUstream s = upload == 1 ? bench_stream() : NULL;
    CU_OK(cu->cuGraphUpload(h->e, s));
    CU_OK(cu->cuStreamSynchronize(s));
  }
}

static void hand_free(hand *h) {
  const crec__cu *cu = bench_cu();
  cu->cuGraphExecDestroy(h->e);
  cu->cuGraphDestroy(h->g);
  free(h->params);
  free(h->nodes);
  free(h->kp);
  free(h->vals);
}

/* Host cost of updating the nodes i % every == 0 of the hand-built graph:
 * per node (exec set-params) or template set-params + one whole-graph update. */
static double hand_update_us(hand *h, chains *c, int every, int whole, int flip) {
  const crec__cu *cu = bench_cu();
  double t0 = bench_now_us();
  for (int i = 0; i < h->n; i += every) {
    hand_set_ptrs(h, c, every, flip, i);
    if (whole) CU_OK(cu->cuGraphKernelNodeSetParams(h->nodes[i], &h->kp[i]));
    else CU_OK(cu->cuGraphExecKernelNodeSetParams(h->e, h->nodes[i], &h->kp[i]));
  }
  if (whole) {
    CUgraphExecUpdateResultInfo info;
    CU_OK(cu->cuGraphExecUpdate(h->e, h->g, &info));
  }
  return bench_now_us() - t0;
}

/* Puts every node of the hand-built graph on set 0 and launches it once, so the
 * timed update that follows finds every node clean, as in a replay loop
 * (updating a node that was launched since costs more than one still pending). */
static void hand_reset(hand *h, chains *c, int whole) {
  const crec__cu *cu = bench_cu();
  hand_update_us(h, c, 1, whole, 0);
  CU_OK(cu->cuGraphLaunch(h->e, bench_stream()));
  CU_OK(cu->cuStreamSynchronize(bench_stream()));
}

/* Host time of one replay of `ex` with every `every`-th node's pointers
 * changed, from all nodes on set 0 (an untimed replay first): the call alone. */
static void time_changed_replay(crec_exec *ex, chains *c, int every, bench_stats *st) {
  chains_bind(c, 0, 0);
  BENCH_OK(crec_exec_replay(ex, &c->bs, bench_stream()));
  BENCH_OK(crec_stream_synchronize(bench_stream()));
  chains_bind(c, every, 1);
  double a = bench_now_us();
  BENCH_OK(crec_exec_replay(ex, &c->bs, bench_stream()));
  double b = bench_now_us();
  BENCH_OK(crec_stream_synchronize(bench_stream()));
  bench_stats_add(st, b - a);
}

/* Host time of the hand-built graph's update of every `every`-th node (node by
 * node, or `whole`) plus its launch, from every node clean on set 0. */
static void time_hand_update(hand *h, chains *c, int every, int whole, bench_stats *st) {
  const crec__cu *cu = bench_cu();
  hand_reset(h, c, whole);
  double a = bench_now_us();
  hand_update_us(h, c, every, whole, 1);
  CU_OK(cu->cuGraphLaunch(h->e, bench_stream()));
  double b = bench_now_us();
  CU_OK(cu->cuStreamSynchronize(bench_stream()));
  bench_stats_add(st, b - a);
}

static void section_chains(bench_json *js, int quick) {
  static const int sizes[] = {1, 10, 100, 1000, 10000};
  int reps = quick ? 20 : 200;
  printf("\n== serial chains of N tiny kernels (us per execution; p50, [p90])\n");
  printf("%6s %10s %14s %14s %14s %9s | %14s %12s %12s %7s | %12s %12s %7s\n", "N", "record_ms", "eager",
         "replay", "hand graph", "replay/h", "all chg host", "hand/node", "hand/whole", "ratio", "1% chg host",
         "hand 1%", "ratio");
  bench_json_open_array(js, "chains");
  for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
    int n = sizes[si];
    int r = n >= 10000 ? reps / 4 : reps;
    chains c;
    chains_build(&c, n, 1);
    double t0 = bench_now_us();
    crec_exec *ex;
    crec_record_options o = CREC_RECORD_OPTIONS_INIT;
    o.schedule = CREC_SCHEDULE_SEQUENTIAL;
    BENCH_OK(crec_record(c.p, &c.bs, &o, &ex));
    double record_ms = (bench_now_us() - t0) / 1000.0;
    hand h;
    hand_build(&h, &c, bench_function(ex, "t_mix"));

    bench_stats eager, replay, handg, all, allu_node, allu_whole, pct, pct_hand;
    bench_stats_init(&eager, r), bench_stats_init(&replay, r), bench_stats_init(&handg, r);
    bench_stats_init(&all, r), bench_stats_init(&allu_node, r), bench_stats_init(&allu_whole, r);
    bench_stats_init(&pct, r), bench_stats_init(&pct_hand, r);
    const crec__cu *cu = bench_cu();
    for (int w = 0; w < 3; w++) { /* warm-up */
      BENCH_OK(crec_exec_replay(ex, &c.bs, bench_stream()));
      BENCH_OK(crec_run_eager(c.p, &c.bs, bench_stream()));
      BENCH_OK(crec_stream_synchronize(bench_stream()));
    }
    for (int i = 0; i < r; i++) {
      /* eager, replay unchanged, hand-built graph: wall time, synchronized;
       * crec and the hand-built graph take turns going first */
      double a = bench_now_us();
      BENCH_OK(crec_run_eager(c.p, &c.bs, bench_stream()));
      BENCH_OK(crec_stream_synchronize(bench_stream()));
      bench_stats_add(&eager, bench_now_us() - a);
      for (int turn = 0; turn < 2; turn++) {
        if ((turn + i) % 2 == 0) {
          a = bench_now_us();
          BENCH_OK(crec_exec_replay(ex, &c.bs, bench_stream()));
          BENCH_OK(crec_stream_synchronize(bench_stream()));
          bench_stats_add(&replay, bench_now_us() - a);
        } else {
          a = bench_now_us();
          CU_OK(cu->cuGraphLaunch(h.e, bench_stream()));
          CU_OK(cu->cuStreamSynchronize(bench_stream()));
          bench_stats_add(&handg, bench_now_us() - a);
        }
      }
      /* every pointer changed: host cost of the replay call (update + launch)
       * against the hand-built graph's update plus its launch. Each timed
       * change starts from all nodes on set 0 (an untimed reset first). */
      time_changed_replay(ex, &c, 1, &all);
      time_hand_update(&h, &c, 1, 0, &allu_node);
      time_hand_update(&h, &c, 1, 1, &allu_whole);
      /* 1% changed (at least one node): per node on both sides */
      int every = n >= 100 ? 100 : n;
      time_changed_replay(ex, &c, every, &pct);
      time_hand_update(&h, &c, every, 0, &pct_hand);
      chains_bind(&c, 0, 0);
    }
    double best = bench_p50(&allu_node) < bench_p50(&allu_whole) ? bench_p50(&allu_node) : bench_p50(&allu_whole);
    printf("%6d %10.2f %8.1f [%4.0f] %8.1f [%4.0f] %8.1f [%4.0f] %9.3f | %14.1f %12.1f %12.1f %7.2f | %12.1f %12.1f %7.2f\n",
           n, record_ms, bench_p50(&eager), bench_p90(&eager), bench_p50(&replay), bench_p90(&replay),
           bench_p50(&handg), bench_p90(&handg), bench_p50(&replay) / bench_p50(&handg), bench_p50(&all),
           bench_p50(&allu_node), bench_p50(&allu_whole), bench_p50(&all) / best, bench_p50(&pct),
           bench_p50(&pct_hand), bench_p50(&pct) / bench_p50(&pct_hand));
    bench_json_open_object(js, NULL);
    bench_json_int(js, "nodes", n);
    bench_json_num(js, "record_ms", record_ms);
    bench_json_stats(js, "eager_us", &eager);
    bench_json_stats(js, "replay_unchanged_us", &replay);
    bench_json_stats(js, "hand_graph_us", &handg);
    bench_json_stats(js, "all_changed_host_us", &all);
    bench_json_stats(js, "hand_per_node_update_host_us", &allu_node);
    bench_json_stats(js, "hand_whole_update_host_us", &allu_whole);
    bench_json_stats(js, "one_percent_changed_host_us", &pct);
    bench_json_stats(js, "hand_one_percent_host_us", &pct_hand);
    crec_exec_stats st = CREC_EXEC_STATS_INIT;
    BENCH_OK(crec_exec_get_stats(ex, &st));
    bench_json_int(js, "whole_graph_updates", (long long)st.whole_graph_updates);
    bench_json_int(js, "per_node_updates", (long long)st.per_node_updates);
    bench_json_close(js);
    bench_stats_free(&eager), bench_stats_free(&replay), bench_stats_free(&handg), bench_stats_free(&all);
    bench_stats_free(&allu_node), bench_stats_free(&allu_whole), bench_stats_free(&pct), bench_stats_free(&pct_hand);
    hand_free(&h);
    crec_exec_destroy(ex);
    chains_free(&c);
  }
  bench_json_close(js);
}

static void section_crossover(bench_json *js, int quick) {
  static const int percents[] = {1, 2, 5, 8, 10, 12, 15, 20, 30, 50, 100};
  int n = 1000, r = quick ? 20 : 100;
  chains c;
  chains_build(&c, n, 1);
  crec_exec *ex;
  BENCH_OK(crec_record(c.p, &c.bs, NULL, &ex));
  hand h;
  hand_build(&h, &c, bench_function(ex, "t_mix"));
  printf("\n== update strategy crossover, %d nodes (host us per update, p50)\n", n);
  printf("%8s %12s %12s %10s %10s\n", "changed", "per node", "whole graph", "cheaper", "model");
  bench_json_open_array(js, "crossover");
  int crossover = -1;
  for (size_t pi = 0; pi < sizeof percents / sizeof *percents; pi++) {
    int every = 100 / percents[pi];
    bench_stats a, b;
    bench_stats_init(&a, r), bench_stats_init(&b, r);
    for (int i = 0; i < r; i++) {
      hand_reset(&h, &c, 0);
      bench_stats_add(&a, hand_update_us(&h, &c, every, 0, 1));
      hand_reset(&h, &c, 1);
      bench_stats_add(&b, hand_update_us(&h, &c, every, 1, 1));
    }
    int whole_wins = bench_p50(&b) < bench_p50(&a);
    if (whole_wins && crossover < 0) crossover = percents[pi];
    /* what crec's cost model would take for as many changed nodes (CREC_UPDATE_AUTO) */
    crec_update_estimate est = CREC_UPDATE_ESTIMATE_INIT;
    BENCH_OK(crec_exec_estimate_update(ex, (uint64_t)((n + every - 1) / every), 0, &est));
    printf("%7d%% %12.1f %12.1f %10s %10s\n", percents[pi], bench_p50(&a), bench_p50(&b), whole_wins ? "whole" : "per node",
           est.choice == CREC_UPDATE_WHOLE_GRAPH ? "whole" : "per node");
    bench_json_open_object(js, NULL);
    bench_json_int(js, "percent", percents[pi]);
    bench_json_stats(js, "per_node_host_us", &a);
    bench_json_stats(js, "whole_graph_host_us", &b);
    bench_json_close(js);
    bench_stats_free(&a), bench_stats_free(&b);
  }
  bench_json_close(js);
  bench_json_int(js, "crossover_percent", crossover);
  if (crossover < 0) printf("whole-graph update was never cheaper\n");
  else printf("whole-graph update becomes cheaper at %d%% of nodes changed\n", crossover);
  printf("model: what crec's cost model takes for as many changed nodes (crec_exec_estimate_update)\n");
  hand_free(&h);
  crec_exec_destroy(ex);
  chains_free(&c);
}

/* One execution with every `every`-th argument changed (1: all; 0: none),
 * through whole bindings (crec_exec_replay) or bound slot by slot
 * (crec_exec_bind_buffer for those alone, then crec_exec_launch): `host` gets
 * the microseconds of the calls, `wall` (may be NULL) those until the stream
 * is synchronized. Each timed execution starts from every node on set 0 (an
 * untimed reset first). */
static void chains_change(chains *c, crec_exec *ex, int every, int bind, double *host, double *wall) {
  chains_bind(c, 0, 0);
  BENCH_OK(crec_exec_replay(ex, &c->bs, bench_stream()));
  BENCH_OK(crec_stream_synchronize(bench_stream()));
  chains_bind(c, every, 1);
  double a = bench_now_us();
  if (bind) {
    for (int i = 0; every && i < c->n; i += every) {
      const crec_binding *b = &c->b[c->k + i];
      BENCH_OK(crec_exec_bind_buffer(ex, (size_t)(c->k + i), b->ptr, b->size));
    }
    BENCH_OK(crec_exec_launch(ex, bench_stream()));
  } else {
    BENCH_OK(crec_exec_replay(ex, &c->bs, bench_stream()));
  }
  *host = bench_now_us() - a;
  BENCH_OK(crec_stream_synchronize(bench_stream()));
  if (wall) *wall = bench_now_us() - a;
}

/* chains_change()'s host microseconds, or with `wall` its wall ones. */
static double chains_change_us(chains *c, crec_exec *ex, int every, int bind, int wall) {
  double h, w;
  chains_change(c, ex, every, bind, &h, &w);
  return wall ? w : h;
}

/* Bind as you go against whole bindings: what a caller who knows which slots
 * changed saves (the comparison pass over every argument), and what a
 * hand-built graph's per-node set-params of the same nodes costs. */
static void section_bind(bench_json *js, int quick) {
  static const int sizes[] = {100, 1000, 10000};
  int reps = quick ? 20 : 200;
  printf("\n== bind as you go: host us per execution (p50): crec_exec_replay, bind+launch, hand-built per-node\n");
  printf("%6s %8s | %12s %12s %12s %9s %9s\n", "N", "changed", "replay", "bind+launch", "hand/node", "bind/rep",
         "bind/hand");
  bench_json_open_array(js, "bind");
  for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
    int n = sizes[si];
    int r = n >= 10000 ? reps / 4 : reps;
    chains c;
    chains_build(&c, n, 1);
    crec_exec *ex = record_chains(&c, 0);
    hand h;
    hand_build(&h, &c, bench_function(ex, "t_mix"));
    const crec__cu *cu = bench_cu();
    static const int everys[] = {1, 100};
    for (size_t ei = 0; ei < 2; ei++) {
      int every = everys[ei];
      bench_stats rep, bind, hn;
      bench_stats_init(&rep, r), bench_stats_init(&bind, r), bench_stats_init(&hn, r);
      for (int i = 0; i < r; i++) {
        /* the three take turns going first */
        for (int turn = 0; turn < 3; turn++) {
          switch ((turn + i) % 3) {
            case 0:
              bench_stats_add(&rep, chains_change_us(&c, ex, every, 0, 0));
              break;
            case 1:
              bench_stats_add(&bind, chains_change_us(&c, ex, every, 1, 0));
              break;
            default: {
              hand_reset(&h, &c, 0);
              double a = bench_now_us();
              hand_update_us(&h, &c, every, 0, 1);
              CU_OK(cu->cuGraphLaunch(h.e, bench_stream()));
              double b = bench_now_us();
              CU_OK(cu->cuStreamSynchronize(bench_stream()));
              bench_stats_add(&hn, b - a);
            }
          }
        }
      }
      printf("%6d %7s%% | %12.1f %12.1f %12.1f %9.2f %9.2f\n", n, every == 1 ? "100" : "1", bench_p50(&rep),
             bench_p50(&bind), bench_p50(&hn), bench_p50(&bind) / bench_p50(&rep), bench_p50(&bind) / bench_p50(&hn));
      bench_json_open_object(js, NULL);
      bench_json_int(js, "nodes", n);
      bench_json_int(js, "changed_percent", every == 1 ? 100 : 1);
      bench_json_stats(js, "replay_host_us", &rep);
      bench_json_stats(js, "bind_launch_host_us", &bind);
      bench_json_stats(js, "hand_per_node_host_us", &hn);
      bench_json_close(js);
      bench_stats_free(&rep), bench_stats_free(&bind), bench_stats_free(&hn);
    }
    hand_free(&h);
    crec_exec_destroy(ex);
    chains_free(&c);
  }
  bench_json_close(js);
}

/* Where an unchanged replay of a small chain differs from the hand-built graph:
 * crec_exec_replay, crec's own graph instantiated again and launched directly
 * (the graph without crec's replay path), and the hand-built graph; wall time,
 * synchronized with cuStreamSynchronize for all three, in turns. */
static void section_small(bench_json *js, int quick) {
  static const int sizes[] = {1, 10, 100};
  int r = quick ? 200 : 3000;
  printf("\n== unchanged replay of small chains: crec against its own graph launched directly (wall us, p50)\n");
  printf("%6s %12s %12s %12s %10s %10s\n", "N", "crec replay", "crec graph", "hand graph", "rep/graph", "graph/hand");
  bench_json_open_array(js, "small");
  const crec__cu *cu = bench_cu();
  for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
    int n = sizes[si];
    chains c;
    chains_build(&c, n, 1);
    crec_exec *ex = record_chains(&c, 0);
    hand h;
    hand_build(&h, &c, bench_function(ex, "t_mix"));
    CUgraphExec own;
    CU_OK(cu->cuGraphInstantiateWithFlags(&own, ex->graph, 0));
    CUstream st = bench_stream();
    bench_stats rep, gr, hg;
    bench_stats_init(&rep, r), bench_stats_init(&gr, r), bench_stats_init(&hg, r);
    for (int i = -20; i < r; i++) {
      for (int turn = 0; turn < 3; turn++) {
        double a = bench_now_us();
        int which = (turn + (i < 0 ? 0 : i)) % 3;
        if (which == 0) BENCH_OK(crec_exec_replay(ex, &c.bs, st));
        else CU_OK(cu->cuGraphLaunch(which == 1 ? own : h.e, st));
        CU_OK(cu->cuStreamSynchronize(st));
        if (i >= 0) bench_stats_add(which == 0 ? &rep : which == 1 ? &gr : &hg, bench_now_us() - a);
      }
    }
    printf("%6d %12.2f %12.2f %12.2f %10.3f %10.3f\n", n, bench_p50(&rep), bench_p50(&gr), bench_p50(&hg),
           bench_p50(&rep) / bench_p50(&gr), bench_p50(&gr) / bench_p50(&hg));
    bench_json_open_object(js, NULL);
    bench_json_int(js, "nodes", n);
    bench_json_stats(js, "crec_replay_us", &rep);
    bench_json_stats(js, "crec_graph_direct_us", &gr);
    bench_json_stats(js, "hand_graph_us", &hg);
    bench_json_close(js);
    bench_stats_free(&rep), bench_stats_free(&gr), bench_stats_free(&hg);
    cu->cuGraphExecDestroy(own);
    hand_free(&h);
    crec_exec_destroy(ex);
    chains_free(&c);
  }
  bench_json_close(js);
}

/* What a launch costs the host, and where a device-path replay's host time
 * goes. Each launch is timed alone (the call, from an idle stream), so the
 * columns add up to the host costs of the tables above:
 *  - a hand-built graph launched unchanged, after one exec set-params, and
 *    after a node is disabled and enabled again (cuGraphNodeSetEnabled);
 *  - crec_exec_replay of an unchanged plain exec, and of an unchanged exec
 *    with device-updatable nodes (CREC_UPDATE_DEVICE);
 *  - a device-path replay with every pointer changed, bound as you go, by
 *    crec's phases (crec_exec_profile's: the binds, then checks and staging,
 *    the updater's table, the launch), means over its replays. */
static void section_launch(bench_json *js, int quick) {
  static const int sizes[] = {1, 100, 1000, 10000};
  int reps = quick ? 20 : 200;
  printf("\n== what a launch costs the host (us, p50; a device-path replay's phases: means)\n");
  printf("%6s | %10s %10s %10s | %10s %10s | %8s %8s %8s %8s %8s\n", "N", "hand: unch", "after set",
         "after en.", "crec: unch", "dev. unch", "dev: bind", "checks", "table", "launch", "total");
  bench_json_open_array(js, "launch");
  const crec__cu *cu = bench_cu();
  for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
    int n = sizes[si];
    int r = n >= 10000 ? reps / 4 : reps;
    chains c;
    chains_build(&c, n, 1);
    crec_exec *hx = record_chains(&c, 0), *dx = record_chains(&c, 1);
    hand h;
    hand_build(&h, &c, bench_function(hx, "t_mix"));
    bench_stats un, set, en, cu0, du0, bind;
    bench_stats_init(&un, r), bench_stats_init(&set, r), bench_stats_init(&en, r);
    bench_stats_init(&cu0, r), bench_stats_init(&du0, r), bench_stats_init(&bind, r);
    CUstream st = bench_stream();
    for (int i = 0; i < r; i++) {
      double a;
      CU_OK(cu->cuStreamSynchronize(st));
      a = bench_now_us();
      CU_OK(cu->cuGraphLaunch(h.e, st));
      bench_stats_add(&un, bench_now_us() - a);
      CU_OK(cu->cuStreamSynchronize(st));
      CU_OK(cu->cuGraphExecKernelNodeSetParams(h.e, h.nodes[n - 1], &h.kp[n - 1]));
      a = bench_now_us();
      CU_OK(cu->cuGraphLaunch(h.e, st));
      bench_stats_add(&set, bench_now_us() - a);
      CU_OK(cu->cuStreamSynchronize(st));
      CU_OK(cu->cuGraphNodeSetEnabled(h.e, h.nodes[n - 1], 0));
      CU_OK(cu->cuGraphNodeSetEnabled(h.e, h.nodes[n - 1], 1));
      a = bench_now_us();
      CU_OK(cu->cuGraphLaunch(h.e, st));
      bench_stats_add(&en, bench_now_us() - a);
      CU_OK(cu->cuStreamSynchronize(st));
      a = bench_now_us();
      BENCH_OK(crec_exec_replay(hx, &c.bs, st));
      bench_stats_add(&cu0, bench_now_us() - a);
      CU_OK(cu->cuStreamSynchronize(st));
      a = bench_now_us();
      BENCH_OK(crec_exec_replay(dx, &c.bs, st));
      bench_stats_add(&du0, bench_now_us() - a);
      CU_OK(cu->cuStreamSynchronize(st));
    }
    /* the device path, every pointer changed: sets 1 and 0 in turn, bound as you go */
    memset(dx->phase_ns, 0, sizeof dx->phase_ns);
    memset(dx->phase_runs, 0, sizeof dx->phase_runs);
    dx->phase_timing = true;
    for (int i = 0; i < r; i++) {
      chains_bind(&c, 1, (i + 1) % 2);
      double a = bench_now_us();
      for (int k = 0; k < n; k++) BENCH_OK(crec_exec_bind_buffer(dx, (size_t)(c.k + k), c.b[c.k + k].ptr, 16));
      bench_stats_add(&bind, bench_now_us() - a);
      BENCH_OK(crec_exec_launch(dx, st));
      CU_OK(cu->cuStreamSynchronize(st));
    }
    dx->phase_timing = false;
    chains_bind(&c, 0, 0);
    double ph[CREC__PHASES];
    for (int k = 0; k < CREC__PHASES; k++)
      ph[k] = dx->phase_runs[k] ? (double)dx->phase_ns[k] / 1000.0 / (double)dx->phase_runs[k] : 0;
    double total = bench_p50(&bind) + ph[CREC__PHASE_CHECKS] + ph[CREC__PHASE_DEVICE] + ph[CREC__PHASE_LAUNCH];
    printf("%6d | %10.2f %10.2f %10.2f | %10.2f %10.2f | %8.2f %8.2f %8.2f %8.2f %8.2f\n", n, bench_p50(&un),
           bench_p50(&set), bench_p50(&en), bench_p50(&cu0), bench_p50(&du0), bench_p50(&bind), ph[CREC__PHASE_CHECKS],
           ph[CREC__PHASE_DEVICE], ph[CREC__PHASE_LAUNCH], total);
    bench_json_open_object(js, NULL);
    bench_json_int(js, "nodes", n);
    bench_json_stats(js, "hand_launch_unchanged_us", &un);
    bench_json_stats(js, "hand_launch_after_set_us", &set);
    bench_json_stats(js, "hand_launch_after_enable_us", &en);
    bench_json_stats(js, "crec_replay_unchanged_us", &cu0);
    bench_json_stats(js, "crec_device_replay_unchanged_us", &du0);
    bench_json_stats(js, "device_all_bind_us", &bind);
    bench_json_num(js, "device_all_checks_us", ph[CREC__PHASE_CHECKS]);
    bench_json_num(js, "device_all_table_us", ph[CREC__PHASE_DEVICE]);
    bench_json_num(js, "device_all_launch_us", ph[CREC__PHASE_LAUNCH]);
    bench_json_close(js);
    bench_stats_free(&un), bench_stats_free(&set), bench_stats_free(&en);
    bench_stats_free(&cu0), bench_stats_free(&du0), bench_stats_free(&bind);
    hand_free(&h);
    crec_exec_destroy(hx);
    crec_exec_destroy(dx);
    chains_free(&c);
  }
  bench_json_close(js);
  printf("after set / after en.: the launch that follows one host-side change of the executable graph\n"
         "dev.: an exec with device-updatable nodes (CREC_UPDATE_DEVICE); its phases: every pointer changed\n");
}

/* Device-side updates (crec_record_options.device_updates) against the host
 * path and the hand-built graph: host cost with every pointer and 1% changed,
 * and the wall time an update of every pointer adds per node (a replay with
 * every pointer changed minus one with nothing changed, both bound as you go
 * and synchronized): the host's binds and table writes plus the updater's
 * device time. What it adds on the device: the time from the launch call's
 * return to the stream's end, changed minus unchanged. Both are p50s of the
 * differences of pairs measured back to back, so that the machine's drift
 * between the two does not reach them. */
static void section_device(bench_json *js, int quick) {
  static const int sizes[] = {100, 1000, 10000};
  int reps = quick ? 20 : 200;
  printf("\n== device-side updates: host us per execution (p50), bound as you go; wall us an update adds per node\n");
  printf("%6s | %10s %10s %10s %9s | %10s %10s %10s %9s | %12s %12s %12s\n", "N", "all: host", "device", "hand/node",
         "dev/hand", "1%: host", "device", "hand/node", "dev/hand", "wall us/node", "host us/node", "dev. us/node");
  bench_json_open_array(js, "device_updates");
  char model_rows[6][200];
  int model_n = 0;
  for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
    int n = sizes[si];
    int r = n >= 10000 ? reps / 4 : reps;
    chains c;
    chains_build(&c, n, 1);
    crec_exec *hx, *dx, *ax;
    crec_record_options o = CREC_RECORD_OPTIONS_INIT;
    o.schedule = CREC_SCHEDULE_SEQUENTIAL;
    BENCH_OK(crec_record(c.p, &c.bs, &o, &hx));
    o.device_updates = 1;
    BENCH_OK(crec_record(c.p, &c.bs, &o, &ax)); /* the cost model chooses (CREC_UPDATE_AUTO) */
    o.update_strategy = CREC_UPDATE_DEVICE;
    BENCH_OK(crec_record(c.p, &c.bs, &o, &dx));
    crec_exec_stats st = CREC_EXEC_STATS_INIT;
    BENCH_OK(crec_exec_get_stats(dx, &st));
    if (st.device_nodes == 0) {
      printf("%6d | the updater has no image for this chip: every node stays on the host path\n", n);
      crec_exec_destroy(hx);
      crec_exec_destroy(dx);
      crec_exec_destroy(ax);
      chains_free(&c);
      continue;
    }
    hand h;
    hand_build(&h, &c, bench_function(hx, "t_mix"));
    bench_stats hall, dall, nall, h1, d1, n1, wall0, wallall, aall, a1;
    bench_stats_init(&hall, r), bench_stats_init(&dall, r), bench_stats_init(&nall, r);
    bench_stats_init(&h1, r), bench_stats_init(&d1, r), bench_stats_init(&n1, r);
    bench_stats_init(&wall0, r), bench_stats_init(&wallall, r);
    bench_stats_init(&aall, r), bench_stats_init(&a1, r);
    bench_stats hwall0; /* the plain graph's unchanged replay, against wall0: what device-updatable nodes cost */
    bench_stats_init(&hwall0, r);
    bench_stats wadd, dadd; /* per node, per pair: wall, and after the launch call, changed minus unchanged */
    bench_stats_init(&wadd, r), bench_stats_init(&dadd, r);
    for (int i = 0; i < r; i++) {
      for (int pi = 0; pi < 2; pi++) {
        int every = pi ? (n >= 100 ? 100 : n) : 1;
        bench_stats_add(pi ? &h1 : &hall, chains_change_us(&c, hx, every, 1, 0));
        bench_stats_add(pi ? &d1 : &dall, chains_change_us(&c, dx, every, 1, 0));
        bench_stats_add(pi ? &a1 : &aall, chains_change_us(&c, ax, every, 1, 0));
        time_hand_update(&h, &c, every, 0, pi ? &n1 : &nall);
      }
      double h0, w0, ha, wa;
      chains_change(&c, dx, 0, 1, &h0, &w0);
      chains_change(&c, dx, 1, 1, &ha, &wa);
      bench_stats_add(&wall0, w0), bench_stats_add(&wallall, wa);
      bench_stats_add(&wadd, (wa - w0) / n), bench_stats_add(&dadd, ((wa - ha) - (w0 - h0)) / n);
      bench_stats_add(&hwall0, chains_change_us(&c, hx, 0, 1, 1));
    }
    double wall_per_node = bench_p50(&wadd), device_per_node = bench_p50(&dadd);
    printf("%6d | %10.1f %10.1f %10.1f %9.2f | %10.1f %10.1f %10.1f %9.2f | %12.3f %12.3f %12.3f\n", n,
           bench_p50(&hall), bench_p50(&dall), bench_p50(&nall), bench_p50(&dall) / bench_p50(&nall), bench_p50(&h1),
           bench_p50(&d1), bench_p50(&n1), bench_p50(&d1) / bench_p50(&n1), wall_per_node, bench_p50(&dall) / n,
           device_per_node);
    bench_json_open_object(js, NULL);
    bench_json_int(js, "nodes", n);
    bench_json_stats(js, "all_changed_host_path_us", &hall);
    bench_json_stats(js, "all_changed_device_path_us", &dall);
    bench_json_stats(js, "all_changed_hand_per_node_us", &nall);
    bench_json_stats(js, "one_percent_host_path_us", &h1);
    bench_json_stats(js, "one_percent_device_path_us", &d1);
    bench_json_stats(js, "one_percent_hand_per_node_us", &n1);
    bench_json_stats(js, "device_path_wall_unchanged_us", &wall0);
    bench_json_stats(js, "host_path_wall_unchanged_us", &hwall0);
    bench_json_stats(js, "device_path_wall_all_changed_us", &wallall);
    bench_json_num(js, "wall_us_added_per_node", wall_per_node);
    bench_json_num(js, "device_us_added_per_node", device_per_node);
    /* what the cost model chose, and what its choice cost against the two paths forced */
    for (int pi = 0; pi < 2; pi++) {
      int changed = pi ? n / 100 : n;
      crec_update_estimate est = CREC_UPDATE_ESTIMATE_INIT;
      BENCH_OK(crec_exec_estimate_update(ax, (uint64_t)changed, (uint64_t)changed, &est));
      bench_stats *host = pi ? &h1 : &hall, *dev = pi ? &d1 : &dall, *mod = pi ? &a1 : &aall;
      double best = bench_p50(host) < bench_p50(dev) ? bench_p50(host) : bench_p50(dev);
      snprintf(model_rows[model_n++], sizeof model_rows[0],
               "%6d %8d | %10.1f %10.1f | %8s %10.1f %9.2f | %10.1f %10.1f | %10.1f %10.1f", n, changed,
               bench_p50(host), bench_p50(dev), est.choice == CREC_UPDATE_DEVICE ? "device" : "host", bench_p50(mod),
               bench_p50(mod) / best, est.per_node_us, est.device_us, bench_p50(&wall0), bench_p50(&hwall0));
      bench_json_open_object(js, pi ? "model_one_percent" : "model_all_changed");
      bench_json_int(js, "changed", changed);
      bench_json_int(js, "chose_device", est.choice == CREC_UPDATE_DEVICE);
      bench_json_stats(js, "auto_us", mod);
      bench_json_num(js, "estimate_host_us", est.per_node_us);
      bench_json_num(js, "estimate_device_us", est.device_us);
      bench_json_close(js);
    }
    bench_json_close(js);
    bench_stats_free(&hall), bench_stats_free(&dall), bench_stats_free(&nall), bench_stats_free(&h1);
    bench_stats_free(&d1), bench_stats_free(&n1), bench_stats_free(&wall0), bench_stats_free(&wallall);
    bench_stats_free(&aall), bench_stats_free(&a1), bench_stats_free(&hwall0);
    bench_stats_free(&wadd), bench_stats_free(&dadd);
    hand_free(&h);
    crec_exec_destroy(hx);
    crec_exec_destroy(dx);
    crec_exec_destroy(ax);
    chains_free(&c);
  }
  bench_json_close(js);
  if (!model_n) return;
  printf("\n== the update cost model (device_updates, CREC_UPDATE_AUTO): host us per execution (p50)\n");
  printf("%6s %8s | %10s %10s | %8s %10s %9s | %10s %10s | %10s %10s\n", "N", "changed", "host path", "device",
         "chose", "auto", "auto/best", "est. host", "est. dev", "unch.: dev", "plain");
  for (int i = 0; i < model_n; i++) printf("%s\n", model_rows[i]);
  printf("est.: crec_exec_estimate_update() with the model record sets (crec_update_model)\n"
         "unch.: wall us of a replay that changes nothing, synchronized: the graph with device-updatable nodes,\n"
         "and the plain one (what making nodes device-updatable costs every replay)\n");
}

/* Launches queued back to back, so that the wall time per launch is the GPU's:
 * what alternating between two executable graphs costs it, and what the event
 * that orders the variants' launches (recorded after each) adds to that, by hand
 * and through crec. (On an H100 crec.torch's four variants came out 1.1-3.9 us a
 * call above one graph updated in place: docs/capture.md.) */
static void variants_back_to_back(bench_json *js, int quick) {
  enum { N = 100, K = 100 };
  int r = quick ? 5 : 30;
  const crec__cu *cu = bench_cu();
  CUstream s = bench_stream();
  chains c;
  chains_build(&c, N, 1);
  crec_exec *one = record_chains(&c, 0), *two = record_variants(&c, 2);
  hand h[2];
  for (int k = 0; k < 2; k++) hand_build(&h[k], &c, bench_function(one, "t_mix"));
  hand_update_us(&h[1], &c, 1, 0, 1); /* h[1] holds set 1 */
  CUevent ev;
  CU_OK(cu->cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
  enum { HAND_ONE, HAND_TWO, HAND_TWO_EVENT, CREC_ONE, CREC_TWO, COLUMNS };
  static const char *const names[COLUMNS] = {"hand_one_graph_us", "hand_two_graphs_us", "hand_two_graphs_event_us",
                                              "crec_one_graph_us", "crec_two_variants_us"};
  bench_stats st[COLUMNS];
  for (int col = 0; col < COLUMNS; col++) bench_stats_init(&st[col], r);
  for (int i = 0; i <= r; i++) { /* round 0 warms up (both variants then hold their sets) */
    for (int col = 0; col < COLUMNS; col++) {
      double a = bench_now_us();
      for (int k = 0; k < K; k++) {
        int set = col == HAND_ONE || col == CREC_ONE ? 0 : k % 2;
        if (col <= HAND_TWO_EVENT) {
          CU_OK(cu->cuGraphLaunch(h[set].e, s));
          if (col == HAND_TWO_EVENT) CU_OK(cu->cuEventRecord(ev, s));
        } else {
          chains_bind(&c, 1, set);
          BENCH_OK(crec_exec_replay(col == CREC_ONE ? one : two, &c.bs, s));
        }
      }
      CU_OK(cu->cuStreamSynchronize(s));
      if (i) bench_stats_add(&st[col], (bench_now_us() - a) / K);
    }
  }
  printf("back to back (%d launches queued, %d nodes; wall us per launch, p50, the GPU's time): hand-built, one graph "
         "%.2f, two alternating %.2f, two alternating + an event record after each %.2f; crec, one graph %.2f, two "
         "variants alternating %.2f\n", K, N, bench_p50(&st[HAND_ONE]), bench_p50(&st[HAND_TWO]),
         bench_p50(&st[HAND_TWO_EVENT]), bench_p50(&st[CREC_ONE]), bench_p50(&st[CREC_TWO]));
  bench_json_open_object(js, "variants_back_to_back");
  bench_json_int(js, "nodes", N);
  bench_json_int(js, "launches", K);
  for (int col = 0; col < COLUMNS; col++) {
    bench_json_stats(js, names[col], &st[col]);
    bench_stats_free(&st[col]);
  }
  bench_json_close(js);
  cu->cuEventDestroy(ev);
  for (int k = 0; k < 2; k++) hand_free(&h[k]);
  crec_exec_destroy(one);
  crec_exec_destroy(two);
  chains_free(&c);
}

/* Variants (crec_record_options.variants): every pointer of a chain alternating
 * between two sets, each replay with whole bindings. With one executable graph
 * every replay updates every node; with two, each set gets its own graph and a
 * replay updates nothing. Host us of the replay call, wall us synchronized,
 * against the hand-built graph's per-node set-params of every node. */
static void section_variants(bench_json *js, int quick) {
  static const int sizes[] = {100, 1000, 10000};
  int reps = quick ? 20 : 200;
  printf("\n== variants: every pointer alternating between two sets, whole bindings (us per execution, p50)\n");
  printf("%6s | %10s %10s %10s %9s | %10s %10s %10s | %9s %9s\n", "N", "1: host", "2: host", "hand/node", "2/hand",
         "1: wall", "2: wall", "unch. wall", "2 hits", "2 upd.");
  bench_json_open_array(js, "variants");
  for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
    int n = sizes[si];
    int r = n >= 10000 ? reps / 4 : reps;
    chains c;
    chains_build(&c, n, 1);
    crec_exec *one = record_chains(&c, 0), *two = record_variants(&c, 2);
    hand h;
    hand_build(&h, &c, bench_function(one, "t_mix"));
    const crec__cu *cu = bench_cu();
    bench_stats h1, h2, hn, w1, w2, w0;
    bench_stats_init(&h1, r), bench_stats_init(&h2, r), bench_stats_init(&hn, r);
    bench_stats_init(&w1, r), bench_stats_init(&w2, r), bench_stats_init(&w0, r);
    for (int i = 0; i < r; i++) {
      /* chains_change_us replays set 0, then times the replay of set 1 */
      bench_stats_add(&h1, chains_change_us(&c, one, 1, 0, 0));
      bench_stats_add(&h2, chains_change_us(&c, two, 1, 0, 0));
      bench_stats_add(&w1, chains_change_us(&c, one, 1, 0, 1));
      bench_stats_add(&w2, chains_change_us(&c, two, 1, 0, 1));
      bench_stats_add(&w0, chains_change_us(&c, one, 0, 0, 1));
      hand_reset(&h, &c, 0);
      double a = bench_now_us();
      hand_update_us(&h, &c, 1, 0, 1);
      CU_OK(cu->cuGraphLaunch(h.e, bench_stream()));
      bench_stats_add(&hn, bench_now_us() - a);
      CU_OK(cu->cuStreamSynchronize(bench_stream()));
    }
    crec_exec_stats st = CREC_EXEC_STATS_INIT;
    BENCH_OK(crec_exec_get_stats(two, &st));
    printf("%6d | %10.1f %10.1f %10.1f %9.3f | %10.1f %10.1f %10.1f | %9llu %9llu\n", n, bench_p50(&h1),
           bench_p50(&h2), bench_p50(&hn), bench_p50(&h2) / bench_p50(&hn), bench_p50(&w1), bench_p50(&w2),
           bench_p50(&w0), (unsigned long long)st.variant_hits, (unsigned long long)st.nodes_updated);
    bench_json_open_object(js, NULL);
    bench_json_int(js, "nodes", n);
    bench_json_stats(js, "one_graph_host_us", &h1);
    bench_json_stats(js, "two_variants_host_us", &h2);
    bench_json_stats(js, "hand_per_node_host_us", &hn);
    bench_json_stats(js, "one_graph_wall_us", &w1);
    bench_json_stats(js, "two_variants_wall_us", &w2);
    bench_json_stats(js, "unchanged_wall_us", &w0);
    bench_json_int(js, "variant_hits", (long long)st.variant_hits);
    bench_json_int(js, "variant_nodes_updated", (long long)st.nodes_updated);
    bench_json_close(js);
    bench_stats_free(&h1), bench_stats_free(&h2), bench_stats_free(&hn);
    bench_stats_free(&w1), bench_stats_free(&w2), bench_stats_free(&w0);
    hand_free(&h);
    crec_exec_destroy(one);
    crec_exec_destroy(two);
    chains_free(&c);
  }
  bench_json_close(js);
  /* an exec whose first replay changes every pointer, before its graph was ever
   * launched: its later unchanged replays against those of an exec whose first
   * replay changed nothing (crec uploads a graph before its first update) */
  {
    enum { N = 1000 };
    int r = quick ? 20 : 200;
    chains c;
    chains_build(&c, N, 1);
    crec_exec *fresh = record_chains(&c, 0), *plain = record_chains(&c, 0);
    BENCH_OK(crec_exec_replay(plain, &c.bs, bench_stream())); /* launched as recorded */
    chains_bind(&c, 1, 1);
    BENCH_OK(crec_exec_replay(fresh, &c.bs, bench_stream()));
    BENCH_OK(crec_exec_replay(plain, &c.bs, bench_stream()));
    BENCH_OK(crec_stream_synchronize(bench_stream()));
    bench_stats f, pl;
    bench_stats_init(&f, r), bench_stats_init(&pl, r);
    for (int i = 0; i < r; i++) {
      bench_stats_add(&f, chains_change_us(&c, fresh, 0, 0, 1));
      bench_stats_add(&pl, chains_change_us(&c, plain, 0, 0, 1));
    }
    printf("first replay with new bindings, 1000 nodes: later unchanged replays %.1f us (wall p50), against %.1f us\n"
           "for an exec launched before its first update\n", bench_p50(&f), bench_p50(&pl));
    bench_json_open_object(js, "first_replay_updates");
    bench_json_stats(js, "updated_before_first_launch_wall_us", &f);
    bench_json_stats(js, "launched_first_wall_us", &pl);
    bench_json_close(js);
    bench_stats_free(&f), bench_stats_free(&pl);
    crec_exec_destroy(fresh);
    crec_exec_destroy(plain);
    chains_free(&c);
  }
  printf("1 / 2: recorded with one executable graph / with variants 2; hand/node: the hand-built graph's per-node\n"
         "set-params of every node, then its launch; unch.: one graph, nothing changed; 2 hits: replays of the\n"
         "variants exec that found their set held; 2 upd.: nodes it updated in all (the first replay of set 1)\n");
  variants_back_to_back(js, quick);
}

/* crec's bookkeeping without any CUDA call: checking every binding and staging
 * its value, as record does (a replay checks and stages only the bindings that
 * changed, after one comparison pass over all of them). */
static void section_bookkeeping(int quick) {
  static const int sizes[] = {1000, 10000};
  int r = quick ? 50 : 500;
  printf("\n== crec host bookkeeping: check and stage every binding, no CUDA calls (p50 us)\n");
  for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
    chains c;
    chains_build(&c, sizes[si], 1);
    crec_exec *ex;
    BENCH_OK(crec_record(c.p, &c.bs, NULL, &ex));
    bench_stats st;
    bench_stats_init(&st, r);
    for (int i = 0; i < r; i++) {
      chains_bind(&c, 1, i % 2);
      double t0 = bench_now_us();
      BENCH_OK(crec__check_bindings(ex->program, ex->required, &c.bs, "bench"));
      crec__fill_bindings(ex->program, &c.bs, &ex->next);
      bench_stats_add(&st, bench_now_us() - t0);
    }
    printf("%6d arguments: %.2f us (%.1f ns per argument)\n", (int)c.bs.num_buffers, bench_p50(&st),
           bench_p50(&st) * 1000.0 / (double)c.bs.num_buffers);
    bench_stats_free(&st);
    crec_exec_destroy(ex);
    chains_free(&c);
  }
}

/* Does the stream a graph was uploaded on change the cost of later launches and
 * updates on another stream? (crec_record has no stream; replays get one.) */
static void section_upload(int quick) {
  int r = quick ? 30 : 200;
  printf("\n== upload stream experiment (hand-built graphs; p50 us)\n");
  printf("%-22s %14s %16s\n", "uploaded on", "launch N=1", "update all N=1000");
  static const char *names[3] = {"nothing (lazy)", "the launch stream", "the NULL stream"};
  for (int up = 0; up < 3; up++) {
    chains c1, c2;
    chains_build(&c1, 1, 1);
    chains_build(&c2, 1000, 1);
    crec_exec *ex;
    BENCH_OK(crec_record(c1.p, &c1.bs, NULL, &ex));
    hand h1, h2;
    hand_build_on(&h1, &c1, bench_function(ex, "t_mix"), up, NULL);
    hand_build_on(&h2, &c2, bench_function(ex, "t_mix"), up, NULL);
    const crec__cu *cu = bench_cu();
    bench_stats a, b;
    bench_stats_init(&a, r), bench_stats_init(&b, r);
    for (int i = 0; i < r + 2; i++) {
      double t0 = bench_now_us();
      CU_OK(cu->cuGraphLaunch(h1.e, bench_stream()));
      CU_OK(cu->cuStreamSynchronize(bench_stream()));
      double t1 = bench_now_us();
      CU_OK(cu->cuGraphLaunch(h2.e, bench_stream()));
      CU_OK(cu->cuStreamSynchronize(bench_stream()));
      double u = hand_update_us(&h2, &c2, 1, 0, i % 2);
      if (i >= 2) bench_stats_add(&a, t1 - t0), bench_stats_add(&b, u);
    }
    printf("%-22s %14.2f %16.1f\n", names[up], bench_p50(&a), bench_p50(&b));
    bench_stats_free(&a), bench_stats_free(&b);
    hand_free(&h1), hand_free(&h2);
    crec_exec_destroy(ex);
    chains_free(&c1), chains_free(&c2);
  }
}

static void section_parallel(bench_json *js, int quick) {
  static const int ks[] = {1, 2, 4, 8};
  int r = quick ? 20 : 100;
  double base_crec = 0, base_hand = 0;
  printf("\n== k independent chains, 1000 nodes in total (wall us per execution, p50)\n");
  printf("%4s %12s %12s %12s %12s %8s\n", "k", "crec", "hand graph", "crec speedup", "hand speedup", "ratio");
  bench_json_open_array(js, "parallel_chains");
  for (size_t ki = 0; ki < sizeof ks / sizeof *ks; ki++) {
    chains c;
    chains_build(&c, 1000, ks[ki]);
    crec_exec *ex;
    BENCH_OK(crec_record(c.p, &c.bs, NULL, &ex));
    hand h;
    hand_build(&h, &c, bench_function(ex, "t_mix"));
    const crec__cu *cu = bench_cu();
    bench_stats a, b;
    bench_stats_init(&a, r), bench_stats_init(&b, r);
    for (int i = 0; i < r + 3; i++) {
      double t0 = bench_now_us();
      BENCH_OK(crec_exec_replay(ex, &c.bs, bench_stream()));
      BENCH_OK(crec_stream_synchronize(bench_stream()));
      double t1 = bench_now_us();
      CU_OK(cu->cuGraphLaunch(h.e, bench_stream()));
      CU_OK(cu->cuStreamSynchronize(bench_stream()));
      double t2 = bench_now_us();
      if (i >= 3) bench_stats_add(&a, t1 - t0), bench_stats_add(&b, t2 - t1);
    }
    if (ks[ki] == 1) base_crec = bench_p50(&a), base_hand = bench_p50(&b);
    double sc = base_crec / bench_p50(&a), sh = base_hand / bench_p50(&b);
    printf("%4d %12.1f %12.1f %11.2fx %11.2fx %8.3f\n", ks[ki], bench_p50(&a), bench_p50(&b), sc, sh, sc / sh);
    bench_json_open_object(js, NULL);
    bench_json_int(js, "k", ks[ki]);
    bench_json_stats(js, "crec_us", &a);
    bench_json_stats(js, "hand_graph_us", &b);
    bench_json_num(js, "crec_speedup", sc);
    bench_json_num(js, "hand_speedup", sh);
    bench_json_close(js);
    bench_stats_free(&a), bench_stats_free(&b);
    hand_free(&h);
    crec_exec_destroy(ex);
    chains_free(&c);
  }
  bench_json_close(js);
}

/* Where a record's time goes (crec_exec's record_ns, by phase) against a
 * hand-built graph of the same nodes and kernel: its building (node arrays and
 * cuGraphAddKernelNode) and its instantiation. The first record of a program
 * in the context also loads its module (PTX compiled by the driver here), which
 * the hand-built graph reuses: that load is shown apart, and the later records,
 * whose module is loaded, are the ones compared. */
static void section_record(bench_json *js, int quick) {
  static const int sizes[] = {100, 1000, 10000};
  static const char *const phases[CREC__RECORD_PHASES] = {"checks", "state", "bind", "build", "instantiate"};
  printf("\n== record: ms per record (p50), crec by phase against a hand-built graph (build + instantiate)\n");
  printf("%6s %9s %9s | %9s %8s %8s %8s %8s %8s | %9s %9s %9s | %7s | %6s %6s\n", "N", "first", "module", "crec",
         "checks", "state", "bind", "build", "inst.", "hand", "build", "inst.", "ratio", "pf:crec", "pf:hand");
  bench_json_open_array(js, "record");
  for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
    int n = sizes[si];
    /* enough records that the p50 of a 0.1 ms record holds still across runs */
    int r = quick ? 3 : n >= 10000 ? 10 : n >= 1000 ? 50 : 200;
    chains c;
    chains_build(&c, n, 1);
    crec_record_options o = CREC_RECORD_OPTIONS_INIT;
    o.schedule = CREC_SCHEDULE_SEQUENTIAL;
    crec_exec *ex;
    double t0 = bench_now_us();
    BENCH_OK(crec_record(c.p, &c.bs, &o, &ex));
    double first = bench_now_us() - t0;
    crec_exec_stats st = CREC_EXEC_STATS_INIT;
    BENCH_OK(crec_exec_get_stats(ex, &st));
    CUfunction f = bench_function(ex, "t_mix");
    bench_stats total, ph[CREC__RECORD_PHASES], hb, hi, ht;
    long crec_faults = 0, hand_faults = 0; /* minor page faults, summed over the records */
    bench_stats_init(&total, r), bench_stats_init(&hb, r), bench_stats_init(&hi, r), bench_stats_init(&ht, r);
    for (int k = 0; k < CREC__RECORD_PHASES; k++) bench_stats_init(&ph[k], r);
    for (int i = 0; i < r; i++) {
      crec_exec *e2;
      long f0 = bench_minor_faults();
      t0 = bench_now_us();
      BENCH_OK(crec_record(c.p, &c.bs, &o, &e2));
      bench_stats_add(&total, bench_now_us() - t0);
      crec_faults += bench_minor_faults() - f0;
      for (int k = 0; k < CREC__RECORD_PHASES; k++) bench_stats_add(&ph[k], (double)e2->record_ns[k] / 1000.0);
      crec_exec_destroy(e2);
      hand h;
      double us[2];
      f0 = bench_minor_faults();
      hand_build_on(&h, &c, f, 0, us);
      hand_faults += bench_minor_faults() - f0;
      bench_stats_add(&hb, us[0]), bench_stats_add(&hi, us[1]), bench_stats_add(&ht, us[0] + us[1]);
      hand_free(&h);
    }
    printf("%6d %9.2f %9.2f | %9.2f %8.2f %8.2f %8.2f %8.2f %8.2f | %9.2f %9.2f %9.2f | %7.2f | %6.1f %6.1f\n", n,
           first / 1000, (double)st.module_load_us / 1000, bench_p50(&total) / 1000, bench_p50(&ph[0]) / 1000,
           bench_p50(&ph[1]) / 1000, bench_p50(&ph[2]) / 1000, bench_p50(&ph[3]) / 1000, bench_p50(&ph[4]) / 1000,
           bench_p50(&ht) / 1000, bench_p50(&hb) / 1000, bench_p50(&hi) / 1000, bench_p50(&total) / bench_p50(&ht),
           (double)crec_faults / r, (double)hand_faults / r);
    bench_json_open_object(js, NULL);
    bench_json_int(js, "nodes", n);
    bench_json_num(js, "first_record_us", first);
    bench_json_num(js, "module_load_us", (double)st.module_load_us);
    bench_json_stats(js, "record_us", &total);
    for (int k = 0; k < CREC__RECORD_PHASES; k++) {
      char key[32];
      snprintf(key, sizeof key, "record_%s_us", phases[k]);
      bench_json_stats(js, key, &ph[k]);
    }
    bench_json_stats(js, "hand_build_us", &hb);
    bench_json_stats(js, "hand_instantiate_us", &hi);
    bench_json_num(js, "crec_minor_faults", (double)crec_faults / r);
    bench_json_num(js, "hand_minor_faults", (double)hand_faults / r);
    bench_json_close(js);
    bench_stats_free(&total), bench_stats_free(&hb), bench_stats_free(&hi), bench_stats_free(&ht);
    for (int k = 0; k < CREC__RECORD_PHASES; k++) bench_stats_free(&ph[k]);
    crec_exec_destroy(ex);
    chains_free(&c);
  }
  bench_json_close(js);
  printf("first: the program's first record, with its module load (module: of which the load and the driver's JIT)\n");
  printf("pf: minor page faults per record (getrusage), crec's record and the hand-built graph's build + instantiate\n");
}

/* Early start (CREC_LAUNCH_EARLY_START, programmatic dependent launch): a serial
 * chain of `n` launches of t_scale_early over 128 words, each reading what the one
 * before wrote (x and y in turn), from the test kernels' fatbin, whose sm_90 code
 * waits with griddepcontrol.wait. `flags` for every launch. */
static crec_exec *early_chain(int n, uint32_t flags, void *x, void *y, crec_program **out) {
  crec_program *p;
  crec_module m;
  crec_kernel k;
  crec_buffer b[2];
  BENCH_OK(crec_program_create(&p));
  BENCH_OK(crec_program_add_module(p, "k", CREC_IMAGE_FATBIN, crec_test_kernels_fatbin, crec_test_kernels_fatbin_size, &m));
  BENCH_OK(crec_program_add_kernel(p, m, "t_scale_early", NULL, &k));
  BENCH_OK(crec_program_add_argument(p, "x", 512, NULL, &b[0]));
  BENCH_OK(crec_program_add_argument(p, "y", 512, NULL, &b[1]));
  for (int i = 0; i < n; i++) {
    crec_arg a[] = {crec_arg_buffer(crec_range_whole(b[(i + 1) % 2]), CREC_ACCESS_WRITE),
                    crec_arg_buffer(crec_range_whole(b[i % 2]), CREC_ACCESS_READ), crec_arg_i32(i), crec_arg_i32(128)};
    crec_launch l = CREC_LAUNCH_INIT;
    l.kernel = k;
    l.block[0] = crec_dim_of(128);
    l.args = a;
    l.num_args = 4;
    l.flags = flags;
    crec_command c;
    BENCH_OK(crec_program_add_launch(p, crec_program_body(p), NULL, &l, &c));
  }
  crec_binding bd[2] = {{x, 512}, {y, 512}};
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = bd;
  bs.num_buffers = 2;
  crec_exec *ex;
  BENCH_OK(crec_record(p, &bs, NULL, &ex));
  *out = p;
  return ex;
}

/* 7. early start: chains of N recorded without and with CREC_LAUNCH_EARLY_START,
 * replayed unchanged in turns (wall us per execution, p50). Below sm_90 both have
 * plain edges (the programmatic column says how many edges are not). */
static void section_early(bench_json *js, int quick) {
  static const int sizes[] = {2, 10, 100, 1000};
  int r = quick ? 100 : 1000;
  printf("\n== early start (programmatic dependent launch): serial chains, unchanged replay (wall us, p50 [p90])\n");
  printf("%6s %16s %16s %9s %13s\n", "N", "plain", "early start", "speedup", "programmatic");
  bench_json_open_array(js, "early");
  const crec__cu *cu = bench_cu();
  void *x = bench_alloc(512), *y = bench_alloc(512);
  CUstream st = bench_stream();
  for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
    int n = sizes[si];
    if (quick && n > 100) break;
    crec_program *pp, *pe;
    crec_exec *plain = early_chain(n, 0, x, y, &pp), *early = early_chain(n, CREC_LAUNCH_EARLY_START, x, y, &pe);
    crec_exec_stats es = CREC_EXEC_STATS_INIT;
    BENCH_OK(crec_exec_get_stats(early, &es));
    crec_binding bd[2] = {{x, 512}, {y, 512}};
    crec_bindings bs = CREC_BINDINGS_INIT;
    bs.buffers = bd;
    bs.num_buffers = 2;
    bench_stats sp, se;
    bench_stats_init(&sp, r), bench_stats_init(&se, r);
    for (int i = -10; i < r; i++)
      for (int turn = 0; turn < 2; turn++) {
        int which = (turn + (i < 0 ? 0 : i)) % 2;
        double a = bench_now_us();
        BENCH_OK(crec_exec_replay(which ? early : plain, &bs, st));
        CU_OK(cu->cuStreamSynchronize(st));
        if (i >= 0) bench_stats_add(which ? &se : &sp, bench_now_us() - a);
      }
    printf("%6d %9.1f [%5.0f] %9.1f [%5.0f] %8.3fx %13llu\n", n, bench_p50(&sp), bench_pct(&sp, 90), bench_p50(&se),
           bench_pct(&se, 90), bench_p50(&sp) / bench_p50(&se), (unsigned long long)es.programmatic_edges);
    bench_json_open_object(js, NULL);
    bench_json_int(js, "nodes", n);
    bench_json_int(js, "programmatic_edges", (long long)es.programmatic_edges);
    bench_json_stats(js, "plain_us", &sp);
    bench_json_stats(js, "early_start_us", &se);
    bench_json_close(js);
    bench_stats_free(&sp), bench_stats_free(&se);
    crec_exec_destroy(plain);
    crec_exec_destroy(early);
    crec_program_destroy(pp);
    crec_program_destroy(pe);
  }
  crec_device_free(x);
  crec_device_free(y);
  bench_json_close(js);
  printf("speedup: plain / early start; the plain chain's replay is within 1-2%% of a hand-built graph's (above)\n");
}

int main(int argc, char **argv) {
  const char *json_path = NULL;
  int quick = 0;
  if (!bench_args(argc, argv, &json_path, &quick)) return 2;
  if (!bench_init()) return 0;
  bench_json js;
  bench_json_begin(&js);
  if (bench_want("chains")) section_chains(&js, quick);
  if (bench_want("small")) section_small(&js, quick);
  if (bench_want("record")) section_record(&js, quick);
  if (bench_want("crossover")) section_crossover(&js, quick);
  if (bench_want("parallel")) section_parallel(&js, quick);
  if (bench_want("bind")) section_bind(&js, quick);
  if (bench_want("device")) section_device(&js, quick);
  if (bench_want("variants")) section_variants(&js, quick);
  if (bench_want("launch")) section_launch(&js, quick);
  if (bench_want("upload")) section_upload(quick);
  if (bench_want("bookkeeping")) section_bookkeeping(quick);
  if (bench_want("early")) section_early(&js, quick);
  bench_json_end(&js, json_path);
  return 0;
}
