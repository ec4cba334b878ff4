/* `crec dump` formats: text, json and dot from the library, svg through
 * Graphviz, and the self-contained HTML page. */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tool.h"

extern char **environ;

/* page.css and page.js, embedded at build time (cmake/embed.cmake) */
extern const unsigned char crec_tool_page_css[];
extern const unsigned char crec_tool_page_js[];

/* ---- Graphviz -------------------------------------------------------------- */

static void remove_temp(const char *dir) {
  static const char *const names[] = {"graph.dot", "graph.svg", "dot.err"};
  char path[4200];
  for (size_t i = 0; i < 3; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    unlink(path);
  }
  rmdir(dir);
}

int crec_tool_dot_to_svg(const char *dot, size_t length, char **svg, size_t *svg_length, crec_tool_diag *d) {
  *svg = NULL;
  if (svg_length) *svg_length = 0;
  const char *tmp = getenv("TMPDIR");
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/crec-dot-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(dir)) return crec_tool_fail(d, NULL, "cannot make a temporary directory for Graphviz: %s", strerror(errno));
  char dot_path[4200], svg_path[4200], err_path[4200];
  snprintf(dot_path, sizeof dot_path, "%s/graph.dot", dir);
  snprintf(svg_path, sizeof svg_path, "%s/graph.svg", dir);
  snprintf(err_path, sizeof err_path, "%s/dot.err", dir);
  int rc = -1;
  if (crec_tool_write_file(dot_path, dot, length, d)) goto done;

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  char *argv[] = {"dot", "-Tsvg", "-o", svg_path, dot_path, NULL};
  pid_t pid;
  int e = posix_spawnp(&pid, "dot", &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (e == ENOENT) {
    crec_tool_fail(d, NULL,
                   "Graphviz's 'dot' program was not found on PATH; --format svg and html need it "
                   "(install Graphviz, e.g. 'apt-get install graphviz'), or use --format dot");
    goto done;
  }
  if (e) {
    crec_tool_fail(d, NULL, "cannot start Graphviz's 'dot': %s", strerror(e));
    goto done;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      crec_tool_fail(d, NULL, "waiting for Graphviz's 'dot': %s", strerror(errno));
      goto done;
    }
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    char *msg = NULL;
    size_t n = 0;
    crec_tool_read_file(err_path, &msg, &n, NULL);
    if (msg) msg[strcspn(msg, "\n")] = '\0';
    if (WIFEXITED(status))
      crec_tool_fail(d, NULL, "Graphviz's 'dot' failed with exit status %d: %s", WEXITSTATUS(status),
                     msg && *msg ? msg : "(no message)");
    else
      crec_tool_fail(d, NULL, "Graphviz's 'dot' was killed by signal %d", WTERMSIG(status));
    free(msg);
    goto done;
  }
  rc = crec_tool_read_file(svg_path, svg, svg_length, d);
done:
  remove_temp(dir);
  return rc;
}

/* ---- the program as JSON for the page -------------------------------------- */

/* The page reads the library's JSON dump (its schema is in crec/dump.h), without
 * the dump's final newline. */
int crec_tool_program_json(const crec_program *p, const crec_plan *plan, crec_tool_buf *b, crec_tool_diag *d) {
  char *json = NULL;
  size_t n = 0;
  if (crec_dump(p, plan, CREC_DUMP_JSON, &json, &n) != CREC_OK)
    return crec_tool_fail_library(d, NULL, "dumping the program as JSON");
  if (n && json[n - 1] == '\n') json[--n] = '\0';
  crec_tool_buf_puts(b, json);
  crec_free(json);
  return 0;
}

/* ---- whether a profile is of the program ------------------------------------- */

/* A reader of the few members of a profile's JSON the check below needs; it
 * takes any layout (the profiles in tests/profiles/ are pretty-printed). Each
 * returns the position after what it read, or NULL where the text is not JSON. */
static const char *json_ws(const char *p) {
  while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
  return p;
}

static const char *json_skip_string(const char *p) {
  for (p++; *p && *p != '"'; p++)
    if (*p == '\\' && p[1]) p++;
  return *p ? p + 1 : NULL;
}

static const char *json_skip(const char *p, int depth) {
  p = json_ws(p);
  if (depth > 64) return NULL;
  if (*p == '"') return json_skip_string(p);
  if (*p == '{' || *p == '[') {
    char close = *p == '{' ? '}' : ']';
    p = json_ws(p + 1);
    if (*p == close) return p + 1;
    for (;;) {
      if (close == '}') {
        if (*p != '"' || !(p = json_skip_string(p))) return NULL;
        p = json_ws(p);
        if (*p++ != ':') return NULL;
      }
      if (!(p = json_skip(p, depth + 1))) return NULL;
      p = json_ws(p);
      if (*p == ',') {
        p = json_ws(p + 1);
        continue;
      }
      return *p == close ? p + 1 : NULL;
    }
  }
  const char *start = p;
  while (*p && strchr("+-.0123456789eEtruefalsn", *p)) p++;
  return p > start ? p : NULL;
}

/* The value of member `key` of the object at `object`, or NULL. */
static const char *json_member(const char *object, const char *key) {
  const char *p = json_ws(object);
  if (*p != '{') return NULL;
  p = json_ws(p + 1);
  size_t n = strlen(key);
  while (*p == '"') {
    const char *k = p + 1, *end = json_skip_string(p);
    if (!end) return NULL;
    int match = (size_t)(end - 1 - k) == n && !memcmp(k, key, n);
    p = json_ws(end);
    if (*p != ':') return NULL;
    p = json_ws(p + 1);
    if (match) return p;
    if (!(p = json_skip(p, 0))) return NULL;
    p = json_ws(p);
    if (*p != ',') return NULL;
    p = json_ws(p + 1);
  }
  return NULL;
}

/* The first item of the array at `array`, the one after `item`: NULL past the last. */
static const char *json_first(const char *array) {
  const char *p = array ? json_ws(array) : NULL;
  if (!p || *p != '[') return NULL;
  p = json_ws(p + 1);
  return *p == ']' ? NULL : p;
}

static const char *json_next(const char *item) {
  const char *p = json_skip(item, 0);
  if (!p) return NULL;
  p = json_ws(p);
  return *p == ',' ? json_ws(p + 1) : NULL;
}

/* A command id at `p`: a whole number, else -1. */
static long long json_id(const char *p) {
  if (!p) return -1;
  char *end = NULL;
  double v = strtod(p, &end);
  return end != p && v >= 0 && v < 1e15 && v == (double)(long long)v ? (long long)v : -1;
}

/* Whether command `id` of the profile is one of the program's, with `why` set when not. */
static int profile_names(const crec_program *p, long long id, const char *what, char *why, size_t why_size) {
  size_t n = crec_program_command_count(p);
  if (id >= 0 && (size_t)id < n) return 1;
  if (id < 0) snprintf(why, why_size, "%s a command whose id is not a whole number", what);
  else snprintf(why, why_size, "%s command #%lld, but the program has %zu command%s", what, id, n, n == 1 ? "" : "s");
  return 0;
}

int crec_tool_profile_matches(const crec_program *p, const char *text, char *why, size_t why_size) {
  why[0] = '\0';
  for (const char *c = json_first(json_member(text, "commands")); c; c = json_next(c)) {
    long long id = json_id(json_member(c, "id"));
    if (!profile_names(p, id, "it times", why, why_size)) return 0;
    crec_command_info info = CREC_COMMAND_INFO_INIT;
    if (crec_command_get_info(p, crec_program_command(p, (size_t)id), &info) != CREC_OK) {
      snprintf(why, why_size, "reading command #%lld: %s", id, crec_last_error());
      return 0;
    }
    /* a profile counts the iterations of every while loop that ran, and of nothing else */
    int loop = info.kind == CREC_COMMAND_WHILE, counted = json_member(c, "iterations") != NULL;
    if (counted && !loop) {
      snprintf(why, why_size, "it counts iterations of command #%lld, but that is a %s ('%s'), not a while loop", id,
               crec_command_kind_name(info.kind), info.name);
      return 0;
    }
    if (loop && !counted) {
      snprintf(why, why_size, "command #%lld is a while loop ('%s'), but the profile counts no iterations of it", id,
               info.name);
      return 0;
    }
  }
  const char *critical = json_member(text, "critical_path");
  for (const char *c = json_first(critical ? json_member(critical, "commands") : NULL); c; c = json_next(c))
    if (!profile_names(p, json_id(c), "its critical path holds", why, why_size)) return 0;
  for (const char *t = json_first(json_member(text, "timeline")); t; t = json_next(t))
    if (!profile_names(p, json_id(json_member(t, "command")), "its timeline runs", why, why_size)) return 0;
  return 1;
}

/* ---- the page -------------------------------------------------------------- */

/* Appends the <svg> element of Graphviz's output, without its XML prolog,
 * doctype and comments. */
static int put_svg(crec_tool_buf *b, const char *svg, crec_tool_diag *d) {
  const char *start = strstr(svg, "<svg");
  if (!start) return crec_tool_fail(d, NULL, "Graphviz's output holds no <svg> element");
  crec_tool_buf_puts(b, start);
  return 0;
}

/* Appends `json` as the text of a <script> element: every '<' (JSON has them only
 * in strings) as \u003c, so that a name holding "</script>" or "<!--" ends or
 * changes nothing; JSON.parse reads the same values back. */
static void put_script_json(crec_tool_buf *b, const char *json) {
  for (const char *s = json; *s;) {
    size_t n = strcspn(s, "<");
    crec_tool_buf_putn(b, s, n);
    s += n;
    if (*s) {
      crec_tool_buf_puts(b, "\\u003c");
      s++;
    }
  }
}

int crec_tool_html_page(const crec_program *p, const crec_plan *plan, const char *svg, const char *title,
                        const char *profile, crec_tool_buf *b, crec_tool_diag *d) {
  char *summary = NULL;
  if (crec_dump(p, plan, CREC_DUMP_TEXT, &summary, NULL) != CREC_OK)
    return crec_tool_fail_library(d, title, "summarizing the program");
  size_t ncmd = crec_program_command_count(p), nbuf = crec_program_buffer_count(p);
  crec_tool_buf_puts(b,
                     "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                     "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
                     "style-src 'unsafe-inline'; script-src 'unsafe-inline'\">\n"
                     "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>crec: ");
  crec_tool_buf_html(b, title);
  crec_tool_buf_puts(b, "</title>\n<style>\n");
  crec_tool_buf_puts(b, (const char *)crec_tool_page_css);
  crec_tool_buf_puts(b, "</style>\n</head>\n<body>\n<header>\n<h1>crec: ");
  crec_tool_buf_html(b, title);
  size_t nscalar = crec_program_scalar_count(p), nkernel = crec_program_kernel_count(p);
  crec_tool_buf_printf(b,
                       "</h1>\n<p>%zu command%s, %zu buffer%s, %zu scalar%s, %zu kernel%s. Arrows point from a "
                       "command to the commands that wait for it; dashed boxes are the regions of control flow. "
                       "Click a node for its details.</p>\n",
                       ncmd, ncmd == 1 ? "" : "s", nbuf, nbuf == 1 ? "" : "s", nscalar, nscalar == 1 ? "" : "s",
                       nkernel, nkernel == 1 ? "" : "s");
  crec_tool_buf_puts(b,
                     "<div id=\"legend\"></div>\n<div id=\"toolbar\"><label><input type=\"checkbox\" id=\"fit\" "
                     "checked> fit the graph to the window</label></div>\n"
                     "<details class=\"summary\"><summary>program summary</summary><pre>");
  crec_tool_buf_html(b, summary);
  crec_free(summary);
  crec_tool_buf_puts(b, "</pre></details>\n");
  if (profile) crec_tool_buf_puts(b, "<div id=\"profile\"></div>\n");
  crec_tool_buf_puts(b, "</header>\n<main>\n<section id=\"graph\">\n");
  if (put_svg(b, svg, d)) return -1;
  crec_tool_buf_puts(b,
                     "</section>\n<aside id=\"details\"><p class=\"hint\">Click a node of the graph to see its "
                     "kernel, grid and block, arguments, and dependencies.</p></aside>\n</main>\n"
                     "<script type=\"application/json\" id=\"crec-data\">");
  crec_tool_buf data = {0};
  if (crec_tool_program_json(p, plan, &data, d)) {
    crec_tool_buf_free(&data);
    return -1;
  }
  if (data.data) put_script_json(b, data.data);
  b->failed |= data.failed;
  crec_tool_buf_free(&data);
  crec_tool_buf_puts(b, "</script>\n");
  if (profile) {
    crec_tool_buf_puts(b, "<section id=\"timeline\"></section>\n<script type=\"application/json\" id=\"crec-profile\">");
    put_script_json(b, profile);
    crec_tool_buf_puts(b, "</script>\n");
  }
  crec_tool_buf_puts(b, "<script>\n");
  crec_tool_buf_puts(b, (const char *)crec_tool_page_js);
  crec_tool_buf_puts(b, "</script>\n</body>\n</html>\n");
  return 0;
}

int crec_tool_dump_render(const crec_program *program, crec_tool_format format, const char *title,
                          const char *profile, char **out, size_t *length, crec_tool_diag *d) {
  *out = NULL;
  if (length) *length = 0;
  static const crec_dump_format library_format[] = {CREC_DUMP_TEXT, CREC_DUMP_JSON, CREC_DUMP_DOT};
  if (format <= CREC_TOOL_FORMAT_DOT) {
    char *text = NULL;
    size_t n = 0;
    if (crec_dump(program, NULL, library_format[format], &text, &n) != CREC_OK)
      return crec_tool_fail_library(d, title, "dumping the program");
    /* callers free() what this returns; the library's string goes back through crec_free() */
    *out = malloc(n + 1);
    if (*out) memcpy(*out, text, n + 1);
    crec_free(text);
    if (!*out) return crec_tool_fail(d, NULL, "out of memory copying the dump");
    if (length) *length = n;
    return 0;
  }
  crec_plan *plan = NULL;
  char *dot = NULL, *svg = NULL;
  size_t dot_len = 0, svg_len = 0;
  crec_tool_buf page = {0};
  int rc = -1;
  if (crec_plan_create(program, NULL, &plan) != CREC_OK) {
    crec_tool_fail_library(d, title, "planning the program");
    goto done;
  }
  if (crec_dump(program, plan, CREC_DUMP_DOT, &dot, &dot_len) != CREC_OK) {
    crec_tool_fail_library(d, title, "dumping the program");
    goto done;
  }
  if (crec_tool_dot_to_svg(dot, dot_len, &svg, &svg_len, d)) goto done;
  if (format == CREC_TOOL_FORMAT_SVG) {
    *out = svg;
    if (length) *length = svg_len;
    svg = NULL;
    rc = 0;
    goto done;
  }
  if (crec_tool_html_page(program, plan, svg, title, profile, &page, d)) goto done;
  if (page.failed) {
    crec_tool_fail(d, NULL, "out of memory writing the HTML page");
    goto done;
  }
  *out = page.data;
  if (length) *length = page.len;
  page.data = NULL;
  rc = 0;
done:
  crec_tool_buf_free(&page);
  crec_free(dot);
  free(svg);
  crec_plan_destroy(plan);
  return rc;
}
