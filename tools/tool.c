/* The crec tool's driver: parses the command line, lowers the program, and
 * runs `run`, `bench` or `dump`. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tool.h"

/* The first error diagnostic the front end reports, and its warnings as lines
 * to print once the program is lowered. */
typedef struct first_error {
  int have;
  char location[512];
  char message[1536];
  crec_tool_buf warnings;
} first_error;

static void on_diagnostic(void *user, const char *severity, const char *location, const char *message) {
  first_error *fe = user;
  if (!severity || !message) return;
  if (!strcmp(severity, "warning")) {
    /* one line each: the first line of the message */
    crec_tool_buf_puts(&fe->warnings, "crec: warning: ");
    if (location && *location) crec_tool_buf_printf(&fe->warnings, "%s: ", location);
    crec_tool_buf_printf(&fe->warnings, "%.*s\n", (int)strcspn(message, "\n"), message);
    return;
  }
  if (fe->have || strcmp(severity, "error") != 0) return;
  fe->have = 1;
  snprintf(fe->location, sizeof fe->location, "%s", location ? location : "");
  snprintf(fe->message, sizeof fe->message, "%s", message);
}

/* Drops the "crec_fn: " prefixes of a library message. */
static const char *library_reason(const char *m) {
  while (!strncmp(m, "crec_", 5)) {
    const char *p = m;
    while (isalnum((unsigned char)*p) || *p == '_') p++;
    if (p[0] != ':' || p[1] != ' ') break;
    m = p + 2;
  }
  return *m ? m : "no reason given";
}

/* Lowers the program; the front end's warnings go to `warnings`, one line each. */
static int load_program(const crec_tool_args *args, const crec_tool_backend *backend, crec_program **program,
                        crec_tool_buf *warnings, crec_tool_diag *d) {
  *program = NULL;
  struct stat st;
  if (stat(args->program, &st) != 0)
    return crec_tool_fail(d, args->program, "cannot open the program: %s", strerror(errno));
  if (!S_ISREG(st.st_mode)) return crec_tool_fail(d, args->program, "not a regular file");
  if (!backend->lower)
    return crec_tool_fail(d, args->program,
                          "this build of crec has no MLIR front end (crec_lower_mlir_file from lower/ is not linked)");
  first_error fe = {0};
  crec_lower_options options = CREC_LOWER_OPTIONS_INIT;
  options.entry = args->entry;
  options.diagnostic = on_diagnostic;
  options.diagnostic_user = &fe;
  crec_status s = backend->lower(args->program, &options, program);
  if (s == CREC_OK && *program) {
    *warnings = fe.warnings;
    return 0;
  }
  crec_tool_buf_free(&fe.warnings);
  crec_program_destroy(*program);
  *program = NULL;
  if (s == CREC_OK) return crec_tool_fail(d, args->program, "the front end returned no program");
  const char *message = crec_last_error();
  crec_tool_fail_message(d, args->program, NULL, *message ? message : crec_status_string(s));
  /* the library's message has no location: the front end's first error diagnostic may say more */
  if (!strcmp(d->where, args->program) && fe.have)
    crec_tool_fail(d, fe.location[0] ? fe.location : args->program, "%s", fe.message);
  return -1;
}

static int print_error(const crec_tool_diag *d, FILE *err) {
  crec_tool_diag_print(d, err);
  return CREC_TOOL_EXIT_ERROR;
}

static int write_output(const crec_tool_args *args, const char *text, size_t len, FILE *out, crec_tool_diag *d) {
  if (!args->out_path) {
    if (len && fwrite(text, 1, len, out) != len) return crec_tool_fail(d, NULL, "cannot write to standard output");
    return 0;
  }
  if (crec_tool_write_file(args->out_path, text, len, d)) return -1;
  fprintf(out, "wrote %s (%s, %zu bytes)\n", args->out_path, crec_tool_format_name(args->format), len);
  return 0;
}

static int do_dump(const crec_tool_args *args, crec_program *program, const crec_tool_backend *backend, FILE *out,
                   FILE *err, crec_tool_diag *d) {
  /* --cuda-dot records: check its inputs before printing anything */
  crec_tool_job job;
  size_t variants = 1; /* a --size list is refused here */
  if (args->cuda_dot &&
      (crec_tool_job_variants(args, &variants, d) || crec_tool_job_prepare(&job, args, program, 0, d)))
    return CREC_TOOL_EXIT_ERROR;
  char *text = NULL;
  size_t len = 0;
  int rc = crec_tool_dump_render(program, args->format, args->program, &text, &len, d);
  if (!rc) rc = write_output(args, text, len, out, d);
  free(text);
  if (rc || !args->cuda_dot) {
    if (args->cuda_dot) crec_tool_job_free(&job);
    return rc ? CREC_TOOL_EXIT_ERROR : CREC_TOOL_EXIT_OK;
  }
  int available = backend->device_available ? backend->device_available() : crec_device_available();
  if (!available) {
    fprintf(err, "crec: warning: --cuda-dot %s: not written: no CUDA device is available (%s)\n", args->cuda_dot,
            library_reason(crec_last_error()));
    rc = 0;
  } else if (!backend->cuda_dot) {
    rc = crec_tool_fail(d, args->cuda_dot,
                        "this build of crec cannot record graphs (crec_record from replay/ is not linked)");
  } else if (!(rc = backend->cuda_dot(&job, args->cuda_dot, d))) {
    fprintf(out, "wrote %s (the CUDA driver's DOT of the instantiated graph)\n", args->cuda_dot);
  }
  crec_tool_job_free(&job);
  return rc ? CREC_TOOL_EXIT_ERROR : CREC_TOOL_EXIT_OK;
}

static void free_jobs(crec_tool_job *jobs, size_t count) {
  for (size_t i = 0; jobs && i < count; i++) crec_tool_job_free(&jobs[i]);
  free(jobs);
}

/* Without a device: the summary, and what would have run. `bench --json` keeps
 * standard output a valid bench object (every measurement null) and says the
 * rest on standard error. */
static int no_device(const crec_tool_args *args, const crec_tool_job *jobs, size_t count, FILE *out, FILE *err,
                     crec_tool_diag *d) {
  char reason[1024];
  snprintf(reason, sizeof reason, "%s", library_reason(crec_last_error()));
  crec_tool_buf b = {0};
  if (crec_tool_job_summary(jobs, count, &b, d)) {
    crec_tool_buf_free(&b);
    return CREC_TOOL_EXIT_ERROR;
  }
  FILE *where = args->json ? err : out;
  if (b.data) fputs(b.data, where);
  const char *cmd = crec_tool_command_name(args->command);
  fprintf(where, "crec %s: no CUDA device is available: %s\n", cmd, reason);
  fprintf(where, "crec %s: the program was lowered and its inputs prepared; nothing was run\n", cmd);
  if (args->json)
    fputs("{\"nodes\": null, \"record_us\": null, \"eager_us\": null, \"replay_us\": null, "
          "\"replay_update_us\": null}\n", out);
  crec_tool_buf_free(&b);
  return CREC_TOOL_EXIT_OK;
}

static int do_execute(crec_tool_args *args, crec_program *program, const crec_tool_backend *backend, FILE *out,
                      FILE *err, crec_tool_diag *d) {
  size_t count = 1;
  if (crec_tool_job_variants(args, &count, d)) return CREC_TOOL_EXIT_ERROR;
  /* several sizes: by default, one replay with each */
  if (count > 1 && !args->iters_given) args->iters = count;
  crec_tool_job *jobs = calloc(count, sizeof *jobs);
  if (!jobs) {
    crec_tool_fail(d, NULL, "out of memory");
    return CREC_TOOL_EXIT_ERROR;
  }
  for (size_t v = 0; v < count; v++) {
    if (crec_tool_job_prepare(&jobs[v], args, program, v, d)) {
      free_jobs(jobs, v);
      return CREC_TOOL_EXIT_ERROR;
    }
  }
  int rc;
  int available = backend->device_available ? backend->device_available() : crec_device_available();
  if (!available) {
    rc = no_device(args, jobs, count, out, err, d);
  } else if (args->command == CREC_TOOL_CMD_RUN && backend->run) {
    rc = backend->run(jobs, count, out, err, d);
  } else if (args->command == CREC_TOOL_CMD_BENCH && backend->bench) {
    rc = backend->bench(&jobs[0], out, err, d);
  } else {
    crec_tool_fail(d, args->program,
                   "this build of crec cannot record or replay (crec_record and crec_exec_replay from replay/ are not linked)");
    rc = CREC_TOOL_EXIT_ERROR;
  }
  free_jobs(jobs, count);
  return rc;
}

int crec_tool_main(int argc, char **argv, FILE *out, FILE *err, const crec_tool_backend *backend) {
  crec_tool_args args;
  crec_tool_diag d = {{0}, {0}};
  if (crec_tool_parse_args(argc, argv, &args, &d)) return print_error(&d, err);
  if (args.version) {
    fprintf(out, "crec %s\n", crec_version());
    crec_tool_args_free(&args);
    return CREC_TOOL_EXIT_OK;
  }
  if (args.help) {
    fputs(crec_tool_help(args.command), out);
    crec_tool_args_free(&args);
    return CREC_TOOL_EXIT_OK;
  }
  crec_program *program = NULL;
  crec_tool_buf warnings = {0};
  int rc;
  if (load_program(&args, backend, &program, &warnings, &d)) {
    rc = CREC_TOOL_EXIT_ERROR;
  } else if (args.command == CREC_TOOL_CMD_DUMP) {
    rc = do_dump(&args, program, backend, out, err, &d);
  } else {
    rc = do_execute(&args, program, backend, out, err, &d);
  }
  /* an error stays the one line on stderr; otherwise the front end's warnings follow */
  if (rc == CREC_TOOL_EXIT_ERROR) {
    if (d.message[0]) crec_tool_diag_print(&d, err);
  } else if (warnings.data) {
    fputs(warnings.data, err);
  }
  crec_tool_buf_free(&warnings);
  crec_program_destroy(program);
  crec_tool_args_free(&args);
  fflush(out);
  fflush(err);
  return rc;
}
