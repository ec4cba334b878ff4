/* crec_gpu_stress: runs the GPU control-flow and replay suites' tests in this
 * one process (see inproc.h for why), printing Criterion's report lines, so
 * that tools/gpu-check.sh --stress reads them as it reads crec_gpu_tests'.
 *
 *   crec_gpu_stress [--filter GLOB]... [--list]
 *
 * GLOB matches "suite/test" (fnmatch), as crec_gpu_tests --filter does; none
 * means every test. Exit status: 0 when every test that ran passed (or was
 * skipped), 1 when one failed, 2 for a bad command line. */
#include <fnmatch.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "inproc.h"

typedef struct test {
  const char *suite, *name;
  void (*fn)(void);
} test;

typedef struct suite {
  const char *name;
  crec_inproc_suite_opts opts;
} suite;

static test *tests;
static size_t num_tests, cap_tests;
static suite suites[16];
static size_t num_suites;

void crec_inproc_register_test(const char *s, const char *name, void (*fn)(void)) {
  if (num_tests == cap_tests) {
    cap_tests = cap_tests ? 2 * cap_tests : 64;
    test *t = realloc(tests, cap_tests * sizeof *t);
    if (!t) {
      fputs("crec_gpu_stress: out of memory registering tests\n", stderr);
      exit(2);
    }
    tests = t;
  }
  tests[num_tests++] = (test){s, name, fn};
}

void crec_inproc_register_suite(const char *name, crec_inproc_suite_opts opts) {
  if (num_suites == sizeof suites / sizeof *suites) {
    fprintf(stderr, "crec_gpu_stress: more than %zu suites\n", sizeof suites / sizeof *suites);
    exit(2);
  }
  suites[num_suites++] = (suite){name, opts};
}

/* The test running now: where a fatal check or a skip returns to, and its state. */
static jmp_buf test_exit;
static const test *current;
static int current_failed;

/* As Criterion: "[----] FILE:LINE: Assertion Failed: ..." and "[SKIP] suite::test: ..." */
static void vreport(const char *tag, const char *file, int line, const char *expr, const char *fmt, va_list ap) {
  if (file)
    printf("[%s] %s:%d: Assertion Failed (%s::%s): ", tag, file, line, current->suite, current->name);
  else
    printf("[%s] %s::%s: ", tag, current->suite, current->name);
  if (fmt && *fmt == '\x01') fmt++;
  if (fmt && *fmt)
    vprintf(fmt, ap);
  else if (expr)
    printf("%s is false", expr);
  putchar('\n');
  fflush(stdout);
}

void crec_inproc_fail(int fatal, const char *file, int line, const char *expr, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vreport("----", file, line, expr, fmt, ap);
  va_end(ap);
  current_failed = 1;
  if (fatal) longjmp(test_exit, 1);
}

void crec_inproc_skip(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vreport("SKIP", NULL, 0, NULL, fmt, ap);
  va_end(ap);
  longjmp(test_exit, 2);
}

void crec_inproc_log(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  putchar('\n');
}

static const suite *find_suite(const char *name) {
  for (size_t i = 0; i < num_suites; i++)
    if (strcmp(suites[i].name, name) == 0) return &suites[i];
  return NULL;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Runs test `t` with its suite's init and fini: 0 passed, 1 failed, 2 skipped.
 * (volatile: kept across the longjmp from a fatal check.) */
static const suite *current_suite;

static int run_one(const test *t) {
  current_suite = find_suite(t->suite);
  current = t;
  current_failed = 0;
  printf("[RUN ] %s::%s\n", t->suite, t->name);
  fflush(stdout);
  double t0 = now();
  volatile int skipped = 0;
  /* (setjmp only as a whole controlling expression: C11 7.13.1.1) */
  switch (setjmp(test_exit)) {
    case 0:
      if (current_suite && current_suite->opts.init) current_suite->opts.init();
      t->fn();
      break;
    case 2:
      skipped = 1;
      break;
    default:
      break;
  }
  /* a fatal check in fini ends fini, not the run */
  if (setjmp(test_exit) == 0) {
    if (current_suite && current_suite->opts.fini) current_suite->opts.fini();
  }
  /* a test that failed and then skipped failed */
  if (current_failed) {
    printf("[FAIL] %s::%s\n", t->suite, t->name);
    return 1;
  }
  if (skipped) return 2;
  printf("[PASS] %s::%s: (%.2fs)\n", t->suite, t->name, now() - t0);
  fflush(stdout);
  return 0;
}

int main(int argc, char **argv) {
  /* whole lines out at once: a run that a timeout kills keeps what it printed */
  setvbuf(stdout, NULL, _IOLBF, 0);
  const char *filters[16];
  size_t num_filters = 0;
  int list = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--filter") == 0 && i + 1 < argc && num_filters < sizeof filters / sizeof *filters)
      filters[num_filters++] = argv[++i];
    else if (strcmp(argv[i], "--list") == 0)
      list = 1;
    else {
      fprintf(stderr, "crec_gpu_stress: unknown argument '%s' (usage: crec_gpu_stress [--filter GLOB]... [--list])\n",
              argv[i]);
      return 2;
    }
  }
  size_t tested = 0, passed = 0, failed = 0, skipped = 0;
  for (size_t i = 0; i < num_tests; i++) {
    char full[256];
    snprintf(full, sizeof full, "%s/%s", tests[i].suite, tests[i].name);
    int match = num_filters == 0;
    for (size_t f = 0; f < num_filters && !match; f++) match = fnmatch(filters[f], full, 0) == 0;
    if (!match) continue;
    if (list) {
      printf("%s::%s\n", tests[i].suite, tests[i].name);
      continue;
    }
    int r = run_one(&tests[i]);
    if (r == 2) {
      skipped++;
      continue;
    }
    tested++;
    if (r == 0)
      passed++;
    else
      failed++;
  }
  if (!list)
    printf("[====] Synthesis: Tested: %zu | Passing: %zu | Failing: %zu | Crashing: 0 | Skipped: %zu\n", tested, passed,
           failed, skipped);
  free(tests);
  return failed ? 1 : 0;
}
