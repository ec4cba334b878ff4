/* CPU suite for the persistent cache of lowered programs (lower.h): a second
 * lowering reads the program back with its warnings, damaged and foreign
 * entries are made again, what cannot be cached is not, concurrent processes,
 * the size cap, clearing. Each test has a cache directory of its own. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

static char dir[256];

static void setup(void) {
  crec_test_require_mlir();
  char base[] = "/tmp/crec-cache-test-XXXXXX";
  cr_assert_not_null(mkdtemp(base));
  snprintf(dir, sizeof dir, "%s/cache", base);
  setenv("CREC_CACHE_DIR", dir, 1);
  setenv("CREC_CACHE", "1", 1);
  unsetenv("CREC_CACHE_MAX_BYTES");
}

TestSuite(cache, .init = setup);

/* A program with a warning (a matmul into bytes nothing wrote) and a kernel. */
static const char warned[] =
    "module attributes {gpu.container_module} {\n"
    "  gpu.module @k {\n"
    "    gpu.func @inc(%x: memref<16xf32>) kernel {\n"
    "      %i = gpu.thread_id x\n"
    "      %v = memref.load %x[%i] : memref<16xf32>\n"
    "      memref.store %v, %x[%i] : memref<16xf32>\n"
    "      gpu.return\n"
    "    }\n"
    "  }\n"
    "  func.func @main(%a: memref<4x4xf32> {crec.name = \"a\"}, %y: memref<4x4xf32> {crec.name = \"y\"},\n"
    "                  %x: memref<16xf32> {crec.name = \"x\"}) {\n"
    "    %c1 = arith.constant 1 : index\n"
    "    %c16 = arith.constant 16 : index\n"
    "    gpu.launch_func @k::@inc blocks in (%c1, %c1, %c1) threads in (%c16, %c1, %c1) args(%x : memref<16xf32>)\n"
    "    %t = memref.alloc() : memref<4x4xf32>\n"
    "    linalg.matmul ins(%a, %a : memref<4x4xf32>, memref<4x4xf32>) outs(%t : memref<4x4xf32>)\n"
    "    memref.copy %t, %y : memref<4x4xf32> to memref<4x4xf32>\n"
    "    return\n"
    "  }\n"
    "}\n";

static char seen[2048];

static void on_diag(void *user, const char *severity, const char *location, const char *message) {
  (void)user;
  size_t n = strlen(seen);
  snprintf(seen + n, sizeof seen - n, "%s|%s|%s\n", severity, location, message);
}

/* Lowers `text` as "c.mlir" with warnings collected in `seen`; returns its JSON dump. */
static char *lower_json(const char *text, crec_status want) {
  crec_lower_options o = CREC_LOWER_OPTIONS_INIT;
  o.filename = "c.mlir";
  o.chip = "sm_90";
  o.diagnostic = on_diag;
  seen[0] = '\0';
  crec_program *p = NULL;
  crec_status s = crec_lower_mlir_string(text, strlen(text), &o, &p);
  cr_assert_eq(s, want, "lowering returned %s: %s", crec_status_name(s), crec_last_error());
  if (s) return NULL;
  char *json = NULL;
  EXPECT_OK(crec_dump(p, NULL, CREC_DUMP_JSON, &json, NULL));
  crec_program_destroy(p);
  return json;
}

static crec_lower_cache_stats stats(void) {
  crec_lower_cache_stats st = CREC_LOWER_CACHE_STATS_INIT;
  EXPECT_OK(crec_lower_cache_get_stats(&st));
  return st;
}

/* The one entry of the cache directory (its path into `out`); fails unless there is exactly one. */
static void only_entry(char *out, size_t size) {
  DIR *d = opendir(dir);
  cr_assert_not_null(d, "no cache directory %s", dir);
  int n = 0;
  for (struct dirent *de; (de = readdir(d));)
    if (strstr(de->d_name, ".crecc")) {
      snprintf(out, size, "%s/%s", dir, de->d_name);
      n++;
    }
  closedir(d);
  cr_assert_eq(n, 1, "%d entries in %s, expected 1", n, dir);
}

Test(cache, a_second_lowering_reads_the_program_back_with_its_warnings) {
  crec_lower_cache_stats a = stats();
  char *first = lower_json(warned, CREC_OK);
  char first_seen[2048];
  snprintf(first_seen, sizeof first_seen, "%s", seen);
  cr_assert(strstr(first_seen, "warning|c.mlir:16:5|linalg.matmul accumulates into 'tmp0'"), "%s", first_seen);
  crec_lower_cache_clear(); /* the in-memory PTX cache: a hit must not need it */
  char *second = lower_json(warned, CREC_OK);
  crec_lower_cache_stats b = stats();
  cr_expect_eq(b.disk_misses - a.disk_misses, 1);
  cr_expect_eq(b.disk_writes - a.disk_writes, 1);
  cr_expect_eq(b.disk_hits - a.disk_hits, 1);
  cr_expect_eq(b.compilations - a.compilations, 1, "the hit compiled a kernel");
  cr_expect_str_eq(second, first, "the program read back differs from the one lowered");
  cr_expect_str_eq(seen, first_seen, "the hit did not replay the lowering's diagnostics");
  /* private: the directory 0700, the entry 0600 */
  struct stat st;
  cr_assert_eq(stat(dir, &st), 0);
  cr_expect_eq(st.st_mode & 0777, 0700, "directory mode %o", st.st_mode & 0777);
  char entry[512];
  only_entry(entry, sizeof entry);
  cr_assert_eq(stat(entry, &st), 0);
  cr_expect_eq(st.st_mode & 0777, 0600, "entry mode %o", st.st_mode & 0777);
  crec_lower_disk_cache_info info = CREC_LOWER_DISK_CACHE_INFO_INIT;
  EXPECT_OK(crec_lower_disk_cache_get_info(&info));
  cr_expect_str_eq(info.dir, dir);
  cr_expect_eq(info.enabled, 1);
  cr_expect_eq(info.entries, 1);
  cr_expect_eq(info.bytes, (uint64_t)st.st_size);
  /* another entry name, another file name or chip: another key */
  crec_lower_options o = CREC_LOWER_OPTIONS_INIT;
  o.filename = "other.mlir";
  o.chip = "sm_80";
  crec_program *p = NULL;
  EXPECT_OK(crec_lower_mlir_string(warned, strlen(warned), &o, &p));
  crec_program_destroy(p);
  cr_expect_eq(stats().disk_writes - a.disk_writes, 2);
  free(first);
  free(second);
}

/* Writes `bytes` over the entry at `path` from `offset` (or truncates it there when bytes is NULL). */
static void damage(const char *path, long offset, const char *bytes) {
  if (!bytes) {
    cr_assert_eq(truncate(path, offset), 0);
    return;
  }
  FILE *f = fopen(path, "r+b");
  cr_assert_not_null(f);
  fseek(f, offset, SEEK_SET);
  fwrite(bytes, 1, strlen(bytes), f);
  fclose(f);
}

Test(cache, a_damaged_entry_is_rejected_made_again_and_replaced) {
  char *first = lower_json(warned, CREC_OK);
  char entry[512];
  only_entry(entry, sizeof entry);
  struct stat st;
  cr_assert_eq(stat(entry, &st), 0);
  struct {
    long offset;
    const char *bytes;
  } cases[] = {{0, "XXXX"}, {8, "0000"}, {st.st_size / 2, "\x7f\x7f\x7f"}, {st.st_size - 3, "zzz"}, {60, NULL}, {3, NULL}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    damage(entry, cases[i].offset, cases[i].bytes);
    crec_lower_cache_stats a = stats();
    char *again = lower_json(warned, CREC_OK);
    crec_lower_cache_stats b = stats();
    cr_expect_eq(b.disk_rejected - a.disk_rejected, 1, "case %zu: the damaged entry was not rejected", i);
    cr_expect_eq(b.disk_writes - a.disk_writes, 1, "case %zu: no entry written in its place", i);
    cr_expect_str_eq(again, first, "case %zu", i);
    free(again);
    /* and the new entry is good */
    char *third = lower_json(warned, CREC_OK);
    cr_expect_eq(stats().disk_hits - b.disk_hits, 1, "case %zu: the replaced entry was not used", i);
    free(third);
  }
  free(first);
}

Test(cache, what_cannot_be_cached_is_lowered_each_time) {
  /* a host function: no program file can hold it */
  crec_lower_cache_stats a = stats();
  for (int i = 0; i < 2; i++) {
    crec_program *p = NULL;
    EXPECT_OK(crec_lower_mlir_file(CREC_TEST_MLIR_DIR "host.mlir", NULL, &p));
    crec_program_destroy(p);
  }
  crec_lower_cache_stats b = stats();
  cr_expect_eq(b.disk_uncacheable - a.disk_uncacheable, 2);
  cr_expect_eq(b.disk_writes, a.disk_writes, "a program with host functions was written");
  cr_expect_eq(b.disk_hits, a.disk_hits);
  char *j;
  /* text that reads a crec.image file is not even looked up */
  static const char image[] = "module { func.func @main() { return } }\n// crec.image\n";
  a = stats();
  j = lower_json(image, CREC_OK);
  free(j);
  b = stats();
  cr_expect_eq(b.disk_misses, a.disk_misses);
  cr_expect_eq(b.disk_writes, a.disk_writes);
  /* a failed lowering leaves nothing */
  a = stats();
  cr_expect_null(lower_json("module { func.func @main() { foo.bar } }", CREC_ERR_MLIR));
  b = stats();
  cr_expect_eq(b.disk_writes, a.disk_writes);
  /* CREC_CACHE=0: neither read nor written */
  setenv("CREC_CACHE", "0", 1);
  a = stats();
  j = lower_json(warned, CREC_OK);
  free(j);
  b = stats();
  cr_expect_eq(b.disk_misses + b.disk_hits + b.disk_writes, a.disk_misses + a.disk_hits + a.disk_writes);
  /* nothing of this test left an entry */
  DIR *d = opendir(dir);
  for (struct dirent *de; d && (de = readdir(d));) cr_expect(!strstr(de->d_name, ".crecc"), "entry %s", de->d_name);
  if (d) closedir(d);
}

Test(cache, a_directory_others_can_write_is_not_used) {
  cr_assert_eq(mkdir(dir, 0700), 0);
  cr_assert_eq(chmod(dir, 0777), 0);
  crec_lower_cache_stats a = stats();
  char *j = lower_json(warned, CREC_OK);
  free(j);
  crec_lower_cache_stats b = stats();
  cr_expect_eq(b.disk_writes, a.disk_writes, "an entry was written into a directory anyone can write");
  crec_lower_disk_cache_info info = CREC_LOWER_DISK_CACHE_INFO_INIT;
  EXPECT_OK(crec_lower_disk_cache_get_info(&info));
  cr_expect_eq(info.enabled, 0);
}

Test(cache, concurrent_processes_fill_it_and_the_entry_is_whole) {
  enum { N = 6 };
  pid_t kids[N];
  for (int i = 0; i < N; i++) {
    kids[i] = fork();
    cr_assert_geq(kids[i], 0);
    if (kids[i] == 0) {
      crec_program *p = NULL;
      crec_status s = crec_lower_mlir_string(warned, strlen(warned), NULL, &p);
      crec_program_destroy(p);
      _exit(s == CREC_OK ? 0 : 1);
    }
  }
  for (int i = 0; i < N; i++) {
    int status = 0;
    cr_assert_eq(waitpid(kids[i], &status, 0), kids[i]);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "process %d failed", i);
  }
  crec_lower_cache_stats a = stats();
  crec_program *p = NULL;
  EXPECT_OK(crec_lower_mlir_string(warned, strlen(warned), NULL, &p));
  crec_program_destroy(p);
  crec_lower_cache_stats b = stats();
  cr_expect_eq(b.disk_hits - a.disk_hits, 1, "the entry the processes wrote was not used");
  cr_expect_eq(b.disk_rejected, a.disk_rejected);
  /* no temporary file is left behind */
  DIR *d = opendir(dir);
  for (struct dirent *de; d && (de = readdir(d));) cr_expect(strncmp(de->d_name, ".tmp.", 5) != 0, "%s", de->d_name);
  if (d) closedir(d);
}

/* The program of `warned` with the kernel's name changed: another key. */
static char *variant(int i) {
  char *t = strdup(warned);
  char *k = strstr(t, "@inc");
  k[1] = (char)('a' + i), k[2] = 'n', k[3] = 'c';
  char *use = strstr(k + 4, "@k::@inc");
  use[5] = (char)('a' + i);
  return t;
}

Test(cache, past_its_cap_the_least_recently_used_entries_go_and_clear_empties_it) {
  char *v0 = variant(0), *v1 = variant(1), *v2 = variant(2);
  char *j = lower_json(v0, CREC_OK);
  free(j);
  crec_lower_disk_cache_info info = CREC_LOWER_DISK_CACHE_INFO_INIT;
  EXPECT_OK(crec_lower_disk_cache_get_info(&info));
  cr_assert_eq(info.entries, 1);
  /* room for two entries */
  char cap[32];
  snprintf(cap, sizeof cap, "%llu", (unsigned long long)(info.bytes * 2 + info.bytes / 2));
  setenv("CREC_CACHE_MAX_BYTES", cap, 1);
  sleep(1); /* modification times order the entries */
  j = lower_json(v1, CREC_OK);
  free(j);
  sleep(1);
  j = lower_json(v0, CREC_OK); /* a hit: v0 is now the most recently used */
  free(j);
  sleep(1);
  crec_lower_cache_stats a = stats();
  j = lower_json(v2, CREC_OK);
  free(j);
  crec_lower_cache_stats b = stats();
  cr_expect_eq(b.disk_evictions - a.disk_evictions, 1);
  EXPECT_OK(crec_lower_disk_cache_get_info(&info));
  cr_expect_eq(info.entries, 2);
  a = stats();
  j = lower_json(v0, CREC_OK);
  free(j);
  j = lower_json(v1, CREC_OK);
  free(j);
  b = stats();
  cr_expect_eq(b.disk_hits - a.disk_hits, 1, "v0 (used last) should be kept and v1 evicted");
  uint64_t removed = 0;
  EXPECT_OK(crec_lower_disk_cache_clear(&removed));
  cr_expect_eq(removed, 2);
  EXPECT_OK(crec_lower_disk_cache_get_info(&info));
  cr_expect_eq(info.entries, 0);
  free(v0);
  free(v1);
  free(v2);
}

Test(cache, cubin_and_ptx_lowerings_are_kept_apart) {
  if (!crec_test_have_nvjitlink()) cr_skip_test("no libnvJitLink.so.13 (the CUDA 13 toolkit's): cubin lowering cannot run");
  crec_lower_cache_stats a = stats();
  crec_image_format formats[2];
  for (int round = 0; round < 2; round++)
    for (int cubin = 0; cubin < 2; cubin++) {
      crec_lower_options o = CREC_LOWER_OPTIONS_INIT;
      o.chip = "sm_90";
      o.cubin = cubin;
      crec_program *p = NULL;
      EXPECT_OK(crec_lower_mlir_string(warned, strlen(warned), &o, &p));
      cr_assert_eq(crec_program_module_count(p), 1);
      crec_module_info mi;
      EXPECT_OK(crec_module_get_info(p, crec_program_module(p, 0), &mi));
      formats[cubin] = mi.format;
      if (cubin) cr_expect(mi.size > 4 && memcmp(mi.image, "\x7f" "ELF", 4) == 0, "the cubin is not an ELF image");
      crec_program_destroy(p);
    }
  crec_lower_cache_stats b = stats();
  cr_expect_eq(formats[0], CREC_IMAGE_PTX);
  cr_expect_eq(formats[1], CREC_IMAGE_CUBIN);
  cr_expect_eq(b.disk_writes - a.disk_writes, 2, "PTX and cubin are one entry each");
  cr_expect_eq(b.disk_hits - a.disk_hits, 2, "the second round read both back");
}
