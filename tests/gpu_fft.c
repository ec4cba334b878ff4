/* GPU suite for FFT commands (crec_program_add_fft, through cuFFT): every type
 * in f32 and f64, one to three dimensions, batches, odd lengths, in place, and
 * scaled, against a direct DFT on the host, over replays that rotate three
 * buffer sets and an eager run; an FFT and its inverse inside a while body and
 * an if branch; a workspace too small, named. Skips without a CUDA device, and
 * without cuFFT (saying so). */
#include <complex.h>
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

TestSuite(gpu_fft, .init = setup, .fini = teardown);

static uint32_t rng = 2024;
static double drand(void) { return gt_drand(&rng); }

/* A transform as the test describes it. */
typedef struct fcase {
  crec_fft_type type;
  crec_element precision;
  uint32_t rank;
  uint64_t length[3];
  uint64_t batch;
  double scale;
  int in_place;
} fcase;

static uint64_t prod(const fcase *c) {
  uint64_t n = 1;
  for (uint32_t d = 0; d < c->rank; d++) n *= c->length[d];
  return n;
}
/* Complex elements per transform on the complex side. */
static uint64_t cprod(const fcase *c) {
  bool real = c->type == CREC_FFT_REAL_FORWARD || c->type == CREC_FFT_REAL_INVERSE;
  return real ? prod(c) / c->length[c->rank - 1] * (c->length[c->rank - 1] / 2 + 1) : prod(c);
}

/* The direct DFT of `x` (batch transforms of c's lengths, full complex), in place, with exponent sign `sign`. */
static void dft(const fcase *c, double complex *x, int sign) {
  uint64_t n = prod(c);
  double complex *line = malloc(sizeof *line * 4096), *outl = malloc(sizeof *outl * 4096);
  for (uint64_t b = 0; b < c->batch; b++) {
    double complex *t = x + b * n;
    uint64_t stride = n;
    for (uint32_t d = 0; d < c->rank; d++) {
      uint64_t len = c->length[d];
      stride /= len;
      for (uint64_t start = 0; start < n; start++) {
        /* each line along axis d starts where that axis' index is 0 */
        if ((start / stride) % len) continue;
        for (uint64_t i = 0; i < len; i++) line[i] = t[start + i * stride];
        for (uint64_t k = 0; k < len; k++) {
          double complex s = 0;
          for (uint64_t i = 0; i < len; i++) s += line[i] * cexp(sign * 2.0 * M_PI * I * (double)(i * k % len) / (double)len);
          outl[k] = s;
        }
        for (uint64_t i = 0; i < len; i++) t[start + i * stride] = outl[i];
      }
    }
  }
  free(line);
  free(outl);
}

/* One buffer set: the host input and the expected output, as doubles
 * (complex: interleaved), and device input and output. */
typedef struct fset {
  double *in, *want;
  size_t in_n, out_n; /* doubles */
  void *din, *dout;
} fset;

static size_t esz(const fcase *c) { return c->precision == CREC_ELEMENT_F64 ? 8 : 4; }

static void to_device(const fcase *c, void *dst, const double *src, size_t n) {
  void *h = malloc(n * esz(c));
  for (size_t i = 0; i < n; i++) {
    if (c->precision == CREC_ELEMENT_F64) ((double *)h)[i] = src[i];
    else ((float *)h)[i] = (float)src[i];
  }
  gt_upload(dst, h, n * esz(c));
  free(h);
}

static void from_device(const fcase *c, double *dst, const void *src, size_t n) {
  void *h = malloc(n * esz(c));
  gt_download(h, src, n * esz(c));
  for (size_t i = 0; i < n; i++) dst[i] = c->precision == CREC_ELEMENT_F64 ? ((double *)h)[i] : ((float *)h)[i];
  free(h);
}

/* Makes a random input for `c` and its expected output. */
static fset make_set(const fcase *c) {
  uint64_t n = prod(c), nc = cprod(c), last = c->length[c->rank - 1], hc = last / 2 + 1;
  double complex *full = malloc(sizeof *full * c->batch * n);
  fset s = {0};
  if (c->type == CREC_FFT_REAL_INVERSE) {
    /* a Hermitian input: the real-to-complex DFT of a random real signal, which
     * the inverse then gives back times n (times scale) */
    double *sig = malloc(sizeof *sig * c->batch * n);
    for (uint64_t i = 0; i < c->batch * n; i++) full[i] = sig[i] = drand();
    dft(c, full, -1);
    s.in_n = 2 * c->batch * nc, s.out_n = c->batch * n;
    s.in = malloc(sizeof *s.in * s.in_n), s.want = malloc(sizeof *s.want * s.out_n);
    for (uint64_t i = 0, k = 0; i < c->batch * n; i++)
      if (i % last < hc) s.in[k++] = creal(full[i]), s.in[k++] = cimag(full[i]);
    for (uint64_t i = 0; i < s.out_n; i++) s.want[i] = sig[i] * (double)n * c->scale;
    free(sig);
  } else {
    bool real_in = c->type == CREC_FFT_REAL_FORWARD;
    s.in_n = (real_in ? 1 : 2) * c->batch * n, s.out_n = 2 * c->batch * nc;
    s.in = malloc(sizeof *s.in * s.in_n), s.want = malloc(sizeof *s.want * s.out_n);
    for (uint64_t i = 0; i < c->batch * n; i++) {
      double re = drand(), im = real_in ? 0 : drand();
      full[i] = re + im * I;
      if (real_in) s.in[i] = re;
      else s.in[2 * i] = re, s.in[2 * i + 1] = im;
    }
    dft(c, full, c->type == CREC_FFT_INVERSE ? 1 : -1);
    for (uint64_t i = 0, k = 0; i < c->batch * n; i++)
      if (!real_in || i % last < hc) s.want[k++] = creal(full[i]) * c->scale, s.want[k++] = cimag(full[i]) * c->scale;
  }
  free(full);
  s.din = gt_alloc(s.in_n * esz(c));
  s.dout = c->in_place ? s.din : gt_alloc(s.out_n * esz(c));
  return s;
}

static void free_set(fset *s) {
  free(s->in);
  free(s->want);
  crec_device_free(s->din);
  if (s->dout != s->din) crec_device_free(s->dout);
}

/* Compares the device output with the expected one: within tol × the largest magnitude. */
static void expect_close(const fcase *c, const fset *s, const char *what) {
  double *got = malloc(sizeof *got * s->out_n);
  from_device(c, got, s->dout, s->out_n);
  double mag = 1e-30, worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < s->out_n; i++) mag = fmax(mag, fabs(s->want[i]));
  for (size_t i = 0; i < s->out_n; i++)
    if (fabs(got[i] - s->want[i]) > worst) worst = fabs(got[i] - s->want[i]), at = i;
  double tol = c->precision == CREC_ELEMENT_F64 ? 1e-10 : 2e-5;
  cr_expect(worst <= tol * mag, "%s %s %s: worst error %.3g at %zu (got %.9g, want %.9g), allowed %.3g", what,
            crec_element_name(c->precision), crec_fft_type_name(c->type), worst, at, got[at], s->want[at], tol * mag);
  free(got);
}

/* Skips the test when `s` says cuFFT is missing. */
static void skip_without_cufft(crec_status s) {
  if (s == CREC_ERR_UNSUPPORTED && strstr(crec_last_error(), "cuFFT")) cr_skip_test("%s", crec_last_error());
}

static void run_case(const fcase *c) {
  crec_program *p;
  EXPECT_OK(crec_program_create(&p));
  fset sets[3];
  for (int i = 0; i < 3; i++) sets[i] = make_set(c);
  crec_buffer in, out;
  EXPECT_OK(crec_program_add_argument(p, "in", sets[0].in_n * esz(c), NULL, &in));
  if (!c->in_place) EXPECT_OK(crec_program_add_argument(p, "out", sets[0].out_n * esz(c), NULL, &out));
  crec_fft f = CREC_FFT_INIT;
  f.type = c->type;
  f.precision = c->precision;
  f.rank = c->rank;
  memcpy(f.length, c->length, sizeof f.length);
  f.batch = c->batch;
  f.scale = c->scale;
  f.input = crec_range_whole(in);
  f.output = crec_range_whole(c->in_place ? in : out);
  crec_command cmd;
  EXPECT_OK(crec_program_add_fft(p, crec_program_body(p), "t", &f, &cmd));
  crec_binding bd[2];
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = bd;
  bs.num_buffers = c->in_place ? 1 : 2;
  crec_exec *ex = NULL;
  int reps = gt_reps(100);
  for (int i = 0; i < reps; i++) {
    fset *s = &sets[i % 3];
    to_device(c, s->din, s->in, s->in_n); /* in place, the replay before overwrote it */
    if (!c->in_place) gt_fill(s->dout, s->out_n * esz(c), (uint32_t)i);
    bd[0] = (crec_binding){s->din, s->in_n * esz(c)};
    bd[1] = (crec_binding){s->dout, s->out_n * esz(c)};
    if (!ex) {
      crec_status rs = crec_record(p, &bs, NULL, &ex);
      if (rs) {
        for (int k = 0; k < 3; k++) free_set(&sets[k]);
        crec_program_destroy(p);
        skip_without_cufft(rs);
        cr_assert_fail("crec_record: %s: %s", crec_status_name(rs), crec_last_error());
      }
    }
    gt_replay(ex, &bs, stream);
    char what[64];
    snprintf(what, sizeof what, "replay %d (set %d)", i, i % 3);
    expect_close(c, s, what);
  }
  char *choices = NULL;
  EXPECT_OK(crec_exec_library_choices(ex, &choices));
  cr_expect(strstr(choices, "fft 't': a cuFFT plan with "), "%s", choices);
  crec_free(choices);
  /* the replays captured one child graph per address set */
  crec_exec_stats st = CREC_EXEC_STATS_INIT;
  EXPECT_OK(crec_exec_get_stats(ex, &st));
  cr_expect_eq(st.trace_captures, 3, "%llu captures for 3 address sets", (unsigned long long)st.trace_captures);
  /* and an eager run computes the same */
  fset *s = &sets[1];
  to_device(c, s->din, s->in, s->in_n);
  if (!c->in_place) gt_fill(s->dout, s->out_n * esz(c), 99);
  bd[0] = (crec_binding){s->din, s->in_n * esz(c)};
  bd[1] = (crec_binding){s->dout, s->out_n * esz(c)};
  gt_eager(p, &bs, stream);
  expect_close(c, s, "eager");
  crec_exec_destroy(ex);
  for (int i = 0; i < 3; i++) free_set(&sets[i]);
  crec_program_destroy(p);
}

Test(gpu_fft, complex_transforms_match_the_dft) {
  fcase cases[] = {
      {CREC_FFT_FORWARD, CREC_ELEMENT_F32, 1, {12, 0, 0}, 3, 1.0, 0},
      {CREC_FFT_INVERSE, CREC_ELEMENT_F64, 2, {6, 5, 0}, 2, 1.0 / 30, 0},
      {CREC_FFT_FORWARD, CREC_ELEMENT_F32, 1, {16, 0, 0}, 2, 1.0, 1},
      {CREC_FFT_INVERSE, CREC_ELEMENT_F32, 3, {4, 3, 5}, 1, 1.0, 0},
      /* a prime length: Bluestein's algorithm, with a work area in the workspace */
      {CREC_FFT_FORWARD, CREC_ELEMENT_F64, 1, {1009, 0, 0}, 2, 1.0, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) run_case(&cases[i]);
}

Test(gpu_fft, real_transforms_match_the_dft) {
  fcase cases[] = {
      {CREC_FFT_REAL_FORWARD, CREC_ELEMENT_F32, 1, {10, 0, 0}, 4, 1.0, 0},
      {CREC_FFT_REAL_FORWARD, CREC_ELEMENT_F64, 2, {5, 7, 0}, 2, 1.0, 0},
      {CREC_FFT_REAL_INVERSE, CREC_ELEMENT_F64, 3, {4, 3, 6}, 1, 1.0 / 72, 0},
      {CREC_FFT_REAL_INVERSE, CREC_ELEMENT_F32, 1, {9, 0, 0}, 3, 1.0 / 9, 0},
      {CREC_FFT_REAL_FORWARD, CREC_ELEMENT_F32, 1, {1009, 0, 0}, 1, 1.0, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) run_case(&cases[i]);
}

Test(gpu_fft, an_fft_and_its_inverse_in_a_loop_body_and_a_branch_give_the_input_back) {
  gt t;
  gt_init(&t, 1);
  enum { N = 24, B = 2 };
  fcase c = {CREC_FFT_FORWARD, CREC_ELEMENT_F32, 1, {N, 0, 0}, B, 1.0, 0};
  const uint64_t bytes = 2 * N * B * 4;
  crec_buffer x, y, z, state;
  EXPECT_OK(crec_program_add_argument(t.p, "x", bytes, NULL, &x));
  EXPECT_OK(crec_program_add_argument(t.p, "y", bytes, NULL, &y));
  EXPECT_OK(crec_program_add_argument(t.p, "z", bytes, NULL, &z));
  EXPECT_OK(crec_program_add_argument(t.p, "state", 64, NULL, &state));
  crec_region top = crec_program_body(t.p);
  /* counter = 4; while (--counter > 0) { y = fft(x); x = ifft(y) / N }; if (1) z = fft(x) */
  crec_region body = gt_countdown_loop(&t, top, state, 4);
  crec_command cmd;
  crec_fft f = CREC_FFT_INIT;
  f.rank = 1, f.length[0] = N, f.batch = B;
  f.input = crec_range_whole(x), f.output = crec_range_whole(y);
  EXPECT_OK(crec_program_add_fft(t.p, body, "forward", &f, &cmd));
  crec_fft inv = f;
  inv.type = CREC_FFT_INVERSE, inv.scale = 1.0 / N;
  inv.input = crec_range_whole(y), inv.output = crec_range_whole(x);
  EXPECT_OK(crec_program_add_fft(t.p, body, "inverse", &inv, &cmd));
  crec_region then_r = gt_taken_branch(&t, top, state);
  crec_fft again = f;
  again.output = crec_range_whole(z);
  EXPECT_OK(crec_program_add_fft(t.p, then_r, "again", &again, &cmd));
  /* per set: x is the set's input, z its output; y and the state are extra */
  fset sets[3];
  void *ys[3], *states[3];
  for (int i = 0; i < 3; i++) sets[i] = make_set(&c), ys[i] = gt_alloc(bytes), states[i] = gt_alloc(64);
  crec_binding bd[4];
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = bd;
  bs.num_buffers = 4;
  crec_exec *ex = NULL;
  int reps = gt_reps(30);
  for (int i = 0; i < reps; i++) {
    int k = i % 3;
    fset *s = &sets[k];
    to_device(&c, s->din, s->in, s->in_n);
    gt_fill(s->dout, bytes, (uint32_t)i);
    bd[0] = (crec_binding){s->din, bytes}, bd[1] = (crec_binding){ys[k], bytes};
    bd[2] = (crec_binding){s->dout, bytes}, bd[3] = (crec_binding){states[k], 64};
    if (!ex) {
      crec_status rs = crec_record(t.p, &bs, NULL, &ex);
      skip_without_cufft(rs);
      cr_assert_eq(rs, CREC_OK, "crec_record: %s: %s", crec_status_name(rs), crec_last_error());
    }
    gt_replay(ex, &bs, stream);
    char what[80];
    /* three round trips leave x as it was (within rounding): its fft is the expected one */
    snprintf(what, sizeof what, "replay %d: z = fft(x) after three round trips", i);
    expect_close(&c, s, what);
    fset yview = *s;
    yview.dout = ys[k];
    snprintf(what, sizeof what, "replay %d: y, the loop's last forward transform", i);
    expect_close(&c, &yview, what);
  }
  crec_exec_destroy(ex);
  for (int i = 0; i < 3; i++) {
    free_set(&sets[i]);
    crec_device_free(ys[i]);
    crec_device_free(states[i]);
  }
  crec_program_destroy(t.p);
}

Test(gpu_fft, a_workspace_smaller_than_the_plan_needs_is_named_at_record) {
  crec_program *p;
  EXPECT_OK(crec_program_create(&p));
  /* a prime length: cuFFT runs it through Bluestein's algorithm, with a work area */
  enum { N = 10007 };
  crec_buffer in, out;
  EXPECT_OK(crec_program_add_argument(p, "in", N * 8, NULL, &in));
  EXPECT_OK(crec_program_add_argument(p, "out", N * 8, NULL, &out));
  crec_fft f = CREC_FFT_INIT;
  f.length[0] = N;
  f.input = crec_range_whole(in), f.output = crec_range_whole(out);
  f.workspace_bytes = 256;
  crec_command cmd;
  EXPECT_OK(crec_program_add_fft(p, crec_program_body(p), "prime", &f, &cmd));
  void *a = gt_alloc(N * 8), *b = gt_alloc(N * 8);
  crec_binding bd[2] = {{a, N * 8}, {b, N * 8}};
  crec_bindings bs = CREC_BINDINGS_INIT;
  bs.buffers = bd;
  bs.num_buffers = 2;
  crec_exec *ex = NULL;
  crec_status s = crec_record(p, &bs, NULL, &ex);
  if (s == CREC_ERR_UNSUPPORTED && strstr(crec_last_error(), "cuFFT")) {
    crec_device_free(a);
    crec_device_free(b);
    crec_program_destroy(p);
    skip_without_cufft(s);
  }
  cr_expect_eq(s, CREC_ERR_OUT_OF_RANGE, "%s: %s", crec_status_name(s), crec_last_error());
  EXPECT_ERROR_MENTIONS("cuFFT's plan needs");
  EXPECT_ERROR_MENTIONS("command 0 ('prime')");
  cr_expect_null(ex);
  /* a second record checks again: no plan was kept from the first */
  s = crec_record(p, &bs, NULL, &ex);
  cr_expect_eq(s, CREC_ERR_OUT_OF_RANGE, "the second record: %s: %s", crec_status_name(s), crec_last_error());
  cr_expect_null(ex);
  crec_device_free(a);
  crec_device_free(b);
  crec_program_destroy(p);
}
