/* `crec dump` formats: text, json and dot from the library, svg through
 * Graphviz, and the self-contained HTML page. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
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

static void put_dim(crec_tool_buf *b, const crec_program *p, crec_dim dim) {
  crec_scalar_info si;
  if (dim.scalar.id && crec_scalar_get_info(p, dim.scalar, &si) == CREC_OK) crec_tool_buf_json_string(b, si.name);
  else crec_tool_buf_printf(b, "%u", dim.value);
}

static void put_dims(crec_tool_buf *b, const crec_program *p, const crec_dim *dims) {
  crec_tool_buf_puts(b, "[");
  for (int i = 0; i < 3; i++) {
    if (i) crec_tool_buf_puts(b, ",");
    put_dim(b, p, dims[i]);
  }
  crec_tool_buf_puts(b, "]");
}

/* "buffer":"x","offset":0,"end":4096 (end null: to the end of a dynamic-size buffer) */
static void put_range_fields(crec_tool_buf *b, const crec_program *p, crec_range r) {
  crec_buffer_info bi;
  int known = crec_buffer_get_info(p, r.buffer, &bi) == CREC_OK;
  crec_tool_buf_puts(b, "\"buffer\":");
  crec_tool_buf_json_string(b, known ? bi.name : "?");
  crec_tool_buf_printf(b, ",\"offset\":%" PRIu64 ",\"end\":", r.offset);
  if (r.size != CREC_WHOLE) crec_tool_buf_printf(b, "%" PRIu64, r.offset + r.size);
  else if (known && !bi.dynamic_size) crec_tool_buf_printf(b, "%" PRIu64, bi.size);
  else crec_tool_buf_puts(b, "null");
}

static void put_range(crec_tool_buf *b, const crec_program *p, const char *key, crec_range r) {
  crec_tool_buf_printf(b, ",\"%s\":{", key);
  put_range_fields(b, p, r);
  crec_tool_buf_puts(b, "}");
}

static const char *access_name(crec_access a) {
  return a == CREC_ACCESS_READ ? "read" : a == CREC_ACCESS_WRITE ? "write" : "read-write";
}

static void put_immediate(crec_tool_buf *b, const crec_arg *a) {
  switch (a->type) {
    case CREC_TYPE_I32: crec_tool_buf_printf(b, "\"i32\",\"value\":\"%" PRId32 "\"", a->value.i32); break;
    case CREC_TYPE_I64: crec_tool_buf_printf(b, "\"i64\",\"value\":\"%" PRId64 "\"", a->value.i64); break;
    case CREC_TYPE_F32: crec_tool_buf_printf(b, "\"f32\",\"value\":\"%.9g\"", (double)a->value.f32); break;
    case CREC_TYPE_F64: crec_tool_buf_printf(b, "\"f64\",\"value\":\"%.17g\"", a->value.f64); break;
    default: crec_tool_buf_printf(b, "\"bytes\",\"value\":\"%u bytes\"", a->size); break;
  }
}

static int put_command(crec_tool_buf *b, const crec_program *p, const crec_plan *plan, size_t index,
                       crec_tool_diag *d) {
  crec_command cmd = crec_program_command(p, index);
  crec_command_info ci;
  if (crec_command_get_info(p, cmd, &ci) != CREC_OK) return crec_tool_fail_library(d, NULL, "reading a command");
  crec_tool_buf_printf(b, "%s{\"id\":%zu,\"kind\":\"%s\",\"name\":", index ? "," : "", index,
                       crec_command_kind_name(ci.kind));
  crec_tool_buf_json_string(b, ci.name ? ci.name : "");
  crec_tool_buf_printf(b, ",\"region\":%zu,\"deps\":[", crec_handle_index(ci.region.id));
  const crec_command *deps = NULL;
  size_t nd = 0;
  if (crec_plan_get_deps(plan, cmd, &deps, &nd) != CREC_OK) return crec_tool_fail_library(d, NULL, "reading dependencies");
  for (size_t k = 0; k < nd; k++) crec_tool_buf_printf(b, "%s%zu", k ? "," : "", crec_handle_index(deps[k].id));
  crec_tool_buf_puts(b, "]");
  switch (ci.kind) {
    case CREC_COMMAND_LAUNCH: {
      crec_kernel_info ki;
      crec_module_info mi;
      if (crec_kernel_get_info(p, ci.kernel, &ki) != CREC_OK || crec_module_get_info(p, ki.module, &mi) != CREC_OK)
        return crec_tool_fail_library(d, NULL, "reading a kernel");
      crec_tool_buf_puts(b, ",\"kernel\":{\"entry\":");
      crec_tool_buf_json_string(b, ki.entry);
      crec_tool_buf_puts(b, ",\"module\":");
      crec_tool_buf_json_string(b, mi.name);
      crec_tool_buf_printf(b, ",\"format\":\"%s\"},\"grid\":", crec_image_format_name(mi.format));
      put_dims(b, p, ci.grid);
      crec_tool_buf_puts(b, ",\"block\":");
      put_dims(b, p, ci.block);
      crec_tool_buf_puts(b, ",\"shared\":");
      put_dim(b, p, ci.shared_bytes);
      if (ki.cluster[0]) /* only where the kernel has thread-block cluster dims */
        crec_tool_buf_printf(b, ",\"cluster\":[%u,%u,%u]", ki.cluster[0], ki.cluster[1], ki.cluster[2]);
      crec_tool_buf_puts(b, ",\"args\":[");
      for (size_t a = 0; a < ci.num_args; a++) {
        crec_arg arg;
        if (crec_command_get_arg(p, cmd, a, &arg) != CREC_OK) return crec_tool_fail_library(d, NULL, "reading an argument");
        crec_tool_buf_puts(b, a ? ",{" : "{");
        if (arg.kind == CREC_ARG_BUFFER) {
          crec_tool_buf_puts(b, "\"kind\":\"buffer\",");
          put_range_fields(b, p, arg.range);
          crec_tool_buf_printf(b, ",\"access\":\"%s\"", access_name(arg.access));
        } else if (arg.kind == CREC_ARG_SCALAR) {
          crec_scalar_info si;
          if (crec_scalar_get_info(p, arg.scalar, &si) != CREC_OK) return crec_tool_fail_library(d, NULL, "reading a scalar");
          crec_tool_buf_puts(b, "\"kind\":\"scalar\",\"name\":");
          crec_tool_buf_json_string(b, si.name);
          crec_tool_buf_printf(b, ",\"type\":\"%s\"", crec_type_name(si.type));
        } else {
          crec_tool_buf_puts(b, "\"kind\":\"immediate\",\"type\":");
          put_immediate(b, &arg);
        }
        crec_tool_buf_puts(b, "}");
      }
      crec_tool_buf_puts(b, "]");
      break;
    }
    case CREC_COMMAND_MEMCPY:
      put_range(b, p, "dst", ci.dst);
      put_range(b, p, "src", ci.src);
      crec_tool_buf_printf(b, ",\"bytes\":%" PRIu64, ci.bytes);
      break;
    case CREC_COMMAND_MEMSET:
      put_range(b, p, "dst", ci.dst);
      crec_tool_buf_printf(b, ",\"bytes\":%" PRIu64 ",\"value\":\"0x%x\",\"element_size\":%u", ci.bytes,
                           ci.memset_value, ci.memset_element_size);
      break;
    case CREC_COMMAND_WHILE:
    case CREC_COMMAND_IF:
    case CREC_COMMAND_SWITCH:
      put_range(b, p, "predicate", ci.predicate);
      if (ci.case_values) {
        crec_tool_buf_puts(b, ",\"cases\":[");
        for (size_t k = 0; k + 1 < ci.num_regions; k++)
          crec_tool_buf_printf(b, "%s%" PRId32, k ? "," : "", ci.case_values[k]);
        crec_tool_buf_puts(b, "]");
      }
      break;
    case CREC_COMMAND_GEMM: {
      crec_gemm g;
      memset(&g, 0, sizeof g);
      g.struct_size = sizeof g;
      if (crec_command_get_gemm(p, cmd, &g) != CREC_OK) return crec_tool_fail_library(d, NULL, "reading a GEMM");
      static const char *const epilogues[] = {"none", "bias", "relu", "bias_relu"};
      crec_tool_buf_printf(b,
                           ",\"gemm\":{\"type\":\"%s\",\"m\":%" PRIu64 ",\"n\":%" PRIu64 ",\"k\":%" PRIu64
                           ",\"batch\":%" PRIu64 ",\"transpose_a\":%s,\"transpose_b\":%s,\"alpha\":%.17g,"
                           "\"beta\":%.17g,\"accumulate\":%s,\"epilogue\":\"%s\",\"workspace_bytes\":%" PRIu64 "}",
                           crec_element_name(g.type), g.transpose_a ? g.a.cols : g.a.rows,
                           g.transpose_b ? g.b.rows : g.b.cols, g.transpose_a ? g.a.rows : g.a.cols, g.batch,
                           g.transpose_a ? "true" : "false", g.transpose_b ? "true" : "false", g.alpha, g.beta,
                           g.c.range.buffer.id ? "false" : "true",
                           (unsigned)g.epilogue < 4 ? epilogues[g.epilogue] : "unknown", g.workspace_bytes);
      break;
    }
    case CREC_COMMAND_COLLECTIVE: {
      crec_collective c;
      memset(&c, 0, sizeof c);
      c.struct_size = sizeof c;
      crec_command start = {0};
      if (crec_command_get_collective(p, cmd, &c, &start) != CREC_OK)
        return crec_tool_fail_library(d, NULL, "reading a collective");
      const char *comm = "?";
      int ranks = 0;
      crec_program_get_communicator(p, crec_handle_index(c.communicator.id), &comm, &ranks);
      crec_tool_buf_printf(b, ",\"collective\":{\"op\":\"%s\",\"type\":\"%s\",",
                           crec_collective_kind_name(c.kind), crec_element_name(c.type));
      if (c.kind == CREC_COLLECTIVE_ALL_REDUCE || c.kind == CREC_COLLECTIVE_REDUCE_SCATTER)
        crec_tool_buf_printf(b, "\"reduction\":\"%s\",", crec_reduction_name(c.reduction));
      crec_tool_buf_puts(b, "\"communicator\":");
      crec_tool_buf_json_string(b, comm ? comm : "?");
      crec_tool_buf_printf(b, ",\"ranks\":%d,\"async\":\"%s\"}", ranks,
                           start.id ? "done" : c.async ? "start" : "no");
      break;
    }
    case CREC_COMMAND_CUSTOM: {
      crec_custom c;
      memset(&c, 0, sizeof c);
      c.struct_size = sizeof c;
      if (crec_command_get_custom(p, cmd, &c) != CREC_OK)
        return crec_tool_fail_library(d, NULL, "reading a custom command");
      crec_tool_buf_puts(b, ",\"custom\":{\"target\":");
      crec_tool_buf_json_string(b, c.target ? c.target : "");
      crec_tool_buf_printf(b, ",\"kernels\":%zu,\"attribute_bytes\":%zu}", c.num_kernels, c.attributes_size);
      break;
    }
    default:
      break;
  }
  /* library commands: the ranges they touch (custom holes are not listed) */
  if (ci.num_operands) {
    crec_tool_buf_puts(b, ",\"operands\":[");
    for (size_t o = 0; o < ci.num_operands; o++) {
      crec_range range;
      crec_access access;
      if (crec_command_get_operand(p, cmd, o, &range, &access) != CREC_OK)
        return crec_tool_fail_library(d, NULL, "reading an operand");
      crec_tool_buf_puts(b, o ? ",{" : "{");
      put_range_fields(b, p, range);
      crec_tool_buf_printf(b, ",\"access\":\"%s\"}", access_name(access));
    }
    crec_tool_buf_puts(b, "]");
  }
  if (ci.num_regions) {
    crec_tool_buf_puts(b, ",\"regions\":[");
    for (size_t k = 0; k < ci.num_regions; k++)
      crec_tool_buf_printf(b, "%s%zu", k ? "," : "", crec_handle_index(crec_command_region(p, cmd, k).id));
    crec_tool_buf_puts(b, "]");
  }
  crec_tool_buf_puts(b, "}");
  return 0;
}

int crec_tool_program_json(const crec_program *p, const crec_plan *plan, crec_tool_buf *b, crec_tool_diag *d) {
  crec_tool_buf_puts(b, "{\"buffers\":[");
  for (size_t i = 0; i < crec_program_buffer_count(p); i++) {
    crec_buffer_info bi;
    crec_buffer buf = crec_program_buffer(p, i);
    if (crec_buffer_get_info(p, buf, &bi) != CREC_OK) return crec_tool_fail_library(d, NULL, "reading a buffer");
    crec_tool_buf_puts(b, i ? ",{\"name\":" : "{\"name\":");
    crec_tool_buf_json_string(b, bi.name);
    crec_tool_buf_printf(b, ",\"kind\":\"%s\",\"size\":%" PRIu64 ",\"element\":\"%s\",\"dynamic\":%s",
                         crec_buffer_kind_name(bi.kind), bi.size, crec_element_name(bi.element),
                         bi.dynamic_size ? "true" : "false");
    if (bi.kind == CREC_BUFFER_TEMPORARY) {
      uint64_t off = 0;
      size_t first = 0, last = 0;
      if (crec_plan_get_temporary(plan, buf, &off) == CREC_OK &&
          crec_plan_get_lifetime(plan, buf, &first, &last) == CREC_OK && first <= last)
        crec_tool_buf_printf(b, ",\"arena_offset\":%" PRIu64 ",\"live\":[%zu,%zu]", off, first, last);
    }
    crec_tool_buf_puts(b, "}");
  }
  crec_tool_buf_puts(b, "],\"scalars\":[");
  for (size_t i = 0; i < crec_program_scalar_count(p); i++) {
    crec_scalar_info si;
    if (crec_scalar_get_info(p, crec_program_scalar(p, i), &si) != CREC_OK)
      return crec_tool_fail_library(d, NULL, "reading a scalar");
    static const char *const kinds[] = {"bound", "derived", "size"};
    crec_tool_buf_puts(b, i ? ",{\"name\":" : "{\"name\":");
    crec_tool_buf_json_string(b, si.name);
    crec_tool_buf_printf(b, ",\"type\":\"%s\",\"kind\":\"%s\"}", crec_type_name(si.type),
                         (unsigned)si.kind < 3 ? kinds[si.kind] : "unknown");
  }
  crec_tool_buf_puts(b, "],\"regions\":[");
  for (size_t i = 0; i < crec_program_region_count(p); i++) {
    crec_region_info ri;
    if (crec_region_get_info(p, crec_program_region(p, i), &ri) != CREC_OK)
      return crec_tool_fail_library(d, NULL, "reading a region");
    crec_tool_buf_printf(b, "%s{\"id\":%zu,\"role\":\"%s\",\"index\":%zu,\"parent\":", i ? "," : "", i,
                         crec_region_role_name(ri.role), ri.index_in_parent);
    if (ri.parent.id) crec_tool_buf_printf(b, "%zu}", crec_handle_index(ri.parent.id));
    else crec_tool_buf_puts(b, "null}");
  }
  crec_tool_buf_puts(b, "],\"commands\":[");
  for (size_t i = 0; i < crec_program_command_count(p); i++)
    if (put_command(b, p, plan, i, d)) return -1;
  crec_tool_buf_puts(b, "]}");
  return 0;
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

int crec_tool_html_page(const crec_program *p, const crec_plan *plan, const char *svg, const char *title,
                        crec_tool_buf *b, crec_tool_diag *d) {
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
  crec_tool_buf_printf(b,
                       "</h1>\n<p>%zu commands, %zu buffers, %zu scalars, %zu kernels. Arrows point from a "
                       "command to the commands that wait for it; dashed boxes are the regions of control flow. "
                       "Click a node for its details.</p>\n",
                       ncmd, nbuf, crec_program_scalar_count(p), crec_program_kernel_count(p));
  crec_tool_buf_puts(b,
                     "<div id=\"legend\"></div>\n<div id=\"toolbar\"><label><input type=\"checkbox\" id=\"fit\" "
                     "checked> fit the graph to the window</label></div>\n"
                     "<details class=\"summary\"><summary>program summary</summary><pre>");
  crec_tool_buf_html(b, summary);
  crec_free(summary);
  crec_tool_buf_puts(b, "</pre></details>\n</header>\n<main>\n<section id=\"graph\">\n");
  if (put_svg(b, svg, d)) return -1;
  crec_tool_buf_puts(b,
                     "</section>\n<aside id=\"details\"><p class=\"hint\">Click a node of the graph to see its "
                     "kernel, grid and block, arguments, and dependencies.</p></aside>\n</main>\n"
                     "<script type=\"application/json\" id=\"crec-data\">");
  if (crec_tool_program_json(p, plan, b, d)) return -1;
  crec_tool_buf_puts(b, "</script>\n<script>\n");
  crec_tool_buf_puts(b, (const char *)crec_tool_page_js);
  crec_tool_buf_puts(b, "</script>\n</body>\n</html>\n");
  return 0;
}

int crec_tool_dump_render(const crec_program *program, crec_tool_format format, const char *title, char **out,
                          size_t *length, crec_tool_diag *d) {
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
  if (crec_tool_html_page(program, plan, svg, title, &page, d)) goto done;
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
