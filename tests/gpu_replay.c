/* GPU suite for record and replay: replay against eager byte for byte over
 * random programs with rotated buffers, exact update counters, bad bindings,
 * fault injection during record, host memory, fatbin images, scalars and
 * host functions, dynamic sizes, threads. Skips without a CUDA device. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "gpu_util.h"

static crec_stream stream;

static void setup(void) {
  REQUIRE_DEVICE();
  EXPECT_OK(crec_stream_create(0, &stream));
}
static void teardown(void) { crec_stream_destroy(stream); }

TestSuite(replay, .init = setup, .fini = teardown);

static crec_arg rw(crec_buffer b, uint64_t off, uint64_t size, crec_access a) {
  return crec_arg_buffer(crec_range_of(b, off, size), a);
}

/* Three sets of a program's arguments, one for replays and a twin for eager, filled
 * alike (set k, argument a from seed k * n + a), that a test rotates through. */
enum { ROT_MAX = 4 };
typedef struct rotation {
  int n;
  uint64_t size[ROT_MAX];
  const char *name[ROT_MAX];
  void *g[3][ROT_MAX], *e[3][ROT_MAX];
  crec_binding gb[ROT_MAX], eb[ROT_MAX];
  crec_bindings bg, be; /* bound to set 0 until rotation_step() */
} rotation;

static void rotation_init(rotation *r, int n, const uint64_t *size, const char *const *name) {
  memset(r, 0, sizeof *r);
  r->n = n;
  for (int a = 0; a < n; a++) r->size[a] = size[a], r->name[a] = name[a];
  for (int k = 0; k < 3; k++)
    for (int a = 0; a < n; a++) {
      r->g[k][a] = gt_alloc(size[a]);
      r->e[k][a] = gt_alloc(size[a]);
      gt_fill(r->g[k][a], size[a], (uint32_t)(k * n + a));
      gt_fill(r->e[k][a], size[a], (uint32_t)(k * n + a));
    }
  r->bg = (crec_bindings)CREC_BINDINGS_INIT, r->be = (crec_bindings)CREC_BINDINGS_INIT;
  r->bg.buffers = r->gb, r->be.buffers = r->eb;
  r->bg.num_buffers = r->be.num_buffers = (size_t)n;
  for (int a = 0; a < n; a++) r->gb[a] = (crec_binding){r->g[0][a], size[a]}, r->eb[a] = (crec_binding){r->e[0][a], size[a]};
}

/* Replay `it`: `ex` on set it % 3, eager of `p` on its twin, then every argument
 * compared, named with `what` in front. */
static void rotation_step(rotation *r, crec_exec *ex, const crec_program *p, int it, const char *what) {
  int k = it % 3;
  for (int a = 0; a < r->n; a++)
    r->gb[a] = (crec_binding){r->g[k][a], r->size[a]}, r->eb[a] = (crec_binding){r->e[k][a], r->size[a]};
  gt_replay(ex, &r->bg, stream);
  gt_eager(p, &r->be, stream);
  for (int a = 0; a < r->n; a++) {
    char label[160];
    snprintf(label, sizeof label, "%s%s", what, r->name[a]);
    gt_expect_same(r->g[k][a], r->e[k][a], r->size[a], label);
  }
}

static void rotation_free(rotation *r) {
  for (int k = 0; k < 3; k++)
    for (int a = 0; a < r->n; a++) crec_device_free(r->g[k][a]), crec_device_free(r->e[k][a]);
}

/* ---- a small chain, rotated ---- */

Test(replay, chain_matches_eager_with_rotated_buffers) {
  gt t;
  gt_init(&t, 0);
  enum { N = 1000, B = N * 4 };
  crec_buffer x, y, z, tmp;
  EXPECT_OK(crec_program_add_argument(t.p, "x", B, NULL, &x));
  EXPECT_OK(crec_program_add_argument(t.p, "y", B, NULL, &y));
  EXPECT_OK(crec_program_add_argument(t.p, "z", B, NULL, &z));
  EXPECT_OK(crec_program_add_temporary(t.p, "tmp", B, &tmp));
  crec_region body = crec_program_body(t.p);
  crec_arg a1[] = {rw(tmp, 0, B, CREC_ACCESS_WRITE), rw(x, 0, B, CREC_ACCESS_READ), crec_arg_i32(7), crec_arg_i32(N)};
  gt_launch(&t, body, t.scale, N, a1, 4);
  crec_arg a2[] = {rw(z, 0, B, CREC_ACCESS_WRITE), rw(tmp, 0, B, CREC_ACCESS_READ), rw(y, 0, B, CREC_ACCESS_READ), crec_arg_i32(N)};
  gt_launch(&t, body, t.mix, N, a2, 4);
  crec_arg a3[] = {rw(y, 0, B, CREC_ACCESS_READ_WRITE), crec_arg_i32(N)};
  gt_launch(&t, body, t.inc, N, a3, 2);

  rotation r;
  const uint64_t sizes[3] = {B, B, B};
  const char *const names[3] = {"x", "y", "z"};
  rotation_init(&r, 3, sizes, names);
  crec_exec *ex;
  EXPECT_OK(crec_record(t.p, &r.bg, NULL, &ex));
  const int reps = gt_reps(300);
  for (int it = 0; it < reps; it++) rotation_step(&r, ex, t.p, it, "");
  crec_exec_stats st = CREC_EXEC_STATS_INIT;
  EXPECT_OK(crec_exec_get_stats(ex, &st));
  cr_expect_eq(st.replays, (uint64_t)reps);
  cr_expect_eq(st.nodes, 3);
  crec_exec_destroy(ex);
  rotation_free(&r);
  crec_program_destroy(t.p);
}

/* ---- early start (programmatic dependent launch) ---- */

/* A chain of 16 launches of t_scale_early (griddepcontrol.wait before its first read on
 * sm_90 and later) over 1 MiB, through two temporaries, then a t_inc without the flag,
 * then a while loop whose body is 3 more: recorded with CREC_LAUNCH_EARLY_START, replayed
 * with arguments rotating among 3 sets, each replay matches eager. On sm_90 and later
 * the edges from launch to early launch are programmatic: 15 in the chain and 2 in
 * the loop body (the first launch of a region has no launch before it there). */
Test(replay, early_start_launches_match_eager_and_their_edges_are_programmatic) {
  int major = 0, minor = 0;
  char name[64];
  EXPECT_OK(crec_device_describe(0, name, sizeof name, &major, &minor));
  gt t;
  gt_init(&t, 1); /* the fatbin: its sm_90 code has the wait (its compute_75 PTX does not) */
  enum { N = 1 << 18, B = N * 4, CHAIN = 16 };
  crec_buffer x, y, state, tmp[2];
  EXPECT_OK(crec_program_add_argument(t.p, "x", B, NULL, &x));
  EXPECT_OK(crec_program_add_argument(t.p, "y", B, NULL, &y));
  EXPECT_OK(crec_program_add_argument(t.p, "state", 64, NULL, &state));
  EXPECT_OK(crec_program_add_temporary(t.p, "a", B, &tmp[0]));
  EXPECT_OK(crec_program_add_temporary(t.p, "b", B, &tmp[1]));
  crec_region body = crec_program_body(t.p);
  crec_launch l = CREC_LAUNCH_INIT;
  l.kernel = t.scale_early;
  l.grid[0] = crec_dim_of(N / 128);
  l.block[0] = crec_dim_of(128);
  l.flags = CREC_LAUNCH_EARLY_START;
  l.num_args = 4;
  crec_command c;
  for (int i = 0; i < CHAIN; i++) {
    crec_buffer src = i == 0 ? x : tmp[(i + 1) % 2], dst = i == CHAIN - 1 ? y : tmp[i % 2];
    crec_arg a[] = {rw(dst, 0, B, CREC_ACCESS_WRITE), rw(src, 0, B, CREC_ACCESS_READ), crec_arg_i32(i + 1),
                    crec_arg_i32(N)};
    l.args = a;
    EXPECT_OK(crec_program_add_launch(t.p, body, NULL, &l, &c));
  }
  crec_arg inc[] = {rw(y, 0, B, CREC_ACCESS_READ_WRITE), crec_arg_i32(N)};
  gt_launch(&t, body, t.inc, N, inc, 2);
  crec_region loop = gt_countdown_loop(&t, body, state, 4);
  for (int i = 0; i < 3; i++) {
    crec_buffer src = i == 0 ? y : tmp[i - 1], dst = i == 2 ? y : tmp[i];
    crec_arg a[] = {rw(dst, 0, B, CREC_ACCESS_WRITE), rw(src, 0, B, CREC_ACCESS_READ), crec_arg_i32(100 + i),
                    crec_arg_i32(N)};
    l.args = a;
    EXPECT_OK(crec_program_add_launch(t.p, loop, NULL, &l, &c));
  }
  char *text = NULL;
  EXPECT_OK(crec_dump(t.p, NULL, CREC_DUMP_TEXT, &text, NULL));
  cr_expect(strstr(text, ", early start>>>") != NULL, "%s", text);
  crec_free(text);

  rotation r;
  const uint64_t sizes[3] = {B, B, 64};
  const char *const names[3] = {"x", "y", "state"};
  rotation_init(&r, 3, sizes, names);
  crec_exec *ex;
  EXPECT_OK(crec_record(t.p, &r.bg, NULL, &ex));
  crec_exec_stats st = CREC_EXEC_STATS_INIT;
  EXPECT_OK(crec_exec_get_stats(ex, &st));
  if (major >= 9)
    cr_expect_eq(st.programmatic_edges, CHAIN - 1 + 2, "%s (sm_%d%d): %llu programmatic edges", name, major, minor,
                 (unsigned long long)st.programmatic_edges);
  else
    cr_expect_eq(st.programmatic_edges, 0, "%s (sm_%d%d) has no programmatic dependent launch", name, major, minor);
  const int reps = gt_reps(30);
  for (int it = 0; it < reps; it++) rotation_step(&r, ex, t.p, it, "");
  crec_exec_destroy(ex);
  rotation_free(&r);
  crec_program_destroy(t.p);
}

/* Serial chains of 2, 10, 100 and 1,000 t_scale_early launches over 128 words, each
 * reading what the one before wrote (x and y in turn), recorded without and with
 * CREC_LAUNCH_EARLY_START, each replayed 1,000 times (20 under compute-sanitizer,
 * CREC_TEST_SANITIZER) with x and y rotating among 3 sets, against eager every time.
 * With the flag, on sm_90 and later, every edge is programmatic (n - 1). */
static void early_chain_matches_eager(int n, uint32_t flags, int reps) {
  gt t;
  gt_init(&t, 1);
  enum { W = 128, B = W * 4 };
  crec_buffer b[2];
  EXPECT_OK(crec_program_add_argument(t.p, "x", B, NULL, &b[0]));
  EXPECT_OK(crec_program_add_argument(t.p, "y", B, NULL, &b[1]));
  crec_launch l = CREC_LAUNCH_INIT;
  l.kernel = t.scale_early;
  l.block[0] = crec_dim_of(W);
  l.flags = flags;
  l.num_args = 4;
  for (int i = 0; i < n; i++) {
    crec_arg a[] = {rw(b[(i + 1) % 2], 0, B, CREC_ACCESS_WRITE), rw(b[i % 2], 0, B, CREC_ACCESS_READ),
                    crec_arg_i32(i), crec_arg_i32(W)};
    l.args = a;
    crec_command c;
    EXPECT_OK(crec_program_add_launch(t.p, crec_program_body(t.p), NULL, &l, &c));
  }
  rotation r;
  const uint64_t sizes[2] = {B, B};
  const char *const names[2] = {"x", "y"};
  rotation_init(&r, 2, sizes, names);
  crec_exec *ex;
  EXPECT_OK(crec_record(t.p, &r.bg, NULL, &ex));
  int major = 0, minor = 0;
  char name[64];
  EXPECT_OK(crec_device_describe(0, name, sizeof name, &major, &minor));
  crec_exec_stats st = CREC_EXEC_STATS_INIT;
  EXPECT_OK(crec_exec_get_stats(ex, &st));
  uint64_t want = flags && major >= 9 ? (uint64_t)n - 1 : 0;
  cr_expect_eq(st.programmatic_edges, want, "chain of %d, flags %u, %s (sm_%d%d): %llu programmatic edges", n, flags,
               name, major, minor, (unsigned long long)st.programmatic_edges);
  for (int it = 0; it < reps; it++) {
    char what[64];
    snprintf(what, sizeof what, "chain of %d (flags %u), replay %d: ", n, flags, it);
    rotation_step(&r, ex, t.p, it, what);
  }
  crec_exec_destroy(ex);
  rotation_free(&r);
  crec_program_destroy(t.p);
}

Test(replay, early_start_chains_of_2_to_1000_match_eager_over_1000_replays, .timeout = 600) {
  const char *san = getenv("CREC_TEST_SANITIZER");
  int reps = gt_reps(san && san[0] == '1' ? 20 : 1000);
  static const int sizes[] = {2, 10, 100, 1000};
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
    early_chain_matches_eager(sizes[i], 0, reps);
    early_chain_matches_eager(sizes[i], CREC_LAUNCH_EARLY_START, reps);
  }
}

/* ---- random programs ---- */

typedef struct rng {
  uint64_t s;
} rng;
static uint32_t rnext(rng *r) {
  r->s = r->s * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(r->s >> 33);
}
static uint32_t rbelow(rng *r, uint32_t n) { return n ? rnext(r) % n : 0; }

#define MAX_BUF 8
typedef struct rbuf {
  crec_buffer b;
  uint32_t words; /* size in 4-byte words */
  crec_buffer_kind kind;
} rbuf;

/* A random range of `n` words in buffer `b`, disjoint from `avoid` when it is the same buffer. */
static bool pick_range(rng *r, const rbuf *b, uint32_t n, uint32_t *off, const crec_range *avoid) {
  for (int tries = 0; tries < 8; tries++) {
    uint32_t o = rbelow(r, b->words - n + 1);
    if (avoid && avoid->buffer.id == b->b.id) {
      uint64_t lo = (uint64_t)o * 4, hi = lo + (uint64_t)n * 4;
      if (lo < avoid->offset + avoid->size && avoid->offset < hi) continue;
    }
    *off = o;
    return true;
  }
  return false;
}

/* Builds a random program; returns the number of argument buffers. */
static void random_program(gt *t, rng *r, rbuf *bufs, size_t *nbufs) {
  gt_init(t, (int)rbelow(r, 2));
  size_t n = 0;
  char name[32];
  uint32_t nargs = 2 + rbelow(r, 4), ntemps = rbelow(r, 3);
  for (uint32_t i = 0; i < nargs; i++, n++) {
    bufs[n].words = 64 + rbelow(r, 2048);
    bufs[n].kind = CREC_BUFFER_ARGUMENT;
    snprintf(name, sizeof name, "a%u", i);
    EXPECT_OK(crec_program_add_argument(t->p, name, bufs[n].words * 4, NULL, &bufs[n].b));
  }
  crec_region body = crec_program_body(t->p);
  for (uint32_t i = 0; i < ntemps; i++, n++) {
    bufs[n].words = 64 + rbelow(r, 2048);
    bufs[n].kind = CREC_BUFFER_TEMPORARY;
    snprintf(name, sizeof name, "t%u", i);
    EXPECT_OK(crec_program_add_temporary(t->p, name, bufs[n].words * 4, &bufs[n].b));
    /* temporaries are written before anything reads them */
    crec_command c;
    EXPECT_OK(crec_program_add_memset(t->p, body, NULL, crec_range_whole(bufs[n].b), rnext(r), 4, &c));
  }
  if (rbelow(r, 2)) {
    uint32_t words = 64 + rbelow(r, 512);
    uint32_t *data = malloc(words * 4);
    for (uint32_t i = 0; i < words; i++) data[i] = rnext(r);
    bufs[n].words = words;
    bufs[n].kind = CREC_BUFFER_CONSTANT;
    EXPECT_OK(crec_program_add_constant(t->p, "k", data, words * 4, &bufs[n].b));
    free(data);
    n++;
  }
  *nbufs = n;
  uint32_t ncmds = 4 + rbelow(r, 28);
  for (uint32_t ci = 0; ci < ncmds; ci++) {
    uint32_t kind = rbelow(r, 8);
    /* writable buffers are arguments and temporaries (the first nargs + ntemps) */
    const rbuf *dst = &bufs[rbelow(r, nargs + ntemps)];
    const rbuf *s1 = &bufs[rbelow(r, (uint32_t)n)];
    const rbuf *s2 = &bufs[rbelow(r, (uint32_t)n)];
    uint32_t len = 1 + rbelow(r, dst->words < s1->words ? dst->words : s1->words);
    if (len > s2->words) len = s2->words;
    uint32_t od, o1, o2;
    crec_command c;
    if (!pick_range(r, dst, len, &od, NULL)) continue;
    crec_range dr = crec_range_of(dst->b, (uint64_t)od * 4, (uint64_t)len * 4);
    switch (kind) {
      case 0:
      case 1: {
        if (!pick_range(r, s1, len, &o1, &dr)) break;
        crec_arg a[] = {crec_arg_buffer(dr, CREC_ACCESS_WRITE), rw(s1->b, (uint64_t)o1 * 4, (uint64_t)len * 4, CREC_ACCESS_READ),
                        crec_arg_i32((int32_t)rnext(r)), crec_arg_i32((int32_t)len)};
        gt_launch(t, body, t->scale, len, a, 4);
        break;
      }
      case 2: {
        if (!pick_range(r, s1, len, &o1, &dr) || !pick_range(r, s2, len, &o2, &dr)) break;
        crec_arg a[] = {crec_arg_buffer(dr, CREC_ACCESS_WRITE), rw(s1->b, (uint64_t)o1 * 4, (uint64_t)len * 4, CREC_ACCESS_READ),
                        rw(s2->b, (uint64_t)o2 * 4, (uint64_t)len * 4, CREC_ACCESS_READ), crec_arg_i32((int32_t)len)};
        gt_launch(t, body, t->mix, len, a, 4);
        break;
      }
      case 3: {
        crec_arg a[] = {crec_arg_buffer(dr, CREC_ACCESS_READ_WRITE), crec_arg_i32((int32_t)len)};
        gt_launch(t, body, t->inc, len, a, 2);
        break;
      }
      case 4: {
        crec_arg a[] = {crec_arg_buffer(dr, CREC_ACCESS_READ_WRITE), crec_arg_i32((int32_t)rnext(r)), crec_arg_i32((int32_t)len)};
        gt_launch(t, body, t->affine, len, a, 3);
        break;
      }
      case 5:
        if (!pick_range(r, s1, len, &o1, &dr)) break;
        EXPECT_OK(crec_program_add_memcpy(t->p, body, NULL, dr, crec_range_of(s1->b, (uint64_t)o1 * 4, (uint64_t)len * 4), &c));
        break;
      case 6: {
        static const uint32_t elems[3] = {1, 2, 4};
        uint32_t es = elems[rbelow(r, 3)];
        EXPECT_OK(crec_program_add_memset(t->p, body, NULL, dr, rnext(r) & (es == 4 ? 0xffffffffu : (1u << (8 * es)) - 1u), es, &c));
        break;
      }
      case 7:
        EXPECT_OK(crec_program_add_barrier(t->p, body, NULL, &c));
        break;
    }
  }
}

/* How a random-program run binds each execution: every slot at once
 * (crec_exec_replay), or slot by slot (crec_exec_bind_buffer, then
 * crec_exec_launch) with some slots left alone, rebound to their own value or
 * rebound twice, and now and then a whole replay over what is pending. */
typedef enum { BIND_WHOLE, BIND_AS_YOU_GO } bind_mode;

/* Binds argument `a` of `ex` to copy `k`, asserting the bind succeeds. */
static void bind_copy(crec_exec *ex, crec_binding *gb, size_t a, uint8_t *G, const uint64_t off[][3], int k,
                      const rbuf *bufs) {
  gb[a] = (crec_binding){G + off[a][k], (uint64_t)bufs[a].words * 4};
  EXPECT_OK(crec_exec_bind_buffer(ex, a, gb[a].ptr, gb[a].size));
}

/* `device_updates`: 0 none; 1 the updater takes every change (CREC_UPDATE_DEVICE);
 * 2 the cost model decides, set so that small changes go through the host.
 * `variants` > 1: recorded with that many executable graphs, and every other
 * execution binds every argument to one copy, so that whole sets come back. */
/* Fails when the graph's bytes `hg` differ from eager's `he`, naming the first
 * difference and dumping program `p`. */
static void expect_same_bytes(const uint8_t *hg, const uint8_t *he, uint64_t total, const crec_program *p, int prog,
                              int it, bool whole) {
  if (memcmp(hg, he, total) == 0) return;
  uint64_t i = 0;
  while (hg[i] == he[i]) i++;
  char *dump = NULL;
  crec_dump(p, NULL, CREC_DUMP_TEXT, &dump, NULL);
  cr_log_error("program %d, replay %d (%s): first difference at byte %llu\n%s", prog, it,
               whole ? "crec_exec_replay" : "crec_exec_launch", (unsigned long long)i, dump ? dump : "");
  crec_free(dump);
  cr_assert_fail("random program %d differs from eager at replay %d", prog, it);
}

/* Replays that change fewer than half the device-path nodes set them on the host,
 * larger ones go through the updater: the same node takes either path from one
 * replay to the next (never a whole-graph update, which would take both's place). */
static void split_device_path(crec_exec *ex) {
  crec_exec_stats rs = CREC_EXEC_STATS_INIT;
  EXPECT_OK(crec_exec_get_stats(ex, &rs));
  crec_update_model m = CREC_UPDATE_MODEL_INIT;
  EXPECT_OK(crec_exec_get_update_model(ex, &m));
  m.per_node_us = 1, m.device_node_us = 0, m.host_graph_node_us = 0, m.whole_graph_node_us = 1e6;
  m.device_launch_us = (double)rs.device_nodes / 2 + 0.25;
  EXPECT_OK(crec_exec_set_update_model(ex, &m));
}

static void random_programs(bind_mode mode, int device_updates, uint32_t variants) {
  const char *env = getenv("CREC_TEST_RANDOM_PROGRAMS");
  int programs = env ? atoi(env) : 300;
  env = getenv("CREC_TEST_RANDOM_REPLAYS");
  int replays = env ? atoi(env) : 1000;
  if (mode == BIND_AS_YOU_GO) programs = (programs + 2) / 3; /* the whole-bindings run covers the programs */
  uint64_t launches = 0, device_node_updates = 0, host_updates = 0, variant_hits = 0, variant_switches = 0;
  if (device_updates || variants > 1) programs = (programs + 2) / 3;
  for (int prog = 0; prog < programs; prog++) {
    rng r = {(uint64_t)prog * 7919u + 1};
    gt t;
    rbuf bufs[MAX_BUF];
    size_t nbufs;
    random_program(&t, &r, bufs, &nbufs);
    size_t nargs = crec_program_argument_count(t.p);
    /* three copies of each argument for the graph and three mirrors for eager,
     * all in one allocation per side so one download compares everything */
    uint64_t off[MAX_BUF][3], total = 0;
    for (size_t a = 0; a < nargs; a++)
      for (int k = 0; k < 3; k++) {
        off[a][k] = total;
        total += ((uint64_t)bufs[a].words * 4 + 255) / 256 * 256;
      }
    uint8_t *G = gt_alloc(total), *E = gt_alloc(total);
    gt_fill(G, total, (uint32_t)prog);
    gt_fill(E, total, (uint32_t)prog);
    uint8_t *hg = malloc(total), *he = malloc(total);
    crec_binding gb[MAX_BUF], eb[MAX_BUF];
    crec_bindings bg = CREC_BINDINGS_INIT, be = CREC_BINDINGS_INIT;
    bg.buffers = gb, be.buffers = eb;
    bg.num_buffers = be.num_buffers = nargs;
    int now[MAX_BUF] = {0}; /* the copy each argument of the graph is bound to */
    for (size_t a = 0; a < nargs; a++) gb[a] = (crec_binding){G + off[a][0], (uint64_t)bufs[a].words * 4};
    crec_exec *ex;
    crec_record_options o = CREC_RECORD_OPTIONS_INIT;
    o.device_updates = device_updates != 0;
    if (device_updates == 1) o.update_strategy = CREC_UPDATE_DEVICE;
    o.variants = variants;
    EXPECT_OK(crec_record(t.p, &bg, &o, &ex));
    if (device_updates == 2) split_device_path(ex);
    for (int it = 0; it < replays; it++) {
      bool whole = mode == BIND_WHOLE || it % 7 == 6;
      int together = variants > 1 && it % 2 ? (int)rbelow(&r, 3) : -1; /* every argument to this copy */
      for (size_t a = 0; a < nargs; a++) {
        int k = together >= 0 ? together : (int)rbelow(&r, 3); /* each argument rotates on its own */
        if (mode == BIND_AS_YOU_GO) {
          switch (rbelow(&r, 4)) {
            case 0: /* left alone (or, before a whole replay, bound and then dropped) */
              if (whole) bind_copy(ex, gb, a, G, off, k, bufs);
              k = now[a];
              break;
            case 1:
              bind_copy(ex, gb, a, G, off, k, bufs);
              break;
            case 2: /* its own value again */
              k = now[a];
              bind_copy(ex, gb, a, G, off, k, bufs);
              break;
            default: /* bound twice: the second counts */
              bind_copy(ex, gb, a, G, off, (int)rbelow(&r, 3), bufs);
              bind_copy(ex, gb, a, G, off, k, bufs);
              break;
          }
        }
        now[a] = k;
        gb[a] = (crec_binding){G + off[a][k], (uint64_t)bufs[a].words * 4};
        eb[a] = (crec_binding){E + off[a][k], (uint64_t)bufs[a].words * 4};
      }
      if (whole) EXPECT_OK(crec_exec_replay(ex, &bg, stream));
      else {
        EXPECT_OK(crec_exec_launch(ex, stream));
        launches++;
      }
      EXPECT_OK(crec_run_eager(t.p, &be, stream));
      if (crec_stream_synchronize(stream) != CREC_OK)
        cr_assert_fail("program %d, replay %d (%s): %s", prog, it, whole ? "crec_exec_replay" : "crec_exec_launch",
                       crec_last_error());
      gt_download(hg, G, total);
      gt_download(he, E, total);
      expect_same_bytes(hg, he, total, t.p, prog, it, whole);
    }
    crec_exec_stats st = CREC_EXEC_STATS_INIT;
    EXPECT_OK(crec_exec_get_stats(ex, &st));
    cr_expect_eq(st.replays, (uint64_t)replays, "program %d: %llu executions counted", prog,
                 (unsigned long long)st.replays);
    if (device_updates) device_node_updates += st.device_node_updates;
    if (device_updates) host_updates += st.device_path_host_updates;
    variant_hits += st.variant_hits, variant_switches += st.variant_switches;
    crec_exec_destroy(ex);
    crec_device_free(G);
    crec_device_free(E);
    free(hg);
    free(he);
    crec_program_destroy(t.p);
  }
  if (mode == BIND_AS_YOU_GO) cr_expect_gt(launches, 0, "no execution went through crec_exec_launch");
  if (device_updates && gt_device_updates_available())
    cr_expect_gt(device_node_updates, 0, "no node was updated on the device");
  if (device_updates == 1) cr_expect_eq(host_updates, 0, "%llu device-path nodes were set on the host",
                                        (unsigned long long)host_updates);
  if (device_updates == 2 && gt_device_updates_available())
    cr_expect_gt(host_updates, 0, "no device-path node was set on the host");
  if (variants > 1) {
    cr_expect_gt(variant_switches, 0, "no launch ran another executable graph");
    cr_expect_gt(variant_hits, 0, "no launch found its bindings held by another executable graph");
  } else {
    cr_expect_eq(variant_switches, 0, "%llu switches of executable graphs with one", (unsigned long long)variant_switches);
  }
}

Test(replay, random_programs_match_eager, .timeout = 1800) { random_programs(BIND_WHOLE, 0, 1); }

Test(replay, random_programs_bound_as_you_go_match_eager, .timeout = 1800) { random_programs(BIND_AS_YOU_GO, 0, 1); }

Test(replay, random_programs_with_device_updates_match_eager, .timeout = 1800) { random_programs(BIND_AS_YOU_GO, 1, 1); }

Test(replay, random_programs_with_three_variants_match_eager, .timeout = 1800) { random_programs(BIND_AS_YOU_GO, 0, 3); }

Test(replay, random_programs_whose_updates_switch_between_host_and_device_match_eager, .timeout = 1800) {
  random_programs(BIND_AS_YOU_GO, 2, 1);
}

/* ---- exact update counters ---- */

Test(replay, updates_exactly_the_nodes_of_changed_bindings) {
  gt t;
  gt_init(&t, 0);
  enum { N = 256, B = N * 4 };
  crec_buffer a, b, c;
  EXPECT_OK(crec_program_add_argument(t.p, "a", B, NULL, &a));
  EXPECT_OK(crec_program_add_argument(t.p, "b", B, NULL, &b));
  EXPECT_OK(crec_program_add_argument(t.p, "c", B, NULL, &c));
  crec_region body = crec_program_body(t.p);
  crec_command cmd;
  /* a: 3 nodes (two kernels, one memset); b: 2 nodes (a kernel, a memcpy); c: the memcpy too */
  crec_arg k1[] = {rw(a, 0, B, CREC_ACCESS_READ_WRITE), crec_arg_i32(N)};
  gt_launch(&t, body, t.inc, N, k1, 2);
  crec_arg k2[] = {rw(a, 0, B, CREC_ACCESS_READ_WRITE), crec_arg_i32(3), crec_arg_i32(N)};
  gt_launch(&t, body, t.affine, N, k2, 3);
  EXPECT_OK(crec_program_add_memset(t.p, body, NULL, crec_range_of(a, 0, 64), 0, 4, &cmd));
  crec_arg k3[] = {rw(b, 0, B, CREC_ACCESS_READ_WRITE), crec_arg_i32(N)};
  gt_launch(&t, body, t.inc, N, k3, 2);
  EXPECT_OK(crec_program_add_memcpy(t.p, body, NULL, crec_range_whole(c), crec_range_whole(b), &cmd));

  void *mem[2][3];
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < 3; i++) mem[k][i] = gt_alloc(B);
  crec_binding bd[3];
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = bd;
  bs.num_buffers = 3;
  struct {
    int ka, kb, kc;
    uint64_t expect;
  } steps[] = {{0, 0, 0, 0}, {1, 0, 0, 3}, {1, 0, 0, 0}, {1, 1, 0, 2}, {1, 1, 1, 1}, {0, 0, 0, 5}, {0, 1, 0, 2}};
  /* the program's first record finds which nodes use which binding; later
   * records share that (per schedule), here after the first exec is gone */
  for (int round = 0; round < 3; round++) {
    crec_record_options o = CREC_RECORD_OPTIONS_INIT; /* updates node by node */
    if (round == 2) o.schedule = CREC_SCHEDULE_SEQUENTIAL;
    for (int i = 0; i < 3; i++) bd[i] = (crec_binding){mem[0][i], B};
    crec_exec *ex;
    EXPECT_OK(crec_record(t.p, &bs, &o, &ex));
    crec_exec_stats st = CREC_EXEC_STATS_INIT;
    uint64_t total = 0, skipped = 0;
    for (size_t i = 0; i < sizeof steps / sizeof *steps; i++) {
      bd[0].ptr = mem[steps[i].ka][0];
      bd[1].ptr = mem[steps[i].kb][1];
      bd[2].ptr = mem[steps[i].kc][2];
      gt_replay(ex, &bs, stream);
      EXPECT_OK(crec_exec_get_stats(ex, &st));
      cr_expect_eq(st.last_nodes_updated, steps[i].expect, "record %d, step %zu: %llu nodes updated, expected %llu",
                   round, i, (unsigned long long)st.last_nodes_updated, (unsigned long long)steps[i].expect);
      total += steps[i].expect;
      skipped += steps[i].expect == 0;
    }
    cr_expect_eq(st.nodes_updated, total, "record %d", round);
    cr_expect_eq(st.updates_skipped, skipped, "record %d", round);
    cr_expect_eq(st.whole_graph_updates, 0, "record %d", round);
    crec_exec_destroy(ex);
  }
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < 3; i++) crec_device_free(mem[k][i]);
  crec_program_destroy(t.p);
}

Test(replay, whole_graph_update_gives_the_same_results) {
  gt t;
  gt_init(&t, 0);
  enum { N = 512, B = N * 4, CHAIN = 20 };
  crec_buffer x;
  EXPECT_OK(crec_program_add_argument(t.p, "x", B, NULL, &x));
  crec_region body = crec_program_body(t.p);
  for (int i = 0; i < CHAIN; i++) {
    crec_arg a[] = {rw(x, 0, B, CREC_ACCESS_READ_WRITE), crec_arg_i32(i), crec_arg_i32(N)};
    gt_launch(&t, body, t.affine, N, a, 3);
  }
  void *g[3], *e[3];
  for (int k = 0; k < 3; k++) {
    g[k] = gt_alloc(B);
    e[k] = gt_alloc(B);
    gt_fill(g[k], B, (uint32_t)k);
    gt_fill(e[k], B, (uint32_t)k);
  }
  crec_binding gb = {g[0], B}, eb;
  crec_bindings bg = CREC_BINDINGS_INIT, be = CREC_BINDINGS_INIT;
  bg.buffers = &gb, be.buffers = &eb;
  bg.num_buffers = be.num_buffers = 1;
  crec_record_options o = CREC_RECORD_OPTIONS_INIT;
  o.whole_update_percent = 1;
  crec_exec *ex;
  EXPECT_OK(crec_record(t.p, &bg, &o, &ex));
  const int reps = gt_reps(60);
  for (int it = 0; it < reps; it++) {
    gb = (crec_binding){g[it % 3], B};
    eb = (crec_binding){e[it % 3], B};
    gt_replay(ex, &bg, stream);
    gt_eager(t.p, &be, stream);
    gt_expect_same(g[it % 3], e[it % 3], B, "x");
  }
  crec_exec_stats st = CREC_EXEC_STATS_INIT;
  EXPECT_OK(crec_exec_get_stats(ex, &st));
  cr_expect_geq(st.whole_graph_updates, (uint64_t)reps - 1, "%llu whole-graph updates",
                (unsigned long long)st.whole_graph_updates);
  cr_expect_eq(st.nodes_updated, (uint64_t)(reps - 1) * CHAIN);
  crec_exec_destroy(ex);
  for (int k = 0; k < 3; k++) {
    crec_device_free(g[k]);
    crec_device_free(e[k]);
  }
  crec_program_destroy(t.p);
}

/* ---- bad bindings ---- */

/* x = 1 * weights over 256 floats, weights 256-byte aligned, recorded with
 * x and the first half of a weights buffer twice its size. */
enum { WEIGHTED_N = 256, WEIGHTED_BYTES = WEIGHTED_N * 4 };
typedef struct weighted {
  gt t;
  uint8_t *mx, *mw, *ex_x; /* x; weights (2x, filled); x of the eager run */
  crec_binding bd[2];
  crec_bindings bs;
  crec_exec *ex;
} weighted;

static void weighted_record(weighted *w) {
  enum { N = WEIGHTED_N, B = WEIGHTED_BYTES };
  gt_init(&w->t, 0);
  crec_buffer x, wb;
  crec_argument_options ao = CREC_ARGUMENT_OPTIONS_INIT;
  ao.alignment = 256;
  EXPECT_OK(crec_program_add_argument(w->t.p, "x", B, NULL, &x));
  EXPECT_OK(crec_program_add_argument(w->t.p, "weights", B, &ao, &wb));
  crec_arg a[] = {rw(x, 0, B, CREC_ACCESS_WRITE), rw(wb, 0, B, CREC_ACCESS_READ), crec_arg_i32(1), crec_arg_i32(N)};
  gt_launch(&w->t, crec_program_body(w->t.p), w->t.scale, N, a, 4);
  w->mx = gt_alloc(B), w->mw = gt_alloc(2 * B), w->ex_x = gt_alloc(B);
  gt_fill(w->mw, 2 * B, 3);
  w->bd[0] = (crec_binding){w->mx, B};
  w->bd[1] = (crec_binding){w->mw, B};
  w->bs = (crec_bindings)CREC_BINDINGS_INIT;
  w->bs.buffers = w->bd;
  w->bs.num_buffers = 2;
  EXPECT_OK(crec_record(w->t.p, &w->bs, NULL, &w->ex));
}

/* The last execution had weights at mw + 256: x must be what eager makes of them. Frees everything. */
static void weighted_expect_eager_and_close(weighted *w) {
  enum { B = WEIGHTED_BYTES };
  crec_binding eb[2] = {{w->ex_x, B}, {w->mw + 256, B}};
  crec_bindings es = CREC_BINDINGS_INIT;
  es.buffers = eb;
  es.num_buffers = 2;
  gt_eager(w->t.p, &es, stream);
  gt_expect_same(w->mx, w->ex_x, B, "x");
  crec_exec_destroy(w->ex);
  crec_device_free(w->mx);
  crec_device_free(w->mw);
  crec_device_free(w->ex_x);
  crec_program_destroy(w->t.p);
}

Test(replay, bad_bindings_are_refused_and_the_exec_stays_usable) {
  weighted wt;
  weighted_record(&wt);
  enum { B = WEIGHTED_BYTES };
  crec_exec *ex = wt.ex;
  crec_binding *bd = wt.bd;
  crec_bindings bs = wt.bs; /* its buffers are wt.bd */
  uint8_t *mw = wt.mw;

  bs.num_buffers = 1;
  EXPECT_STATUS(crec_exec_replay(ex, &bs, stream), CREC_ERR_BINDING);
  EXPECT_ERROR_MENTIONS("1 buffer bindings given");
  bs.num_buffers = 2;
  bd[1].ptr = NULL;
  EXPECT_STATUS(crec_exec_replay(ex, &bs, stream), CREC_ERR_BINDING);
  EXPECT_ERROR_MENTIONS("binding 1 ('weights'): NULL pointer");
  bd[1] = (crec_binding){mw, B / 2};
  EXPECT_STATUS(crec_exec_replay(ex, &bs, stream), CREC_ERR_BINDING);
  EXPECT_ERROR_MENTIONS("binding 1 ('weights'): 512 bytes given, 1024 needed");
  bd[1] = (crec_binding){mw + 16, B};
  EXPECT_STATUS(crec_exec_replay(ex, &bs, stream), CREC_ERR_MISALIGNED);
  EXPECT_ERROR_MENTIONS("binding 1 ('weights')");
  EXPECT_STATUS(crec_exec_replay(ex, NULL, stream), CREC_ERR_NULL_POINTER);
  crec_value v = {0};
  bs.scalars = &v;
  bs.num_scalars = 1;
  EXPECT_STATUS(crec_exec_replay(ex, &bs, stream), CREC_ERR_BINDING);
  bs.num_scalars = 0;
  crec_exec_stats st = CREC_EXEC_STATS_INIT;
  EXPECT_OK(crec_exec_get_stats(ex, &st));
  cr_expect_eq(st.replays, 0, "a refused replay counted");

  /* a correct replay right after: new weights, result as eager */
  bd[1] = (crec_binding){mw + 256, B};
  gt_replay(ex, &bs, stream);
  weighted_expect_eager_and_close(&wt);
}

/* ---- bind as you go ---- */

static int ceil128(void *user, const crec_value *in, crec_value *out);

/* x = 5x + k over n elements (argument x of `bytes`, bound scalars n then k),
 * on a grid a host function derives from n (ceil128: n < 0 fails with 7). */
static void scaled_by_scalars(gt *t, uint64_t bytes) {
  crec_buffer x;
  crec_scalar n, k, grid;
  EXPECT_OK(crec_program_add_argument(t->p, "x", bytes, NULL, &x));
  EXPECT_OK(crec_program_add_scalar(t->p, "n", CREC_TYPE_I32, &n));
  EXPECT_OK(crec_program_add_scalar(t->p, "k", CREC_TYPE_I32, &k));
  EXPECT_OK(crec_program_add_derived_scalar(t->p, "grid", CREC_TYPE_I32, &grid));
  EXPECT_OK(crec_program_add_host_function(t->p, "ceil128", ceil128, NULL, NULL, &n, 1, &grid, 1));
  crec_launch l = CREC_LAUNCH_INIT;
  crec_arg a[] = {rw(x, 0, bytes, CREC_ACCESS_READ_WRITE), crec_arg_scalar(k), crec_arg_scalar(n)};
  l.kernel = t->affine;
  l.grid[0] = crec_dim_from(grid);
  l.block[0] = crec_dim_of(128);
  l.args = a;
  l.num_args = 3;
  crec_command c;
  EXPECT_OK(crec_program_add_launch(t->p, crec_program_body(t->p), NULL, &l, &c));
}


Test(replay, every_kind_of_kernel_parameter_reaches_the_kernel) {
  /* a buffer at an offset, a 24-byte immediate, a scalar, 2- and 1-byte
   * immediates: what the kernel receives, replay after replay, and eagerly */
  gt t;
  gt_init(&t, 0);
  enum { B = 64, AT = 16 };
  crec_buffer out;
  crec_scalar k;
  EXPECT_OK(crec_program_add_argument(t.p, "out", B, NULL, &out));
  EXPECT_OK(crec_program_add_scalar(t.p, "k", CREC_TYPE_I32, &k));
  const uint32_t six[6] = {1, 2, 3, 0xdeadbeefu, 5, 0x80000000u};
  const uint16_t h = 0xbeef;
  const uint8_t b = 0x5a;
  crec_arg a[] = {crec_arg_buffer(crec_range_of(out, AT, 9 * 4), CREC_ACCESS_WRITE), crec_arg_bytes(six, sizeof six),
                  crec_arg_scalar(k), crec_arg_bytes(&h, sizeof h), crec_arg_bytes(&b, sizeof b)};
  gt_launch1(&t, crec_program_body(t.p), t.params, a, 5);
  void *mem[2] = {gt_alloc(B), gt_alloc(B)};
  crec_binding bd = {mem[0], B};
  crec_value v = {0};
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = &bd;
  bs.num_buffers = 1;
  bs.scalars = &v;
  bs.num_scalars = 1;
  crec_exec *ex = NULL;
  for (int i = 0; i < 5; i++) {
    int eager = i == 4;
    bd.ptr = mem[i % 2];
    v.i32 = i % 2 ? -3 - i : 7 + i;
    gt_fill(bd.ptr, B, (uint32_t)i);
    if (!ex) EXPECT_OK(crec_record(t.p, &bs, NULL, &ex));
    if (eager) gt_eager(t.p, &bs, stream);
    else gt_replay(ex, &bs, stream);
    uint32_t got[B / 4];
    gt_download(got, bd.ptr, B);
    const uint32_t want[9] = {1, 2, 3, 0xdeadbeefu, 5, 0x80000000u, (uint32_t)v.i32, h, b};
    for (int w = 0; w < 9; w++)
      cr_assert_eq(got[AT / 4 + w], want[w], "%s %d: word %d of the parameters is 0x%x, not 0x%x",
                   eager ? "eager run" : "replay", i, w, got[AT / 4 + w], want[w]);
  }
  crec_exec_destroy(ex);
  crec_device_free(mem[0]);
  crec_device_free(mem[1]);
  crec_program_destroy(t.p);
}

/* The program of updates_exactly_the_nodes_of_changed_bindings: a is used by 3
 * nodes, b by 2, c by 1 (the memcpy b -> c). */
static void three_users(gt *t, crec_buffer *a, crec_buffer *b, crec_buffer *c, uint32_t n) {
  uint64_t bytes = (uint64_t)n * 4;
  EXPECT_OK(crec_program_add_argument(t->p, "a", bytes, NULL, a));
  EXPECT_OK(crec_program_add_argument(t->p, "b", bytes, NULL, b));
  EXPECT_OK(crec_program_add_argument(t->p, "c", bytes, NULL, c));
  crec_region body = crec_program_body(t->p);
  crec_command cmd;
  crec_arg k1[] = {rw(*a, 0, bytes, CREC_ACCESS_READ_WRITE), crec_arg_i32((int32_t)n)};
  gt_launch(t, body, t->inc, n, k1, 2);
  crec_arg k2[] = {rw(*a, 0, bytes, CREC_ACCESS_READ_WRITE), crec_arg_i32(3), crec_arg_i32((int32_t)n)};
  gt_launch(t, body, t->affine, n, k2, 3);
  EXPECT_OK(crec_program_add_memset(t->p, body, NULL, crec_range_of(*a, 0, 64), 0, 4, &cmd));
  crec_arg k3[] = {rw(*b, 0, bytes, CREC_ACCESS_READ_WRITE), crec_arg_i32((int32_t)n)};
  gt_launch(t, body, t->inc, n, k3, 2);
  EXPECT_OK(crec_program_add_memcpy(t->p, body, NULL, crec_range_whole(*c), crec_range_whole(*b), &cmd));
}

Test(replay, bind_as_you_go_updates_only_the_nodes_of_changed_slots) {
  gt t;
  gt_init(&t, 0);
  enum { N = 256, B = N * 4 };
  crec_buffer a, b, c;
  three_users(&t, &a, &b, &c, N);
  void *mem[2][3];
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < 3; i++) mem[k][i] = gt_alloc(B);
  crec_binding bd[3] = {{mem[0][0], B}, {mem[0][1], B}, {mem[0][2], B}};
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = bd;
  bs.num_buffers = 3;
  crec_exec *ex;
  EXPECT_OK(crec_record(t.p, &bs, NULL, &ex));
  /* each step binds some slots (-1: not bound; the value is mem[k][slot]) and launches */
  struct {
    int bind[3];
    int rebind_b; /* b is bound twice: first to mem[rebind_b], then to bind[1] */
    uint64_t expect;
  } steps[] = {
      {{-1, -1, -1}, -1, 0}, /* nothing bound: the last bindings again */
      {{1, -1, -1}, -1, 3},  /* a: its three nodes */
      {{1, -1, -1}, -1, 0},  /* a bound to the value it has */
      {{-1, 0, -1}, 1, 0},   /* b to another value, then back before the launch */
      {{-1, 1, -1}, 0, 2},   /* b bound twice: the second value counts */
      {{-1, -1, 1}, -1, 1},  /* c: the memcpy */
      {{0, 0, 0}, -1, 5},    /* all three (the memcpy uses b and c: one node) */
  };
  crec_exec_stats st = CREC_EXEC_STATS_INIT;
  uint64_t total = 0;
  for (size_t i = 0; i < sizeof steps / sizeof *steps; i++) {
    if (steps[i].rebind_b >= 0) EXPECT_OK(crec_exec_bind_buffer(ex, 1, mem[steps[i].rebind_b][1], B));
    for (int slot = 0; slot < 3; slot++)
      if (steps[i].bind[slot] >= 0) EXPECT_OK(crec_exec_bind_buffer(ex, (size_t)slot, mem[steps[i].bind[slot]][slot], B));
    EXPECT_OK(crec_exec_launch(ex, stream));
    EXPECT_OK(crec_stream_synchronize(stream));
    EXPECT_OK(crec_exec_get_stats(ex, &st));
    cr_expect_eq(st.last_nodes_updated, steps[i].expect, "step %zu: %llu nodes updated, expected %llu", i,
                 (unsigned long long)st.last_nodes_updated, (unsigned long long)steps[i].expect);
    total += steps[i].expect;
  }
  cr_expect_eq(st.nodes_updated, total);
  cr_expect_eq(st.launches, sizeof steps / sizeof *steps);
  cr_expect_eq(st.replays, sizeof steps / sizeof *steps);
  /* a whole replay drops what is pending: a bound to mem[1] is forgotten */
  EXPECT_OK(crec_exec_bind_buffer(ex, 0, mem[1][0], B));
  bd[0].ptr = mem[0][0], bd[1].ptr = mem[0][1], bd[2].ptr = mem[0][2];
  gt_replay(ex, &bs, stream);
  EXPECT_OK(crec_exec_get_stats(ex, &st));
  cr_expect_eq(st.last_nodes_updated, 0, "the pending binding of a reached the replay");
  EXPECT_OK(crec_exec_launch(ex, stream));
  EXPECT_OK(crec_exec_get_stats(ex, &st));
  cr_expect_eq(st.last_nodes_updated, 0, "the pending binding of a outlived the replay");
  /* and crec_exec_clear_bindings() drops it too */
  EXPECT_OK(crec_exec_bind_buffer(ex, 2, mem[1][2], B));
  EXPECT_OK(crec_exec_clear_bindings(ex));
  EXPECT_OK(crec_exec_launch(ex, stream));
  EXPECT_OK(crec_stream_synchronize(stream));
  EXPECT_OK(crec_exec_get_stats(ex, &st));
  cr_expect_eq(st.last_nodes_updated, 0, "a cleared binding reached the launch");
  crec_exec_destroy(ex);
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < 3; i++) crec_device_free(mem[k][i]);
  crec_program_destroy(t.p);
}

Test(replay, bind_as_you_go_refuses_bad_values_and_the_exec_stays_usable) {
  weighted wt;
  weighted_record(&wt);
  enum { B = WEIGHTED_BYTES };
  crec_exec *ex = wt.ex;
  uint8_t *mw = wt.mw, *mx = wt.mx;

  EXPECT_OK(crec_exec_bind_buffer(ex, 1, mw + 256, B)); /* good, and kept through the refusals below */
  EXPECT_STATUS(crec_exec_bind_buffer(ex, 1, NULL, B), CREC_ERR_BINDING);
  EXPECT_ERROR_MENTIONS("binding 1 ('weights'): NULL pointer");
  EXPECT_STATUS(crec_exec_bind_buffer(ex, 1, mw, B / 2), CREC_ERR_BINDING);
  EXPECT_ERROR_MENTIONS("binding 1 ('weights'): 512 bytes given, 1024 needed");
  EXPECT_STATUS(crec_exec_bind_buffer(ex, 1, mw + 16, B), CREC_ERR_MISALIGNED);
  EXPECT_ERROR_MENTIONS("binding 1 ('weights')");
  EXPECT_STATUS(crec_exec_bind_buffer(ex, 2, mw, B), CREC_ERR_OUT_OF_RANGE);
  EXPECT_ERROR_MENTIONS("argument 2, but the program has 2");
  EXPECT_STATUS(crec_exec_bind_scalar(ex, 0, (crec_value){.i32 = 1}), CREC_ERR_OUT_OF_RANGE);
  EXPECT_ERROR_MENTIONS("bound scalar 0, but the program has 0");
  EXPECT_STATUS(crec_exec_bind_comm(ex, 0, NULL), CREC_ERR_OUT_OF_RANGE);
  EXPECT_STATUS(crec_exec_bind_buffer(NULL, 0, mx, B), CREC_ERR_NULL_POINTER);
  EXPECT_STATUS(crec_exec_launch(NULL, stream), CREC_ERR_NULL_POINTER);
  EXPECT_STATUS(crec_exec_clear_bindings(NULL), CREC_ERR_NULL_POINTER);
  crec_exec_stats st = CREC_EXEC_STATS_INIT;
  EXPECT_OK(crec_exec_get_stats(ex, &st));
  cr_expect_eq(st.replays, 0, "a refused bind launched");

  /* the launch right after: the good binding, the result as eager */
  EXPECT_OK(crec_exec_launch(ex, stream));
  weighted_expect_eager_and_close(&wt);
}

Test(replay, bind_as_you_go_scalars_run_host_functions_and_a_failed_launch_keeps_them_pending) {
  gt t;
  gt_init(&t, 0);
  enum { MAXN = 4096, B = MAXN * 4 };
  scaled_by_scalars(&t, B);
  uint32_t *g = gt_alloc(B), *e = gt_alloc(B);
  gt_fill(g, B, 1);
  gt_fill(e, B, 1);
  crec_value vals[2] = {{.i32 = 100}, {.i32 = 3}};
  crec_binding gb = {g, B}, eb = {e, B};
  crec_bindings bg = CREC_BINDINGS_INIT, be = CREC_BINDINGS_INIT;
  bg.buffers = &gb, be.buffers = &eb;
  bg.num_buffers = be.num_buffers = 1;
  bg.scalars = be.scalars = vals;
  bg.num_scalars = be.num_scalars = 2;
  crec_exec *ex;
  EXPECT_OK(crec_record(t.p, &bg, NULL, &ex));
  /* n (slot 0) feeds the host function and the kernel; k (slot 1) the kernel alone */
  int ns[] = {100, 100, 4096, 1, 129, 129, 3000};
  int ks[] = {3, 4, 4, 4, 9, 9, 1};
  crec_exec_stats st = CREC_EXEC_STATS_INIT;
  for (size_t i = 0; i < sizeof ns / sizeof *ns; i++) {
    EXPECT_OK(crec_exec_get_stats(ex, &st));
    uint64_t calls = st.host_function_calls;
    /* bind only what changed, as a caller that knows would */
    bool n_changed = ns[i] != vals[0].i32, k_changed = ks[i] != vals[1].i32;
    if (n_changed) EXPECT_OK(crec_exec_bind_scalar(ex, 0, (crec_value){.i32 = ns[i]}));
    if (k_changed || i % 2) EXPECT_OK(crec_exec_bind_scalar(ex, 1, (crec_value){.i32 = ks[i]}));
    vals[0].i32 = ns[i], vals[1].i32 = ks[i];
    EXPECT_OK(crec_exec_launch(ex, stream));
    gt_eager(t.p, &be, stream);
    gt_expect_same(g, e, B, "x");
    EXPECT_OK(crec_exec_get_stats(ex, &st));
    cr_expect_eq(st.last_nodes_updated, (uint64_t)(n_changed || k_changed), "step %zu", i);
    cr_expect_eq(st.host_function_calls - calls, (uint64_t)n_changed, "step %zu: host function calls", i);
  }
  /* a failing host function refuses the launch; the slot stays pending until rebound */
  EXPECT_OK(crec_exec_bind_scalar(ex, 0, (crec_value){.i32 = -5}));
  EXPECT_STATUS(crec_exec_launch(ex, stream), CREC_ERR_HOST_FUNCTION);
  EXPECT_ERROR_MENTIONS("host function 'ceil128' returned 7");
  EXPECT_STATUS(crec_exec_launch(ex, stream), CREC_ERR_HOST_FUNCTION);
  /* a scalar dim out of range is refused at launch too */
  EXPECT_OK(crec_exec_bind_scalar(ex, 0, (crec_value){.i32 = 0}));
  EXPECT_STATUS(crec_exec_launch(ex, stream), CREC_ERR_BINDING);
  EXPECT_ERROR_MENTIONS("grid.x from scalar 'grid' is 0");
  EXPECT_OK(crec_exec_bind_scalar(ex, 0, (crec_value){.i32 = 77}));
  EXPECT_OK(crec_exec_launch(ex, stream));
  vals[0].i32 = 77;
  gt_eager(t.p, &be, stream);
  gt_expect_same(g, e, B, "x");
  /* cleared: the launch reruns n = 77 */
  EXPECT_OK(crec_exec_bind_scalar(ex, 0, (crec_value){.i32 = -5}));
  EXPECT_OK(crec_exec_clear_bindings(ex));
  EXPECT_OK(crec_exec_launch(ex, stream));
  gt_eager(t.p, &be, stream);
  gt_expect_same(g, e, B, "x");
  crec_exec_destroy(ex);
  crec_device_free(g);
  crec_device_free(e);
  crec_program_destroy(t.p);
}

/* ---- device-side updates ---- */

/* x += 1; counter = n0; while (counter > 0) { x += 1; counter -= 1 }; x = 5x + 3:
 * the body's two kernels take the device path, the loop's and the copy the host's. */
Test(replay, device_updates_around_a_loop_match_eager_and_count_their_path) {
  gt t;
  gt_init(&t, 0);
  enum { N = 512, B = N * 4 };
  crec_buffer x, n0, cnt, pred;
  EXPECT_OK(crec_program_add_argument(t.p, "x", B, NULL, &x));
  EXPECT_OK(crec_program_add_argument(t.p, "n0", 4, NULL, &n0));
  EXPECT_OK(crec_program_add_temporary(t.p, "counter", 4, &cnt));
  EXPECT_OK(crec_program_add_temporary(t.p, "pred", 4, &pred));
  crec_region body = crec_program_body(t.p), cond, loop_body;
  crec_command cmd;
  crec_arg inc[] = {rw(x, 0, B, CREC_ACCESS_READ_WRITE), crec_arg_i32(N)};
  gt_launch(&t, body, t.inc, N, inc, 2);
  EXPECT_OK(crec_program_add_memcpy(t.p, body, NULL, crec_range_whole(cnt), crec_range_whole(n0), &cmd));
  EXPECT_OK(crec_program_add_while(t.p, body, "loop", crec_range_of(pred, 0, 1), &cmd, &cond, &loop_body));
  crec_arg test[] = {rw(cnt, 0, 4, CREC_ACCESS_READ), rw(pred, 0, 1, CREC_ACCESS_WRITE)};
  gt_launch1(&t, cond, t.test_positive, test, 2);
  gt_launch(&t, loop_body, t.inc, N, inc, 2);
  crec_arg down[] = {rw(cnt, 0, 4, CREC_ACCESS_READ_WRITE), rw(pred, 0, 1, CREC_ACCESS_WRITE)};
  gt_launch1(&t, loop_body, t.countdown, down, 2);
  crec_arg aff[] = {rw(x, 0, B, CREC_ACCESS_READ_WRITE), crec_arg_i32(3), crec_arg_i32(N)};
  gt_launch(&t, body, t.affine, N, aff, 3);

  uint8_t *G = gt_alloc(3 * B), *E = gt_alloc(3 * B);
  int32_t *counts = gt_alloc(3 * 16); /* 16-byte aligned, as arguments are by default */
  int32_t host_counts[12] = {0};
  host_counts[4] = 3, host_counts[8] = 17;
  gt_upload(counts, host_counts, sizeof host_counts);
  gt_fill(G, 3 * B, 5);
  gt_fill(E, 3 * B, 5);
  crec_binding gb[2] = {{G, B}, {counts, 4}}, eb[2] = {{E, B}, {counts, 4}};
  crec_bindings bg = CREC_BINDINGS_INIT, be = CREC_BINDINGS_INIT;
  bg.buffers = gb, be.buffers = eb;
  bg.num_buffers = be.num_buffers = 2;
  crec_record_options o = CREC_RECORD_OPTIONS_INIT;
  o.device_updates = 1;
  o.update_strategy = CREC_UPDATE_DEVICE; /* every change through the updater, however few */
  crec_exec *ex;
  EXPECT_OK(crec_record(t.p, &bg, &o, &ex));
  crec_exec_stats st = CREC_EXEC_STATS_INIT;
  EXPECT_OK(crec_exec_get_stats(ex, &st));
  bool device = gt_device_updates_available();
  cr_expect_eq(st.device_nodes, device ? 2u : 0u, "%llu kernel nodes on the device path",
               (unsigned long long)st.device_nodes);
  rng r = {7};
  uint64_t expect_device = 0, expect_nodes = 0;
  for (int it = 0, n = gt_reps(60); it < n; it++) {
    int kx = (int)rbelow(&r, 3), kn = (int)rbelow(&r, 3);
    bool x_changed = G + (size_t)kx * B != gb[0].ptr, n_changed = counts + 4 * kn != gb[1].ptr;
    gb[0].ptr = G + (size_t)kx * B, eb[0].ptr = E + (size_t)kx * B;
    gb[1].ptr = eb[1].ptr = counts + 4 * kn;
    if (it % 2) {
      EXPECT_OK(crec_exec_replay(ex, &bg, stream));
    } else {
      if (x_changed) EXPECT_OK(crec_exec_bind_buffer(ex, 0, gb[0].ptr, gb[0].size));
      EXPECT_OK(crec_exec_bind_buffer(ex, 1, gb[1].ptr, gb[1].size));
      EXPECT_OK(crec_exec_launch(ex, stream));
    }
    gt_eager(t.p, &be, stream);
    EXPECT_OK(crec_stream_synchronize(stream));
    /* x: 2 body kernels (device) + the loop body's inc (host); n0: the memcpy (host) */
    expect_device += x_changed && device ? 2 : 0;
    expect_nodes += (x_changed ? 3 : 0) + (n_changed ? 1 : 0);
  }
  gt_expect_same(G, E, 3 * B, "x, all three copies");
  EXPECT_OK(crec_exec_get_stats(ex, &st));
  cr_expect_eq(st.device_node_updates, expect_device, "%llu device updates, expected %llu",
               (unsigned long long)st.device_node_updates, (unsigned long long)expect_device);
  cr_expect_eq(st.nodes_updated, expect_nodes, "%llu node updates, expected %llu", (unsigned long long)st.nodes_updated,
               (unsigned long long)expect_nodes);
  cr_expect_eq(st.whole_graph_updates, 0);
  crec_exec_destroy(ex);
  crec_device_free(G);
  crec_device_free(E);
  crec_device_free(counts);
  crec_program_destroy(t.p);
}

/* Replays queued back to back (no synchronization between them) each see
 * their own bindings: the updater's tables are not refilled while in use. */
Test(replay, device_updates_of_queued_replays_each_apply_their_own_bindings) {
  gt t;
  gt_init(&t, 0);
  enum { N = 256, B = N * 4, K = 40 };
  crec_buffer x;
  EXPECT_OK(crec_program_add_argument(t.p, "x", B, NULL, &x));
  crec_arg inc[] = {rw(x, 0, B, CREC_ACCESS_READ_WRITE), crec_arg_i32(N)};
  for (int i = 0; i < 4; i++) gt_launch(&t, crec_program_body(t.p), t.inc, N, inc, 2);
  uint8_t *mem = gt_alloc((uint64_t)K * B);
  uint32_t *h = calloc((size_t)K * N, sizeof *h);
  gt_upload(mem, h, (uint64_t)K * B);
  crec_binding b = {mem, B};
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = &b;
  bs.num_buffers = 1;
  crec_record_options o = CREC_RECORD_OPTIONS_INIT;
  o.device_updates = 1;
  o.update_strategy = CREC_UPDATE_DEVICE; /* every change through the updater, however few */
  crec_exec *ex;
  EXPECT_OK(crec_record(t.p, &bs, &o, &ex));
  /* every copy once, then every copy again, with nothing waited for in between */
  for (int round = 0; round < 2; round++)
    for (int k = 0; k < K; k++) {
      if (k % 2) {
        b.ptr = mem + (size_t)k * B;
        EXPECT_OK(crec_exec_replay(ex, &bs, stream));
      } else {
        EXPECT_OK(crec_exec_bind_buffer(ex, 0, mem + (size_t)k * B, B));
        EXPECT_OK(crec_exec_launch(ex, stream));
      }
    }
  EXPECT_OK(crec_stream_synchronize(stream));
  gt_download(h, mem, (uint64_t)K * B);
  for (int k = 0; k < K; k++)
    for (int i = 0; i < N; i++)
      if (h[(size_t)k * N + (size_t)i] != 8u) {
        cr_assert_fail("copy %d, element %d: %u, expected 8 (4 increments in each of 2 rounds)", k, i,
                       h[(size_t)k * N + (size_t)i]);
      }
  crec_exec_stats st = CREC_EXEC_STATS_INIT;
  EXPECT_OK(crec_exec_get_stats(ex, &st));
  if (gt_device_updates_available()) {
    cr_expect_eq(st.device_nodes, 4);
    cr_expect_eq(st.device_node_updates, 4u * (2 * K - 1), "%llu", (unsigned long long)st.device_node_updates);
  }
  free(h);
  crec_exec_destroy(ex);
  crec_device_free(mem);
  crec_program_destroy(t.p);
}

/* The cost model (crec_update_model): a program of K independent kernels, one per
 * argument, rebinding one argument or all of them. */
enum { MODEL_K = 8, MODEL_N = 256, MODEL_B = MODEL_N * 4 };

typedef struct model_fx {
  gt t;
  uint8_t *G, *E;         /* 3 copies of each argument, for the graph and for eager */
  crec_binding gb[MODEL_K], eb[MODEL_K];
  crec_bindings bg, be;
  int now[MODEL_K];       /* the copy each argument is bound to */
} model_fx;

static void model_fx_init(model_fx *f) {
  gt_init(&f->t, 0);
  for (int i = 0; i < MODEL_K; i++) {
    crec_buffer x;
    char name[8];
    snprintf(name, sizeof name, "a%d", i);
    EXPECT_OK(crec_program_add_argument(f->t.p, name, MODEL_B, NULL, &x));
    crec_arg inc[] = {rw(x, 0, MODEL_B, CREC_ACCESS_READ_WRITE), crec_arg_i32(MODEL_N)};
    gt_launch(&f->t, crec_program_body(f->t.p), f->t.inc, MODEL_N, inc, 2);
  }
  f->G = gt_alloc(3 * MODEL_K * MODEL_B), f->E = gt_alloc(3 * MODEL_K * MODEL_B);
  gt_fill(f->G, 3 * MODEL_K * MODEL_B, 9);
  gt_fill(f->E, 3 * MODEL_K * MODEL_B, 9);
  f->bg = (crec_bindings)CREC_BINDINGS_INIT, f->be = (crec_bindings)CREC_BINDINGS_INIT;
  f->bg.buffers = f->gb, f->be.buffers = f->eb;
  f->bg.num_buffers = f->be.num_buffers = MODEL_K;
  for (int i = 0; i < MODEL_K; i++) {
    f->now[i] = 0;
    f->gb[i] = (crec_binding){f->G + (size_t)i * MODEL_B, MODEL_B};
    f->eb[i] = (crec_binding){f->E + (size_t)i * MODEL_B, MODEL_B};
  }
}

/* Moves the first `count` arguments to their next copy, replays (binding them as
 * you go), runs eager on the mirrors, and compares every copy. */
static void model_fx_step(model_fx *f, crec_exec *ex, int count, const char *what) {
  for (int i = 0; i < count; i++) {
    f->now[i] = (f->now[i] + 1) % 3;
    size_t at = ((size_t)f->now[i] * MODEL_K + (size_t)i) * MODEL_B;
    f->gb[i].ptr = f->G + at, f->eb[i].ptr = f->E + at;
    EXPECT_OK(crec_exec_bind_buffer(ex, (size_t)i, f->gb[i].ptr, MODEL_B));
  }
  EXPECT_OK(crec_exec_launch(ex, stream));
  gt_eager(f->t.p, &f->be, stream);
  gt_expect_same(f->G, f->E, 3 * MODEL_K * MODEL_B, what);
}

static void model_fx_free(model_fx *f) {
  crec_device_free(f->G);
  crec_device_free(f->E);
  crec_program_destroy(f->t.p);
}

/* Records the fixture with device updates and a model in which the updater pays
 * from 4 changed nodes (3 + 0 * k < 1 * k; no cost per node of the graph), into
 * `*m` too. */
static crec_exec *model_exec(model_fx *f, crec_update_model *m) {
  crec_record_options o = CREC_RECORD_OPTIONS_INIT;
  o.device_updates = 1;
  crec_exec *ex;
  EXPECT_OK(crec_record(f->t.p, &f->bg, &o, &ex));
  *m = (crec_update_model)CREC_UPDATE_MODEL_INIT;
  EXPECT_OK(crec_exec_get_update_model(ex, m));
  cr_expect(m->per_node_us > 0 && m->device_launch_us > 0, "record sets a model: per node %g, updater %g",
            m->per_node_us, m->device_launch_us);
  m->per_node_us = 1, m->device_launch_us = 3, m->device_node_us = 0, m->host_graph_node_us = 0;
  EXPECT_OK(crec_exec_set_update_model(ex, m));
  return ex;
}

/* With host-side changes that cost 1 per node of the graph (8), one changed node
 * stays with the updater while it runs (3 < 1 + 8), and goes to the host once a
 * replay that changed nothing has disabled it (1 + 8 < 3 + 8). */
Test(replay, the_cost_model_keeps_a_running_updater_when_host_changes_cost_more) {
  if (!gt_device_updates_available()) cr_skip_test("the device-side updater has no image for this chip");
  model_fx f;
  model_fx_init(&f);
  crec_update_model m;
  crec_exec *ex = model_exec(&f, &m);
  m.host_graph_node_us = 1;
  EXPECT_OK(crec_exec_set_update_model(ex, &m));
  crec_update_estimate est = CREC_UPDATE_ESTIMATE_INIT;
  EXPECT_OK(crec_exec_estimate_update(ex, 1, 1, &est));
  cr_expect(est.choice == CREC_UPDATE_PER_NODE && est.per_node_us == 9 && est.device_us == 11,
            "updater disabled: %d, per node %g, device %g", (int)est.choice, est.per_node_us, est.device_us);
  model_fx_step(&f, ex, MODEL_K, "every argument");
  EXPECT_OK(crec_exec_estimate_update(ex, 1, 1, &est));
  cr_expect(est.choice == CREC_UPDATE_DEVICE && est.device_us == 3, "updater running: %d, device %g",
            (int)est.choice, est.device_us);
  model_fx_step(&f, ex, 1, "one argument, the updater running");
  crec_exec_stats st = CREC_EXEC_STATS_INIT;
  EXPECT_OK(crec_exec_get_stats(ex, &st));
  cr_expect_eq(st.device_update_launches, 2, "%llu launches ran the updater, expected 2",
               (unsigned long long)st.device_update_launches);
  cr_expect_eq(st.device_path_host_updates, 0);
  model_fx_step(&f, ex, 0, "nothing changed");
  model_fx_step(&f, ex, 1, "one argument, the updater disabled");
  EXPECT_OK(crec_exec_get_stats(ex, &st));
  cr_expect_eq(st.device_update_launches, 2, "%llu launches ran the updater, expected 2",
               (unsigned long long)st.device_update_launches);
  cr_expect_eq(st.device_path_host_updates, 1, "%llu device-path nodes set on the host, expected 1",
               (unsigned long long)st.device_path_host_updates);
  crec_exec_destroy(ex);
  model_fx_free(&f);
}

Test(replay, the_cost_model_sends_few_changes_to_the_host_and_many_to_the_updater) {
  model_fx f;
  model_fx_init(&f);
  crec_update_model m;
  crec_exec *ex = model_exec(&f, &m);
  bool device = gt_device_updates_available();
  crec_update_estimate est = CREC_UPDATE_ESTIMATE_INIT;
  EXPECT_OK(crec_exec_estimate_update(ex, 1, device ? 1 : 0, &est));
  cr_expect_eq(est.choice, CREC_UPDATE_PER_NODE, "one node: %d", (int)est.choice);
  cr_expect(est.per_node_us == 1 && est.device_us == (device ? 3 : -1) && est.whole_graph_us == -1,
            "one node: per node %g, device %g, whole %g", est.per_node_us, est.device_us, est.whole_graph_us);
  EXPECT_OK(crec_exec_estimate_update(ex, MODEL_K, device ? MODEL_K : 0, &est));
  cr_expect_eq(est.choice, device ? CREC_UPDATE_DEVICE : CREC_UPDATE_PER_NODE, "every node: %d", (int)est.choice);
  EXPECT_STATUS(crec_exec_estimate_update(ex, MODEL_K + 1, 0, &est), CREC_ERR_OUT_OF_RANGE);
  m.device_node_us = -1;
  EXPECT_STATUS(crec_exec_set_update_model(ex, &m), CREC_ERR_INVALID_ARGUMENT);
  EXPECT_ERROR_MENTIONS("device_node_us is -1");

  /* every argument, then the first alone, in turns: a node of a0 goes through
   * the updater, then the host, then the updater again */
  uint64_t want_device = 0, want_nodes = 0, want_launches = 0, want_host = 0;
  for (int it = 0, n = gt_reps(12); it < n; it++) {
    int count = it % 2 ? 1 : MODEL_K;
    char what[48];
    snprintf(what, sizeof what, "launch %d (%d changed)", it, count);
    model_fx_step(&f, ex, count, what);
    want_nodes += (uint64_t)count;
    if (device && count == MODEL_K) want_device += MODEL_K, want_launches++;
    if (device && count == 1) want_host++; /* each step synchronizes: no updater run is in flight */
  }
  crec_exec_stats st = CREC_EXEC_STATS_INIT;
  EXPECT_OK(crec_exec_get_stats(ex, &st));
  cr_expect_eq(st.nodes_updated, want_nodes, "%llu nodes updated", (unsigned long long)st.nodes_updated);
  cr_expect_eq(st.device_node_updates, want_device, "%llu on the device, expected %llu",
               (unsigned long long)st.device_node_updates, (unsigned long long)want_device);
  cr_expect_eq(st.device_update_launches, want_launches, "%llu launches ran the updater, expected %llu",
               (unsigned long long)st.device_update_launches, (unsigned long long)want_launches);
  cr_expect_eq(st.device_path_host_updates, want_host, "%llu device-path nodes set on the host, expected %llu",
               (unsigned long long)st.device_path_host_updates, (unsigned long long)want_host);
  crec_exec_destroy(ex);
  model_fx_free(&f);
}

/* The same switching with nothing waited for between launches: a node that an
 * updater run still in flight may write is not set on the host (the driver
 * leaves that undefined), and every launch applies its own bindings. */
Test(replay, queued_replays_that_switch_between_host_and_updater_each_apply_their_own_bindings) {
  model_fx f;
  model_fx_init(&f);
  crec_update_model m;
  crec_exec *ex = model_exec(&f, &m);
  /* each launch increments the copies it binds; the eager mirror replays the same
   * sequence afterwards, launch by launch, and the two must agree at the end */
  enum { LAUNCHES = 60 };
  int plan[LAUNCHES][MODEL_K];
  for (int it = 0; it < LAUNCHES; it++) {
    int count = it % 3 ? 1 : MODEL_K;
    for (int i = 0; i < MODEL_K; i++) {
      if (i < count) f.now[i] = (f.now[i] + 1) % 3;
      plan[it][i] = f.now[i];
      if (i < count) EXPECT_OK(crec_exec_bind_buffer(ex, (size_t)i, f.G + ((size_t)f.now[i] * MODEL_K + (size_t)i) * MODEL_B, MODEL_B));
    }
    EXPECT_OK(crec_exec_launch(ex, stream));
  }
  EXPECT_OK(crec_stream_synchronize(stream));
  for (int it = 0; it < LAUNCHES; it++) {
    for (int i = 0; i < MODEL_K; i++) f.eb[i].ptr = f.E + ((size_t)plan[it][i] * MODEL_K + (size_t)i) * MODEL_B;
    EXPECT_OK(crec_run_eager(f.t.p, &f.be, stream));
  }
  EXPECT_OK(crec_stream_synchronize(stream));
  gt_expect_same(f.G, f.E, 3 * MODEL_K * MODEL_B, "every copy after 60 queued launches");
  crec_exec_stats st = CREC_EXEC_STATS_INIT;
  EXPECT_OK(crec_exec_get_stats(ex, &st));
  cr_expect_eq(st.replays, LAUNCHES);
  if (gt_device_updates_available())
    cr_expect_gt(st.device_update_launches, 0, "no launch ran the updater");
  crec_exec_destroy(ex);
  model_fx_free(&f);
}

Test(replay, the_cost_model_takes_a_whole_graph_update_when_it_is_cheaper) {
  model_fx f;
  model_fx_init(&f);
  crec_exec *ex;
  EXPECT_OK(crec_record(f.t.p, &f.bg, NULL, &ex));
  crec_update_estimate est = CREC_UPDATE_ESTIMATE_INIT;
  /* the model record sets: per node, whatever changed (a whole-graph update never paid on an H200) */
  EXPECT_OK(crec_exec_estimate_update(ex, MODEL_K, 0, &est));
  cr_expect_eq(est.choice, CREC_UPDATE_PER_NODE, "%d: per node %g, whole %g", (int)est.choice, est.per_node_us,
               est.whole_graph_us);
  cr_expect_eq(est.device_us, -1, "no device path without device_updates: %g", est.device_us);
  crec_update_model m = CREC_UPDATE_MODEL_INIT;
  EXPECT_OK(crec_exec_get_update_model(ex, &m));
  /* whole: 0.5 * 8 nodes = 4, against 1 per changed node: whole from 5 changed */
  m.per_node_us = 1, m.whole_graph_node_us = 0.5, m.whole_changed_us = 0;
  EXPECT_OK(crec_exec_set_update_model(ex, &m));
  EXPECT_OK(crec_exec_estimate_update(ex, MODEL_K, 0, &est));
  cr_expect_eq(est.choice, CREC_UPDATE_WHOLE_GRAPH, "%d", (int)est.choice);
  uint64_t wholes = 0;
  for (int it = 0, n = gt_reps(12); it < n; it++) {
    int count = it % 2 ? 1 : MODEL_K;
    char what[48];
    snprintf(what, sizeof what, "launch %d (%d changed)", it, count);
    model_fx_step(&f, ex, count, what);
    wholes += count == MODEL_K;
  }
  crec_exec_stats st = CREC_EXEC_STATS_INIT;
  EXPECT_OK(crec_exec_get_stats(ex, &st));
  cr_expect_eq(st.whole_graph_updates, wholes, "%llu whole-graph updates, expected %llu",
               (unsigned long long)st.whole_graph_updates, (unsigned long long)wholes);
  crec_exec_destroy(ex);
  /* forced per node: never whole, whatever the model says */
  crec_record_options o = CREC_RECORD_OPTIONS_INIT;
  o.update_strategy = CREC_UPDATE_PER_NODE;
  EXPECT_OK(crec_record(f.t.p, &f.bg, &o, &ex));
  EXPECT_OK(crec_exec_set_update_model(ex, &m));
  EXPECT_OK(crec_exec_estimate_update(ex, MODEL_K, 0, &est));
  cr_expect_eq(est.choice, CREC_UPDATE_PER_NODE, "%d", (int)est.choice);
  model_fx_step(&f, ex, MODEL_K, "forced per node");
  EXPECT_OK(crec_exec_get_stats(ex, &st));
  cr_expect_eq(st.whole_graph_updates, 0);
  crec_exec_destroy(ex);
  model_fx_free(&f);
}

/* ---- failures while recording leak nothing ---- */

static void build_mixed(gt *t, crec_buffer *x) {
  enum { N = 256, B = N * 4 };
  crec_buffer tmp;
  EXPECT_OK(crec_program_add_argument(t->p, "x", B, NULL, x));
  EXPECT_OK(crec_program_add_temporary(t->p, "tmp", B, &tmp));
  uint32_t k[4] = {1, 2, 3, 4};
  crec_buffer kb;
  EXPECT_OK(crec_program_add_constant(t->p, "k", k, sizeof k, &kb));
  crec_region body = crec_program_body(t->p);
  crec_command c;
  EXPECT_OK(crec_program_add_memset(t->p, body, NULL, crec_range_whole(tmp), 5, 4, &c));
  crec_arg a[] = {rw(tmp, 0, B, CREC_ACCESS_READ_WRITE), crec_arg_i32(N)};
  gt_launch(t, body, t->inc, N, a, 2);
  EXPECT_OK(crec_program_add_memcpy(t->p, body, NULL, crec_range_of(*x, 0, 16), crec_range_whole(kb), &c));
  EXPECT_OK(crec_program_add_memcpy(t->p, body, NULL, crec_range_of(*x, 16, B - 16), crec_range_of(tmp, 0, B - 16), &c));
}

/* `variants`: recorded with that many executable graphs (their instantiations
 * and the event that orders them fail too). */
static void record_failures_of_cuda_calls(uint32_t variants) {
  crec_record_options o = CREC_RECORD_OPTIONS_INIT;
  o.variants = variants;
  int64_t baseline = crec_debug_live_objects();
  void *mem = gt_alloc(1024);
  crec_binding bd = {mem, 1024};
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = &bd;
  bs.num_buffers = 1;
  int failures = 0;
  for (uint64_t n = 1; n < 400; n++) {
    gt t;
    crec_buffer x;
    gt_init(&t, 0);
    build_mixed(&t, &x);
    crec_exec *ex = NULL;
    crec_debug_fail_after(CREC_FAULT_CUDA, n);
    crec_status s = crec_record(t.p, &bs, &o, &ex);
    crec_debug_fail_after(CREC_FAULT_CUDA, 0);
    if (s == CREC_OK) {
      gt_replay(ex, &bs, stream);
      crec_exec_destroy(ex);
      crec_program_destroy(t.p);
      cr_expect_eq(crec_debug_live_objects(), baseline);
      cr_expect_gt(failures, 5, "only %d CUDA calls could fail", failures);
      crec_device_free(mem);
      return;
    }
    failures++;
    cr_expect_null(ex);
    /* the hook fails a driver call with CUDA_ERROR_OUT_OF_MEMORY */
    cr_expect_eq(s, CREC_ERR_DEVICE_OUT_OF_MEMORY, "call %llu: %s: %s", (unsigned long long)n, crec_status_name(s),
                 crec_last_error());
    crec_program_destroy(t.p);
    cr_expect_eq(crec_debug_live_objects(), baseline, "call %llu: %lld objects live after failing with '%s'",
                 (unsigned long long)n, (long long)crec_debug_live_objects(), crec_last_error());
  }
  cr_assert_fail("record never succeeded");
}

Test(replay, record_failure_on_any_cuda_call_leaks_nothing) {
  record_failures_of_cuda_calls(1);
  record_failures_of_cuda_calls(3);
}

static void record_failures_of_allocations(uint32_t variants) {
  crec_record_options o = CREC_RECORD_OPTIONS_INIT;
  o.variants = variants;
  int64_t baseline = crec_debug_live_objects();
  void *mem = gt_alloc(1024);
  crec_binding bd = {mem, 1024};
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = &bd;
  bs.num_buffers = 1;
  for (uint64_t n = 1; n < 2000; n++) {
    gt t;
    crec_buffer x;
    gt_init(&t, 0);
    build_mixed(&t, &x);
    crec_exec *ex = NULL;
    crec_debug_fail_after(CREC_FAULT_ALLOC, n);
    crec_status s = crec_record(t.p, &bs, &o, &ex);
    crec_debug_fail_after(CREC_FAULT_ALLOC, 0);
    if (s == CREC_OK) crec_exec_destroy(ex);
    else cr_expect_eq(s, CREC_ERR_OUT_OF_MEMORY, "allocation %llu: %s", (unsigned long long)n, crec_last_error());
    crec_program_destroy(t.p);
    cr_expect_eq(crec_debug_live_objects(), baseline, "allocation %llu", (unsigned long long)n);
    if (s == CREC_OK) break;
  }
  crec_device_free(mem);
}

Test(replay, record_failure_on_any_allocation_leaks_nothing) {
  record_failures_of_allocations(1);
  record_failures_of_allocations(3);
}

/* ---- host memory, fatbin, scalars, dynamic sizes, threads ---- */

Test(replay, memcpy_between_pinned_host_and_device_arguments) {
  gt t;
  gt_init(&t, 1);
  enum { B = 4096 };
  crec_argument_options host = CREC_ARGUMENT_OPTIONS_INIT;
  host.memory = CREC_MEMORY_HOST;
  crec_buffer in, dev, out;
  EXPECT_OK(crec_program_add_argument(t.p, "in", B, &host, &in));
  EXPECT_OK(crec_program_add_argument(t.p, "dev", B, NULL, &dev));
  EXPECT_OK(crec_program_add_argument(t.p, "out", B, &host, &out));
  crec_region body = crec_program_body(t.p);
  crec_command c;
  EXPECT_OK(crec_program_add_memcpy(t.p, body, NULL, crec_range_whole(dev), crec_range_whole(in), &c));
  crec_arg a[] = {rw(dev, 0, B, CREC_ACCESS_READ_WRITE), crec_arg_i32(B / 4)};
  gt_launch(&t, body, t.inc, B / 4, a, 2);
  EXPECT_OK(crec_program_add_memcpy(t.p, body, NULL, crec_range_whole(out), crec_range_whole(dev), &c));
  uint32_t *hin[2], *hout[2];
  for (int k = 0; k < 2; k++) {
    EXPECT_OK(crec_host_alloc(0, B, (void **)&hin[k]));
    EXPECT_OK(crec_host_alloc(0, B, (void **)&hout[k]));
  }
  void *d = gt_alloc(B);
  crec_binding bd[3] = {{hin[0], B}, {d, B}, {hout[0], B}};
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = bd;
  bs.num_buffers = 3;
  crec_exec *ex;
  EXPECT_OK(crec_record(t.p, &bs, NULL, &ex));
  for (int it = 0; it < 20; it++) {
    int k = it % 2;
    for (int i = 0; i < B / 4; i++) hin[k][i] = (uint32_t)(i * 7 + it);
    bd[0].ptr = hin[k];
    bd[2].ptr = hout[k];
    gt_replay(ex, &bs, stream);
    for (int i = 0; i < B / 4; i++)
      cr_assert_eq(hout[k][i], (uint32_t)(i * 7 + it + 1), "replay %d, element %d", it, i);
  }
  crec_exec_destroy(ex);
  for (int k = 0; k < 2; k++) {
    crec_host_free(hin[k]);
    crec_host_free(hout[k]);
  }
  crec_device_free(d);
  crec_program_destroy(t.p);
}

/* grid = ceil(n / 128), passed through a host function */
static int ceil128(void *user, const crec_value *in, crec_value *out) {
  (void)user;
  if (in[0].i32 < 0) return 7;
  out[0].i32 = (in[0].i32 + 127) / 128;
  return 0;
}

Test(replay, scalars_and_derived_dims_update_in_place) {
  gt t;
  gt_init(&t, 0);
  enum { MAXN = 4096, B = MAXN * 4 };
  scaled_by_scalars(&t, B);
  uint32_t *g = gt_alloc(B), *e = gt_alloc(B);
  gt_fill(g, B, 1);
  gt_fill(e, B, 1);
  crec_value vals[2] = {{.i32 = 100}, {.i32 = 3}};
  crec_binding gb = {g, B}, eb = {e, B};
  crec_bindings bg = CREC_BINDINGS_INIT, be = CREC_BINDINGS_INIT;
  bg.buffers = &gb, be.buffers = &eb;
  bg.num_buffers = be.num_buffers = 1;
  bg.scalars = be.scalars = vals;
  bg.num_scalars = be.num_scalars = 2;
  crec_exec *ex;
  EXPECT_OK(crec_record(t.p, &bg, NULL, &ex));
  int ns[] = {100, 100, 4096, 1, 129, 129, 3000};
  int ks[] = {3, 4, 4, 4, 9, 9, 1};
  crec_exec_stats st = CREC_EXEC_STATS_INIT;
  for (size_t i = 0; i < sizeof ns / sizeof *ns; i++) {
    vals[0].i32 = ns[i];
    vals[1].i32 = ks[i];
    EXPECT_OK(crec_exec_get_stats(ex, &st));
    uint64_t calls = st.host_function_calls;
    gt_replay(ex, &bg, stream);
    gt_eager(t.p, &be, stream);
    gt_expect_same(g, e, B, "x");
    EXPECT_OK(crec_exec_get_stats(ex, &st));
    bool changed = i > 0 && (ns[i] != ns[i - 1] || ks[i] != ks[i - 1]);
    cr_expect_eq(st.last_nodes_updated, (uint64_t)(i == 0 ? 0 : changed), "step %zu", i);
    bool n_changed = i > 0 && ns[i] != ns[i - 1];
    cr_expect_eq(st.host_function_calls - calls, (uint64_t)n_changed, "step %zu: host function calls", i);
  }
  /* a failing host function refuses the replay and changes nothing */
  vals[0].i32 = -5;
  EXPECT_STATUS(crec_exec_replay(ex, &bg, stream), CREC_ERR_HOST_FUNCTION);
  EXPECT_ERROR_MENTIONS("host function 'ceil128' returned 7");
  /* a scalar dim out of range is refused too */
  vals[0].i32 = 0;
  EXPECT_STATUS(crec_exec_replay(ex, &bg, stream), CREC_ERR_BINDING);
  EXPECT_ERROR_MENTIONS("grid.x from scalar 'grid' is 0");
  vals[0].i32 = 77;
  gt_replay(ex, &bg, stream);
  gt_eager(t.p, &be, stream);
  gt_expect_same(g, e, B, "x");
  crec_exec_destroy(ex);
  crec_device_free(g);
  crec_device_free(e);
  crec_program_destroy(t.p);
}

/* One step of the variants test: x's copy, n and k, bound whole or slot by slot. */
typedef struct vstep {
  int copy, n, k;
  bool slots;          /* crec_exec_bind_*, then crec_exec_launch */
  uint64_t updated;    /* nodes the launch updates */
  uint64_t host_calls; /* host functions it runs */
  bool switched;       /* it runs another executable graph than the launch before */
} vstep;

/* Two executable graphs for two binding sets (a buffer and two scalars, one
 * through a host function): each set comes back to the graph that holds it,
 * updating nothing and running no host function, through crec_exec_replay and
 * bind as you go alike; a set neither holds updates the least recently launched
 * one; a refused launch leaves the exec usable. Every launch matches eager. */
Test(replay, variants_launch_the_graph_that_holds_the_bindings) {
  gt t;
  gt_init(&t, 0);
  enum { MAXN = 4096, B = MAXN * 4 };
  scaled_by_scalars(&t, B);
  uint32_t *g[3], *e[3];
  for (int c = 0; c < 3; c++) {
    g[c] = gt_alloc(B), e[c] = gt_alloc(B);
    gt_fill(g[c], B, (uint32_t)c);
    gt_fill(e[c], B, (uint32_t)c);
  }
  crec_value vals[2] = {{.i32 = 100}, {.i32 = 3}};
  crec_binding gb = {g[0], B}, eb = {e[0], B};
  crec_bindings bg = CREC_BINDINGS_INIT, be = CREC_BINDINGS_INIT;
  bg.buffers = &gb, be.buffers = &eb;
  bg.num_buffers = be.num_buffers = 1;
  bg.scalars = be.scalars = vals;
  bg.num_scalars = be.num_scalars = 2;
  crec_record_options o = CREC_RECORD_OPTIONS_INIT;
  o.variants = 2;
  crec_exec *ex;
  EXPECT_OK(crec_record(t.p, &bg, &o, &ex));
  const vstep steps[] = {
      {0, 100, 3, false, 0, 0, false}, /* as recorded: the first graph */
      {1, 4096, 4, false, 1, 1, true}, /* the second graph, which held the first set */
      {0, 100, 3, false, 0, 0, true},  /* back to the first, which holds this set */
      {1, 4096, 4, true, 0, 0, true},  /* slot by slot: the second holds it */
      {0, 100, 3, true, 0, 0, true},
      {2, 100, 3, false, 1, 1, true},  /* a new buffer: the least recently launched (the second) updates,
                                          and runs the host function for its n */
      {2, 100, 3, true, 0, 0, false},  /* bound to the values it has: nothing */
      {0, 100, 3, true, 0, 0, true},   /* the first still holds copy 0 */
      {0, 129, 3, true, 1, 1, true},   /* n alone changed: the second, its host function */
      {0, 100, 3, false, 0, 0, true},
  };
  crec_exec_stats st = CREC_EXEC_STATS_INIT;
  uint64_t switches = 0;
  for (size_t i = 0; i < sizeof steps / sizeof *steps; i++) {
    const vstep *sp = &steps[i];
    EXPECT_OK(crec_exec_get_stats(ex, &st));
    uint64_t calls = st.host_function_calls;
    vals[0].i32 = sp->n, vals[1].i32 = sp->k;
    gb.ptr = g[sp->copy], eb.ptr = e[sp->copy];
    if (sp->slots) {
      EXPECT_OK(crec_exec_bind_buffer(ex, 0, gb.ptr, B));
      EXPECT_OK(crec_exec_bind_scalar(ex, 0, vals[0]));
      EXPECT_OK(crec_exec_bind_scalar(ex, 1, vals[1]));
      EXPECT_OK(crec_exec_launch(ex, stream));
      EXPECT_OK(crec_stream_synchronize(stream));
    } else {
      gt_replay(ex, &bg, stream);
    }
    gt_eager(t.p, &be, stream);
    gt_expect_same(g[sp->copy], e[sp->copy], B, "x");
    EXPECT_OK(crec_exec_get_stats(ex, &st));
    switches += sp->switched;
    cr_expect_eq(st.last_nodes_updated, sp->updated, "step %zu: %llu nodes updated", i,
                 (unsigned long long)st.last_nodes_updated);
    cr_expect_eq(st.host_function_calls - calls, sp->host_calls, "step %zu: host function calls", i);
    cr_expect_eq(st.variant_switches, switches, "step %zu: %llu switches", i, (unsigned long long)st.variant_switches);
  }
  cr_expect_eq(st.variants, 2);
  cr_expect_eq(st.variant_hits, 5, "launches that found their set held: %llu", (unsigned long long)st.variant_hits);
  /* refused at launch (the host function fails for n < 0): nothing runs, and the
   * next launch with good values matches eager */
  EXPECT_OK(crec_exec_bind_scalar(ex, 0, (crec_value){.i32 = -5}));
  EXPECT_STATUS(crec_exec_launch(ex, stream), CREC_ERR_HOST_FUNCTION);
  EXPECT_ERROR_MENTIONS("host function 'ceil128' returned 7");
  vals[0].i32 = 4096, vals[1].i32 = 4;
  gb.ptr = g[1], eb.ptr = e[1];
  gt_replay(ex, &bg, stream);
  gt_eager(t.p, &be, stream);
  gt_expect_same(g[1], e[1], B, "x after a refused launch");
  /* whole bindings refused after the choice of graph (a buffer too small, which
   * neither graph holds, is checked against the one chosen): nothing runs, and
   * the next replay, of a set neither holds, matches eager */
  gb.ptr = g[2], gb.size = B / 2;
  EXPECT_STATUS(crec_exec_replay(ex, &bg, stream), CREC_ERR_BINDING);
  EXPECT_ERROR_MENTIONS("bytes given");
  gb.size = B;
  vals[0].i32 = 300, vals[1].i32 = 5;
  eb.ptr = e[2];
  gt_replay(ex, &bg, stream);
  gt_eager(t.p, &be, stream);
  gt_expect_same(g[2], e[2], B, "x after a refused replay");
  crec_exec_destroy(ex);
  for (int c = 0; c < 3; c++) {
    crec_device_free(g[c]);
    crec_device_free(e[c]);
  }
  crec_program_destroy(t.p);
}

/* Launches of two executable graphs on two streams keep the order of the calls,
 * as one graph's launches do: they share the temporary that a slow kernel keeps
 * busy between its writer and its reader, which a launch running beside the
 * other would overwrite. */
Test(replay, variants_on_alternating_streams_keep_their_order) {
  gt t;
  gt_init(&t, 0);
  enum { N = 4096, B = N * 4 };
  crec_buffer x, y, tmp;
  EXPECT_OK(crec_program_add_argument(t.p, "x", B, NULL, &x));
  EXPECT_OK(crec_program_add_argument(t.p, "y", B, NULL, &y));
  EXPECT_OK(crec_program_add_temporary(t.p, "tmp", B, &tmp));
  crec_region body = crec_program_body(t.p);
  crec_arg first[] = {rw(tmp, 0, B, CREC_ACCESS_WRITE), rw(x, 0, B, CREC_ACCESS_READ), crec_arg_i32(7), crec_arg_i32(N)};
  gt_launch(&t, body, t.scale, N, first, 4);
  crec_arg slow[] = {rw(tmp, 0, 4, CREC_ACCESS_READ_WRITE), crec_arg_i64(2000000)}; /* about 1 ms */
  gt_launch1(&t, body, t.spin, slow, 2);
  crec_arg last[] = {rw(y, 0, B, CREC_ACCESS_WRITE), rw(tmp, 0, B, CREC_ACCESS_READ), crec_arg_i32(11), crec_arg_i32(N)};
  gt_launch(&t, body, t.scale, N, last, 4);
  uint32_t *xs[2], *ys[2];
  uint32_t hx[2][N], want[2][N], got[N];
  for (int k = 0; k < 2; k++) {
    xs[k] = gt_alloc(B), ys[k] = gt_alloc(B);
    gt_fill(xs[k], B, (uint32_t)k + 5);
    gt_download(hx[k], xs[k], B);
    for (int i = 0; i < N; i++) want[k][i] = ((hx[k][i] * 3u + 7u) + (i == 0)) * 3u + 11u;
  }
  crec_binding bd[2] = {{xs[0], B}, {ys[0], B}};
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = bd;
  bs.num_buffers = 2;
  crec_record_options o = CREC_RECORD_OPTIONS_INIT;
  o.variants = 2;
  crec_exec *ex;
  EXPECT_OK(crec_record(t.p, &bs, &o, &ex));
  crec_stream other;
  EXPECT_OK(crec_stream_create(0, &other));
  for (int i = 0; i < 8; i++) {
    bd[0].ptr = xs[i % 2], bd[1].ptr = ys[i % 2];
    EXPECT_OK(crec_exec_replay(ex, &bs, i % 2 ? other : stream));
  }
  EXPECT_OK(crec_stream_synchronize(stream));
  EXPECT_OK(crec_stream_synchronize(other));
  for (int k = 0; k < 2; k++) {
    gt_download(got, ys[k], B);
    int bad = 0;
    while (bad < N && got[bad] == want[k][bad]) bad++;
    cr_expect_eq(bad, N, "set %d: y[%d] is %u, expected %u", k, bad, bad < N ? got[bad] : 0, bad < N ? want[k][bad] : 0);
  }
  crec_exec_stats st = CREC_EXEC_STATS_INIT;
  EXPECT_OK(crec_exec_get_stats(ex, &st));
  cr_expect_eq(st.variant_switches, 7);
  cr_expect_eq(st.variant_hits, 6, "the second graph updated once, then held its set");
  crec_exec_destroy(ex);
  crec_stream_destroy(other);
  for (int k = 0; k < 2; k++) {
    crec_device_free(xs[k]);
    crec_device_free(ys[k]);
  }
  crec_program_destroy(t.p);
}

static int size_to_count(void *user, const crec_value *in, crec_value *out) {
  (void)user;
  out[0].i32 = (int32_t)(in[0].i64 / 4);
  out[1].i32 = (int32_t)((in[0].i64 / 4 + 127) / 128);
  return 0;
}

Test(replay, dynamic_size_argument_follows_its_binding) {
  gt t;
  gt_init(&t, 0);
  crec_argument_options dyn = CREC_ARGUMENT_OPTIONS_INIT;
  dyn.dynamic_size = 1;
  crec_buffer x, y;
  crec_scalar bytes, n, grid;
  EXPECT_OK(crec_program_add_argument(t.p, "x", 0, &dyn, &x));
  EXPECT_OK(crec_program_add_argument(t.p, "y", 0, &dyn, &y));
  EXPECT_OK(crec_program_add_size_scalar(t.p, "x_bytes", x, &bytes));
  EXPECT_OK(crec_program_add_derived_scalar(t.p, "n", CREC_TYPE_I32, &n));
  EXPECT_OK(crec_program_add_derived_scalar(t.p, "grid", CREC_TYPE_I32, &grid));
  crec_scalar outs[2] = {n, grid};
  EXPECT_OK(crec_program_add_host_function(t.p, "count", size_to_count, NULL, NULL, &bytes, 1, outs, 2));
  crec_region body = crec_program_body(t.p);
  crec_command c;
  EXPECT_OK(crec_program_add_memcpy(t.p, body, NULL, crec_range_whole(y), crec_range_whole(x), &c));
  crec_launch l = CREC_LAUNCH_INIT;
  crec_arg a[] = {crec_arg_buffer(crec_range_whole(y), CREC_ACCESS_READ_WRITE), crec_arg_scalar(n)};
  l.kernel = t.inc;
  l.grid[0] = crec_dim_from(grid);
  l.block[0] = crec_dim_of(128);
  l.args = a;
  l.num_args = 2;
  EXPECT_OK(crec_program_add_launch(t.p, body, NULL, &l, &c));
  enum { MAX = 1 << 16 };
  uint32_t *gx = gt_alloc(MAX), *gy = gt_alloc(MAX), *ey = gt_alloc(MAX);
  gt_fill(gx, MAX, 4);
  crec_binding gb[2] = {{gx, 4096}, {gy, 4096}}, eb[2] = {{gx, 4096}, {ey, 4096}};
  crec_bindings bg = CREC_BINDINGS_INIT, be = CREC_BINDINGS_INIT;
  bg.buffers = gb, be.buffers = eb;
  bg.num_buffers = be.num_buffers = 2;
  crec_exec *ex;
  EXPECT_OK(crec_record(t.p, &bg, NULL, &ex));
  uint64_t sizes[] = {4096, 40000, 4, 65536, 1024};
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
    gt_fill(gy, MAX, 9);
    gt_fill(ey, MAX, 9);
    gb[0].size = gb[1].size = eb[0].size = eb[1].size = sizes[i];
    gt_replay(ex, &bg, stream);
    gt_eager(t.p, &be, stream);
    gt_expect_same(gy, ey, MAX, "y");
  }
  /* x smaller than y: the copy's source is too short */
  gb[0].size = 512;
  gb[1].size = 1024;
  EXPECT_STATUS(crec_exec_replay(ex, &bg, stream), CREC_ERR_BINDING);
  crec_exec_stats st = CREC_EXEC_STATS_INIT;
  EXPECT_OK(crec_exec_get_stats(ex, &st));
  cr_expect_eq(st.replays, 5);
  crec_exec_destroy(ex);
  crec_device_free(gx);
  crec_device_free(gy);
  crec_device_free(ey);
  crec_program_destroy(t.p);
}

typedef struct worker {
  gt *t;
  int seed;
  gt_worker w;
  int stale; /* buffer pairs crec_device_alloc() handed back holding different bytes */
} worker;

/* x = x * 5 + k for k = 1..10: what the program of separate_execs_... makes of x. */
static void affine_ten(uint32_t *x, size_t n) {
  for (uint32_t k = 1; k <= 10; k++)
    for (size_t i = 0; i < n; i++) x[i] = x[i] * 5u + k;
}

/* One worker: its own stream and exec of the shared program, replays on two
 * rotated buffers against eager runs on twins, each pair filled alike first. */
static void *replay_thread(void *arg) {
  worker *wk = arg;
  gt_worker *w = &wk->w;
  enum { N = 1024, B = N * 4 };
  crec_stream s = NULL;
  void *g[2] = {NULL, NULL}, *e[2] = {NULL, NULL};
  crec_exec *ex = NULL;
  uint32_t hg[N], he[N], want[2][N];
  bool ok = GT_WORKER_OK(w, crec_stream_create(0, &s));
  for (int k = 0; k < 2 && ok; k++) {
    ok = GT_WORKER_OK(w, crec_device_alloc(0, B, &g[k])) && GT_WORKER_OK(w, crec_device_alloc(0, B, &e[k])) &&
         GT_WORKER_OK(w, crec_copy(hg, g[k], B)) && GT_WORKER_OK(w, crec_copy(he, e[k], B));
    /* Fresh device memory is not cleared: in a process that ran other tests
     * first (crec_gpu_stress), it holds what they left, not the same in g and e.
     * Compared uninitialised, such a pair failed this test once in 96 runs. */
    if (ok) wk->stale += memcmp(hg, he, B) != 0;
    gt_pattern(want[k], B, (uint32_t)(wk->seed * 2 + k + 1));
    ok = ok && GT_WORKER_OK(w, crec_copy(g[k], want[k], B)) && GT_WORKER_OK(w, crec_copy(e[k], want[k], B));
  }
  crec_binding gb = {g[0], B}, eb;
  crec_bindings bg = CREC_BINDINGS_INIT, be = CREC_BINDINGS_INIT;
  bg.buffers = &gb, be.buffers = &eb;
  bg.num_buffers = be.num_buffers = 1;
  ok = ok && GT_WORKER_OK(w, crec_record(wk->t->p, &bg, NULL, &ex));
  for (int it = 0, n = gt_reps(200); it < n && ok; it++) {
    int k = it % 2;
    gb.ptr = g[k];
    eb = (crec_binding){e[k], B};
    affine_ten(want[k], N);
    ok = GT_WORKER_OK(w, crec_exec_replay(ex, &bg, s)) && GT_WORKER_OK(w, crec_run_eager(wk->t->p, &be, s)) &&
         GT_WORKER_OK(w, crec_stream_synchronize(s)) && GT_WORKER_OK(w, crec_copy(hg, g[k], B)) &&
         GT_WORKER_OK(w, crec_copy(he, e[k], B));
    size_t i = 0;
    while (ok && i < N && hg[i] == he[i] && hg[i] == want[k][i]) i++;
    if (ok && i < N)
      ok = gt_worker_fail(w, "replay against eager", "iteration %d, buffer %d: x[%zu] is %u replayed, %u eager, %u expected",
                          it, k, i, hg[i], he[i], want[k][i]);
  }
  crec_exec_destroy(ex);
  for (int k = 0; k < 2; k++) {
    crec_device_free(g[k]);
    crec_device_free(e[k]);
  }
  crec_stream_destroy(s);
  return NULL;
}

Test(replay, separate_execs_replay_on_separate_threads) {
  gt t;
  gt_init(&t, 0);
  enum { N = 1024, B = N * 4 };
  crec_buffer x;
  EXPECT_OK(crec_program_add_argument(t.p, "x", B, NULL, &x));
  for (int i = 0; i < 10; i++) {
    crec_arg a[] = {rw(x, 0, B, CREC_ACCESS_READ_WRITE), crec_arg_i32(i + 1), crec_arg_i32(N)};
    gt_launch(&t, crec_program_body(t.p), t.affine, N, a, 3);
  }
  pthread_t th[4];
  worker w[4];
  for (int i = 0; i < 4; i++) {
    w[i] = (worker){.t = &t, .seed = i};
    cr_assert_eq(pthread_create(&th[i], NULL, replay_thread, &w[i]), 0);
  }
  int stale = 0;
  for (int i = 0; i < 4; i++) {
    pthread_join(th[i], NULL);
    gt_expect_worker(&w[i].w, i);
    stale += w[i].stale;
  }
  if (stale)
    cr_log_info("replay::separate_execs_replay_on_separate_threads: %d of 8 buffer pairs came from crec_device_alloc "
                "holding different bytes (what earlier tests left); each pair was filled alike first",
                stale);
  crec_program_destroy(t.p);
}

Test(replay, exec_outlives_its_program) {
  gt t;
  gt_init(&t, 0);
  enum { N = 256, B = N * 4 };
  crec_buffer x;
  EXPECT_OK(crec_program_add_argument(t.p, "x", B, NULL, &x));
  crec_arg a[] = {rw(x, 0, B, CREC_ACCESS_READ_WRITE), crec_arg_i32(N)};
  gt_launch(&t, crec_program_body(t.p), t.inc, N, a, 2);
  uint32_t *d = gt_alloc(B);
  uint32_t h[N] = {0};
  gt_upload(d, h, B);
  crec_binding bd = {d, B};
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = &bd;
  bs.num_buffers = 1;
  crec_exec *ex;
  EXPECT_OK(crec_record(t.p, &bs, NULL, &ex));
  crec_program_destroy(t.p);
  for (int i = 0; i < 3; i++) gt_replay(ex, &bs, stream);
  gt_download(h, d, B);
  cr_expect_eq(h[0], 3);
  cr_expect_eq(h[N - 1], 3);
  crec_exec_destroy(ex);
  crec_device_free(d);
}

Test(replay, cuda_dot_dump_is_written) {
  gt t;
  gt_init(&t, 0);
  crec_buffer x;
  EXPECT_OK(crec_program_add_argument(t.p, "x", 1024, NULL, &x));
  crec_arg a[] = {rw(x, 0, 1024, CREC_ACCESS_READ_WRITE), crec_arg_i32(256)};
  gt_launch(&t, crec_program_body(t.p), t.inc, 256, a, 2);
  void *d = gt_alloc(1024);
  crec_binding bd = {d, 1024};
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = &bd;
  bs.num_buffers = 1;
  crec_exec *ex;
  EXPECT_OK(crec_record(t.p, &bs, NULL, &ex));
  char path[] = "/tmp/crec_cuda_dot_XXXXXX";
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  EXPECT_OK(crec_exec_dump_cuda_dot(ex, path));
  FILE *f = fopen(path, "r");
  char buf[4096] = {0};
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  remove(path);
  cr_expect_gt(n, 0);
  cr_expect(strstr(buf, "digraph") != NULL, "no digraph in the driver's DOT");
  cr_expect(strstr(buf, "t_inc") != NULL, "the kernel is not named in the driver's DOT");
  crec_exec_destroy(ex);
  crec_device_free(d);
  crec_program_destroy(t.p);
}

Test(replay, a_recorded_program_can_no_longer_change) {
  gt t;
  gt_init(&t, 0);
  crec_buffer x, y;
  EXPECT_OK(crec_program_add_argument(t.p, "x", 1024, NULL, &x));
  crec_arg a[] = {rw(x, 0, 1024, CREC_ACCESS_READ_WRITE), crec_arg_i32(256)};
  gt_launch(&t, crec_program_body(t.p), t.inc, 256, a, 2);
  void *d = gt_alloc(1024);
  crec_binding bd = {d, 1024};
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = &bd;
  bs.num_buffers = 1;
  crec_exec *ex;
  EXPECT_OK(crec_record(t.p, &bs, NULL, &ex));
  size_t before = crec_program_buffer_count(t.p);
  EXPECT_STATUS(crec_program_add_argument(t.p, "y", 64, NULL, &y), CREC_ERR_INVALID_PROGRAM);
  EXPECT_ERROR_MENTIONS("already recorded");
  crec_command c;
  EXPECT_STATUS(crec_program_add_barrier(t.p, crec_program_body(t.p), NULL, &c), CREC_ERR_INVALID_PROGRAM);
  cr_expect_eq(crec_program_buffer_count(t.p), before);
  gt_replay(ex, &bs, stream);
  crec_exec_destroy(ex);
  crec_device_free(d);
  crec_program_destroy(t.p);
}

Test(replay, replays_on_alternating_streams) {
  gt t;
  gt_init(&t, 0);
  enum { N = 512, B = N * 4 };
  crec_buffer x;
  EXPECT_OK(crec_program_add_argument(t.p, "x", B, NULL, &x));
  crec_arg a[] = {rw(x, 0, B, CREC_ACCESS_READ_WRITE), crec_arg_i32(N)};
  gt_launch(&t, crec_program_body(t.p), t.inc, N, a, 2);
  uint32_t *d = gt_alloc(B), h[N] = {0};
  gt_upload(d, h, B);
  crec_stream other;
  EXPECT_OK(crec_stream_create(0, &other));
  crec_binding bd = {d, B};
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = &bd;
  bs.num_buffers = 1;
  crec_exec *ex;
  EXPECT_OK(crec_record(t.p, &bs, NULL, &ex));
  /* the graph is uploaded again whenever the stream changes, and stays correct */
  for (int i = 0; i < 10; i++) gt_replay(ex, &bs, i % 3 == 0 ? other : i % 3 == 1 ? stream : NULL);
  gt_download(h, d, B);
  cr_expect_eq(h[0], 10);
  cr_expect_eq(h[N - 1], 10);
  crec_exec_destroy(ex);
  crec_stream_destroy(other);
  crec_device_free(d);
  crec_program_destroy(t.p);
}
