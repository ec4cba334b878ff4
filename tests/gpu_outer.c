/* GPU suite for crec inside other people's graphs: a replay on a stream that
 * is being captured (as torch.cuda.graph or an inference server captures)
 * becomes a child graph node of the outer graph, with that replay's bindings,
 * and leaves the exec as it was; an eager run's stream work is captured as it
 * is issued; what cannot be added is refused by name before the capture is
 * touched. The outer graph is captured and launched
 * with the driver itself (opened at run time, never linked). Skips without a
 * CUDA device. */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_util.h"

static crec_stream stream;

static void setup(void) {
  REQUIRE_DEVICE();
  EXPECT_OK(crec_stream_create(0, &stream));
}
static void teardown(void) { crec_stream_destroy(stream); }

TestSuite(outer, .init = setup, .fini = teardown);

enum { N = 1000, B = N * 4, SETS = 3 };

/* The driver calls that capture and launch the outer graph. */
typedef struct driver {
  void *lib;
  CUresult (*begin)(CUstream, CUstreamCaptureMode);
  CUresult (*end)(CUstream, CUgraph *);
  CUresult (*instantiate)(CUgraphExec *, CUgraph, unsigned long long);
  CUresult (*launch)(CUgraphExec, CUstream);
  CUresult (*exec_destroy)(CUgraphExec);
  CUresult (*graph_destroy)(CUgraph);
  CUresult (*get_nodes)(CUgraph, CUgraphNode *, size_t *);
  CUresult (*node_type)(CUgraphNode, CUgraphNodeType *);
  CUresult (*copy)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
  CUresult (*stream_create)(CUstream *, unsigned);
  CUresult (*stream_destroy)(CUstream);
  CUresult (*device_get)(CUdevice *, int);
  CUresult (*ctx_retain)(CUcontext *, CUdevice);
  CUresult (*ctx_release)(CUdevice);
  CUresult (*ctx_set)(CUcontext);
  CUdevice dev;
} driver;

static void open_driver(driver *d) {
  memset(d, 0, sizeof *d);
  d->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  cr_assert_not_null(d->lib, "libcuda.so.1: %s", dlerror());
  *(void **)&d->begin = dlsym(d->lib, "cuStreamBeginCapture_v2");
  *(void **)&d->end = dlsym(d->lib, "cuStreamEndCapture");
  *(void **)&d->instantiate = dlsym(d->lib, "cuGraphInstantiateWithFlags");
  *(void **)&d->launch = dlsym(d->lib, "cuGraphLaunch");
  *(void **)&d->exec_destroy = dlsym(d->lib, "cuGraphExecDestroy");
  *(void **)&d->graph_destroy = dlsym(d->lib, "cuGraphDestroy");
  *(void **)&d->get_nodes = dlsym(d->lib, "cuGraphGetNodes");
  *(void **)&d->node_type = dlsym(d->lib, "cuGraphNodeGetType");
  *(void **)&d->copy = dlsym(d->lib, "cuMemcpyDtoDAsync_v2");
  *(void **)&d->stream_create = dlsym(d->lib, "cuStreamCreate");
  *(void **)&d->stream_destroy = dlsym(d->lib, "cuStreamDestroy_v2");
  *(void **)&d->device_get = dlsym(d->lib, "cuDeviceGet");
  *(void **)&d->ctx_retain = dlsym(d->lib, "cuDevicePrimaryCtxRetain");
  *(void **)&d->ctx_release = dlsym(d->lib, "cuDevicePrimaryCtxRelease_v2");
  *(void **)&d->ctx_set = dlsym(d->lib, "cuCtxSetCurrent");
  cr_assert(d->begin && d->end && d->instantiate && d->launch && d->exec_destroy && d->graph_destroy &&
                d->get_nodes && d->node_type && d->copy && d->stream_create && d->stream_destroy && d->device_get &&
                d->ctx_retain && d->ctx_release && d->ctx_set,
            "libcuda.so.1 lacks a call this test uses");
  /* the calls made here directly need a current context (crec makes its own current only inside its calls) */
  CUcontext ctx;
  cr_assert_eq(d->device_get(&d->dev, 0), CUDA_SUCCESS);
  cr_assert_eq(d->ctx_retain(&ctx, d->dev), CUDA_SUCCESS);
  cr_assert_eq(d->ctx_set(ctx), CUDA_SUCCESS);
}

static void close_driver(driver *d) {
  d->ctx_set(NULL);
  d->ctx_release(d->dev);
  dlclose(d->lib);
}

/* Ends the capture on `stream`, asserting it was still valid; returns the graph. */
static CUgraph end_capture(const driver *d) {
  CUgraph g = NULL;
  CUresult r = d->end((CUstream)stream, &g);
  cr_assert_eq(r, CUDA_SUCCESS, "cuStreamEndCapture: %d (the capture was invalidated)", (int)r);
  return g;
}

/* Instantiates `g` and launches it once on `stream`, to completion. */
static void launch_once(const driver *d, CUgraph g) {
  CUgraphExec ge;
  cr_assert_eq(d->instantiate(&ge, g, 0), CUDA_SUCCESS);
  cr_assert_eq(d->launch(ge, (CUstream)stream), CUDA_SUCCESS);
  EXPECT_OK(crec_stream_synchronize(stream));
  d->exec_destroy(ge);
}

static crec_arg rw(crec_buffer b, uint64_t off, uint64_t size, crec_access a) {
  return crec_arg_buffer(crec_range_of(b, off, size), a);
}

/* tmp = x * 7; z = tmp + y; y += 1 (arguments x, y, z; a temporary). */
static void chain(gt *t) {
  gt_init(t, 0);
  crec_buffer x, y, z, tmp;
  EXPECT_OK(crec_program_add_argument(t->p, "x", B, NULL, &x));
  EXPECT_OK(crec_program_add_argument(t->p, "y", B, NULL, &y));
  EXPECT_OK(crec_program_add_argument(t->p, "z", B, NULL, &z));
  EXPECT_OK(crec_program_add_temporary(t->p, "tmp", B, &tmp));
  crec_region body = crec_program_body(t->p);
  crec_arg a1[] = {rw(tmp, 0, B, CREC_ACCESS_WRITE), rw(x, 0, B, CREC_ACCESS_READ), crec_arg_i32(7), crec_arg_i32(N)};
  gt_launch(t, body, t->scale, N, a1, 4);
  crec_arg a2[] = {rw(z, 0, B, CREC_ACCESS_WRITE), rw(tmp, 0, B, CREC_ACCESS_READ), rw(y, 0, B, CREC_ACCESS_READ),
                   crec_arg_i32(N)};
  gt_launch(t, body, t->mix, N, a2, 4);
  crec_arg a3[] = {rw(y, 0, B, CREC_ACCESS_READ_WRITE), crec_arg_i32(N)};
  gt_launch(t, body, t->inc, N, a3, 2);
}

/* SETS sets of the chain's 3 buffers for crec (g) and twins for eager runs (e),
 * each pair filled alike, and a buffer per set for what the outer graph copies. */
typedef struct sets {
  void *g[SETS][3], *e[SETS][3], *copy[SETS];
  crec_binding gb[3], eb[3];
  crec_bindings bg, be;
} sets;

static void sets_init(sets *s) {
  memset(s, 0, sizeof *s);
  for (int k = 0; k < SETS; k++) {
    for (int a = 0; a < 3; a++) {
      s->g[k][a] = gt_alloc(B);
      s->e[k][a] = gt_alloc(B);
      gt_fill(s->g[k][a], B, (uint32_t)(k * 3 + a + 1));
      gt_fill(s->e[k][a], B, (uint32_t)(k * 3 + a + 1));
    }
    s->copy[k] = gt_alloc(B);
  }
  s->bg = s->be = (crec_bindings)CREC_BINDINGS_INIT;
  s->bg.buffers = s->gb, s->be.buffers = s->eb;
  s->bg.num_buffers = s->be.num_buffers = 3;
}

/* Binds set `k` (crec's in bg, the twins in be). */
static crec_bindings *set(sets *s, int k) {
  for (int a = 0; a < 3; a++) {
    s->gb[a] = (crec_binding){s->g[k][a], B};
    s->eb[a] = (crec_binding){s->e[k][a], B};
  }
  return &s->bg;
}

static void expect_set(sets *s, int k, const char *when) {
  static const char *const names[3] = {"x", "y", "z"};
  for (int a = 0; a < 3; a++) {
    char what[96];
    snprintf(what, sizeof what, "%s of set %d, %s", names[a], k, when);
    gt_expect_same(s->g[k][a], s->e[k][a], B, what);
  }
}

static void sets_free(sets *s) {
  for (int k = 0; k < SETS; k++) {
    for (int a = 0; a < 3; a++) {
      crec_device_free(s->g[k][a]);
      crec_device_free(s->e[k][a]);
    }
    crec_device_free(s->copy[k]);
  }
}

static crec_exec_stats stats_of(const crec_exec *ex) {
  crec_exec_stats st = CREC_EXEC_STATS_INIT;
  EXPECT_OK(crec_exec_get_stats(ex, &st));
  return st;
}

/* In capture mode `mode`: a replay with set 1 inside a capture that copies z
 * after it. The outer graph holds one child graph node, then the copy; its
 * launch matches an eager run of set 1, and the copy saw z as crec wrote it (the
 * capture went on from crec's node). The exec launched nothing and still holds
 * set 0: a replay of set 0 updates nothing and matches eager. */
static void replay_into(CUstreamCaptureMode mode) {
  driver d;
  open_driver(&d);
  gt t;
  chain(&t);
  sets s;
  sets_init(&s);
  crec_exec *ex;
  EXPECT_OK(crec_record(t.p, set(&s, 0), NULL, &ex));
  gt_replay(ex, set(&s, 0), stream);
  gt_eager(t.p, &s.be, stream);
  expect_set(&s, 0, "after the first replay");
  crec_exec_stats before = stats_of(ex);

  cr_assert_eq(d.begin((CUstream)stream, mode), CUDA_SUCCESS);
  EXPECT_OK(crec_exec_replay(ex, set(&s, 1), stream));
  cr_assert_eq(d.copy((CUdeviceptr)s.copy[1], (CUdeviceptr)s.g[1][2], B, (CUstream)stream), CUDA_SUCCESS);
  CUgraph g = end_capture(&d);
  CUgraphNode nodes[4];
  size_t num = 4;
  cr_assert_eq(d.get_nodes(g, nodes, &num), CUDA_SUCCESS);
  cr_expect_eq(num, 2, "the outer graph has %zu nodes: crec's child graph node and the copy were expected", num);
  CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;
  cr_assert_eq(d.node_type(nodes[0], &type), CUDA_SUCCESS);
  cr_expect_eq(type, CU_GRAPH_NODE_TYPE_GRAPH, "crec's replay is node type %d, not a child graph", (int)type);

  crec_exec_stats mid = stats_of(ex);
  cr_expect_eq(mid.captured_replays, 1);
  cr_expect_eq(mid.replays, before.replays, "a replay into a capture launched the exec");
  cr_expect_eq(mid.nodes_updated, before.nodes_updated, "a replay into a capture updated the executable graph");

  launch_once(&d, g);
  set(&s, 1);
  gt_eager(t.p, &s.be, stream);
  expect_set(&s, 1, "after the outer graph's launch");
  gt_expect_same(s.copy[1], s.e[1][2], B, "the outer graph's copy of z, made after crec's node");

  gt_replay(ex, set(&s, 0), stream);
  gt_eager(t.p, &s.be, stream);
  expect_set(&s, 0, "replayed by the exec after the capture");
  crec_exec_stats after = stats_of(ex);
  cr_expect_eq(after.nodes_updated, before.nodes_updated, "set 0 is what the exec held: nothing to update");
  cr_expect_eq(after.replays, before.replays + 1);

  d.graph_destroy(g);
  crec_exec_destroy(ex);
  sets_free(&s);
  crec_program_destroy(t.p);
  close_driver(&d);
}

Test(outer, a_replay_in_a_global_capture_becomes_a_child_graph_node) { replay_into(CU_STREAM_CAPTURE_MODE_GLOBAL); }

Test(outer, a_replay_in_a_relaxed_capture_becomes_a_child_graph_node) { replay_into(CU_STREAM_CAPTURE_MODE_RELAXED); }

/* The outer graph owns what was added: captured with set 2, then the exec
 * replays set 1 (updating its nodes), and the outer graph still runs set 2 and
 * leaves set 1 alone. With 3 variants, and bound slot by slot. */
Test(outer, later_replays_do_not_reach_the_outer_graph) {
  driver d;
  open_driver(&d);
  gt t;
  chain(&t);
  sets s;
  sets_init(&s);
  crec_record_options o = CREC_RECORD_OPTIONS_INIT;
  o.variants = 3;
  crec_exec *ex;
  EXPECT_OK(crec_record(t.p, set(&s, 0), &o, &ex));

  cr_assert_eq(d.begin((CUstream)stream, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  for (int a = 0; a < 3; a++) EXPECT_OK(crec_exec_bind_buffer(ex, (size_t)a, s.g[2][a], B));
  EXPECT_OK(crec_exec_launch(ex, stream));
  CUgraph g = end_capture(&d);
  cr_expect_eq(stats_of(ex).launches, 0, "a launch into a capture counted as launched");

  gt_replay(ex, set(&s, 1), stream);
  gt_eager(t.p, &s.be, stream);
  expect_set(&s, 1, "replayed by the exec after the capture");

  launch_once(&d, g);
  set(&s, 2);
  gt_eager(t.p, &s.be, stream);
  expect_set(&s, 2, "run by the outer graph");
  expect_set(&s, 1, "after the outer graph ran set 2");
  cr_expect_eq(stats_of(ex).captured_replays, 1);

  d.graph_destroy(g);
  crec_exec_destroy(ex);
  sets_free(&s);
  crec_program_destroy(t.p);
  close_driver(&d);
}

/* A while loop of 4 iterations around a kernel (argument "state", 64 bytes), and
 * its bindings to a new buffer `*buf` (in `*bd`, `*b`). */
static void loop_program(gt *t, void **buf, crec_binding *bd, crec_bindings *b) {
  gt_init(t, 0);
  crec_buffer state;
  EXPECT_OK(crec_program_add_argument(t->p, "state", 64, NULL, &state));
  crec_region body = gt_countdown_loop(t, crec_program_body(t->p), state, 5);
  crec_arg a[] = {crec_arg_buffer(crec_range_of(state, 32, 4), CREC_ACCESS_READ_WRITE), crec_arg_i32(1)};
  gt_launch1(t, body, t->inc, a, 2);
  *buf = gt_alloc(64);
  gt_fill(*buf, 64, 3);
  *bd = (crec_binding){*buf, 64};
  *b = (crec_bindings)CREC_BINDINGS_INIT;
  b->buffers = bd, b->num_buffers = 1;
}

/* A child graph cannot hold conditional nodes: a replay of an exec with a while
 * loop builds the program's nodes, the loop's body included, into the graph
 * being captured. Bound to another buffer than the exec's last, launched twice,
 * the outer graph runs the loop twice there, as two eager runs do on a twin;
 * the exec's own buffer is left alone, and the exec still replays. */
Test(outer, a_graph_with_a_loop_adds_its_nodes_to_the_capture) {
  driver d;
  open_driver(&d);
  gt t;
  void *buf;
  crec_binding bd;
  crec_bindings b;
  loop_program(&t, &buf, &bd, &b);
  crec_exec *ex;
  EXPECT_OK(crec_record(t.p, &b, NULL, &ex));
  void *other = gt_alloc(64), *twin = gt_alloc(64), *mine = gt_alloc(64);
  gt_fill(other, 64, 9);
  gt_fill(twin, 64, 9);
  crec_binding ob = {other, 64}, tb = {twin, 64};
  crec_bindings outer_b = b, twin_b = b;
  outer_b.buffers = &ob;
  twin_b.buffers = &tb;
  EXPECT_OK(crec_copy(mine, buf, 64));

  cr_assert_eq(d.begin((CUstream)stream, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  EXPECT_OK(crec_exec_replay(ex, &outer_b, stream));
  CUgraph g = end_capture(&d);
  size_t num = 0;
  cr_assert_eq(d.get_nodes(g, NULL, &num), CUDA_SUCCESS);
  CUgraphNode *nodes = calloc(num ? num : 1, sizeof *nodes);
  cr_assert_eq(d.get_nodes(g, nodes, &num), CUDA_SUCCESS);
  size_t conditionals = 0;
  for (size_t i = 0; i < num; i++) {
    CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;
    cr_assert_eq(d.node_type(nodes[i], &type), CUDA_SUCCESS);
    conditionals += type == CU_GRAPH_NODE_TYPE_CONDITIONAL;
  }
  free(nodes);
  cr_expect_eq(conditionals, 1, "the outer graph's %zu nodes hold %zu conditional nodes", num, conditionals);
  cr_expect_eq(stats_of(ex).captured_replays, 1);
  cr_expect_eq(stats_of(ex).replays, 0, "a replay into a capture launched the exec");

  launch_once(&d, g);
  launch_once(&d, g);
  gt_eager(t.p, &twin_b, stream);
  gt_eager(t.p, &twin_b, stream);
  gt_expect_same(other, twin, 64, "the loop run twice by the outer graph");
  gt_expect_same(buf, mine, 64, "the exec's own buffer, which the outer graph does not use");

  gt_replay(ex, &b, stream); /* and the exec still replays, on its own buffer */
  crec_binding mb = {mine, 64};
  crec_bindings mine_b = b;
  mine_b.buffers = &mb;
  gt_eager(t.p, &mine_b, stream);
  gt_expect_same(buf, mine, 64, "the exec's replay after the capture");
  cr_expect_eq(stats_of(ex).replays, 1);
  d.graph_destroy(g);
  crec_exec_destroy(ex);
  crec_device_free(buf);
  crec_device_free(other);
  crec_device_free(twin);
  crec_device_free(mine);
  crec_program_destroy(t.p);
  close_driver(&d);
}

static void note_addresses(void *user, void *const *addresses, size_t count) {
  (void)user, (void)addresses, (void)count;
}

/* A replay built into the capture (the exec has a while loop) cannot keep a host
 * callback's table of addresses alive: refused by name, and the capture goes on. */
Test(outer, a_loop_with_a_host_callback_given_addresses_is_refused_and_the_capture_goes_on) {
  driver d;
  open_driver(&d);
  gt t;
  void *buf;
  crec_binding bd;
  crec_bindings b;
  loop_program(&t, &buf, &bd, &b);
  crec_buffer scratch;
  EXPECT_OK(crec_program_add_temporary(t.p, "scratch", 64, &scratch));
  crec_operand op = crec_operand_of(crec_range_of(scratch, 0, 64), CREC_ACCESS_READ);
  crec_host_callback cb = CREC_HOST_CALLBACK_INIT;
  cb.fn_buffers = note_addresses;
  cb.operands = &op;
  cb.num_operands = 1;
  crec_command c;
  EXPECT_OK(crec_program_add_host_callback(t.p, crec_program_body(t.p), "note", &cb, &c));
  crec_exec *ex;
  EXPECT_OK(crec_record(t.p, &b, NULL, &ex));
  cr_assert_eq(d.begin((CUstream)stream, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  crec_status st = crec_exec_replay(ex, &b, stream);
  cr_expect_eq(st, CREC_ERR_UNSUPPORTED, "%s", crec_status_string(st));
  cr_expect(strstr(crec_last_error(), "('note') is a host callback given its operands' addresses") != NULL, "%s",
            crec_last_error());
  CUgraph g = end_capture(&d);
  d.graph_destroy(g);
  gt_replay(ex, &b, stream);
  crec_exec_destroy(ex);
  crec_device_free(buf);
  crec_program_destroy(t.p);
  close_driver(&d);
}

/* What cannot be added to a capture is refused by name, and the capture stays
 * valid: an exec that runs its control flow eagerly (decided on the host). */
Test(outer, an_eager_exec_is_refused_and_the_capture_goes_on) {
  driver d;
  open_driver(&d);
  gt t;
  void *buf;
  crec_binding bd;
  crec_bindings b;
  loop_program(&t, &buf, &bd, &b);
  crec_record_options o = CREC_RECORD_OPTIONS_INIT;
  o.eager_control_flow = 1;
  crec_exec *ex;
  EXPECT_OK(crec_record(t.p, &b, &o, &ex));

  cr_assert_eq(d.begin((CUstream)stream, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  crec_status st = crec_exec_replay(ex, &b, stream);
  cr_expect_eq(st, CREC_ERR_UNSUPPORTED, "a replay of an eager exec into a capture: %s", crec_status_string(st));
  cr_expect(strstr(crec_last_error(), "runs eagerly") != NULL, "%s", crec_last_error());
  CUgraph g = end_capture(&d);
  d.graph_destroy(g);
  cr_expect_eq(stats_of(ex).captured_replays, 0);

  gt_replay(ex, &b, stream); /* and the exec still runs */
  crec_exec_destroy(ex);
  crec_device_free(buf);
  crec_program_destroy(t.p);
  close_driver(&d);
}

/* The legacy default stream, while a blocking stream captures in global mode,
 * is refused by name (a launch there would join the capture implicitly). */
Test(outer, the_legacy_stream_during_a_global_capture_is_refused) {
  driver d;
  open_driver(&d);
  gt t;
  chain(&t);
  sets s;
  sets_init(&s);
  crec_exec *ex;
  EXPECT_OK(crec_record(t.p, set(&s, 0), NULL, &ex));
  CUstream blocking;
  cr_assert_eq(d.stream_create(&blocking, 0), CUDA_SUCCESS);
  cr_assert_eq(d.begin(blocking, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  crec_status st = crec_exec_replay(ex, set(&s, 1), NULL);
  char msg[512];
  snprintf(msg, sizeof msg, "%s", crec_last_error());
  CUgraph g = NULL;
  if (d.end(blocking, &g) == CUDA_SUCCESS) d.graph_destroy(g);
  d.stream_destroy(blocking);
  cr_expect_eq(st, CREC_ERR_UNSUPPORTED, "a replay on the legacy stream during a global capture: %s",
               crec_status_string(st));
  cr_expect(strstr(msg, "legacy default stream") != NULL, "%s", msg);
  cr_expect_eq(stats_of(ex).captured_replays, 0);
  crec_exec_destroy(ex);
  sets_free(&s);
  crec_program_destroy(t.p);
  close_driver(&d);
}

/* crec_run_eager on a capturing stream: the run's kernels (and its temporary's
 * stream-ordered allocation) are captured like any stream work, and the outer
 * graph's launch matches an eager run of the same set; the capture stays valid. */
static void eager_into(CUstreamCaptureMode mode) {
  driver d;
  open_driver(&d);
  gt t;
  chain(&t);
  sets s;
  sets_init(&s);
  set(&s, 0);
  EXPECT_OK(crec_run_eager(t.p, &s.bg, stream)); /* the first run in this context, outside the capture */
  gt_eager(t.p, &s.be, stream);
  expect_set(&s, 0, "after the first run");

  cr_assert_eq(d.begin((CUstream)stream, mode), CUDA_SUCCESS);
  EXPECT_OK(crec_run_eager(t.p, set(&s, 1), stream));
  CUgraph g = end_capture(&d);
  CUgraphNode nodes[16];
  size_t num = 16, kernels = 0;
  cr_assert_eq(d.get_nodes(g, nodes, &num), CUDA_SUCCESS);
  for (size_t i = 0; i < num; i++) {
    CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;
    cr_assert_eq(d.node_type(nodes[i], &type), CUDA_SUCCESS);
    kernels += type == CU_GRAPH_NODE_TYPE_KERNEL;
  }
  cr_expect_eq(kernels, 3, "the outer graph has %zu kernel nodes of %zu: the chain's 3 were expected", kernels, num);
  expect_set(&s, 1, "before the outer graph's launch (captured, not run: both still as filled)");

  launch_once(&d, g);
  set(&s, 1);
  gt_eager(t.p, &s.be, stream);
  expect_set(&s, 1, "after the outer graph's launch");

  d.graph_destroy(g);
  sets_free(&s);
  crec_program_destroy(t.p);
  close_driver(&d);
}

Test(outer, an_eager_run_in_a_global_capture_becomes_part_of_the_outer_graph) {
  eager_into(CU_STREAM_CAPTURE_MODE_GLOBAL);
}

Test(outer, an_eager_run_in_a_relaxed_capture_becomes_part_of_the_outer_graph) {
  eager_into(CU_STREAM_CAPTURE_MODE_RELAXED);
}

/* What an eager run would end a capture with is refused by name before any call
 * on the stream, and the capture stays valid: a first run in this context (it
 * loads modules), and control flow (decided on the host). */
Test(outer, an_eager_run_that_would_end_the_capture_is_refused_and_the_capture_goes_on) {
  driver d;
  open_driver(&d);
  gt t;
  chain(&t);
  sets s;
  sets_init(&s);
  cr_assert_eq(d.begin((CUstream)stream, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  crec_status st = crec_run_eager(t.p, set(&s, 0), stream);
  cr_expect_eq(st, CREC_ERR_UNSUPPORTED, "a first eager run inside a capture: %s", crec_status_string(st));
  cr_expect(strstr(crec_last_error(), "has not run in this context yet") != NULL, "%s", crec_last_error());
  d.graph_destroy(end_capture(&d));

  gt loop;
  void *buf;
  crec_binding bd;
  crec_bindings b;
  loop_program(&loop, &buf, &bd, &b);
  EXPECT_OK(crec_run_eager(loop.p, &b, stream));
  EXPECT_OK(crec_stream_synchronize(stream));
  cr_assert_eq(d.begin((CUstream)stream, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  st = crec_run_eager(loop.p, &b, stream);
  cr_expect_eq(st, CREC_ERR_UNSUPPORTED, "an eager run of a while loop inside a capture: %s", crec_status_string(st));
  cr_expect(strstr(crec_last_error(), "control flow") != NULL, "%s", crec_last_error());
  d.graph_destroy(end_capture(&d));

  crec_device_free(buf);
  crec_program_destroy(loop.p);
  sets_free(&s);
  crec_program_destroy(t.p);
  close_driver(&d);
}
