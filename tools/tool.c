/* The crec tool's driver: parses the command line, lowers the program (or
 * reads a program file), and runs `run`, `bench`, `profile`, `dump` or `compile`. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* Whether `path` is a program file: by its first bytes, or by its name when
 * they are not a program file's (a damaged one then gets the reader's error). */
static int is_program_file(const char *path) {
  unsigned char head[8];
  size_t n = 0;
  FILE *f = fopen(path, "rb");
  if (f) {
    n = fread(head, 1, sizeof head, f);
    fclose(f);
  }
  if (crec_tool_is_program_file(head, n)) return 1;
  size_t len = strlen(path);
  return len > 6 && !strcmp(path + len - 6, ".crecb");
}

/* Reads a program file (serialize.h) into `*program`, and its target chips into `target`. */
static int read_program_file(const crec_tool_args *args, crec_program **program, char *target, size_t target_size,
                             crec_tool_diag *d) {
  const char *cmd = crec_tool_command_name(args->command);
  if (args->command == CREC_TOOL_CMD_COMPILE)
    return crec_tool_fail(d, args->program, "crec compile: this is already a program file; compile takes MLIR");
  if (args->entry)
    return crec_tool_fail(d, args->program,
                          "crec %s: --entry %s: a program file holds one lowered entry function; --entry is for MLIR "
                          "input (choose the entry at 'crec compile')",
                          cmd, args->entry);
  char *bytes = NULL;
  size_t size = 0;
  if (crec_tool_read_file(args->program, &bytes, &size, d)) return -1;
  /* the library's message names the call and the byte: keep it whole */
  if (crec_program_deserialize(bytes, size, program) != CREC_OK) {
    crec_tool_fail(d, args->program, "%s", crec_last_error());
    free(bytes);
    return -1;
  }
  crec_program_file_info info = CREC_PROGRAM_FILE_INFO_INIT;
  if (crec_program_file_get_info(bytes, size, &info) != CREC_OK) {
    crec_tool_fail(d, args->program, "%s", crec_last_error());
    free(bytes);
    crec_program_destroy(*program);
    *program = NULL;
    return -1;
  }
  free(bytes);
  snprintf(target, target_size, "%s", info.target);
  return 0;
}

/* Lowers the program (or reads it from a program file, noting its target chips
 * in `target`); the front end's warnings go to `warnings`, one line each. */
static int load_program(crec_tool_args *args, const crec_tool_backend *backend, crec_program **program,
                        char *target, size_t target_size, crec_tool_buf *warnings, crec_tool_diag *d) {
  *program = NULL;
  struct stat st;
  if (stat(args->program, &st) != 0)
    return crec_tool_fail(d, args->program, "cannot open the program: %s", strerror(errno));
  if (!S_ISREG(st.st_mode)) return crec_tool_fail(d, args->program, "not a regular file");
  if (is_program_file(args->program)) {
    args->program_file = 1;
    return read_program_file(args, program, target, target_size, d);
  }
  if (!backend->lower)
    return crec_tool_fail(d, args->program,
                          "this build of crec has no MLIR front end (crec_lower_mlir_file from lower/ is not linked)");
  first_error fe = {0};
  crec_lower_options options = CREC_LOWER_OPTIONS_INIT;
  options.entry = args->entry;
  options.chip = args->chip;
  options.cubin = args->cubin;
  options.early_start = args->early_start;
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
  if (strstr(message, "CREC_WITH_MLIR=OFF")) {
    size_t n = strlen(d->message);
    snprintf(d->message + n, sizeof d->message - n,
             "; it reads program files (PROG.crecb) that 'crec compile' of a crec with MLIR writes");
  }
  /* the library's message has no location: the front end's first error diagnostic may say more */
  if (!strcmp(d->where, args->program) && fe.have)
    crec_tool_fail(d, fe.location[0] ? fe.location : args->program, "%s", fe.message);
  /* a chip the lowering refuses is the option's fault */
  if (args->chip && strstr(d->message, "chip '") && strstr(d->message, args->chip))
    snprintf(d->where, sizeof d->where, "--chip %s", args->chip);
  return -1;
}

/* A program file whose modules target chips that device 0 cannot run is refused
 * before recording, naming both (the driver's own error would come later and say
 * less). `target` is empty for a program lowered from MLIR in this process. */
static int check_device_chip(const crec_tool_args *args, const char *target, crec_tool_diag *d) {
  if (!args->program_file || !target[0]) return 0;
  char name[256];
  int major = 0, minor = 0;
  if (crec_device_describe(0, name, sizeof name, &major, &minor) != CREC_OK)
    return crec_tool_fail_library(d, args->program, "reading device 0's chip");
  char why[256];
  if (crec_tool_chip_runs(target, major, minor, why, sizeof why)) return 0;
  return crec_tool_fail(d, args->program,
                        "crec %s: the program file's kernels target %s, which device 0 (%s, sm_%d%d) cannot run: %s; "
                        "compile it for this device: crec compile PROG.mlir --chip sm_%d%d -o %s",
                        crec_tool_command_name(args->command), target, name, major, minor, why,
                        major * 10 + minor > 90 ? 9 : major, major * 10 + minor > 90 ? 0 : minor, args->program);
}

/* crec compile: the lowered program, written as a program file. */
static int do_compile(const crec_tool_args *args, const crec_program *program, FILE *out, crec_tool_progress *progress,
                      crec_tool_diag *d) {
  crec_tool_progress_label(progress, "compile: serialize");
  void *bytes = NULL;
  size_t size = 0;
  if (crec_program_serialize(program, &bytes, &size) != CREC_OK) {
    /* a program with host code: the library's message says what and why */
    crec_tool_fail(d, args->program, "crec compile: %s", crec_last_error());
    return CREC_TOOL_EXIT_ERROR;
  }
  crec_tool_progress_step(progress);
  crec_tool_progress_label(progress, "compile: writing");
  crec_program_file_info info = CREC_PROGRAM_FILE_INFO_INIT;
  int to_stdout = !strcmp(args->out_path, "-");
  int rc = crec_program_file_get_info(bytes, size, &info) != CREC_OK
               ? crec_tool_fail(d, args->program, "crec compile: %s", crec_last_error())
           : to_stdout ? (fwrite(bytes, 1, size, out) == size && fflush(out) == 0
                              ? 0
                              : crec_tool_fail(d, "-o -", "crec compile: cannot write to standard output: %s",
                                               strerror(errno)))
                       : crec_tool_write_file_atomic(args->out_path, bytes, size, d);
  crec_free(bytes);
  crec_tool_progress_step(progress);
  crec_tool_progress_finish(progress);
  if (rc) {
    if (!strncmp(d->where, args->out_path, sizeof d->where)) {
      char message[sizeof d->message];
      snprintf(message, sizeof message, "%s", d->message);
      crec_tool_fail(d, args->out_path, "crec compile -o: %s", message);
    }
    return CREC_TOOL_EXIT_ERROR;
  }
  if (to_stdout) return CREC_TOOL_EXIT_OK; /* standard output holds the file alone */
  fprintf(out, "wrote %s (program file, %zu bytes, format %u, target %s)\n", args->out_path, size,
          (unsigned)info.format_version, info.target);
  return CREC_TOOL_EXIT_OK;
}

static int print_error(const crec_tool_diag *d, FILE *err) {
  crec_tool_diag_print(d, err);
  return CREC_TOOL_EXIT_ERROR;
}

/* Writes dump's or profile's output to -o FILE, or alone to `out`. A profile
 * took a device's time to measure: it replaces FILE whole or not at all. */
static int write_output(const crec_tool_args *args, const char *text, size_t len, FILE *out, crec_tool_diag *d) {
  if (!args->out_path) {
    if (len && fwrite(text, 1, len, out) != len) return crec_tool_fail(d, NULL, "cannot write to standard output");
    return 0;
  }
  if (args->command == CREC_TOOL_CMD_PROFILE) {
    if (crec_tool_write_file_atomic(args->out_path, text, len, d)) {
      char message[sizeof d->message];
      snprintf(message, sizeof message, "%s", d->message);
      return crec_tool_fail(d, args->out_path, "crec profile -o: %s", message);
    }
  } else if (crec_tool_write_file(args->out_path, text, len, d)) {
    return -1;
  }
  fprintf(out, "wrote %s (%s, %zu bytes)\n", args->out_path, crec_tool_format_name(args->format), len);
  return 0;
}

/* dump --profile FILE: the profile's JSON text, for the HTML page (which reads
 * and checks it); -1 on an error (in `d`). Another program's profile is one
 * (the page would shade the wrong nodes), unless --force. */
static int load_profile(const crec_tool_args *args, const crec_program *program, char **text, crec_tool_diag *d) {
  *text = NULL;
  if (args->format != CREC_TOOL_FORMAT_HTML)
    return crec_tool_fail(d, args->profile, "--profile draws on the HTML page: give --format html");
  size_t size = 0;
  if (crec_tool_read_file(args->profile, text, &size, d)) return -1;
  const char *p = *text;
  while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
  const char *why = strlen(*text) != size ? "it holds a NUL byte"
                    : *p != '{'            ? "it is not a JSON object"
                    : !strstr(p, "\"crec-profile\"") ? "it has no \"format\": \"crec-profile\""
                                                   : NULL;
  if (why) {
    free(*text);
    *text = NULL;
    return crec_tool_fail(d, args->profile, "not a crec profile (docs/profile.md): %s", why);
  }
  char differs[512];
  if (!args->force && !crec_tool_profile_matches(program, *text, differs, sizeof differs)) {
    free(*text);
    *text = NULL;
    return crec_tool_fail(d, args->profile,
                          "crec dump --profile: not a profile of %s: %s (another program's? give --force to draw it "
                          "anyway)",
                          args->program, differs);
  }
  return 0;
}

static int do_dump(const crec_tool_args *args, crec_program *program, const char *target,
                   const crec_tool_backend *backend, FILE *out, FILE *err, crec_tool_diag *d) {
  /* --cuda-dot records: check its inputs before printing anything */
  crec_tool_job job;
  size_t variants = 1; /* a --size list is refused here */
  if (args->cuda_dot &&
      (crec_tool_job_variants(args, &variants, d) || crec_tool_job_prepare(&job, args, program, 0, d)))
    return CREC_TOOL_EXIT_ERROR;
  char *profile = NULL;
  if (args->profile && load_profile(args, program, &profile, d)) {
    if (args->cuda_dot) crec_tool_job_free(&job);
    return CREC_TOOL_EXIT_ERROR;
  }
  char *text = NULL;
  size_t len = 0;
  int rc = crec_tool_dump_render(program, args->format, args->program, profile, &text, &len, d);
  free(profile);
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
  } else if (check_device_chip(args, target, d)) {
    rc = -1;
  } else if (!(rc = backend->cuda_dot(&job, args->cuda_dot, d))) {
    fprintf(out, "wrote %s (the CUDA driver's DOT of the instantiated graph)\n", args->cuda_dot);
  }
  crec_tool_job_free(&job);
  return rc ? CREC_TOOL_EXIT_ERROR : CREC_TOOL_EXIT_OK;
}

/* crec profile on a device: the backend records and measures, and the profile
 * is written here in the format asked for (html: dump's page with the profile
 * drawn on it). */
static int do_profile(const crec_tool_args *args, const crec_tool_job *job, const crec_tool_backend *backend, FILE *out,
                      crec_tool_diag *d) {
  crec_profile *profile = NULL;
  int rc = backend->profile(job, &profile, d);
  if (rc != CREC_TOOL_EXIT_OK) {
    crec_profile_destroy(profile);
    return rc;
  }
  crec_profile_format format = args->format == CREC_TOOL_FORMAT_TEXT ? CREC_PROFILE_TEXT : CREC_PROFILE_JSON;
  char *dumped = NULL, *page = NULL;
  size_t len = 0;
  if (crec_profile_dump(profile, format, &dumped, &len) != CREC_OK) {
    rc = crec_tool_fail_library(d, args->program, "crec profile: crec_profile_dump");
  } else if (args->format == CREC_TOOL_FORMAT_HTML) {
    rc = crec_tool_dump_render(job->program, CREC_TOOL_FORMAT_HTML, args->program, dumped, &page, &len, d);
    if (!rc) rc = write_output(args, page, len, out, d);
  } else {
    rc = write_output(args, dumped, len, out, d);
  }
  free(page);
  crec_free(dumped);
  crec_profile_destroy(profile);
  return rc ? CREC_TOOL_EXIT_ERROR : CREC_TOOL_EXIT_OK;
}

static void free_jobs(crec_tool_job *jobs, size_t count) {
  for (size_t i = 0; jobs && i < count; i++) crec_tool_job_free(&jobs[i]);
  free(jobs);
}

/* Without a device: the summary, and what would have run. `bench --json` keeps
 * standard output a valid bench object (every measurement null) and says the
 * rest on standard error; `profile` in json or html to standard output keeps
 * it empty, so that a pipe reading a profile gets no text instead. */
static int no_device(const crec_tool_args *args, const crec_tool_job *jobs, size_t count, FILE *out, FILE *err,
                     crec_tool_diag *d) {
  char reason[1024];
  snprintf(reason, sizeof reason, "%s", library_reason(crec_last_error()));
  crec_tool_buf b = {0};
  if (crec_tool_job_summary(jobs, count, &b, d)) {
    crec_tool_buf_free(&b);
    return CREC_TOOL_EXIT_ERROR;
  }
  int profile_out = args->command == CREC_TOOL_CMD_PROFILE && args->format != CREC_TOOL_FORMAT_TEXT && !args->out_path;
  FILE *where = args->json || args->quiet || profile_out ? err : out;
  const char *cmd = crec_tool_command_name(args->command);
  /* --require-device (CREC_REQUIRE_DEVICE=1): a CI job that must run the program
   * fails here, in one line, rather than passing for work nobody did */
  const char *required = getenv("CREC_REQUIRE_DEVICE");
  if (args->require_device || (required && required[0] && strcmp(required, "0") != 0)) {
    crec_tool_buf_free(&b);
    crec_tool_fail(d, NULL, "crec %s %s: no CUDA device is available: %s", cmd,
                   args->require_device ? "--require-device" : "(CREC_REQUIRE_DEVICE=1)", reason);
    crec_tool_diag_print(d, err);
    return CREC_TOOL_EXIT_NO_DEVICE;
  }
  if (b.data) fputs(b.data, where);
  fprintf(where, "crec %s: no CUDA device is available: %s\n", cmd, reason);
  fprintf(where, "crec %s: the program was %s and its inputs prepared; nothing was run\n", cmd,
          args->program_file ? "read" : "lowered");
  if (args->timings) crec_tool_print_timings(args, 0, 0, 0, NULL, where);
  if (args->json)
    fputs("{\"nodes\": null, \"record_us\": null, \"eager_us\": null, \"replay_us\": null, "
          "\"replay_update_us\": null}\n", out);
  crec_tool_buf_free(&b);
  return CREC_TOOL_EXIT_OK;
}

void crec_tool_print_timings(const crec_tool_args *args, double device, double recorded, double first,
                             const crec_exec_stats *st, FILE *out) {
  const crec_tool_times *t = &args->times;
  double origin = t->start > 0 ? t->start : t->main;
  fprintf(out, "timings, in ms since %s (--timings):\n", t->start > 0 ? "the process started" : "main began");
  if (t->start > 0) fprintf(out, "  %-14s %9.1f  the executable and its libraries loaded\n", "main", (t->main - origin) / 1e3);
  const char *how = args->program_file ? "read from a program file"
                    : t->cache_hit == 1 ? "lowered: the persistent cache answered"
                    : t->cache_hit == 0 ? "lowered from MLIR (the persistent cache had no entry)"
                                        : "lowered from MLIR";
  fprintf(out, "  %-14s %9.1f  %s\n", "program", (t->program - origin) / 1e3, how);
  if (!st) return;
  fprintf(out, "  %-14s %9.1f  CUDA initialized, its context made, the buffers allocated and filled\n", "device",
          (device - origin) / 1e3);
  fprintf(out,
          "  %-14s %9.1f  %" PRIu64 " module%s loaded in %.1f ms, %" PRIu64 " of them compiled from PTX by the driver\n",
          "recorded", (recorded - origin) / 1e3, st->modules_loaded, st->modules_loaded == 1 ? "" : "s",
          (double)st->module_load_us / 1e3, st->modules_jit);
  fprintf(out, "  %-14s %9.1f  replayed and synchronized\n", "first replay", (first - origin) / 1e3);
}

/* --variants N above 1 of a program with device control flow: CUDA instantiates a
 * graph with conditional nodes once, so crec_record would refuse it after the
 * device and the inputs were made ready. Said here, before either, with or
 * without a device. */
static int check_variants(const crec_tool_args *args, const crec_program *program, crec_tool_diag *d) {
  if (args->variants <= 1) return 0;
  const char *cmd = crec_tool_command_name(args->command);
  size_t n = crec_program_command_count(program);
  for (size_t i = 0; i < n; i++) {
    crec_command_info info = CREC_COMMAND_INFO_INIT;
    if (crec_command_get_info(program, crec_program_command(program, i), &info) != CREC_OK)
      return crec_tool_fail_library(d, args->program, "reading the program's commands");
    if (info.kind != CREC_COMMAND_WHILE && info.kind != CREC_COMMAND_IF && info.kind != CREC_COMMAND_SWITCH) continue;
    return crec_tool_fail(d, args->program,
                          "crec %s --variants %llu: the program has device control flow (command #%zu '%s', %s %s), "
                          "and CUDA instantiates a graph with conditional nodes once: leave --variants out",
                          cmd, (unsigned long long)args->variants, i, info.name,
                          info.kind == CREC_COMMAND_IF ? "an" : "a", crec_command_kind_name(info.kind));
  }
  return 0;
}

static int do_execute(crec_tool_args *args, crec_program *program, const char *target,
                      const crec_tool_backend *backend, FILE *out, FILE *err, crec_tool_diag *d) {
  size_t count = 1;
  if (check_variants(args, program, d) || crec_tool_job_variants(args, &count, d)) return CREC_TOOL_EXIT_ERROR;
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
  } else if (check_device_chip(args, target, d)) {
    rc = CREC_TOOL_EXIT_ERROR;
  } else if (args->command == CREC_TOOL_CMD_RUN && backend->run) {
    rc = backend->run(jobs, count, out, err, d);
  } else if (args->command == CREC_TOOL_CMD_BENCH && backend->bench) {
    rc = backend->bench(&jobs[0], out, err, d);
  } else if (args->command == CREC_TOOL_CMD_PROFILE && backend->profile) {
    rc = do_profile(args, &jobs[0], backend, out, d);
  } else if (args->command == CREC_TOOL_CMD_PROFILE) {
    crec_tool_fail(d, args->program,
                   "this build of crec cannot profile (crec_exec_profile from replay/ is not linked)");
    rc = CREC_TOOL_EXIT_ERROR;
  } else {
    crec_tool_fail(d, args->program,
                   "this build of crec cannot record or replay (crec_record and crec_exec_replay from replay/ are not linked)");
    rc = CREC_TOOL_EXIT_ERROR;
  }
  free_jobs(jobs, count);
  return rc;
}

/* crec cache [stats|clear]: the persistent cache of lowered programs (crec/lower.h);
 * -1 on an error (in `d`). */
static int do_cache(const crec_tool_args *args, FILE *out, crec_tool_diag *d) {
  crec_lower_disk_cache_info info = CREC_LOWER_DISK_CACHE_INFO_INIT;
  if (!strcmp(args->program, "clear")) {
    uint64_t removed = 0;
    if (crec_lower_disk_cache_clear(&removed) != CREC_OK) return crec_tool_fail(d, NULL, "crec cache clear: %s", crec_last_error());
    fprintf(out, "removed %llu entries\n", (unsigned long long)removed);
    return CREC_TOOL_EXIT_OK;
  }
  if (crec_lower_disk_cache_get_info(&info) != CREC_OK) return crec_tool_fail(d, NULL, "crec cache: %s", crec_last_error());
  const char *off = getenv("CREC_CACHE");
  fprintf(out, "directory: %s\n", info.dir[0] ? info.dir : "(none: set CREC_CACHE_DIR, XDG_CACHE_HOME or HOME)");
  fprintf(out, "in use:    %s\n", info.enabled ? "yes"
                                  : off && !strcmp(off, "0") ? "no (CREC_CACHE=0)"
                                                             : "no (the directory is not private to this user)");
  fprintf(out, "entries:   %llu (%llu bytes)\n", (unsigned long long)info.entries, (unsigned long long)info.bytes);
  fprintf(out, "cap:       %llu bytes (CREC_CACHE_MAX_BYTES)\n", (unsigned long long)info.max_bytes);
  return CREC_TOOL_EXIT_OK;
}

/* Brings up CUDA (the driver, device 0's primary context) while the main
 * thread lowers or reads the program: run, bench and profile need both, and neither
 * waits for the other. Failures are left for the main thread to find again and
 * report. */
static void *warm_device(void *unused) {
  (void)unused;
  crec_stream s;
  if (crec_device_available() && crec_stream_create(0, &s) == CREC_OK) crec_stream_destroy(s);
  return NULL;
}

int crec_tool_main(int argc, char **argv, FILE *out, FILE *err, const crec_tool_backend *backend) {
  crec_tool_times times = {crec_tool_process_start_us(), crec_tool_now_us(), 0, -1};
  crec_tool_args args;
  crec_tool_diag d = {{0}, {0}, false, false};
  if (crec_tool_parse_args(argc, argv, &args, &d)) return print_error(&d, err);
  args.times = times;
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
  if (args.command == CREC_TOOL_CMD_CACHE) {
    int rc = do_cache(&args, out, &d);
    if (rc < 0) rc = print_error(&d, err);
    crec_tool_args_free(&args);
    return rc;
  }
  crec_program *program = NULL;
  crec_tool_buf warnings = {0};
  char target[256] = "";
  /* compile's steps: lowering, serializing, writing (drawn only on a terminal) */
  crec_tool_progress progress;
  crec_tool_progress_start(&progress, args.command == CREC_TOOL_CMD_COMPILE ? err : NULL, "compile: lowering", 3);
  crec_tool_progress_label(&progress, "compile: lowering");
  int rc;
  crec_lower_cache_stats cache0 = CREC_LOWER_CACHE_STATS_INIT, cache1 = CREC_LOWER_CACHE_STATS_INIT;
  int cache_known = crec_lower_cache_get_stats(&cache0) == CREC_OK;
  pthread_t warm;
  int warming = (args.command == CREC_TOOL_CMD_RUN || args.command == CREC_TOOL_CMD_BENCH ||
                 args.command == CREC_TOOL_CMD_PROFILE) &&
                pthread_create(&warm, NULL, warm_device, NULL) == 0;
  int loaded = load_program(&args, backend, &program, target, sizeof target, &warnings, &d);
  args.times.program = crec_tool_now_us();
  if (warming) pthread_join(warm, NULL);
  if (!args.program_file && cache_known && crec_lower_cache_get_stats(&cache1) == CREC_OK)
    args.times.cache_hit = cache1.disk_hits > cache0.disk_hits ? 1 : cache1.disk_misses > cache0.disk_misses ? 0 : -1;
  if (loaded) {
    rc = CREC_TOOL_EXIT_ERROR;
  } else if (args.command == CREC_TOOL_CMD_COMPILE) {
    crec_tool_progress_step(&progress);
    rc = do_compile(&args, program, out, &progress, &d);
  } else if (args.command == CREC_TOOL_CMD_DUMP) {
    rc = do_dump(&args, program, target, backend, out, err, &d);
  } else if (args.quiet) {
    /* crec's own lines go nowhere; the program's output still reaches standard output */
    FILE *null = fopen("/dev/null", "w");
    if (!null) {
      crec_tool_fail(&d, "--quiet", "crec run: cannot open /dev/null to leave crec's own lines out: %s",
                     strerror(errno));
      rc = CREC_TOOL_EXIT_ERROR;
    } else {
      rc = do_execute(&args, program, target, backend, null, err, &d);
      fclose(null);
    }
  } else {
    rc = do_execute(&args, program, target, backend, out, err, &d);
  }
  crec_tool_progress_finish(&progress);
  /* an error stays the one line on stderr; otherwise the front end's warnings follow */
  if (rc == CREC_TOOL_EXIT_ERROR) {
    if (d.message[0]) crec_tool_diag_print(&d, err);
    if (d.device_assert) rc = CREC_TOOL_EXIT_ASSERT;
    if (d.abandoned) {
      /* run --timeout: the device still runs an execution, and freeing what it
       * uses (or the driver's teardown) could wait for it forever */
      fflush(out);
      fflush(err);
      fflush(stdout);
      _exit(CREC_TOOL_EXIT_TIMEOUT);
    }
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
