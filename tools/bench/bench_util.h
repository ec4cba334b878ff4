/* Shared pieces of crec's benchmarks: timing, percentiles, JSON output, and
 * direct driver access for the hand-built reference graphs. */
#ifndef CREC_BENCH_UTIL_H
#define CREC_BENCH_UTIL_H

#include <stdio.h>
#include <stdlib.h>

#include "crec/crec.h"
#include "replay_internal.h"

extern const unsigned char crec_test_kernels_ptx[];
extern const size_t crec_test_kernels_ptx_size;
/* the same kernels as a fatbin: sm_90 code (the early-start kernel's wait) and compute_75 PTX */
extern const unsigned char crec_test_kernels_fatbin[];
extern const size_t crec_test_kernels_fatbin_size;
extern const unsigned char crec__conditions_fatbin[];

#define BENCH_OK(call)                                                                        \
  do {                                                                                        \
    crec_status s_ = (call);                                                                  \
    if (s_ != CREC_OK) {                                                                      \
      fprintf(stderr, "bench: %s:%d: %s: %s\n", __FILE__, __LINE__, crec_status_name(s_),     \
              crec_last_error());                                                             \
      exit(1);                                                                                \
    }                                                                                         \
  } while (0)

#define CU_OK(call)                                                                           \
  do {                                                                                        \
    CUresult r_ = (call);                                                                     \
    if (r_ != CUDA_SUCCESS) {                                                                 \
      fprintf(stderr, "bench: %s:%d: %s failed with CUDA error %d\n", __FILE__, __LINE__,     \
              #call, (int)r_);                                                                \
      exit(1);                                                                                \
    }                                                                                         \
  } while (0)

/* Parses "[--json FILE] [--quick] [--only SECTION,...]"; returns 0 after printing
 * the usage on anything else. */
int bench_args(int argc, char **argv, const char **json_path, int *quick);
/* Whether --only names `section` (or there was no --only): the sections a bench
 * runs are those its main() asks about. */
int bench_want(const char *section);
/* Returns 0 (after printing why) when no device is available. */
int bench_init(void);
const crec__cu *bench_cu(void);
CUstream bench_stream(void);
CUcontext bench_ctx(void);
void *bench_alloc(uint64_t size);
double bench_now_us(void);
/* The process's minor page faults so far (getrusage). */
long bench_minor_faults(void);
/* The CUfunction of kernel `entry` as loaded for exec `e`. */
CUfunction bench_function(const crec_exec *e, const char *entry);
/* A function of crec's set-condition module, loaded once for the benchmarks. */
CUfunction bench_condition_kernel(const char *name);

typedef struct bench_stats {
  double *v;
  int n, cap;
  int sorted;
} bench_stats;
void bench_stats_init(bench_stats *s, int cap);
void bench_stats_add(bench_stats *s, double x);
double bench_pct(bench_stats *s, double p);
#define bench_min(s) bench_pct((s), 0)
#define bench_p50(s) bench_pct((s), 50)
#define bench_p90(s) bench_pct((s), 90)
#define bench_p99(s) bench_pct((s), 99)
void bench_stats_free(bench_stats *s);

/* A tiny JSON writer: objects and arrays nest; keys may be NULL inside arrays. */
typedef struct bench_json {
  char *buf;
  size_t len, cap;
  int need_comma;
} bench_json;
void bench_json_begin(bench_json *j);
void bench_json_open_object(bench_json *j, const char *key);
void bench_json_open_array(bench_json *j, const char *key);
void bench_json_close(bench_json *j);
void bench_json_num(bench_json *j, const char *key, double v);
void bench_json_int(bench_json *j, const char *key, long long v);
void bench_json_stats(bench_json *j, const char *key, bench_stats *s);
/* Closes the top object and writes it to `path` (if not NULL). */
void bench_json_end(bench_json *j, const char *path);

#endif
