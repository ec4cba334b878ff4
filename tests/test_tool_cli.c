/* The real `crec` executable, run as a user runs it (posix_spawn), on the
 * shipped examples (staged in build/examples/ next to the image nvcc builds):
 * every subcommand and flag, the JSON of `dump` and of `bench` without a
 * device, each error path with its one line and exit status, the help texts
 * (every example command in them runs), and tools/demo.sh. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_tool.h"

/* These tests run the real crec on the MLIR examples: without the front end (CREC_WITH_MLIR=OFF)
 * they skip, saying why. */
TestSuite(tool_cli, .init = crec_test_require_mlir);

/* Asserts exit status 0 and nothing on stderr. */
static void expect_ok(const tool_result *r, const char *what) {
  cr_assert_eq(r->status, 0, "%s: exit status %d, stderr: %s", what, r->status, r->err);
  cr_assert_str_eq(r->err, "", "%s wrote to stderr", what);
}

/* ---- the examples, dumped ------------------------------------------------------ */

static const char *const examples[] = {"chain", "jacobi", "switch", "branches", "image", "dynamic"};
#define NUM_EXAMPLES (sizeof examples / sizeof examples[0])

static const char *example(const char *name) {
  char file[64];
  snprintf(file, sizeof file, "%s.mlir", name);
  return tool_example(file);
}

Test(tool_cli, every_example_is_in_the_repository_and_staged_in_the_build) {
  REQUIRE_TOOL_EXE();
  for (size_t i = 0; i < NUM_EXAMPLES; i++) {
    char src[600];
    snprintf(src, sizeof src, "%s/examples/%s.mlir", tool_source_dir(), examples[i]);
    char *a = tool_slurp(src, NULL), *b = tool_slurp(example(examples[i]), NULL);
    cr_assert_not_null(a, "%s is missing", src);
    cr_assert_not_null(b, "%s is not staged in the build tree", example(examples[i]));
    cr_assert_str_eq(a, b, "the staged %s differs from the repository's (re-run cmake)", examples[i]);
    free(a);
    free(b);
  }
  /* the image the crec.image example loads is built, not committed */
  char path[4400];
  snprintf(path, sizeof path, "%simage.ptx", tool_examples_dir());
  char *ptx = tool_slurp(path, NULL);
  cr_assert_not_null(ptx, "nvcc did not build %s", path);
  tool_expect_has(ptx, ".entry rmsnorm");
  free(ptx);
  snprintf(path, sizeof path, "%s/examples/image.ptx", tool_source_dir());
  cr_assert_neq(access(path, F_OK), 0, "%s is a generated file in the repository", path);
}

Test(tool_cli, chain_dumps_as_a_chain_of_three_kernels) {
  REQUIRE_TOOL_EXE();
  tool_result r = tool_exec("dump", example("chain"), NULL);
  expect_ok(&r, "dump chain");
  tool_expect_has(r.out, "program: 3 commands in 1 region, 4 buffers (2 arguments, 2 temporaries, 0 constants)");
  tool_expect_has(r.out, "#0 launch 't = 2x' scale<<<16x1x1, 256x1x1>>>(w t[0..16384), r x[0..16384), 2f)\n");
  tool_expect_has(r.out, "#1 launch 'u = t + 1' shift<<<16x1x1, 256x1x1>>>(w u[0..16384), r t[0..16384), 1f) after #0\n");
  tool_expect_has(r.out, "#2 launch 'y = u * u' square<<<16x1x1, 256x1x1>>>(w y[0..16384), r u[0..16384)) after #1\n");
  tool_result_free(&r);
}

Test(tool_cli, jacobi_loops_on_a_flag_its_condition_kernel_writes) {
  REQUIRE_TOOL_EXE();
  tool_result r = tool_exec("dump", example("jacobi"), NULL);
  expect_ok(&r, "dump jacobi");
  tool_expect_has(r.out, "#2 while 'while more' predicate more[0..1) after #0 #1\n    cond:\n"
                    "      #3 launch 'residual, more' residual<<<1x1x1, 1x1x1>>>(r x[0..1024), r b[0..1024), tol, "
                    "r sweeps[0..4), w residual[0..4), w more[0..1))\n    body:\n"
                    "      #4 launch 'x_next = sweep(x)' sweep<<<1x1x1, 256x1x1>>>(w x_next[0..1024), r x[0..1024), "
                    "r b[0..1024), rw sweeps[0..4))\n"
                    "      #5 memcpy 'x = x_next' x[0..1024) <- x_next[0..1024) after #4\n");
  tool_expect_has(r.out, "  tol              f32 bound\n");
  tool_result_free(&r);
}

Test(tool_cli, switch_has_three_cases_and_a_default) {
  REQUIRE_TOOL_EXE();
  tool_result r = tool_exec("dump", example("switch"), NULL);
  expect_ok(&r, "dump switch");
  tool_expect_has(r.out, "#0 switch 'by mode' index mode[0..4) cases [0, 1, 2]\n"
                    "    branch case 0:\n      #1 launch 'y = max(x, 0)' relu<<<4x1x1, 256x1x1>>>");
  tool_expect_has(r.out, "    branch case 2:\n      #3 launch 'y = -x' negate");
  tool_expect_has(r.out, "    branch default:\n      #4 memcpy 'y = x' y[0..4096) <- x[0..4096)\n");
  tool_result_free(&r);
}

/* The four branches: no dependency between them, the join waits for each. */
Test(tool_cli, branches_have_no_edges_between_them) {
  REQUIRE_TOOL_EXE();
  tool_result r = tool_exec("dump", example("branches"), "--format", "json", NULL);
  expect_ok(&r, "dump branches");
  json v;
  cr_assert_eq(json_parse(r.out, &v), 0, "not JSON: %s", r.out);
  const json *commands = json_get(&v, "commands");
  cr_assert_eq(commands->count, 9);
  for (size_t i = 0; i < 8; i++) {
    const json *deps = json_get(&commands->items[i], "deps");
    if (i % 2 == 0) {
      cr_assert_eq(deps->count, 0, "branch head #%zu waits for something", i);
    } else {
      cr_assert_eq(deps->count, 1, "#%zu", i);
      cr_assert_eq(deps->items[0].number, (double)(i - 1), "#%zu waits for #%g", i, deps->items[0].number);
    }
  }
  const json *join = json_get(&commands->items[8], "deps");
  cr_assert_eq(join->count, 4);
  for (size_t k = 0; k < 4; k++) cr_assert_eq(join->items[k].number, (double)(2 * k + 1));
  json_free(&v);
  tool_result_free(&r);
  /* and the DOT has exactly those edges: 4 inside branches, 4 into the join */
  r = tool_exec("dump", example("branches"), "--format", "dot", NULL);
  expect_ok(&r, "dump branches --format dot");
  int edges = 0;
  for (const char *p = r.out; (p = strstr(p, " -> ")); p += 4) edges++;
  cr_assert_eq(edges, 8, "%d edges in:\n%s", edges, r.out);
  tool_result_free(&r);
}

Test(tool_cli, image_takes_its_kernel_from_the_nvcc_built_ptx) {
  REQUIRE_TOOL_EXE();
  tool_result r = tool_exec("dump", example("image"), NULL);
  expect_ok(&r, "dump image");
  tool_expect_has(r.out, "  rmsnorm          module cuda (ptx, ");
  tool_expect_has(r.out, "#0 launch 'y = rmsnorm(x) * w' rmsnorm<<<64x1x1, 256x1x1>>>(w y[0..262144), r x[0..262144), "
                    "r w[0..4096), 1e-06f, 1024)\n");
  tool_result_free(&r);
  /* the repository's copy has no image beside it: the error names the file and the line */
  char src[600];
  snprintf(src, sizeof src, "%s/examples/image.mlir", tool_source_dir());
  r = tool_exec("dump", src, NULL);
  tool_expect_errorf(&r, "crec: error: %s:13:3: 'gpu.module': crec.image 'image.ptx' (%s/examples/image.ptx) "
                     "cannot be opened: No such file or directory\n", src, tool_source_dir());
}

Test(tool_cli, dynamic_sizes_its_argument_at_each_execution) {
  REQUIRE_TOOL_EXE();
  tool_result r = tool_exec("dump", example("dynamic"), NULL);
  expect_ok(&r, "dump dynamic");
  tool_expect_has(r.out, "  x                argument  0 bytes, binding 0, dynamic size\n");
  tool_expect_has(r.out, "  x.bytes          i64 size of x\n");
  tool_expect_has(r.out, "scale<<<ceildivui(dim(x, 0), 256)x1x1, 256x1x1>>>");
  tool_result_free(&r);
}

/* The dump schema of crec/dump.h, exactly, for every example: each object has its
 * kind's keys and no others. */
Test(tool_cli, dump_json_of_every_example_has_the_design_schema) {
  REQUIRE_TOOL_EXE();
  static const char *const top[] = {"buffers", "scalars", "regions", "commands", NULL};
  static const char *const buffer_keys[] = {"name", "kind", "size", "element", "dynamic", NULL};
  static const char *const placed_keys[] = {"arena_offset", "live", NULL}; /* a temporary some command uses */
  static const char *const none[] = {NULL};
  static const char *const scalar_keys[] = {"name", "type", "kind", NULL};
  static const char *const region_keys[] = {"id", "parent", "role", "index", NULL};
  static const char *const kinds = " launch memcpy memset barrier while if switch gemm collective custom host ";
  static const char *const roles = " body cond then else branch ";
  for (size_t e = 0; e < NUM_EXAMPLES; e++) {
    tool_result r = tool_exec("dump", example(examples[e]), "--format", "json", NULL);
    expect_ok(&r, examples[e]);
    json v;
    cr_assert_eq(json_parse(r.out, &v), 0, "%s: not JSON: %s", examples[e], r.out);
    json_expect_keys(&v, "the dump", top);
    const json *buffers = json_get(&v, "buffers"), *scalars = json_get(&v, "scalars");
    const json *regions = json_get(&v, "regions"), *commands = json_get(&v, "commands");
    for (size_t i = 0; i < buffers->count; i++) {
      const json *b = &buffers->items[i];
      int temporary = !strcmp(json_get(b, "kind")->string, "temporary");
      json_expect_schema_keys(b, "a buffer", buffer_keys, temporary ? placed_keys : none);
    }
    for (size_t i = 0; i < scalars->count; i++) json_expect_keys(&scalars->items[i], "a scalar", scalar_keys);
    cr_assert_geq(regions->count, 1);
    for (size_t i = 0; i < regions->count; i++) {
      const json *rg = &regions->items[i];
      json_expect_keys(rg, "a region", region_keys);
      const char *role = json_get(rg, "role")->string;
      char word[32];
      snprintf(word, sizeof word, " %s ", role);
      if (i == 0) {
        cr_assert_str_eq(role, "program");
        cr_assert_eq(json_get(rg, "parent")->kind, JSON_NULL);
      } else {
        cr_assert(strstr(roles, word), "%s: region role '%s'", examples[e], role);
        const json *parent = json_get(rg, "parent");
        cr_assert_eq(parent->kind, JSON_NUMBER);
        const char *pk = json_get(&commands->items[(size_t)parent->number], "kind")->string;
        cr_assert(!strcmp(pk, "while") || !strcmp(pk, "if") || !strcmp(pk, "switch"), "parent of kind %s", pk);
      }
    }
    for (size_t i = 0; i < commands->count; i++) {
      const json *c = &commands->items[i];
      json_expect_command_keys(c, "a command");
      cr_assert_eq(json_get(c, "id")->number, (double)i);
      char word[32];
      snprintf(word, sizeof word, " %s ", json_get(c, "kind")->string);
      cr_assert(strstr(kinds, word), "command kind %s", word);
      /* control flow lists its regions in order; each names it as parent, at its index */
      const json *own = json_get(c, "regions");
      for (size_t k = 0; own && k < own->count; k++) {
        const json *rg = &regions->items[(size_t)own->items[k].number];
        cr_assert_eq(json_get(rg, "parent")->number, (double)i, "%s: region of #%zu", examples[e], i);
        cr_assert_eq(json_get(rg, "index")->number, (double)k, "%s: region %zu of #%zu", examples[e], k, i);
      }
      const json *deps = json_get(c, "deps");
      for (size_t k = 0; k < deps->count; k++) {
        const json *dep = &commands->items[(size_t)deps->items[k].number];
        cr_assert_lt(deps->items[k].number, (double)i, "a dependency on a later command");
        cr_assert_eq(json_get(dep, "region")->number, json_get(c, "region")->number, "a dependency across regions");
      }
    }
    json_free(&v);
    tool_result_free(&r);
  }
}

Test(tool_cli, dump_writes_dot_svg_and_html_files) {
  REQUIRE_TOOL_EXE();
  tool_result r = tool_exec("dump", example("jacobi"), "--format", "dot", NULL);
  expect_ok(&r, "dump --format dot");
  cr_assert_eq(strncmp(r.out, "digraph", 7), 0, "%s", r.out);
  tool_expect_has(r.out, "subgraph cluster");
  tool_result_free(&r);
  static const char *const formats[] = {"text", "json", "dot", "svg", "html"};
  static const char *const starts[] = {"program: ", "{", "digraph", "<", "<!DOCTYPE html>"};
  for (size_t f = 0; f < 5; f++) {
    if (f >= 3 && access("/usr/bin/dot", X_OK) != 0) continue;
    char path[700], want[800];
    snprintf(path, sizeof path, "%s/jacobi.%s", tool_temp_dir(), formats[f]);
    r = tool_exec("dump", example("jacobi"), "--format", formats[f], "-o", path, NULL);
    expect_ok(&r, formats[f]);
    size_t size = 0;
    char *text = tool_slurp(path, &size);
    cr_assert_not_null(text, "%s was not written", path);
    cr_assert_eq(strncmp(text, starts[f], strlen(starts[f])), 0, "%s starts with %.40s", formats[f], text);
    snprintf(want, sizeof want, "wrote %s (%s, %zu bytes)\n", path, formats[f], size);
    cr_assert_str_eq(r.out, want);
    if (f == 4) {
      tool_expect_has(text, "<svg");
      cr_assert_null(strstr(text, "src=\"http"), "the page loads something from the network");
      cr_assert_null(strstr(text, "href=\"http"), "the page links a network resource");
    }
    free(text);
    tool_result_free(&r);
  }
}

Test(tool_cli, svg_without_graphviz_is_a_clear_error) {
  REQUIRE_TOOL_EXE();
  /* a PATH without Graphviz's dot */
  const char *old = getenv("PATH");
  char *saved = old ? strdup(old) : NULL;
  setenv("PATH", "/nonexistent", 1);
  tool_result r = tool_exec("dump", example("chain"), "--format", "svg", NULL);
  if (saved) setenv("PATH", saved, 1);
  free(saved);
  tool_expect_error(&r, "crec: error: Graphviz's 'dot' program was not found on PATH; --format svg and html need it");
}

/* ---- run and bench without a device -------------------------------------------- */

Test(tool_cli, run_check_of_every_example_without_a_device_prints_the_summary) {
  REQUIRE_TOOL_EXE();
  REQUIRE_NO_DEVICE();
  struct {
    const char *name;
    const char *args[8];
    const char *line; /* a line of its summary */
  } runs[] = {
      {"chain", {"--input", "x=iota"}, "  x                f32[4096] iota\n  y                f32[4096] zeros, output\n"},
      {"jacobi", {"--input", "b=fill:1", "--scalar", "tol=1e-4"}, "scalar values:\n  tol = 9.99999975e-05\n"},
      {"switch", {"--input", "x=random:1", "--input", "mode=fill:1"}, "  mode             i32[1] fill:1\n"},
      {"branches", {"--input", "x=iota"}, "  y                f32[1024] zeros, output\n"},
      {"image", {"--input", "x=random:1", "--input", "w=fill:1"}, "  w                f32[1024] fill:1\n"},
      {"dynamic", {"--size", "x=1000", "--input", "x=iota"}, "  x                f32[1000] iota, output\n"},
  };
  for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
    char *argv[16];
    int n = 0;
    argv[n++] = (char *)tool_exe();
    argv[n++] = "run";
    argv[n++] = (char *)example(runs[i].name);
    for (size_t k = 0; runs[i].args[k]; k++) argv[n++] = (char *)runs[i].args[k];
    argv[n++] = "--check";
    argv[n] = NULL;
    tool_result r = {0, NULL, NULL};
    r.status = tool_spawn(argv, tool_timeout(), &r.out, &r.err);
    expect_ok(&r, runs[i].name);
    char head[700];
    snprintf(head, sizeof head, "%s (entry main)\nprogram: ", example(runs[i].name));
    cr_assert_eq(strncmp(r.out, head, strlen(head)), 0, "%s", r.out);
    tool_expect_has(r.out, runs[i].line);
    tool_expect_has(r.out, "\ncrec run: no CUDA device is available: ");
    tool_expect_has(r.out, "\ncrec run: the program was lowered and its inputs prepared; nothing was run\n");
    cr_assert_null(strstr(r.out, "check passed"), "claims a check that did not run");
    tool_result_free(&r);
  }
}

Test(tool_cli, bench_without_a_device) {
  REQUIRE_TOOL_EXE();
  REQUIRE_NO_DEVICE();
  tool_result r = tool_exec("bench", example("chain"), "--input", "x=iota", "--iters", "1000", "--json", NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  json v;
  cr_assert_eq(json_parse(r.out, &v), 0, "stdout is not one JSON object: '%s'", r.out);
  static const char *const keys[] = {"nodes", "record_us", "eager_us", "replay_us", "replay_update_us", NULL};
  json_expect_keys(&v, "the bench object", keys);
  for (size_t i = 0; keys[i]; i++) cr_assert_eq(json_get(&v, keys[i])->kind, JSON_NULL, "%s", keys[i]);
  json_free(&v);
  tool_expect_has(r.err, "program: 3 commands");
  tool_expect_has(r.err, "crec bench: no CUDA device is available: ");
  cr_assert_null(strchr(r.err, '\r'), "a progress bar on a file");
  tool_result_free(&r);
  r = tool_exec("bench", example("chain"), "--input", "x=iota", NULL);
  expect_ok(&r, "bench");
  tool_expect_has(r.out, "crec bench: no CUDA device is available: ");
  tool_result_free(&r);
}

/* profile without a device: the summary of jacobi with the inputs
 * tools/example-args.sh gives it, the notice, exit status 0, and no profile. */
Test(tool_cli, profile_without_a_device) {
  REQUIRE_TOOL_EXE();
  REQUIRE_NO_DEVICE();
  tool_result r = tool_exec("profile", example("jacobi"), "--input", "b=fill:1", "--scalar", "tol=1e-4", NULL);
  expect_ok(&r, "profile jacobi");
  char head[700];
  snprintf(head, sizeof head, "%s (entry main)\nprogram: 6 commands", example("jacobi"));
  cr_assert_eq(strncmp(r.out, head, strlen(head)), 0, "%s", r.out);
  tool_expect_has(r.out, "scalar values:\n  tol = 9.99999975e-05\n");
  tool_expect_has(r.out, "\ncrec profile: no CUDA device is available: ");
  tool_expect_has(r.out, "\ncrec profile: the program was lowered and its inputs prepared; nothing was run\n");
  cr_assert_null(strstr(r.out, "profile of "), "a profile without a device:\n%s", r.out);
  tool_result_free(&r);
  /* json to stdout: nothing there, the notice on stderr; -o: no file */
  const char *file = tool_temp_path("jacobi-profile.json");
  r = tool_exec("profile", example("jacobi"), "--input", "b=fill:1", "--scalar", "tol=1e-4", "--format", "json", NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert_str_eq(r.out, "");
  tool_expect_has(r.err, "\ncrec profile: no CUDA device is available: ");
  tool_result_free(&r);
  r = tool_exec("profile", example("jacobi"), "--input", "b=fill:1", "--scalar", "tol=1e-4", "--format", "html", "-o",
                file, NULL);
  expect_ok(&r, "profile -o");
  tool_expect_has(r.out, "\ncrec profile: no CUDA device is available: ");
  cr_assert_neq(access(file, F_OK), 0, "%s written without a device", file);
  tool_result_free(&r);
  /* the inputs are checked as run checks them */
  r = tool_exec("profile", example("jacobi"), "--input", "b=fill:1", NULL);
  tool_expect_errorf(&r, "crec: error: %s: scalar 'tol' (f32) needs a value: --scalar tol=VALUE\n", example("jacobi"));
}

Test(tool_cli, a_size_list_prepares_every_size) {
  REQUIRE_TOOL_EXE();
  REQUIRE_NO_DEVICE();
  tool_result r = tool_exec("run", example("dynamic"), "--size", "x=1000,100000,7", "--input", "x=iota", "--check", NULL);
  expect_ok(&r, "run --size list");
  tool_expect_has(r.out, "  x                f32[1000] iota, output; replays take in turn f32[1000], f32[100000], f32[7]\n");
  tool_result_free(&r);
  r = tool_exec("run", example("dynamic"), "--size", "x=1000,100000", "--iters", "1", NULL);
  tool_expect_error(&r, "crec: error: --size x=1000,100000: 2 sizes, but --iters 1 replays fewer times\n");
  r = tool_exec("run", example("dynamic"), "--size", "x=1000,,5", NULL);
  tool_expect_error(&r, "crec: error: --size x=1000,,5: '' is not an element count\n");
  r = tool_exec("run", example("dynamic"), "--size", "x=10,20", "--output", "x=x.bin", NULL);
  tool_expect_error(&r, "crec: error: --output x=x.bin: --output writes one execution's bytes");
  r = tool_exec("bench", example("dynamic"), "--size", "x=10,20", NULL);
  tool_expect_error(&r, "crec: error: --size x=10,20: several sizes are for 'crec run'");
  r = tool_exec("run", example("dynamic"), NULL);
  tool_expect_errorf(&r, "crec: error: %s: argument 'x' has a dynamic size: give --size x=ELEMENTS or a file input\n",
                     example("dynamic"));
  r = tool_exec("run", example("chain"), "--size", "x=10", NULL);
  tool_expect_error(&r, "crec: error: --size x=10: argument 'x' has a static size (16384 bytes)");
}

Test(tool_cli, a_file_input_sizes_a_dynamic_argument) {
  REQUIRE_TOOL_EXE();
  REQUIRE_NO_DEVICE();
  float data[300] = {0};
  char arg[700];
  snprintf(arg, sizeof arg, "x=%s", tool_temp_file("x.bin", data, sizeof data));
  tool_result r = tool_exec("run", example("dynamic"), "--input", arg, NULL);
  expect_ok(&r, "run with a file");
  tool_expect_has(r.out, "  x                f32[300] ");
  tool_result_free(&r);
}

/* ---- errors ----------------------------------------------------------------- */

Test(tool_cli, a_missing_program_file) {
  REQUIRE_TOOL_EXE();
  static const char *const commands[] = {"run", "bench", "dump"};
  for (size_t i = 0; i < 3; i++) {
    tool_result r = tool_exec(commands[i], "/nonexistent/prog.mlir", NULL);
    tool_expect_error(&r, "crec: error: /nonexistent/prog.mlir: cannot open the program: No such file or directory\n");
  }
}

Test(tool_cli, mlir_errors_carry_file_line_and_column) {
  REQUIRE_TOOL_EXE();
  const char *bad = "module {\n  func.func @main() {\n    %x = arith.constant : i32\n    return\n  }\n}\n";
  const char *path = tool_temp_file("bad.mlir", bad, strlen(bad));
  char want[900];
  snprintf(want, sizeof want, "crec: error: %s:3:24: expected attribute value\n", path);
  tool_result r = tool_exec("dump", path, NULL);
  tool_expect_error(&r, want);
  r = tool_exec("run", path, "--check", NULL);
  tool_expect_error(&r, want);
  const char *loop = "module {\n  func.func @main(%n: index) {\n    %c0 = arith.constant 0 : index\n"
                     "    %c1 = arith.constant 1 : index\n    scf.for %i = %c0 to %c1 step %n {\n    }\n"
                     "    return\n  }\n}\n";
  path = tool_temp_file("loop.mlir", loop, strlen(loop));
  snprintf(want, sizeof want, "crec: error: %s:5:5: 'scf.for': scf.for in the entry function is not lowered yet", path);
  r = tool_exec("bench", path, "--scalar", "arg0=3", NULL);
  tool_expect_error(&r, want);
  snprintf(want, sizeof want, "crec: error: %s:13:1: 'builtin.module': entry function 'nope' not found "
           "(functions in the module: 'main')\n", example("chain"));
  r = tool_exec("dump", example("chain"), "--entry", "nope", NULL);
  tool_expect_error(&r, want);
  path = tool_temp_file("empty.mlir", "", 0);
  r = tool_exec("dump", path, NULL);
  tool_expect_errorf(&r, "crec: error: %s", path);
}

Test(tool_cli, bad_specs) {
  REQUIRE_TOOL_EXE();
  tool_result r = tool_exec("run", example("chain"), "--input", "x=fill:abc", NULL);
  tool_expect_error(&r, "crec: error: --input x=fill:abc: fill value 'abc' is not a number (expected fill:V, e.g. fill:0 or fill:1.5)\n");
  r = tool_exec("run", example("switch"), "--input", "mode=fill:1.5", NULL);
  tool_expect_error(&r, "crec: error: --input mode=fill:1.5: fill value 1.5 is not an integer, but the buffer holds i32 elements\n");
  r = tool_exec("bench", example("chain"), "--input", "x=random:-1", NULL);
  tool_expect_error(&r, "crec: error: --input x=random:-1: random seed '-1' is not an unsigned 64-bit integer");
  r = tool_exec("run", example("chain"), "--input", "x=/nonexistent.bin", NULL);
  tool_expect_error(&r, "crec: error: --input x=/nonexistent.bin: '/nonexistent.bin' is neither fill:V, iota, random:SEED nor a readable file");
  float few[3] = {1, 2, 3};
  char arg[700];
  const char *file = tool_temp_file("few.bin", few, sizeof few);
  snprintf(arg, sizeof arg, "x=%s", file);
  r = tool_exec("run", example("chain"), "--input", arg, NULL);
  tool_expect_errorf(&r, "crec: error: --input %s: file '%s' has 12 bytes, but the buffer has 16384\n", arg, file);
  r = tool_exec("run", example("chain"), "--input", "x", NULL);
  tool_expect_error(&r, "crec: error: --input x: expected NAME=SPEC\n");
}

Test(tool_cli, unknown_buffers) {
  REQUIRE_TOOL_EXE();
  tool_result r = tool_exec("run", example("chain"), "--input", "q=iota", NULL);
  tool_expect_error(&r, "crec: error: --input q=iota: the program has no buffer 'q' (argument buffers: x, y)\n");
  r = tool_exec("run", example("chain"), "--input", "t=iota", NULL);
  tool_expect_error(&r, "crec: error: --input t=iota: buffer 't' is a temporary, not an argument (argument buffers: x, y)\n");
  r = tool_exec("run", example("chain"), "--output", "z=z.bin", NULL);
  tool_expect_error(&r, "crec: error: --output z=z.bin: the program has no buffer 'z' (argument buffers: x, y)\n");
  r = tool_exec("bench", example("dynamic"), "--size", "w=10", NULL);
  tool_expect_error(&r, "crec: error: --size w=10: the program has no buffer 'w' (argument buffers: x)\n");
}

Test(tool_cli, bad_scalars) {
  REQUIRE_TOOL_EXE();
  tool_result r = tool_exec("run", example("jacobi"), "--scalar", "tol=abc", NULL);
  tool_expect_error(&r, "crec: error: --scalar tol=abc: 'abc' is not a number (the scalar is f32)\n");
  r = tool_exec("run", example("jacobi"), "--scalar", "tol=1e99", NULL);
  tool_expect_error(&r, "crec: error: --scalar tol=1e99: 1e99 is out of range for f32\n");
  r = tool_exec("run", example("jacobi"), "--scalar", "tol=1e-4", "--scalar", "tol=1e-5", NULL);
  tool_expect_error(&r, "crec: error: --scalar tol=1e-5: 'tol' is already given by '--scalar tol=1e-4'\n");
  r = tool_exec("run", example("jacobi"), "--scalar", "eps=1", NULL);
  tool_expect_error(&r, "crec: error: --scalar eps=1: the program has no scalar 'eps' (bound scalars: tol)\n");
  char want[700];
  snprintf(want, sizeof want, "crec: error: %s: scalar 'tol' (f32) needs a value: --scalar tol=VALUE\n", example("jacobi"));
  r = tool_exec("run", example("jacobi"), NULL);
  tool_expect_error(&r, want);
  r = tool_exec("run", example("dynamic"), "--scalar", "x.bytes=64", NULL);
  tool_expect_error(&r, "crec: error: --scalar x.bytes=64: scalar 'x.bytes' is the size of argument 'x'; set it with --size x=ELEMENTS\n");
}

Test(tool_cli, bad_command_lines) {
  REQUIRE_TOOL_EXE();
  static const char *const none[] = {NULL};
  tool_result r = tool_exec_argv(NULL, none);
  tool_expect_error(&r, "crec: error: no command given (try 'crec --help')\n");
  r = tool_exec("frob", NULL);
  tool_expect_error(&r, "crec: error: unknown command 'frob' (commands: run, bench, profile, dump, compile, cache; try "
                        "'crec --help')\n");
  r = tool_exec("run", NULL);
  tool_expect_error(&r, "crec: error: 'crec run' needs a program: crec run PROG.mlir (try 'crec run --help')\n");
  r = tool_exec("run", example("chain"), "--frob", NULL);
  tool_expect_error(&r, "crec: error: unknown option '--frob' for 'crec run' (try 'crec run --help')\n");
  r = tool_exec("dump", example("chain"), "--check", NULL);
  tool_expect_error(&r, "crec: error: option '--check' is not an option of 'crec dump' (try 'crec dump --help')\n");
  r = tool_exec("bench", example("chain"), "--iters", "0", NULL);
  tool_expect_error(&r, "crec: error: --iters 0: must be between 1 and 1000000000\n");
  r = tool_exec("bench", example("chain"), "--iters", NULL);
  tool_expect_error(&r, "crec: error: option '--iters' needs a value: --iters N\n");
  r = tool_exec("dump", example("chain"), "--format", "pdf", NULL);
  tool_expect_error(&r, "crec: error: unknown format 'pdf' for --format (formats: text, json, dot, svg, html)\n");
  r = tool_exec("dump", example("chain"), "-o", "/nonexistent/dir/x.txt", NULL);
  tool_expect_error(&r, "crec: error: /nonexistent/dir/x.txt: cannot create the file: No such file or directory\n");
  r = tool_exec("run", example("chain"), example("jacobi"), NULL);
  tool_expect_error(&r, "crec: error: 'crec run' takes one program, but ");
  r = tool_exec("profile", NULL);
  tool_expect_error(&r, "crec: error: 'crec profile' needs a program: crec profile PROG.mlir (try 'crec profile "
                        "--help')\n");
  r = tool_exec("profile", example("jacobi"), "--format", "dot", NULL);
  tool_expect_error(&r, "crec: error: --format dot: 'crec profile' writes text, json or html (the graph alone: "
                        "crec dump --format dot)\n");
  r = tool_exec("profile", example("jacobi"), "--iters", "0", NULL);
  tool_expect_error(&r, "crec: error: --iters 0: must be between 1 and 1000000000\n");
  r = tool_exec("profile", example("jacobi"), "--frob", NULL);
  tool_expect_error(&r, "crec: error: unknown option '--frob' for 'crec profile' (try 'crec profile --help')\n");
  r = tool_exec("profile", "/nonexistent/prog.mlir", NULL);
  tool_expect_error(&r, "crec: error: /nonexistent/prog.mlir: cannot open the program: No such file or directory\n");
}

/* ---- help ------------------------------------------------------------------- */

Test(tool_cli, help_for_the_tool_and_each_command) {
  REQUIRE_TOOL_EXE();
  static const char *const forms[][3] = {{"--help", NULL, NULL},    {"-h", NULL, NULL},      {"help", NULL, NULL},
                                         {"run", "--help", NULL},    {"help", "run", NULL},   {"bench", "-h", NULL},
                                         {"help", "bench", NULL},    {"dump", "--help", NULL}, {"help", "dump", NULL},
                                         {"profile", "--help", NULL}, {"help", "profile", NULL}};
  static const crec_tool_command which[] = {CREC_TOOL_CMD_NONE,    CREC_TOOL_CMD_NONE,    CREC_TOOL_CMD_NONE,
                                            CREC_TOOL_CMD_RUN,     CREC_TOOL_CMD_RUN,     CREC_TOOL_CMD_BENCH,
                                            CREC_TOOL_CMD_BENCH,   CREC_TOOL_CMD_DUMP,    CREC_TOOL_CMD_DUMP,
                                            CREC_TOOL_CMD_PROFILE, CREC_TOOL_CMD_PROFILE};
  for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
    tool_result r = tool_exec_argv(NULL, forms[i]);
    expect_ok(&r, forms[i][0]);
    cr_assert_str_eq(r.out, crec_tool_help(which[i]), "crec %s %s", forms[i][0], forms[i][1] ? forms[i][1] : "");
    tool_expect_has(r.out, "Examples:\n  crec ");
    tool_result_free(&r);
  }
  tool_result r = tool_exec("--version", NULL);
  expect_ok(&r, "--version");
  char want[64];
  snprintf(want, sizeof want, "crec %s\n", crec_version());
  cr_assert_str_eq(r.out, want);
  tool_result_free(&r);
  r = tool_exec("help", "frob", NULL);
  tool_expect_error(&r, "crec: error: unknown command 'frob' (commands: run, bench, profile, dump, compile, cache)\n");
  /* the tool's help names profile and its options; profile's lists them all */
  r = tool_exec("--help", NULL);
  tool_expect_has(r.out, "\n  crec profile PROG.mlir [--entry NAME] [--input NAME=SPEC]... [--scalar NAME=VALUE]...\n");
  tool_expect_has(r.out, "[--iters N] [--loop-limit N] [--format text|json|html]\n             [-o FILE] [--require-device]\n");
  tool_expect_has(r.out, "\n  profile measure where a replay's time goes");
  tool_result_free(&r);
  r = tool_exec("profile", "--help", NULL);
  expect_ok(&r, "profile --help");
  static const char *const options[] = {"\n  --iters N ",          "(default 20)",
                                        "\n  --format FORMAT       text, json or html\n",
                                        "\n  -o FILE ",            "\n  --input NAME=SPEC ",
                                        "\n  --scalar NAME=VALUE ", "\n  --size NAME=ELEMENTS ",
                                        "\n  --entry NAME ",       "\n  --loop-limit N ",
                                        NULL};
  for (size_t i = 0; options[i]; i++) tool_expect_has(r.out, options[i]);
  tool_result_free(&r);
}

/* Every example command line in the help texts runs as shown (without a device,
 * run and bench stop after the summary), from a directory where examples/ are
 * the staged copies and tests/ the project's (the stored profiles). */
Test(tool_cli, every_example_in_the_help_runs) {
  REQUIRE_TOOL_EXE();
  REQUIRE_NO_DEVICE();
  const char *dir = tool_temp_dir();
  char link[700];
  snprintf(link, sizeof link, "%s/examples", dir);
  cr_assert_eq(symlink(tool_examples_dir(), link), 0);
  snprintf(link, sizeof link, "%s/tests", dir);
  cr_assert_eq(symlink(CREC_SOURCE_DIR "/tests", link), 0);
  int ran = 0;
  static const crec_tool_command commands[] = {CREC_TOOL_CMD_NONE, CREC_TOOL_CMD_RUN, CREC_TOOL_CMD_BENCH,
                                               CREC_TOOL_CMD_DUMP, CREC_TOOL_CMD_PROFILE};
  for (int c = 0; c < 5; c++) {
    const char *h = strstr(crec_tool_help(commands[c]), "Examples:\n");
    cr_assert_not_null(h);
    h += strlen("Examples:\n");
    while (!strncmp(h, "  crec ", 7)) {
      const char *end = strchr(h, '\n');
      char line[512];
      snprintf(line, sizeof line, "%.*s", (int)(end - h - 7), h + 7);
      h = end + 1;
      /* split at spaces; drop a shell redirection */
      char *argv[32];
      int n = 0;
      argv[n++] = (char *)tool_exe();
      for (char *save = NULL, *w = strtok_r(line, " ", &save); w && n < 31; w = strtok_r(NULL, " ", &save)) {
        if (!strcmp(w, ">")) break;
        argv[n++] = w;
      }
      argv[n] = NULL;
      char *out = NULL, *err = NULL;
      int status = tool_spawn_in(dir, argv, tool_timeout(), &out, &err);
      cr_assert_eq(status, 0, "'crec %s' (help %d) exited with %d: %s", argv[1], c, status, err);
      free(out);
      free(err);
      ran++;
    }
  }
  cr_assert_geq(ran, 16, "only %d examples in the help texts", ran);
}

/* ---- the 1,000-node chain the GPU suite benchmarks --------------------------- */

Test(tool_cli, a_generated_1000_node_chain_lowers_to_a_serial_chain) {
  REQUIRE_TOOL_EXE();
  tool_result r = tool_exec("dump", tool_long_chain(1000), "--format", "json", NULL);
  expect_ok(&r, "dump chain1000");
  json v;
  cr_assert_eq(json_parse(r.out, &v), 0);
  const json *commands = json_get(&v, "commands");
  cr_assert_eq(commands->count, 1000);
  for (size_t i = 1; i < 1000; i++) {
    const json *deps = json_get(&commands->items[i], "deps");
    cr_assert_eq(deps->count, 1);
    cr_assert_eq(deps->items[0].number, (double)(i - 1));
  }
  json_free(&v);
  tool_result_free(&r);
}

/* ---- tools/demo.sh, the README's main job ------------------------------------ */

Test(tool_cli, demo_without_a_device_prints_the_summary_and_writes_the_page) {
  REQUIRE_TOOL_EXE();
  REQUIRE_NO_DEVICE();
  if (access("/usr/bin/dot", X_OK) != 0) cr_skip_test("Graphviz is not installed: the page needs it");
  /* BUILD_DIR: the build tree this crec belongs to */
  char build[4200], script[700];
  snprintf(build, sizeof build, "%s", tool_exe());
  char *tools = strrchr(build, '/');
  cr_assert_not_null(tools);
  *tools = '\0';
  tools = strrchr(build, '/');
  cr_assert_not_null(tools);
  *tools = '\0';
  setenv("BUILD_DIR", build, 1);
  snprintf(script, sizeof script, "%s/tools/demo.sh", tool_source_dir());
  char *argv[] = {"bash", script, NULL};
  char *out = NULL, *err = NULL;
  int status = tool_spawn(argv, 120, &out, &err);
  cr_assert_eq(status, 0, "demo.sh: %d\n%s\n%s", status, out, err);
  tool_expect_has(out, "examples/chain.mlir (entry main)\nprogram: 3 commands");
  tool_expect_has(out, "crec run: no CUDA device is available: ");
  cr_assert_null(strstr(out, "crec bench"), "benchmarked without a device:\n%s", out);
  char html[4400], want[4600];
  snprintf(html, sizeof html, "%s/chain.html", build);
  snprintf(want, sizeof want, "the graph of examples/chain.mlir is in %s (file://", html);
  tool_expect_has(out, want);
  char *page = tool_slurp(html, NULL);
  cr_assert_not_null(page, "%s was not written", html);
  tool_expect_has(page, "<svg");
  free(page);
  free(out);
  free(err);
}

/* Every flag of every subcommand, in each spelling the parser takes. */
Test(tool_cli, every_flag_is_taken) {
  REQUIRE_TOOL_EXE();
  REQUIRE_NO_DEVICE();
  const char *y = tool_temp_path("y.bin"), *dot = tool_temp_path("g.dot");
  char output[800], cuda_dot[800];
  snprintf(output, sizeof output, "--output=y=%s", y);
  snprintf(cuda_dot, sizeof cuda_dot, "--cuda-dot=%s", dot);
  tool_result r = tool_exec("run", "--entry", "main", "--input=x=iota", "--iters=5", "--check", output, cuda_dot, "--",
                            example("chain"), NULL);
  expect_ok(&r, "run with every flag");
  char want[900];
  snprintf(want, sizeof want, "  y                f32[4096] zeros, output -> %s\n", y);
  tool_expect_has(r.out, want);
  /* nothing ran, so nothing was written */
  cr_assert_neq(access(y, F_OK), 0, "%s written without a device", y);
  cr_assert_neq(access(dot, F_OK), 0, "%s written without a device", dot);
  tool_result_free(&r);
  r = tool_exec("bench", example("switch"), "--entry=main", "--input", "mode=fill:1", "--iters", "3", "--json", NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  tool_expect_has(r.out, "\"nodes\": null");
  tool_result_free(&r);
  r = tool_exec("bench", example("dynamic"), "--size=x=64", NULL);
  expect_ok(&r, "bench --size");
  tool_expect_has(r.out, "  x                f32[64] zeros, output\n");
  tool_result_free(&r);
  /* dump: -oFILE, --format=FORMAT, and --cuda-dot (which warns without a device) */
  const char *json_path = tool_temp_path("d.json");
  char o[800];
  snprintf(o, sizeof o, "-o%s", json_path);
  r = tool_exec("dump", example("switch"), "--format=json", o, "--entry", "main", "--cuda-dot", dot, "--input",
                "mode=fill:1", NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  snprintf(want, sizeof want, "crec: warning: --cuda-dot %s: not written: no CUDA device is available (", dot);
  cr_assert_eq(strncmp(r.err, want, strlen(want)), 0, "%s", r.err);
  cr_assert_eq(tool_count_lines(r.err), 1, "%s", r.err);
  char *text = tool_slurp(json_path, NULL);
  cr_assert_not_null(text);
  cr_assert_eq(text[0], '{');
  free(text);
  cr_assert_neq(access(dot, F_OK), 0);
  tool_result_free(&r);
}

/* The pages of the real examples open in headless Chromium without console
 * errors, and a click on a node shows what the user needs to know about it. */
Test(tool_cli, example_pages_show_their_nodes_when_clicked, .timeout = 300) {
  REQUIRE_TOOL_EXE();
  if (access("/usr/bin/dot", X_OK) != 0) cr_skip_test("Graphviz is not installed: the page needs it");
  struct {
    const char *name, *node;
    const char *shown[4];
  } pages[] = {
      {"jacobi", "c4", {"#4 launch 'x_next = sweep(x)'", "region\tbody of #2 while 'while more'",
                        "sweeps[0..4), 4 bytes\tread-write", "needed by\t#5 memcpy 'x = x_next'"}},
      {"jacobi", "c2", {"#2 while 'while more'", "predicate\tmore[0..1), 1 byte", "regions\tcond, body",
                        "depends on\t#0 memset 'x = 0', #1 memset 'sweeps = 0'"}},
      {"branches", "c8", {"depends on\t#1 launch 'a += 1', #3 launch 'b += 1', #5 launch 'c += 2', #7 launch 'd += -3'",
                          "kernel\tsum4 (module kernels, ptx)", "y[0..4096), 4096 bytes\twrite", NULL}},
      {"dynamic", "c0", {"grid\tceildivui(dim(x, 0), 256) \u00d7 1 \u00d7 1", "x[0..end)\tread-write",
                         "scalar dim(x, 0) : i64\tby value", NULL}},
      {"image", "c0", {"kernel\trmsnorm (module cuda, ptx)", "grid\t64 \u00d7 1 \u00d7 1", "i32 1024\tby value", NULL}},
  };
  for (size_t i = 0; i < sizeof pages / sizeof pages[0]; i++) {
    char path[700];
    snprintf(path, sizeof path, "%s/%s.html", tool_temp_dir(), pages[i].name);
    tool_result r = tool_exec("dump", example(pages[i].name), "--format", "html", "-o", path, NULL);
    expect_ok(&r, pages[i].name);
    tool_result_free(&r);
    const char *st;
    char *dom = tool_open_selftest(path, pages[i].node, &st);
    for (size_t k = 0; k < 4 && pages[i].shown[k]; k++)
      cr_assert(strstr(st, pages[i].shown[k]), "%s %s: the details do not show '%s': %.1500s", pages[i].name,
                pages[i].node, pages[i].shown[k], st);
    free(dom);
  }
}

/* A stored profile (tests/profiles/, hand-written in the schema of
 * docs/profile.schema.json) drawn on the page of its example: a bar of the
 * timeline selects its node, the critical path is marked, every timed node is
 * shaded, and the details say what the profile says of the command. */
Test(tool_cli, a_profile_on_the_page_marks_the_critical_path_and_its_bars_select_nodes, .timeout = 300) {
  REQUIRE_TOOL_EXE();
  if (access("/usr/bin/dot", X_OK) != 0) cr_skip_test("Graphviz is not installed: the page needs it");
  struct {
    const char *example, *profile, *click;
    const char *shown[8];
    const char *critical[4];  /* on the path */
    const char *off[2];       /* off it */
  } pages[] = {
      {"branches", "branches", "bar:c3",
       {"selected c3 through its bar", "device time\t2.00 \u00b5s per replay (p50; min 1.80 \u00b5s, max 2.80 \u00b5s)",
        "starts\t3.10 \u00b5s into the replay", "beside it\tup to 2 nodes of other commands", "critical path\ton it",
        "\nlanes: 4\nbars: 9\nselected bars: 1\nshaded: 9", NULL},
       {"c2", "c3", "c8", NULL},
       {"c0", "c7"}},
      {"jacobi", "jacobi", "c2",
       {"selected c2\n", "iterations\t14 per replay (min 14, max 14), 3.90 \u00b5s each", "graph nodes\t43",
        "critical path\ton it", "\nlanes: 2\nbars: 45\nselected bars: 0\nshaded: 6", NULL},
       {"c0", "c2", NULL},
       {"c1", "c4"}},
  };
  for (size_t i = 0; i < sizeof pages / sizeof pages[0]; i++) {
    char path[700], profile[700];
    snprintf(path, sizeof path, "%s/%s-profile.html", tool_temp_dir(), pages[i].example);
    snprintf(profile, sizeof profile, "%s/tests/profiles/%s.json", CREC_SOURCE_DIR, pages[i].profile);
    tool_result r = tool_exec("dump", example(pages[i].example), "--format", "html", "--profile", profile, "-o", path, NULL);
    expect_ok(&r, pages[i].example);
    tool_result_free(&r);
    const char *st;
    char *dom = tool_open_selftest(path, pages[i].click, &st);
    for (size_t k = 0; pages[i].shown[k]; k++)
      cr_assert(strstr(st, pages[i].shown[k]), "%s: the page does not show '%s': %.2500s", pages[i].example,
                pages[i].shown[k], st);
    const char *crit = strstr(st, "\ncritical: ");
    cr_assert_not_null(crit, "%s: no critical path in %.2500s", pages[i].example, st);
    char line[200];
    snprintf(line, sizeof line, "%.*s ", (int)strcspn(crit + 11, "\n"), crit + 11);
    for (size_t k = 0; pages[i].critical[k]; k++) {
      char want[16];
      snprintf(want, sizeof want, "%s ", pages[i].critical[k]);
      cr_assert(strstr(line, want), "%s: %s is not marked critical (%s)", pages[i].example, pages[i].critical[k], line);
    }
    for (size_t k = 0; k < 2; k++) {
      char off[16];
      snprintf(off, sizeof off, "%s ", pages[i].off[k]);
      cr_assert_null(strstr(line, off), "%s: %s is marked critical (%s)", pages[i].example, pages[i].off[k], line);
    }
    cr_assert_null(strstr(st, "warnings:"), "%s: %.2500s", pages[i].example, st);
    free(dom);
  }
  /* another program's profile is an error; with --force, the page says so, and times
   * only the commands it has */
  char path[700], profile[700];
  snprintf(path, sizeof path, "%s/mismatch.html", tool_temp_dir());
  snprintf(profile, sizeof profile, "%s/tests/profiles/branches.json", CREC_SOURCE_DIR);
  tool_result r = tool_exec("dump", example("jacobi"), "--format", "html", "--profile", profile, "-o", path, NULL);
  tool_expect_errorf(&r, "crec: error: %s: crec dump --profile: not a profile of %s: command #2 is a while loop "
                         "('while more'), but the profile counts no iterations of it (another program's? give --force "
                         "to draw it anyway)\n",
                     profile, example("jacobi"));
  cr_assert_neq(access(path, F_OK), 0, "a refused profile still wrote the page");
  r = tool_exec("dump", example("jacobi"), "--format", "html", "--profile", profile, "--force", "-o", path, NULL);
  expect_ok(&r, "jacobi");
  tool_result_free(&r);
  const char *st;
  char *dom = tool_open_selftest(path, "c1", &st);
  cr_assert(strstr(st, "warnings: the profile times command #6, which this program lacks: is it another program's?"),
            "%.2500s", st);
  free(dom);
}

/* --profile: only for the HTML page, and only a profile. */
Test(tool_cli, dump_profile_refuses_other_formats_and_other_files) {
  REQUIRE_TOOL_EXE();
  char profile[700];
  snprintf(profile, sizeof profile, "%s/tests/profiles/branches.json", CREC_SOURCE_DIR);
  tool_result r = tool_exec("dump", example("branches"), "--profile", profile, NULL);
  tool_expect_errorf(&r, "crec: error: %s: --profile draws on the HTML page: give --format html\n", profile);
  char readme[700];
  snprintf(readme, sizeof readme, "%s/README.md", CREC_SOURCE_DIR);
  r = tool_exec("dump", example("branches"), "--format", "html", "--profile", readme, NULL);
  tool_expect_errorf(&r, "crec: error: %s: not a crec profile (docs/profile.md): it is not a JSON object\n", readme);
  static const char other_text[] = "{\"format\": \"something else\"}";
  const char *other = tool_temp_file("other.json", other_text, sizeof other_text - 1);
  r = tool_exec("dump", example("branches"), "--format", "html", "--profile", other, NULL);
  tool_expect_errorf(&r, "crec: error: %s: not a crec profile (docs/profile.md): it has no \"format\": \"crec-profile\"\n",
                     other);
}

/* The front end's warnings reach the user, one line each, without failing the command. */
Test(tool_cli, front_end_warnings_are_one_line_each) {
  REQUIRE_TOOL_EXE();
  const char *text =
      "module attributes {gpu.container_module} {\n"
      "  gpu.module @k {\n"
      "    gpu.func @step(%flag: memref<i32>) kernel {\n"
      "      %c0 = arith.constant 0 : i32\n"
      "      memref.store %c0, %flag[] : memref<i32>\n"
      "      gpu.return\n"
      "    }\n"
      "  }\n"
      "  func.func @main(%flag: memref<i32> {crec.name = \"flag\"}) {\n"
      "    %c1 = arith.constant 1 : index\n"
      "    %z = arith.constant 0 : i32\n"
      "    scf.while : () -> () {\n"
      "      gpu.launch_func @k::@step blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%flag : memref<i32>)\n"
      "      %f = memref.load %flag[] : memref<i32>\n"
      "      %go = arith.cmpi ne, %f, %z : i32\n"
      "      scf.condition(%go)\n"
      "    } do {\n"
      "      gpu.launch_func @k::@step blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%flag : memref<i32>)\n"
      "      scf.yield\n"
      "    }\n"
      "    return\n"
      "  }\n"
      "}\n";
  const char *path = tool_temp_file("wide.mlir", text, strlen(text));
  char want[900];
  snprintf(want, sizeof want,
           "crec: warning: %s:16:7: crec tests the first byte of this loaded i32: the condition is exact when the "
           "value is 0 or 1\n", path);
  tool_result r = tool_exec("dump", path, NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert_str_eq(r.err, want);
  tool_expect_has(r.out, "while 'while' predicate flag[0..1)");
  tool_result_free(&r);
  /* an error after a warning is still the one line */
  r = tool_exec("run", path, "--input", "flag=fill:x", NULL);
  tool_expect_error(&r, "crec: error: --input flag=fill:x: fill value 'x' is not a number");
}

/* A read of undefined bytes (a matmul into a fresh alloc) is one warning line, once, after
 * what the command prints, and the command still succeeds. */
Test(tool_cli, a_read_of_undefined_bytes_is_one_warning) {
  REQUIRE_TOOL_EXE();
  const char *text =
      "module {\n"
      "  func.func @main(%a: memref<4x4xf32> {crec.name = \"a\"}, %b: memref<4x4xf32> {crec.name = \"b\"},\n"
      "                  %y: memref<4x4xf32> {crec.name = \"y\"}) {\n"
      "    %t = memref.alloc() : memref<4x4xf32>\n"
      "    linalg.matmul ins(%a, %b : memref<4x4xf32>, memref<4x4xf32>) outs(%t : memref<4x4xf32>)\n"
      "    memref.copy %t, %y : memref<4x4xf32> to memref<4x4xf32>\n"
      "    return\n"
      "  }\n"
      "}\n";
  const char *path = tool_temp_file("accumulate.mlir", text, strlen(text));
  char want[900];
  snprintf(want, sizeof want,
           "crec: warning: %s:5:5: linalg.matmul accumulates into 'tmp0', which nothing wrote before: its bytes are "
           "undefined (zero it first with gpu.memset)\n",
           path);
  static const char *const formats[] = {"text", "json", "dot"};
  for (size_t i = 0; i < 3; i++) {
    tool_result r = tool_exec("dump", path, "--format", formats[i], NULL);
    cr_assert_eq(r.status, 0, "%s: %s", formats[i], r.err);
    cr_assert_str_eq(r.err, want, "--format %s", formats[i]);
    if (i == 0) tool_expect_has(r.out, "#0 gemm 'gemm' f32 M=4 N=4 K=4: tmp0[0..64) = 1 * A a[0..64) * B b[0..64) + 1 * C (D)");
    tool_result_free(&r);
  }
  if (!crec_device_available()) {
    tool_result r = tool_exec("run", path, "--check", NULL);
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_str_eq(r.err, want);
    tool_expect_has(r.out, "no CUDA device is available");
    tool_result_free(&r);
  }
}

/* Library calls from MLIR: their outputs are found, and the page shows a GEMM's
 * shape and operands and a collective's communicator. */
Test(tool_cli, library_commands_show_their_details, .timeout = 300) {
  REQUIRE_TOOL_EXE();
  const char *gemm =
      "module {\n"
      "  func.func @main(%x: memref<20x37xf32> {crec.name = \"x\"}, %w: memref<45x37xf32> {crec.name = \"w\"},\n"
      "                  %b: memref<45xf32> {crec.name = \"b\"}, %y: memref<20x45xf32> {crec.name = \"y\"},\n"
      "                  %s: memref<20x45xf32> {crec.name = \"s\"}) {\n"
      "    \"crec.gemm\"(%x, %w, %y, %b) {crec.name = \"layer\", transpose_b, alpha = 0.5 : f64, epilogue = \"bias_relu\"}\n"
      "        : (memref<20x37xf32>, memref<45x37xf32>, memref<20x45xf32>, memref<45xf32>) -> ()\n"
      "    \"crec.all_reduce\"(%y, %s) {reduction = \"sum\", num_ranks = 1 : i64}\n"
      "        : (memref<20x45xf32>, memref<20x45xf32>) -> ()\n"
      "    return\n"
      "  }\n"
      "}\n";
  const char *path = tool_temp_file("library.mlir", gemm, strlen(gemm));
  if (!crec_device_available()) {
    tool_result r = tool_exec("run", path, NULL);
    expect_ok(&r, "run library.mlir");
    tool_expect_has(r.out, "  y                f32[900] zeros, output\n");
    tool_expect_has(r.out, "  s                f32[900] zeros, output\n");
    tool_expect_has(r.out, "  x                f32[740] zeros\n");
    tool_result_free(&r);
  }
  if (access("/usr/bin/dot", X_OK) != 0) cr_skip_test("Graphviz is not installed: the page needs it");
  char page[700];
  snprintf(page, sizeof page, "%s/library.html", tool_temp_dir());
  tool_result r = tool_exec("dump", path, "--format", "html", "-o", page, NULL);
  expect_ok(&r, "dump library.mlir");
  tool_result_free(&r);
  static const char *const nodes[] = {"c0", "c1"};
  static const char *const shown[][5] = {
      {"#0 gemm 'layer'", "product\tf32 M=20 N=45 K=37, B transposed", "scales\talpha 0.5, beta 0\n",
       "epilogue\tbias_relu", "w[0..6660), 6660 bytes\tread"},
      {"#1 collective 'all_reduce'", "collective\tall_reduce (sum) of f32", "communicator\tworld (1 rank)",
       "s[0..3600), 3600 bytes\twrite", "depends on\t#0 gemm 'layer'"}};
  for (size_t i = 0; i < 2; i++) {
    const char *st;
    char *dom = tool_open_selftest(page, nodes[i], &st);
    for (size_t k = 0; k < 5; k++)
      cr_assert(strstr(st, shown[i][k]), "%s: the details do not show '%s': %.1500s", nodes[i], shown[i][k], st);
    free(dom);
  }
}
