/* docs/mlir.md: every `mlir` block lowers (reading no undefined bytes), and a block headed
 * "// tests/mlir/NAME" is exactly that file, so the documentation cannot drift
 * from the inputs the other suites check. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

TestSuite(lower_docs, .init = crec_test_require_mlir);

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f, "cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  cr_assert_not_null(s);
  cr_assert_eq(fread(s, 1, (size_t)n, f), (size_t)n);
  s[n] = '\0';
  fclose(f);
  if (len) *len = (size_t)n;
  return s;
}

/* Counts the warnings about reads of undefined bytes: no example should have one. */
static int undefined_reads;
static char undefined_first[1024];
static void on_diagnostic(void *user, const char *severity, const char *location, const char *message) {
  (void)user;
  if (strcmp(severity, "warning") != 0 || !strstr(message, "which nothing wrote before")) return;
  if (!undefined_reads++) snprintf(undefined_first, sizeof undefined_first, "%s: %s", location, message);
}

Test(lower_docs, every_mlir_example_lowers) {
  char *doc = slurp(CREC_SOURCE_DIR "/docs/mlir.md", NULL);
  size_t blocks = 0, copies = 0;
  int line = 1;
  for (char *p = doc; *p;) {
    char *eol = strchr(p, '\n');
    if (!eol) break;
    bool open = strncmp(p, "```mlir\n", 8) == 0;
    p = eol + 1;
    line++;
    if (!open) continue;
    int start = line;
    char *end = strstr(p, "\n```\n");
    cr_assert_not_null(end, "docs/mlir.md:%d: unterminated mlir block", start);
    size_t len = (size_t)(end - p) + 1;
    char name[64];
    snprintf(name, sizeof name, "docs/mlir.md:%d", start);
    crec_lower_options o = CREC_LOWER_OPTIONS_INIT;
    o.filename = name;
    o.base_dir = CREC_TEST_MLIR_DIR;
    o.chip = "sm_90";
    o.diagnostic = on_diagnostic;
    undefined_reads = 0;
    crec_program *prog = NULL;
    crec_status s = crec_lower_mlir_string(p, len, &o, &prog);
    cr_assert_eq(s, CREC_OK, "the example at %s does not lower: %s", name, crec_last_error());
    cr_assert_eq(undefined_reads, 0, "the example at %s reads undefined bytes: %s", name, undefined_first);
    cr_assert_gt(crec_program_command_count(prog), 0, "the example at %s has no commands", name);
    crec_program_destroy(prog);
    if (strncmp(p, "// tests/mlir/", 14) == 0) {
      char path[512], file[64];
      sscanf(p + 14, "%63s", file);
      snprintf(path, sizeof path, "%s/tests/mlir/%s", CREC_SOURCE_DIR, file);
      size_t flen;
      char *text = slurp(path, &flen);
      /* the file is the block minus its first line */
      char *body = strchr(p, '\n') + 1;
      cr_assert_eq(flen, len - (size_t)(body - p), "%s differs from tests/mlir/%s", name, file);
      cr_assert(memcmp(text, body, flen) == 0, "%s differs from tests/mlir/%s", name, file);
      free(text);
      copies++;
    }
    for (char *q = p; q <= end; q++) line += *q == '\n';
    p = end + 5;
    line++;
    blocks++;
  }
  cr_assert_geq(blocks, 10, "only %zu mlir blocks found", blocks);
  cr_assert_geq(copies, 6);
  free(doc);
}
