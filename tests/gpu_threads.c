/* GPU suite for threads: 8 threads record one program at the same moment, then
 * each replays its exec 500 times on rotated buffers against eager runs of the
 * same program on twins of those buffers, and against the host's arithmetic.
 * Each round takes a new program, so the first-use paths that records of one
 * program share race every time: its runtime and plans (both schedules), each
 * context's modules, the uses table that a plain program's first record
 * publishes, the set-condition kernels of a program with a loop. Then 8 threads
 * import captures of one program's eager run at once (the parameter layouts of
 * captured kernels, cached once per process in record/capture.c) and replay
 * them likewise. Workers keep their own failures (gt_worker, gpu_util.h).
 * tools/gpu-check.sh --stress runs this suite too. Skips without a CUDA device. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "gpu_util.h"

static void setup(void) { REQUIRE_DEVICE(); }

TestSuite(threads, .init = setup);

enum { THREADS = 8, ROUNDS = 6, ITERS = 500 / ROUNDS + 1, SETS = 3, N = 1024, B = N * 4 };

/* Round `r`'s program. Even rounds are plain (launches only; a temporary):
 *   x = x * 5 + (r + 1); tmp = x * 3 + 7; y = tmp ^ (x + i); x = x * 5 + (r + 3)
 * odd rounds hold a device loop whose body runs r + 1 times, then a launch:
 *   repeat r + 1 times: x = x * 5 + (r + 2);  y = x * 3 + r */
static crec_program *round_program(gt *t, int r) {
  gt_init(t, r % 4 == 1); /* the fatbin in some rounds, the PTX in others */
  crec_buffer x, y, tmp, state;
  EXPECT_OK(crec_program_add_argument(t->p, "x", B, NULL, &x));
  EXPECT_OK(crec_program_add_argument(t->p, "y", B, NULL, &y));
  crec_region body = crec_program_body(t->p);
  crec_range X = crec_range_whole(x), Y = crec_range_whole(y);
  if (r % 2 == 0) {
    EXPECT_OK(crec_program_add_temporary(t->p, "tmp", B, &tmp));
    crec_range T = crec_range_whole(tmp);
    crec_arg a1[] = {crec_arg_buffer(X, CREC_ACCESS_READ_WRITE), crec_arg_i32(r + 1), crec_arg_i32(N)};
    gt_launch(t, body, t->affine, N, a1, 3);
    crec_arg a2[] = {crec_arg_buffer(T, CREC_ACCESS_WRITE), crec_arg_buffer(X, CREC_ACCESS_READ), crec_arg_i32(7),
                     crec_arg_i32(N)};
    gt_launch(t, body, t->scale, N, a2, 4);
    crec_arg a3[] = {crec_arg_buffer(Y, CREC_ACCESS_WRITE), crec_arg_buffer(T, CREC_ACCESS_READ),
                     crec_arg_buffer(X, CREC_ACCESS_READ), crec_arg_i32(N)};
    gt_launch(t, body, t->mix, N, a3, 4);
    crec_arg a4[] = {crec_arg_buffer(X, CREC_ACCESS_READ_WRITE), crec_arg_i32(r + 3), crec_arg_i32(N)};
    gt_launch(t, body, t->affine, N, a4, 3);
  } else {
    EXPECT_OK(crec_program_add_temporary(t->p, "state", 64, &state));
    crec_region loop = gt_countdown_loop(t, body, state, r + 2);
    crec_arg a1[] = {crec_arg_buffer(X, CREC_ACCESS_READ_WRITE), crec_arg_i32(r + 2), crec_arg_i32(N)};
    gt_launch(t, loop, t->affine, N, a1, 3);
    crec_arg a2[] = {crec_arg_buffer(Y, CREC_ACCESS_WRITE), crec_arg_buffer(X, CREC_ACCESS_READ), crec_arg_i32(r),
                     crec_arg_i32(N)};
    gt_launch(t, body, t->scale, N, a2, 4);
  }
  return t->p;
}

/* What round `r`'s program makes of x and y, on the host. */
static void round_model(int r, uint32_t *x, uint32_t *y) {
  uint32_t k = (uint32_t)r;
  if (r % 2 == 0) {
    for (uint32_t i = 0; i < N; i++) {
      x[i] = x[i] * 5u + k + 1u;
      y[i] = (x[i] * 3u + 7u) ^ (x[i] + i);
      x[i] = x[i] * 5u + k + 3u;
    }
  } else {
    for (uint32_t i = 0; i < N; i++) {
      for (int j = 0; j <= r; j++) x[i] = x[i] * 5u + k + 2u;
      y[i] = x[i] * 3u + k;
    }
  }
}

typedef struct worker {
  const crec_program *p;
  int round, index;
  pthread_barrier_t *start;
  gt_worker w;
  crec_exec_stats stats;
} worker;

/* One worker's buffers: SETS sets of x and y for the graph, twins for eager runs. */
typedef struct sets {
  void *g[SETS][2], *e[SETS][2];
  uint32_t want[SETS][2][N]; /* what each set holds, by the host's arithmetic */
} sets;

static bool sets_make(sets *s, gt_worker *w, uint32_t seed) {
  bool ok = true;
  for (int k = 0; k < SETS; k++)
    for (int a = 0; a < 2; a++) {
      gt_pattern(s->want[k][a], B, seed * 16 + (uint32_t)(k * 2 + a));
      ok = ok && GT_WORKER_OK(w, crec_device_alloc(0, B, &s->g[k][a])) &&
           GT_WORKER_OK(w, crec_device_alloc(0, B, &s->e[k][a])) &&
           GT_WORKER_OK(w, crec_copy(s->g[k][a], s->want[k][a], B)) &&
           GT_WORKER_OK(w, crec_copy(s->e[k][a], s->want[k][a], B));
    }
  return ok;
}

static void sets_free(sets *s) {
  for (int k = 0; k < SETS; k++)
    for (int a = 0; a < 2; a++) {
      crec_device_free(s->g[k][a]);
      crec_device_free(s->e[k][a]);
    }
}

/* Whether set `k` of the graph and of eager both hold what the host computed. */
static bool sets_check(sets *s, gt_worker *w, int k, int it) {
  static const char *const names[2] = {"x", "y"};
  uint32_t hg[N], he[N];
  for (int a = 0; a < 2; a++) {
    if (!GT_WORKER_OK(w, crec_copy(hg, s->g[k][a], B)) || !GT_WORKER_OK(w, crec_copy(he, s->e[k][a], B))) return false;
    const uint32_t *want = s->want[k][a];
    for (uint32_t i = 0; i < N; i++)
      if (hg[i] != want[i] || he[i] != want[i])
        return gt_worker_fail(w, "replay against eager and the host",
                              "iteration %d, set %d: %s[%u] is %u replayed, %u eager, %u expected", it, k, names[a], i,
                              hg[i], he[i], want[i]);
  }
  return true;
}

static void *work(void *arg) {
  worker *wk = arg;
  gt_worker *w = &wk->w;
  sets *s = calloc(1, sizeof *s);
  crec_stream stream = NULL;
  crec_exec *ex = NULL;
  bool ok = s ? GT_WORKER_OK(w, crec_stream_create(0, &stream)) : gt_worker_fail(w, "calloc", "out of memory");
  ok = ok && sets_make(s, w, (uint32_t)(wk->round * THREADS + wk->index + 1));
  /* half the threads record with the sequential schedule (the runtime's other
   * plan and uses table), a quarter of the plain rounds' with two variants */
  crec_record_options o = CREC_RECORD_OPTIONS_INIT;
  o.schedule = wk->index % 2 ? CREC_SCHEDULE_SEQUENTIAL : CREC_SCHEDULE_CONCURRENT;
  if (wk->round % 2 == 0 && wk->index % 4 == 3) o.variants = 2;
  crec_binding gb[2], eb[2];
  crec_bindings bg = CREC_BINDINGS_INIT, be = CREC_BINDINGS_INIT;
  bg.buffers = gb, be.buffers = eb;
  bg.num_buffers = be.num_buffers = 2;
  /* every thread waits here, ready or not, so that none waits forever */
  pthread_barrier_wait(wk->start);
  for (int it = 0; it < ITERS && ok; it++) {
    int k = it % SETS;
    for (int a = 0; a < 2; a++) {
      gb[a] = (crec_binding){s->g[k][a], B};
      eb[a] = (crec_binding){s->e[k][a], B};
    }
    /* odd threads run eagerly first (the first use of the program is then an
     * eager run's, racing the others' records) */
    if (wk->index % 2) ok = GT_WORKER_OK(w, crec_run_eager(wk->p, &be, stream));
    if (ok && !ex) ok = GT_WORKER_OK(w, crec_record(wk->p, &bg, &o, &ex));
    ok = ok && GT_WORKER_OK(w, crec_exec_replay(ex, &bg, stream));
    if (ok && wk->index % 2 == 0) ok = GT_WORKER_OK(w, crec_run_eager(wk->p, &be, stream));
    ok = ok && GT_WORKER_OK(w, crec_stream_synchronize(stream));
    round_model(wk->round, s->want[k][0], s->want[k][1]);
    ok = ok && sets_check(s, w, k, it);
  }
  if (ex) GT_WORKER_OK(w, crec_exec_get_stats(ex, &wk->stats));
  crec_exec_destroy(ex);
  if (s) sets_free(s);
  crec_stream_destroy(stream);
  free(s);
  return NULL;
}

Test(threads, eight_threads_record_one_program_at_once_and_replay_it_against_eager) {
  int64_t live = crec_debug_live_objects();
  for (int r = 0; r < ROUNDS; r++) {
    gt t;
    const crec_program *p = round_program(&t, r);
    pthread_barrier_t start;
    cr_assert_eq(pthread_barrier_init(&start, NULL, THREADS), 0);
    pthread_t th[THREADS];
    worker w[THREADS];
    for (int i = 0; i < THREADS; i++) {
      w[i] = (worker){.p = p, .round = r, .index = i, .start = &start};
      w[i].stats = (crec_exec_stats)CREC_EXEC_STATS_INIT;
      cr_assert_eq(pthread_create(&th[i], NULL, work, &w[i]), 0);
    }
    for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
    pthread_barrier_destroy(&start);
    for (int i = 0; i < THREADS; i++) {
      char what[32];
      snprintf(what, sizeof what, "%d (round %d)", i, r);
      cr_expect(!w[i].w.failed, "thread %s: %s: %s", what, w[i].w.call, w[i].w.message);
      if (w[i].w.failed) continue;
      cr_expect_eq(w[i].stats.replays, ITERS, "thread %s: %llu replays", what, (unsigned long long)w[i].stats.replays);
    }
    crec_program_destroy(t.p);
  }
  cr_expect_eq(crec_debug_live_objects(), live, "every program and exec of the threads was freed");
}

/* ---- imports: the parameter layouts of captured kernels, probed once per process ---- */

/* x = x * 5 + 3; y = x * 3 + 7; x = x * 5 + 5: arguments only (an eager run of
 * it allocates nothing, so its capture holds kernels alone). */
static crec_program *import_program(gt *t) {
  gt_init(t, 0);
  crec_buffer x, y;
  EXPECT_OK(crec_program_add_argument(t->p, "x", B, NULL, &x));
  EXPECT_OK(crec_program_add_argument(t->p, "y", B, NULL, &y));
  crec_region body = crec_program_body(t->p);
  crec_range X = crec_range_whole(x), Y = crec_range_whole(y);
  crec_arg a1[] = {crec_arg_buffer(X, CREC_ACCESS_READ_WRITE), crec_arg_i32(3), crec_arg_i32(N)};
  gt_launch(t, body, t->affine, N, a1, 3);
  crec_arg a2[] = {crec_arg_buffer(Y, CREC_ACCESS_WRITE), crec_arg_buffer(X, CREC_ACCESS_READ), crec_arg_i32(7),
                   crec_arg_i32(N)};
  gt_launch(t, body, t->scale, N, a2, 4);
  crec_arg a3[] = {crec_arg_buffer(X, CREC_ACCESS_READ_WRITE), crec_arg_i32(5), crec_arg_i32(N)};
  gt_launch(t, body, t->affine, N, a3, 3);
  return t->p;
}

static void import_model(uint32_t *x, uint32_t *y) {
  for (uint32_t i = 0; i < N; i++) {
    x[i] = x[i] * 5u + 3u;
    y[i] = x[i] * 3u + 7u;
    x[i] = x[i] * 5u + 5u;
  }
}

/* The capture callback: the program's eager run on the capturing stream. */
static crec_status run_eagerly(void *user, crec_stream stream, void *const *bases) {
  crec_binding b[2] = {{bases[0], B}, {bases[1], B}};
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = b;
  bs.num_buffers = 2;
  return crec_run_eager(user, &bs, stream);
}

static void *import_work(void *arg) {
  worker *wk = arg;
  gt_worker *w = &wk->w;
  sets *s = calloc(1, sizeof *s);
  crec_stream stream = NULL;
  crec_exec *ex = NULL;
  void *second[2] = {NULL, NULL};
  bool ok = s ? GT_WORKER_OK(w, crec_stream_create(0, &stream)) : gt_worker_fail(w, "calloc", "out of memory");
  ok = ok && sets_make(s, w, (uint32_t)(100 + wk->index));
  for (int a = 0; a < 2 && ok; a++) ok = GT_WORKER_OK(w, crec_device_alloc(0, B, &second[a]));
  crec_binding gb[2], eb[2];
  crec_bindings bg = CREC_BINDINGS_INIT, be = CREC_BINDINGS_INIT;
  bg.buffers = gb, be.buffers = eb;
  bg.num_buffers = be.num_buffers = 2;
  pthread_barrier_wait(wk->start);
  /* captured twice (the second time on `second`) and analysed: every thread's
   * import asks for the layouts of the same kernels at once */
  crec_graph_argument ga[2] = {{"x", ok ? s->g[0][0] : NULL, B}, {"y", ok ? s->g[0][1] : NULL, B}};
  ok = ok && GT_WORKER_OK(w, crec_capture_import(run_eagerly, (void *)wk->p, stream, ga, 2, second, NULL, &ex));
  for (int it = 0; it < ITERS && ok; it++) {
    int k = it % SETS;
    for (int a = 0; a < 2; a++) {
      gb[a] = (crec_binding){s->g[k][a], B};
      eb[a] = (crec_binding){s->e[k][a], B};
    }
    ok = GT_WORKER_OK(w, crec_exec_replay(ex, &bg, stream)) && GT_WORKER_OK(w, crec_run_eager(wk->p, &be, stream)) &&
         GT_WORKER_OK(w, crec_stream_synchronize(stream));
    import_model(s->want[k][0], s->want[k][1]);
    ok = ok && sets_check(s, w, k, it);
  }
  if (ex) GT_WORKER_OK(w, crec_exec_get_stats(ex, &wk->stats));
  crec_exec_destroy(ex);
  for (int a = 0; a < 2; a++) crec_device_free(second[a]);
  if (s) sets_free(s);
  crec_stream_destroy(stream);
  free(s);
  return NULL;
}

Test(threads, eight_threads_import_captures_of_one_program_at_once_and_replay_them_against_eager) {
  int64_t live = crec_debug_live_objects();
  gt t;
  const crec_program *p = import_program(&t);
  /* the program's module loaded before any capture (a load is no stream work) */
  void *pre[2] = {gt_alloc(B), gt_alloc(B)};
  crec_binding pb[2] = {{pre[0], B}, {pre[1], B}};
  crec_bindings pbs = CREC_BINDINGS_INIT;
  pbs.buffers = pb;
  pbs.num_buffers = 2;
  gt_eager(p, &pbs, NULL);
  pthread_barrier_t start;
  cr_assert_eq(pthread_barrier_init(&start, NULL, THREADS), 0);
  pthread_t th[THREADS];
  worker w[THREADS];
  for (int i = 0; i < THREADS; i++) {
    w[i] = (worker){.p = p, .round = 0, .index = i, .start = &start};
    w[i].stats = (crec_exec_stats)CREC_EXEC_STATS_INIT;
    cr_assert_eq(pthread_create(&th[i], NULL, import_work, &w[i]), 0);
  }
  for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
  pthread_barrier_destroy(&start);
  for (int i = 0; i < THREADS; i++) {
    cr_expect(!w[i].w.failed, "thread %d: %s: %s", i, w[i].w.call, w[i].w.message);
    if (!w[i].w.failed) cr_expect_eq(w[i].stats.replays, ITERS, "thread %d: %llu replays", i, (unsigned long long)w[i].stats.replays);
  }
  crec_device_free(pre[0]);
  crec_device_free(pre[1]);
  crec_program_destroy(t.p);
  cr_expect_eq(crec_debug_live_objects(), live, "every program and exec of the threads was freed");
}
