/* Helpers of the tool's suites (declared in test_tool.h), linked into both the
 * CPU runner and the GPU runner (tools/CMakeLists.txt). No tests here. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test_tool.h"

extern char **environ;

/* ---- temporary files ----------------------------------------------------- */

static char temp_dir[256];

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st;
  (void)flag;
  (void)ftw;
  return remove(path);
}

static void remove_temp_dir(void) {
  if (temp_dir[0]) nftw(temp_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

const char *tool_temp_dir(void) {
  if (!temp_dir[0]) {
    const char *tmp = getenv("TMPDIR");
    snprintf(temp_dir, sizeof temp_dir, "%s/crec-tool-test-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    cr_assert_not_null(mkdtemp(temp_dir), "mkdtemp: %s", strerror(errno));
    atexit(remove_temp_dir);
  }
  return temp_dir;
}

/* `dir` and `name` joined with a '/' (none added when `dir` ends with one), in
 * one of 64 rotating buffers that tool_temp_file(), tool_temp_path() and
 * tool_example() share, so that a test can hold many of them at once. */
static const char *join_path(const char *dir, const char *name) {
  static char paths[64][4400];
  static int next;
  char *p = paths[next++ % 64];
  size_t n = strlen(dir);
  snprintf(p, sizeof paths[0], "%s%s%s", dir, n && dir[n - 1] == '/' ? "" : "/", name);
  return p;
}

const char *tool_temp_file(const char *name, const void *text, size_t size) {
  const char *path = join_path(tool_temp_dir(), name);
  FILE *f = fopen(path, "wb");
  cr_assert_not_null(f, "cannot create %s: %s", path, strerror(errno));
  if (size) cr_assert_eq(fwrite(text, 1, size, f), size);
  cr_assert_eq(fclose(f), 0);
  return path;
}

char *tool_slurp(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 4096, len = 0;
  char *data = malloc(cap);
  for (;;) {
    if (len + 1024 + 1 > cap) data = realloc(data, cap *= 2);
    size_t n = fread(data + len, 1, 1024, f);
    len += n;
    if (n < 1024) break;
  }
  fclose(f);
  data[len] = '\0';
  if (size) *size = len;
  return data;
}

size_t tool_count_lines(const char *s) {
  size_t n = 0;
  for (; *s; s++) n += *s == '\n';
  return n;
}

/* ---- test programs ------------------------------------------------------- */

#define OK(call) cr_assert_eq((call), CREC_OK, "%s: %s", #call, crec_last_error())

static crec_buffer argument(crec_program *p, const char *name, uint64_t size, crec_element element, int dynamic) {
  crec_argument_options o = CREC_ARGUMENT_OPTIONS_INIT;
  o.element = element;
  o.dynamic_size = dynamic;
  crec_buffer b;
  OK(crec_program_add_argument(p, name, size, &o, &b));
  return b;
}

static crec_command launch(crec_program *p, crec_region r, crec_kernel k, const char *name, const crec_arg *args,
                           size_t n, uint32_t grid) {
  crec_launch l = CREC_LAUNCH_INIT;
  l.kernel = k;
  l.grid[0] = crec_dim_of(grid);
  l.block[0] = crec_dim_of(256);
  l.args = args;
  l.num_args = n;
  crec_command c;
  OK(crec_program_add_launch(p, r, name, &l, &c));
  return c;
}

static crec_program *chain_program(const char *entry) {
  crec_kernel k;
  crec_program *p = crec_test_program(&k);
  crec_region body = crec_program_body(p);
  crec_buffer x = argument(p, "x", 4096, CREC_ELEMENT_F32, 0);
  crec_buffer y = argument(p, "y", 4096, CREC_ELEMENT_F32, 0);
  if (entry && !strcmp(entry, "other")) {
    crec_arg a[] = {crec_arg_buffer(crec_range_whole(y), CREC_ACCESS_WRITE),
                    crec_arg_buffer(crec_range_whole(x), CREC_ACCESS_READ), crec_arg_i32(1024)};
    launch(p, body, k, "other entry", a, 3, 4);
    return p;
  }
  crec_buffer flag = argument(p, "flag", 16, CREC_ELEMENT_I32, 0);
  crec_buffer t;
  OK(crec_program_add_temporary(p, "t", 4096, &t));
  crec_scalar n;
  OK(crec_program_add_scalar(p, "n", CREC_TYPE_I32, &n));
  crec_arg a0[] = {crec_arg_buffer(crec_range_whole(t), CREC_ACCESS_WRITE),
                   crec_arg_buffer(crec_range_whole(x), CREC_ACCESS_READ), crec_arg_i32(1024)};
  launch(p, body, k, "t = f(x)", a0, 3, 4);
  crec_arg a1[] = {crec_arg_buffer(crec_range_whole(y), CREC_ACCESS_WRITE),
                   crec_arg_buffer(crec_range_of(t, 0, 2048), CREC_ACCESS_READ), crec_arg_scalar(n)};
  launch(p, body, k, "y = g(t)", a1, 3, 4);
  crec_command c;
  OK(crec_program_add_memset(p, body, "clear flag", crec_range_whole(flag), 0, 4, &c));
  OK(crec_program_add_memcpy(p, body, "x = y", crec_range_whole(x), crec_range_whole(y), &c));
  return p;
}

static crec_program *control_program(void) {
  crec_kernel k;
  crec_program *p = crec_test_program(&k);
  crec_region body = crec_program_body(p);
  crec_buffer pred = argument(p, "pred", 4, CREC_ELEMENT_I32, 0);
  crec_buffer idx = argument(p, "idx", 4, CREC_ELEMENT_I32, 0);
  crec_buffer data = argument(p, "data", 4096, CREC_ELEMENT_F32, 0);
  crec_command c;
  crec_region cond, loop, then_r, else_r, branches[3];
  OK(crec_program_add_while(p, body, "loop", crec_range_of(pred, 0, 1), &c, &cond, &loop));
  OK(crec_program_set_loop_limit(p, c, 1000)); /* its own limit, which dumps show */
  crec_arg check[] = {crec_arg_buffer(crec_range_whole(pred), CREC_ACCESS_WRITE),
                      crec_arg_buffer(crec_range_whole(data), CREC_ACCESS_READ), crec_arg_i32(1024)};
  launch(p, cond, k, "check", check, 3, 1);
  crec_arg step[] = {crec_arg_buffer(crec_range_whole(data), CREC_ACCESS_READ_WRITE),
                     crec_arg_buffer(crec_range_whole(data), CREC_ACCESS_READ), crec_arg_i32(1024)};
  launch(p, loop, k, "step", step, 3, 4);
  OK(crec_program_add_if(p, body, "maybe", crec_range_of(pred, 0, 1), &c, &then_r, &else_r));
  OK(crec_program_add_memset(p, then_r, "zero data", crec_range_whole(data), 0, 4, &c));
  OK(crec_program_add_switch(p, body, "dispatch", crec_range_whole(idx), 3, NULL, &c, branches));
  for (int i = 0; i < 3; i++) {
    char name[32];
    snprintf(name, sizeof name, "branch %d", i);
    launch(p, branches[i], k, name, step, 3, (uint32_t)i + 1);
  }
  return p;
}

static crec_program *elements_program(void) {
  crec_kernel k;
  crec_program *p = crec_test_program(&k);
  static const crec_element elements[] = {CREC_ELEMENT_BYTES, CREC_ELEMENT_I8,  CREC_ELEMENT_I16,
                                          CREC_ELEMENT_I32,   CREC_ELEMENT_I64, CREC_ELEMENT_F16,
                                          CREC_ELEMENT_BF16,  CREC_ELEMENT_F32, CREC_ELEMENT_F64};
  crec_buffer b[9];
  for (int i = 0; i < 9; i++)
    b[i] = argument(p, crec_element_name(elements[i]), 16 * crec_element_size(elements[i]), elements[i], 0);
  crec_arg a[] = {crec_arg_buffer(crec_range_whole(b[7]), CREC_ACCESS_WRITE),
                  crec_arg_buffer(crec_range_whole(b[3]), CREC_ACCESS_READ), crec_arg_i32(16)};
  launch(p, crec_program_body(p), k, "f32 = h(i32)", a, 3, 1);
  return p;
}

static crec_program *dynamic_program(void) {
  crec_kernel k;
  crec_program *p = crec_test_program(&k);
  crec_buffer v = argument(p, "v", 64, CREC_ELEMENT_F32, 1);
  crec_buffer out = argument(p, "out", 64, CREC_ELEMENT_F32, 0);
  crec_scalar bytes, count, scale;
  OK(crec_program_add_size_scalar(p, "v_bytes", v, &bytes));
  OK(crec_program_add_scalar(p, "count", CREC_TYPE_I64, &count));
  OK(crec_program_add_scalar(p, "scale", CREC_TYPE_F64, &scale));
  crec_arg a[] = {crec_arg_buffer(crec_range_whole(out), CREC_ACCESS_WRITE),
                  crec_arg_buffer(crec_range_whole(v), CREC_ACCESS_READ), crec_arg_scalar(count),
                  crec_arg_scalar(scale)};
  launch(p, crec_program_body(p), k, "out = reduce(v)", a, 4, 1);
  return p;
}

crec_program *tool_test_program(const char *name, const char *entry) {
  if (!strcmp(name, "chain")) return chain_program(entry);
  if (!strcmp(name, "control")) return control_program();
  if (!strcmp(name, "elements")) return elements_program();
  if (!strcmp(name, "dynamic")) return dynamic_program();
  return NULL;
}

/* ---- the tool in process ------------------------------------------------- */

/* The test front end: the file's basename names a program of tool_test_program().
 * "bad.mlir" fails as a parse error would, with a diagnostic at line 3, column 7. */
crec_status tool_test_lower(const char *path, const crec_lower_options *options, crec_program **out) {
  *out = NULL;
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  char name[128];
  snprintf(name, sizeof name, "%s", base);
  char *dot = strrchr(name, '.');
  if (dot) *dot = '\0';
  if (!strcmp(name, "bad")) {
    char loc[600];
    snprintf(loc, sizeof loc, "%s:3:7", path);
    if (options->diagnostic) options->diagnostic(options->diagnostic_user, "error", loc, "custom op 'foo.bar' is unknown");
    return CREC_ERR_MLIR;
  }
  if (options->entry && strcmp(options->entry, "main") && strcmp(options->entry, "other")) {
    if (options->diagnostic)
      options->diagnostic(options->diagnostic_user, "error", "", "no function named 'nope' in the module");
    return CREC_ERR_NOT_FOUND;
  }
  *out = tool_test_program(name, options->entry);
  return *out ? CREC_OK : CREC_ERR_MLIR;
}

const char *tool_test_program_file(const char *name, const char *file) {
  crec_program *p = tool_test_program(name, NULL);
  cr_assert_not_null(p, "no test program '%s'", name);
  void *bytes = NULL;
  size_t size = 0;
  OK(crec_program_serialize(p, &bytes, &size));
  crec_program_destroy(p);
  const char *path = tool_temp_file(file, bytes, size);
  crec_free(bytes);
  return path;
}

tool_result tool_run(const char *arg, ...) {
  char *argv[64];
  int argc = 0;
  argv[argc++] = "crec";
  va_list ap;
  va_start(ap, arg);
  for (const char *a = arg; a; a = va_arg(ap, const char *)) {
    cr_assert_lt(argc, 63);
    argv[argc++] = (char *)a;
  }
  va_end(ap);
  argv[argc] = NULL;
  return tool_run_argv(argc, argv);
}

tool_result tool_run_argv(int argc, char **argv) {
  tool_result r = {0, NULL, NULL};
  size_t olen = 0, elen = 0;
  FILE *out = open_memstream(&r.out, &olen);
  FILE *err = open_memstream(&r.err, &elen);
  cr_assert(out && err);
  const crec_tool_backend backend = {tool_test_lower, NULL, NULL, NULL, NULL, NULL};
  r.status = crec_tool_main(argc, argv, out, err, &backend);
  fclose(out);
  fclose(err);
  return r;
}

void tool_result_free(tool_result *r) {
  free(r->out);
  free(r->err);
  r->out = r->err = NULL;
}

/* ---- JSON ---------------------------------------------------------------- */

typedef struct parser {
  const char *p;
  int depth;
} parser;

static void skip_ws(parser *ps) {
  while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r') ps->p++;
}

static int parse_value(parser *ps, json *out);

static int parse_string(parser *ps, char **out) {
  if (*ps->p != '"') return -1;
  ps->p++;
  size_t cap = 16, len = 0;
  char *s = malloc(cap);
  for (;;) {
    unsigned char c = (unsigned char)*ps->p++;
    if (c == '"') break;
    if (c < 0x20) goto bad; /* also the end of the text */
    if (c == '\\') {
      c = (unsigned char)*ps->p++;
      switch (c) {
        case '"': case '\\': case '/': break;
        case 'n': c = '\n'; break;
        case 't': c = '\t'; break;
        case 'r': c = '\r'; break;
        case 'b': c = '\b'; break;
        case 'f': c = '\f'; break;
        case 'u': {
          unsigned v = 0;
          for (int i = 0; i < 4; i++) {
            char h = *ps->p++;
            v <<= 4;
            if (h >= '0' && h <= '9') v |= (unsigned)(h - '0');
            else if (h >= 'a' && h <= 'f') v |= (unsigned)(h - 'a' + 10);
            else if (h >= 'A' && h <= 'F') v |= (unsigned)(h - 'A' + 10);
            else goto bad;
          }
          c = v < 0x80 ? (unsigned char)v : '?'; /* the tool's JSON escapes only ASCII */
          break;
        }
        default: goto bad;
      }
    }
    if (len + 2 > cap) s = realloc(s, cap *= 2);
    s[len++] = (char)c;
  }
  s[len] = '\0';
  *out = s;
  return 0;
bad:
  free(s);
  return -1;
}

static int parse_number(parser *ps, double *out) {
  const char *start = ps->p;
  if (*ps->p == '-') ps->p++;
  if (*ps->p == '0') ps->p++;
  else if (*ps->p >= '1' && *ps->p <= '9') while (*ps->p >= '0' && *ps->p <= '9') ps->p++;
  else return -1;
  if (*ps->p == '.') {
    ps->p++;
    if (*ps->p < '0' || *ps->p > '9') return -1;
    while (*ps->p >= '0' && *ps->p <= '9') ps->p++;
  }
  if (*ps->p == 'e' || *ps->p == 'E') {
    ps->p++;
    if (*ps->p == '+' || *ps->p == '-') ps->p++;
    if (*ps->p < '0' || *ps->p > '9') return -1;
    while (*ps->p >= '0' && *ps->p <= '9') ps->p++;
  }
  *out = strtod(start, NULL);
  return 0;
}

static int parse_value(parser *ps, json *out) {
  memset(out, 0, sizeof *out);
  if (++ps->depth > 64) return -1;
  skip_ws(ps);
  int rc = 0;
  char c = *ps->p;
  if (c == '{' || c == '[') {
    int object = c == '{';
    out->kind = object ? JSON_OBJECT : JSON_ARRAY;
    ps->p++;
    skip_ws(ps);
    if (*ps->p == (object ? '}' : ']')) {
      ps->p++;
    } else {
      for (;;) {
        out->items = realloc(out->items, (out->count + 1) * sizeof *out->items);
        if (object) {
          out->keys = realloc(out->keys, (out->count + 1) * sizeof *out->keys);
          skip_ws(ps);
          if (parse_string(ps, &out->keys[out->count])) {
            out->items[out->count].kind = JSON_NULL;
            rc = -1;
            break;
          }
          skip_ws(ps);
          if (*ps->p++ != ':') {
            memset(&out->items[out->count], 0, sizeof out->items[0]);
            out->count++;
            rc = -1;
            break;
          }
        }
        rc = parse_value(ps, &out->items[out->count]);
        out->count++;
        if (rc) break;
        skip_ws(ps);
        if (*ps->p == ',') {
          ps->p++;
          continue;
        }
        if (*ps->p == (object ? '}' : ']')) {
          ps->p++;
          break;
        }
        rc = -1;
        break;
      }
    }
  } else if (c == '"') {
    out->kind = JSON_STRING;
    rc = parse_string(ps, &out->string);
  } else if (!strncmp(ps->p, "true", 4) || !strncmp(ps->p, "false", 5)) {
    out->kind = JSON_BOOL;
    out->boolean = c == 't';
    ps->p += out->boolean ? 4 : 5;
  } else if (!strncmp(ps->p, "null", 4)) {
    out->kind = JSON_NULL;
    ps->p += 4;
  } else {
    out->kind = JSON_NUMBER;
    rc = parse_number(ps, &out->number);
  }
  ps->depth--;
  return rc;
}

int json_parse(const char *text, json *out) {
  parser ps = {text, 0};
  int rc = parse_value(&ps, out);
  if (!rc) skip_ws(&ps); /* after a failure ps.p may lie past the end */
  if (!rc && *ps.p) rc = -1;
  if (rc) json_free(out);
  return rc;
}

void json_free(json *v) {
  if (!v) return;
  for (size_t i = 0; i < v->count; i++) {
    if (v->items) json_free(&v->items[i]);
    if (v->keys) free(v->keys[i]);
  }
  free(v->items);
  free(v->keys);
  free(v->string);
  memset(v, 0, sizeof *v);
}

const json *json_get(const json *object, const char *key) {
  if (!object || object->kind != JSON_OBJECT) return NULL;
  for (size_t i = 0; i < object->count; i++)
    if (!strcmp(object->keys[i], key)) return &object->items[i];
  return NULL;
}

void json_expect_keys(const json *object, const char *what, const char *const *keys) {
  static const char *const none[] = {NULL};
  json_expect_schema_keys(object, what, keys, none);
}

void json_expect_schema_keys(const json *object, const char *what, const char *const *keys,
                             const char *const *optional) {
  cr_assert_not_null(object, "%s is missing", what);
  cr_assert_eq(object->kind, JSON_OBJECT, "%s is not an object", what);
  for (size_t k = 0; keys[k]; k++) cr_assert_not_null(json_get(object, keys[k]), "%s has no key '%s'", what, keys[k]);
  for (size_t i = 0; i < object->count; i++) {
    int known = 0;
    for (size_t k = 0; keys[k]; k++) known |= !strcmp(object->keys[i], keys[k]);
    for (size_t k = 0; optional[k]; k++) known |= !strcmp(object->keys[i], optional[k]);
    cr_assert(known, "%s has an unexpected key '%s'", what, object->keys[i]);
    for (size_t e = 0; e < i; e++)
      cr_assert(strcmp(object->keys[e], object->keys[i]), "%s repeats key '%s'", what, object->keys[i]);
  }
}

/* The schema of crec/dump.h: the keys of each command kind past the common ones, and
 * those only some commands of that kind have. */
void json_expect_command_keys(const json *command, const char *what) {
  static const struct {
    const char *kind;
    const char *keys[8];
    const char *optional[3];
  } kinds[] = {
      {"launch", {"kernel", "grid", "block", "shared", "args"}, {"cluster"}}, /* cluster: a kernel with cluster dims */
      {"memcpy", {"dst", "src", "bytes"}, {NULL}},
      {"memset", {"dst", "bytes", "value", "element_size"}, {NULL}},
      {"while", {"predicate", "regions"}, {"max_iterations"}}, /* a loop with a limit of its own */
      {"if", {"predicate", "regions"}, {NULL}},
      {"switch", {"predicate", "regions"}, {"cases"}}, /* a switch with only its default has no cases */
      {"gemm", {"gemm", "operands"}, {NULL}},
      {"collective", {"collective"}, {"operands"}},
      {"custom", {"custom"}, {"operands"}}, /* a custom command may touch nothing */
      {"host", {NULL}, {"operands"}},
      {"barrier", {NULL}, {"operands"}}, /* a barrier across ranks touches its scratch word */
  };
  static const char *const common[] = {"id", "kind", "name", "region", "deps"};
  cr_assert_not_null(command, "%s is missing", what);
  const json *kind = json_get(command, "kind");
  cr_assert(kind && kind->kind == JSON_STRING, "%s has no kind", what);
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
    if (strcmp(kind->string, kinds[k].kind)) continue;
    const char *keys[16];
    size_t n = 0;
    for (size_t i = 0; i < 5; i++) keys[n++] = common[i];
    for (size_t i = 0; kinds[k].keys[i]; i++) keys[n++] = kinds[k].keys[i];
    keys[n] = NULL;
    char at[160];
    snprintf(at, sizeof at, "%s (a %s)", what, kind->string);
    json_expect_schema_keys(command, at, keys, kinds[k].optional);
    return;
  }
  cr_assert_fail("%s has the unknown kind '%s'", what, kind->string);
}

/* ---- child processes ----------------------------------------------------- */

int tool_spawn(char *const argv[], int timeout_s, char **out, char **err) {
  return tool_spawn_in(NULL, argv, timeout_s, out, err);
}

int tool_spawn_in(const char *dir, char *const argv[], int timeout_s, char **out, char **err) {
  char out_path[600], err_path[600];
  static int serial;
  snprintf(out_path, sizeof out_path, "%s/spawn%d.out", tool_temp_dir(), serial);
  snprintf(err_path, sizeof err_path, "%s/spawn%d.err", tool_temp_dir(), serial++);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&fa, 2, err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (dir) posix_spawn_file_actions_addchdir_np(&fa, dir);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  /* its own process group, so a timeout ends the browser's helpers too */
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  pid_t pid;
  int e = posix_spawnp(&pid, argv[0], &fa, &attr, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (e) return -1;
  int status = 0;
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (;;) {
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec - start.tv_sec > timeout_s) {
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      status = -1;
      break;
    }
    struct timespec nap = {0, 20 * 1000 * 1000};
    nanosleep(&nap, NULL);
  }
  if (out) *out = tool_slurp(out_path, NULL);
  if (err) *err = tool_slurp(err_path, NULL);
  if (status == -1) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

const char *tool_chromium(void) {
  static const char *const names[] = {"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"};
  const char *env = getenv("CREC_CHROMIUM");
  if (env && *env) return env;
  for (size_t i = 0; i < 3; i++)
    if (access(names[i], X_OK) == 0) return names[i];
  return NULL;
}

/* ---- the real crec executable --------------------------------------------- */

/* The directory of this test runner, from /proc/self/exe (ends with '/'). */
static const char *runner_dir(void) {
  static char dir[4096];
  if (!dir[0]) {
    ssize_t n = readlink("/proc/self/exe", dir, sizeof dir - 1);
    if (n <= 0) return "./";
    dir[n] = '\0';
    char *slash = strrchr(dir, '/');
    if (slash) slash[1] = '\0';
  }
  return dir;
}

const char *tool_source_dir(void) {
  static char path[4200];
  if (access(CREC_SOURCE_DIR "/README.md", R_OK) == 0) return CREC_SOURCE_DIR;
  /* a copied tree: the runner is SOURCE/BUILD/tests/crec_tests */
  snprintf(path, sizeof path, "%s../..", runner_dir());
  return path;
}

const char *tool_exe(void) {
  static char path[4200];
  const char *env = getenv("CREC_TOOL");
  if (env && *env) return env;
#ifdef CREC_TOOL_EXE
  if (access(CREC_TOOL_EXE, X_OK) == 0) return CREC_TOOL_EXE;
#endif
  snprintf(path, sizeof path, "%s../tools/crec", runner_dir());
  return access(path, X_OK) == 0 ? path : NULL;
}

const char *tool_examples_dir(void) {
  static char path[4200];
  const char *env = getenv("CREC_EXAMPLES_DIR");
  if (env && *env) {
    snprintf(path, sizeof path, "%s%s", env, env[strlen(env) - 1] == '/' ? "" : "/");
    return path;
  }
#ifdef CREC_EXAMPLES_DIR
  if (access(CREC_EXAMPLES_DIR "chain.mlir", R_OK) == 0) return CREC_EXAMPLES_DIR;
#endif
  snprintf(path, sizeof path, "%s../examples/", runner_dir());
  return path;
}

const char *tool_example(const char *name) { return join_path(tool_examples_dir(), name); }

int tool_timeout(void) {
  const char *v = getenv("CREC_TEST_TOOL_TIMEOUT");
  int t = v ? atoi(v) : 0;
  return t > 0 ? t : 60;
}

tool_result tool_exec_argv(const char *dir, const char *const *args) {
  char *argv[64];
  int argc = 0;
  cr_assert_not_null(tool_exe(), "the crec executable is not built");
  argv[argc++] = (char *)tool_exe();
  for (; *args; args++) {
    cr_assert_lt(argc, 63);
    argv[argc++] = (char *)*args;
  }
  argv[argc] = NULL;
  tool_result r = {0, NULL, NULL};
  r.status = tool_spawn_in(dir, argv, tool_timeout(), &r.out, &r.err);
  if (!r.out) r.out = calloc(1, 1);
  if (!r.err) r.err = calloc(1, 1);
  return r;
}

tool_result tool_exec_in(const char *dir, const char *arg, ...) {
  const char *args[64];
  size_t n = 0;
  va_list ap;
  va_start(ap, arg);
  for (const char *a = arg; a; a = va_arg(ap, const char *)) {
    cr_assert_lt(n, 62);
    args[n++] = a;
  }
  va_end(ap);
  args[n] = NULL;
  return tool_exec_argv(dir, args);
}

const char *tool_long_chain(size_t n) {
  crec_tool_buf b = {0};
  crec_tool_buf_puts(&b, "module attributes {gpu.container_module} {\n  gpu.module @k {\n"
                         "    gpu.func @inc(%x: memref<256xf32>) kernel {\n      %i = gpu.thread_id x\n"
                         "      %v = memref.load %x[%i] : memref<256xf32>\n      %one = arith.constant 1.0 : f32\n"
                         "      %r = arith.addf %v, %one : f32\n      memref.store %r, %x[%i] : memref<256xf32>\n"
                         "      gpu.return\n    }\n  }\n"
                         "  func.func @main(%x: memref<256xf32> {crec.name = \"x\"}) {\n"
                         "    %c1 = arith.constant 1 : index\n    %c256 = arith.constant 256 : index\n");
  for (size_t i = 0; i < n; i++)
    crec_tool_buf_puts(&b, "    gpu.launch_func @k::@inc blocks in (%c1, %c1, %c1) threads in (%c256, %c1, %c1) "
                           "args(%x : memref<256xf32>)\n");
  crec_tool_buf_puts(&b, "    return\n  }\n}\n");
  cr_assert(!b.failed);
  char name[64];
  snprintf(name, sizeof name, "chain%zu.mlir", n);
  const char *path = tool_temp_file(name, b.data, b.len);
  crec_tool_buf_free(&b);
  return path;
}

/* Opens the page in headless Chromium with "#selftest=NODE", which clicks NODE
 * and records the details panel in <pre id="crec-selftest">. Returns the dumped DOM. */
char *tool_open_in_chromium(const char *page, const char *node, char **console) {
  const char *chromium = tool_chromium();
  if (!chromium) cr_skip_test("Chromium is not installed (apt-get install chromium)");
  char url[1024], profile[600];
  snprintf(url, sizeof url, "file://%s#selftest=%s", page, node);
  snprintf(profile, sizeof profile, "--user-data-dir=%s/chromium-profile-%s", tool_temp_dir(), node);
  char *argv[] = {(char *)chromium, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr",
                  "--host-resolver-rules=MAP * ~NOTFOUND", profile, "--virtual-time-budget=5000", "--dump-dom",
                  url, NULL};
  char *dom = NULL;
  int status = tool_spawn(argv, 120, &dom, console);
  cr_assert_eq(status, 0, "chromium exited with %d: %s", status, *console ? *console : "");
  cr_assert_not_null(dom);
  return dom;
}

/* Asserts that Chromium logged nothing from the page's console (errors,
 * blocked loads and uncaught exceptions all show up as CONSOLE lines). */
void tool_expect_clean_console(const char *console) {
  const char *line = strstr(console, ":CONSOLE");
  if (line) {
    const char *end = strchr(line, '\n');
    cr_assert_fail("the page logged to the console: %.*s", end ? (int)(end - line) : 200, line);
  }
}

char *tool_open_selftest(const char *page, const char *node, const char **selftest) {
  char *console = NULL;
  char *dom = tool_open_in_chromium(page, node, &console);
  tool_expect_clean_console(console);
  free(console);
  /* the element the page's script appends (its source, in the DOM too, names it as well) */
  static const char head[] = "<pre id=\"crec-selftest\" data-result=", passed[] = "\"pass\" data-errors=\"0\">";
  const char *st = strstr(dom, head);
  cr_assert(st && !strncmp(st + strlen(head), passed, strlen(passed)), "%s: the self-test did not pass: %.600s", node,
            st ? st : dom);
  *selftest = st;
  return dom;
}

void tool_expect_error(tool_result *r, const char *want) {
  cr_assert_eq(r->status, 2, "exit status %d (stdout: %s), stderr: %s", r->status, r->out, r->err);
  cr_assert_eq(tool_count_lines(r->err), 1, "not one line: %s", r->err);
  cr_assert_eq(strncmp(r->err, want, strlen(want)), 0, "error\n  %s does not start with\n  %s", r->err, want);
  cr_assert_str_eq(r->out, "", "an error printed on stdout too");
  tool_result_free(r);
}

void tool_expect_errorf(tool_result *r, const char *fmt, ...) {
  char want[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(want, sizeof want, fmt, ap);
  va_end(ap);
  tool_expect_error(r, want);
}

void tool_expect_has(const char *text, const char *needle) {
  cr_assert(strstr(text, needle), "no '%s' in:\n%s", needle, text);
}

const char *tool_temp_path(const char *name) { return join_path(tool_temp_dir(), name); }
