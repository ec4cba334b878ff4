/* README.md stays true: every ```console block that starts with
 * "$ build/tools/crec ..." is run (from a directory where examples/ and
 * build/examples/ are the staged examples) and must print exactly what the
 * block shows. Those blocks hold the output without a GPU; outputs captured on
 * a GPU go in ```text blocks, which are not checked here. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_tool.h"

/* These tests run the README's commands, most of them on MLIR examples: without the front end (CREC_WITH_MLIR=OFF)
 * they skip, saying why. */
TestSuite(tool_readme, .init = crec_test_require_mlir);

/* Replaces what follows `marker` up to `stop` (or the end of the line) with
 * "...", in place. */
static void elide(char *s, const char *marker, char stop) {
  for (char *p = s; (p = strstr(p, marker));) {
    p += strlen(marker);
    char *end = p;
    while (*end && *end != '\n' && *end != stop) end++;
    memmove(p + 3, end, strlen(end) + 1);
    memcpy(p, "...", 3);
  }
}

/* Drops what depends on the machine (why no device is available) or changes
 * with every edit of the page's script (the size of a written page). */
static void normalize(char *s) {
  elide(s, "no CUDA device is available: ", '\n');
  elide(s, " (html, ", ' ');
}

Test(tool_readme, every_console_block_prints_what_it_shows) {
  REQUIRE_TOOL_EXE();
  if (crec_device_available()) cr_skip_test("a CUDA device is present: the README shows the output without one");
  char path[600];
  snprintf(path, sizeof path, "%s/README.md", tool_source_dir());
  char *readme = tool_slurp(path, NULL);
  cr_assert_not_null(readme, "cannot read %s", path);

  /* a directory laid out like the repository after a build */
  const char *dir = tool_temp_dir();
  char link[700], build[700];
  snprintf(link, sizeof link, "%s/examples", dir);
  cr_assert_eq(symlink(tool_examples_dir(), link), 0);
  snprintf(build, sizeof build, "%s/build", dir);
  cr_assert_eq(mkdir(build, 0700), 0);
  snprintf(link, sizeof link, "%s/build/examples", dir);
  cr_assert_eq(symlink(tool_examples_dir(), link), 0);

  static const char open_fence[] = "```console\n$ build/tools/crec ";
  int checked = 0;
  for (const char *p = readme; (p = strstr(p, open_fence));) {
    const char *command = p + strlen("```console\n$ build/tools/crec ");
    const char *eol = strchr(command, '\n');
    const char *close = strstr(eol, "\n```\n");
    cr_assert(eol && close, "an unterminated console block in README.md");
    char line[1024];
    snprintf(line, sizeof line, "%.*s", (int)(eol - command), command);
    char *want = strndup(eol + 1, (size_t)(close + 1 - (eol + 1)));
    p = close + 4;

    const char *args[32];
    size_t n = 0;
    int drop_stderr = 0;
    char words[1024];
    snprintf(words, sizeof words, "%s", line);
    for (char *save = NULL, *w = strtok_r(words, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
      if (!strcmp(w, "2>/dev/null")) {
        drop_stderr = 1;
        continue;
      }
      cr_assert_lt(n, 31);
      args[n++] = w;
    }
    args[n] = NULL;
    tool_result r = tool_exec_argv(dir, args);
    size_t len = strlen(r.out) + strlen(r.err) + 1;
    char *got = malloc(len);
    snprintf(got, len, "%s%s", r.out, drop_stderr ? "" : r.err);
    normalize(got);
    normalize(want);
    cr_assert_str_eq(got, want, "README.md: 'crec %s' prints\n%s\nbut the README shows\n%s", line, got, want);
    free(got);
    free(want);
    tool_result_free(&r);
    checked++;
  }
  cr_assert_geq(checked, 12, "only %d console blocks in README.md", checked);
  free(readme);
}
