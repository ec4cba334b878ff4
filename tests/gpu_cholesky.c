/* GPU suite for Cholesky commands (crec_program_add_cholesky, through
 * cuSOLVER): lower and upper, f32 and f64, odd orders and batches, against a
 * Cholesky factorization on the host, over replays that rotate three buffer
 * sets and an eager run; a matrix that is not positive definite reported in
 * info; a factorization inside a while body and an if branch. Skips without a
 * CUDA device, and without cuSOLVER (saying so). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "gpu_util.h"

static crec_stream stream;

static void setup(void) {
  REQUIRE_DEVICE();
  EXPECT_OK(crec_stream_create(0, &stream));
}
static void teardown(void) { crec_stream_destroy(stream); }

TestSuite(gpu_cholesky, .init = setup, .fini = teardown);

static uint32_t rng = 77;
static double drand(void) { return gt_drand(&rng); }

/* `batch` random symmetric positive definite n x n matrices, row-major: M·Mᵀ + n·I. */
static double *spd(uint64_t n, uint64_t batch) {
  double *a = malloc(sizeof *a * n * n * batch), *m = malloc(sizeof *m * n * n);
  for (uint64_t b = 0; b < batch; b++) {
    for (uint64_t i = 0; i < n * n; i++) m[i] = drand();
    for (uint64_t i = 0; i < n; i++)
      for (uint64_t j = 0; j < n; j++) {
        double s = i == j ? (double)n : 0;
        for (uint64_t k = 0; k < n; k++) s += m[i * n + k] * m[j * n + k];
        a[b * n * n + i * n + j] = s;
      }
  }
  free(m);
  return a;
}

/* The lower factor L of each matrix (row-major, zeros above the diagonal). */
static double *cholesky_ref(const double *a, uint64_t n, uint64_t batch) {
  double *l = calloc(n * n * batch, sizeof *l);
  for (uint64_t b = 0; b < batch; b++) {
    const double *x = a + b * n * n;
    double *y = l + b * n * n;
    for (uint64_t j = 0; j < n; j++) {
      double d = x[j * n + j];
      for (uint64_t k = 0; k < j; k++) d -= y[j * n + k] * y[j * n + k];
      y[j * n + j] = sqrt(d);
      for (uint64_t i = j + 1; i < n; i++) {
        double s = x[i * n + j];
        for (uint64_t k = 0; k < j; k++) s -= y[i * n + k] * y[j * n + k];
        y[i * n + j] = s / y[j * n + j];
      }
    }
  }
  return l;
}

typedef struct ccase {
  crec_element type;
  int upper;
  uint64_t n, batch;
} ccase;

static size_t esz(const ccase *c) { return crec_element_size(c->type); }

static void upload(const ccase *c, void *dst, const double *src, size_t n) {
  void *h = malloc(n * esz(c));
  for (size_t i = 0; i < n; i++) {
    if (c->type == CREC_ELEMENT_F64) ((double *)h)[i] = src[i];
    else ((float *)h)[i] = (float)src[i];
  }
  gt_upload(dst, h, n * esz(c));
  free(h);
}

/* Compares the factored triangle of the device matrices with L (or Lᵀ), and info with 0. */
static void expect_factored(const ccase *c, const void *da, const void *dinfo, const double *l, const char *what) {
  size_t count = c->n * c->n * c->batch;
  void *h = malloc(count * esz(c));
  gt_download(h, da, count * esz(c));
  double mag = 1e-30, worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < count; i++) mag = fmax(mag, fabs(l[i]));
  for (uint64_t b = 0; b < c->batch; b++)
    for (uint64_t i = 0; i < c->n; i++)
      for (uint64_t j = 0; j < c->n; j++) {
        if (c->upper ? j < i : j > i) continue; /* the other triangle keeps A */
        size_t k = b * c->n * c->n + i * c->n + j;
        double want = c->upper ? l[b * c->n * c->n + j * c->n + i] : l[k];
        double got = c->type == CREC_ELEMENT_F64 ? ((double *)h)[k] : ((float *)h)[k];
        if (fabs(got - want) > worst) worst = fabs(got - want), at = k;
      }
  double tol = c->type == CREC_ELEMENT_F64 ? 1e-10 : 1e-4;
  cr_expect(worst <= tol * mag, "%s: %s %s n=%llu: worst error %.3g at element %zu, allowed %.3g", what,
            crec_element_name(c->type), c->upper ? "upper" : "lower", (unsigned long long)c->n, worst, at, tol * mag);
  int32_t *info = malloc(4 * c->batch);
  gt_download(info, dinfo, 4 * c->batch);
  for (uint64_t b = 0; b < c->batch; b++) cr_expect_eq(info[b], 0, "%s: info[%llu] is %d", what, (unsigned long long)b, info[b]);
  free(info);
  free(h);
}

static void skip_without_cusolver(crec_status s) {
  if (s == CREC_ERR_UNSUPPORTED && strstr(crec_last_error(), "cuSOLVER")) cr_skip_test("%s", crec_last_error());
}

static void run_case(const ccase *c) {
  crec_program *p;
  EXPECT_OK(crec_program_create(&p));
  uint64_t bytes = c->n * c->n * c->batch * esz(c);
  crec_buffer a, info;
  EXPECT_OK(crec_program_add_argument(p, "a", bytes, NULL, &a));
  EXPECT_OK(crec_program_add_argument(p, "info", 4 * c->batch, NULL, &info));
  crec_cholesky d = CREC_CHOLESKY_INIT;
  d.type = c->type, d.upper = c->upper, d.n = c->n, d.batch = c->batch;
  d.a = crec_range_whole(a), d.info = crec_range_whole(info);
  crec_command cmd;
  EXPECT_OK(crec_program_add_cholesky(p, crec_program_body(p), "potrf", &d, &cmd));
  double *as[3], *ls[3];
  void *das[3], *dinfos[3];
  for (int i = 0; i < 3; i++) {
    as[i] = spd(c->n, c->batch), ls[i] = cholesky_ref(as[i], c->n, c->batch);
    das[i] = gt_alloc(bytes), dinfos[i] = gt_alloc(4 * c->batch);
  }
  crec_binding bd[2];
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = bd;
  bs.num_buffers = 2;
  crec_exec *ex = NULL;
  int reps = gt_reps(100);
  for (int i = 0; i < reps; i++) {
    int k = i % 3;
    upload(c, das[k], as[k], c->n * c->n * c->batch); /* factored in place by the replay before */
    gt_fill(dinfos[k], 4 * c->batch, (uint32_t)i + 1);
    bd[0] = (crec_binding){das[k], bytes}, bd[1] = (crec_binding){dinfos[k], 4 * c->batch};
    if (!ex) {
      crec_status s = crec_record(p, &bs, NULL, &ex);
      if (s) {
        for (int j = 0; j < 3; j++) free(as[j]), free(ls[j]), crec_device_free(das[j]), crec_device_free(dinfos[j]);
        crec_program_destroy(p);
      }
      skip_without_cusolver(s);
      cr_assert_eq(s, CREC_OK, "crec_record: %s: %s", crec_status_name(s), crec_last_error());
    }
    gt_replay(ex, &bs, stream);
    char what[64];
    snprintf(what, sizeof what, "replay %d (set %d)", i, k);
    expect_factored(c, das[k], dinfos[k], ls[k], what);
  }
  char *choices = NULL;
  EXPECT_OK(crec_exec_library_choices(ex, &choices));
  cr_expect(strstr(choices, "cholesky 'potrf': cusolverDnXpotrf for each of "), "%s", choices);
  crec_free(choices);
  upload(c, das[2], as[2], c->n * c->n * c->batch);
  bd[0] = (crec_binding){das[2], bytes}, bd[1] = (crec_binding){dinfos[2], 4 * c->batch};
  gt_eager(p, &bs, stream);
  expect_factored(c, das[2], dinfos[2], ls[2], "eager");
  crec_exec_destroy(ex);
  for (int j = 0; j < 3; j++) free(as[j]), free(ls[j]), crec_device_free(das[j]), crec_device_free(dinfos[j]);
  crec_program_destroy(p);
}

Test(gpu_cholesky, lower_and_upper_factors_match_the_cpu) {
  ccase cases[] = {
      {CREC_ELEMENT_F32, 0, 5, 3},
      {CREC_ELEMENT_F64, 1, 33, 2},
      {CREC_ELEMENT_F32, 1, 64, 1},
      {CREC_ELEMENT_F64, 0, 1, 4},
      /* large enough for cuSOLVER's blocked factorization (it calls cuBLAS) */
      {CREC_ELEMENT_F64, 0, 512, 1},
      {CREC_ELEMENT_F32, 1, 384, 2},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) run_case(&cases[i]);
}

Test(gpu_cholesky, a_matrix_that_is_not_positive_definite_is_reported_in_info) {
  enum { N = 6 };
  crec_program *p;
  EXPECT_OK(crec_program_create(&p));
  crec_buffer a, info;
  EXPECT_OK(crec_program_add_argument(p, "a", 2 * N * N * 8, NULL, &a));
  EXPECT_OK(crec_program_add_argument(p, "info", 8, NULL, &info));
  crec_cholesky d = CREC_CHOLESKY_INIT;
  d.type = CREC_ELEMENT_F64, d.n = N, d.batch = 2;
  d.a = crec_range_whole(a), d.info = crec_range_whole(info);
  crec_command cmd;
  EXPECT_OK(crec_program_add_cholesky(p, crec_program_body(p), "potrf", &d, &cmd));
  /* the identity, and the identity with -1 at (2, 2): its leading minor of order 3 is negative */
  double h[2 * N * N] = {0};
  for (int b = 0; b < 2; b++)
    for (int i = 0; i < N; i++) h[b * N * N + i * N + i] = 1;
  h[N * N + 2 * N + 2] = -1;
  void *da = gt_alloc(sizeof h), *di = gt_alloc(8);
  gt_upload(da, h, sizeof h);
  crec_binding bd[2] = {{da, sizeof h}, {di, 8}};
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = bd;
  bs.num_buffers = 2;
  crec_exec *ex = NULL;
  crec_status s = crec_record(p, &bs, NULL, &ex);
  if (s) crec_device_free(da), crec_device_free(di), crec_program_destroy(p);
  skip_without_cusolver(s);
  cr_assert_eq(s, CREC_OK, "crec_record: %s: %s", crec_status_name(s), crec_last_error());
  gt_replay(ex, &bs, stream);
  int32_t got[2];
  gt_download(got, di, 8);
  cr_expect_eq(got[0], 0, "the identity factors: info %d", got[0]);
  cr_expect_eq(got[1], 3, "the minor of order 3 is not positive definite: info %d, expected 3", got[1]);
  crec_exec_destroy(ex);
  crec_device_free(da);
  crec_device_free(di);
  crec_program_destroy(p);
}

Test(gpu_cholesky, factorizations_in_a_loop_body_and_a_branch_follow_rotation) {
  gt t;
  gt_init(&t, 1);
  ccase c = {CREC_ELEMENT_F32, 0, 12, 2};
  uint64_t bytes = c.n * c.n * c.batch * 4;
  crec_buffer src, a, b, info, state;
  EXPECT_OK(crec_program_add_argument(t.p, "src", bytes, NULL, &src));
  EXPECT_OK(crec_program_add_argument(t.p, "a", bytes, NULL, &a));
  EXPECT_OK(crec_program_add_argument(t.p, "b", bytes, NULL, &b));
  EXPECT_OK(crec_program_add_argument(t.p, "info", 16, NULL, &info));
  EXPECT_OK(crec_program_add_argument(t.p, "state", 64, NULL, &state));
  crec_region top = crec_program_body(t.p);
  /* counter = 3; while (--counter > 0) { a = src; factor a }; if (1) { b = src; factor b } */
  crec_region body = gt_countdown_loop(&t, top, state, 3);
  crec_command cmd;
  EXPECT_OK(crec_program_add_memcpy(t.p, body, NULL, crec_range_whole(a), crec_range_whole(src), &cmd));
  crec_cholesky d = CREC_CHOLESKY_INIT;
  d.n = c.n, d.batch = c.batch;
  d.a = crec_range_whole(a), d.info = crec_range_of(info, 0, 8);
  EXPECT_OK(crec_program_add_cholesky(t.p, body, "in loop", &d, &cmd));
  crec_region then_r = gt_taken_branch(&t, top, state);
  EXPECT_OK(crec_program_add_memcpy(t.p, then_r, NULL, crec_range_whole(b), crec_range_whole(src), &cmd));
  crec_cholesky e = d;
  e.a = crec_range_whole(b), e.info = crec_range_of(info, 8, 8);
  EXPECT_OK(crec_program_add_cholesky(t.p, then_r, "in branch", &e, &cmd));
  double *as[3], *ls[3];
  void *dsrc[3], *da[3], *db[3], *dinfo[3], *dstate[3];
  for (int i = 0; i < 3; i++) {
    as[i] = spd(c.n, c.batch), ls[i] = cholesky_ref(as[i], c.n, c.batch);
    dsrc[i] = gt_alloc(bytes), da[i] = gt_alloc(bytes), db[i] = gt_alloc(bytes);
    dinfo[i] = gt_alloc(16), dstate[i] = gt_alloc(64);
    upload(&c, dsrc[i], as[i], c.n * c.n * c.batch);
  }
  crec_binding bd[5];
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = bd;
  bs.num_buffers = 5;
  crec_exec *ex = NULL;
  int reps = gt_reps(30);
  for (int i = 0; i < reps; i++) {
    int k = i % 3;
    gt_fill(da[k], bytes, (uint32_t)i), gt_fill(db[k], bytes, (uint32_t)i + 7), gt_fill(dinfo[k], 16, (uint32_t)i);
    bd[0] = (crec_binding){dsrc[k], bytes}, bd[1] = (crec_binding){da[k], bytes}, bd[2] = (crec_binding){db[k], bytes};
    bd[3] = (crec_binding){dinfo[k], 16}, bd[4] = (crec_binding){dstate[k], 64};
    if (!ex) {
      crec_status s = crec_record(t.p, &bs, NULL, &ex);
      skip_without_cusolver(s);
      cr_assert_eq(s, CREC_OK, "crec_record: %s: %s", crec_status_name(s), crec_last_error());
    }
    gt_replay(ex, &bs, stream);
    char what[64];
    snprintf(what, sizeof what, "replay %d: the loop's", i);
    expect_factored(&c, da[k], dinfo[k], ls[k], what);
    snprintf(what, sizeof what, "replay %d: the branch's", i);
    expect_factored(&c, db[k], (char *)dinfo[k] + 8, ls[k], what);
  }
  crec_exec_destroy(ex);
  for (int i = 0; i < 3; i++) {
    free(as[i]), free(ls[i]);
    crec_device_free(dsrc[i]), crec_device_free(da[i]), crec_device_free(db[i]);
    crec_device_free(dinfo[i]), crec_device_free(dstate[i]);
  }
  crec_program_destroy(t.p);
}
