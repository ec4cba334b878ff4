/* `crec compile` and program files (.crecb) in the tool: every example and
 * tests/mlir program that a file can hold, compiled and dumped in every format,
 * prints what its MLIR prints; programs with host code are refused naming the
 * call; a bad -o, a damaged file, a bad --chip or a misplaced option give one
 * error line; files are known by their magic, written atomically, and run and
 * bench read them without a device. The chip check of run and bench is tested
 * here as a function (its use needs a GPU: tests/gpu_tool.c's side). Programs
 * built with the C API make the tests that need no MLIR front end, which also
 * run in a build with -DCREC_WITH_MLIR=OFF. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_tool.h"

static const char *const formats[] = {"text", "json", "dot", "html"};
#define NUM_FORMATS (sizeof formats / sizeof formats[0])

/* Replaces every `from` in `*s` with `to` (a new string). */
static void replace_all(char **s, const char *from, const char *to) {
  size_t n = 0, fl = strlen(from), tl = strlen(to);
  for (const char *p = *s; (p = strstr(p, from)); p += fl) n++;
  char *out = malloc(strlen(*s) + n * (tl > fl ? tl - fl : 0) + 1), *o = out;
  const char *p = *s;
  for (const char *q; (q = strstr(p, from)); p = q + fl) {
    memcpy(o, p, (size_t)(q - p));
    o += q - p;
    memcpy(o, to, tl);
    o += tl;
  }
  strcpy(o, p);
  free(*s);
  *s = out;
}

static int file_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

/* A folder of its own for what compile writes (tool_exec keeps its captures in
 * the temporary directory), and a path in it. */
static const char *out_dir(void) {
  static char dir[700];
  snprintf(dir, sizeof dir, "%s/out", tool_temp_dir());
  cr_assert(mkdir(dir, 0700) == 0 || errno == EEXIST, "mkdir %s: %s", dir, strerror(errno));
  return dir;
}

static const char *out_path(const char *name) {
  static char paths[4][800];
  static int next;
  char *p = paths[next++ % 4];
  snprintf(p, sizeof paths[0], "%s/%s", out_dir(), name);
  return p;
}

/* Entries of `dir` other than . and .. */
static size_t entries_of(const char *dir) {
  DIR *d = opendir(dir);
  cr_assert_not_null(d, "cannot open %s", dir);
  size_t n = 0;
  for (struct dirent *e; (e = readdir(d));) n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
  closedir(d);
  return n;
}

/* Asserts that dumps `a` and `b` (of `what` in `format`) both succeeded and print
 * the same, then frees them. */
static void expect_same_dump(tool_result *a, tool_result *b, const char *what, const char *format) {
  cr_assert_eq(a->status, 0, "%s --format %s: %s", what, format, a->err);
  cr_assert_eq(b->status, 0, "%s --format %s: %s", what, format, b->err);
  cr_assert_str_eq(b->out, a->out, "crec dump --format %s: %s and its program file differ", format, what);
  tool_result_free(a);
  tool_result_free(b);
}

/* ---- every program of a folder: compile, then dump both in every format ---------------- */

static void compile_folder(const char *dir, const char *tag, size_t *compiled, size_t *refused) {
  DIR *d = opendir(dir);
  cr_assert_not_null(d, "cannot open %s", dir);
  for (struct dirent *e; (e = readdir(d));) {
    size_t len = strlen(e->d_name);
    if (len < 6 || strcmp(e->d_name + len - 5, ".mlir") != 0) continue;
    char src[1200], name[300];
    snprintf(src, sizeof src, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", e->d_name);
    snprintf(name, sizeof name, "%s-%.*s.crecb", tag, (int)(len - 5), e->d_name);
    const char *file = tool_temp_path(name);
    char file_copy[700];
    snprintf(file_copy, sizeof file_copy, "%s", file);
    tool_result r = tool_exec("compile", src, "-o", file_copy, NULL);
    if (r.status != 0) {
      /* host code lives in the lowering process only: refused by the library, named by the tool */
      char want[1400];
      snprintf(want, sizeof want, "crec: error: %s: crec compile: crec_program_serialize: ", src);
      cr_assert(strstr(r.err, "serialize: host function ") || strstr(r.err, "is a host callback, code of this process"),
                "%s: refused for another reason: %s", src, r.err);
      tool_expect_has(r.err, "relinkable host object");
      tool_expect_error(&r, want);
      cr_assert(!file_exists(file_copy), "%s: a refused compile left %s", src, file_copy);
      (*refused)++;
      continue;
    }
    char wrote[800];
    snprintf(wrote, sizeof wrote, "wrote %s (program file, ", file_copy);
    cr_assert_eq(strncmp(r.out, wrote, strlen(wrote)), 0, "%s: compile printed %s", src, r.out);
    cr_assert_eq(tool_count_lines(r.out), 1, "%s: compile printed %s", src, r.out);
    tool_result_free(&r);
    for (size_t f = 0; f < NUM_FORMATS; f++) {
      tool_result a = tool_exec("dump", src, "--format", formats[f], NULL);
      tool_result b = tool_exec("dump", file_copy, "--format", formats[f], NULL);
      /* the HTML page's title names the file given; all else is the same */
      if (!strcmp(formats[f], "html") && b.status == 0) replace_all(&b.out, file_copy, src);
      expect_same_dump(&a, &b, src, formats[f]);
    }
    (*compiled)++;
  }
  closedir(d);
}

/* Compiles and dumps every program of folder `dir` (`tag` in the log and file
 * names): at least `min_compiled` compile, and at least one with host code is refused. */
static void expect_folder_compiles(const char *dir, const char *tag, size_t min_compiled) {
  REQUIRE_TOOL_EXE();
  size_t compiled = 0, refused = 0;
  compile_folder(dir, tag, &compiled, &refused);
  cr_log_info("%s: %zu compiled, %zu refused (host code)", dir, compiled, refused);
  cr_assert_geq(compiled, min_compiled, "only %zu programs of %s compiled", compiled, dir);
  cr_assert_geq(refused, 1, "no program of %s with host code was refused", dir);
}

Test(tool_compile, every_serializable_example_dumps_as_its_source_in_every_format,
     .init = crec_test_require_mlir, .timeout = 120) {
  /* branches, chain, image, jacobi, switch; dynamic.mlir computes scalars on the host */
  expect_folder_compiles(tool_examples_dir(), "examples", 5);
}

Test(tool_compile, every_serializable_test_program_dumps_as_its_source_in_every_format,
     .init = crec_test_require_mlir, .timeout = 120) {
  expect_folder_compiles(crec_test_mlir_dir(), "mlir", 8);
}

/* Under the same name in two folders, even the HTML page is byte for byte the
 * same: a program file is known by its magic, whatever its name. */
Test(tool_compile, a_program_file_under_its_sources_name_dumps_byte_for_byte_the_same, .init = crec_test_require_mlir) {
  REQUIRE_TOOL_EXE();
  char src_dir[700], file_dir[700], src[800], file[800];
  snprintf(src_dir, sizeof src_dir, "%s/src", tool_temp_dir());
  snprintf(file_dir, sizeof file_dir, "%s/file", tool_temp_dir());
  cr_assert_eq(mkdir(src_dir, 0700), 0);
  cr_assert_eq(mkdir(file_dir, 0700), 0);
  snprintf(src, sizeof src, "%s/chain.mlir", src_dir);
  snprintf(file, sizeof file, "%s/chain.mlir", file_dir);
  size_t size = 0;
  char *text = tool_slurp(tool_example("chain.mlir"), &size);
  cr_assert_not_null(text);
  FILE *f = fopen(src, "wb");
  cr_assert_not_null(f);
  cr_assert_eq(fwrite(text, 1, size, f), size);
  cr_assert_eq(fclose(f), 0);
  free(text);
  tool_result r = tool_exec("compile", src, "-o", file, NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  tool_result_free(&r);
  for (size_t i = 0; i < NUM_FORMATS; i++) {
    tool_result a = tool_exec_in(src_dir, "dump", "chain.mlir", "--format", formats[i], NULL);
    tool_result b = tool_exec_in(file_dir, "dump", "chain.mlir", "--format", formats[i], NULL);
    expect_same_dump(&a, &b, "chain.mlir", formats[i]);
  }
}

/* ---- errors -------------------------------------------------------------------- */

Test(tool_compile, a_program_with_host_code_is_refused_naming_the_call_and_what_is_missing,
     .init = crec_test_require_mlir) {
  REQUIRE_TOOL_EXE();
  const char *src = tool_example("dynamic.mlir");
  char src_copy[700], want[900];
  snprintf(src_copy, sizeof src_copy, "%s", src);
  tool_result r = tool_exec("compile", src_copy, "-o", out_path("dynamic.crecb"), NULL);
  snprintf(want, sizeof want,
           "crec: error: %s: crec compile: crec_program_serialize: host function 0 ('scalars') computes scalars with "
           "code of this process",
           src_copy);
  tool_expect_has(r.err, "a relinkable host object or as its MLIR source");
  tool_expect_error(&r, want);
  /* neither the file nor a temporary one is left */
  cr_assert_eq(entries_of(out_dir()), 0, "a refused compile left files in %s", out_dir());
}

Test(tool_compile, o_into_a_missing_folder_names_the_path, .init = crec_test_require_mlir) {
  REQUIRE_TOOL_EXE();
  char out[800];
  snprintf(out, sizeof out, "%s/missing/chain.crecb", tool_temp_dir());
  tool_result r = tool_exec("compile", tool_example("chain.mlir"), "-o", out, NULL);
  tool_expect_errorf(&r,
                     "crec: error: %s: crec compile -o: cannot create a temporary file in '%s/missing/': No such "
                     "file or directory\n",
                     out, tool_temp_dir());
}

Test(tool_compile, command_line_errors_name_the_argument) {
  REQUIRE_TOOL_EXE();
  const char *chain = tool_example("chain.mlir");
  char chain_copy[700];
  snprintf(chain_copy, sizeof chain_copy, "%s", chain);
  tool_result r = tool_exec("compile", chain_copy, NULL);
  tool_expect_errorf(&r, "crec: error: 'crec compile' needs the file to write: crec compile %s -o PROG.crecb\n",
                     chain_copy);
  r = tool_exec("compile", NULL);
  tool_expect_error(&r, "crec: error: 'crec compile' needs a program: crec compile PROG.mlir (try 'crec compile --help')\n");
  r = tool_exec("compile", chain_copy, "-o", tool_temp_path("x.crecb"), "--format", "json", NULL);
  tool_expect_error(&r, "crec: error: option '--format' is not an option of 'crec compile' (try 'crec compile --help')\n");
  r = tool_exec("run", chain_copy, "--chip", "sm_90", NULL);
  tool_expect_error(&r, "crec: error: option '--chip' is not an option of 'crec run' (try 'crec run --help')\n");
  r = tool_exec("compile", chain_copy, "-o", tool_temp_path("x.crecb"), "--chip", "sm_90", "--chip", "sm_80", NULL);
  tool_expect_error(&r, "crec: error: --chip is given twice ('sm_90' and 'sm_80')\n");
}

Test(tool_compile, a_chip_the_lowering_refuses_is_the_options_fault, .init = crec_test_require_mlir) {
  REQUIRE_TOOL_EXE();
  tool_result r = tool_exec("compile", tool_example("chain.mlir"), "-o", out_path("x.crecb"), "--chip", "sm_9", NULL);
  tool_expect_error(&r, "crec: error: --chip sm_9: argument 'options': chip 'sm_9' is not of the form sm_NN or sm_NNa\n");
  cr_assert_eq(entries_of(out_dir()), 0);
}

/* A damaged program file given to dump (or run, or bench) is one error line naming the file and the reader. */
Test(tool_compile, cubin_compiles_the_kernels_ahead_of_time_for_the_chip, .init = crec_test_require_mlir) {
  REQUIRE_TOOL_EXE();
  if (!crec_test_have_nvjitlink()) cr_skip_test("no libnvJitLink.so.13 (the CUDA 13 toolkit's): --cubin cannot run");
  tool_result r = tool_exec("compile", tool_example("jacobi.mlir"), "-o", out_path("j.crecb"), "--chip", "sm_80",
                            "--cubin", NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  tool_expect_has(r.out, "target sm_80)");
  tool_result_free(&r);
  r = tool_exec("dump", out_path("j.crecb"), "--format", "json", NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  tool_expect_has(r.out, "\"format\":\"cubin\"");
  cr_expect_null(strstr(r.out, "\"format\":\"ptx\""), "a kernel module stayed PTX");
  tool_result_free(&r);
  /* a chip nvJitLink does not build for: its own error, at the module */
  r = tool_exec("compile", tool_example("chain.mlir"), "-o", out_path("c.crecb"), "--chip", "sm_50", "--cubin", NULL);
  cr_assert_eq(r.status, 2, "%s", r.err);
  tool_expect_has(r.err, "'gpu.module': ahead-of-time cubin for sm_50: nvJitLinkCreate(-arch=sm_50) failed: "
                         "NVJITLINK_ERROR_UNSUPPORTED_ARCH");
  tool_result_free(&r);
  /* only compile takes it */
  r = tool_exec("dump", tool_example("chain.mlir"), "--cubin", NULL);
  tool_expect_error(&r, "crec: error: option '--cubin' is not an option of 'crec dump' (try 'crec dump --help')\n");
}

Test(tool_compile, a_damaged_program_file_gives_one_error_naming_it) {
  REQUIRE_TOOL_EXE();
  size_t size = 0;
  char *good = tool_slurp(tool_test_program_file("chain", "good.crecb"), &size);
  cr_assert_gt(size, 64);
  struct {
    const char *name;
    const void *bytes;
    size_t size;
    const char *says;
  } cases[] = {
      {"truncated.crecb", good, size / 2, "truncated"},
      {"header.crecb", good, 20, "truncated"},
      {"magic.crecb", good, 5, ""},
      {"empty.crecb", "", 0, ""},
      {"flipped.crecb", NULL, size, "checksum mismatch"},
      {"text.crecb", "func.func @main() { return }\n", 29, "not a crec program file"},
  };
  char *flipped = malloc(size);
  memcpy(flipped, good, size);
  flipped[size - 3] ^= 0x10;
  cases[4].bytes = flipped;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const char *path = tool_temp_file(cases[i].name, cases[i].bytes, cases[i].size);
    char path_copy[700], want[900];
    snprintf(path_copy, sizeof path_copy, "%s", path);
    snprintf(want, sizeof want, "crec: error: %s: crec_program_deserialize: at byte ", path_copy);
    static const char *const commands[] = {"dump", "run", "bench"};
    for (size_t c = 0; c < 3; c++) {
      tool_result r = tool_exec(commands[c], path_copy, NULL);
      tool_expect_has(r.err, cases[i].says);
      tool_expect_error(&r, want);
    }
  }
  free(flipped);
  free(good);
}

Test(tool_compile, a_program_file_takes_no_entry_and_is_not_compiled_again) {
  REQUIRE_TOOL_EXE();
  const char *file = tool_test_program_file("chain", "chain.crecb");
  char file_copy[700];
  snprintf(file_copy, sizeof file_copy, "%s", file);
  tool_result r = tool_exec("dump", file_copy, "--entry", "main", NULL);
  tool_expect_errorf(&r,
                     "crec: error: %s: crec dump: --entry main: a program file holds one lowered entry function; "
                     "--entry is for MLIR input (choose the entry at 'crec compile')\n",
                     file_copy);
  r = tool_exec("compile", file_copy, "-o", tool_temp_path("again.crecb"), NULL);
  tool_expect_errorf(&r, "crec: error: %s: crec compile: this is already a program file; compile takes MLIR\n",
                     file_copy);
}

/* ---- files: known by their magic, written atomically ------------------------------------ */

Test(tool_compile, the_file_is_replaced_atomically_with_the_mode_of_a_new_file, .init = crec_test_require_mlir) {
  REQUIRE_TOOL_EXE();
  const char *out = out_path("chain.crecb");
  char out_copy[800];
  snprintf(out_copy, sizeof out_copy, "%s", out);
  FILE *old = fopen(out_copy, "wb");
  cr_assert_not_null(old);
  fputs("old contents", old);
  cr_assert_eq(fclose(old), 0);
  tool_result r = tool_exec("compile", tool_example("chain.mlir"), "-o", out_copy, NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert_str_eq(r.err, "");
  tool_result_free(&r);
  /* the one file, whole: no temporary file is left beside it */
  cr_assert_eq(entries_of(out_dir()), 1);
  size_t size = 0;
  char *bytes = tool_slurp(out_copy, &size);
  cr_assert(crec_tool_is_program_file(bytes, size), "%s is not a program file", out_copy);
  crec_program *p = NULL;
  EXPECT_OK(crec_program_deserialize(bytes, size, &p));
  crec_program_destroy(p);
  free(bytes);
  mode_t mask = umask(0);
  umask(mask);
  struct stat st;
  cr_assert_eq(stat(out_copy, &st), 0);
  cr_assert_eq(st.st_mode & 0777, 0666 & ~mask, "mode %o, umask %o", (unsigned)(st.st_mode & 0777), (unsigned)mask);
}

Test(tool_compile, chip_names_the_target_the_file_records, .init = crec_test_require_mlir) {
  REQUIRE_TOOL_EXE();
  tool_result r = tool_exec("compile", tool_example("chain.mlir"), "-o", tool_temp_path("chain.crecb"), "--chip", "sm_80",
                            NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  tool_expect_has(r.out, ", target compute_80)\n");
  tool_result_free(&r);
}

Test(tool_compile, a_program_file_is_known_by_its_magic_whatever_its_name) {
  REQUIRE_TOOL_EXE();
  crec_program *p = tool_test_program("control", NULL);
  char *want = NULL;
  size_t len = 0;
  cr_assert_eq(crec_tool_dump_render(p, CREC_TOOL_FORMAT_TEXT, "x", NULL, &want, &len, NULL), 0);
  crec_program_destroy(p);
  static const char *const names[] = {"control.bin", "control.mlir", "control"};
  for (size_t i = 0; i < 3; i++) {
    const char *file = tool_test_program_file("control", names[i]);
    tool_result r = tool_exec("dump", file, NULL);
    cr_assert_eq(r.status, 0, "%s: %s", names[i], r.err);
    cr_assert_str_eq(r.out, want, "%s", names[i]);
    tool_result_free(&r);
  }
  free(want);
}

/* The executable reads a program file built with the C API (no MLIR needed:
 * this also runs in a build without the front end) in every format. */
Test(tool_compile, the_executable_dumps_a_program_file_as_the_program_in_every_format) {
  REQUIRE_TOOL_EXE();
  static const char *const programs[] = {"chain", "control", "elements", "dynamic"};
  static const crec_tool_format fmts[] = {CREC_TOOL_FORMAT_TEXT, CREC_TOOL_FORMAT_JSON, CREC_TOOL_FORMAT_DOT,
                                          CREC_TOOL_FORMAT_HTML};
  for (size_t i = 0; i < 4; i++) {
    char name[64];
    snprintf(name, sizeof name, "%s.crecb", programs[i]);
    char file[700];
    snprintf(file, sizeof file, "%s", tool_test_program_file(programs[i], name));
    crec_program *p = tool_test_program(programs[i], NULL);
    for (size_t f = 0; f < NUM_FORMATS; f++) {
      char *want = NULL;
      size_t len = 0;
      cr_assert_eq(crec_tool_dump_render(p, fmts[f], file, NULL, &want, &len, NULL), 0);
      tool_result r = tool_exec("dump", file, "--format", formats[f], NULL);
      cr_assert_eq(r.status, 0, "%s --format %s: %s", programs[i], formats[f], r.err);
      cr_assert_str_eq(r.out, want, "%s --format %s", programs[i], formats[f]);
      tool_result_free(&r);
      free(want);
    }
    crec_program_destroy(p);
  }
}

Test(tool_compile, run_and_bench_read_a_program_file_without_a_device) {
  REQUIRE_TOOL_EXE();
  REQUIRE_NO_DEVICE();
  char file[700];
  snprintf(file, sizeof file, "%s", tool_test_program_file("chain", "chain.crecb"));
  tool_result r = tool_exec("run", file, "--input", "x=iota", "--scalar", "n=3", NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  char head[800];
  snprintf(head, sizeof head, "%s (a program file)\nprogram: ", file);
  cr_assert_eq(strncmp(r.out, head, strlen(head)), 0, "run printed\n%s", r.out);
  tool_expect_has(r.out, "  x                f32[1024] iota");
  tool_expect_has(r.out, "  n = 3\n");
  tool_expect_has(r.out, "crec run: the program was read and its inputs prepared; nothing was run\n");
  tool_result_free(&r);
  r = tool_exec("bench", file, "--scalar", "n=3", "--json", NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert_str_eq(r.out, "{\"nodes\": null, \"record_us\": null, \"eager_us\": null, \"replay_us\": null, "
                          "\"replay_update_us\": null}\n");
  tool_expect_has(r.err, "crec bench: the program was read and its inputs prepared");
  tool_result_free(&r);
  /* the inputs are still checked against the program */
  r = tool_exec("run", file, "--scalar", "n=3", "--input", "nope=iota", NULL);
  tool_expect_error(&r, "crec: error: --input nope=iota: the program has no buffer 'nope'");
}

/* ---- in process, with the test front end (no MLIR needed) ---------------------------- */

Test(tool_compile, compile_in_process_writes_what_dump_reads_back) {
  static const char *const programs[] = {"chain", "control", "elements", "dynamic"};
  for (size_t i = 0; i < 4; i++) {
    char src_name[64], out_name[64], src[700], out[700];
    snprintf(src_name, sizeof src_name, "%s.mlir", programs[i]);
    snprintf(out_name, sizeof out_name, "%s.crecb", programs[i]);
    snprintf(src, sizeof src, "%s", tool_temp_file(src_name, "", 0));
    snprintf(out, sizeof out, "%s", tool_temp_path(out_name));
    tool_result r = tool_run("compile", src, "-o", out, NULL);
    cr_assert_eq(r.status, 0, "%s: %s", programs[i], r.err);
    cr_assert_str_eq(r.err, "");
    tool_expect_has(r.out, "(program file, ");
    tool_result_free(&r);
    for (size_t f = 0; f < NUM_FORMATS; f++) {
      if (!strcmp(formats[f], "html")) continue; /* its title names the file */
      tool_result a = tool_run("dump", src, "--format", formats[f], NULL);
      tool_result b = tool_run("dump", out, "--format", formats[f], NULL);
      expect_same_dump(&a, &b, programs[i], formats[f]);
    }
  }
}

/* compile -o -: the program file's bytes alone on standard output, the very bytes
 * -o FILE writes, and no file called '-'. */
Test(tool_compile, dash_o_dash_writes_the_program_file_to_standard_output) {
  cr_assert_eq(chdir(tool_temp_dir()), 0);
  const char *src = tool_temp_file("chain.mlir", "", 0);
  const char *file = tool_temp_path("chain.crecb");
  tool_result r = tool_run("compile", src, "-o", file, NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  tool_result_free(&r);
  size_t want_size = 0;
  char *want = tool_slurp(file, &want_size);
  cr_assert_not_null(want);
  /* in process, keeping the byte count of what reached standard output (NULs and all) */
  char *argv[] = {"crec", "compile", (char *)src, "-o", "-", NULL};
  char *out = NULL, *err = NULL;
  size_t out_size = 0, err_size = 0;
  FILE *o = open_memstream(&out, &out_size), *e = open_memstream(&err, &err_size);
  const crec_tool_backend backend = {tool_test_lower, NULL, NULL, NULL, NULL, NULL};
  int status = crec_tool_main(5, argv, o, e, &backend);
  fclose(o);
  fclose(e);
  cr_assert_eq(status, 0, "%s", err);
  cr_assert_eq(err_size, 0, "%s", err);
  cr_assert_eq(out_size, want_size, "-o - wrote %zu bytes, -o FILE %zu", out_size, want_size);
  cr_assert_eq(memcmp(out, want, want_size), 0, "-o - wrote other bytes than -o FILE");
  cr_assert(crec_tool_is_program_file(out, out_size));
  cr_assert_neq(access("-", F_OK), 0, "crec compile -o - wrote a file called '-'");
  free(out);
  free(err);
  free(want);
}

/* ---- help ----------------------------------------------------------------------- */

Test(tool_compile, help_lists_the_command_and_its_options) {
  const char *h = crec_tool_help(CREC_TOOL_CMD_COMPILE);
  static const char *const words[] = {"Usage: crec compile PROG.mlir -o PROG.crecb", "-o FILE", "--entry NAME",
                                      "--chip sm_NN", "-DCREC_WITH_MLIR=OFF", "host code", "Examples:\n  crec ",
                                      NULL};
  for (const char *const *w = words; *w; w++) tool_expect_has(h, *w);
  for (const char *line = h; *line;) {
    const char *end = strchr(line, '\n');
    cr_assert_not_null(end);
    cr_assert_leq(end - line, 100, "a help line of %d characters", (int)(end - line));
    line = end + 1;
  }
  const char *tool = crec_tool_help(CREC_TOOL_CMD_NONE);
  tool_expect_has(tool, "  crec compile PROG.mlir -o PROG.crecb");
  tool_expect_has(tool, "\n  compile ");
  tool_expect_has(tool, "crec help [run|bench|profile|dump|compile|cache]");
  cr_assert_str_eq(crec_tool_command_name(CREC_TOOL_CMD_COMPILE), "compile");

  tool_result r = tool_run("compile", "--help", NULL);
  cr_assert_eq(r.status, 0);
  cr_assert_str_eq(r.out, h);
  tool_result_free(&r);
}

Test(tool_compile, the_executable_prints_the_help) {
  REQUIRE_TOOL_EXE();
  static const char *const forms[][3] = {{"compile", "--help", NULL}, {"compile", "-h", NULL}, {"help", "compile", NULL}};
  for (size_t i = 0; i < 3; i++) {
    tool_result r = tool_exec_argv(NULL, forms[i]);
    cr_assert_eq(r.status, 0, "%s %s: %s", forms[i][0], forms[i][1], r.err);
    cr_assert_str_eq(r.err, "");
    cr_assert_str_eq(r.out, crec_tool_help(CREC_TOOL_CMD_COMPILE), "crec %s %s", forms[i][0], forms[i][1]);
    tool_result_free(&r);
  }
  tool_result r = tool_exec("--help", NULL);
  cr_assert_eq(r.status, 0);
  tool_expect_has(r.out, "  crec compile PROG.mlir -o PROG.crecb");
  tool_result_free(&r);
}

/* Every example line of compile's help runs as shown, in order (the last dumps
 * what the first wrote), from a directory where examples/ are the staged copies. */
Test(tool_compile, every_example_in_the_help_runs, .init = crec_test_require_mlir) {
  REQUIRE_TOOL_EXE();
  const char *dir = tool_temp_dir();
  char link[700];
  snprintf(link, sizeof link, "%s/examples", dir);
  cr_assert_eq(symlink(tool_examples_dir(), link), 0);
  const char *h = strstr(crec_tool_help(CREC_TOOL_CMD_COMPILE), "Examples:\n");
  cr_assert_not_null(h);
  h += strlen("Examples:\n");
  int ran = 0;
  while (!strncmp(h, "  crec ", 7)) {
    const char *end = strchr(h, '\n');
    char line[512];
    snprintf(line, sizeof line, "%.*s", (int)(end - h - 7), h + 7);
    h = end + 1;
    const char *argv[32];
    int n = 0;
    for (char *save = NULL, *w = strtok_r(line, " ", &save); w && n < 31; w = strtok_r(NULL, " ", &save)) argv[n++] = w;
    argv[n] = NULL;
    tool_result r = tool_exec_argv(dir, argv);
    cr_assert_eq(r.status, 0, "'crec %s %s' exited with %d: %s", argv[0], argv[1], r.status, r.err);
    tool_result_free(&r);
    ran++;
  }
  cr_assert_geq(ran, 3);
}

/* ---- the chip check of run and bench ---------------------------------------------- */

static int runs(const char *target, int major, int minor) {
  char why[256];
  int ok = crec_tool_chip_runs(target, major, minor, why, sizeof why);
  cr_assert(ok ? why[0] == '\0' : why[0] != '\0', "%s on %d.%d: %d, '%s'", target, major, minor, ok, why);
  return ok;
}

Test(tool_compile, which_targets_a_device_can_run) {
  static const struct {
    const char *target;
    int major, minor, runs;
  } cases[] = {
      /* no module says */
      {"any", 5, 0, 1},
      /* PTX: its chip and every later one (the driver compiles it) */
      {"compute_90", 9, 0, 1}, {"compute_90", 10, 0, 1}, {"compute_80", 8, 9, 1}, {"compute_90", 8, 9, 0},
      {"compute_80", 7, 5, 0},
      /* arch-specific PTX: that chip only; family PTX: later chips of its major */
      {"compute_90a", 9, 0, 1}, {"compute_90a", 10, 0, 0}, {"compute_100f", 10, 3, 1}, {"compute_100f", 12, 0, 0},
      /* a cubin: its chip and later minor versions of its major */
      {"sm_90", 9, 0, 1}, {"sm_86", 8, 9, 1}, {"sm_86", 8, 0, 0}, {"sm_80", 9, 0, 0}, {"sm_90", 10, 0, 0},
      {"sm_90a", 9, 0, 1}, {"sm_100a", 10, 3, 0}, {"sm_120", 12, 1, 1},
      /* every module must fit */
      {"compute_80,sm_90", 9, 0, 1}, {"compute_80,sm_90", 8, 0, 0}, {"sm_90,compute_100", 9, 0, 0},
      /* what this crec does not know is refused, saying so */
      {"gfx90a", 9, 0, 0}, {"sm_9", 9, 0, 0}, {"sm_90x", 9, 0, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    cr_assert_eq(!!runs(cases[i].target, cases[i].major, cases[i].minor), cases[i].runs, "%s on %d.%d", cases[i].target,
                 cases[i].major, cases[i].minor);
  char why[256];
  cr_assert(!crec_tool_chip_runs("sm_90", 10, 0, why, sizeof why));
  cr_assert_str_eq(why, "a cubin for sm_90 runs on 9.0 to 9.9 only");
  cr_assert(!crec_tool_chip_runs("compute_90", 8, 0, why, sizeof why));
  cr_assert_str_eq(why, "PTX for compute_90 compiles for that chip and later ones only");
  cr_assert(!crec_tool_chip_runs("sm_90a", 9, 1, why, sizeof why));
  cr_assert_str_eq(why, "a cubin for sm_90a runs on 9.0 only");
}

Test(tool_compile, a_program_file_is_known_by_its_first_eight_bytes) {
  static const unsigned char magic[8] = {0x89, 'C', 'R', 'E', 'C', 'B', '\r', '\n'};
  cr_assert(crec_tool_is_program_file(magic, 8));
  cr_assert(!crec_tool_is_program_file(magic, 7));
  cr_assert(!crec_tool_is_program_file("func.func", 9));
  cr_assert(!crec_tool_is_program_file(NULL, 0));
}

/* In a build without MLIR (the CI stage of -DCREC_WITH_MLIR=OFF), MLIR input is
 * refused in one line that points at program files. */
Test(tool_compile, without_mlir_mlir_input_is_refused_pointing_at_program_files) {
  REQUIRE_TOOL_EXE();
  crec_lower_cache_stats st = CREC_LOWER_CACHE_STATS_INIT;
  if (crec_lower_cache_get_stats(&st) != CREC_ERR_UNSUPPORTED) cr_skip_test("this build has the MLIR front end");
  char src[700];
  snprintf(src, sizeof src, "%s", tool_example("chain.mlir"));
  tool_result r = tool_exec("dump", src, NULL);
  tool_expect_errorf(&r,
                     "crec: error: %s: crec was built without MLIR (CREC_WITH_MLIR=OFF); it reads program files "
                     "(PROG.crecb) that 'crec compile' of a crec with MLIR writes\n",
                     src);
  r = tool_exec("compile", src, "-o", out_path("chain.crecb"), NULL);
  tool_expect_errorf(&r, "crec: error: %s: crec was built without MLIR (CREC_WITH_MLIR=OFF); ", src);
  cr_assert_eq(entries_of(out_dir()), 0);
}

/* compile --early-start: the kernels of the file wait at their entry and their launches
 * start early (for sm_90); the file's dump says so. */
Test(tool_compile, early_start_marks_the_compiled_launches, .init = crec_test_require_mlir) {
  REQUIRE_TOOL_EXE();
  const char *file = out_path("chain-early.crecb");
  tool_result r = tool_exec("compile", tool_example("chain.mlir"), "-o", file, "--chip", "sm_90", "--early-start", NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  tool_result_free(&r);
  r = tool_exec("dump", file, NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_expect(strstr(r.out, ", early start>>>") != NULL, "%s", r.out);
  tool_result_free(&r);
  r = tool_exec("dump", tool_example("chain.mlir"), NULL);
  cr_expect(strstr(r.out, "early start") == NULL, "%s", r.out);
  tool_result_free(&r);
}
