/* The tool's command line: every subcommand and flag, the help
 * texts, and the errors a mistyped command line gets. */
#include <string.h>

#include "test_tool.h"

static int parse(crec_tool_args *args, crec_tool_diag *d, int argc, char **argv) {
  memset(d, 0, sizeof *d);
  return crec_tool_parse_args(argc, argv, args, d);
}

#define ARGV(...) (char *[]){"crec", __VA_ARGS__, NULL}
#define ARGC(...) ((int)(sizeof((char *[]){"crec", __VA_ARGS__}) / sizeof(char *)))
#define PARSE(args, d, ...) parse(args, d, ARGC(__VA_ARGS__), ARGV(__VA_ARGS__))

Test(tool_args, run_takes_every_option_of_the_contract) {
  crec_tool_args a;
  crec_tool_diag d;
  cr_assert_eq(PARSE(&a, &d, "run", "prog.mlir", "--entry", "step", "--input", "x=iota", "--input=y=fill:1.5",
                     "--scalar", "n=4", "--scalar=tol=1e-6", "--iters", "25", "--check", "--output", "y=y.bin",
                     "--size", "v=100", "--cuda-dot", "g.dot"),
               0, "%s", d.message);
  cr_assert_eq(a.command, CREC_TOOL_CMD_RUN);
  cr_assert_str_eq(a.program, "prog.mlir");
  cr_assert_str_eq(a.entry, "step");
  cr_assert_eq(a.num_inputs, 2);
  cr_assert_str_eq(a.inputs[0].name, "x");
  cr_assert_str_eq(a.inputs[0].value, "iota");
  cr_assert_str_eq(a.inputs[1].name, "y");
  cr_assert_str_eq(a.inputs[1].value, "fill:1.5");
  cr_assert_str_eq(a.inputs[1].arg, "--input y=fill:1.5");
  cr_assert_eq(a.num_scalars, 2);
  cr_assert_str_eq(a.scalars[1].name, "tol");
  cr_assert_str_eq(a.scalars[1].value, "1e-6");
  cr_assert_eq(a.iters, 25);
  cr_assert(a.iters_given);
  cr_assert(a.check);
  cr_assert_eq(a.num_outputs, 1);
  cr_assert_str_eq(a.outputs[0].value, "y.bin");
  cr_assert_eq(a.num_sizes, 1);
  cr_assert_str_eq(a.cuda_dot, "g.dot");
  crec_tool_args_free(&a);
}

Test(tool_args, options_may_come_before_the_program) {
  crec_tool_args a;
  crec_tool_diag d;
  cr_assert_eq(PARSE(&a, &d, "bench", "--iters", "7", "--json", "p.mlir"), 0, "%s", d.message);
  cr_assert_eq(a.command, CREC_TOOL_CMD_BENCH);
  cr_assert_str_eq(a.program, "p.mlir");
  cr_assert_eq(a.iters, 7);
  cr_assert(a.json);
  crec_tool_args_free(&a);
}

Test(tool_args, defaults) {
  crec_tool_args a;
  crec_tool_diag d;
  cr_assert_eq(PARSE(&a, &d, "run", "p.mlir"), 0);
  cr_assert_eq(a.iters, CREC_TOOL_RUN_ITERS);
  cr_assert_eq(a.iters, 1);
  cr_assert_null(a.entry);
  cr_assert(!a.check);
  crec_tool_args_free(&a);
  cr_assert_eq(PARSE(&a, &d, "bench", "p.mlir"), 0);
  cr_assert_eq(a.iters, 100);
  cr_assert(!a.json);
  crec_tool_args_free(&a);
  cr_assert_eq(PARSE(&a, &d, "dump", "p.mlir"), 0);
  cr_assert_eq(a.format, CREC_TOOL_FORMAT_TEXT);
  cr_assert_null(a.out_path);
  crec_tool_args_free(&a);
}

Test(tool_args, dump_formats_and_output_file) {
  static const char *const names[] = {"text", "json", "dot", "svg", "html"};
  for (int f = 0; f < 5; f++) {
    crec_tool_args a;
    crec_tool_diag d;
    char opt[32];
    snprintf(opt, sizeof opt, "--format=%s", names[f]);
    cr_assert_eq(PARSE(&a, &d, "dump", "p.mlir", opt, "-o", "out.file"), 0, "%s", d.message);
    cr_assert_eq((int)a.format, f);
    cr_assert_str_eq(crec_tool_format_name(a.format), names[f]);
    cr_assert_str_eq(a.out_path, "out.file");
    crec_tool_args_free(&a);
  }
  crec_tool_args a;
  crec_tool_diag d;
  cr_assert_eq(PARSE(&a, &d, "dump", "-ograph.html", "--format", "html", "p.mlir"), 0, "%s", d.message);
  cr_assert_str_eq(a.out_path, "graph.html");
  crec_tool_args_free(&a);
}

/* crec profile takes run's inputs, --iters (default 20), and dump's --format
 * (less the graph-only dot and svg) and -o. */
Test(tool_args, profile_takes_inputs_iters_a_format_and_an_output_file) {
  static const char *const names[] = {"text", "json", "html"};
  static const crec_tool_format formats[] = {CREC_TOOL_FORMAT_TEXT, CREC_TOOL_FORMAT_JSON, CREC_TOOL_FORMAT_HTML};
  for (int f = 0; f < 3; f++) {
    crec_tool_args a;
    crec_tool_diag d;
    cr_assert_eq(PARSE(&a, &d, "profile", "prog.mlir", "--entry", "step", "--input", "x=iota", "--scalar", "n=4",
                       "--size", "v=100", "--iters", "7", "--format", (char *)names[f], "-o", "p.out",
                       "--loop-limit", "50"),
                 0, "%s", d.message);
    cr_assert_eq(a.command, CREC_TOOL_CMD_PROFILE);
    cr_assert_str_eq(crec_tool_command_name(a.command), "profile");
    cr_assert_str_eq(a.program, "prog.mlir");
    cr_assert_str_eq(a.entry, "step");
    cr_assert_eq(a.num_inputs, 1);
    cr_assert_str_eq(a.inputs[0].value, "iota");
    cr_assert_eq(a.num_scalars, 1);
    cr_assert_eq(a.num_sizes, 1);
    cr_assert_eq(a.iters, 7);
    cr_assert_eq(a.format, formats[f], "--format %s", names[f]);
    cr_assert_str_eq(a.out_path, "p.out");
    cr_assert_eq(a.loop_limit, 50);
    crec_tool_args_free(&a);
  }
  crec_tool_args a;
  crec_tool_diag d;
  cr_assert_eq(PARSE(&a, &d, "profile", "--format=json", "-op.json", "p.mlir"), 0, "%s", d.message);
  cr_assert_eq(a.format, CREC_TOOL_FORMAT_JSON);
  cr_assert_str_eq(a.out_path, "p.json");
  crec_tool_args_free(&a);
  /* defaults: 20 replays, text, standard output */
  cr_assert_eq(PARSE(&a, &d, "profile", "p.mlir"), 0, "%s", d.message);
  cr_assert_eq(a.iters, 20);
  cr_assert_eq(a.iters, CREC_TOOL_PROFILE_ITERS);
  cr_assert(!a.iters_given);
  cr_assert_eq(a.format, CREC_TOOL_FORMAT_TEXT);
  cr_assert_null(a.out_path);
  crec_tool_args_free(&a);
}

Test(tool_args, double_dash_ends_options) {
  crec_tool_args a;
  crec_tool_diag d;
  cr_assert_eq(PARSE(&a, &d, "dump", "--", "-weird.mlir"), 0, "%s", d.message);
  cr_assert_str_eq(a.program, "-weird.mlir");
  crec_tool_args_free(&a);
}

/* Each bad command line fails with a message naming what is wrong. */
static void expect_error(int argc, char **argv, const char *needle) {
  crec_tool_args a;
  crec_tool_diag d;
  cr_assert_eq(parse(&a, &d, argc, argv), -1, "accepted a command line that should fail (%s)", needle);
  char line[4096];
  snprintf(line, sizeof line, "%s: %s", d.where, d.message);
  cr_assert(strstr(line, needle), "error '%s' does not mention '%s'", line, needle);
  crec_tool_args_free(&a); /* freeing after a failure is safe */
}
#define EXPECT_ERROR(needle, ...) expect_error(ARGC(__VA_ARGS__), ARGV(__VA_ARGS__), needle)

Test(tool_args, errors_name_what_is_wrong) {
  expect_error(1, (char *[]){"crec", NULL}, "no command");
  EXPECT_ERROR("unknown command 'frobnicate'", "frobnicate", "p.mlir");
  EXPECT_ERROR("unknown option '--fast'", "run", "p.mlir", "--fast");
  EXPECT_ERROR("'--check' is not an option of 'crec bench'", "bench", "p.mlir", "--check");
  EXPECT_ERROR("'--json' is not an option of 'crec run'", "run", "p.mlir", "--json");
  EXPECT_ERROR("'--format' is not an option of 'crec run'", "run", "p.mlir", "--format", "json");
  EXPECT_ERROR("'-o' is not an option of 'crec bench'", "bench", "p.mlir", "-o", "x");
  EXPECT_ERROR("'--iters' is not an option of 'crec dump'", "dump", "p.mlir", "--iters", "3");
  EXPECT_ERROR("'--output' is not an option of 'crec bench'", "bench", "p.mlir", "--output", "y=f");
  EXPECT_ERROR("needs a value", "run", "p.mlir", "--input");
  EXPECT_ERROR("--iters 0: must be between 1", "run", "p.mlir", "--iters", "0");
  EXPECT_ERROR("--iters -3: expected a positive integer", "run", "p.mlir", "--iters", "-3");
  EXPECT_ERROR("--iters 5x: expected a positive integer", "run", "p.mlir", "--iters", "5x");
  EXPECT_ERROR("must be between 1 and 1000000000", "run", "p.mlir", "--iters", "1000000001");
  EXPECT_ERROR("--iters is given twice", "run", "p.mlir", "--iters", "2", "--iters", "3");
  EXPECT_ERROR("needs a program", "run");
  EXPECT_ERROR("takes one program", "run", "a.mlir", "b.mlir");
  EXPECT_ERROR("unknown format 'png'", "dump", "p.mlir", "--format", "png");
  EXPECT_ERROR("--input x: expected NAME=SPEC", "run", "p.mlir", "--input", "x");
  EXPECT_ERROR("--input =iota: expected NAME=SPEC", "run", "p.mlir", "--input", "=iota");
  EXPECT_ERROR("nothing after '='", "run", "p.mlir", "--scalar", "n=");
  EXPECT_ERROR("'x' is already given by '--input x=iota'", "run", "p.mlir", "--input", "x=iota", "--input",
               "x=fill:1");
  EXPECT_ERROR("--entry is given twice", "run", "p.mlir", "--entry", "a", "--entry", "b");
  EXPECT_ERROR("unknown command 'walk'", "help", "walk");
}

/* Each refusal of crec profile says what to give instead. */
Test(tool_args, profile_refuses_graph_formats_no_program_and_other_commands_options) {
  EXPECT_ERROR("--format dot: 'crec profile' writes text, json or html (the graph alone: crec dump --format dot)",
               "profile", "p.mlir", "--format", "dot");
  EXPECT_ERROR("--format svg: 'crec profile' writes text, json or html (the graph alone: crec dump --format svg)",
               "profile", "p.mlir", "--format=svg");
  EXPECT_ERROR("unknown format 'png' for --format (formats: text, json, dot, svg, html)", "profile", "p.mlir",
               "--format", "png");
  EXPECT_ERROR("--iters 0: must be between 1 and 1000000000", "profile", "p.mlir", "--iters", "0");
  EXPECT_ERROR("--iters is given twice", "profile", "p.mlir", "--iters", "2", "--iters", "3");
  EXPECT_ERROR("'crec profile' needs a program: crec profile PROG.mlir (try 'crec profile --help')", "profile");
  EXPECT_ERROR("'crec profile' needs a program", "profile", "--iters", "5", "--format", "json");
  EXPECT_ERROR("'crec profile' takes one program, but 'a.mlir' and 'b.mlir' are given", "profile", "a.mlir", "b.mlir");
  EXPECT_ERROR("unknown option '--fast' for 'crec profile' (try 'crec profile --help')", "profile", "p.mlir", "--fast");
  EXPECT_ERROR("option '--json' is not an option of 'crec profile' (try 'crec profile --help')", "profile", "p.mlir",
               "--json");
  EXPECT_ERROR("option '--check' is not an option of 'crec profile'", "profile", "p.mlir", "--check");
  EXPECT_ERROR("option '--output' is not an option of 'crec profile'", "profile", "p.mlir", "--output", "y=f");
  EXPECT_ERROR("option '-o' needs a value: -o FILE", "profile", "p.mlir", "-o");
  EXPECT_ERROR("-o needs a file name", "profile", "p.mlir", "-o", "");
  EXPECT_ERROR("unknown command 'prof' (commands: run, bench, profile, dump, compile, cache; try 'crec --help')",
               "prof", "p.mlir");
}

Test(tool_args, help_and_version_need_no_program) {
  crec_tool_args a;
  crec_tool_diag d;
  cr_assert_eq(PARSE(&a, &d, "--help"), 0);
  cr_assert(a.help);
  cr_assert_eq(a.command, CREC_TOOL_CMD_NONE);
  crec_tool_args_free(&a);
  cr_assert_eq(PARSE(&a, &d, "run", "--help"), 0);
  cr_assert(a.help);
  cr_assert_eq(a.command, CREC_TOOL_CMD_RUN);
  crec_tool_args_free(&a);
  cr_assert_eq(PARSE(&a, &d, "help", "dump"), 0);
  cr_assert_eq(a.command, CREC_TOOL_CMD_DUMP);
  crec_tool_args_free(&a);
  cr_assert_eq(PARSE(&a, &d, "profile", "-h"), 0);
  cr_assert(a.help);
  cr_assert_eq(a.command, CREC_TOOL_CMD_PROFILE);
  crec_tool_args_free(&a);
  cr_assert_eq(PARSE(&a, &d, "help", "profile"), 0);
  cr_assert_eq(a.command, CREC_TOOL_CMD_PROFILE);
  crec_tool_args_free(&a);
  cr_assert_eq(PARSE(&a, &d, "--version"), 0);
  cr_assert(a.version);
  crec_tool_args_free(&a);
}

/* The help of each subcommand documents each of its options, with examples. */
Test(tool_args, help_texts_list_every_option_and_examples) {
  static const char *const run[] = {"--entry", "--input", "--scalar", "--size", "--iters", "--check",
                                    "--output", "--cuda-dot", "fill:V", "iota", "random:SEED", NULL};
  static const char *const bench[] = {"--entry", "--input", "--scalar", "--size", "--iters", "--json",
                                      "\"replay_update_us\"", "p99", NULL};
  static const char *const dump[] = {"--entry", "--format", "-o FILE", "--cuda-dot", "text", "json", "dot",
                                     "svg", "html", NULL};
  static const char *const profile[] = {"--entry", "--input", "--scalar", "--size", "--iters", "(default 20)",
                                        "--format", "text, json or html", "-o FILE", "CUPTI", NULL};
  static const char *const tool[] = {"crec run", "crec bench", "crec profile", "crec dump", "--check", "--json",
                                     "--format text|json|html", "help [run|bench|profile|", "exit", NULL};
  const char *const *lists[] = {tool, run, bench, dump, profile};
  const char *usage[] = {"Usage:", "Usage: crec run", "Usage: crec bench", "Usage: crec dump", "Usage: crec profile"};
  static const crec_tool_command commands[] = {CREC_TOOL_CMD_NONE, CREC_TOOL_CMD_RUN, CREC_TOOL_CMD_BENCH,
                                               CREC_TOOL_CMD_DUMP, CREC_TOOL_CMD_PROFILE};
  for (int c = 0; c < 5; c++) {
    const char *h = crec_tool_help(commands[c]);
    cr_assert(strstr(h, usage[c]), "help %d lacks '%s'", c, usage[c]);
    cr_assert(strstr(h, "Examples:\n  crec "), "help %d has no examples", c);
    for (const char *const *w = lists[c]; *w; w++) cr_assert(strstr(h, *w), "help %d does not mention '%s'", c, *w);
    /* fits a terminal */
    for (const char *line = h; *line;) {
      const char *end = strchr(line, '\n');
      cr_assert_not_null(end);
      cr_assert_leq(end - line, 100, "help %d has a line of %d characters", c, (int)(end - line));
      line = end + 1;
    }
  }
}

/* Counts the option lines of `help` that document `opt`: lines that start with
 * "  OPT" (or "  -h, OPT") followed by a space, ',' or the line's end. */
static int option_lines(const char *help, const char *opt) {
  int n = 0;
  size_t len = strlen(opt);
  for (const char *line = help; *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : line + strlen(line)) {
    const char *at = !strncmp(line, "  -h, ", 6) ? line + 6 : !strncmp(line, "  ", 2) ? line + 2 : NULL;
    if (at && !strncmp(at, opt, len) && (at[len] == ' ' || at[len] == ',' || at[len] == '\n')) n++;
  }
  return n;
}

/* Whether the synopsis of `crec CMD` in the tool's help (its lines up to the next
 * "  crec ") shows option `opt` ("[--opt", " --opt " or "[--opt]"). */
static int in_synopsis(const char *cmd, const char *opt) {
  const char *h = crec_tool_help(CREC_TOOL_CMD_NONE);
  char head[32];
  snprintf(head, sizeof head, "\n  crec %s ", cmd);
  const char *start = strstr(h, head);
  cr_assert_not_null(start, "the tool's help has no synopsis of 'crec %s'", cmd);
  start += 3;
  const char *end = strstr(start, "\n  crec ");
  cr_assert_not_null(end);
  char forms[3][40];
  snprintf(forms[0], sizeof forms[0], "[%s ", opt);
  snprintf(forms[1], sizeof forms[1], "[%s]", opt);
  snprintf(forms[2], sizeof forms[2], " %s ", opt);
  for (int f = 0; f < 3; f++) {
    const char *at = strstr(start, forms[f]);
    if (at && at < end) return 1;
  }
  return 0;
}

/* Every help tells the truth about the options its command takes: each option the
 * parser accepts for a command is documented once in that command's help and shown
 * in its synopsis in the tool's help, and no other option is (crec run --help listed
 * --size twice, and its synopsis lacked --quiet and --timings). */
Test(tool_args, each_help_documents_exactly_the_options_its_command_takes) {
  static const struct {
    const char *name, *value;
  } all[] = {{"--entry", "main"}, {"--input", "x=iota"}, {"--scalar", "n=1"}, {"--size", "x=4"},
             {"--iters", "2"},    {"--check", NULL},     {"--output", "x=f"}, {"--json", NULL},
             {"--format", "text"}, {"-o", "out.crecb"},  {"--cuda-dot", "g.dot"}, {"--loop-limit", "5"},
             {"--chip", "sm_80"}, {"--cubin", NULL},     {"--timings", NULL}, {"--quiet", NULL},
             {"--timeout", "3"},  {"--variants", "2"},   {"--profile", "p.json"}, {"--force", NULL},
             {"--require-device", NULL}, {"--early-start", NULL}};
  static const crec_tool_command commands[] = {CREC_TOOL_CMD_RUN, CREC_TOOL_CMD_BENCH, CREC_TOOL_CMD_PROFILE,
                                               CREC_TOOL_CMD_DUMP, CREC_TOOL_CMD_COMPILE};
  for (size_t c = 0; c < sizeof commands / sizeof commands[0]; c++) {
    const char *cmd = crec_tool_command_name(commands[c]);
    const char *help = crec_tool_help(commands[c]);
    int taken = 0;
    for (size_t o = 0; o < sizeof all / sizeof all[0]; o++) {
      /* what the parser says: an option of another command is refused as such */
      char *argv[12] = {"crec", (char *)cmd, "p.mlir", (char *)all[o].name, (char *)all[o].value};
      int argc = all[o].value ? 5 : 4;
      if (strcmp(all[o].name, "-o") != 0 && commands[c] == CREC_TOOL_CMD_COMPILE) argv[argc++] = "-o", argv[argc++] = "p.crecb";
      if (!strcmp(all[o].name, "--force")) argv[argc++] = "--profile", argv[argc++] = "p.json";
      crec_tool_args a;
      crec_tool_diag d;
      int rc = parse(&a, &d, argc, argv);
      int accepted = rc == 0 || !strstr(d.message, "is not an option of");
      if (rc == 0) crec_tool_args_free(&a);
      taken += accepted;
      int lines = option_lines(help, all[o].name);
      cr_assert_eq(lines, accepted, "'crec %s --help' documents %s %d times, but the command %s it", cmd, all[o].name,
                   lines, accepted ? "takes" : "refuses");
      cr_assert_eq(in_synopsis(cmd, all[o].name), accepted, "the synopsis of 'crec %s' %s %s, but the command %s it",
                   cmd, accepted ? "lacks" : "shows", all[o].name, accepted ? "takes" : "refuses");
    }
    cr_assert_geq(taken, 4, "'crec %s' takes only %d options: the parser refused them for another reason", cmd, taken);
    cr_assert_eq(option_lines(help, "--help"), 1, "'crec %s --help' does not document -h, --help once", cmd);
  }
}

/* -o - is standard output for dump and profile (the default), and compile's bytes go there. */
Test(tool_args, dash_o_dash_is_standard_output) {
  crec_tool_args a;
  crec_tool_diag d;
  cr_assert_eq(PARSE(&a, &d, "dump", "p.mlir", "-o", "-"), 0, "%s", d.message);
  cr_assert_null(a.out_path, "dump -o - names a file '%s'", a.out_path);
  crec_tool_args_free(&a);
  cr_assert_eq(PARSE(&a, &d, "profile", "p.mlir", "-o-", "--format", "json"), 0, "%s", d.message);
  cr_assert_null(a.out_path, "profile -o- names a file '%s'", a.out_path);
  crec_tool_args_free(&a);
  cr_assert_eq(PARSE(&a, &d, "compile", "p.mlir", "-o", "-"), 0, "%s", d.message);
  cr_assert_str_eq(a.out_path, "-");
  crec_tool_args_free(&a);
  /* a file called '-' is still reachable as ./- */
  cr_assert_eq(PARSE(&a, &d, "dump", "p.mlir", "-o", "./-"), 0, "%s", d.message);
  cr_assert_str_eq(a.out_path, "./-");
  crec_tool_args_free(&a);
}

Test(tool_args, force_goes_with_a_profile) {
  crec_tool_args a;
  crec_tool_diag d;
  cr_assert_eq(PARSE(&a, &d, "dump", "p.mlir", "--format", "html", "--profile", "p.json", "--force"), 0, "%s",
               d.message);
  cr_assert(a.force);
  crec_tool_args_free(&a);
  cr_assert_eq(PARSE(&a, &d, "dump", "p.mlir", "--force"), -1);
  cr_assert_str_eq(d.message, "--force draws another program's profile: it goes with --profile FILE");
  cr_assert_eq(PARSE(&a, &d, "run", "p.mlir", "--force"), -1);
  cr_assert_str_eq(d.message, "option '--force' is not an option of 'crec run' (try 'crec run --help')");
}

Test(tool_args, the_tool_prints_help_and_version_with_status_0) {
  tool_result r = tool_run("--help", NULL);
  cr_assert_eq(r.status, 0);
  cr_assert_str_eq(r.out, crec_tool_help(CREC_TOOL_CMD_NONE));
  cr_assert_str_eq(r.err, "");
  tool_result_free(&r);
  r = tool_run("bench", "--help", NULL);
  cr_assert_eq(r.status, 0);
  cr_assert_str_eq(r.out, crec_tool_help(CREC_TOOL_CMD_BENCH));
  tool_result_free(&r);
  r = tool_run("help", "run", NULL);
  cr_assert_str_eq(r.out, crec_tool_help(CREC_TOOL_CMD_RUN));
  tool_result_free(&r);
  r = tool_run("profile", "--help", NULL);
  cr_assert_eq(r.status, 0);
  cr_assert_str_eq(r.out, crec_tool_help(CREC_TOOL_CMD_PROFILE));
  cr_assert_str_eq(r.err, "");
  tool_result_free(&r);
  r = tool_run("help", "profile", NULL);
  cr_assert_str_eq(r.out, crec_tool_help(CREC_TOOL_CMD_PROFILE));
  tool_result_free(&r);
  r = tool_run("--version", NULL);
  cr_assert_eq(r.status, 0);
  char want[64];
  snprintf(want, sizeof want, "crec %s\n", crec_version());
  cr_assert_str_eq(r.out, want);
  tool_result_free(&r);
}

Test(tool_args, the_tool_reports_a_bad_command_line_in_one_line_with_status_2) {
  tool_result r = tool_run("run", "p.mlir", "--json", NULL);
  cr_assert_eq(r.status, 2);
  cr_assert_str_eq(r.out, "");
  cr_assert_str_eq(r.err, "crec: error: option '--json' is not an option of 'crec run' (try 'crec run --help')\n");
  tool_result_free(&r);
  r = tool_run_argv(1, (char *[]){"crec", NULL});
  cr_assert_eq(r.status, 2);
  cr_assert_eq(tool_count_lines(r.err), 1);
  cr_assert(strstr(r.err, "crec: error: no command given"));
  tool_result_free(&r);
}

Test(tool_args, loop_limit_defaults_to_a_generous_bound_and_0_lifts_it) {
  crec_tool_args a;
  crec_tool_diag d;
  cr_assert_eq(PARSE(&a, &d, "run", "p.mlir"), 0, "%s", d.message);
  cr_assert_eq(a.loop_limit, CREC_TOOL_LOOP_LIMIT);
  cr_assert_eq(CREC_TOOL_LOOP_LIMIT, 10000000, "--help promises 10000000");
  crec_tool_args_free(&a);
  cr_assert_eq(PARSE(&a, &d, "bench", "p.mlir", "--loop-limit", "0"), 0, "%s", d.message);
  cr_assert_eq(a.loop_limit, 0);
  crec_tool_args_free(&a);
  cr_assert_eq(PARSE(&a, &d, "run", "p.mlir", "--loop-limit=5000"), 0, "%s", d.message);
  cr_assert_eq(a.loop_limit, 5000);
  crec_tool_args_free(&a);
  cr_assert_neq(PARSE(&a, &d, "run", "p.mlir", "--loop-limit", "-3"), 0);
  cr_assert(strstr(d.message, "--loop-limit -3: expected a positive integer"), "%s", d.message);
  cr_assert_neq(PARSE(&a, &d, "run", "p.mlir", "--loop-limit", "5", "--loop-limit", "6"), 0);
  cr_assert(strstr(d.message, "--loop-limit is given twice"), "%s", d.message);
  cr_assert_neq(PARSE(&a, &d, "dump", "p.mlir", "--loop-limit", "5"), 0, "dump runs no loop");
}

Test(tool_args, variants_take_1_to_16_for_run_and_bench) {
  crec_tool_args a;
  crec_tool_diag d;
  cr_assert_eq(PARSE(&a, &d, "run", "p.mlir"), 0, "%s", d.message);
  cr_assert_eq(a.variants, 0, "not given: the record default (1)");
  crec_tool_args_free(&a);
  cr_assert_eq(PARSE(&a, &d, "bench", "p.mlir", "--variants", "2"), 0, "%s", d.message);
  cr_assert_eq(a.variants, 2);
  crec_tool_args_free(&a);
  cr_assert_eq(PARSE(&a, &d, "run", "p.mlir", "--variants=16"), 0, "%s", d.message);
  cr_assert_eq(a.variants, 16);
  crec_tool_args_free(&a);
  cr_assert_neq(PARSE(&a, &d, "run", "p.mlir", "--variants", "17"), 0);
  cr_assert(strstr(d.message, "--variants 17: must be between 1 and 16"), "%s", d.message);
  cr_assert_neq(PARSE(&a, &d, "bench", "p.mlir", "--variants", "0"), 0);
  cr_assert(strstr(d.message, "--variants 0: must be between 1 and 16"), "%s", d.message);
  cr_assert_neq(PARSE(&a, &d, "run", "p.mlir", "--variants", "2", "--variants", "3"), 0);
  cr_assert(strstr(d.message, "--variants is given twice"), "%s", d.message);
  cr_assert_neq(PARSE(&a, &d, "profile", "p.mlir", "--variants", "2"), 0, "profile records one graph");
  cr_assert_neq(PARSE(&a, &d, "dump", "p.mlir", "--variants", "2"), 0, "dump records nothing");
}
