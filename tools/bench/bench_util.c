#include "bench_util.h"

#include <stdarg.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static const crec__cu *cu;
static CUstream stream;
static CUcontext ctx;

static const char *only; /* --only: a comma-separated list of sections, or NULL for all */

int bench_args(int argc, char **argv, const char **json_path, int *quick) {
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--json") == 0 && i + 1 < argc) *json_path = argv[++i];
    else if (strcmp(argv[i], "--quick") == 0) *quick = 1;
    else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) only = argv[++i];
    else {
      fprintf(stderr, "usage: %s [--json FILE] [--quick] [--only SECTION,...]\n", argv[0]);
      return 0;
    }
  }
  return 1;
}

int bench_want(const char *section) {
  if (!only) return 1;
  size_t n = strlen(section);
  for (const char *p = only; *p;) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len == n && !strncmp(p, section, n)) return 1;
    if (!end) break;
    p = end + 1;
  }
  return 0;
}

int bench_init(void) {
  if (!crec_device_available()) {
    printf("bench: no CUDA device (%s); nothing measured\n", crec_last_error());
    return 0;
  }
  cu = crec__driver("bench");
  BENCH_OK(crec__use_device(cu, 0, "bench", &ctx));
  CU_OK(cu->cuCtxSetCurrent(ctx));
  CU_OK(cu->cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  char name[128];
  int major, minor, version;
  BENCH_OK(crec_device_describe(0, name, sizeof name, &major, &minor));
  BENCH_OK(crec_driver_version(&version));
  printf("device: %s (sm_%d%d), driver %d.%d\n", name, major, minor, version / 1000, version % 1000 / 10);
  return 1;
}

const crec__cu *bench_cu(void) { return cu; }
CUstream bench_stream(void) { return stream; }
CUcontext bench_ctx(void) { return ctx; }

void *bench_alloc(uint64_t size) {
  void *p;
  BENCH_OK(crec_device_alloc(0, size, &p));
  CU_OK(cu->cuMemsetD8Async((CUdeviceptr)(uintptr_t)p, 0, size, NULL));
  CU_OK(cu->cuStreamSynchronize(NULL));
  return p;
}

long bench_minor_faults(void) {
  struct rusage u;
  return getrusage(RUSAGE_SELF, &u) == 0 ? u.ru_minflt : 0;
}

double bench_now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

CUfunction bench_function(const crec_exec *e, const char *entry) {
  const crec_program *p = e->program;
  for (size_t i = 0; i < p->num_kernels; i++)
    if (strcmp(p->kernels[i].entry, entry) == 0) return e->state->functions[i];
  fprintf(stderr, "bench: no kernel %s\n", entry);
  exit(1);
}

CUfunction bench_condition_kernel(const char *name) {
  static CUmodule m;
  if (!m) CU_OK(cu->cuModuleLoadData(&m, crec__conditions_fatbin));
  CUfunction f;
  CU_OK(cu->cuModuleGetFunction(&f, m, name));
  return f;
}

void bench_stats_init(bench_stats *s, int cap) {
  s->v = malloc((size_t)(cap > 0 ? cap : 1) * sizeof *s->v);
  s->n = 0;
  s->cap = cap > 0 ? cap : 1;
  s->sorted = 0;
}

void bench_stats_add(bench_stats *s, double x) {
  if (s->n == s->cap) {
    s->cap *= 2;
    s->v = realloc(s->v, (size_t)s->cap * sizeof *s->v);
  }
  s->v[s->n++] = x;
  s->sorted = 0;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

double bench_pct(bench_stats *s, double p) {
  if (s->n == 0) return 0;
  if (!s->sorted) {
    qsort(s->v, (size_t)s->n, sizeof *s->v, cmp_double);
    s->sorted = 1;
  }
  int i = (int)(p / 100.0 * (s->n - 1) + 0.5);
  return s->v[i < 0 ? 0 : i >= s->n ? s->n - 1 : i];
}

void bench_stats_free(bench_stats *s) { free(s->v); }

static void put(bench_json *j, const char *fmt, ...) {
  char tmp[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (j->len + (size_t)n + 1 > j->cap) {
    j->cap = (j->cap + (size_t)n + 1) * 2;
    j->buf = realloc(j->buf, j->cap);
  }
  memcpy(j->buf + j->len, tmp, (size_t)n + 1);
  j->len += (size_t)n;
}

static void key(bench_json *j, const char *k) {
  if (j->need_comma) put(j, ",");
  if (k) put(j, "\"%s\":", k);
  j->need_comma = 1;
}

void bench_json_begin(bench_json *j) {
  memset(j, 0, sizeof *j);
  put(j, "{");
}
void bench_json_open_object(bench_json *j, const char *k) {
  key(j, k);
  put(j, "{");
  j->need_comma = 0;
}
void bench_json_open_array(bench_json *j, const char *k) {
  key(j, k);
  put(j, "[");
  j->need_comma = 0;
}
void bench_json_close(bench_json *j) {
  /* close whichever bracket is open: find the innermost unmatched one */
  int depth = 0;
  char c = '}';
  for (size_t i = j->len; i-- > 0;) {
    char x = j->buf[i];
    if (x == '}' || x == ']') depth++;
    else if (x == '{' || x == '[') {
      if (depth == 0) {
        c = x == '{' ? '}' : ']';
        break;
      }
      depth--;
    }
  }
  put(j, "%c", c);
  j->need_comma = 1;
}
void bench_json_num(bench_json *j, const char *k, double v) {
  key(j, k);
  put(j, "%.3f", v);
}
void bench_json_int(bench_json *j, const char *k, long long v) {
  key(j, k);
  put(j, "%lld", v);
}
void bench_json_stats(bench_json *j, const char *k, bench_stats *s) {
  key(j, k);
  put(j, "{\"min\":%.3f,\"p50\":%.3f,\"p90\":%.3f,\"p99\":%.3f}", bench_min(s), bench_p50(s), bench_p90(s),
      bench_p99(s));
}
void bench_json_end(bench_json *j, const char *path) {
  put(j, "}\n");
  if (path) {
    FILE *f = fopen(path, "w");
    if (!f) {
      fprintf(stderr, "bench: cannot write %s\n", path);
      exit(2);
    }
    fputs(j->buf, f);
    fclose(f);
    printf("JSON written to %s\n", path);
  }
  free(j->buf);
}
