/* The shape of the code that a user or a newcomer relies on: libcrec.so
 * exports only what the public headers declare, the code that must not know
 * CUDA (the program in record/program/: IR, builder, validation, dependencies,
 * arena, dumps, warnings; the MLIR front end in lower/) includes no CUDA
 * header, and the runtime (record/runtime/) does not know the exec. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h" /* Criterion, or tests/stress/inproc.h */

/* The whole of a file, NUL-terminated; NULL when it cannot be read. */
static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
    free(s);
    s = NULL;
  }
  if (s) s[n] = 0;
  fclose(f);
  return s;
}

/* Appends every public header's text to one string. */
static char *public_headers(void) {
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/include/crec", CREC_SOURCE_DIR);
  DIR *d = opendir(dir);
  cr_assert_not_null(d, "cannot open %s", dir);
  size_t len = 0;
  char *all = calloc(1, 1);
  struct dirent *de;
  while ((de = readdir(d))) {
    if (!strstr(de->d_name, ".h")) continue;
    char path[1300];
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    char *s = slurp(path);
    cr_assert_not_null(s, "cannot read %s", path);
    size_t n = strlen(s);
    all = realloc(all, len + n + 2);
    memcpy(all + len, s, n);
    len += n;
    all[len++] = '\n';
    all[len] = 0;
    free(s);
  }
  closedir(d);
  return all;
}

/* True when `text` declares `name` as a function: the name, then '('. */
static int declares(const char *text, const char *name) {
  size_t n = strlen(name);
  for (const char *at = strstr(text, name); at; at = strstr(at + 1, name)) {
    char before = at == text ? ' ' : at[-1];
    if (before == '_' || (before >= 'a' && before <= 'z') || (before >= '0' && before <= '9')) continue;
    const char *q = at + n;
    while (*q == ' ') q++;
    if (*q == '(') return 1;
  }
  return 0;
}

Test(layout, the_shared_library_exports_only_the_public_api) {
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "nm -D --defined-only '%s' 2>&1", CREC_LIBRARY_PATH);
  FILE *p = popen(cmd, "r");
  cr_assert_not_null(p);
  char *headers = public_headers();
  char line[512];
  int symbols = 0;
  while (fgets(line, sizeof line, p)) {
    char addr[64], type[8], name[256];
    if (sscanf(line, "%63s %7s %255s", addr, type, name) != 3) continue;
    symbols++;
    cr_expect(strncmp(name, "crec_", 5) == 0 && strncmp(name, "crec__", 6) != 0,
              "libcrec.so exports '%s', which is not crec's public API", name);
    cr_expect(declares(headers, name), "libcrec.so exports %s, which no header in include/crec declares", name);
  }
  int rc = pclose(p);
  cr_assert_eq(rc, 0, "%s failed", cmd);
  cr_assert_gt(symbols, 100, "only %d exported symbols: is %s the library?", symbols, CREC_LIBRARY_PATH);
  free(headers);
}

/* A user's static link sees no global of crec's that lacks its prefix: libcrec.a,
 * and the front end's libcrec-mlir.a. */
static void expect_prefixed_globals(const char *archive) {
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "nm --defined-only '%s' 2>&1", archive);
  FILE *p = popen(cmd, "r");
  cr_assert_not_null(p);
  char line[512];
  int globals = 0;
  while (fgets(line, sizeof line, p)) {
    char addr[64], type[8], name[256];
    if (sscanf(line, "%63s %7s %255s", addr, type, name) != 3 || strlen(type) != 1) continue;
    if (!strchr("TDBRC", type[0])) continue; /* lower case: local to its object */
    /* what a sanitizer's instrumentation adds (the ASan build of CI) */
    if (!strncmp(name, "__odr_asan", 10) || !strncmp(name, "__asan", 6) || !strncmp(name, "__sancov", 8)) continue;
    globals++;
    cr_expect(strncmp(name, "crec_", 5) == 0, "%s defines the global '%s' (%s), which could clash in a user's link",
              archive, name, type);
  }
  cr_assert_eq(pclose(p), 0, "%s failed", cmd);
  cr_assert_gt(globals, 100);
}

Test(layout, the_static_library_defines_only_prefixed_globals) {
  expect_prefixed_globals(CREC_STATIC_LIBRARY_PATH);
#ifdef CREC_MLIR_STATIC_LIBRARY_PATH
  expect_prefixed_globals(CREC_MLIR_STATIC_LIBRARY_PATH);
#endif
}

/* Blanks out comments and string and character literals of C text `s`, in place. */
static void strip_comments(char *s) {
  for (char *p = s; *p; p++) {
    if (p[0] == '/' && p[1] == '*') {
      char *end = strstr(p + 2, "*/");
      char *stop = end ? end + 2 : p + strlen(p);
      for (; p < stop; p++)
        if (*p != '\n') *p = ' ';
      p--;
    } else if (p[0] == '/' && p[1] == '/') {
      for (; *p && *p != '\n'; p++) *p = ' ';
      if (!*p) break;
    } else if (*p == '"' || *p == '\'') {
      char q = *p;
      for (p++; *p && *p != q; p++) {
        if (*p == '\\' && p[1]) *p++ = ' ';
        if (*p != '\n') *p = ' ';
      }
      if (!*p) break;
    }
  }
}

/* The .c and .h files of folder `rel` (not below it), each read and handed to
 * `fn`; returns how many there were. */
static int each_source(const char *rel, void (*fn)(const char *file, char *text, void *ctx), void *ctx) {
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/%s", CREC_SOURCE_DIR, rel);
  DIR *d = opendir(dir);
  cr_assert_not_null(d, "cannot open %s", dir);
  struct dirent *de;
  int files = 0;
  while ((de = readdir(d))) {
    size_t n = strlen(de->d_name);
    if (n < 3 || (strcmp(de->d_name + n - 2, ".c") && strcmp(de->d_name + n - 2, ".h"))) continue;
    char path[1300], file[1300];
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    snprintf(file, sizeof file, "%s/%s", rel, de->d_name);
    char *s = slurp(path);
    cr_assert_not_null(s, "cannot read %s", path);
    fn(file, s, ctx);
    free(s);
    files++;
  }
  closedir(d);
  return files;
}

/* The program (record/program/) and the MLIR front end (lower/): no file includes CUDA. */
static const char *const cuda_headers[] = {"<cuda.h>", "<cudaTypedefs.h>", "<cuda_runtime", "\"driver.h\"",
                                           "\"runtime_internal.h\"", "\"exec_internal.h\"",
                                           "\"replay_internal.h\""};

static void expect_no_cuda(const char *rel, char *text, void *ctx) {
  (void)ctx;
  for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
    if (strncmp(line, "#include", 8) != 0) continue;
    for (size_t h = 0; h < sizeof cuda_headers / sizeof *cuda_headers; h++) {
      const char *eol = strchr(line, '\n');
      size_t n = eol ? (size_t)(eol - line) : strlen(line);
      char inc[256];
      snprintf(inc, sizeof inc, "%.*s", (int)(n < 255 ? n : 255), line);
      cr_expect(strstr(inc, cuda_headers[h]) == NULL, "%s: '%s': program and front-end code must not know CUDA",
                rel, inc);
    }
  }
}

/* Checks every .c and .h file of folder `rel`; returns how many there were. */
static int expect_folder_without_cuda(const char *rel) { return each_source(rel, expect_no_cuda, NULL); }

/* The runtime (record/runtime/) is below recording and replay: it includes
 * neither the exec's header nor replay's. */
static void expect_no_exec(const char *file, char *text, void *ctx) {
  (void)ctx;
  cr_expect(!strstr(text, "#include \"exec_internal.h\"") && !strstr(text, "#include \"replay_internal.h\""),
            "%s includes the exec's or replay's header", file);
}

Test(layout, the_runtime_knows_no_exec) { cr_assert_gt(each_source("record/runtime", expect_no_exec, NULL), 5); }

/* The names of the functions replay/ defines, crec_ and crec__ (a definition starts a line). */
typedef struct names {
  char v[256][64];
  size_t n;
} names;

static void defined_names(const char *file, char *text, void *ctx) {
  names *m = ctx;
  if (file[strlen(file) - 1] != 'c') return;
  strip_comments(text);
  for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
    if (*line == ' ' || *line == '#' || strncmp(line, "static", 6) == 0) continue;
    const char *eol = strchr(line, '\n'), *paren = strchr(line, '(');
    if (!paren || (eol && paren > eol)) continue;
    const char *name = paren;
    while (name > line && (name[-1] == '_' || (name[-1] >= 'a' && name[-1] <= 'z') || (name[-1] >= '0' && name[-1] <= '9')))
      name--;
    size_t n = (size_t)(paren - name);
    if (strncmp(name, "crec_", 5) != 0 || n >= sizeof m->v[0] || m->n == sizeof m->v / sizeof *m->v) continue;
    memcpy(m->v[m->n], name, n);
    m->v[m->n++][n] = '\0';
  }
}

static void expect_no_replay(const char *file, char *text, void *ctx) {
  const names *m = ctx;
  cr_expect(!strstr(text, "#include \"replay_internal.h\""),
            "%s includes replay's internal header: record/ is below replay/", file);
  strip_comments(text);
  for (size_t i = 0; i < m->n; i++) {
    size_t n = strlen(m->v[i]);
    for (const char *at = strstr(text, m->v[i]); at; at = strstr(at + n, m->v[i]))
      cr_expect(at[n] != '(' || (at > text && (at[-1] == '_' || (at[-1] >= 'a' && at[-1] <= 'z'))),
                "%s calls %s(), which replay/ defines: record/ calls nothing in replay/", file, m->v[i]);
  }
}

/* Dependencies point one way: replay/ builds on record/ (and may include the
 * exec's header), record/ neither includes replay's header nor calls a
 * function replay/ defines. */
Test(layout, record_depends_on_nothing_in_replay) {
  names m = {.n = 0};
  cr_assert_gt(each_source("replay", defined_names, &m), 4);
  cr_assert_gt(m.n, 10, "found %zu functions defined in replay/", m.n);
  cr_assert_gt(each_source("record", expect_no_replay, &m), 5);
  cr_assert_gt(each_source("record/runtime", expect_no_replay, &m), 5);
  cr_assert_gt(each_source("record/program", expect_no_replay, &m), 10);
}

Test(layout, program_and_front_end_code_includes_no_cuda_header) {
  cr_assert_gt(expect_folder_without_cuda("record/program"), 10);
  cr_assert_gt(expect_folder_without_cuda("lower"), 10);
}

/* The lines of `cmd`'s output joined into one string (NULL-terminated); asserts it ran. */
static char *command_output(const char *cmd) {
  FILE *p = popen(cmd, "r");
  cr_assert_not_null(p);
  size_t len = 0;
  char *all = calloc(1, 1), line[512];
  while (fgets(line, sizeof line, p)) {
    size_t n = strlen(line);
    all = realloc(all, len + n + 1);
    memcpy(all + len, line, n + 1);
    len += n;
  }
  cr_assert_eq(pclose(p), 0, "%s failed", cmd);
  return all;
}

/* libcrec links no MLIR or LLVM: a process that only replays never pays for them. */
Test(layout, the_shared_library_needs_no_mlir) {
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "readelf -d '%s' 2>&1", CREC_LIBRARY_PATH);
  char *d = command_output(cmd);
  cr_assert(strstr(d, "(NEEDED)"), "readelf printed no NEEDED entry: %s", d);
  cr_expect(!strstr(d, "libMLIR") && !strstr(d, "libLLVM") && !strstr(d, "libstdc++"),
            "libcrec.so needs MLIR, LLVM or C++:\n%s", d);
  free(d);
}

#ifdef CREC_MLIR_PLUGIN_PATH
/* The front end, libcrec-mlir.so, exports only the entry libcrec looks up, and
 * links nothing of libcrec's (it reaches crec through the table it is given). */
Test(layout, the_front_end_exports_only_its_entry) {
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "nm -D --defined-only '%s' 2>&1", CREC_MLIR_PLUGIN_PATH);
  FILE *p = popen(cmd, "r");
  cr_assert_not_null(p);
  char line[512];
  int symbols = 0;
  while (fgets(line, sizeof line, p)) {
    char addr[64], type[8], name[256];
    if (sscanf(line, "%63s %7s %255s", addr, type, name) != 3) continue;
    symbols++;
    cr_expect_str_eq(name, "crec__mlir_plugin_open", "libcrec-mlir.so exports '%s'", name);
  }
  cr_assert_eq(pclose(p), 0, "%s failed", cmd);
  cr_assert_eq(symbols, 1);
  snprintf(cmd, sizeof cmd, "readelf -d '%s' 2>&1", CREC_MLIR_PLUGIN_PATH);
  char *d = command_output(cmd);
  cr_expect(strstr(d, "libMLIR"), "libcrec-mlir.so does not need libMLIR:\n%s", d);
  cr_expect(!strstr(d, "libcrec"), "libcrec-mlir.so needs libcrec (a process would hold two):\n%s", d);
  free(d);
}
#endif
