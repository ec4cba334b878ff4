/* CPU suite for what crec shares between threads, each piece hammered from 8
 * threads at once (started together at a barrier): one program's runtime (made
 * by the first record or eager run), plans, dumps, program files and warnings;
 * the per-thread last error; the fault-injection counters; the custom-handler
 * registry; the feeds; the lowering caches (in memory and on disk); the
 * run-time loaders of cuBLASLt, NCCL, cuFFT, cuSOLVER, cuDNN, CUPTI and
 * nvJitLink. Each test checks what a user sees (every thread's results equal a
 * single thread's, nothing lost, nothing counted twice, nothing leaked); the
 * ThreadSanitizer build (CREC_SANITIZE=thread, tools/test.sh) also fails on
 * any data race they reach. The paths that need a device (a record past its
 * checks, the layouts of captured kernels in record/capture.c) are hammered by
 * the GPU suite tests/gpu_threads.c. */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

enum { THREADS = 8 };

/* One thread's part: its index, what the test shares with it, and its first failure. */
typedef struct hammer {
  int index;
  void *shared;
  char error[900]; /* "" while nothing failed */
} hammer;

/* Keeps the first failure of `h` (printf-style); returns false. */
__attribute__((format(printf, 2, 3))) static bool fail(hammer *h, const char *fmt, ...) {
  if (!h->error[0]) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(h->error, sizeof h->error, fmt, ap);
    va_end(ap);
  }
  return false;
}

/* Whether `call` returned `want`; a failure names the call, both statuses and this thread's last error. */
static bool expect_status(hammer *h, const char *call, crec_status got, crec_status want) {
  if (got == want) return true;
  return fail(h, "%s returned %s, not %s: %s", call, crec_status_name(got), crec_status_name(want), crec_last_error());
}
#define EXPECT(h, call, want) expect_status((h), #call, (call), (want))

typedef struct start {
  void *(*fn)(hammer *);
  hammer *h;
  pthread_barrier_t *barrier;
} start;

static void *run_hammer(void *arg) {
  start *s = arg;
  pthread_barrier_wait(s->barrier);
  return s->fn(s->h);
}

/* Runs fn on THREADS threads at once, each with its own hammer over `shared`;
 * expects that none kept a failure. */
static void hammer_all(void *(*fn)(hammer *), void *shared) {
  pthread_barrier_t barrier;
  cr_assert_eq(pthread_barrier_init(&barrier, NULL, THREADS), 0);
  hammer h[THREADS];
  start s[THREADS];
  pthread_t th[THREADS];
  for (int i = 0; i < THREADS; i++) {
    h[i].index = i;
    h[i].shared = shared;
    h[i].error[0] = '\0';
    s[i] = (start){fn, &h[i], &barrier};
    cr_assert_eq(pthread_create(&th[i], NULL, run_hammer, &s[i]), 0);
  }
  for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
  pthread_barrier_destroy(&barrier);
  for (int i = 0; i < THREADS; i++) cr_expect(!h[i].error[0], "thread %d: %s", i, h[i].error);
}

/* ---- one program: its runtime, plans, dumps, program files, warnings ---- */

/* What one thread sees of the program, for comparison with what the others see. */
typedef struct views {
  char *dump[3][2];    /* per format: with the default plan, with a sequential one */
  void *file;          /* crec_program_serialize() */
  size_t file_size;
  size_t deps[2][16];  /* per schedule: each command's number of dependencies */
  char warning[400];   /* the program's one warning */
} views;

typedef struct shared_program {
  crec_program *p;
  crec_bindings bindings;
  bool device;
  views want;
} shared_program;

/* x, y: arguments; t, state: temporaries; u: a temporary read before anything
 * writes it (one warning). t = f(x); y = f(t); while (state) { x = f(x, x) }; y = f(y, u). */
static crec_program *threads_program(void) {
  crec_kernel k;
  crec_program *p = crec_test_program(&k);
  crec_buffer x, y, t, u, state;
  EXPECT_OK(crec_program_add_argument(p, "x", 4096, NULL, &x));
  EXPECT_OK(crec_program_add_argument(p, "y", 4096, NULL, &y));
  EXPECT_OK(crec_program_add_temporary(p, "t", 4096, &t));
  EXPECT_OK(crec_program_add_temporary(p, "u", 4096, &u));
  EXPECT_OK(crec_program_add_temporary(p, "state", 64, &state));
  crec_region body = crec_program_body(p);
  crec_command c;
  EXPECT_OK(crec_program_add_memset(p, body, "zero state", crec_range_whole(state), 0, 1, &c));
  crec_region cond, loop;
  EXPECT_OK(crec_program_add_while(p, body, "loop", crec_range_of(state, 0, 1), &c, &cond, &loop));
  const struct {
    crec_region r;
    crec_buffer out, in;
  } launches[4] = {{body, t, x}, {body, y, t}, {loop, x, x}, {body, y, u}};
  for (int i = 0; i < 4; i++) {
    crec_access out = launches[i].out.id == launches[i].in.id ? CREC_ACCESS_READ_WRITE : CREC_ACCESS_WRITE;
    crec_arg a[] = {crec_arg_buffer(crec_range_whole(launches[i].out), out),
                    crec_arg_buffer(crec_range_whole(launches[i].in), CREC_ACCESS_READ), crec_arg_i32(1024)};
    crec_launch l = CREC_LAUNCH_INIT;
    l.kernel = k;
    l.grid[0] = crec_dim_of(8);
    l.block[0] = crec_dim_of(128);
    l.args = a;
    l.num_args = 3;
    EXPECT_OK(crec_program_add_launch(p, launches[i].r, NULL, &l, &c));
  }
  EXPECT_OK(crec_program_add_memset(p, cond, "state", crec_range_of(state, 0, 1), 0, 1, &c));
  return p;
}

static void views_free(views *v) {
  for (int f = 0; f < 3; f++)
    for (int s = 0; s < 2; s++) crec_free(v->dump[f][s]);
  crec_free(v->file);
}

/* Reads every view of `p` into `v`; false (with `h`'s failure) when a call fails. */
static bool views_read(hammer *h, const crec_program *p, views *v) {
  memset(v, 0, sizeof *v);
  crec_plan *plans[2] = {NULL, NULL};
  crec_plan_options po = CREC_PLAN_OPTIONS_INIT;
  bool ok = EXPECT(h, crec_plan_create(p, NULL, &plans[0]), CREC_OK);
  po.schedule = CREC_SCHEDULE_SEQUENTIAL;
  ok = ok && EXPECT(h, crec_plan_create(p, &po, &plans[1]), CREC_OK);
  size_t n = crec_program_command_count(p);
  for (int s = 0; s < 2 && ok; s++)
    for (size_t ci = 0; ci < n && ci < 16 && ok; ci++) {
      const crec_command *deps;
      ok = EXPECT(h, crec_plan_get_deps(plans[s], crec_program_command(p, ci), &deps, &v->deps[s][ci]), CREC_OK);
    }
  for (int f = 0; f < 3 && ok; f++)
    for (int s = 0; s < 2 && ok; s++)
      ok = EXPECT(h, crec_dump(p, s ? plans[1] : NULL, (crec_dump_format)f, &v->dump[f][s], NULL), CREC_OK);
  ok = ok && EXPECT(h, crec_program_serialize(p, &v->file, &v->file_size), CREC_OK);
  ok = ok && EXPECT(h, crec_program_validate(p), CREC_OK);
  crec_warning_info w;
  if (ok && crec_program_warning_count(p) != 1)
    ok = fail(h, "the program has %zu warnings, not 1", crec_program_warning_count(p));
  ok = ok && EXPECT(h, crec_program_get_warning(p, 0, &w), CREC_OK);
  if (ok) snprintf(v->warning, sizeof v->warning, "%s", w.message);
  crec_plan_destroy(plans[0]);
  crec_plan_destroy(plans[1]);
  return ok;
}

static bool views_equal(hammer *h, const views *got, const views *want) {
  static const char *const formats[3] = {"text", "json", "dot"};
  for (int f = 0; f < 3; f++)
    for (int s = 0; s < 2; s++)
      if (strcmp(got->dump[f][s], want->dump[f][s]) != 0)
        return fail(h, "its %s dump (%s plan) differs from one thread's", formats[f], s ? "sequential" : "default");
  if (got->file_size != want->file_size || memcmp(got->file, want->file, want->file_size) != 0)
    return fail(h, "its program file differs from one thread's (%zu bytes, not %zu)", got->file_size, want->file_size);
  if (memcmp(got->deps, want->deps, sizeof want->deps) != 0) return fail(h, "its plans' dependencies differ from one thread's");
  if (strcmp(got->warning, want->warning) != 0) return fail(h, "its warning is '%s', not '%s'", got->warning, want->warning);
  return true;
}

/* Records, eager runs (their first one makes the program's runtime: its default
 * plan, packed launches and bindings' sizes), and every read of the program. */
static void *use_program(hammer *h) {
  shared_program *sp = h->shared;
  bool ok = true;
  for (int it = 0; it < 12 && ok; it++) {
    /* each thread takes the steps in its own order */
    for (int step = 0; step < 3 && ok; step++) {
      switch ((step + h->index + it) % 3) {
        case 0: {
          crec_record_options o = CREC_RECORD_OPTIONS_INIT;
          o.schedule = (h->index + it) % 2 ? CREC_SCHEDULE_SEQUENTIAL : CREC_SCHEDULE_CONCURRENT;
          crec_exec *ex = NULL;
          crec_status s = crec_record(sp->p, &sp->bindings, &o, &ex);
          crec_exec_destroy(ex);
          /* the checks before the driver passed: the runtime was made or found */
          if (!sp->device) {
            ok = expect_status(h, "crec_record", s, CREC_ERR_NO_DEVICE);
            if (ok && strncmp(crec_last_error(), "crec_record: no CUDA", 20) != 0)
              ok = fail(h, "after crec_record, this thread's last error is '%s'", crec_last_error());
          } else {
            ok = expect_status(h, "crec_record", s, CREC_OK);
          }
          break;
        }
        case 1:
          if (sp->device) break; /* the bindings' addresses are made up */
          ok = EXPECT(h, crec_run_eager(sp->p, &sp->bindings, NULL), CREC_ERR_NO_DEVICE);
          if (ok && strncmp(crec_last_error(), "crec_run_eager: no CUDA", 23) != 0)
            ok = fail(h, "after crec_run_eager, this thread's last error is '%s'", crec_last_error());
          break;
        default: {
          views v;
          ok = views_read(h, sp->p, &v) && views_equal(h, &v, &sp->want);
          views_free(&v);
        }
      }
    }
  }
  return NULL;
}

Test(threads, one_program_is_recorded_run_planned_dumped_and_saved_from_every_thread) {
  int64_t live = crec_debug_live_objects();
  shared_program sp = {.p = threads_program(), .device = crec_device_available()};
  /* made-up addresses: only the checks before the driver see them (without a device) */
  crec_binding b[2] = {{(void *)(uintptr_t)0x100000, 4096}, {(void *)(uintptr_t)0x200000, 4096}};
  sp.bindings = (crec_bindings)CREC_BINDINGS_INIT;
  sp.bindings.buffers = b;
  sp.bindings.num_buffers = 2;
  hammer one = {0};
  cr_assert(views_read(&one, sp.p, &sp.want), "%s", one.error);
  hammer_all(use_program, &sp);
  /* the first record made the runtime, once: the program can no longer change */
  crec_buffer z;
  EXPECT_STATUS(crec_program_add_argument(sp.p, "z", 16, NULL, &z), CREC_ERR_INVALID_PROGRAM);
  views_free(&sp.want);
  crec_program_destroy(sp.p);
  /* a runtime or plan made twice by racing threads would be left over */
  cr_expect_eq(crec_debug_live_objects(), live, "%lld objects left over",
               (long long)(crec_debug_live_objects() - live));
}

/* ---- the last error ---- */

static void *own_errors(hammer *h) {
  pthread_barrier_t *round = h->shared;
  crec_program *p = NULL;
  if (!EXPECT(h, crec_program_create(&p), CREC_OK)) return NULL;
  crec_warning_info w;
  const char *slot = NULL;
  for (int it = 0; it < 200; it++) {
    /* every thread fails with a message of its own, then all read: each must find its own */
    size_t index = 1000000u * (size_t)(h->index + 1) + (size_t)it;
    char want[128];
    snprintf(want, sizeof want, "argument 'index': %zu,", index);
    crec_status got = crec_program_get_warning(p, index, &w);
    pthread_barrier_wait(round);
    /* (no early return: the others wait for this thread at the barriers) */
    if (got != CREC_ERR_OUT_OF_RANGE || !strstr(crec_last_error(), want))
      fail(h, "round %d: this thread's last error is '%s', not its own (%s)", it, crec_last_error(), want);
    /* one slot per thread, at the same place while the thread lives */
    if (slot && crec_last_error() != slot) fail(h, "its last error moved");
    slot = crec_last_error();
    pthread_barrier_wait(round);
  }
  crec_program_destroy(p);
  return NULL;
}

Test(threads, each_thread_reads_its_own_last_error) {
  /* the test's own thread fails first: nothing the workers do may change what it reads */
  EXPECT_STATUS(crec_program_get_warning(NULL, 0, NULL), CREC_ERR_NULL_POINTER);
  char mine[256];
  snprintf(mine, sizeof mine, "%s", crec_last_error());
  pthread_barrier_t round;
  cr_assert_eq(pthread_barrier_init(&round, NULL, THREADS), 0);
  hammer_all(own_errors, &round);
  pthread_barrier_destroy(&round);
  cr_assert_str_eq(crec_last_error(), mine, "the workers' failures changed the test thread's last error");
}

/* ---- fault injection ---- */

static void *create_programs(hammer *h) {
  atomic_int *failures = h->shared;
  for (int it = 0; it < 300; it++) {
    crec_program *p = NULL;
    crec_status s = crec_program_create(&p);
    if (s == CREC_ERR_OUT_OF_MEMORY) atomic_fetch_add(failures, 1);
    else if (s != CREC_OK) return fail(h, "crec_program_create: %s: %s", crec_status_name(s), crec_last_error()), NULL;
    crec_program_destroy(p);
  }
  return NULL;
}

static void *create_programs_rearming(hammer *h) {
  for (int it = 0; it < 300; it++) {
    crec_program *p = NULL;
    crec_status s = crec_program_create(&p);
    if (s != CREC_OK) return fail(h, "crec_program_create: %s: %s", crec_status_name(s), crec_last_error()), NULL;
    crec_program_destroy(p);
    if (h->index == 0) crec_debug_fail_after(CREC_FAULT_ALLOC, 0);
    if (h->index == 1) (void)crec_debug_count(CREC_FAULT_ALLOC);
  }
  return NULL;
}

Test(threads, fault_injection_counts_every_threads_allocations_and_fails_one) {
  int64_t live = crec_debug_live_objects();
  /* how many allocations one program's life makes */
  crec_debug_fail_after(CREC_FAULT_ALLOC, 0);
  crec_program *p = NULL;
  EXPECT_OK(crec_program_create(&p));
  crec_program_destroy(p);
  uint64_t per = crec_debug_count(CREC_FAULT_ALLOC);
  cr_assert_gt(per, 0);
  /* counted from every thread: none lost */
  crec_debug_fail_after(CREC_FAULT_ALLOC, 0);
  atomic_int failures = 0;
  hammer_all(create_programs, &failures);
  cr_expect_eq(crec_debug_count(CREC_FAULT_ALLOC), THREADS * 300 * per, "%llu allocations counted, %llu made",
               (unsigned long long)crec_debug_count(CREC_FAULT_ALLOC), (unsigned long long)(THREADS * 300 * per));
  cr_expect_eq(atomic_load(&failures), 0);
  /* armed for the middle of it all: exactly one allocation of one thread fails */
  crec_debug_fail_after(CREC_FAULT_ALLOC, THREADS * 300 * per / 2);
  hammer_all(create_programs, &failures);
  crec_debug_fail_after(CREC_FAULT_ALLOC, 0);
  cr_expect_eq(atomic_load(&failures), 1, "%d creates failed", atomic_load(&failures));
  /* re-armed disarmed by one thread, read by another, while all allocate: nothing fails */
  hammer_all(create_programs_rearming, NULL);
  cr_expect_eq(crec_debug_live_objects(), live, "%lld objects left over",
               (long long)(crec_debug_live_objects() - live));
}

/* ---- the custom-handler registry ---- */

static atomic_int freed, registered, unregistered;

static crec_status nothing(void *user, crec_custom_context *ctx, const crec_custom_call *call) {
  (void)user, (void)ctx, (void)call;
  return CREC_OK;
}

static void count_free(void *user) {
  (void)user;
  atomic_fetch_add(&freed, 1);
}

static void *use_registry(hammer *h) {
  pthread_barrier_t *round = h->shared;
  crec_custom_handler hd = CREC_CUSTOM_HANDLER_INIT;
  hd.create = hd.update = nothing;
  hd.user_free = count_free;
  char target[64];
  for (int it = 0; it < 100; it++) {
    /* one target all threads want: one registration wins */
    snprintf(target, sizeof target, "threads.shared.%d", it);
    crec_status s = crec_custom_register(target, &hd);
    if (s == CREC_OK) atomic_fetch_add(&registered, 1);
    else if (s != CREC_ERR_DUPLICATE_NAME) fail(h, "crec_custom_register(%s): %s", target, crec_last_error());
    /* a target of its own: registered, refused again, unregistered (no early
     * return: the others wait for this thread at the barriers) */
    snprintf(target, sizeof target, "threads.own.%d.%d", h->index, it);
    (void)(EXPECT(h, crec_custom_register(target, &hd), CREC_OK) &&
           EXPECT(h, crec_custom_register(target, &hd), CREC_ERR_DUPLICATE_NAME) &&
           EXPECT(h, crec_custom_unregister(target), CREC_OK) &&
           EXPECT(h, crec_custom_unregister(target), CREC_ERR_NOT_FOUND));
    /* once every thread tried to register it, the shared one: one unregistration wins */
    pthread_barrier_wait(round);
    snprintf(target, sizeof target, "threads.shared.%d", it);
    s = crec_custom_unregister(target);
    if (s == CREC_OK) atomic_fetch_add(&unregistered, 1);
    else if (s != CREC_ERR_NOT_FOUND) fail(h, "crec_custom_unregister(%s): %s", target, crec_last_error());
    pthread_barrier_wait(round);
  }
  return NULL;
}

Test(threads, custom_handlers_register_and_unregister_from_every_thread) {
  pthread_barrier_t round;
  cr_assert_eq(pthread_barrier_init(&round, NULL, THREADS), 0);
  hammer_all(use_registry, &round);
  pthread_barrier_destroy(&round);
  cr_expect_eq(atomic_load(&registered), 100, "%d shared targets registered", atomic_load(&registered));
  cr_expect_eq(atomic_load(&unregistered), 100, "%d shared targets unregistered", atomic_load(&unregistered));
  /* each handler's user_free once: the shared ones, and every thread's own */
  cr_expect_eq(atomic_load(&freed), 100 + THREADS * 100, "user_free ran %d times", atomic_load(&freed));
}

/* ---- feeds ---- */

enum { FEED_VALUES = 300 };

typedef struct feeds {
  crec_host_callback in, out;                /* the infeed's and the outfeed's host callbacks */
  atomic_int seen[2][THREADS][FEED_VALUES]; /* per side (infeed, outfeed): times each value was taken */
} feeds;

/* A value: its producer (thread index) and its number, and a check word. */
static void value_of(uint32_t v[4], int producer, int seq) {
  v[0] = 0xfeedu, v[1] = (uint32_t)producer, v[2] = (uint32_t)seq, v[3] = v[1] * 7919u + v[2];
}

/* Consumes FEED_VALUES values of side `side`, each whole, once, and in order per producer. */
static bool take_values(hammer *h, int side, const char *what, int (*take)(hammer *, uint32_t v[4])) {
  feeds *f = h->shared;
  int last[THREADS];
  for (int i = 0; i < THREADS; i++) last[i] = -1;
  for (int n = 0; n < FEED_VALUES; n++) {
    uint32_t v[4] = {0};
    if (!take(h, v)) return false;
    if (v[0] != 0xfeedu || v[1] >= THREADS || v[3] != v[1] * 7919u + v[2])
      return fail(h, "%s %d: a torn or made-up value (%x %u %u %u)", what, n, v[0], v[1], v[2], v[3]);
    if (v[2] >= FEED_VALUES || (int)v[2] <= last[v[1]])
      return fail(h, "%s %d: value %u of thread %u after its value %d", what, n, v[2], v[1], last[v[1]]);
    last[v[1]] = (int)v[2];
    if (atomic_fetch_add(&f->seen[side][v[1]][v[2]], 1) != 0)
      return fail(h, "%s %d: value %u of thread %u was taken twice", what, n, v[2], v[1]);
  }
  return true;
}

static int take_from_infeed(hammer *h, uint32_t v[4]) {
  feeds *f = h->shared;
  void *addr[1] = {v};
  f->in.fn_buffers(f->in.user, addr, 1);
  return v[0] ? 1 : fail(h, "the infeed's callback found no value (%s)", "it copies zeros after its deadline");
}

static int take_from_outfeed(hammer *h, uint32_t v[4]) {
  return EXPECT(h, crec_outfeed_pop("threads.out", v, 16, 10000), CREC_OK);
}

/* Roles by thread index % 4: push to the infeed's queue; run the infeed's
 * callback (a host node of some execution); run the outfeed's callback; pop
 * the outfeed's queue. Two threads each: each consumer takes what the two
 * producers of its side made, in any interleaving but in order per producer. */
static void *use_feeds(hammer *h) {
  feeds *f = h->shared;
  switch (h->index % 4) {
    case 0:
      for (int n = 0; n < FEED_VALUES; n++) {
        uint32_t v[4];
        value_of(v, h->index, n);
        if (!EXPECT(h, crec_infeed_push("threads.in", v, sizeof v, 10000), CREC_OK)) break;
      }
      break;
    case 1: take_values(h, 0, "infeed value", take_from_infeed); break;
    case 2:
      for (int n = 0; n < FEED_VALUES; n++) {
        uint32_t v[4];
        value_of(v, h->index, n);
        void *addr[1] = {v};
        f->out.fn_buffers(f->out.user, addr, 1);
      }
      break;
    default: take_values(h, 1, "outfeed value", take_from_outfeed);
  }
  return NULL;
}

Test(threads, feeds_carry_every_value_once_in_order_between_threads) {
  crec_kernel k;
  crec_program *p = crec_test_program(&k);
  crec_buffer x;
  EXPECT_OK(crec_program_add_argument(p, "x", 16, NULL, &x));
  crec_feed fi = CREC_FEED_INIT, fo = CREC_FEED_INIT;
  fi.queue = "threads.in", fo.queue = "threads.out";
  fi.timeout_ms = fo.timeout_ms = 10000;
  crec_command c;
  EXPECT_OK(crec_program_add_infeed(p, crec_program_body(p), "in", &fi, crec_range_whole(x), &c));
  EXPECT_OK(crec_program_add_outfeed(p, crec_program_body(p), "out", &fo, crec_range_whole(x), &c));
  static feeds f;
  f.in = (crec_host_callback)CREC_HOST_CALLBACK_INIT;
  f.out = (crec_host_callback)CREC_HOST_CALLBACK_INIT;
  EXPECT_OK(crec_command_get_host_callback(p, crec_program_command(p, 0), &f.in));
  EXPECT_OK(crec_command_get_host_callback(p, crec_program_command(p, 3), &f.out));
  cr_assert(f.in.fn_buffers && f.out.fn_buffers);
  /* small queues: producers wait for room, consumers for values */
  EXPECT_OK(crec_feed_set_capacity("threads.in", 3));
  EXPECT_OK(crec_feed_set_capacity("threads.out", 3));
  hammer_all(use_feeds, &f);
  /* what the producers made, each taken once: by side, the threads that made values there */
  for (int side = 0; side < 2; side++)
    for (int t = side * 2; t < THREADS; t += 4)
      for (int n = 0; n < FEED_VALUES; n++)
        cr_expect_eq(atomic_load(&f.seen[side][t][n]), 1, "%s value %d of thread %d taken %d times",
                     side ? "outfeed" : "infeed", n, t, atomic_load(&f.seen[side][t][n]));
  size_t queued = 1;
  EXPECT_OK(crec_feed_check("threads.in", &queued));
  cr_expect_eq(queued, 0, "%zu values left on the infeed's queue", queued);
  EXPECT_OK(crec_feed_check("threads.out", &queued));
  cr_expect_eq(queued, 0, "%zu values left on the outfeed's queue", queued);
  crec_program_destroy(p);
}

/* ---- the lowering caches ---- */

/* A program whose one kernel adds `k`: texts of different k compile different modules. */
static char *lowering_text(int k) {
  static const char fmt[] =
      "module attributes {gpu.container_module} {\n"
      "  gpu.module @kernels {\n"
      "    gpu.func @add(%%x: memref<256xf32>) kernel {\n"
      "      %%i = gpu.global_id x\n"
      "      %%v = memref.load %%x[%%i] : memref<256xf32>\n"
      "      %%k = arith.constant %d.0 : f32\n"
      "      %%r = arith.addf %%v, %%k : f32\n"
      "      memref.store %%r, %%x[%%i] : memref<256xf32>\n"
      "      gpu.return\n"
      "    }\n"
      "  }\n"
      "  func.func @main(%%x: memref<256xf32> {crec.name = \"x\"}) {\n"
      "    %%c1 = arith.constant 1 : index\n"
      "    %%c2 = arith.constant 2 : index\n"
      "    %%c128 = arith.constant 128 : index\n"
      "    gpu.launch_func @kernels::@add blocks in (%%c2, %%c1, %%c1) threads in (%%c128, %%c1, %%c1)\n"
      "        args(%%x : memref<256xf32>)\n"
      "    return\n"
      "  }\n"
      "}\n";
  char *text = malloc(sizeof fmt + 16);
  cr_assert_not_null(text);
  snprintf(text, sizeof fmt + 16, fmt, k);
  return text;
}

typedef struct lowerings {
  char *texts[2];     /* k = 1 (every thread), k = 2 (odd threads) */
  void *files[2][2];  /* per text, PTX and cubin: the program file one thread's lowering gave */
  size_t sizes[2][2];
  bool cubin;         /* nvJitLink is there */
} lowerings;

static bool lower_and_compare(hammer *h, lowerings *l, int text, int cubin) {
  crec_lower_options o = CREC_LOWER_OPTIONS_INIT;
  o.chip = "sm_90";
  o.cubin = cubin;
  crec_program *p = NULL;
  const char *t = l->texts[text];
  bool ok = EXPECT(h, crec_lower_mlir_string(t, strlen(t), &o, &p), CREC_OK);
  void *file = NULL;
  size_t size = 0;
  ok = ok && EXPECT(h, crec_program_serialize(p, &file, &size), CREC_OK);
  if (ok && (size != l->sizes[text][cubin] || memcmp(file, l->files[text][cubin], size) != 0))
    ok = fail(h, "lowering text %d (%s) gave another program than one thread's", text, cubin ? "cubin" : "PTX");
  crec_free(file);
  crec_program_destroy(p);
  return ok;
}

static void *lower_texts(hammer *h) {
  lowerings *l = h->shared;
  bool ok = true;
  for (int it = 0; it < 3 && ok; it++) {
    ok = lower_and_compare(h, l, h->index % 2 && it == 1, l->cubin && (h->index + it) % 4 == 0);
    /* one thread empties the in-memory cache as the others use it */
    if (h->index == 0) crec_lower_cache_clear();
    crec_lower_disk_cache_info info = CREC_LOWER_DISK_CACHE_INFO_INIT;
    ok = ok && EXPECT(h, crec_lower_disk_cache_get_info(&info), CREC_OK);
  }
  return NULL;
}

Test(threads, lowerings_of_the_same_texts_at_once_share_the_caches, .init = crec_test_require_mlir) {
  /* the persistent cache in a directory of this test's own */
  char dir[] = "/tmp/crec-threads-XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  setenv("CREC_CACHE_DIR", dir, 1);
  unsetenv("CREC_CACHE");
  lowerings l = {{lowering_text(1), lowering_text(2)}, {{NULL}}, {{0}}, true};
  /* what one thread makes of each text, PTX and cubin (nvJitLink from CUDA's toolkit) */
  for (int t = 0; t < 2; t++)
    for (int c = 0; c < 2 && l.cubin; c++) {
      crec_lower_options o = CREC_LOWER_OPTIONS_INIT;
      o.chip = "sm_90";
      o.cubin = c;
      crec_program *p = NULL;
      crec_status s = crec_lower_mlir_string(l.texts[t], strlen(l.texts[t]), &o, &p);
      if (c && s == CREC_ERR_UNSUPPORTED) {
        cr_log_info("no cubin lowerings: %s", crec_last_error());
        l.cubin = false;
        break;
      }
      cr_assert_eq(s, CREC_OK, "%s", crec_last_error());
      EXPECT_OK(crec_program_serialize(p, &l.files[t][c], &l.sizes[t][c]));
      crec_program_destroy(p);
    }
  crec_lower_cache_stats before = CREC_LOWER_CACHE_STATS_INIT, after = CREC_LOWER_CACHE_STATS_INIT;
  EXPECT_OK(crec_lower_cache_get_stats(&before));
  hammer_all(lower_texts, &l);
  EXPECT_OK(crec_lower_cache_get_stats(&after));
  /* every lowering looked the disk cache up once: found, or lowered and (most often) written */
  uint64_t lookups = (after.disk_hits - before.disk_hits) + (after.disk_misses - before.disk_misses);
  cr_expect_eq(lookups, THREADS * 3, "%llu lookups in the disk cache for %d lowerings", (unsigned long long)lookups,
               THREADS * 3);
  /* each lowering the disk cache missed compiled its one module, or found it in memory */
  uint64_t compiled = (after.compilations - before.compilations) + (after.hits - before.hits);
  cr_expect_eq(compiled, after.disk_misses - before.disk_misses, "%llu module compilations or hits for %llu misses",
               (unsigned long long)compiled, (unsigned long long)(after.disk_misses - before.disk_misses));
  uint64_t removed = 0;
  EXPECT_OK(crec_lower_disk_cache_clear(&removed));
  cr_expect_geq(removed, 2, "the texts' entries were written (%llu)", (unsigned long long)removed);
  rmdir(dir);
  for (int t = 0; t < 2; t++) {
    free(l.texts[t]);
    for (int c = 0; c < 2; c++) crec_free(l.files[t][c]);
  }
}

/* ---- libraries opened at run time ---- */

enum { LIBRARIES = 6 };

typedef struct library_answers {
  crec_status status[THREADS][LIBRARIES];
  char message[THREADS][LIBRARIES][300];
} library_answers;

static void *check_libraries(hammer *h) {
  library_answers *a = h->shared;
  for (int it = 0; it < 20; it++)
    for (int k = 0; k < LIBRARIES; k++) {
      int lib = (k + h->index + it) % LIBRARIES; /* each thread in its own order */
      crec_status s = crec_library_check((crec_library)lib);
      char message[300];
      snprintf(message, sizeof message, "%s", s ? crec_last_error() : "");
      if (it == 0) {
        a->status[h->index][lib] = s;
        memcpy(a->message[h->index][lib], message, sizeof message);
      } else if (s != a->status[h->index][lib] || strcmp(message, a->message[h->index][lib]) != 0) {
        return fail(h, "library %d: %s (%s), then %s (%s)", lib, crec_status_name(a->status[h->index][lib]),
                    a->message[h->index][lib], crec_status_name(s), message),
               NULL;
      }
    }
  return NULL;
}

Test(threads, library_checks_from_every_thread_give_one_answer) {
  static library_answers a;
  hammer_all(check_libraries, &a);
  static const char *const names[LIBRARIES] = {"cuBLASLt", "NCCL", "cuFFT", "cuSOLVER", "cuDNN", "CUPTI"};
  for (int lib = 0; lib < LIBRARIES; lib++) {
    for (int i = 1; i < THREADS; i++) {
      cr_expect_eq(a.status[i][lib], a.status[0][lib], "%s: thread %d got %s, thread 0 %s", names[lib], i,
                   crec_status_name(a.status[i][lib]), crec_status_name(a.status[0][lib]));
      cr_expect_str_eq(a.message[i][lib], a.message[0][lib], "%s", names[lib]);
    }
    /* the answer is the process's: this thread gets it too */
    crec_status s = crec_library_check((crec_library)lib);
    cr_expect_eq(s, a.status[0][lib], "%s", names[lib]);
    cr_expect(s == CREC_OK || s == CREC_ERR_UNSUPPORTED, "%s: %s", names[lib], crec_status_name(s));
    if (s) cr_expect(strstr(crec_last_error(), names[lib]) != NULL, "%s: %s", names[lib], crec_last_error());
  }
}
