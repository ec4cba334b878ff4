/* crec_multi_tests: the multi-GPU tests, one process per rank.
 *
 *   tools/crec-launch -n 2 --timeout 600 -- build/tests/crec_multi_tests [--iterations N] [--only TEXT]
 *
 * (under mpirun: docs/multi-gpu.md). Every rank runs the same tests in the same
 * order over one communicator of all ranks, and the ranks agree before each test
 * (crec_comm_agree), so a rank that fails stops the others with its message
 * instead of leaving them waiting. Each rank prints one line per test ("ok",
 * "skip" with the reason, "FAIL" with the rank and the cause) and exits 0 when
 * nothing failed. Every wait for other ranks is bounded (crec_comm_synchronize),
 * and a watchdog ends a test that runs past its budget. Without a CUDA device
 * every test skips, after the ranks shared the NCCL unique id (its hash is
 * printed) when NCCL loads: CPU-only CI runs the same program.
 *
 * Not a Criterion suite: Criterion runs each test in a process of its own, in
 * parallel, while NCCL needs every rank to issue the same collectives in the
 * same order on a communicator made once per process. */
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "crec/crec.h"
#include "replay_internal.h"
#include "ranks.h"

extern const unsigned char crec_test_kernels_ptx[];
extern const size_t crec_test_kernels_ptx_size;

static mr_world W;
static crec_comm *comm;
static crec_stream stream;
static const crec__cu *cu;
static int iterations = 1000;
static int wait_ms;
static char test_name[160] = "setup";
static atomic_long test_started; /* CLOCK_MONOTONIC seconds; 0 between tests */
static int budget_s = 300;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- reporting ---- */

/* Fails the test: prints why, aborts the communicator so that the other ranks'
 * waits fail instead of spinning, and exits. */
static _Noreturn void fail_at(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static _Noreturn void fail_at(const char *file, int line, const char *fmt, ...) {
  printf("FAIL %s: rank %d of %d (%s:%d): ", test_name, W.rank, W.size, file, line);
  va_list ap;
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  printf("\n");
  fflush(stdout);
  if (comm && !crec_comm_aborted(comm)) crec_comm_abort(comm);
  _exit(1); /* no exit handlers: nothing may wait on the other ranks now */
}
#define CHECK(cond, ...)                                 \
  do {                                                   \
    if (!(cond)) fail_at(__FILE__, __LINE__, __VA_ARGS__); \
  } while (0)
#define OK(call)                                                                                              \
  do {                                                                                                        \
    crec_status s_ = (call);                                                                                  \
    if (s_ != CREC_OK)                                                                                        \
      fail_at(__FILE__, __LINE__, "%s returned %s: %s", #call, crec_status_name(s_), crec_last_error());      \
  } while (0)
/* Ends the current test as skipped (every rank decides the same way). */
#define SKIP(...)                      \
  do {                                 \
    printf("skip %s: ", test_name);    \
    printf(__VA_ARGS__);               \
    printf("\n");                      \
    return 1;                          \
  } while (0)

static void *watchdog(void *arg) {
  (void)arg;
  for (;;) {
    sleep(1);
    long t = atomic_load(&test_started);
    if (t && now_s() - (double)t > budget_s) {
      printf("FAIL %s: rank %d of %d: still running after %d s (CREC_TEST_BUDGET_S): a hang; exiting\n", test_name,
             W.rank, W.size, budget_s);
      fflush(stdout);
      _exit(124);
    }
  }
  return NULL;
}

/* ---- device helpers ---- */

static void use_device(void) {
  CUcontext ctx;
  OK(crec__use_device(cu, W.device, "crec_multi_tests", &ctx));
  CHECK(cu->cuCtxSetCurrent(ctx) == CUDA_SUCCESS, "cuCtxSetCurrent failed");
}

static void *dev_alloc(uint64_t size) {
  void *p = NULL;
  OK(crec_device_alloc(W.device, size, &p));
  return p;
}

/* Waits for the stream, bounded: a peer that never joins fails the test. */
static void wait_stream(const char *what) {
  crec_status s = crec_comm_synchronize(comm, stream, wait_ms);
  CHECK(s == CREC_OK, "waiting for %s: %s: %s", what, crec_status_name(s), crec_last_error());
}

static crec_module ptx_module(crec_program *p) {
  crec_module m;
  OK(crec_program_add_module(p, "test_kernels", CREC_IMAGE_PTX, crec_test_kernels_ptx, crec_test_kernels_ptx_size, &m));
  return m;
}

/* dst[i] = src[i] * 3 + c over `n` u32 elements (the test kernel t_scale). */
static crec_command scale(crec_program *p, crec_region r, crec_kernel k, crec_range dst, crec_range src, uint32_t c,
                          uint32_t n) {
  crec_arg args[] = {crec_arg_buffer(dst, CREC_ACCESS_WRITE), crec_arg_buffer(src, CREC_ACCESS_READ),
                     crec_arg_i32((int32_t)c), crec_arg_i32((int32_t)n)};
  crec_launch l = CREC_LAUNCH_INIT;
  l.kernel = k;
  l.grid[0] = crec_dim_of((n + 127) / 128);
  l.block[0] = crec_dim_of(128);
  l.args = args;
  l.num_args = 4;
  crec_command cmd;
  OK(crec_program_add_launch(p, r, NULL, &l, &cmd));
  return cmd;
}

static crec_record_options record_options(void) {
  crec_record_options o = CREC_RECORD_OPTIONS_INIT;
  o.device = W.device;
  return o;
}

/* ---- 1. kernels are loaded at record ---- */

static int test_functions_are_loaded_at_record(void) {
  if (!cu->cuFuncIsLoaded) SKIP("the CUDA driver has no cuFuncIsLoaded (CUDA 12.4 or newer)");
  crec_program *p;
  OK(crec_program_create(&p));
  crec_module m = ptx_module(p);
  crec_kernel k_scale, k_mix, k_countdown;
  OK(crec_program_add_kernel(p, m, "t_scale", NULL, &k_scale));
  OK(crec_program_add_kernel(p, m, "t_mix", NULL, &k_mix)); /* never launched: loaded all the same */
  OK(crec_program_add_kernel(p, m, "t_countdown", NULL, &k_countdown));
  crec_buffer x, y, state;
  OK(crec_program_add_argument(p, "x", 4096, NULL, &x));
  OK(crec_program_add_argument(p, "y", 4096, NULL, &y));
  OK(crec_program_add_argument(p, "state", 16, NULL, &state));
  crec_region body = crec_program_body(p), cond, loop;
  scale(p, body, k_scale, crec_range_whole(y), crec_range_whole(x), 1, 1024);
  crec_command w, c;
  OK(crec_program_add_while(p, body, "loop", crec_range_of(state, 8, 1), &w, &cond, &loop));
  crec_arg cd[] = {crec_arg_buffer(crec_range_of(state, 0, 4), CREC_ACCESS_READ_WRITE),
                   crec_arg_buffer(crec_range_of(state, 8, 1), CREC_ACCESS_WRITE)};
  crec_launch l = CREC_LAUNCH_INIT;
  l.kernel = k_countdown;
  l.args = cd;
  l.num_args = 2;
  OK(crec_program_add_launch(p, cond, NULL, &l, &c));
  void *mem[3] = {dev_alloc(4096), dev_alloc(4096), dev_alloc(16)};
  crec_binding bd[3] = {{mem[0], 4096}, {mem[1], 4096}, {mem[2], 16}};
  crec_bindings b = CREC_BINDINGS_INIT;
  b.buffers = bd;
  b.num_buffers = 3;
  crec_record_options o = record_options();
  crec_exec *e;
  OK(crec_record(p, &b, &o, &e));
  static const char *const names[] = {"t_scale", "t_mix", "t_countdown"};
  for (size_t i = 0; i < 3; i++) {
    CUfunctionLoadingState st = CU_FUNCTION_LOADING_STATE_UNLOADED;
    CHECK(cu->cuFuncIsLoaded(&st, e->state->functions[i]) == CUDA_SUCCESS, "cuFuncIsLoaded failed");
    CHECK(st == CU_FUNCTION_LOADING_STATE_LOADED, "kernel '%s' is not loaded on device %d after record (state %d)",
          names[i], W.device, (int)st);
  }
  CUfunctionLoadingState st = CU_FUNCTION_LOADING_STATE_UNLOADED;
  CHECK(cu->cuFuncIsLoaded(&st, e->state->set_while) == CUDA_SUCCESS && st == CU_FUNCTION_LOADING_STATE_LOADED,
        "crec's set-condition kernel is not loaded after record (state %d)", (int)st);
  /* is lazy loading in effect at all? (otherwise the check above proves less) */
  CUmodule fresh;
  CUfunction f;
  if (cu->cuModuleLoadData(&fresh, crec_test_kernels_ptx) == CUDA_SUCCESS) {
    if (cu->cuModuleGetFunction(&f, fresh, "t_inc") == CUDA_SUCCESS && cu->cuFuncIsLoaded(&st, f) == CUDA_SUCCESS)
      printf("note: a function of a module loaded by hand is %s until used (CUDA_MODULE_LOADING=%s)\n",
             st == CU_FUNCTION_LOADING_STATE_LOADED ? "loaded (lazy loading is off)" : "not loaded",
             getenv("CUDA_MODULE_LOADING") ? getenv("CUDA_MODULE_LOADING") : "default");
    cu->cuModuleUnload(fresh);
  }
  crec_exec_destroy(e);
  crec_program_destroy(p);
  for (int i = 0; i < 3; i++) crec_device_free(mem[i]);
  return 0;
}

/* ---- 2. every collective and async start/done pair, replayed against eager ---- */

typedef struct ccase {
  const char *name;
  crec_collective_kind kind;
  crec_element type;
  crec_reduction red;
  uint64_t count; /* elements: of send (all_reduce, all_gather, permute), of recv (reduce_scatter), per block (all_to_all) */
  int in_place, async, one_pair;
} ccase;

static const ccase cases[] = {
    {"all_reduce sum i32", CREC_COLLECTIVE_ALL_REDUCE, CREC_ELEMENT_I32, CREC_REDUCTION_SUM, 1024, 0, 0, 0},
    {"all_reduce prod i32", CREC_COLLECTIVE_ALL_REDUCE, CREC_ELEMENT_I32, CREC_REDUCTION_PROD, 1024, 0, 0, 0},
    {"all_reduce min i64", CREC_COLLECTIVE_ALL_REDUCE, CREC_ELEMENT_I64, CREC_REDUCTION_MIN, 512, 0, 0, 0},
    {"all_reduce max f32", CREC_COLLECTIVE_ALL_REDUCE, CREC_ELEMENT_F32, CREC_REDUCTION_MAX, 1024, 0, 0, 0},
    {"all_reduce sum bf16", CREC_COLLECTIVE_ALL_REDUCE, CREC_ELEMENT_BF16, CREC_REDUCTION_SUM, 2048, 0, 0, 0},
    {"all_reduce sum f16", CREC_COLLECTIVE_ALL_REDUCE, CREC_ELEMENT_F16, CREC_REDUCTION_SUM, 2048, 0, 0, 0},
    {"all_reduce sum i32 in place", CREC_COLLECTIVE_ALL_REDUCE, CREC_ELEMENT_I32, CREC_REDUCTION_SUM, 1024, 1, 0, 0},
    {"all_reduce sum i32 of 1 MiB", CREC_COLLECTIVE_ALL_REDUCE, CREC_ELEMENT_I32, CREC_REDUCTION_SUM, 262144, 0, 0, 0},
    {"all_gather bytes", CREC_COLLECTIVE_ALL_GATHER, CREC_ELEMENT_BYTES, CREC_REDUCTION_SUM, 4096, 0, 0, 0},
    {"reduce_scatter sum i32", CREC_COLLECTIVE_REDUCE_SCATTER, CREC_ELEMENT_I32, CREC_REDUCTION_SUM, 1024, 0, 0, 0},
    {"reduce_scatter sum f32 of 256 KiB a rank", CREC_COLLECTIVE_REDUCE_SCATTER, CREC_ELEMENT_F32, CREC_REDUCTION_SUM,
     65536, 0, 0, 0},
    {"all_to_all bytes", CREC_COLLECTIVE_ALL_TO_ALL, CREC_ELEMENT_BYTES, CREC_REDUCTION_SUM, 1024, 0, 0, 0},
    {"collective_permute ring i32", CREC_COLLECTIVE_PERMUTE, CREC_ELEMENT_I32, CREC_REDUCTION_SUM, 1024, 0, 0, 0},
    {"collective_permute 0 to the last rank i32", CREC_COLLECTIVE_PERMUTE, CREC_ELEMENT_I32, CREC_REDUCTION_SUM, 1024, 0,
     0, 1},
    {"async all_reduce sum i32", CREC_COLLECTIVE_ALL_REDUCE, CREC_ELEMENT_I32, CREC_REDUCTION_SUM, 1024, 0, 1, 0},
    {"async all_reduce max i32 in place", CREC_COLLECTIVE_ALL_REDUCE, CREC_ELEMENT_I32, CREC_REDUCTION_MAX, 1024, 1, 1, 0},
    {"async all_gather bytes", CREC_COLLECTIVE_ALL_GATHER, CREC_ELEMENT_BYTES, CREC_REDUCTION_SUM, 4096, 0, 1, 0},
    {"async reduce_scatter min i32", CREC_COLLECTIVE_REDUCE_SCATTER, CREC_ELEMENT_I32, CREC_REDUCTION_MIN, 1024, 0, 1, 0},
    {"async all_to_all bytes", CREC_COLLECTIVE_ALL_TO_ALL, CREC_ELEMENT_BYTES, CREC_REDUCTION_SUM, 1024, 0, 1, 0},
    {"async collective_permute ring i32", CREC_COLLECTIVE_PERMUTE, CREC_ELEMENT_I32, CREC_REDUCTION_SUM, 1024, 0, 1, 0},
};
enum { NCASES = sizeof cases / sizeof *cases, SIDE = 1024 /* u32 elements of the overlapped launch */ };

static void case_bytes(const ccase *c, int n, uint64_t *send, uint64_t *recv) {
  uint64_t b = c->count * crec_element_size(c->type);
  *send = *recv = b;
  if (c->kind == CREC_COLLECTIVE_ALL_GATHER) *recv = b * (uint64_t)n;
  if (c->kind == CREC_COLLECTIVE_REDUCE_SCATTER) *send = b * (uint64_t)n;
  if (c->kind == CREC_COLLECTIVE_ALL_TO_ALL) *send = *recv = b * (uint64_t)n;
}

/* One argument of the collectives program, placed in a slab per buffer set. */
enum role { SEND, RECV, INOUT, SIDE_IN, SIDE_OUT, CONSUMER };
typedef struct slot {
  enum role role;
  int c;          /* case, -1 for the shared side input */
  crec_element type;
  uint64_t offset, size;
} slot;

typedef struct cprog {
  crec_program *p;
  slot slots[4 * NCASES + 1]; /* send, recv, and for async: the overlapped output, the reader */
  int nslots;
  int send_slot[NCASES], recv_slot[NCASES], side_slot[NCASES], cons_slot[NCASES];
  uint64_t slab; /* bytes */
} cprog;

static int add_slot(cprog *cp, enum role role, int c, crec_element type, uint64_t size, crec_buffer *out) {
  char name[64];
  static const char *const roles[] = {"send", "recv", "buf", "side_in", "side_out", "consumer"};
  snprintf(name, sizeof name, "%s%d", roles[role], c);
  crec_argument_options o = CREC_ARGUMENT_OPTIONS_INIT;
  o.alignment = 256;
  OK(crec_program_add_argument(cp->p, name, size, &o, out));
  slot *s = &cp->slots[cp->nslots];
  s->role = role;
  s->c = c;
  s->type = type;
  s->offset = cp->slab;
  s->size = size;
  cp->slab += (size + 255) & ~(uint64_t)255;
  return cp->nslots++;
}

static cprog build_collectives(int n) {
  cprog cp;
  memset(&cp, 0, sizeof cp);
  OK(crec_program_create(&cp.p));
  crec_kernel k;
  OK(crec_program_add_kernel(cp.p, ptx_module(cp.p), "t_scale", NULL, &k));
  crec_comm_slot world;
  OK(crec_program_add_communicator(cp.p, "world", n, &world));
  crec_region body = crec_program_body(cp.p);
  crec_buffer side_in;
  add_slot(&cp, SIDE_IN, -1, CREC_ELEMENT_I32, SIDE * 4, &side_in);
  int32_t *pairs = malloc(2 * (size_t)n * sizeof *pairs);
  CHECK(pairs, "out of memory");
  for (int c = 0; c < NCASES; c++) {
    const ccase *cs = &cases[c];
    uint64_t sb, rb;
    case_bytes(cs, n, &sb, &rb);
    crec_buffer send, recv;
    if (cs->in_place) {
      cp.send_slot[c] = cp.recv_slot[c] = add_slot(&cp, INOUT, c, cs->type, rb, &send);
      recv = send;
    } else {
      cp.send_slot[c] = add_slot(&cp, SEND, c, cs->type, sb, &send);
      cp.recv_slot[c] = add_slot(&cp, RECV, c, cs->type, rb, &recv);
    }
    crec_collective d = CREC_COLLECTIVE_INIT;
    d.kind = cs->kind;
    d.communicator = world;
    d.type = cs->type;
    d.reduction = cs->red;
    d.send = crec_range_whole(send);
    d.recv = crec_range_whole(recv);
    d.async = cs->async;
    if (cs->kind == CREC_COLLECTIVE_PERMUTE) {
      if (cs->one_pair) {
        pairs[0] = 0, pairs[1] = n - 1;
        d.num_pairs = 1;
      } else {
        for (int q = 0; q < n; q++) pairs[2 * q] = q, pairs[2 * q + 1] = (q + 1) % n;
        d.num_pairs = (size_t)n;
      }
      d.pairs = pairs;
    }
    crec_command start, done;
    OK(crec_program_add_collective(cp.p, body, cs->name, &d, &start));
    cp.side_slot[c] = cp.cons_slot[c] = -1;
    if (!cs->async) continue;
    /* work that overlaps the collective, then its done, then a reader of recv */
    crec_buffer side_out, cons;
    cp.side_slot[c] = add_slot(&cp, SIDE_OUT, c, CREC_ELEMENT_I32, SIDE * 4, &side_out);
    scale(cp.p, body, k, crec_range_whole(side_out), crec_range_whole(side_in), (uint32_t)c, SIDE);
    OK(crec_program_add_collective_done(cp.p, body, NULL, start, &done));
    cp.cons_slot[c] = add_slot(&cp, CONSUMER, c, CREC_ELEMENT_I32, rb, &cons);
    scale(cp.p, body, k, crec_range_whole(cons), crec_range_whole(recv), 1, (uint32_t)(rb / 4));
  }
  free(pairs);
  return cp;
}

/* Inputs: small integers for the float types (every sum is exact, so the
 * expected bytes do not depend on NCCL's order), random bits otherwise. */
static uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

static uint16_t half_of_int(int v) { /* exact for |v| <= 2048 */
  if (v == 0) return 0;
  uint16_t sign = v < 0 ? 0x8000 : 0;
  unsigned a = (unsigned)(v < 0 ? -v : v);
  int e = 0;
  while ((a >> (e + 1)) != 0) e++;
  unsigned mant = (a << 10 >> e) & 0x3ff;
  return (uint16_t)(sign | (unsigned)(e + 15) << 10 | mant);
}

static float float_of_half(uint16_t h) {
  int e = (h >> 10) & 0x1f;
  float m = (float)(h & 0x3ff);
  float v = e == 0 ? ldexpf(m, -24) : ldexpf(m + 1024.0f, e - 25);
  return h & 0x8000 ? -v : v;
}

static uint16_t bf16_of_float(float v) { /* exact for the small integers used here */
  uint32_t b;
  memcpy(&b, &v, 4);
  return (uint16_t)(b >> 16);
}

static float float_of_bf16(uint16_t h) {
  uint32_t b = (uint32_t)h << 16;
  float v;
  memcpy(&v, &b, 4);
  return v;
}

static void gen(crec_element t, uint8_t *out, uint64_t bytes, uint64_t seed) {
  uint64_t x = mix64(seed);
  size_t es = t == CREC_ELEMENT_BYTES ? 8 : crec_element_size(t);
  for (uint64_t i = 0; i < bytes; i += es) {
    x = mix64(x);
    int small = (int)(x % 9) - 4;
    if (t == CREC_ELEMENT_F32) {
      float v = (float)small;
      memcpy(out + i, &v, 4);
    } else if (t == CREC_ELEMENT_BF16) {
      uint16_t h = bf16_of_float((float)small);
      memcpy(out + i, &h, 2);
    } else if (t == CREC_ELEMENT_F16) {
      uint16_t h = half_of_int(small);
      memcpy(out + i, &h, 2);
    } else {
      memcpy(out + i, &x, bytes - i < es ? (size_t)(bytes - i) : es);
    }
  }
}

static uint64_t input_seed(int it, int rank, int slot_index) {
  return mix64(((uint64_t)it << 40) ^ ((uint64_t)rank << 20) ^ (uint64_t)slot_index);
}

/* acc = acc (op) x, element by element, for `count` elements of type `t`. */
static void reduce_into(crec_element t, crec_reduction op, uint8_t *acc, const uint8_t *x, uint64_t count) {
  for (uint64_t i = 0; i < count; i++) {
    if (t == CREC_ELEMENT_I32) {
      int32_t a, b;
      memcpy(&a, acc + 4 * i, 4), memcpy(&b, x + 4 * i, 4);
      uint32_t ua = (uint32_t)a, ub = (uint32_t)b;
      int32_t r = op == CREC_REDUCTION_SUM ? (int32_t)(ua + ub) : op == CREC_REDUCTION_PROD ? (int32_t)(ua * ub)
                  : op == CREC_REDUCTION_MIN ? (a < b ? a : b) : (a > b ? a : b);
      memcpy(acc + 4 * i, &r, 4);
    } else if (t == CREC_ELEMENT_I64) {
      int64_t a, b;
      memcpy(&a, acc + 8 * i, 8), memcpy(&b, x + 8 * i, 8);
      int64_t r = op == CREC_REDUCTION_SUM ? (int64_t)((uint64_t)a + (uint64_t)b)
                  : op == CREC_REDUCTION_PROD ? (int64_t)((uint64_t)a * (uint64_t)b)
                  : op == CREC_REDUCTION_MIN ? (a < b ? a : b) : (a > b ? a : b);
      memcpy(acc + 8 * i, &r, 8);
    } else {
      size_t es = crec_element_size(t);
      float a, b;
      if (t == CREC_ELEMENT_F32) {
        memcpy(&a, acc + 4 * i, 4), memcpy(&b, x + 4 * i, 4);
      } else {
        uint16_t ha, hb;
        memcpy(&ha, acc + es * i, 2), memcpy(&hb, x + es * i, 2);
        a = t == CREC_ELEMENT_BF16 ? float_of_bf16(ha) : float_of_half(ha);
        b = t == CREC_ELEMENT_BF16 ? float_of_bf16(hb) : float_of_half(hb);
      }
      float r = op == CREC_REDUCTION_SUM ? a + b : op == CREC_REDUCTION_PROD ? a * b
                : op == CREC_REDUCTION_MIN ? fminf(a, b) : fmaxf(a, b);
      if (t == CREC_ELEMENT_F32) {
        memcpy(acc + 4 * i, &r, 4);
      } else {
        uint16_t h = t == CREC_ELEMENT_BF16 ? bf16_of_float(r) : half_of_int((int)r);
        memcpy(acc + es * i, &h, 2);
      }
    }
  }
}

/* What recv of case `c` must hold on rank `me` at iteration `it`, from every rank's inputs. */
static void expected_recv(const cprog *cp, int c, int it, int n, int me, uint8_t *want) {
  const ccase *cs = &cases[c];
  const slot *ss = &cp->slots[cp->send_slot[c]];
  uint64_t sb, rb;
  case_bytes(cs, n, &sb, &rb);
  uint8_t *in = malloc(sb);
  CHECK(in, "out of memory");
  uint64_t es = crec_element_size(cs->type);
  switch (cs->kind) {
    case CREC_COLLECTIVE_ALL_REDUCE:
    case CREC_COLLECTIVE_REDUCE_SCATTER: {
      uint8_t *acc = malloc(sb);
      CHECK(acc, "out of memory");
      for (int q = 0; q < n; q++) {
        gen(ss->type, q == 0 ? acc : in, sb, input_seed(it, q, cp->send_slot[c]));
        if (q) reduce_into(cs->type, cs->red, acc, in, sb / es);
      }
      if (cs->kind == CREC_COLLECTIVE_ALL_REDUCE) memcpy(want, acc, rb);
      else memcpy(want, acc + (uint64_t)me * rb, rb);
      free(acc);
      break;
    }
    case CREC_COLLECTIVE_ALL_GATHER:
      for (int q = 0; q < n; q++) gen(ss->type, want + (uint64_t)q * sb, sb, input_seed(it, q, cp->send_slot[c]));
      break;
    case CREC_COLLECTIVE_ALL_TO_ALL: {
      uint64_t block = sb / (uint64_t)n;
      for (int q = 0; q < n; q++) { /* block q of recv is block `me` of rank q's send */
        gen(ss->type, in, sb, input_seed(it, q, cp->send_slot[c]));
        memcpy(want + (uint64_t)q * block, in + (uint64_t)me * block, block);
      }
      break;
    }
    case CREC_COLLECTIVE_PERMUTE: {
      int src = cs->one_pair ? (me == n - 1 ? 0 : -1) : (me + n - 1) % n;
      if (src < 0) memset(want, 0, rb);
      else gen(ss->type, want, rb, input_seed(it, src, cp->send_slot[c]));
      break;
    }
    case CREC_COLLECTIVE_REPLICA_ID:
    case CREC_COLLECTIVE_PARTITION_ID: break; /* not among the cases: they move nothing */
  }
  free(in);
}

/* The first byte where two images of slot `s` differ, or -1. */
static long long first_difference(const uint8_t *a, const uint8_t *b, const slot *s) {
  if (memcmp(a + s->offset, b + s->offset, s->size) == 0) return -1;
  for (uint64_t i = 0; i < s->size; i++)
    if (a[s->offset + i] != b[s->offset + i]) return (long long)i;
  return -1;
}

static const char *slot_what(const slot *s) {
  static const char *const roles[] = {"send", "recv", "recv (in place)", "side input", "overlapped launch's output",
                                      "reader of recv after the done"};
  return roles[s->role];
}

static int test_collectives_match_eager_over_rotated_replays(void) {
  int n = W.size;
  cprog cp = build_collectives(n);
  enum { SETS = 3 };
  uint8_t *set[SETS], *eager_set = dev_alloc(cp.slab);
  for (int s = 0; s < SETS; s++) set[s] = dev_alloc(cp.slab);
  uint8_t *image = malloc(cp.slab), *eager_image = malloc(cp.slab), *got = malloc(cp.slab),
          *got_eager = malloc(cp.slab), *want = malloc(cp.slab);
  CHECK(image && eager_image && got && got_eager && want, "out of memory");
  crec_binding *bd = calloc((size_t)cp.nslots, sizeof *bd);
  CHECK(bd, "out of memory");
  crec_comm *comms[1] = {comm};
  crec_bindings b = CREC_BINDINGS_INIT;
  b.buffers = bd;
  b.num_buffers = (size_t)cp.nslots;
  b.communicators = comms;
  b.num_communicators = 1;
#define BIND(base)                                                                                \
  for (int i = 0; i < cp.nslots; i++) bd[i] = (crec_binding){(base) + cp.slots[i].offset, cp.slots[i].size}
  crec_exec *e = NULL;
  int checked_against_cpu = 0;
  for (int it = 0; it < iterations; it++) {
    int s = it % SETS;
    /* inputs alike for both; outputs start as different garbage, so a byte
     * neither run writes shows up as a difference */
    memset(image, 0xa5, cp.slab);
    memset(eager_image, 0x5a, cp.slab);
    for (int i = 0; i < cp.nslots; i++) {
      const slot *sl = &cp.slots[i];
      if (sl->role != SEND && sl->role != INOUT && sl->role != SIDE_IN) continue;
      gen(sl->type, image + sl->offset, sl->size, input_seed(it, W.rank, i));
      memcpy(eager_image + sl->offset, image + sl->offset, sl->size);
    }
    OK(crec_copy(set[s], image, cp.slab));
    OK(crec_copy(eager_set, eager_image, cp.slab));
    BIND(set[s]);
    if (!e) {
      crec_record_options o = record_options();
      OK(crec_record(cp.p, &b, &o, &e));
    }
    OK(crec_exec_replay(e, &b, stream));
    wait_stream("a replay");
    BIND(eager_set);
    OK(crec_run_eager(cp.p, &b, stream));
    wait_stream("an eager run");
    OK(crec_copy(got, set[s], cp.slab));
    OK(crec_copy(got_eager, eager_set, cp.slab));
    for (int i = 0; i < cp.nslots; i++) {
      const slot *sl = &cp.slots[i];
      if (sl->role == SEND || sl->role == SIDE_IN) continue;
      long long at = first_difference(got, got_eager, sl);
      CHECK(at < 0, "replay %d (buffer set %d): '%s', %s: byte %lld is 0x%02x after the replay, 0x%02x after the eager run",
            it, s, sl->c >= 0 ? cases[sl->c].name : "-", slot_what(sl), at, got[sl->offset + (uint64_t)at],
            got_eager[sl->offset + (uint64_t)at]);
    }
    /* against the CPU on some iterations: eager and replay could agree on a wrong answer */
    if (it % 50 == 0 || it == iterations - 1) {
      checked_against_cpu++;
      for (int c = 0; c < NCASES; c++) {
        const slot *rs = &cp.slots[cp.recv_slot[c]];
        expected_recv(&cp, c, it, n, W.rank, want);
        long long at = -1;
        for (uint64_t i = 0; i < rs->size && at < 0; i++)
          if (got[rs->offset + i] != want[i]) at = (long long)i;
        CHECK(at < 0, "replay %d: '%s': recv byte %lld is 0x%02x, expected 0x%02x", it, cases[c].name, at,
              got[rs->offset + (uint64_t)at], want[at]);
        if (cp.cons_slot[c] < 0) continue;
        /* the reader after the done saw the finished recv: cons = recv * 3 + 1 */
        const slot *cs = &cp.slots[cp.cons_slot[c]], *so = &cp.slots[cp.side_slot[c]];
        for (uint64_t i = 0; i < cs->size / 4; i++) {
          uint32_t r, v;
          memcpy(&r, want + 4 * i, 4);
          memcpy(&v, got + cs->offset + 4 * i, 4);
          CHECK(v == r * 3u + 1u, "replay %d: '%s': the reader after the done saw element %llu as 0x%08x, not 0x%08x",
                it, cases[c].name, (unsigned long long)i, (v - 1u) / 3u, r);
        }
        for (uint64_t i = 0; i < SIDE; i++) {
          uint32_t x, v;
          memcpy(&x, got + cp.slots[0].offset + 4 * i, 4);
          memcpy(&v, got + so->offset + 4 * i, 4);
          CHECK(v == x * 3u + (uint32_t)c, "replay %d: '%s': the launch overlapping the collective wrote 0x%08x at %llu",
                it, cases[c].name, v, (unsigned long long)i);
        }
      }
    }
  }
  crec_exec_stats st = CREC_EXEC_STATS_INIT;
  OK(crec_exec_get_stats(e, &st));
  uint64_t t = st.traced_nodes;
  printf("note: %d replays and eager runs on %d rank(s), %d checked against the CPU; %llu NCCL nodes, %llu captures, "
         "%llu cache hits, %llu misses\n",
         iterations, n, checked_against_cpu, (unsigned long long)t, (unsigned long long)st.trace_captures,
         (unsigned long long)st.trace_hits, (unsigned long long)st.trace_misses);
  CHECK(st.replays == (uint64_t)iterations, "%llu replays counted", (unsigned long long)st.replays);
  if (iterations >= SETS) {
    /* sets 1 and 2 were captured once each; every later replay found its graphs */
    CHECK(st.trace_misses == 2 * t, "%llu cache misses for %llu NCCL nodes over %d buffer sets",
          (unsigned long long)st.trace_misses, (unsigned long long)t, SETS);
    CHECK(st.trace_hits == (uint64_t)(iterations - SETS) * t, "%llu cache hits", (unsigned long long)st.trace_hits);
    CHECK(st.trace_recaptures == 0, "%llu re-captures", (unsigned long long)st.trace_recaptures);
  }
#undef BIND
  crec_exec_destroy(e);
  crec_program_destroy(cp.p);
  for (int s = 0; s < SETS; s++) crec_device_free(set[s]);
  crec_device_free(eager_set);
  free(image), free(eager_image), free(got), free(got_eager), free(want), free(bd);
  return 0;
}

/* ---- 3. the barrier orders work across ranks ---- */

typedef struct stamp_user {
  int late;              /* this rank writes, late, before the barrier */
  atomic_long *stamp;    /* in memory every rank of the host maps */
  const long *run;       /* the run in progress */
  long seen;             /* what this rank read after the barrier */
} stamp_user;

static void before_barrier(void *u) {
  stamp_user *x = u;
  if (!x->late) return;
  struct timespec ts = {0, 300 * 1000 * 1000};
  nanosleep(&ts, NULL);
  atomic_store(x->stamp, *x->run);
}

static void after_barrier(void *u) {
  stamp_user *x = u;
  x->seen = atomic_load(x->stamp);
}

/* host callback, barrier (across ranks, or within the rank only), host callback */
static crec_program *stamp_program(stamp_user *user, int across) {
  crec_program *p;
  OK(crec_program_create(&p));
  crec_comm_slot world;
  OK(crec_program_add_communicator(p, "world", W.size, &world));
  crec_region body = crec_program_body(p);
  crec_host_callback cb = CREC_HOST_CALLBACK_INIT;
  cb.fn = before_barrier;
  cb.user = user;
  crec_command c;
  OK(crec_program_add_host_callback(p, body, "write late", &cb, &c));
  if (across) OK(crec_program_add_comm_barrier(p, body, "sync", world, &c));
  else OK(crec_program_add_barrier(p, body, "local", &c));
  cb.fn = after_barrier;
  OK(crec_program_add_host_callback(p, body, "read", &cb, &c));
  return p;
}

static int test_the_barrier_orders_work_across_ranks(void) {
  if (W.size < 2) SKIP("needs 2 ranks or more");
  if (!W.run_dir) SKIP("needs CREC_RUN_DIR, a directory the ranks share (tools/crec-launch makes one)");
  char path[4096];
  snprintf(path, sizeof path, "%s/barrier-stamp", W.run_dir);
  int fd = open(path, O_RDWR | O_CREAT, 0600);
  CHECK(fd >= 0 && ftruncate(fd, 4096) == 0, "cannot make %s", path);
  atomic_long *stamp = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  CHECK(stamp != MAP_FAILED, "cannot map %s", path);
  /* every rank has the file mapped (and nobody has written) before the first run */
  OK(crec_comm_agree(comm, CREC_OK, wait_ms));
  long run = 0;
  stamp_user user = {W.rank == W.size - 1, stamp, &run, -1};
  crec_program *p = stamp_program(&user, 1);
  crec_comm *comms[1] = {comm};
  crec_bindings b = CREC_BINDINGS_INIT;
  b.communicators = comms;
  b.num_communicators = 1;
  crec_record_options o = record_options();
  crec_exec *e;
  OK(crec_record(p, &b, &o, &e));
  for (int k = 0; k < 4; k++) {
    run++;
    double t0 = now_s();
    if (k < 3) OK(crec_exec_replay(e, &b, stream));
    else OK(crec_run_eager(p, &b, stream));
    wait_stream(k < 3 ? "a replay" : "an eager run");
    double waited = now_s() - t0;
    if (user.late) continue;
    CHECK(user.seen == run,
          "%s %ld: after the barrier this rank read stamp %ld, but rank %d wrote %ld before the barrier (%.0f ms)",
          k < 3 ? "replay" : "eager run", run, user.seen, W.size - 1, run, waited * 1000);
    CHECK(waited > 0.25, "%s %ld took %.0f ms: it did not wait for the late rank's 300 ms", k < 3 ? "replay" : "eager run",
          run, waited * 1000);
  }
  crec_exec_destroy(e);
  crec_program_destroy(p);
  /* the same with a barrier within each rank only: the check above can fail */
  OK(crec_comm_agree(comm, CREC_OK, wait_ms));
  p = stamp_program(&user, 0);
  OK(crec_record(p, &b, &o, &e));
  run++;
  OK(crec_exec_replay(e, &b, stream));
  wait_stream("a replay without the barrier across ranks");
  if (!user.late)
    printf("note: with a barrier within the rank only, this rank read stamp %ld during run %ld (the late rank's "
           "write came after)\n",
           user.seen, run);
  /* the late rank finishes its write before anyone unmaps */
  OK(crec_comm_agree(comm, CREC_OK, wait_ms));
  crec_exec_destroy(e);
  crec_program_destroy(p);
  munmap(stamp, 4096);
  return 0;
}

/* ---- ids: replica_id and partition_id from each rank's communicator ---- */

/* Each rank writes its replica and partition ids under three assignments: none
 * (replica = rank, partition = 0); the ranks in reverse order as 1 replica of N
 * partitions; and the same order as R = 2 replicas of N / 2 partitions (R = 1
 * for an odd N), where a rank at place q is replica q / (N / R) and partition
 * q % (N / R), so that a row read as a column shows. One exec per rank, the
 * same program: replays and an eager run all write the rank's own values. */
static int test_replica_and_partition_ids_follow_the_rank(void) {
  crec_program *p;
  OK(crec_program_create(&p));
  crec_comm_slot world;
  OK(crec_program_add_communicator(p, "world", W.size, &world));
  crec_buffer out;
  OK(crec_program_add_argument(p, "ids", 32, NULL, &out));
  int32_t *reversed = malloc((size_t)W.size * sizeof *reversed);
  CHECK(reversed, "out of memory");
  for (int r = 0; r < W.size; r++) reversed[r] = W.size - 1 - r;
  int rows = W.size % 2 == 0 ? 2 : 1, q = W.size - 1 - W.rank, cols = W.size / rows;
  const size_t shape[3][2] = {{0, 0}, {1, (size_t)W.size}, {(size_t)rows, (size_t)cols}};
  for (int i = 0; i < 6; i++) {
    crec_collective d = CREC_COLLECTIVE_INIT;
    d.kind = i % 2 ? CREC_COLLECTIVE_PARTITION_ID : CREC_COLLECTIVE_REPLICA_ID;
    d.communicator = world;
    d.type = CREC_ELEMENT_I32;
    d.recv = crec_range_of(out, 4 * (uint64_t)i, 4);
    if (i >= 2) d.groups = reversed, d.num_groups = shape[i / 2][0], d.group_size = shape[i / 2][1];
    crec_command c;
    OK(crec_program_add_collective(p, crec_program_body(p), NULL, &d, &c));
  }
  free(reversed);
  const int32_t want[6] = {W.rank, 0, 0, q, q / cols, q % cols};
  void *mem = dev_alloc(32);
  crec_binding bd = {mem, 32};
  crec_comm *comms[1] = {comm};
  crec_bindings b = CREC_BINDINGS_INIT;
  b.buffers = &bd;
  b.num_buffers = 1;
  b.communicators = comms;
  b.num_communicators = 1;
  crec_record_options o = record_options();
  crec_exec *e;
  OK(crec_record(p, &b, &o, &e));
  for (int k = 0; k < 3; k++) {
    int32_t got[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
    OK(crec_copy(mem, got, sizeof got)); /* not the answer: a value not written shows */
    if (k < 2) OK(crec_exec_replay(e, &b, stream));
    else OK(crec_run_eager(p, &b, stream));
    wait_stream(k < 2 ? "a replay" : "an eager run");
    OK(crec_copy(got, mem, sizeof got));
    for (int i = 0; i < 6; i++)
      CHECK(got[i] == want[i], "%s: id %d is %d on rank %d of %d, expected %d", k < 2 ? "replay" : "eager run", i,
            (int)got[i], W.rank, W.size, (int)want[i]);
  }
  crec_exec_destroy(e);
  crec_program_destroy(p);
  crec_device_free(mem);
  return 0;
}

/* ---- 4 and 5. a rank that fails ---- */

/* recv = all_reduce(send): 1024 i32. */
static crec_program *one_all_reduce(void) {
  crec_program *p;
  OK(crec_program_create(&p));
  crec_comm_slot world;
  OK(crec_program_add_communicator(p, "world", W.size, &world));
  crec_buffer x, y;
  OK(crec_program_add_argument(p, "x", 4096, NULL, &x));
  OK(crec_program_add_argument(p, "y", 4096, NULL, &y));
  crec_collective d = CREC_COLLECTIVE_INIT;
  d.communicator = world;
  d.type = CREC_ELEMENT_I32;
  d.send = crec_range_whole(x);
  d.recv = crec_range_whole(y);
  crec_command c;
  OK(crec_program_add_collective(p, crec_program_body(p), "grads", &d, &c));
  return p;
}

static int test_a_rank_failing_to_record_is_reported_to_every_rank(void) {
  crec_program *p = one_all_reduce();
  void *x = dev_alloc(4096), *y = dev_alloc(4096);
  crec_binding bd[2] = {{x, 4096}, {y, 4096}};
  crec_comm *comms[1] = {comm};
  crec_bindings b = CREC_BINDINGS_INIT;
  b.buffers = bd;
  b.num_buffers = 2;
  b.communicators = comms;
  b.num_communicators = 1;
  /* an eager run first: NCCL connects the ranks at their first collectives,
   * which the record of a rank whose peer failed would otherwise wait for */
  OK(crec_run_eager(p, &b, stream));
  wait_stream("the eager run");
  int bad = W.rank == W.size - 1;
  if (bad) bd[1].size = 16; /* a deliberate binding error on the last rank */
  crec_record_options o = record_options();
  crec_exec *e = NULL;
  crec_status s = crec_record(p, &b, &o, &e);
  CHECK(bad ? s == CREC_ERR_BINDING : s == CREC_OK, "crec_record gave %s: %s", crec_status_name(s), crec_last_error());
  double t0 = now_s();
  crec_status all = crec_comm_agree(comm, s, wait_ms);
  char msg[2048];
  snprintf(msg, sizeof msg, "%s", crec_last_error());
  CHECK(all == CREC_ERR_REMOTE, "crec_comm_agree gave %s (%s), not ERR_REMOTE", crec_status_name(all), msg);
  char who[160];
  snprintf(who, sizeof who, "rank %d of %d%s failed with ERR_BINDING: crec_record: ", W.size - 1, W.size,
           bad ? " (this rank)" : "");
  CHECK(strstr(msg, who), "the agreement's message '%s' does not say '%s'", msg, who);
  CHECK(strstr(msg, "binding 1 ('y')"), "the agreement's message '%s' does not name the binding", msg);
  printf("note: %s (%.0f ms)\n", msg, (now_s() - t0) * 1000);
  /* nothing was replayed; the communicator still works */
  crec_exec_destroy(e);
  bd[1].size = 4096;
  OK(crec_comm_agree(comm, CREC_OK, wait_ms));
  OK(crec_run_eager(p, &b, stream));
  wait_stream("the eager run after the failure");
  crec_program_destroy(p);
  crec_device_free(x);
  crec_device_free(y);
  return 0;
}

/* Last: it leaves the communicator aborted on every rank. */
static int test_a_rank_that_never_joins_times_the_others_out(void) {
  if (W.size < 2) SKIP("needs 2 ranks or more");
  crec_program *p = one_all_reduce();
  void *x = dev_alloc(4096), *y = dev_alloc(4096);
  crec_binding bd[2] = {{x, 4096}, {y, 4096}};
  crec_comm *comms[1] = {comm};
  crec_bindings b = CREC_BINDINGS_INIT;
  b.buffers = bd;
  b.num_buffers = 2;
  b.communicators = comms;
  b.num_communicators = 1;
  OK(crec_run_eager(p, &b, stream));
  wait_stream("the eager run");
  crec_record_options o = record_options();
  crec_exec *e;
  OK(crec_record(p, &b, &o, &e));
  OK(crec_comm_agree(comm, CREC_OK, wait_ms));
  enum { DEADLINE_MS = 4000 };
  if (W.rank == W.size - 1) {
    /* this rank stops taking part, as a rank that hangs or died would; it
     * aborts only once the others have given up */
    sleep(DEADLINE_MS / 1000 + 3);
    OK(crec_comm_abort(comm));
  } else {
    OK(crec_exec_replay(e, &b, stream));
    double t0 = now_s();
    crec_status s = crec_comm_synchronize(comm, stream, DEADLINE_MS);
    double took = now_s() - t0;
    char msg[2048];
    snprintf(msg, sizeof msg, "%s", crec_last_error());
    CHECK(s == CREC_ERR_TIMEOUT || s == CREC_ERR_REMOTE, "crec_comm_synchronize gave %s: %s", crec_status_name(s), msg);
    CHECK(took < DEADLINE_MS / 1000.0 + 12, "the wait took %.1f s", took);
    char who[96];
    snprintf(who, sizeof who, "rank %d of %d on device %d", W.rank, W.size, W.device);
    CHECK(strstr(msg, who) && strstr(msg, "the communicator was aborted"), "the message '%s' lacks '%s' or the abort",
          msg, who);
    CHECK(crec_comm_aborted(comm), "the communicator is not marked aborted");
    printf("note: %s (after %.1f s)\n", msg, took);
    /* the aborted communicator is refused from now on */
    s = crec_exec_replay(e, &b, stream);
    CHECK(s == CREC_ERR_BINDING && strstr(crec_last_error(), "communicator binding 0 ('world') was aborted"),
          "a replay with the aborted communicator gave %s: %s", crec_status_name(s), crec_last_error());
  }
  CHECK(crec_comm_native(comm) == NULL, "an aborted communicator still hands out its NCCL communicator");
  crec_exec_destroy(e);
  crec_program_destroy(p);
  crec_device_free(x);
  crec_device_free(y);
  return 0;
}

/* ---- the runner ---- */

typedef struct test {
  const char *name;
  int (*fn)(void);
} test;

static const test tests[] = {
    {"functions_are_loaded_at_record", test_functions_are_loaded_at_record},
    {"collectives_match_eager_over_rotated_replays", test_collectives_match_eager_over_rotated_replays},
    {"the_barrier_orders_work_across_ranks", test_the_barrier_orders_work_across_ranks},
    {"replica_and_partition_ids_follow_the_rank", test_replica_and_partition_ids_follow_the_rank},
    {"a_rank_failing_to_record_is_reported_to_every_rank", test_a_rank_failing_to_record_is_reported_to_every_rank},
    {"a_rank_that_never_joins_times_the_others_out", test_a_rank_that_never_joins_times_the_others_out},
};
enum { NTESTS = sizeof tests / sizeof *tests };

static void skip_all(const char *only, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void skip_all(const char *only, const char *fmt, ...) {
  char why[1200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof why, fmt, ap);
  va_end(ap);
  for (int i = 0; i < NTESTS; i++)
    if (!only || strstr(tests[i].name, only)) printf("skip %s: %s\n", tests[i].name, why);
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const char *only = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--iterations") == 0 && i + 1 < argc) {
      iterations = atoi(argv[++i]);
      if (iterations < 1) iterations = 1;
    } else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
      only = argv[++i];
    } else if (strcmp(argv[i], "--list") == 0) {
      for (int t = 0; t < NTESTS; t++) printf("%s\n", tests[t].name);
      return 0;
    } else {
      fprintf(stderr, "usage: %s [--iterations N] [--only TEXT] [--list]\n(start it with tools/crec-launch -n N --)\n",
              argv[0]);
      return 2;
    }
  }
  /* CUDA's default since 12.2, made explicit: what record must not rely on */
  setenv("CUDA_MODULE_LOADING", "LAZY", 1);
  const char *budget = getenv("CREC_TEST_BUDGET_S");
  if (budget && atoi(budget) > 0) budget_s = atoi(budget);
  char why[1200];
  if (mr_world_from_env(&W, why, sizeof why)) {
    printf("FAIL setup: %s\n", why);
    return 2;
  }
  wait_ms = mr_wait_ms(&W, 60000);
  printf("rank %d of %d, device %d, started by %s\n", W.rank, W.size, W.device, W.launcher);
  int has_device = crec_device_available();
  char no_device[600];
  snprintf(no_device, sizeof no_device, "%s", has_device ? "" : crec_last_error());
  /* the ranks share the NCCL id even without a device: the rendezvous is checked on CPU-only machines too */
  crec_comm_id id;
  crec_status ns;
  if (mr_share_id(&W, wait_ms, &id, &ns, why, sizeof why)) {
    if (ns == CREC_ERR_UNSUPPORTED) {
      skip_all(only, "NCCL is missing: %s", why);
      return 0;
    }
    printf("FAIL setup: %s\n", why);
    return 1;
  }
  printf("NCCL unique id shared, hash %016llx\n", mr_hash(id.bytes, sizeof id.bytes));
  if (!has_device) {
    skip_all(only, "no CUDA device: %s", no_device);
    return 0;
  }
  int count = 0;
  OK(crec_device_count(&count));
  CHECK(W.device < count, "device %d does not exist (%d devices)", W.device, count);
  cu = crec__driver("crec_multi_tests");
  use_device();
  double t0 = now_s();
  OK(crec_comm_create(W.device, &id, W.rank, W.size, &comm));
  printf("communicator of %d rank(s) made in %.2f s\n", W.size, now_s() - t0);
  OK(crec_stream_create(W.device, &stream));
  pthread_t dog;
  pthread_create(&dog, NULL, watchdog, NULL);
  pthread_detach(dog);
  int passed = 0, skipped = 0;
  for (int i = 0; i < NTESTS; i++) {
    if (only && !strstr(tests[i].name, only)) continue;
    snprintf(test_name, sizeof test_name, "%s", tests[i].name);
    /* every rank is here, and nobody failed before */
    crec_status s = crec_comm_agree(comm, CREC_OK, wait_ms);
    CHECK(s == CREC_OK, "the ranks did not agree to start: %s: %s", crec_status_name(s), crec_last_error());
    double start = now_s();
    atomic_store(&test_started, (long)start);
    int r = tests[i].fn();
    atomic_store(&test_started, 0);
    if (r == 0) {
      printf("ok   %s (%.1f s)\n", tests[i].name, now_s() - start);
      passed++;
    } else {
      skipped++;
    }
  }
  snprintf(test_name, sizeof test_name, "teardown");
  if (!crec_comm_aborted(comm)) OK(crec_comm_agree(comm, CREC_OK, wait_ms));
  crec_stream_destroy(stream);
  crec_comm_destroy(comm);
  printf("rank %d of %d: %d passed, %d skipped, 0 failed\n", W.rank, W.size, passed, skipped);
  return 0;
}
