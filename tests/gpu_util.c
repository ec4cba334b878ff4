#include "gpu_util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

extern const unsigned char crec_test_kernels_ptx[];
extern const size_t crec_test_kernels_ptx_size;
extern const unsigned char crec_test_kernels_fatbin[];
extern const size_t crec_test_kernels_fatbin_size;

void gt_init(gt *t, int fatbin) {
  memset(t, 0, sizeof *t);
  EXPECT_OK(crec_program_create(&t->p));
  crec_module m;
  if (fatbin)
    EXPECT_OK(crec_program_add_module(t->p, "test_kernels", CREC_IMAGE_FATBIN, crec_test_kernels_fatbin,
                                      crec_test_kernels_fatbin_size, &m));
  else
    EXPECT_OK(crec_program_add_module(t->p, "test_kernels", CREC_IMAGE_PTX, crec_test_kernels_ptx,
                                      crec_test_kernels_ptx_size, &m));
  struct {
    crec_kernel *k;
    const char *name;
  } ks[] = {{&t->scale, "t_scale"},         {&t->mix, "t_mix"},
            {&t->inc, "t_inc"},             {&t->affine, "t_affine"},
            {&t->countdown, "t_countdown"}, {&t->test_positive, "t_test_positive"},
            {&t->store_i32, "t_store_i32"}, {&t->log, "t_log"},
            {&t->tick, "t_tick"},         {&t->spin, "t_spin"},
            {&t->params, "t_params"},       {&t->scale_early, "t_scale_early"}};
  for (size_t i = 0; i < sizeof ks / sizeof *ks; i++) EXPECT_OK(crec_program_add_kernel(t->p, m, ks[i].name, NULL, ks[i].k));
}

crec_command gt_launch(gt *t, crec_region r, crec_kernel k, uint32_t n, const crec_arg *args, size_t num_args) {
  crec_launch l = CREC_LAUNCH_INIT;
  l.kernel = k;
  l.grid[0] = crec_dim_of((n + 127) / 128);
  l.block[0] = crec_dim_of(128);
  l.args = args;
  l.num_args = num_args;
  crec_command c;
  EXPECT_OK(crec_program_add_launch(t->p, r, NULL, &l, &c));
  return c;
}

crec_command gt_launch1(gt *t, crec_region r, crec_kernel k, const crec_arg *args, size_t num_args) {
  crec_launch l = CREC_LAUNCH_INIT;
  l.kernel = k;
  l.args = args;
  l.num_args = num_args;
  crec_command c;
  EXPECT_OK(crec_program_add_launch(t->p, r, NULL, &l, &c));
  return c;
}

void *gt_alloc(uint64_t size) {
  void *p = NULL;
  EXPECT_OK(crec_device_alloc(0, size, &p));
  return p;
}

void gt_upload(void *dst, const void *src, uint64_t size) { EXPECT_OK(crec_copy(dst, src, size)); }
void gt_download(void *dst, const void *src, uint64_t size) { EXPECT_OK(crec_copy(dst, src, size)); }

void gt_pattern(void *dst, uint64_t size, uint32_t seed) {
  uint8_t *h = dst;
  uint32_t x = seed * 2654435761u + 12345u;
  for (uint64_t i = 0; i < size; i++) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    h[i] = (uint8_t)x;
  }
}

void gt_fill(void *dst, uint64_t size, uint32_t seed) {
  uint8_t *h = malloc(size);
  cr_assert(h);
  gt_pattern(h, size, seed);
  gt_upload(dst, h, size);
  free(h);
}

bool gt_worker_ok(gt_worker *w, const char *call, crec_status s) {
  if (s == CREC_OK) return true;
  if (!w->failed) {
    w->failed = 1;
    snprintf(w->call, sizeof w->call, "%s", call);
    snprintf(w->message, sizeof w->message, "%s: %s", crec_status_name(s), crec_last_error());
  }
  return false;
}

bool gt_worker_fail(gt_worker *w, const char *check, const char *fmt, ...) {
  if (!w->failed) {
    w->failed = 1;
    snprintf(w->call, sizeof w->call, "%s", check);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->message, sizeof w->message, fmt, ap);
    va_end(ap);
  }
  return false;
}

void gt_expect_worker(const gt_worker *w, int index) {
  cr_expect(!w->failed, "thread %d: %s: %s", index, w->call, w->message);
}

void gt_expect_same(const void *a, const void *b, uint64_t size, const char *what) {
  uint8_t *ha = malloc(size), *hb = malloc(size);
  cr_assert(ha && hb);
  gt_download(ha, a, size);
  gt_download(hb, b, size);
  for (uint64_t i = 0; i < size; i++)
    if (ha[i] != hb[i]) {
      uint8_t x = ha[i], y = hb[i];
      free(ha);
      free(hb);
      cr_assert_fail("%s: first difference at byte %llu (replay 0x%02x, eager 0x%02x)", what,
                     (unsigned long long)i, x, y);
    }
  free(ha);
  free(hb);
}

void gt_eager(const crec_program *p, const crec_bindings *b, crec_stream s) {
  EXPECT_OK(crec_run_eager(p, b, s));
  EXPECT_OK(crec_stream_synchronize(s));
}

void gt_replay(crec_exec *e, const crec_bindings *b, crec_stream s) {
  EXPECT_OK(crec_exec_replay(e, b, s));
  EXPECT_OK(crec_stream_synchronize(s));
}

int gt_reps(int n) {
  const char *env = getenv("CREC_TEST_REPLAY_CAP");
  int cap = env ? atoi(env) : 0;
  if (cap <= 0) return n;
  if (cap < 3) cap = 3;
  return n < cap ? n : cap;
}

bool gt_device_updates_available(void) {
  int major = 0, minor = 0;
  char name[64];
  EXPECT_OK(crec_device_describe(0, name, sizeof name, &major, &minor));
  return major >= 8; /* kernels/updater.cu is built for sm_80 and later */
}

/* ---- f16 and bf16 on the host (round to nearest even) ---- */

uint16_t gt_f32_to_f16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000, e32 = (x >> 23) & 0xff, mant = x & 0x7fffff;
  if (e32 == 0xff) return (uint16_t)(sign | 0x7c00 | (mant ? 0x200 : 0));
  int32_t exp = (int32_t)e32 - 127 + 15;
  if (exp >= 31) return (uint16_t)(sign | 0x7c00);
  if (exp <= 0) { /* subnormal: units of 2^-24 */
    if (exp < -10) return (uint16_t)sign;
    mant |= 0x800000;
    uint32_t shift = (uint32_t)(14 - exp), h = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1))) h++;
    return (uint16_t)(sign | h);
  }
  uint32_t h = ((uint32_t)exp << 10) | (mant >> 13), rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) h++; /* may carry into the exponent: still right */
  return (uint16_t)(sign | h);
}

float gt_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff, x;
  if (exp == 0) {
    float v = (float)mant * 5.9604644775390625e-8f; /* 2^-24 */
    return sign ? -v : v;
  }
  if (exp == 31) x = sign | 0x7f800000 | (mant << 13);
  else x = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  float f;
  memcpy(&f, &x, 4);
  return f;
}

uint16_t gt_f32_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  x += 0x7fff + ((x >> 16) & 1); /* round to nearest even (no NaNs here) */
  return (uint16_t)(x >> 16);
}

float gt_bf16_to_f32(uint16_t b) {
  uint32_t x = (uint32_t)b << 16;
  float f;
  memcpy(&f, &x, 4);
  return f;
}

double gt_drand(uint32_t *state) {
  *state = *state * 1664525u + 1013904223u;
  return (double)(*state >> 8) / (double)(1u << 24) * 2.0 - 1.0;
}

crec_region gt_countdown_loop(gt *t, crec_region r, crec_buffer state, int32_t start) {
  crec_arg st[] = {crec_arg_buffer(crec_range_of(state, 0, 4), CREC_ACCESS_WRITE), crec_arg_i32(start)};
  gt_launch1(t, r, t->store_i32, st, 2);
  crec_command w;
  crec_region cond, body;
  EXPECT_OK(crec_program_add_while(t->p, r, "loop", crec_range_of(state, 16, 1), &w, &cond, &body));
  crec_arg down[] = {crec_arg_buffer(crec_range_of(state, 0, 4), CREC_ACCESS_READ_WRITE),
                     crec_arg_buffer(crec_range_of(state, 16, 1), CREC_ACCESS_WRITE)};
  gt_launch1(t, cond, t->countdown, down, 2);
  return body;
}

crec_region gt_taken_branch(gt *t, crec_region r, crec_buffer state) {
  crec_command c;
  crec_region then_r, else_r;
  EXPECT_OK(crec_program_add_memset(t->p, r, NULL, crec_range_of(state, 20, 4), 1, 4, &c));
  EXPECT_OK(crec_program_add_if(t->p, r, "branch", crec_range_of(state, 20, 1), &c, &then_r, &else_r));
  return then_r;
}
