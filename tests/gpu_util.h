/* Helpers for the GPU suites: the test kernels, device buffers, comparisons. */
#ifndef CREC_TESTS_GPU_UTIL_H
#define CREC_TESTS_GPU_UTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "common.h"

/* A program with every kernel of tests/kernels/test_kernels.cu registered. */
typedef struct gt {
  crec_program *p;
  crec_kernel scale, mix, inc, affine, countdown, test_positive, store_i32, log, tick, spin, params;
  crec_kernel scale_early; /* t_scale with griddepcontrol.wait on sm_90 and later (CREC_LAUNCH_EARLY_START) */
} gt;

/* Creates a program whose module is the test kernels as PTX (fatbin = 0) or fatbin. */
void gt_init(gt *t, int fatbin);

/* Appends an elementwise launch over `n` 4-byte elements (grid = ceil(n/128)). */
crec_command gt_launch(gt *t, crec_region r, crec_kernel k, uint32_t n, const crec_arg *args, size_t num_args);
/* Appends a one-thread launch. */
crec_command gt_launch1(gt *t, crec_region r, crec_kernel k, const crec_arg *args, size_t num_args);

/* Device memory, failing the test on error. */
void *gt_alloc(uint64_t size);
void gt_upload(void *dst, const void *src, uint64_t size);
void gt_download(void *dst, const void *src, uint64_t size);
/* Fills `size` bytes of device memory with a pattern from `seed`. */
void gt_fill(void *dst, uint64_t size, uint32_t seed);
/* Asserts that two device ranges hold the same bytes, naming `what` and the first difference. */
void gt_expect_same(const void *a, const void *b, uint64_t size, const char *what);

/* Runs eager and synchronizes. */
void gt_eager(const crec_program *p, const crec_bindings *b, crec_stream s);
/* Whether device 0 runs crec's device-side updater (crec_record_options.device_updates). */
bool gt_device_updates_available(void);
/* Replays and synchronizes. */
void gt_replay(crec_exec *e, const crec_bindings *b, crec_stream s);
/* In region `r`: counter = `start` (word 0 of `state`, 64 bytes or more), then a
 * while loop that runs start - 1 times, its condition `--counter > 0` (the
 * predicate at byte 16); returns its body. */
crec_region gt_countdown_loop(gt *t, crec_region r, crec_buffer state, int32_t start);
/* In region `r`: an if whose predicate (byte 20 of `state`) a fill sets to 1
 * just before it; returns its then branch, which always runs. */
crec_region gt_taken_branch(gt *t, crec_region r, crec_buffer state);
/* How many times a test replays-and-compares, for a test written for `n`: `n`,
 * or at most CREC_TEST_REPLAY_CAP (at least 3: one rotation of three buffer
 * sets) when that is set. tools/gpu-check.sh --stress sets it, since there a
 * round is for concurrency, and eager's host syncs are slow when 8 processes
 * share the GPU. */
int gt_reps(int n);

/* ---- worker threads ----
 * Criterion's checks belong to the test's own thread, and crec_last_error() to
 * the thread whose call failed (in crec_gpu_stress, the test thread's still holds
 * an earlier test's message). So a worker keeps its own first failure, with the
 * message read on its thread, and the test reports it with gt_expect_worker(). */
typedef struct gt_worker {
  int failed;
  char call[160];    /* the call that failed, or the check */
  char message[800]; /* crec_last_error() on the worker's thread, or what differed */
} gt_worker;

/* On a worker: whether `s`, what `call` returned, is CREC_OK; the first failure
 * is kept in `w` with this thread's crec_last_error(). */
bool gt_worker_ok(gt_worker *w, const char *call, crec_status s);
/* GT_WORKER_OK(w, call): gt_worker_ok() naming the call by its text. */
#define GT_WORKER_OK(w, call) gt_worker_ok((w), #call, (call))
/* On a worker: keeps a failed check (printf-style: what differed) unless a
 * failure is kept already; returns false. */
bool gt_worker_fail(gt_worker *w, const char *check, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* On a worker: fills `size` host bytes from `seed` as gt_fill() does. */
void gt_pattern(void *dst, uint64_t size, uint32_t seed);
/* On the test's thread: expects that worker `index` kept no failure, printing its call and message. */
void gt_expect_worker(const gt_worker *w, int index);

/* A pseudo-random number in [-1, 1) from the generator state `*state` (a linear congruential one). */
double gt_drand(uint32_t *state);

/* f16 and bf16 on the host: from f32 rounded to nearest even, and back. */
uint16_t gt_f32_to_f16(float f);
float gt_f16_to_f32(uint16_t h);
uint16_t gt_f32_to_bf16(float f);
float gt_bf16_to_f32(uint16_t b);

#endif
