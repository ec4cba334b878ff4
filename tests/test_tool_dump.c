/* `crec dump` in every format, run through the tool in process with programs
 * built by the C API; the HTML page is opened in headless Chromium. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_tool.h"

/* A .mlir path whose basename names a test program (the test front end builds it). */
static const char *program_path(const char *name) {
  char file[64];
  snprintf(file, sizeof file, "%s.mlir", name);
  return tool_temp_file(file, "// built by the test front end\n", 31);
}

static int count(const char *s, const char *needle) {
  int n = 0;
  for (size_t len = strlen(needle); (s = strstr(s, needle)); s += len) n++;
  return n;
}

Test(tool_dump, text_is_the_library_summary) {
  tool_result r = tool_run("dump", program_path("chain"), NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert_str_eq(r.err, "");
  cr_assert(strstr(r.out, "program: 4 commands in 1 region"), "%s", r.out);
  cr_assert(strstr(r.out, "#1 launch 'y = g(t)' k<<<4x1x1, 256x1x1>>>(w y[0..4096), r t[0..2048), n) after #0"),
            "%s", r.out);
  cr_assert(strstr(r.out, "#3 memcpy 'x = y' x[0..4096) <- y[0..4096) after #1"), "%s", r.out);
  tool_result_free(&r);
}

Test(tool_dump, entry_selects_the_function) {
  tool_result r = tool_run("dump", program_path("chain"), "--entry", "other", NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "'other entry'"), "%s", r.out);
  cr_assert_null(strstr(r.out, "'t = f(x)'"));
  tool_result_free(&r);
}

/* Checks the schema of crec/dump.h (what the HTML page reads): keys, types, kinds,
 * roles, and that deps are earlier commands of the same region. */
static void check_dump_json(const char *text, size_t want_commands, size_t want_regions) {
  json v;
  cr_assert_eq(json_parse(text, &v), 0, "not JSON: %s", text);
  static const char *const top[] = {"buffers", "scalars", "regions", "commands", NULL};
  static const char *const buffer_keys[] = {"name", "kind", "size", "element", "dynamic", NULL};
  static const char *const buffer_optional[] = {"arena_offset", "live", NULL};
  static const char *const scalar_keys[] = {"name", "type", "kind", NULL};
  static const char *const region_keys[] = {"id", "parent", "role", "index", NULL};
  static const char *const none[] = {NULL};
  static const char *const kinds[] = {"launch", "memcpy", "memset", "barrier", "while", "if",
                                      "switch", "gemm", "collective", "custom", "host"};
  static const char *const roles[] = {"body", "cond", "then", "else", "branch"};
  json_expect_keys(&v, "the dump", top);
  const json *buffers = json_get(&v, "buffers"), *scalars = json_get(&v, "scalars");
  const json *regions = json_get(&v, "regions"), *commands = json_get(&v, "commands");
  cr_assert(buffers->kind == JSON_ARRAY && scalars->kind == JSON_ARRAY && regions->kind == JSON_ARRAY &&
            commands->kind == JSON_ARRAY);
  for (size_t i = 0; i < buffers->count; i++) {
    const json *b = &buffers->items[i];
    json_expect_schema_keys(b, "a buffer", buffer_keys, buffer_optional);
    cr_assert_eq(json_get(b, "name")->kind, JSON_STRING);
    const char *k = json_get(b, "kind")->string;
    cr_assert(k && (!strcmp(k, "argument") || !strcmp(k, "temporary") || !strcmp(k, "constant")), "kind %s", k);
    cr_assert(json_get(b, "size")->kind == JSON_NUMBER && json_get(b, "size")->number > 0);
  }
  for (size_t i = 0; i < scalars->count; i++) {
    json_expect_schema_keys(&scalars->items[i], "a scalar", scalar_keys, none);
    const char *t = json_get(&scalars->items[i], "type")->string;
    cr_assert(t && (!strcmp(t, "i32") || !strcmp(t, "i64") || !strcmp(t, "f32") || !strcmp(t, "f64")));
  }
  cr_assert_eq(regions->count, want_regions);
  cr_assert_eq(commands->count, want_commands);
  for (size_t i = 0; i < regions->count; i++) {
    const json *r = &regions->items[i];
    json_expect_schema_keys(r, "a region", region_keys, none);
    cr_assert_eq(json_get(r, "id")->number, (double)i);
    const json *parent = json_get(r, "parent");
    const char *role = json_get(r, "role")->string;
    if (i == 0) {
      cr_assert_eq(parent->kind, JSON_NULL);
      cr_assert_str_eq(role, "program");
      continue;
    }
    cr_assert_eq(parent->kind, JSON_NUMBER, "region %zu has no parent command", i);
    int known = 0;
    for (int k = 0; k < 5; k++) known |= !strcmp(role, roles[k]);
    cr_assert(known, "region %zu has role %s", i, role);
    /* the parent is a control-flow command */
    int found = 0;
    for (size_t c = 0; c < commands->count; c++) {
      const json *cmd = &commands->items[c];
      if (json_get(cmd, "id")->number != parent->number) continue;
      const char *k = json_get(cmd, "kind")->string;
      found = !strcmp(k, "while") || !strcmp(k, "if") || !strcmp(k, "switch");
    }
    cr_assert(found, "region %zu's parent is not a control-flow command", i);
  }
  for (size_t i = 0; i < commands->count; i++) {
    const json *c = &commands->items[i];
    json_expect_command_keys(c, "a command");
    int known = 0;
    for (int k = 0; k < 11; k++) known |= !strcmp(json_get(c, "kind")->string, kinds[k]);
    cr_assert(known, "command kind %s", json_get(c, "kind")->string);
    const json *deps = json_get(c, "deps");
    cr_assert_eq(deps->kind, JSON_ARRAY);
    for (size_t k = 0; k < deps->count; k++) {
      double dep = deps->items[k].number;
      /* the dependency appears earlier in program order, in the same region */
      int earlier = 0;
      for (size_t e = 0; e < i; e++)
        if (json_get(&commands->items[e], "id")->number == dep)
          earlier = json_get(&commands->items[e], "region")->number == json_get(c, "region")->number;
      cr_assert(earlier, "command %zu waits for %g, not an earlier command of its region", i, dep);
    }
  }
  json_free(&v);
}

Test(tool_dump, json_has_the_schema_of_the_design) {
  tool_result r = tool_run("dump", program_path("chain"), "--format", "json", NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  check_dump_json(r.out, 4, 1);
  cr_assert(strstr(r.out, "{\"id\":3,\"kind\":\"memcpy\",\"name\":\"x = y\",\"region\":0,\"deps\":[1],"
                         "\"dst\":{\"buffer\":\"x\",\"offset\":0,\"end\":4096},"
                         "\"src\":{\"buffer\":\"y\",\"offset\":0,\"end\":4096},\"bytes\":4096}"), "%s", r.out);
  tool_result_free(&r);
  r = tool_run("dump", program_path("control"), "--format=json", NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  /* while (cond: check, body: step), if (then: memset, else: empty), switch (3 branches) */
  check_dump_json(r.out, 9, 8);
  tool_result_free(&r);
}

Test(tool_dump, dot_has_clusters_and_node_ids) {
  tool_result r = tool_run("dump", program_path("control"), "--format", "dot", NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert_eq(strncmp(r.out, "digraph crec {", 14), 0, "%s", r.out);
  cr_assert(strstr(r.out, "subgraph cluster_c0"), "%s", r.out);
  cr_assert(strstr(r.out, "c1 [id=\"c1\""), "%s", r.out);
  tool_result_free(&r);
}

Test(tool_dump, svg_through_graphviz) {
  tool_result r = tool_run("dump", program_path("control"), "--format", "svg", NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "<svg"), "no <svg> in the output");
  for (int c = 0; c < 9; c++) {
    char id[32];
    snprintf(id, sizeof id, "<g id=\"c%d\" class=\"node\">", c);
    cr_assert(strstr(r.out, id), "the SVG has no node %s", id);
  }
  cr_assert_geq(count(r.out, "class=\"cluster\""), 8, "control flow is not drawn as nested boxes");
  tool_result_free(&r);
}

Test(tool_dump, svg_and_html_without_graphviz_fail_clearly) {
  setenv("PATH", "/nonexistent", 1);
  const char *formats[] = {"svg", "html"};
  for (int f = 0; f < 2; f++) {
    tool_result r = tool_run("dump", program_path("chain"), "--format", formats[f], NULL);
    cr_assert_eq(r.status, 2);
    cr_assert_str_eq(r.out, "");
    cr_assert_eq(tool_count_lines(r.err), 1, "%s", r.err);
    cr_assert(strstr(r.err, "crec: error: Graphviz's 'dot' program was not found on PATH"), "%s", r.err);
    cr_assert(strstr(r.err, "--format dot"), "%s", r.err);
    tool_result_free(&r);
  }
  /* text, json and dot need no Graphviz */
  tool_result r = tool_run("dump", program_path("chain"), "--format", "dot", NULL);
  cr_assert_eq(r.status, 0);
  tool_result_free(&r);
}

Test(tool_dump, output_file) {
  char path[512];
  snprintf(path, sizeof path, "%s/out.json", tool_temp_dir());
  tool_result r = tool_run("dump", program_path("chain"), "--format", "json", "-o", path, NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  size_t size = 0;
  char *text = tool_slurp(path, &size);
  cr_assert_not_null(text);
  check_dump_json(text, 4, 1);
  char want[700];
  snprintf(want, sizeof want, "wrote %s (json, %zu bytes)\n", path, size);
  cr_assert_str_eq(r.out, want);
  free(text);
  tool_result_free(&r);
  r = tool_run("dump", program_path("chain"), "-o", "/nonexistent/dir/x.txt", NULL);
  cr_assert_eq(r.status, 2);
  cr_assert(strstr(r.err, "crec: error: /nonexistent/dir/x.txt: cannot create the file: No such file or directory"),
            "%s", r.err);
  tool_result_free(&r);
}

Test(tool_dump, html_is_self_contained) {
  tool_result r = tool_run("dump", program_path("control"), "--format", "html", NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  const char *h = r.out;
  cr_assert_eq(strncmp(h, "<!DOCTYPE html>", 15), 0);
  cr_assert(strstr(h, "Content-Security-Policy\" content=\"default-src 'none'"), "no policy against network loads");
  cr_assert(strstr(h, "<svg"));
  cr_assert(strstr(h, "<script type=\"application/json\" id=\"crec-data\">{\"buffers\":"));
  cr_assert_null(strstr(h, "<?xml"), "the XML prolog was not stripped");
  cr_assert_null(strstr(h, "<script src"));
  cr_assert_null(strstr(h, "<link"));
  cr_assert_null(strstr(h, "@import"));
  cr_assert_null(strstr(h, "url("));
  cr_assert_null(strstr(h, "src=\"http"));
  cr_assert_null(strstr(h, "href=\"http"));
  /* one page: one html element, the script closes once */
  cr_assert_eq(count(h, "<html"), 1);
  cr_assert_eq(count(h, "</script>"), 2);
  tool_result_free(&r);
}

/* One schema: the page's data is what --format json prints (the library's dump; a '<' would be \u003c). */
Test(tool_dump, the_page_holds_the_json_dump) {
  tool_result j = tool_run("dump", program_path("control"), "--format", "json", NULL);
  cr_assert_eq(j.status, 0, "%s", j.err);
  tool_result h = tool_run("dump", program_path("control"), "--format", "html", NULL);
  cr_assert_eq(h.status, 0, "%s", h.err);
  static const char open[] = "<script type=\"application/json\" id=\"crec-data\">";
  const char *data = strstr(h.out, open);
  cr_assert_not_null(data);
  data += strlen(open);
  const char *end = strstr(data, "</script>");
  cr_assert_not_null(end);
  size_t n = strlen(j.out);
  cr_assert(n > 0 && j.out[n - 1] == '\n', "the JSON dump does not end its line");
  cr_assert_eq((size_t)(end - data), n - 1, "the page's data is not the JSON dump");
  cr_assert_eq(strncmp(data, j.out, n - 1), 0, "the page's data is not the JSON dump");
  tool_result_free(&j);
  tool_result_free(&h);
}

/* The details the page shows come from this JSON. */
Test(tool_dump, page_data_describes_each_command) {
  crec_program *p = tool_test_program("chain", NULL);
  crec_plan *plan = NULL;
  EXPECT_OK(crec_plan_create(p, NULL, &plan));
  crec_tool_buf b = {0};
  crec_tool_diag d;
  cr_assert_eq(crec_tool_program_json(p, plan, &b, &d), 0, "%s", d.message);
  json v;
  cr_assert_eq(json_parse(b.data, &v), 0, "not JSON: %s", b.data);
  const json *cmds = json_get(&v, "commands");
  cr_assert_eq(cmds->count, 4);
  const json *c1 = &cmds->items[1];
  cr_assert_str_eq(json_get(json_get(c1, "kernel"), "entry")->string, "k");
  cr_assert_eq(json_get(c1, "grid")->items[0].number, 4);
  cr_assert_eq(json_get(c1, "block")->items[0].number, 256);
  const json *args = json_get(c1, "args");
  cr_assert_eq(args->count, 3);
  cr_assert_str_eq(json_get(&args->items[0], "buffer")->string, "y");
  cr_assert_str_eq(json_get(&args->items[0], "access")->string, "write");
  cr_assert_eq(json_get(&args->items[0], "end")->number, 4096);
  cr_assert_str_eq(json_get(&args->items[1], "buffer")->string, "t");
  cr_assert_eq(json_get(&args->items[1], "end")->number, 2048);
  cr_assert_str_eq(json_get(&args->items[2], "kind")->string, "scalar");
  cr_assert_str_eq(json_get(&args->items[2], "name")->string, "n");
  cr_assert_eq(json_get(c1, "deps")->items[0].number, 0);
  const json *c3 = &cmds->items[3];
  cr_assert_str_eq(json_get(json_get(c3, "src"), "buffer")->string, "y");
  cr_assert_eq(json_get(c3, "bytes")->number, 4096);
  json_free(&v);
  crec_tool_buf_free(&b);
  crec_plan_destroy(plan);
  crec_program_destroy(p);
}

/* Writes program `name` as an HTML page in the temporary directory; returns its path. */
static const char *write_page(const char *name) {
  static char path[512];
  snprintf(path, sizeof path, "%s/%s.html", tool_temp_dir(), name);
  tool_result r = tool_run("dump", program_path(name), "--format", "html", "-o", path, NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  tool_result_free(&r);
  return path;
}

Test(tool_dump, html_page_shows_a_launch_when_clicked, .timeout = 180) {
  const char *path = write_page("chain");
  const char *st;
  char *dom = tool_open_selftest(path, "c1", &st);
  /* what a user sees in the panel */
  static const char *const shown[] = {"#1 launch 'y = g(t)'",
                                      "kernel\tk (module m, ptx)",
                                      "grid\t4 \u00d7 1 \u00d7 1",
                                      "block\t256 \u00d7 1 \u00d7 1",
                                      "y[0..4096), 4096 bytes\twrite",
                                      "t[0..2048), 2048 bytes\tread",
                                      "scalar n : i32\tby value",
                                      "depends on\t#0 launch 't = f(x)'",
                                      "needed by\t#3 memcpy 'x = y'"};
  for (size_t i = 0; i < sizeof shown / sizeof shown[0]; i++)
    cr_assert(strstr(st, shown[i]), "the details do not show '%s': %.1500s", shown[i], st);
  /* the clicked node and its neighbours are highlighted in the graph */
  cr_assert(strstr(dom, "id=\"c1\" class=\"node selected\""), "node c1 is not highlighted");
  cr_assert(strstr(dom, "id=\"c0\" class=\"node dep\""), "its dependency is not highlighted");
  cr_assert(strstr(dom, "id=\"c3\" class=\"node user\""), "its dependent is not highlighted");
  free(dom);
}

Test(tool_dump, html_page_shows_nested_control_flow, .timeout = 180) {
  const char *path = write_page("control");
  /* c2 is 'step', in the body of the while loop c0 */
  const char *st;
  char *dom = tool_open_selftest(path, "c2", &st);
  cr_assert(strstr(st, "region\tbody of #0 while 'loop'"), "%.1500s", st);
  cr_assert(strstr(st, "data[0..4096), 4096 bytes\tread-write"), "%.1500s", st);
  free(dom);
  /* the switch itself: its index and its branches */
  dom = tool_open_selftest(path, "c5", &st);
  cr_assert(strstr(st, "#5 switch 'dispatch'"), "%.1500s", st);
  cr_assert(strstr(st, "index\tidx[0..4), 4 bytes"), "%.1500s", st);
  cr_assert(strstr(st, "regions\tbranch 0, branch 1, branch 2"), "%.1500s", st);
  /* the legend names each kind in the graph */
  const char *legend = strstr(dom, "<div id=\"legend\">");
  cr_assert(legend && strstr(legend, "while</span>") && strstr(legend, "switch</span>"), "no legend");
  free(dom);
}

/* A launch of kernel "k" with cluster dims 2x1x1 (#0), and one of "k" without (#1). */
static crec_program *cluster_program(void) {
  crec_kernel plain;
  crec_program *p = crec_test_program(&plain);
  crec_kernel tiled = crec_test_cluster_kernel(p);
  crec_buffer x = crec_test_argument(p, "x", 1024);
  crec_arg a = crec_arg_buffer(crec_range_whole(x), CREC_ACCESS_READ_WRITE);
  crec_launch l = CREC_LAUNCH_INIT;
  l.kernel = tiled;
  l.grid[0] = crec_dim_of(8);
  l.args = &a;
  l.num_args = 1;
  crec_command c;
  EXPECT_OK(crec_program_add_launch(p, crec_program_body(p), "tiled", &l, &c));
  l.kernel = plain;
  EXPECT_OK(crec_program_add_launch(p, crec_program_body(p), "plain", &l, &c));
  return p;
}

/* The page's data and details show a launch's cluster dims only where its kernel has them. */
Test(tool_dump, the_page_shows_cluster_dims, .timeout = 180) {
  crec_program *p = cluster_program();
  crec_plan *plan = NULL;
  EXPECT_OK(crec_plan_create(p, NULL, &plan));
  crec_tool_buf b = {0};
  crec_tool_diag d;
  cr_assert_eq(crec_tool_program_json(p, plan, &b, &d), 0, "%s", d.message);
  cr_assert(strstr(b.data, ",\"shared\":0,\"cluster\":[2,1,1],\"args\":["), "%s", b.data);
  json v;
  cr_assert_eq(json_parse(b.data, &v), 0, "not JSON: %s", b.data);
  const json *cmds = json_get(&v, "commands");
  cr_assert_eq(cmds->count, 2);
  const json *cl = json_get(&cmds->items[0], "cluster");
  cr_assert(cl && cl->kind == JSON_ARRAY && cl->count == 3);
  cr_assert(cl->items[0].number == 2 && cl->items[1].number == 1 && cl->items[2].number == 1);
  cr_assert_null(json_get(&cmds->items[1], "cluster"), "a kernel without cluster dims has no \"cluster\"");
  json_free(&v);
  crec_tool_buf_free(&b);
  crec_plan_destroy(plan);
  char *html = NULL;
  size_t len = 0;
  cr_assert_eq(crec_tool_dump_render(p, CREC_TOOL_FORMAT_HTML, "cluster", NULL, &html, &len, &d), 0, "%s", d.message);
  const char *path = tool_temp_file("cluster.html", html, len);
  free(html);
  crec_program_destroy(p);
  static const char *const nodes[] = {"c0", "c1"};
  for (int i = 0; i < 2; i++) {
    const char *st;
    char *dom = tool_open_selftest(path, nodes[i], &st);
    cr_assert(strstr(st, "grid\t8 \u00d7 1 \u00d7 1"), "%.1500s", st);
    if (i == 0) cr_assert(strstr(st, "cluster\t2 \u00d7 1 \u00d7 1"), "the details do not show the cluster: %.1500s", st);
    else cr_assert_null(strstr(st, "cluster\t"), "a launch without cluster dims shows some: %.1500s", st);
    free(dom);
  }
}

/* Names are the program's, which may come from anyone's MLIR: one holding
 * "</script>" or "<!--" is shown as written and cannot end the page's data or
 * run as script. */
Test(tool_dump, the_page_shows_names_that_look_like_markup_as_text, .timeout = 180) {
  static const char evil[] = "</script><script>document.title='injected'</script><!--";
  crec_kernel k;
  crec_program *p = crec_test_program(&k);
  crec_buffer x = crec_test_argument(p, "x</script>", 1024);
  crec_arg a = crec_arg_buffer(crec_range_whole(x), CREC_ACCESS_READ_WRITE);
  crec_test_launch(p, crec_program_body(p), evil, k, &a, 1);
  char *html = NULL;
  size_t len = 0;
  crec_tool_diag d;
  cr_assert_eq(crec_tool_dump_render(p, CREC_TOOL_FORMAT_HTML, "markup", NULL, &html, &len, &d), 0, "%s", d.message);
  crec_program_destroy(p);
  static const char open[] = "<script type=\"application/json\" id=\"crec-data\">";
  const char *data = strstr(html, open);
  cr_assert_not_null(data);
  data += strlen(open);
  const char *end = strstr(data, "</script>");
  cr_assert(end && !memchr(data, '<', (size_t)(end - data)), "the page's data holds a '<': %.300s", data);
  const char *path = tool_temp_file("markup.html", html, len);
  free(html);
  const char *st;
  char *dom = tool_open_selftest(path, "c0", &st);
  /* the dumped DOM writes the panel's text with '<' and '>' as entities */
  cr_assert(strstr(st, "#0 launch '&lt;/script&gt;&lt;script&gt;document.title='injected'&lt;/script&gt;&lt;!--'"),
            "%.1500s", st);
  cr_assert(strstr(st, "x&lt;/script&gt;[0..1024), 1024 bytes\tread-write"), "%.1500s", st);
  cr_assert(strstr(dom, "<title>crec: markup</title>"), "the title changed: %.300s", strstr(dom, "<title>"));
  free(dom);
}

Test(tool_dump, text_and_dot_show_cluster_dims) {
  crec_program *p = cluster_program();
  char *out = NULL;
  size_t len = 0;
  crec_tool_diag d;
  cr_assert_eq(crec_tool_dump_render(p, CREC_TOOL_FORMAT_TEXT, "cluster", NULL, &out, &len, &d), 0, "%s", d.message);
  cr_assert(strstr(out, "  #0 launch 'tiled' k<<<8x1x1, 1x1x1, cluster 2x1x1>>>(rw x[0..1024))\n"), "%s", out);
  cr_assert(strstr(out, "  #1 launch 'plain' k<<<8x1x1, 1x1x1>>>(rw x[0..1024)) after #0\n"), "%s", out);
  free(out);
  cr_assert_eq(crec_tool_dump_render(p, CREC_TOOL_FORMAT_DOT, "cluster", NULL, &out, &len, &d), 0, "%s", d.message);
  cr_assert(strstr(out, "label=\"#0 launch\\ntiled\\ncluster 2x1x1\""), "%s", out);
  cr_assert(strstr(out, "label=\"#1 launch\\nplain\""), "%s", out);
  free(out);
  crec_program_destroy(p);
}

/* ---- what a newcomer tripped on (issue 39) ---- */

/* -o - is standard output, as without -o: no file called '-' appears. */
Test(tool_dump, dash_o_dash_is_standard_output) {
  cr_assert_eq(chdir(tool_temp_dir()), 0);
  tool_result plain = tool_run("dump", program_path("chain"), "--format", "json", NULL);
  cr_assert_eq(plain.status, 0, "%s", plain.err);
  tool_result dash = tool_run("dump", program_path("chain"), "--format", "json", "-o", "-", NULL);
  cr_assert_eq(dash.status, 0, "%s", dash.err);
  cr_assert_str_eq(dash.out, plain.out, "dump -o - printed something else than dump");
  cr_assert_str_eq(dash.err, "");
  cr_assert_neq(access("-", F_OK), 0, "crec dump -o - wrote a file called '-'");
  tool_result_free(&plain);
  tool_result_free(&dash);
}

/* A loop's own limit (crec.max_iterations) is in every dump the tool writes. */
Test(tool_dump, a_loop_limit_is_in_every_format) {
  tool_result r = tool_run("dump", program_path("control"), NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "\n  #0 while 'loop' predicate pred[0..1) max_iterations 1000\n"), "%s", r.out);
  tool_result_free(&r);
  r = tool_run("dump", program_path("control"), "--format", "json", NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "\"kind\":\"while\",\"name\":\"loop\",\"region\":0,\"deps\":[],\"predicate\":"
                          "{\"buffer\":\"pred\",\"offset\":0,\"end\":1},\"max_iterations\":1000,"),
            "%s", r.out);
  tool_result_free(&r);
  r = tool_run("dump", program_path("control"), "--format", "dot", NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "label=\"#0 while\\nloop\\nat most 1000 iterations\""), "%s", r.out);
  tool_result_free(&r);
}

/* The page says "1 command", "1 region", "1 byte" for one, and shows a loop's limit. */
Test(tool_dump, the_page_counts_in_the_singular_for_one, .timeout = 180) {
  tool_result r = tool_run("dump", program_path("elements"), "--format", "html", NULL);
  cr_assert_eq(r.status, 0, "%s", r.err);
  cr_assert(strstr(r.out, "<p>1 command, 9 buffers, 0 scalars, 1 kernel. "), "%.600s", strstr(r.out, "<p>"));
  cr_assert(strstr(r.out, "program: 1 command in 1 region, 9 buffers (9 arguments, 0 temporaries, 0 constants), "
                          "0 scalars, 1 kernel; arena 0 bytes"),
            "%.600s", strstr(r.out, "program: "));
  tool_result_free(&r);
  const char *path = write_page("control");
  const char *st;
  char *dom = tool_open_selftest(path, "c0", &st);
  cr_assert(strstr(st, "predicate\tpred[0..1), 1 byte\n"), "%.1500s", st);
  cr_assert(strstr(st, "iteration limit\t1000 iterations (its own: crec.max_iterations)"), "%.1500s", st);
  free(dom);
  /* a loop without a limit of its own takes the run's */
  dom = tool_open_selftest(path, "c5", &st);
  cr_assert_null(strstr(st, "iteration limit"), "a switch has no iteration limit: %.1500s", st);
  free(dom);
}

/* A program of `n` launches, each after the one before: a graph taller than the window. */
static crec_program *tall_program(size_t n) {
  crec_kernel k;
  crec_program *p = crec_test_program(&k);
  crec_buffer x = crec_test_argument(p, "x", 1024);
  crec_arg a = crec_arg_buffer(crec_range_whole(x), CREC_ACCESS_READ_WRITE);
  crec_launch l = CREC_LAUNCH_INIT;
  l.kernel = k;
  l.args = &a;
  l.num_args = 1;
  crec_command c;
  for (size_t i = 0; i < n; i++) {
    char name[32];
    snprintf(name, sizeof name, "step %zu", i);
    EXPECT_OK(crec_program_add_launch(p, crec_program_body(p), name, &l, &c));
  }
  return p;
}

/* Fitting the graph to the window fits it both ways and centres it: a small graph
 * grows (up to twice its size) in the middle of its pane, a tall one shrinks to
 * the pane's height; neither spills out. */
Test(tool_dump, fitting_centres_small_graphs_and_shrinks_tall_ones, .timeout = 300) {
  const char *st;
  char *dom = tool_open_selftest(write_page("elements"), "c0", &st);
  cr_assert(strstr(st, "\nfit: inside the pane, centred, scale 2.00 "), "%.2000s", st);
  free(dom);
  crec_program *p = tall_program(40);
  char *page = NULL;
  size_t len = 0;
  crec_tool_diag d;
  cr_assert_eq(crec_tool_dump_render(p, CREC_TOOL_FORMAT_HTML, "tall", NULL, &page, &len, &d), 0, "%s", d.message);
  char path[600];
  snprintf(path, sizeof path, "%s/tall.html", tool_temp_dir());
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  cr_assert_eq(fwrite(page, 1, len, f), len);
  fclose(f);
  free(page);
  crec_program_destroy(p);
  dom = tool_open_selftest(path, "c39", &st);
  const char *fit = strstr(st, "\nfit: inside the pane, centred, scale 0.");
  cr_assert_not_null(fit, "the tall graph is not shrunk into its pane: %.2000s", st);
  free(dom);
}

/* A profile's JSON, pretty-printed as tests/profiles/ are, with `commands`,
 * `critical` and `timeline` as its lists; written to `name`. The "control" test
 * program it is meant for has 9 commands: #0 its while loop, #2 a launch in the
 * loop's body, #4 a memset. */
static const char *control_profile(const char *name, const char *commands, const char *critical, const char *timeline) {
  char text[2048];
  snprintf(text, sizeof text,
           "{\n \"format\": \"crec-profile\", \"version\": 1, \"program\": \"control.mlir\", \"device\": \"test\",\n"
           " \"iters\": 1,\n \"commands\": [%s],\n \"critical_path\": {\"commands\": [%s], \"us\": 1, \"share\": 1},\n"
           " \"idle_us\": 0,\n \"timeline\": [%s]\n}\n",
           commands, critical, timeline);
  return tool_temp_file(name, text, strlen(text));
}

#define LOOP_TIMES "{\"id\": 0, \"device_us\": {\"min\": 1, \"p50\": 1, \"max\": 1}, \"start_us\": 0, \"nodes\": 4, " \
                   "\"concurrent\": 0, \"iterations\": {\"min\": 2, \"p50\": 2, \"max\": 2}, \"per_iteration_us\": 0.5}"
#define STEP_TIMES "{\"id\": 2, \"device_us\": {\"min\": 1, \"p50\": 1, \"max\": 1}, \"start_us\": 0, \"nodes\": 1, " \
                   "\"concurrent\": 0}"

/* dump --profile refuses another program's profile, naming what does not match,
 * unless --force; a profile of the program is drawn. */
Test(tool_dump, another_programs_profile_is_an_error_unless_forced) {
  const char *prog = program_path("control");
  const char *good = control_profile("good.json", LOOP_TIMES ", " STEP_TIMES, "0, 2",
                                     "{\"command\": 2, \"start_us\": 0, \"end_us\": 1, \"iteration\": 0}");
  tool_result r = tool_run("dump", prog, "--format", "html", "--profile", good, NULL);
  cr_assert_eq(r.status, 0, "a profile of the program is refused: %s", r.err);
  cr_assert(strstr(r.out, "id=\"crec-profile\""));
  tool_result_free(&r);
  static const struct {
    const char *commands, *critical, *timeline, *why;
  } other[] = {
      {LOOP_TIMES ", {\"id\": 12, \"device_us\": {\"min\": 1, \"p50\": 1, \"max\": 1}}", "0", "",
       "it times command #12, but the program has 9 commands"},
      {STEP_TIMES ", {\"id\": 4, \"iterations\": {\"min\": 1, \"p50\": 1, \"max\": 1}}", "", "",
       "it counts iterations of command #4, but that is a memset ('zero data'), not a while loop"},
      {"{\"id\": 0, \"device_us\": {\"min\": 1, \"p50\": 1, \"max\": 1}}", "", "",
       "command #0 is a while loop ('loop'), but the profile counts no iterations of it"},
      {LOOP_TIMES, "0, 9", "", "its critical path holds command #9, but the program has 9 commands"},
      {LOOP_TIMES, "0", "{\"command\": 30, \"start_us\": 0, \"end_us\": 1}", "its timeline runs command #30"},
  };
  for (size_t i = 0; i < sizeof other / sizeof other[0]; i++) {
    char name[32];
    snprintf(name, sizeof name, "other%zu.json", i);
    const char *profile = control_profile(name, other[i].commands, other[i].critical, other[i].timeline);
    r = tool_run("dump", prog, "--format", "html", "--profile", profile, NULL);
    tool_expect_errorf(&r, "crec: error: %s: crec dump --profile: not a profile of %s: %s", profile, prog, other[i].why);
    r = tool_run("dump", prog, "--format", "html", "--profile", profile, "--force", NULL);
    cr_assert_eq(r.status, 0, "--force: %s", r.err);
    cr_assert(strstr(r.out, "id=\"crec-profile\""), "--force did not draw the profile");
    tool_result_free(&r);
  }
}
