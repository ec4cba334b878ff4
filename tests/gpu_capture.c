/* GPU suite for imported graphs (capture.h): work captured from a stream (here
 * crec's own eager runs, which issue kernels, copies and fills as any library
 * does, and cuBLAS's SGEMM, opened at run time) becomes an exec that rebinds its
 * arguments at each replay; what cannot be rebound is refused, naming the node.
 * Skips without a CUDA device. */
#include <cuda.h>
#include <dlfcn.h>
#include <math.h>
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

TestSuite(capture, .init = setup, .fini = teardown);

enum { N = 1024, B = N * 4, HALF = B / 2 };

static crec_arg rw(crec_buffer b, uint64_t off, uint64_t size, crec_access a) {
  return crec_arg_buffer(crec_range_of(b, off, size), a);
}

/* The work to capture: y = 0; y = x * 3 + 7; z[half:] = y[half:] + x[:half]
 * (interior pointers); w = z. Arguments x, y, z, w. */
static void chain(gt *t) {
  gt_init(t, 0);
  crec_buffer x, y, z, w;
  EXPECT_OK(crec_program_add_argument(t->p, "x", B, NULL, &x));
  EXPECT_OK(crec_program_add_argument(t->p, "y", B, NULL, &y));
  EXPECT_OK(crec_program_add_argument(t->p, "z", B, NULL, &z));
  EXPECT_OK(crec_program_add_argument(t->p, "w", B, NULL, &w));
  crec_region body = crec_program_body(t->p);
  crec_command c;
  EXPECT_OK(crec_program_add_memset(t->p, body, "zero y", crec_range_of(y, 0, B), 0, 4, &c));
  crec_arg a1[] = {rw(y, 0, B, CREC_ACCESS_WRITE), rw(x, 0, B, CREC_ACCESS_READ), crec_arg_i32(7), crec_arg_i32(N)};
  gt_launch(t, body, t->scale, N, a1, 4);
  crec_arg a2[] = {rw(z, HALF, HALF, CREC_ACCESS_WRITE), rw(y, HALF, HALF, CREC_ACCESS_READ),
                   rw(x, 0, HALF, CREC_ACCESS_READ), crec_arg_i32(N / 2)};
  gt_launch(t, body, t->mix, N / 2, a2, 4);
  EXPECT_OK(crec_program_add_memcpy(t->p, body, "copy z", crec_range_of(w, 0, B), crec_range_of(z, 0, B), &c));
}

typedef struct issue {
  const crec_program *p;
  crec_value *scalar;   /* a bound scalar changed at each capture, or NULL */
  int calls;
} issue;

/* The capture callback: the program's eager run on the capturing stream. */
static crec_status run_program(void *user, crec_stream s, void *const *bases) {
  issue *is = user;
  crec_binding bd[4];
  for (int a = 0; a < 4; a++) bd[a] = (crec_binding){bases[a], B};
  crec_bindings b = CREC_BINDINGS_INIT;
  b.buffers = bd;
  b.num_buffers = crec_program_argument_count(is->p);
  if (is->scalar) {
    is->scalar->i32 = 7 + is->calls;
    b.scalars = is->scalar;
    b.num_scalars = 1;
  }
  is->calls++;
  return crec_run_eager(is->p, &b, s);
}

static crec_graph_argument args_of(void *const *bases, int i) {
  static const char *const names[4] = {"x", "y", "z", "w"};
  return (crec_graph_argument){names[i], bases[i], B};
}

/* Three sets of the chain's 4 buffers for the graph (g) and twins for eager
 * runs (e), each pair filled alike. */
static void buffer_sets(void *g[3][4], void *e[3][4]) {
  for (int k = 0; k < 3; k++)
    for (int a = 0; a < 4; a++) {
      g[k][a] = gt_alloc(B);
      e[k][a] = gt_alloc(B);
      gt_fill(g[k][a], B, (uint32_t)(k * 4 + a + 1));
      gt_fill(e[k][a], B, (uint32_t)(k * 4 + a + 1));
    }
}

static void free_sets(void *g[3][4], void *e[3][4]) {
  for (int k = 0; k < 3; k++)
    for (int a = 0; a < 4; a++) {
      crec_device_free(g[k][a]);
      crec_device_free(e[k][a]);
    }
}

/* Replays `ex` on graph set `k` and runs `p` eagerly on its twin: the 4 arguments equal. */
static void replay_set_against_eager(crec_exec *ex, const crec_program *p, void *g[3][4], void *e[3][4], int k) {
  static const char *const names[4] = {"x", "y", "z", "w"};
  crec_binding gb[4], eb[4];
  crec_bindings bg = CREC_BINDINGS_INIT, be = CREC_BINDINGS_INIT;
  bg.buffers = gb, be.buffers = eb;
  bg.num_buffers = be.num_buffers = 4;
  for (int a = 0; a < 4; a++) {
    gb[a] = (crec_binding){g[k][a], B};
    eb[a] = (crec_binding){e[k][a], B};
  }
  gt_replay(ex, &bg, stream);
  gt_eager(p, &be, stream);
  for (int a = 0; a < 4; a++) gt_expect_same(g[k][a], e[k][a], B, names[a]);
}

/* Imports the chain (with a second capture, or without), then replays it 300
 * times over 3 rotated buffer sets against the same program run eagerly on
 * twins of those buffers: every byte equal. */
/* `variants`: the import keeps that many executable graphs; rotating through
 * three sets, each gets its own after the first three replays. */
static void rotate(int with_second, uint32_t variants) {
  crec_record_options o = CREC_RECORD_OPTIONS_INIT;
  o.variants = variants;
  gt t;
  chain(&t);
  void *g[3][4], *e[3][4];
  buffer_sets(g, e);
  /* loads the program's module before any capture (a load is no stream work) */
  crec_binding eb[4];
  crec_bindings be = CREC_BINDINGS_INIT;
  be.buffers = eb;
  be.num_buffers = 4;
  void *spare[4], *second[4];
  for (int a = 0; a < 4; a++) {
    spare[a] = gt_alloc(B);
    second[a] = gt_alloc(B);
    eb[a] = (crec_binding){spare[a], B};
  }
  gt_eager(t.p, &be, stream);
  EXPECT_OK(crec_stream_synchronize(stream));

  crec_graph_argument ga[4];
  for (int a = 0; a < 4; a++) ga[a] = args_of(g[0], a);
  issue is = {t.p, NULL, 0};
  crec_exec *ex = NULL;
  EXPECT_OK(crec_capture_import(run_program, &is, stream, ga, 4, with_second ? second : NULL, &o, &ex));
  cr_assert_eq(is.calls, with_second ? 2 : 1, "the work was captured %d times", is.calls);
  size_t nodes, relocated, relocs;
  EXPECT_OK(crec_exec_import_counts(ex, &nodes, &relocated, &relocs));
  cr_assert_eq(relocated, 4, "%zu of %zu nodes rewritten", relocated, nodes);
  size_t edges, pdl;
  EXPECT_OK(crec_exec_import_edges(ex, &edges, &pdl));
  cr_expect(edges + 1 >= nodes && pdl == 0, "%zu nodes in one stream's order, %zu edges, %zu programmatic", nodes,
            edges, pdl);
  /* memset dst, scale dst+src, mix dst+a+b, memcpy src+dst */
  cr_assert_eq(relocs, 8, "%zu relocations", relocs);
  char *dump = NULL;
  size_t dump_size = 0;
  FILE *f = open_memstream(&dump, &dump_size);
  EXPECT_OK(crec_exec_dump_import(ex, f));
  fclose(f);
  cr_assert(strstr(dump, "z+2048") && strstr(dump, "y+2048") && strstr(dump, "memset: dst -> y+0"), "%s", dump);
  free(dump);
  char *json = NULL;
  EXPECT_OK(crec_exec_dump_import_string(ex, 1, &json, NULL));
  cr_assert(strstr(json, "\"relocated\":4") && strstr(json, "{\"end\":\"dst\",\"argument\":\"y\",\"offset\":0}") &&
                strstr(json, "\"kernel\":\"t_mix\""),
            "%s", json);
  crec_free(json);

  for (int it = 0; it < 300; it++) replay_set_against_eager(ex, t.p, g, e, it % 3);
  crec_exec_stats st = CREC_EXEC_STATS_INIT;
  EXPECT_OK(crec_exec_get_stats(ex, &st));
  cr_expect_eq(st.replays, 300);
  cr_expect_eq(st.nodes, 4);
  if (variants == 3) {
    /* sets 1 and 2 updated a graph each (replays 1 and 2); from replay 3 on each set has its own */
    cr_expect_eq(st.nodes_updated, 8, "%llu nodes updated", (unsigned long long)st.nodes_updated);
    cr_expect_eq(st.variant_hits, 297, "%llu replays found their set held", (unsigned long long)st.variant_hits);
  }
  /* bind as you go: a new w rewrites the copy alone (with variants, the least
   * recently launched graph holds another set: every node) */
  EXPECT_OK(crec_exec_bind_buffer(ex, 3, spare[3], B));
  EXPECT_OK(crec_exec_launch(ex, stream));
  EXPECT_OK(crec_stream_synchronize(stream));
  EXPECT_OK(crec_exec_get_stats(ex, &st));
  uint64_t want = variants > 1 ? 4 : 1;
  cr_expect_eq(st.last_nodes_updated, want, "%llu nodes updated for a new w", (unsigned long long)st.last_nodes_updated);
  gt_expect_same(spare[3], g[2][2], B, "w, copied from z by the rebound copy");
  /* a binding smaller than the capture's argument is refused, naming it */
  crec_binding gb[4];
  crec_bindings bg = CREC_BINDINGS_INIT;
  bg.buffers = gb;
  bg.num_buffers = 4;
  for (int a = 0; a < 4; a++) gb[a] = (crec_binding){g[2][a], B};
  gb[0] = (crec_binding){g[0][0], B / 2};
  EXPECT_STATUS(crec_exec_replay(ex, &bg, stream), CREC_ERR_BINDING);
  EXPECT_ERROR_MENTIONS("'x'");
  crec_exec_destroy(ex);
  free_sets(g, e);
  for (int a = 0; a < 4; a++) {
    crec_device_free(spare[a]);
    crec_device_free(second[a]);
  }
  crec_program_destroy(t.p);
}

Test(capture, captured_work_replays_with_rotated_buffers_like_running_it_again) { rotate(1, 1); }

Test(capture, one_capture_takes_every_word_inside_an_argument_for_a_pointer) { rotate(0, 1); }

Test(capture, captured_work_rotating_through_three_variants_updates_each_set_once) { rotate(1, 3); }

/* A kernel parameter that differs between the captures for no reason an
 * argument explains (a value computed on the host) is noise: replayed as the
 * first capture had it, as torch.cuda.graph replays it, and listed in the dump;
 * memory allocated during the capture is refused. */
Test(capture, noise_replays_as_captured_and_graph_memory_is_refused_naming_the_node) {
  gt t;
  gt_init(&t, 0);
  crec_buffer x, y;
  EXPECT_OK(crec_program_add_argument(t.p, "x", B, NULL, &x));
  EXPECT_OK(crec_program_add_argument(t.p, "y", B, NULL, &y));
  crec_scalar c;
  EXPECT_OK(crec_program_add_scalar(t.p, "c", CREC_TYPE_I32, &c));
  crec_arg a1[] = {rw(y, 0, B, CREC_ACCESS_WRITE), rw(x, 0, B, CREC_ACCESS_READ), crec_arg_scalar(c),
                   crec_arg_i32(N)};
  gt_launch(&t, crec_program_body(t.p), t.scale, N, a1, 4);
  void *first[2] = {gt_alloc(B), gt_alloc(B)}, *second[2] = {gt_alloc(B), gt_alloc(B)};
  void *other[2] = {gt_alloc(B), gt_alloc(B)};
  gt_fill(other[0], B, 5);
  crec_value v;
  issue is = {t.p, &v, 0};
  /* warm: the module loads outside the capture */
  EXPECT_OK(run_program(&is, stream, first));
  EXPECT_OK(crec_stream_synchronize(stream));
  crec_graph_argument ga[2] = {{"x", first[0], B}, {"y", first[1], B}};
  crec_exec *ex = NULL;
  is.calls = 0; /* the first capture passes c = 7, the second 8 */
  EXPECT_OK(crec_capture_import(run_program, &is, stream, ga, 2, second, NULL, &ex));
  char *json = NULL;
  EXPECT_OK(crec_exec_dump_import_string(ex, 1, &json, NULL));
  cr_expect(strstr(json, "\"as_captured\":{\"bytes\":1,\"places\":[{\"node\":\"0\",\"parameter\":2,\"byte\":16,"
                         "\"size\":4}]}"),
            "%s", json);
  cr_expect(strstr(json, "\"copied\":0"), "nothing copied: %s", json);
  crec_free(json);
  crec_binding bd[2] = {{other[0], B}, {other[1], B}};
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = bd;
  bs.num_buffers = 2;
  gt_replay(ex, &bs, stream);
  uint32_t hx[N], hy[N];
  gt_download(hx, other[0], B);
  gt_download(hy, other[1], B);
  for (int i = 0; i < N; i++) cr_assert_eq(hy[i], hx[i] * 3u + 7u, "y[%d]: the first capture's c, 7", i);
  crec_exec_destroy(ex);
  crec_program_destroy(t.p);
  for (int k = 0; k < 2; k++) crec_device_free(other[k]);

  /* a temporary: eager runs allocate its arena on the stream, a memory node when captured */
  gt_init(&t, 0);
  crec_buffer tmp;
  EXPECT_OK(crec_program_add_argument(t.p, "x", B, NULL, &x));
  EXPECT_OK(crec_program_add_argument(t.p, "y", B, NULL, &y));
  EXPECT_OK(crec_program_add_temporary(t.p, "tmp", B, &tmp));
  crec_arg a2[] = {rw(tmp, 0, B, CREC_ACCESS_WRITE), rw(x, 0, B, CREC_ACCESS_READ), crec_arg_i32(3), crec_arg_i32(N)};
  gt_launch(&t, crec_program_body(t.p), t.scale, N, a2, 4);
  crec_arg a3[] = {rw(y, 0, B, CREC_ACCESS_WRITE), rw(tmp, 0, B, CREC_ACCESS_READ), rw(x, 0, B, CREC_ACCESS_READ),
                   crec_arg_i32(N)};
  gt_launch(&t, crec_program_body(t.p), t.mix, N, a3, 4);
  is = (issue){t.p, NULL, 0};
  EXPECT_OK(run_program(&is, stream, first));
  EXPECT_OK(crec_stream_synchronize(stream));
  EXPECT_STATUS(crec_capture_import(run_program, &is, stream, ga, 2, second, NULL, &ex), CREC_ERR_UNSUPPORTED);
  EXPECT_ERROR_MENTIONS("is a memory allocation node");
  cr_assert_null(ex);
  crec_program_destroy(t.p);
  for (int a = 0; a < 2; a++) {
    crec_device_free(first[a]);
    crec_device_free(second[a]);
  }
}

/* crec_capture_begin/end around work issued by hand, then crec_import_graph
 * with the graph: the caller keeps the graph, which may go once imported. */
Test(capture, a_graph_the_caller_captured_imports_and_outlives_nothing) {
  gt t;
  chain(&t);
  void *b[4], *o[4];
  crec_binding bd[4];
  for (int a = 0; a < 4; a++) {
    b[a] = gt_alloc(B);
    o[a] = gt_alloc(B);
    gt_fill(b[a], B, (uint32_t)a + 1);
    gt_fill(o[a], B, (uint32_t)a + 11);
    bd[a] = (crec_binding){b[a], B};
  }
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = bd;
  bs.num_buffers = 4;
  gt_eager(t.p, &bs, stream);
  EXPECT_OK(crec_stream_synchronize(stream));
  crec_graph graph = NULL;
  EXPECT_OK(crec_capture_begin(stream));
  EXPECT_OK(crec_run_eager(t.p, &bs, stream));
  EXPECT_OK(crec_capture_end(stream, &graph));
  cr_assert_not_null(graph);
  crec_graph_argument ga[4];
  for (int a = 0; a < 4; a++) ga[a] = args_of(b, a);
  crec_graph_import in = CREC_GRAPH_IMPORT_INIT;
  in.graph = graph;
  in.arguments = ga;
  in.num_arguments = 4;
  crec_exec *ex = NULL;
  EXPECT_OK(crec_import_graph(&in, NULL, &ex));
  crec_graph_destroy(graph);
  /* replayed on the other buffers: y = x * 3 + 7 (t_scale), as the eager run gives */
  for (int a = 0; a < 4; a++) bd[a] = (crec_binding){o[a], B};
  gt_replay(ex, &bs, stream);
  EXPECT_OK(crec_stream_synchronize(stream));
  uint32_t x[N], y[N];
  gt_download(x, o[0], B);
  gt_download(y, o[1], B);
  for (int i = 0; i < N; i++) cr_assert_eq(y[i], x[i] * 3u + 7u, "y[%d] = %u, x[%d] = %u", i, y[i], i, x[i]);
  crec_exec_destroy(ex);
  for (int a = 0; a < 4; a++) {
    crec_device_free(b[a]);
    crec_device_free(o[a]);
  }
  crec_program_destroy(t.p);
}

/* ---- graphs built by hand: child graphs and a conditional node ---- */

/* The driver calls that build them, from libcuda at run time (never linked). */
typedef struct driver {
  void *lib;
  CUresult (*graph_create)(CUgraph *, unsigned);
  CUresult (*graph_destroy)(CUgraph);
  CUresult (*add_child)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, CUgraph);
  CUresult (*add_node)(CUgraphNode *, CUgraph, const CUgraphNode *, const CUgraphEdgeData *, size_t,
                       CUgraphNodeParams *);
  CUresult (*handle_create)(CUgraphConditionalHandle *, CUgraph, CUcontext, unsigned, unsigned);
  CUresult (*ctx_retain)(CUcontext *, CUdevice);
  CUresult (*ctx_release)(CUdevice);
} driver;

static void open_driver(driver *d) {
  memset(d, 0, sizeof *d);
  d->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  cr_assert_not_null(d->lib, "libcuda.so.1: %s", dlerror());
  *(void **)&d->graph_create = dlsym(d->lib, "cuGraphCreate");
  *(void **)&d->graph_destroy = dlsym(d->lib, "cuGraphDestroy");
  *(void **)&d->add_child = dlsym(d->lib, "cuGraphAddChildGraphNode");
  *(void **)&d->add_node = dlsym(d->lib, "cuGraphAddNode_v2");
  *(void **)&d->handle_create = dlsym(d->lib, "cuGraphConditionalHandleCreate");
  *(void **)&d->ctx_retain = dlsym(d->lib, "cuDevicePrimaryCtxRetain");
  *(void **)&d->ctx_release = dlsym(d->lib, "cuDevicePrimaryCtxRelease_v2");
  cr_assert(d->graph_create && d->graph_destroy && d->add_child && d->add_node && d->handle_create && d->ctx_retain &&
                d->ctx_release,
            "libcuda.so.1 lacks a graph call this test uses");
}

/* `work` as a child graph, then again inside a child graph of a child graph,
 * in a new graph: the work runs twice, the second time three levels down. */
static CUgraph nest(const driver *d, CUgraph work) {
  CUgraph top, mid;
  CUgraphNode first, second, inner;
  cr_assert_eq(d->graph_create(&top, 0), CUDA_SUCCESS);
  cr_assert_eq(d->graph_create(&mid, 0), CUDA_SUCCESS);
  cr_assert_eq(d->add_child(&inner, mid, NULL, 0, work), CUDA_SUCCESS);
  cr_assert_eq(d->add_child(&first, top, NULL, 0, work), CUDA_SUCCESS);
  cr_assert_eq(d->add_child(&second, top, &first, 1, mid), CUDA_SUCCESS); /* cloned into the node */
  d->graph_destroy(mid);
  return top;
}

/* Work captured inside child graphs, nested two deep: the import reads their
 * nodes as the graph's own, names them by their place ("1.0.2"), and a replay
 * updates each child graph node once from the exec's copy of its graph. */
Test(capture, work_inside_child_graphs_replays_with_rotated_buffers) {
  driver d;
  open_driver(&d);
  gt t;
  chain(&t);
  void *g[3][4], *e[3][4];
  buffer_sets(g, e);
  crec_binding gb[4];
  crec_bindings bg = CREC_BINDINGS_INIT;
  bg.buffers = gb;
  bg.num_buffers = 4;
  /* two captures of the program's eager run, on sets 0 and 1 (the module loads first) */
  CUgraph work[2];
  for (int c = 0; c < 2; c++) {
    for (int a = 0; a < 4; a++) gb[a] = (crec_binding){g[c][a], B};
    if (c == 0) {
      gt_eager(t.p, &bg, stream);
      EXPECT_OK(crec_stream_synchronize(stream));
    }
    EXPECT_OK(crec_capture_begin(stream));
    EXPECT_OK(crec_run_eager(t.p, &bg, stream));
    EXPECT_OK(crec_capture_end(stream, &work[c]));
  }
  CUgraph nested[2] = {nest(&d, work[0]), nest(&d, work[1])};
  crec_graph_argument ga[4];
  for (int a = 0; a < 4; a++) ga[a] = args_of(g[0], a);
  crec_graph_import in = CREC_GRAPH_IMPORT_INIT;
  in.graph = nested[0];
  in.arguments = ga;
  in.num_arguments = 4;
  in.second = nested[1];
  in.second_bases = g[1];
  crec_exec *ex = NULL;
  /* several executable graphs cannot follow nodes set through the template's child graphs */
  crec_record_options o = CREC_RECORD_OPTIONS_INIT;
  o.variants = 2;
  EXPECT_STATUS(crec_import_graph(&in, &o, &ex), CREC_ERR_UNSUPPORTED);
  EXPECT_ERROR_MENTIONS("variants 2, but the imported graph has nodes to relocate inside");
  cr_expect_null(ex);
  EXPECT_OK(crec_import_graph(&in, NULL, &ex));
  size_t nodes, relocated, relocs;
  EXPECT_OK(crec_exec_import_counts(ex, &nodes, &relocated, &relocs));
  /* twice the chain's 4 nodes and 8 relocations; nodes: 2 + 4, 1 + 4 */
  cr_expect(relocated == 8 && relocs == 16 && nodes == 11, "%zu of %zu nodes rewritten, %zu relocations", relocated,
            nodes, relocs);
  char *dump = NULL;
  EXPECT_OK(crec_exec_dump_import_string(ex, 0, &dump, NULL));
  cr_expect(strstr(dump, "node 0.0 memset") && strstr(dump, "node 1.0.3 memcpy"), "%s", dump);
  crec_free(dump);
  for (int c = 0; c < 2; c++) {
    d.graph_destroy(nested[c]);
    d.graph_destroy(work[c]);
  }
  for (int it = 0, n = gt_reps(60); it < n; it++) {
    int k = (it + 1) % 3;
    /* the chain gives the same bytes run once or twice, so the nested copy shows
     * itself another way: the sets not bound get fresh outputs on both sides, and
     * a copy left on an old binding would write there */
    for (int j = 0; j < 3; j++)
      for (int a = 1; a < 4 && j != k; a++) {
        gt_fill(g[j][a], B, (uint32_t)(1000 + it * 16 + j * 4 + a));
        gt_fill(e[j][a], B, (uint32_t)(1000 + it * 16 + j * 4 + a));
      }
    replay_set_against_eager(ex, t.p, g, e, k);
    for (int j = 0; j < 3; j++)
      for (int a = 1; a < 4 && j != k; a++) gt_expect_same(g[j][a], e[j][a], B, "an output of a set not bound");
  }
  crec_exec_destroy(ex);
  free_sets(g, e);
  crec_program_destroy(t.p);
  dlclose(d.lib);
}

/* A conditional node is refused, naming it and what the driver lacks: CUDA 13.0
 * neither clones a graph that holds one nor returns its bodies. */
Test(capture, a_conditional_node_is_refused_naming_it) {
  driver d;
  open_driver(&d);
  gt t;
  chain(&t);
  void *b[4];
  crec_binding bd[4];
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = bd;
  bs.num_buffers = 4;
  for (int a = 0; a < 4; a++) {
    b[a] = gt_alloc(B);
    bd[a] = (crec_binding){b[a], B};
  }
  gt_eager(t.p, &bs, stream);
  EXPECT_OK(crec_stream_synchronize(stream));
  crec_graph work = NULL;
  EXPECT_OK(crec_capture_begin(stream));
  EXPECT_OK(crec_run_eager(t.p, &bs, stream));
  EXPECT_OK(crec_capture_end(stream, &work));
  /* the work, then an IF node (its body empty) */
  CUgraph top;
  CUgraphNode child, cond;
  /* device 0's primary context, crec's (no context is current between crec's calls) */
  CUcontext ctx = NULL;
  cr_assert_eq(d.ctx_retain(&ctx, 0), CUDA_SUCCESS);
  cr_assert_eq(d.graph_create(&top, 0), CUDA_SUCCESS);
  cr_assert_eq(d.add_child(&child, top, NULL, 0, work), CUDA_SUCCESS);
  CUgraphConditionalHandle h;
  cr_assert_eq(d.handle_create(&h, top, ctx, 1, CU_GRAPH_COND_ASSIGN_DEFAULT), CUDA_SUCCESS);
  CUgraphNodeParams np;
  memset(&np, 0, sizeof np);
  np.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
  np.conditional.handle = h;
  np.conditional.type = CU_GRAPH_COND_TYPE_IF;
  np.conditional.size = 1;
  np.conditional.ctx = ctx;
  cr_assert_eq(d.add_node(&cond, top, &child, NULL, 1, &np), CUDA_SUCCESS);
  crec_graph_argument ga[4];
  for (int a = 0; a < 4; a++) ga[a] = args_of(b, a);
  crec_graph_import in = CREC_GRAPH_IMPORT_INIT;
  in.graph = top;
  in.arguments = ga;
  in.num_arguments = 4;
  crec_exec *ex = NULL;
  EXPECT_STATUS(crec_import_graph(&in, NULL, &ex), CREC_ERR_UNSUPPORTED);
  EXPECT_ERROR_MENTIONS("node 1 is a conditional node");
  EXPECT_ERROR_MENTIONS("cuGraphClone");
  cr_assert_null(ex);
  d.graph_destroy(top);
  d.ctx_release(0);
  crec_graph_destroy(work);
  for (int a = 0; a < 4; a++) crec_device_free(b[a]);
  crec_program_destroy(t.p);
  dlclose(d.lib);
}

/* ---- a library's own kernels: cuBLAS ---- */

/* cuBLAS's C API, the few calls used here (cublas_api.h: handles and streams
 * are pointers, enums ints, statuses 0 on success). */
typedef struct cublas {
  void *lib, *handle;
  void *workspace; /* ours, given after each cublasSetStream (which resets it to cuBLAS's pool) */
  size_t workspace_bytes;
  int (*create)(void **);
  int (*destroy)(void *);
  int (*set_stream)(void *, crec_stream);
  int (*set_workspace)(void *, void *, size_t);
  int (*sgemm)(void *, int, int, int, int, int, const float *, const float *, int, const float *, int, const float *,
               float *, int);
  int (*gemm_ex)(void *, int, int, int, int, int, const void *, const void *, int, int, const void *, int, int,
                 const void *, void *, int, int, int, int);
} cublas;

static bool open_cublas(cublas *c, char *why, size_t size) {
  static const char *const names[] = {"libcublas.so.13", "/usr/local/cuda/lib64/libcublas.so.13",
                                      "/usr/local/cuda/targets/x86_64-linux/lib/libcublas.so.13"};
  memset(c, 0, sizeof *c);
  for (size_t i = 0; i < sizeof names / sizeof *names && !c->lib; i++) c->lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
  if (!c->lib) {
    snprintf(why, size, "cuBLAS is not available: %s", dlerror());
    return false;
  }
  *(void **)&c->create = dlsym(c->lib, "cublasCreate_v2");
  *(void **)&c->destroy = dlsym(c->lib, "cublasDestroy_v2");
  *(void **)&c->set_stream = dlsym(c->lib, "cublasSetStream_v2");
  *(void **)&c->set_workspace = dlsym(c->lib, "cublasSetWorkspace_v2");
  *(void **)&c->sgemm = dlsym(c->lib, "cublasSgemm_v2");
  *(void **)&c->gemm_ex = dlsym(c->lib, "cublasGemmEx");
  if (!c->create || !c->destroy || !c->set_stream || !c->set_workspace || !c->sgemm || !c->gemm_ex) {
    snprintf(why, size,
             "cuBLAS opened but lacks cublasCreate_v2, cublasDestroy_v2, cublasSetStream_v2, cublasSetWorkspace_v2, "
             "cublasSgemm_v2 or cublasGemmEx");
    dlclose(c->lib);
    return false;
  }
  int st = c->create(&c->handle);
  if (st != 0) {
    snprintf(why, size, "cuBLAS opened but cublasCreate_v2 failed (%d)", st);
    dlclose(c->lib);
    return false;
  }
  return true;
}

enum { GM = 96, GN = 80, GK = 72 };

/* D = A * B in column-major (cuBLAS's): A is GM x GK, B GK x GN, D GM x GN. */
static crec_status sgemm(void *user, crec_stream s, void *const *bases) {
  cublas *c = user;
  const float one = 1, zero = 0;
  if (c->set_stream(c->handle, s) != 0) return CREC_ERR_CUDA;
  if (c->set_workspace(c->handle, c->workspace, c->workspace_bytes) != 0) return CREC_ERR_CUDA;
  return c->sgemm(c->handle, 0, 0, GM, GN, GK, &one, bases[0], GM, bases[1], GK, &zero, bases[2], GM) ? CREC_ERR_CUDA
                                                                                                      : CREC_OK;
}

Test(capture, a_cublas_gemm_replays_on_rotated_buffers) {
  cublas cb;
  char why[256];
  if (!open_cublas(&cb, why, sizeof why)) cr_skip_test("%s", why);
  const uint64_t sz[3] = {GM * GK * 4, GK * GN * 4, GM * GN * 4};
  void *d[4][3];
  float *h[4][2], *want = malloc(sz[2]), *got = malloc(sz[2]);
  uint32_t r = 77;
  for (int k = 0; k < 4; k++) {
    for (int a = 0; a < 3; a++) d[k][a] = gt_alloc(sz[a]);
    for (int a = 0; a < 2; a++) {
      h[k][a] = malloc(sz[a]);
      for (uint64_t i = 0; i < sz[a] / 4; i++) h[k][a][i] = (float)gt_drand(&r);
      gt_upload(d[k][a], h[k][a], sz[a]);
    }
  }
  /* the library's own workspace and kernels are set up outside the capture:
   * without a workspace of the caller's, cuBLAS 13 allocates one inside the
   * capture (a graph memory node, which an import refuses); PyTorch gives it
   * one the same way. cublasSetStream resets it, so sgemm() gives it after. */
  cb.workspace_bytes = 32 << 20;
  cb.workspace = gt_alloc(cb.workspace_bytes);
  EXPECT_OK(sgemm(&cb, stream, d[3]));
  EXPECT_OK(crec_stream_synchronize(stream));
  static const char *const names[3] = {"a", "b", "d"};
  crec_graph_argument ga[3];
  for (int a = 0; a < 3; a++) ga[a] = (crec_graph_argument){names[a], d[0][a], sz[a]};
  crec_exec *ex = NULL;
  EXPECT_OK(crec_capture_import(sgemm, &cb, stream, ga, 3, d[1], NULL, &ex));
  size_t nodes, relocated, relocs;
  EXPECT_OK(crec_exec_import_counts(ex, &nodes, &relocated, &relocs));
  cr_expect_geq(relocs, 3, "%zu relocations in %zu rewritten nodes of %zu: A, B and D at least", relocs, relocated,
                nodes);
  crec_binding bd[3];
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = bd;
  bs.num_buffers = 3;
  for (int it = 0, n = gt_reps(30); it < n; it++) {
    int k = it % 3;
    gt_fill(d[k][2], sz[2], (uint32_t)it); /* the replay must write all of D */
    for (int a = 0; a < 3; a++) bd[a] = (crec_binding){d[k][a], sz[a]};
    gt_replay(ex, &bs, stream);
    gt_download(got, d[k][2], sz[2]);
    double worst = 0;
    int at = 0;
    for (int j = 0; j < GN; j++)
      for (int i = 0; i < GM; i++) {
        double acc = 0;
        for (int l = 0; l < GK; l++) acc += (double)h[k][0][l * GM + i] * h[k][1][j * GK + l];
        want[j * GM + i] = (float)acc;
        double e = fabs(acc - got[j * GM + i]);
        if (e > worst) worst = e, at = j * GM + i;
      }
    cr_assert(worst <= 1e-3, "replay %d (set %d): D[%d] = %g, want %g", it, k, at, got[at], want[at]);
  }
  crec_exec_destroy(ex);
  cb.destroy(cb.handle);
  dlclose(cb.lib);
  crec_device_free(cb.workspace);
  for (int k = 0; k < 4; k++) {
    for (int a = 0; a < 3; a++) crec_device_free(d[k][a]);
    free(h[k][0]), free(h[k][1]);
  }
  free(want), free(got);
}

/* ---- kernels launched by hand, as libraries launch them ---- */

/* The driver calls a library would make: modules, launches (with parameter
 * pointers or one `extra` buffer), copies from page-locked host memory. */
typedef struct hand {
  driver d;
  CUcontext ctx;
  CUmodule mod;
  CUfunction split, padded, indirect, scale;
  CUresult (*module_load)(CUmodule *, const void *);
  CUresult (*module_unload)(CUmodule);
  CUresult (*get_function)(CUfunction *, CUmodule, const char *);
  CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                     void **, void **);
  CUresult (*push)(CUcontext);
  CUresult (*pop)(CUcontext *);
  CUresult (*htod_async)(CUdeviceptr, const void *, size_t, CUstream);
  CUresult (*host_alloc)(void **, size_t, unsigned);
  CUresult (*free_host)(void *);
  /* per capture */
  int calls;
  void *table;            /* device memory holding a pointer (not an argument) */
  void *pinned[4];        /* page-locked host memory, one per capture */
  bool through_host;      /* the table is written from pinned memory inside the work */
  bool other_shape;       /* later captures launch with other dimensions */
} hand;

extern const unsigned char crec_test_kernels_fatbin[];

static void open_hand(hand *h) {
  memset(h, 0, sizeof *h);
  open_driver(&h->d);
  void *lib = h->d.lib;
  *(void **)&h->module_load = dlsym(lib, "cuModuleLoadData");
  *(void **)&h->module_unload = dlsym(lib, "cuModuleUnload");
  *(void **)&h->get_function = dlsym(lib, "cuModuleGetFunction");
  *(void **)&h->launch = dlsym(lib, "cuLaunchKernel");
  *(void **)&h->push = dlsym(lib, "cuCtxPushCurrent_v2");
  *(void **)&h->pop = dlsym(lib, "cuCtxPopCurrent_v2");
  *(void **)&h->htod_async = dlsym(lib, "cuMemcpyHtoDAsync_v2");
  *(void **)&h->host_alloc = dlsym(lib, "cuMemHostAlloc");
  *(void **)&h->free_host = dlsym(lib, "cuMemFreeHost");
  cr_assert(h->module_load && h->module_unload && h->get_function && h->launch && h->push && h->pop &&
                h->htod_async && h->host_alloc && h->free_host,
            "libcuda.so.1 lacks a call this test uses");
  cr_assert_eq(h->d.ctx_retain(&h->ctx, 0), CUDA_SUCCESS);
  cr_assert_eq(h->push(h->ctx), CUDA_SUCCESS);
  cr_assert_eq(h->module_load(&h->mod, crec_test_kernels_fatbin), CUDA_SUCCESS);
  cr_assert_eq(h->get_function(&h->split, h->mod, "t_split_axpb"), CUDA_SUCCESS);
  cr_assert_eq(h->get_function(&h->padded, h->mod, "t_padded_add"), CUDA_SUCCESS);
  cr_assert_eq(h->get_function(&h->indirect, h->mod, "t_indirect"), CUDA_SUCCESS);
  cr_assert_eq(h->get_function(&h->scale, h->mod, "t_scale"), CUDA_SUCCESS);
  for (int k = 0; k < 4; k++) cr_assert_eq(h->host_alloc(&h->pinned[k], 64, 0), CUDA_SUCCESS);
  CUcontext popped;
  h->pop(&popped);
  h->table = gt_alloc(64);
}

static void close_hand(hand *h) {
  cr_assert_eq(h->push(h->ctx), CUDA_SUCCESS);
  h->module_unload(h->mod);
  for (int k = 0; k < 4; k++) h->free_host(h->pinned[k]);
  CUcontext popped;
  h->pop(&popped);
  h->d.ctx_release(0);
  crec_device_free(h->table);
  dlclose(h->d.lib);
}

/* Mirrors t_split/t_padded of the test kernels. */
typedef struct split_params {
  uint32_t k, dst_lo, dst_hi, src_lo, src_hi;
  int n;
} split_params;
typedef struct padded_params {
  unsigned char flag;
  void *dst;
  unsigned short h;
  const void *src;
  int n;
} padded_params;

/* Arguments x, y, z, w: z = x * 3 + 1 (pointers at 4-byte offsets); w = z + 2 + 5
 * (a struct whose padding differs in each capture); y = w * 3 + 9 (parameters
 * in one `extra` buffer). */
static crec_status library_like(void *user, crec_stream s, void *const *bases) {
  hand *h = user;
  CUresult r = h->push(h->ctx);
  unsigned grid = N / 128, block = 128;
  if (h->other_shape && h->calls > 0) grid = N / 64, block = 64;
  uint64_t x = (uint64_t)(uintptr_t)bases[0], z = (uint64_t)(uintptr_t)bases[2];
  split_params sp = {3, (uint32_t)z, (uint32_t)(z >> 32), (uint32_t)x, (uint32_t)(x >> 32), N};
  void *a1[] = {&sp};
  if (!r) r = h->launch(h->split, grid, 1, 1, block, 1, 1, 0, (CUstream)s, a1, NULL);
  padded_params pp;
  memset(&pp, 0x5a + 37 * h->calls, sizeof pp); /* the host stack's leftovers: other in each capture */
  pp.flag = 2, pp.dst = bases[3], pp.h = 5, pp.src = bases[2], pp.n = N;
  void *a2[] = {&pp};
  if (!r) r = h->launch(h->padded, grid, 1, 1, block, 1, 1, 0, (CUstream)s, a2, NULL);
  struct {
    void *dst;
    const void *src;
    uint32_t c;
    int n;
  } ep = {bases[1], bases[3], 9, N};
  size_t ep_size = sizeof ep;
  void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &ep, CU_LAUNCH_PARAM_BUFFER_SIZE, &ep_size, CU_LAUNCH_PARAM_END};
  if (!r) r = h->launch(h->scale, grid, 1, 1, block, 1, 1, 0, (CUstream)s, NULL, extra);
  CUcontext popped;
  h->pop(&popped);
  h->calls++;
  return r ? CREC_ERR_CUDA : CREC_OK;
}

/* Arguments x, y: x = *table, then x = x * 5 + y, the table in device memory
 * (written before the captures, or inside the work from page-locked memory
 * holding this capture's x). */
static crec_status indirect(void *user, crec_stream s, void *const *bases) {
  hand *h = user;
  CUresult r = h->push(h->ctx);
  if (!r && h->through_host) {
    memcpy(h->pinned[h->calls], &bases[0], sizeof(void *));
    r = h->htod_async((CUdeviceptr)(uintptr_t)h->table, h->pinned[h->calls], sizeof(void *), (CUstream)s);
  }
  void *table = h->table;
  const void *y = bases[1];
  uint32_t k = 5;
  int n = N;
  void *a[] = {&table, &y, &k, &n};
  if (!r) r = h->launch(h->indirect, N / 128, 1, 1, 128, 1, 1, 0, (CUstream)s, a, NULL);
  CUcontext popped;
  h->pop(&popped);
  h->calls++;
  return r ? CREC_ERR_CUDA : CREC_OK;
}

/* Captures `fn` three times, on `bases` (k = 0: the arguments' own) and
 * imports the first with the others as evidence, as crec.torch does. */
static void import3(crec_capture_fn fn, void *user, const crec_graph_argument *ga, size_t n, void *const *second,
                    void *const *third, const crec_access *access, crec_exec **ex) {
  void *first[4];
  for (size_t a = 0; a < n; a++) first[a] = ga[a].base;
  void *const *bases[3] = {first, second, third};
  crec_graph g[3];
  for (int k = 0; k < 3; k++) {
    EXPECT_OK(crec_capture_begin(stream));
    EXPECT_OK(fn(user, stream, bases[k]));
    EXPECT_OK(crec_capture_end(stream, &g[k]));
  }
  crec_graph_import in = CREC_GRAPH_IMPORT_INIT;
  in.graph = g[0];
  in.arguments = ga;
  in.num_arguments = n;
  in.second = g[1];
  in.second_bases = second;
  in.third = g[2];
  in.third_bases = third;
  in.access = access;
  EXPECT_OK(crec_import_graph(&in, NULL, ex));
  for (int k = 0; k < 3; k++) crec_graph_destroy(g[k]);
}

/* `count` buffers of B bytes each in one allocation of 3 x 2 MiB x count, at
 * `slot` 2 MiB slots into it, displaced as crec.torch displaces its copies. */
static void *displaced(void *arena, int slot) { return (char *)arena + (size_t)slot * (2u << 20); }

static crec_graph_argument arg4(int a, void *base) {
  static const char *const names[4] = {"x", "y", "z", "w"};
  return (crec_graph_argument){names[a], base, B};
}

/* The library-like work over rotated buffers: every argument is rebound (no
 * copies), the padding is replayed as captured, and each replay gives what the
 * kernels compute. */
static void library_like_rotates(bool other_shape) {
  hand h;
  open_hand(&h);
  h.other_shape = other_shape;
  void *arena = gt_alloc((size_t)16 * (2u << 20));
  void *first[4], *second[4], *third[4];
  crec_graph_argument ga[4];
  for (int a = 0; a < 4; a++) {
    first[a] = displaced(arena, a);
    second[a] = displaced(arena, 4 + 2 * a);  /* x, y, z, w moved by 4, 5, 6, 7 slots */
    third[a] = displaced(arena, 15 - a);      /* and by 15, 13, 11, 9 */
    ga[a] = arg4(a, first[a]);
  }
  crec_exec *ex = NULL;
  import3(library_like, &h, ga, 4, second, third, NULL, &ex);
  crec_exec_stats st = CREC_EXEC_STATS_INIT;
  EXPECT_OK(crec_exec_get_stats(ex, &st));
  char *text = NULL;
  EXPECT_OK(crec_exec_dump_import_string(ex, 0, &text, NULL));
  if (!other_shape) {
    cr_expect_eq(st.copied_arguments, 0, "%s", text);
    cr_expect(strstr(text, "+4 -> z+0") && strstr(text, "+12 -> x+0"), "pointers at 4-byte offsets: %s", text);
    cr_expect(strstr(text, "parameters in one 'extra' buffer"), "%s", text);
    cr_expect(strstr(text, "replayed as captured: 17 bytes"), "the struct's padding: %s", text);
  } else {
    /* the captures are not the same work: every argument is copied */
    cr_expect_eq(st.copied_arguments, 4, "%s", text);
    cr_expect(strstr(text, "is launched with other dimensions in capture 2"), "%s", text);
  }
  crec_free(text);
  void *sets[3][4];
  uint32_t hx[N], hy[N], hz[N], hw[N];
  for (int k = 0; k < 3; k++)
    for (int a = 0; a < 4; a++) {
      sets[k][a] = gt_alloc(B);
      gt_fill(sets[k][a], B, (uint32_t)(10 * k + a));
    }
  crec_binding bd[4];
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = bd;
  bs.num_buffers = 4;
  for (int it = 0, reps = gt_reps(30); it < reps; it++) {
    int k = it % 3;
    for (int a = 0; a < 4; a++) bd[a] = (crec_binding){sets[k][a], B};
    gt_fill(sets[k][0], B, (uint32_t)it + 100);
    gt_replay(ex, &bs, stream);
    gt_download(hx, sets[k][0], B);
    gt_download(hy, sets[k][1], B);
    gt_download(hz, sets[k][2], B);
    gt_download(hw, sets[k][3], B);
    for (int i = 0; i < N; i++) {
      uint32_t z = hx[i] * 3u + 1u, w = z + 7u, y = w * 3u + 9u;
      cr_assert(hz[i] == z && hw[i] == w && hy[i] == y, "replay %d, [%d]: z %u w %u y %u, want %u %u %u", it, i, hz[i],
                hw[i], hy[i], z, w, y);
    }
  }
  crec_exec_destroy(ex);
  for (int k = 0; k < 3; k++)
    for (int a = 0; a < 4; a++) crec_device_free(sets[k][a]);
  crec_device_free(arena);
  close_hand(&h);
}

Test(capture, pointers_at_4_byte_offsets_padding_and_extra_buffers_are_rebound) { library_like_rotates(false); }

Test(capture, captures_that_are_not_the_same_work_copy_every_argument) { library_like_rotates(true); }

/* x reaches the kernel through a pointer kept in device memory: it goes through
 * a copy (in, and back: the kernel writes it), y stays rebound, and replays on
 * rotated buffers are right. */
static void indirect_rotates(bool through_host) {
  hand h;
  open_hand(&h);
  h.through_host = through_host;
  void *arena = gt_alloc((size_t)8 * (2u << 20));
  void *first[2] = {displaced(arena, 0), displaced(arena, 1)};
  void *second[2] = {displaced(arena, 3), displaced(arena, 5)};
  void *third[2] = {displaced(arena, 7), displaced(arena, 6)};
  if (!through_host) gt_upload(h.table, &first[0], sizeof(void *)); /* the table points at the first x, always */
  crec_graph_argument ga[2] = {{"x", first[0], B}, {"y", first[1], B}};
  crec_exec *ex = NULL;
  import3(indirect, &h, ga, 2, second, third, NULL, &ex);
  crec_import_route rx = CREC_IMPORT_ROUTE_INIT, ry = CREC_IMPORT_ROUTE_INIT;
  EXPECT_OK(crec_exec_import_route(ex, 0, &rx));
  EXPECT_OK(crec_exec_import_route(ex, 1, &ry));
  cr_expect(rx.copied && rx.copied_back, "x: copied %d, back %d", rx.copied, rx.copied_back);
  cr_expect(strstr(rx.why, through_host ? "holds its address: the work reads it through a table"
                                         : "no node's parameters or copies point into it"),
            "x: %s", rx.why);
  cr_expect(!ry.copied && ry.relocations == 1, "y: copied %d, %zu words", ry.copied, ry.relocations);
  void *xs[3], *ys[3];
  uint32_t hx[N], hy[N], was[N];
  for (int k = 0; k < 3; k++) {
    xs[k] = gt_alloc(B);
    ys[k] = gt_alloc(B);
    gt_fill(xs[k], B, (uint32_t)k + 1);
    gt_fill(ys[k], B, (uint32_t)k + 50);
  }
  crec_binding bd[2];
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = bd;
  bs.num_buffers = 2;
  for (int it = 0, reps = gt_reps(30); it < reps; it++) {
    int k = it % 3;
    gt_download(was, xs[k], B);
    bd[0] = (crec_binding){xs[k], B};
    bd[1] = (crec_binding){ys[k], B};
    gt_replay(ex, &bs, stream);
    gt_download(hx, xs[k], B);
    gt_download(hy, ys[k], B);
    for (int i = 0; i < N; i++)
      cr_assert_eq(hx[i], was[i] * 5u + hy[i], "replay %d, x[%d]: %u, want %u", it, i, hx[i], was[i] * 5u + hy[i]);
  }
  /* read-only, x would not be copied back: the binding keeps its bytes */
  crec_exec_destroy(ex);
  crec_access access[2] = {CREC_ACCESS_READ, CREC_ACCESS_READ};
  h.calls = 0;
  import3(indirect, &h, ga, 2, second, third, access, &ex);
  EXPECT_OK(crec_exec_import_route(ex, 0, &rx));
  cr_expect(rx.copied && !rx.copied_back, "x, read-only: copied %d, back %d", rx.copied, rx.copied_back);
  gt_download(was, xs[0], B);
  bd[0] = (crec_binding){xs[0], B};
  bd[1] = (crec_binding){ys[0], B};
  gt_replay(ex, &bs, stream);
  gt_download(hx, xs[0], B);
  cr_expect_eq(memcmp(hx, was, B), 0, "a read-only copied argument is not written back");
  gt_download(hx, first[0], B);
  gt_download(hy, ys[0], B);
  for (int i = 0; i < N; i++) cr_assert_eq(hx[i], was[i] * 5u + hy[i], "the capture's own x[%d]", i);
  crec_exec_destroy(ex);
  for (int k = 0; k < 3; k++) {
    crec_device_free(xs[k]);
    crec_device_free(ys[k]);
  }
  crec_device_free(arena);
  close_hand(&h);
}

/* Arguments x, y, z: y = x * 3 + 9, then z = y * 3 + 9, the second launched
 * with programmatic stream serialization (PDL), which a capture turns into a
 * programmatic edge on sm_90 and later. */
static crec_status pdl_pair(void *user, crec_stream s, void *const *bases) {
  hand *h = user;
  CUresult (*launch_ex)(const CUlaunchConfig *, CUfunction, void **, void **);
  *(void **)&launch_ex = dlsym(h->d.lib, "cuLaunchKernelEx");
  if (!launch_ex) return CREC_ERR_UNSUPPORTED;
  CUresult r = h->push(h->ctx);
  const void *x = bases[0], *y = bases[1];
  void *yd = bases[1], *z = bases[2];
  uint32_t c = 9;
  int n = N;
  void *a1[] = {&yd, &x, &c, &n}, *a2[] = {&z, &y, &c, &n};
  if (!r) r = h->launch(h->scale, N / 128, 1, 1, 128, 1, 1, 0, (CUstream)s, a1, NULL);
  CUlaunchAttribute attr;
  memset(&attr, 0, sizeof attr);
  attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  attr.value.programmaticStreamSerializationAllowed = 1;
  CUlaunchConfig cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.gridDimX = N / 128, cfg.gridDimY = cfg.gridDimZ = 1;
  cfg.blockDimX = 128, cfg.blockDimY = cfg.blockDimZ = 1;
  cfg.hStream = (CUstream)s;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  if (!r) r = launch_ex(&cfg, h->scale, a2, NULL);
  CUcontext popped;
  h->pop(&popped);
  h->calls++;
  return r ? CREC_ERR_CUDA : CREC_OK;
}

/* Work captured with a programmatic edge keeps it: the import counts it, and
 * the exec's graph (a clone of the capture) holds it through rebinding. The
 * kernels do not wait for their predecessor (t_scale has no griddepcontrol.wait),
 * so only the edges are asserted, not the values. */
Test(capture, a_programmatic_edge_is_counted_and_kept) {
  int major = 0, minor = 0;
  char name[64];
  EXPECT_OK(crec_device_describe(0, name, sizeof name, &major, &minor));
  hand h;
  open_hand(&h);
  void *arena = gt_alloc((size_t)8 * (2u << 20));
  void *first[3] = {displaced(arena, 0), displaced(arena, 1), displaced(arena, 2)};
  void *second[3] = {displaced(arena, 3), displaced(arena, 5), displaced(arena, 4)};
  void *third[3] = {displaced(arena, 7), displaced(arena, 6), displaced(arena, 5)};
  crec_graph_argument ga[3] = {{"x", first[0], B}, {"y", first[1], B}, {"z", first[2], B}};
  crec_exec *ex = NULL;
  import3(pdl_pair, &h, ga, 3, second, third, NULL, &ex);
  size_t edges = 0, pdl = 0;
  EXPECT_OK(crec_exec_import_edges(ex, &edges, &pdl));
  cr_expect_eq(edges, 1, "%zu edges between the 2 kernels", edges);
  if (major >= 9)
    cr_expect_eq(pdl, 1, "%s (sm_%d%d): %zu programmatic edges", name, major, minor, pdl);
  else
    cr_log_info("%s (sm_%d%d) has no PDL: %zu programmatic edges", name, major, minor, pdl);
  char *json = NULL;
  EXPECT_OK(crec_exec_dump_import_string(ex, 1, &json, NULL));
  char want[64];
  snprintf(want, sizeof want, "\"programmatic_edges\":%zu", pdl);
  cr_expect(strstr(json, want) != NULL, "%s", json);
  crec_free(json);
  void *bufs[3];
  crec_binding bd[3];
  for (int a = 0; a < 3; a++) bufs[a] = gt_alloc(B), bd[a] = (crec_binding){bufs[a], B};
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = bd;
  bs.num_buffers = 3;
  gt_replay(ex, &bs, stream); /* rebound: every argument moved */
  crec_exec_stats st = CREC_EXEC_STATS_INIT;
  EXPECT_OK(crec_exec_get_stats(ex, &st));
  cr_expect_eq(st.replays, 1);
  crec_exec_destroy(ex);
  for (int a = 0; a < 3; a++) crec_device_free(bufs[a]);
  crec_device_free(arena);
  close_hand(&h);
}

Test(capture, a_pointer_kept_in_device_memory_goes_through_a_copy) { indirect_rotates(false); }

Test(capture, a_pointer_table_copied_from_pinned_memory_goes_through_a_copy) { indirect_rotates(true); }

/* fp16 <-> fp32 for values exactly representable in both (small multiples of 1/8). */
static uint16_t to_half(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  uint32_t sign = (u >> 16) & 0x8000, exp = (u >> 23) & 0xff, man = u & 0x7fffff;
  if (!exp) return (uint16_t)sign;
  return (uint16_t)(sign | ((exp - 127 + 15) << 10) | (man >> 13));
}
static float from_half(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  if (!exp && !man) {
    float z;
    memcpy(&z, &sign, 4);
    return z;
  }
  uint32_t u = sign | ((exp - 15 + 127) << 23) | (man << 13);
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* D = A * B in fp16 with fp32 accumulation (cublasGemmEx): on Hopper cuBLAS runs
 * it on cuBLASLt's nvjet kernels, which take their parameters as one `extra`
 * buffer, as every fp16 and bf16 GEMM of PyTorch does. */
static crec_status hgemm(void *user, crec_stream s, void *const *bases) {
  cublas *c = user;
  const float one = 1, zero = 0;
  enum { R_16F = 2, COMPUTE_32F = 68, GEMM_DEFAULT = -1 };
  if (c->set_stream(c->handle, s) != 0) return CREC_ERR_CUDA;
  if (c->set_workspace(c->handle, c->workspace, c->workspace_bytes) != 0) return CREC_ERR_CUDA;
  return c->gemm_ex(c->handle, 0, 0, GM, GN, GK, &one, bases[0], R_16F, GM, bases[1], R_16F, GK, &zero, bases[2], R_16F,
                    GM, COMPUTE_32F, GEMM_DEFAULT)
             ? CREC_ERR_CUDA
             : CREC_OK;
}

/* Three captures on displaced buffers, as crec.torch takes them: every argument
 * rebound, none copied, and each replay on rotated buffers right. */
Test(capture, a_cublas_fp16_gemm_replays_on_rotated_buffers_with_no_copy) {
  cublas cb;
  char why[256];
  if (!open_cublas(&cb, why, sizeof why)) cr_skip_test("%s", why);
  const uint64_t sz[3] = {GM * GK * 2, GK * GN * 2, GM * GN * 2};
  void *d[3][3];
  uint16_t *h[3][2], *got = malloc(sz[2]);
  for (int k = 0; k < 3; k++) {
    for (int a = 0; a < 3; a++) d[k][a] = gt_alloc(sz[a]);
    for (int a = 0; a < 2; a++) {
      h[k][a] = malloc(sz[a]);
      for (uint64_t i = 0; i < sz[a] / 2; i++) h[k][a][i] = to_half((float)((int)((i * 7 + (uint64_t)k * 3 + a) % 9) - 4) / 8);
      gt_upload(d[k][a], h[k][a], sz[a]);
    }
  }
  cb.workspace_bytes = 32 << 20;
  cb.workspace = gt_alloc(cb.workspace_bytes);
  void *arena = gt_alloc((size_t)12 * (2u << 20));
  void *first[3], *second[3], *third[3];
  static const char *const names[3] = {"a", "b", "d"};
  crec_graph_argument ga[3];
  for (int a = 0; a < 3; a++) {
    first[a] = displaced(arena, a);
    second[a] = displaced(arena, 3 + 2 * a);
    third[a] = displaced(arena, 11 - a);
    ga[a] = (crec_graph_argument){names[a], first[a], sz[a]};
  }
  EXPECT_OK(hgemm(&cb, stream, first)); /* cuBLAS sets itself up outside the capture */
  EXPECT_OK(crec_stream_synchronize(stream));
  crec_exec *ex = NULL;
  import3(hgemm, &cb, ga, 3, second, third, NULL, &ex);
  crec_exec_stats st = CREC_EXEC_STATS_INIT;
  EXPECT_OK(crec_exec_get_stats(ex, &st));
  char *text = NULL;
  EXPECT_OK(crec_exec_dump_import_string(ex, 0, &text, NULL));
  cr_expect_eq(st.copied_arguments, 0, "%s", text);
  crec_free(text);
  crec_binding bd[3];
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = bd;
  bs.num_buffers = 3;
  for (int it = 0, n = gt_reps(30); it < n; it++) {
    int k = it % 3;
    gt_fill(d[k][2], sz[2], (uint32_t)it);
    for (int a = 0; a < 3; a++) bd[a] = (crec_binding){d[k][a], sz[a]};
    gt_replay(ex, &bs, stream);
    gt_download(got, d[k][2], sz[2]);
    for (int j = 0; j < GN; j++)
      for (int i = 0; i < GM; i++) {
        double acc = 0;
        for (int l = 0; l < GK; l++) acc += (double)from_half(h[k][0][l * GM + i]) * from_half(h[k][1][j * GK + l]);
        double e = fabs(acc - from_half(got[j * GM + i]));
        cr_assert(e <= 1e-2 * (1 + fabs(acc)), "replay %d (set %d): D[%d,%d] = %g, want %g", it, k, i, j,
                  from_half(got[j * GM + i]), acc);
      }
  }
  crec_exec_destroy(ex);
  cb.destroy(cb.handle);
  dlclose(cb.lib);
  crec_device_free(cb.workspace);
  crec_device_free(arena);
  for (int k = 0; k < 3; k++) {
    for (int a = 0; a < 3; a++) crec_device_free(d[k][a]);
    free(h[k][0]), free(h[k][1]);
  }
  free(got);
}
