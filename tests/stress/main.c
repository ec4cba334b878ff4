/* The runner of suites compiled with CREC_TEST_INPROC (inproc.h says why):
 * crec_gpu_stress, the GPU control-flow, replay and threads suites in this one
 * process, for tools/gpu-check.sh --stress; and the ThreadSanitizer build's
 * crec_tests, the CPU suites, each test in a process of its own. It prints
 * Criterion's report lines, so that scripts read them as they read Criterion's.
 *
 *   RUNNER [--filter GLOB]... [--list] [--verbose] [--fork] [-jN]
 *
 * GLOB matches "suite/test" (fnmatch), as Criterion's --filter does; none
 * means every test. --fork (the default of a runner built with CREC_TEST_FORK)
 * runs each test in a forked process, N at once (-jN, default: the CPU count),
 * which ends a test past its .timeout and counts a crash, or a sanitizer's
 * exit status, as that test's failure. In one process every test's [RUN ] and
 * [PASS] lines are printed; forked, only with --verbose. Exit status: 0 when
 * every test that ran passed (or was skipped), 1 when one failed, 2 for a bad
 * command line. */
#include <fnmatch.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "inproc.h"

typedef struct test {
  const char *suite, *name;
  void (*fn)(void);
  crec_inproc_opts opts;
} test;

typedef struct suite {
  const char *name;
  crec_inproc_opts opts;
} suite;

static test *tests;
static size_t num_tests, cap_tests;
static suite suites[64];
static size_t num_suites;

void crec_inproc_register_test(const char *s, const char *name, void (*fn)(void), crec_inproc_opts opts) {
  if (num_tests == cap_tests) {
    cap_tests = cap_tests ? 2 * cap_tests : 64;
    test *t = realloc(tests, cap_tests * sizeof *t);
    if (!t) {
      fputs("crec test runner: out of memory registering tests\n", stderr);
      exit(2);
    }
    tests = t;
  }
  tests[num_tests++] = (test){s, name, fn, opts};
}

void crec_inproc_register_suite(const char *name, crec_inproc_opts opts) {
  if (num_suites == sizeof suites / sizeof *suites) {
    fprintf(stderr, "crec test runner: more than %zu suites\n", sizeof suites / sizeof *suites);
    exit(2);
  }
  suites[num_suites++] = (suite){name, opts};
}

/* The test running now: where a fatal check or a skip returns to, and its state. */
static jmp_buf test_exit;
static const test *current;
static int current_failed;
static int verbose;

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
  if (verbose) vreport("SKIP", NULL, 0, NULL, fmt, ap);
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

/* Runs test `t` with its suite's and its own init and fini: 0 passed, 1 failed,
 * 2 skipped. (volatile: kept across the longjmp from a fatal check.) */
static const suite *current_suite;

static int run_one(const test *t) {
  current_suite = find_suite(t->suite);
  current = t;
  current_failed = 0;
  if (verbose) printf("[RUN ] %s::%s\n", t->suite, t->name);
  fflush(stdout);
  double t0 = now();
  volatile int skipped = 0;
  /* (setjmp only as a whole controlling expression: C11 7.13.1.1) */
  switch (setjmp(test_exit)) {
    case 0:
      if (current_suite && current_suite->opts.init) current_suite->opts.init();
      if (t->opts.init) t->opts.init();
      t->fn();
      break;
    case 2:
      skipped = 1;
      break;
    default:
      break;
  }
  /* a fatal check in a fini ends that fini, not the run */
  if (setjmp(test_exit) == 0) {
    if (t->opts.fini) t->opts.fini();
  }
  if (setjmp(test_exit) == 0) {
    if (current_suite && current_suite->opts.fini) current_suite->opts.fini();
  }
  /* a test that failed and then skipped failed */
  if (current_failed) {
    printf("[FAIL] %s::%s\n", t->suite, t->name);
    fflush(stdout);
    return 1;
  }
  if (skipped) return 2;
  if (verbose) printf("[PASS] %s::%s: (%.2fs)\n", t->suite, t->name, now() - t0);
  fflush(stdout);
  return 0;
}

/* ---- each test in a process of its own ---- */

typedef struct child {
  pid_t pid;
  const test *t;
} child;

/* Runs test `t` in a forked process; returns its pid (-1 when fork failed). */
static pid_t start(const test *t) {
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid != 0) return pid;
  /* the child: a timeout ends it with SIGALRM, which the parent names */
  if (t->opts.timeout > 0) {
    unsigned s = (unsigned)t->opts.timeout;
    alarm(s < t->opts.timeout ? s + 1 : s);
  }
  int r = run_one(t);
  fflush(stdout);
  fflush(stderr);
  _exit(r);
}

/* What the child of test `t` ended with: 0 passed, 1 failed, 2 skipped. */
static int reap(const test *t, int status) {
  if (WIFEXITED(status) && WEXITSTATUS(status) <= 2) return WEXITSTATUS(status);
  if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
    printf("[FAIL] %s::%s: timed out after %g s\n", t->suite, t->name, t->opts.timeout);
  else if (WIFSIGNALED(status))
    printf("[FAIL] %s::%s: CRASH: signal %d (%s)\n", t->suite, t->name, WTERMSIG(status), strsignal(WTERMSIG(status)));
  else
    printf("[FAIL] %s::%s: exit status %d (a sanitizer's report above?)\n", t->suite, t->name, WEXITSTATUS(status));
  fflush(stdout);
  return 1;
}

/* Runs the selected tests, `jobs` processes at once; counts into `counts` (passed, failed, skipped). */
static void run_forked(const test **sel, size_t n, long jobs, size_t counts[3]) {
  child *running = calloc((size_t)jobs, sizeof *running);
  if (!running) {
    fputs("crec test runner: out of memory\n", stderr);
    exit(2);
  }
  size_t next = 0, active = 0;
  while (next < n || active) {
    while (next < n && active < (size_t)jobs) {
      pid_t pid = start(sel[next]);
      if (pid < 0) {
        perror("crec test runner: fork");
        counts[1]++;
        next++;
        continue;
      }
      for (long k = 0; k < jobs; k++)
        if (!running[k].pid) {
          running[k] = (child){pid, sel[next]};
          break;
        }
      next++;
      active++;
    }
    if (!active) break;
    int status;
    pid_t pid = wait(&status);
    if (pid < 0) {
      perror("crec test runner: wait");
      exit(2);
    }
    for (long k = 0; k < jobs; k++)
      if (running[k].pid == pid) {
        counts[reap(running[k].t, status)]++;
        running[k].pid = 0;
        active--;
        break;
      }
  }
  free(running);
}

int main(int argc, char **argv) {
  /* whole lines out at once: a run that a timeout kills keeps what it printed */
  setvbuf(stdout, NULL, _IOLBF, 0);
  const char *filters[16];
  size_t num_filters = 0;
  int list = 0, forked = 0, verbose_flag = 0;
  long jobs = sysconf(_SC_NPROCESSORS_ONLN);
#ifdef CREC_TEST_FORK
  forked = 1;
#endif
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--filter") == 0 && i + 1 < argc && num_filters < sizeof filters / sizeof *filters)
      filters[num_filters++] = argv[++i];
    else if (strcmp(argv[i], "--list") == 0)
      list = 1;
    else if (strcmp(argv[i], "--verbose") == 0)
      verbose_flag = 1;
    else if (strcmp(argv[i], "--fork") == 0)
      forked = 1;
    else if (strncmp(argv[i], "-j", 2) == 0 && (argv[i][2] || i + 1 < argc))
      jobs = atol(argv[i][2] ? argv[i] + 2 : argv[++i]);
    else {
      fprintf(stderr, "%s: unknown argument '%s' (usage: %s [--filter GLOB]... [--list] [--verbose] [--fork] [-jN])\n",
              argv[0], argv[i], argv[0]);
      return 2;
    }
  }
  if (jobs < 1) jobs = 1;
  verbose = verbose_flag || !forked;
  const test **sel = malloc((num_tests ? num_tests : 1) * sizeof *sel);
  if (!sel) return 2;
  size_t n = 0;
  for (size_t i = 0; i < num_tests; i++) {
    char full[256];
    snprintf(full, sizeof full, "%s/%s", tests[i].suite, tests[i].name);
    int match = num_filters == 0;
    for (size_t f = 0; f < num_filters && !match; f++) match = fnmatch(filters[f], full, 0) == 0;
    if (!match) continue;
    if (list) printf("%s::%s\n", tests[i].suite, tests[i].name);
    else sel[n++] = &tests[i];
  }
  size_t counts[3] = {0, 0, 0}; /* passed, failed, skipped */
  if (forked) run_forked(sel, n, jobs, counts);
  else
    for (size_t i = 0; i < n; i++) counts[run_one(sel[i])]++;
  if (!list)
    printf("[====] Synthesis: Tested: %zu | Passing: %zu | Failing: %zu | Crashing: 0 | Skipped: %zu\n",
           counts[0] + counts[1], counts[0], counts[1], counts[2]);
  free(sel);
  free(tests);
  return counts[1] ? 1 : 0;
}
