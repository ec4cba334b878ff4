/* crec_bench_control: device-side loops and switches (issue "Device-side control
 * flow"). Columns, measured side by side in one run: crec replay (a WHILE
 * conditional node), the same with an iteration limit (crec_record_options.
 * max_loop_iterations, never reached: its set kernel counts the iterations),
 * eager (host-driven: copy the predicate back and sync each iteration), and a
 * hand-built conditional-node graph of the same nodes.
 *
 *   crec_bench_control [--json FILE] [--quick]
 *
 * Programs: 1,000 iterations of a 2-kernel body; 10,000 iterations of a
 * 1-kernel body; a 4-way switch dispatch repeated inside a 1,000-iteration loop. */
#include <string.h>

#include "bench_util.h"

typedef struct loop_prog {
  crec_program *p;
  crec_kernel tick, countdown, store, test_positive;
  crec_buffer state, x;
} loop_prog;

static crec_command launch1(crec_program *p, crec_region r, crec_kernel k, const crec_arg *a, size_t n) {
  crec_launch l = CREC_LAUNCH_INIT;
  l.kernel = k;
  l.args = a;
  l.num_args = n;
  crec_command c;
  BENCH_OK(crec_program_add_launch(p, r, NULL, &l, &c));
  return c;
}

/* counter = iters; pred = counter > 0; while (pred) { [tick x]; [switch]; countdown } */
static void build(loop_prog *lp, int iters, int tick, int with_switch) {
  memset(lp, 0, sizeof *lp);
  crec_module m;
  BENCH_OK(crec_program_create(&lp->p));
  BENCH_OK(crec_program_add_module(lp->p, "k", CREC_IMAGE_PTX, crec_test_kernels_ptx, crec_test_kernels_ptx_size, &m));
  BENCH_OK(crec_program_add_kernel(lp->p, m, "t_tick", NULL, &lp->tick));
  BENCH_OK(crec_program_add_kernel(lp->p, m, "t_countdown", NULL, &lp->countdown));
  BENCH_OK(crec_program_add_kernel(lp->p, m, "t_store_i32", NULL, &lp->store));
  BENCH_OK(crec_program_add_kernel(lp->p, m, "t_test_positive", NULL, &lp->test_positive));
  BENCH_OK(crec_program_add_argument(lp->p, "state", 64, NULL, &lp->state));
  BENCH_OK(crec_program_add_argument(lp->p, "x", 64, NULL, &lp->x));
  crec_region top = crec_program_body(lp->p), cond, body;
  crec_range counter = crec_range_of(lp->state, 0, 4), pred = crec_range_of(lp->state, 16, 1);
  crec_arg st[] = {crec_arg_buffer(counter, CREC_ACCESS_WRITE), crec_arg_i32(iters)};
  launch1(lp->p, top, lp->store, st, 2);
  crec_arg tp[] = {crec_arg_buffer(counter, CREC_ACCESS_READ), crec_arg_buffer(pred, CREC_ACCESS_WRITE)};
  launch1(lp->p, top, lp->test_positive, tp, 2);
  crec_command w;
  BENCH_OK(crec_program_add_while(lp->p, top, "loop", pred, &w, &cond, &body));
  if (tick) {
    crec_arg t[] = {crec_arg_buffer(crec_range_of(lp->x, 0, 4), CREC_ACCESS_READ_WRITE)};
    launch1(lp->p, body, lp->tick, t, 1);
  }
  if (with_switch) {
    crec_region br[4];
    crec_command sw;
    BENCH_OK(crec_program_add_switch(lp->p, body, "dispatch", counter, 4, NULL, &sw, br));
    for (int b = 0; b < 4; b++) {
      crec_arg t[] = {crec_arg_buffer(crec_range_of(lp->x, 16 + 4 * (uint64_t)b, 4), CREC_ACCESS_READ_WRITE)};
      launch1(lp->p, br[b], lp->tick, t, 1);
    }
  }
  crec_arg cd[] = {crec_arg_buffer(counter, CREC_ACCESS_READ_WRITE), crec_arg_buffer(pred, CREC_ACCESS_WRITE)};
  launch1(lp->p, body, lp->countdown, cd, 2);
}

/* The same structure by hand: store, test, set, WHILE { [tick], [set switch, SWITCH {tick x4}], countdown, set }. */
typedef struct hand {
  CUgraph g;
  CUgraphExec e;
} hand;

static CUgraphNode add_kernel(CUgraph g, CUfunction f, void **params, CUgraphNode *dep) {
  CUDA_KERNEL_NODE_PARAMS kp = {0};
  kp.func = f;
  kp.gridDimX = kp.gridDimY = kp.gridDimZ = 1;
  kp.blockDimX = kp.blockDimY = kp.blockDimZ = 1;
  kp.kernelParams = params;
  CUgraphNode n;
  CU_OK(bench_cu()->cuGraphAddKernelNode(&n, g, dep, dep ? 1 : 0, &kp));
  return n;
}

static void hand_build(hand *h, const crec_exec *ex, void *state, void *x, int iters, int tick, int with_switch) {
  const crec__cu *cu = bench_cu();
  CUdeviceptr counter = (CUdeviceptr)(uintptr_t)state, pred = counter + 16, xp = (CUdeviceptr)(uintptr_t)x;
  CUdeviceptr xb[4];
  for (int b = 0; b < 4; b++) xb[b] = xp + 16 + 4 * (CUdeviceptr)b;
  CUfunction ftick = bench_function(ex, "t_tick"), fcd = bench_function(ex, "t_countdown");
  CUfunction fst = bench_function(ex, "t_store_i32"), ftp = bench_function(ex, "t_test_positive");
  CUfunction fset = bench_condition_kernel("crec_set_while"), fsw = bench_condition_kernel("crec_set_switch");
  CU_OK(cu->cuGraphCreate(&h->g, 0));
  static int it;
  it = iters;
  void *pst[] = {&counter, &it};
  CUgraphNode n = add_kernel(h->g, fst, pst, NULL);
  void *ptp[] = {&counter, &pred};
  n = add_kernel(h->g, ftp, ptp, &n);
  CUgraphConditionalHandle hw;
  CU_OK(cu->cuGraphConditionalHandleCreate(&hw, h->g, bench_ctx(), 0, 0));
  void *pset[] = {&hw, &pred};
  n = add_kernel(h->g, fset, pset, &n);
  CUgraphNodeParams np;
  memset(&np, 0, sizeof np);
  np.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
  np.conditional.handle = hw;
  np.conditional.type = CU_GRAPH_COND_TYPE_WHILE;
  np.conditional.size = 1;
  np.conditional.ctx = bench_ctx();
  CU_OK(cu->cuGraphAddNode(&n, h->g, &n, NULL, 1, &np));
  CUgraph body = np.conditional.phGraph_out[0];
  CUgraphNode b = NULL, *dep = NULL;
  void *ptick[] = {&xp};
  if (tick) {
    b = add_kernel(body, ftick, ptick, NULL);
    dep = &b;
  }
  static void *pticks[4][1];
  static CUgraphConditionalHandle hs;
  static CUdeviceptr no_cases;
  static int four = 4;
  if (with_switch) {
    CU_OK(cu->cuGraphConditionalHandleCreate(&hs, body, bench_ctx(), 0, 0));
    void *psw[] = {&hs, &counter, &no_cases, &four};
    b = add_kernel(body, fsw, psw, dep);
    memset(&np, 0, sizeof np);
    np.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
    np.conditional.handle = hs;
    np.conditional.type = CU_GRAPH_COND_TYPE_SWITCH;
    np.conditional.size = 4;
    np.conditional.ctx = bench_ctx();
    CU_OK(cu->cuGraphAddNode(&b, body, &b, NULL, 1, &np));
    for (int k = 0; k < 4; k++) {
      pticks[k][0] = &xb[k];
      add_kernel(np.conditional.phGraph_out[k], ftick, pticks[k], NULL);
    }
    dep = &b;
  }
  void *pcd[] = {&counter, &pred};
  b = add_kernel(body, fcd, pcd, dep);
  add_kernel(body, fset, pset, &b);
  CU_OK(cu->cuGraphInstantiateWithFlags(&h->e, h->g, 0));
  CU_OK(cu->cuGraphUpload(h->e, bench_stream()));
  CU_OK(cu->cuStreamSynchronize(bench_stream()));
}

static void run_case(bench_json *js, const char *name, int iters, int tick, int with_switch, int reps) {
  loop_prog lp;
  build(&lp, iters, tick, with_switch);
  void *state = bench_alloc(64), *x = bench_alloc(64);
  crec_binding bd[2] = {{state, 64}, {x, 64}};
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = bd;
  bs.num_buffers = 2;
  crec_exec *ex, *limited;
  BENCH_OK(crec_record(lp.p, &bs, NULL, &ex));
  crec_record_options lo = CREC_RECORD_OPTIONS_INIT;
  lo.max_loop_iterations = 10 * (uint64_t)iters; /* never reached */
  BENCH_OK(crec_record(lp.p, &bs, &lo, &limited));
  hand h;
  hand_build(&h, ex, state, x, iters, tick, with_switch);
  const crec__cu *cu = bench_cu();
  bench_stats a, b, c, l;
  bench_stats_init(&a, reps), bench_stats_init(&b, reps), bench_stats_init(&c, reps), bench_stats_init(&l, reps);
  int eager_reps = iters >= 10000 ? (reps < 5 ? reps : 5) : reps;
  for (int i = 0; i < reps + 2; i++) {
    double t0 = bench_now_us();
    BENCH_OK(crec_exec_replay(ex, &bs, bench_stream()));
    BENCH_OK(crec_stream_synchronize(bench_stream()));
    double t1 = bench_now_us();
    CU_OK(cu->cuGraphLaunch(h.e, bench_stream()));
    CU_OK(cu->cuStreamSynchronize(bench_stream()));
    double t2 = bench_now_us();
    BENCH_OK(crec_exec_replay(limited, &bs, bench_stream()));
    BENCH_OK(crec_stream_synchronize(bench_stream()));
    BENCH_OK(crec_exec_check(limited));
    double t3 = bench_now_us();
    if (i >= 2) {
      bench_stats_add(&a, (t1 - t0) / iters);
      bench_stats_add(&c, (t2 - t1) / iters);
      bench_stats_add(&l, (t3 - t2) / iters);
    }
    if (i < eager_reps + 2) {
      t0 = bench_now_us();
      BENCH_OK(crec_run_eager(lp.p, &bs, bench_stream()));
      BENCH_OK(crec_stream_synchronize(bench_stream()));
      if (i >= 2) bench_stats_add(&b, (bench_now_us() - t0) / iters);
    }
  }
  /* the loop really ran: x[0] counts the ticks of every execution */
  uint32_t hx[16];
  BENCH_OK(crec_copy(hx, x, sizeof hx));
  printf("%-28s %10.2f %10.2f %10.2f %10.2f %9.1fx %9.3f %9.3f   (x[0] = %u)\n", name, bench_p50(&a),
         bench_p50(&l), bench_p50(&b), bench_p50(&c), bench_p50(&b) / bench_p50(&a), bench_p50(&a) / bench_p50(&c),
         bench_p50(&l) / bench_p50(&a), hx[0]);
  bench_json_open_object(js, NULL);
  bench_json_int(js, "iterations", iters);
  bench_json_int(js, "body_kernels", tick + 1 + (with_switch ? 1 : 0));
  bench_json_int(js, "switch", with_switch);
  bench_json_stats(js, "crec_replay_us_per_iteration", &a);
  bench_json_stats(js, "eager_us_per_iteration", &b);
  bench_json_stats(js, "hand_graph_us_per_iteration", &c);
  bench_json_stats(js, "crec_limited_replay_us_per_iteration", &l);
  bench_json_num(js, "limit_cost_ratio", bench_p50(&l) / bench_p50(&a));
  bench_json_num(js, "speedup_over_eager", bench_p50(&b) / bench_p50(&a));
  bench_json_num(js, "ratio_to_hand_graph", bench_p50(&a) / bench_p50(&c));
  bench_json_close(js);
  bench_stats_free(&a), bench_stats_free(&b), bench_stats_free(&c), bench_stats_free(&l);
  cu->cuGraphExecDestroy(h.e);
  cu->cuGraphDestroy(h.g);
  crec_exec_destroy(ex);
  crec_exec_destroy(limited);
  crec_device_free(state);
  crec_device_free(x);
  crec_program_destroy(lp.p);
}

int main(int argc, char **argv) {
  const char *json_path = NULL;
  int quick = 0;
  if (!bench_args(argc, argv, &json_path, &quick)) return 2;
  if (!bench_init()) return 0;
  bench_json js;
  bench_json_begin(&js);
  int reps = quick ? 5 : 30;
  printf("\n== device loops (us per iteration, p50)\n");
  printf("%-28s %10s %10s %10s %10s %10s %9s %9s\n", "program", "crec", "limited", "eager", "hand graph", "vs eager",
         "vs hand", "limit");
  bench_json_open_array(&js, "loops");
  run_case(&js, "1000 x 2-kernel body", 1000, 1, 0, reps);
  run_case(&js, "10000 x 1-kernel body", 10000, 0, 0, reps);
  run_case(&js, "1000 x switch in loop", 1000, 0, 1, reps);
  bench_json_close(&js);
  bench_json_end(&js, json_path);
  return 0;
}
