/* libcrec and its MLIR front end, libcrec-mlir (lower/plugin.h, lower/load.c):
 * a process that lowers nothing loads no MLIR or LLVM; the first lowering opens
 * the front end next to libcrec, or where CREC_MLIR_PLUGIN says; without it,
 * lowering fails saying which library it looked for and where. */
#include <link.h>
#include <stdlib.h>
#include <string.h>

#include "test_tool.h"

static int find_loaded(struct dl_phdr_info *info, size_t size, void *user) {
  (void)size;
  const char *needle = user;
  return info->dlpi_name && strstr(info->dlpi_name, needle) ? 1 : 0;
}

/* Whether a loaded object's path contains `needle`. */
static bool loaded(const char *needle) { return dl_iterate_phdr(find_loaded, (void *)needle) != 0; }

static const char tiny[] = "module {\n  func.func @main() {\n    return\n  }\n}\n";

/* What the loader opened for a run of the real crec (LD_DEBUG=files), checked for
 * MLIR: `crec --version` and a program file's run and dump start without it. */
static void expect_no_mlir_loaded(const char *what, const tool_result *r) {
  cr_assert_neq(r->status, -1, "%s did not run", what);
  /* the loader's own report: it names libcrec, so it is there to read */
  cr_assert(strstr(r->err, "libcrec.so"), "%s: LD_DEBUG=files printed no library: %s", what, r->err);
  cr_expect(!strstr(r->err, "libMLIR") && !strstr(r->err, "libLLVM") && !strstr(r->err, "libcrec-mlir"),
            "%s loaded MLIR, LLVM or the front end:\n%s", what, r->err);
}

Test(plugin, crec_version_and_a_program_file_load_no_mlir) {
  REQUIRE_TOOL_EXE();
  const char *file = tool_test_program_file("chain", "chain.crecb");
  setenv("LD_DEBUG", "files", 1);
  tool_result r = tool_exec("--version", NULL);
  expect_no_mlir_loaded("crec --version", &r);
  cr_expect_eq(r.status, 0);
  tool_result_free(&r);
  r = tool_exec("dump", file, NULL);
  expect_no_mlir_loaded("crec dump PROG.crecb", &r);
  cr_expect_eq(r.status, 0, "crec dump PROG.crecb: exit status %d", r.status);
  tool_result_free(&r);
  /* without a device it stops before recording; with one it runs */
  r = tool_exec("run", file, NULL);
  expect_no_mlir_loaded("crec run PROG.crecb", &r);
  tool_result_free(&r);
  unsetenv("LD_DEBUG");
}

Test(plugin, reading_the_cache_counters_opens_no_front_end) {
  crec_test_require_mlir();
  crec_lower_cache_stats st = CREC_LOWER_CACHE_STATS_INIT;
  cr_assert_eq(crec_lower_cache_get_stats(&st), CREC_OK, "%s", crec_last_error());
  cr_expect_eq(st.compilations + st.hits + st.disk_hits + st.disk_misses, 0);
  crec_lower_cache_clear();
  cr_assert(!loaded("libcrec-mlir") && !loaded("libMLIR"), "the cache counters loaded the front end");
  /* the first lowering opens it; the counters are then the front end's */
  crec_program *p = NULL;
  cr_assert_eq(crec_lower_mlir_string(tiny, strlen(tiny), NULL, &p), CREC_OK, "%s", crec_last_error());
  crec_program_destroy(p);
  cr_expect(loaded("libcrec-mlir") && loaded("libMLIR"), "lowering did not load the front end from a file");
  cr_assert_eq(crec_lower_cache_get_stats(&st), CREC_OK, "%s", crec_last_error());
}

Test(plugin, without_the_front_end_lowering_says_which_library_and_where) {
  crec_test_require_mlir();
  setenv("CREC_MLIR_PLUGIN", "/nonexistent/libcrec-mlir.so", 1);
  crec_program *p = (crec_program *)&p;
  cr_assert_eq(crec_lower_mlir_string(tiny, strlen(tiny), NULL, &p), CREC_ERR_UNSUPPORTED);
  cr_expect_null(p, "the output program is not NULL after a failure");
  cr_expect_str_eq(crec_last_error(),
                   "crec_lower_mlir_string: the MLIR front end (libcrec-mlir.so) is not available: "
                   "CREC_MLIR_PLUGIN: /nonexistent/libcrec-mlir.so: no such file. Install it next to libcrec, "
                   "set CREC_MLIR_PLUGIN to its path, or build crec with CREC_WITH_MLIR=ON");
  /* later calls give the same answer, each in its own name */
  cr_assert_eq(crec_lower_mlir_file("x.mlir", NULL, &p), CREC_ERR_UNSUPPORTED);
  cr_expect(strstr(crec_last_error(), "crec_lower_mlir_file: the MLIR front end (libcrec-mlir.so) is not available"),
            "%s", crec_last_error());
  crec_lower_disk_cache_info info = CREC_LOWER_DISK_CACHE_INFO_INIT;
  cr_expect_eq(crec_lower_disk_cache_get_info(&info), CREC_ERR_UNSUPPORTED);
  uint64_t removed = 7;
  cr_expect_eq(crec_lower_disk_cache_clear(&removed), CREC_ERR_UNSUPPORTED);
  cr_expect_eq(removed, 0);
  /* the rest of crec does not need it: build, serialize and read back a program */
  crec_program *q = NULL;
  crec_buffer x;
  cr_assert_eq(crec_program_create(&q), CREC_OK);
  cr_assert_eq(crec_program_add_argument(q, "x", 64, NULL, &x), CREC_OK, "%s", crec_last_error());
  void *bytes = NULL;
  size_t size = 0;
  cr_assert_eq(crec_program_serialize(q, &bytes, &size), CREC_OK, "%s", crec_last_error());
  crec_program *back = NULL;
  cr_expect_eq(crec_program_deserialize(bytes, size, &back), CREC_OK, "%s", crec_last_error());
  crec_free(bytes);
  crec_program_destroy(back);
  crec_program_destroy(q);
}

Test(plugin, crec_mlir_plugin_may_name_the_folder) {
  crec_test_require_mlir();
#ifdef CREC_MLIR_PLUGIN_PATH
  char dir[1024];
  snprintf(dir, sizeof dir, "%s", CREC_MLIR_PLUGIN_PATH);
  *strrchr(dir, '/') = '\0';
  setenv("CREC_MLIR_PLUGIN", dir, 1);
  crec_program *p = NULL;
  cr_assert_eq(crec_lower_mlir_string(tiny, strlen(tiny), NULL, &p), CREC_OK, "%s", crec_last_error());
  crec_program_destroy(p);
#endif
}

Test(plugin, a_library_that_is_not_the_front_end_is_refused) {
  crec_test_require_mlir();
  setenv("CREC_MLIR_PLUGIN", CREC_LIBRARY_PATH, 1);
  crec_program *p = NULL;
  cr_assert_eq(crec_lower_mlir_string(tiny, strlen(tiny), NULL, &p), CREC_ERR_UNSUPPORTED);
  cr_expect(strstr(crec_last_error(), "no crec__mlir_plugin_open(): not crec's MLIR front end"), "%s",
            crec_last_error());
}

Test(plugin, the_tool_without_the_front_end_fails_in_one_line) {
  REQUIRE_TOOL_EXE();
  crec_test_require_mlir();
  setenv("CREC_MLIR_PLUGIN", "/nonexistent/libcrec-mlir.so", 1);
  const char *src = tool_example("chain.mlir");
  tool_result r = tool_exec("dump", src, NULL);
  tool_expect_errorf(&r, "crec: error: %s: the MLIR front end (libcrec-mlir.so) is not available: ",
                     src);
}
