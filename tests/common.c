#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dirent.h>
#include <dlfcn.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

/* The suites lower thousands of programs and count compilations: the persistent
 * cache of lowered programs stays off unless the caller turned it on
 * (test_cache.c turns it on, in a directory of its own, per test). Processes the
 * tests start (the crec tool) inherit this. */
__attribute__((constructor)) static void no_disk_cache(void) { setenv("CREC_CACHE", "0", 0); }

#if defined(__SANITIZE_ADDRESS__)
/* nvJitLink (crec_lower_options.cubin) allocates a C++ exception pool when it
 * loads and never frees it: its leak, not crec's. The crec tool says the same. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) { return "leak:libnvJitLink.so\n"; }
#endif

void crec_test_leak_check(void) {
#if defined(__SANITIZE_ADDRESS__)
  if (__lsan_do_recoverable_leak_check()) {
    fprintf(stderr, "crec tests: LeakSanitizer found leaks in this test (report above)\n");
    abort();
  }
#endif
}

const char crec_test_ptx[] =
    ".version 7.0\n.target sm_75\n.address_size 64\n"
    ".visible .entry k(.param .u64 p0, .param .u64 p1, .param .u32 n)\n{\n  ret;\n}\n";

crec_program *crec_test_program(crec_kernel *kernel) {
  crec_program *p = NULL;
  crec_module m;
  cr_assert_eq(crec_program_create(&p), CREC_OK, "%s", crec_last_error());
  cr_assert_eq(crec_program_add_module(p, "m", CREC_IMAGE_PTX, crec_test_ptx, strlen(crec_test_ptx), &m),
               CREC_OK, "%s", crec_last_error());
  cr_assert_eq(crec_program_add_kernel(p, m, "k", NULL, kernel), CREC_OK, "%s", crec_last_error());
  return p;
}

crec_kernel crec_test_cluster_kernel(crec_program *p) {
  crec_kernel_options o = CREC_KERNEL_OPTIONS_INIT;
  o.cluster[0] = 2;
  o.cluster[1] = o.cluster[2] = 1;
  crec_kernel k;
  EXPECT_OK(crec_program_add_kernel(p, crec_program_module(p, 0), "k", &o, &k));
  return k;
}

crec_buffer crec_test_argument(crec_program *p, const char *name, uint64_t size) {
  crec_buffer b;
  EXPECT_OK(crec_program_add_argument(p, name, size, NULL, &b));
  return b;
}

crec_buffer crec_test_temporary(crec_program *p, const char *name, uint64_t size) {
  crec_buffer b;
  EXPECT_OK(crec_program_add_temporary(p, name, size, &b));
  return b;
}

crec_command crec_test_launch(crec_program *p, crec_region region, const char *name, crec_kernel kernel,
                              const crec_arg *args, size_t n) {
  crec_launch l = CREC_LAUNCH_INIT;
  l.kernel = kernel, l.args = args, l.num_args = n;
  crec_command c;
  EXPECT_OK(crec_program_add_launch(p, region, name, &l, &c));
  return c;
}

crec_plan *crec_test_plan(const crec_program *p, crec_schedule schedule) {
  crec_plan_options o = CREC_PLAN_OPTIONS_INIT;
  o.schedule = schedule;
  crec_plan *plan = NULL;
  EXPECT_OK(crec_plan_create(p, &o, &plan));
  return plan;
}

void crec_test_teardown_program(crec_program **p) {
  crec_program_destroy(*p);
  *p = NULL;
  crec_test_leak_check();
}

/* ---- counts ---- */

crec_test_counts crec_test_counts_of(const crec_program *p) {
  crec_test_counts c;
  memset(&c, 0, sizeof c);
  c.buffers = crec_program_buffer_count(p);
  c.arguments = crec_program_argument_count(p);
  c.scalars = crec_program_scalar_count(p);
  c.bound_scalars = crec_program_bound_scalar_count(p);
  c.host_functions = crec_program_host_function_count(p);
  c.modules = crec_program_module_count(p);
  c.kernels = crec_program_kernel_count(p);
  c.regions = crec_program_region_count(p);
  c.commands = crec_program_command_count(p);
  for (size_t i = 0; i < c.regions; i++) {
    crec_region_info info;
    cr_assert_eq(crec_region_get_info(p, crec_program_region(p, i), &info), CREC_OK, "%s",
                 crec_last_error());
    c.region_commands += info.num_commands;
  }
  return c;
}

void crec_test_expect_counts(const crec_program *p, const crec_test_counts *before,
                             const char *what) {
  crec_test_counts now = crec_test_counts_of(p);
#define CREC_TEST_SAME(field)                                                               \
  cr_assert_eq(now.field, before->field, "after the refused %s, " #field " went from %zu to %zu", \
               what, before->field, now.field)
  CREC_TEST_SAME(buffers);
  CREC_TEST_SAME(arguments);
  CREC_TEST_SAME(scalars);
  CREC_TEST_SAME(bound_scalars);
  CREC_TEST_SAME(host_functions);
  CREC_TEST_SAME(modules);
  CREC_TEST_SAME(kernels);
  CREC_TEST_SAME(regions);
  CREC_TEST_SAME(commands);
  CREC_TEST_SAME(region_commands);
#undef CREC_TEST_SAME
}

/* ---- plans ---- */

void crec_test_expect_deps(const crec_plan *plan, crec_command command, size_t n,
                           const crec_command *expected, const char *what) {
  const crec_command *deps = NULL;
  size_t num = 0;
  cr_assert_eq(crec_plan_get_deps(plan, command, &deps, &num), CREC_OK, "%s", crec_last_error());
  char got[512] = "", want[512] = "";
  for (size_t i = 0; i < num; i++)
    snprintf(got + strlen(got), sizeof got - strlen(got), " #%zu", crec_handle_index(deps[i].id));
  for (size_t i = 0; i < n; i++)
    snprintf(want + strlen(want), sizeof want - strlen(want), " #%zu",
             crec_handle_index(expected[i].id));
  cr_assert_eq(num, n, "%s (#%zu) waits for [%s ], expected [%s ]", what,
               crec_handle_index(command.id), got, want);
  for (size_t i = 0; i < n; i++)
    cr_assert_eq(deps[i].id, expected[i].id, "%s (#%zu) waits for [%s ], expected [%s ]", what,
                 crec_handle_index(command.id), got, want);
}

/* ---- random programs ---- */

uint64_t crec_test_rand(crec_test_rng *r) {
  uint64_t z = (r->state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t crec_test_between(crec_test_rng *r, uint64_t lo, uint64_t hi) {
  return lo + crec_test_rand(r) % (hi - lo + 1);
}

#define MAX_RANDOM_BUFFERS 64
#define MAX_RANDOM_REGIONS 512

typedef struct random_buffer {
  crec_buffer handle;
  uint64_t size; /* the minimum, for a dynamic-size argument */
  bool dynamic, constant;
} random_buffer;

/* A random range of `b`: mostly explicit, sometimes to the end of the buffer. */
static crec_range random_range(crec_test_rng *r, const random_buffer *b) {
  uint64_t span = b->dynamic ? 2 * b->size : b->size;
  uint64_t offset = crec_test_between(r, 0, span - 1);
  if (crec_test_between(r, 0, 9) == 0) return crec_range_of(b->handle, offset, CREC_WHOLE);
  return crec_range_of(b->handle, offset, crec_test_between(r, 1, span - offset));
}

crec_program *crec_test_random_program(uint64_t seed, const crec_test_shape *shape) {
  crec_test_rng rng = {seed};
  crec_test_rng *r = &rng;
  crec_kernel k;
  crec_program *p = crec_test_program(&k);
  random_buffer bufs[MAX_RANDOM_BUFFERS];
  size_t nb = 0;
  char name[32];

  size_t nargs = crec_test_between(r, 1, 3);
  for (size_t i = 0; i < nargs; i++) {
    snprintf(name, sizeof name, "arg%zu", i);
    random_buffer b = {{0}, crec_test_between(r, 8, 512), false, false};
    cr_assert_eq(crec_program_add_argument(p, name, b.size, NULL, &b.handle), CREC_OK, "%s",
                 crec_last_error());
    bufs[nb++] = b;
  }
  if (shape->dynamic) {
    crec_argument_options o = CREC_ARGUMENT_OPTIONS_INIT;
    o.dynamic_size = 1;
    random_buffer b = {{0}, crec_test_between(r, 8, 256), true, false};
    cr_assert_eq(crec_program_add_argument(p, "dyn", b.size, &o, &b.handle), CREC_OK, "%s",
                 crec_last_error());
    bufs[nb++] = b;
  }
  if (crec_test_between(r, 0, 1)) {
    static const unsigned char data[64] = {1, 2, 3};
    random_buffer b = {{0}, crec_test_between(r, 4, sizeof data), false, true};
    cr_assert_eq(crec_program_add_constant(p, "const", data, b.size, &b.handle), CREC_OK, "%s",
                 crec_last_error());
    bufs[nb++] = b;
  }
  size_t max_temps = shape->max_temporaries < MAX_RANDOM_BUFFERS - nb ? shape->max_temporaries
                                                                      : MAX_RANDOM_BUFFERS - nb;
  size_t ntemps = crec_test_between(r, 1, max_temps);
  for (size_t i = 0; i < ntemps; i++) {
    snprintf(name, sizeof name, "t%zu", i);
    uint64_t size = crec_test_between(r, 1, shape->max_temp_size);
    /* sizes that are exact multiples of the alignment are the edge case of packing */
    if (crec_test_between(r, 0, 3) == 0) size = (size + 255) / 256 * 256;
    random_buffer b = {{0}, size, false, false};
    cr_assert_eq(crec_program_add_temporary(p, name, b.size, &b.handle), CREC_OK, "%s",
                 crec_last_error());
    bufs[nb++] = b;
  }

  crec_region regions[MAX_RANDOM_REGIONS];
  size_t nr = 0;
  regions[nr++] = crec_program_body(p);
  size_t ncmds = crec_test_between(r, 1, shape->max_commands);
  for (size_t i = 0; i < ncmds; i++) {
    /* half of the commands go to the body, the rest to any region made so far */
    crec_region region = crec_test_between(r, 0, 1) ? regions[0] : regions[crec_test_between(r, 0, nr - 1)];
    const random_buffer *any = &bufs[crec_test_between(r, 0, nb - 1)];
    const random_buffer *writable = any;
    while (writable->constant) writable = &bufs[crec_test_between(r, 0, nb - 1)];
    crec_command c;
    crec_status s = CREC_OK;
    uint64_t what = crec_test_between(r, 0, 99);
    snprintf(name, sizeof name, "c%zu", i);
    if (what < 40) {
      crec_arg args[4];
      size_t na = crec_test_between(r, 1, 4);
      for (size_t a = 0; a < na; a++) {
        const random_buffer *b = &bufs[crec_test_between(r, 0, nb - 1)];
        crec_access access = b->constant ? CREC_ACCESS_READ : (crec_access)crec_test_between(r, 1, 3);
        args[a] = crec_arg_buffer(random_range(r, b), access);
      }
      crec_launch l = CREC_LAUNCH_INIT;
      l.kernel = k;
      l.args = args;
      l.num_args = na;
      s = crec_program_add_launch(p, region, name, &l, &c);
    } else if (what < 55) {
      /* an explicit size both ranges can hold; sometimes the destination runs to its end */
      uint64_t src_off = crec_test_between(r, 0, any->size - 1);
      uint64_t dst_off = crec_test_between(r, 0, writable->size - 1);
      uint64_t room_src = any->size - src_off, room_dst = writable->size - dst_off;
      uint64_t len = crec_test_between(r, 1, room_src < room_dst ? room_src : room_dst);
      crec_range src = crec_range_of(any->handle, src_off, len);
      crec_range dst = crec_range_of(writable->handle, dst_off, len);
      if (crec_test_between(r, 0, 4) == 0) dst = crec_range_of(writable->handle, writable->size - len, CREC_WHOLE);
      /* crec refuses a copy between overlapping ranges: fill the destination instead */
      bool overlap = src.buffer.id == dst.buffer.id && dst.offset < src.offset + len && src.offset < dst.offset + len;
      if (overlap) s = crec_program_add_memset(p, region, name, dst, 0, 1, &c);
      else s = crec_program_add_memcpy(p, region, name, dst, src, &c);
    } else if (what < 65) {
      s = crec_program_add_memset(p, region, name, random_range(r, writable),
                                  (uint32_t)crec_test_between(r, 0, 255), 1, &c);
    } else if (what < 72 && shape->barriers) {
      s = crec_program_add_barrier(p, region, name, &c);
    } else if (what < 72) {
      s = crec_program_add_memset(p, region, name, random_range(r, writable), 0, 1, &c);
    } else {
      crec_region out[4];
      uint64_t flavour = crec_test_between(r, 0, 2);
      if (flavour < 2 || any->size < 4) {
        crec_range pred = crec_range_of(any->handle, crec_test_between(r, 0, any->size - 1), 1);
        s = flavour == 0 ? crec_program_add_while(p, region, name, pred, &c, &out[0], &out[1])
                         : crec_program_add_if(p, region, name, pred, &c, &out[0], &out[1]);
        if (!s && nr + 2 <= MAX_RANDOM_REGIONS) {
          regions[nr++] = out[0];
          regions[nr++] = out[1];
        }
      } else {
        size_t nbr = crec_test_between(r, 1, 4);
        crec_range index = crec_range_of(any->handle, 4 * crec_test_between(r, 0, (any->size - 4) / 4), 4);
        s = crec_program_add_switch(p, region, name, index, nbr, NULL, &c, out);
        for (size_t b = 0; !s && b < nbr && nr < MAX_RANDOM_REGIONS; b++) regions[nr++] = out[b];
      }
    }
    cr_assert_eq(s, CREC_OK, "seed %llu, command %zu: %s", (unsigned long long)seed, i,
                 crec_last_error());
  }
  return p;
}

void crec_test_command_ranges(const crec_program *p, crec_command c, crec_range *ranges,
                              bool *writes, size_t cap, size_t *n) {
  crec_command_info info = CREC_COMMAND_INFO_INIT;
  cr_assert_eq(crec_command_get_info(p, c, &info), CREC_OK, "%s", crec_last_error());
  size_t k = 0;
#define CREC_TEST_PUSH(range, write)                                  \
  do {                                                                \
    cr_assert(k < cap, "command #%zu has too many ranges", crec_handle_index(c.id)); \
    ranges[k] = (range);                                              \
    writes[k++] = (write);                                            \
  } while (0)
  switch (info.kind) {
    case CREC_COMMAND_LAUNCH:
      for (size_t a = 0; a < info.num_args; a++) {
        crec_arg arg;
        cr_assert_eq(crec_command_get_arg(p, c, a, &arg), CREC_OK, "%s", crec_last_error());
        if (arg.kind != CREC_ARG_BUFFER) continue;
        if (arg.access & CREC_ACCESS_READ) CREC_TEST_PUSH(arg.range, false);
        if (arg.access & CREC_ACCESS_WRITE) CREC_TEST_PUSH(arg.range, true);
      }
      break;
    case CREC_COMMAND_MEMCPY:
      CREC_TEST_PUSH(info.src, false);
      CREC_TEST_PUSH(info.dst, true);
      break;
    case CREC_COMMAND_MEMSET:
      CREC_TEST_PUSH(info.dst, true);
      break;
    case CREC_COMMAND_WHILE:
    case CREC_COMMAND_IF:
    case CREC_COMMAND_SWITCH:
      CREC_TEST_PUSH(info.predicate, false);
      break;
    default:
      break;
  }
#undef CREC_TEST_PUSH
  *n = k;
}

size_t crec_test_top_position(const crec_program *p, crec_command c) {
  for (;;) {
    crec_command_info ci = CREC_COMMAND_INFO_INIT;
    crec_region_info ri;
    cr_assert_eq(crec_command_get_info(p, c, &ci), CREC_OK, "%s", crec_last_error());
    cr_assert_eq(crec_region_get_info(p, ci.region, &ri), CREC_OK, "%s", crec_last_error());
    if (ri.parent.id == 0) return ci.index_in_region;
    c = ri.parent;
  }
}

static size_t order_region(const crec_program *p, crec_region region, crec_command *out, size_t n) {
  for (size_t i = 0;; i++) {
    crec_command c = crec_region_command(p, region, i);
    if (c.id == 0) return n;
    out[n++] = c;
    for (size_t k = 0;; k++) {
      crec_region sub = crec_command_region(p, c, k);
      if (sub.id == 0) break;
      n = order_region(p, sub, out, n);
    }
  }
}

size_t crec_test_program_order(const crec_program *p, crec_command *out) {
  return order_region(p, crec_program_body(p), out, 0);
}

void crec_test_require_mlir(void) {
  /* (a build with MLIR fails, rather than skips, a lowering whose front end will not open) */
#ifndef CREC_TEST_WITH_MLIR
  cr_skip_test("crec was built without MLIR (CREC_WITH_MLIR=OFF)");
#endif
}

const char *crec_test_mlir_dir(void) {
  static char beside[1024];
  const char *env = getenv("CREC_TEST_MLIR_DIR");
  if (env && *env) return env;
  char probe[1100];
  snprintf(probe, sizeof probe, "%ssaxpy.mlir", CREC_TEST_MLIR_DIR);
  if (access(probe, R_OK) == 0) return CREC_TEST_MLIR_DIR;
  /* a build tree copied elsewhere (a GPU machine): mlir/ beside this runner */
  ssize_t n = readlink("/proc/self/exe", beside, sizeof beside - 8);
  if (n > 0) {
    beside[n] = '\0';
    char *slash = strrchr(beside, '/');
    if (slash) strcpy(slash + 1, "mlir/");
    return beside;
  }
  return CREC_TEST_MLIR_DIR;
}

crec_program *crec_test_lower_file(const char *name) {
  char path[1200];
  const char *dir = crec_test_mlir_dir();
  snprintf(path, sizeof path, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", name);
  crec_program *p = NULL;
  crec_status s = crec_lower_mlir_file(path, NULL, &p);
  cr_assert_eq(s, CREC_OK, "lowering %s: %s: %s", name, crec_status_name(s), crec_last_error());
  return p;
}

size_t crec_test_lower_each_file(const char *dir,
                                 void (*fn)(const char *name, const char *path, crec_program *p, void *user),
                                 void *user) {
  DIR *d = opendir(dir);
  cr_assert_not_null(d, "cannot open %s", dir);
  size_t n = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    size_t len = strlen(e->d_name);
    if (len < 6 || strcmp(e->d_name + len - 5, ".mlir") != 0) continue;
    char path[1200];
    snprintf(path, sizeof path, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", e->d_name);
    crec_lower_options o = CREC_LOWER_OPTIONS_INIT;
    o.chip = "sm_90";
    crec_program *p = NULL;
    crec_status s = crec_lower_mlir_file(path, &o, &p);
    cr_assert_eq(s, CREC_OK, "%s does not lower: %s: %s", path, crec_status_name(s), crec_last_error());
    fn(e->d_name, path, p, user);
    crec_program_destroy(p);
    n++;
  }
  closedir(d);
  return n;
}

crec_program *crec_test_lower_text(const char *text) {
  crec_program *p = NULL;
  crec_lower_options o = CREC_LOWER_OPTIONS_INIT;
  o.filename = "inline.mlir";
  o.base_dir = crec_test_mlir_dir();
  crec_status s = crec_lower_mlir_string(text, strlen(text), &o, &p);
  cr_assert_eq(s, CREC_OK, "lowering: %s: %s", crec_status_name(s), crec_last_error());
  return p;
}

char *crec_test_json(const crec_program *p) {
  char *out = NULL;
  EXPECT_OK(crec_dump(p, NULL, CREC_DUMP_JSON, &out, NULL));
  return out;
}

void crec_test_expect_dump_has(const crec_program *p, crec_dump_format format, const char *const *needles) {
  char *out = NULL;
  EXPECT_OK(crec_dump(p, NULL, format, &out, NULL));
  for (; *needles; needles++) cr_assert(strstr(out, *needles), "the dump lacks '%s':\n%s", *needles, out);
  crec_free(out);
}

crec_command_info crec_test_command(const crec_program *p, size_t index) {
  crec_command_info info = CREC_COMMAND_INFO_INIT;
  EXPECT_OK(crec_command_get_info(p, crec_program_command(p, index), &info));
  return info;
}

crec_arg crec_test_arg(const crec_program *p, size_t cmd, size_t index) {
  crec_arg a;
  EXPECT_OK(crec_command_get_arg(p, crec_program_command(p, cmd), index, &a));
  return a;
}

const char *crec_test_buffer_name(const crec_program *p, crec_buffer b) {
  crec_buffer_info info;
  EXPECT_OK(crec_buffer_get_info(p, b, &info));
  return info.name;
}

void crec_test_expect_range(const crec_program *p, crec_range r, const char *name, uint64_t offset, uint64_t size) {
  cr_assert_str_eq(crec_test_buffer_name(p, r.buffer), name);
  cr_assert_eq(r.offset, offset, "range of '%s' starts at %llu, expected %llu", name, (unsigned long long)r.offset,
               (unsigned long long)offset);
  cr_assert_eq(r.size, size, "range of '%s' has %llu bytes, expected %llu", name, (unsigned long long)r.size,
               (unsigned long long)size);
}

bool crec_test_have_nvjitlink(void) {
  static const char *const paths[] = {"libnvJitLink.so.13", "/usr/local/cuda/lib64/libnvJitLink.so.13"};
  /* the library stays open, as crec keeps it: closed, the pool its C++ runtime
   * allocates when loaded would be unreachable, and LeakSanitizer reports it */
  for (size_t i = 0; i < sizeof paths / sizeof *paths; i++)
    if (dlopen(paths[i], RTLD_NOW | RTLD_LOCAL)) return true;
  return false;
}

void crec_test_capture_begin(crec_test_capture *c) {
  snprintf(c->path, sizeof c->path, "/tmp/crec-out-XXXXXX");
  c->fd = mkstemp(c->path);
  cr_assert_geq(c->fd, 0, "cannot make a file to capture standard output");
  fflush(stdout);
  c->saved = dup(1);
  cr_assert_geq(c->saved, 0);
  dup2(c->fd, 1);
}

char *crec_test_capture_end(crec_test_capture *c) {
  fflush(stdout);
  dup2(c->saved, 1);
  close(c->saved);
  off_t size = lseek(c->fd, 0, SEEK_END);
  char *text = calloc(1, (size_t)size + 1);
  cr_assert_not_null(text);
  cr_assert_eq(pread(c->fd, text, (size_t)size, 0), size);
  close(c->fd);
  unlink(c->path);
  return text;
}
