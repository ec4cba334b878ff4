/* The crec tool's internal library (crec_tool_core): command-line parsing,
 * input specs and scalar values, output printing, statistics and the bench
 * report, dumps (text, json, dot, svg, html), and the subcommands.
 *
 * Everything here runs without a GPU and without the MLIR front end: the parts
 * that need them (lowering, recording, replaying) are reached through a
 * crec_tool_backend, so the CPU suites can drive the whole tool with programs
 * built through the C API. */
#ifndef CREC_TOOL_H
#define CREC_TOOL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "crec/crec.h"

/* Exit statuses ('crec --help' lists them). */
enum {
  CREC_TOOL_EXIT_OK = 0,
  CREC_TOOL_EXIT_MISMATCH = 1,
  CREC_TOOL_EXIT_ERROR = 2,
  CREC_TOOL_EXIT_ASSERT = 3,
  CREC_TOOL_EXIT_TIMEOUT = 4, /* run --timeout: an execution ran past it, and the device still runs it */
  CREC_TOOL_EXIT_NO_DEVICE = 5 /* run, bench, profile --require-device (or CREC_REQUIRE_DEVICE=1): no CUDA device */
};

/* ---- diagnostics ---------------------------------------------------------- */

/* One error: where it is (an MLIR location "file:line:col", a file, or a
 * command-line argument; may be empty) and what is wrong. Printed as the one
 * line `crec: error: WHERE: MESSAGE`. */
typedef struct crec_tool_diag {
  char where[512];
  char message[1536];
  bool device_assert; /* the error is a kernel's failed assertion (CREC_TOOL_EXIT_ASSERT) */
  bool abandoned;     /* run --timeout: work still runs on the device; the process exits at once
                         (CREC_TOOL_EXIT_TIMEOUT) without freeing what that work uses */
} crec_tool_diag;

/* Fills `d` (which may be NULL) and returns -1, the failure value of every
 * int-returning crec_tool function. */
int crec_tool_fail(crec_tool_diag *d, const char *where, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Prints `d` as one line on `err`. */
void crec_tool_diag_print(const crec_tool_diag *d, FILE *err);
/* Turns a failed library call's crec_last_error() into `d`: drops the
 * "crec_fn: " prefixes, and uses a leading "file:line:col: " as the location
 * (else `fallback_where`). Returns -1. */
int crec_tool_fail_library(crec_tool_diag *d, const char *fallback_where, const char *context);
/* As crec_tool_fail_library(), for a library message `message`. */
int crec_tool_fail_message(crec_tool_diag *d, const char *fallback_where, const char *context,
                           const char *message);

/* ---- a growable string ----------------------------------------------------- */

typedef struct crec_tool_buf {
  char *data;
  size_t len, cap;
  int failed; /* an allocation failed; the contents are incomplete */
} crec_tool_buf;

void crec_tool_buf_putn(crec_tool_buf *b, const char *s, size_t n);
void crec_tool_buf_puts(crec_tool_buf *b, const char *s);
void crec_tool_buf_printf(crec_tool_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends `s` as a JSON string literal, escaping '<', '>' and '&' too so the
 * result can sit inside an HTML <script> element. */
void crec_tool_buf_json_string(crec_tool_buf *b, const char *s);
/* Appends `s` with HTML's special characters escaped. */
void crec_tool_buf_html(crec_tool_buf *b, const char *s);
void crec_tool_buf_free(crec_tool_buf *b);

/* ---- command line ---------------------------------------------------------- */

typedef enum crec_tool_command {
  CREC_TOOL_CMD_NONE = 0,
  CREC_TOOL_CMD_RUN,
  CREC_TOOL_CMD_BENCH,
  CREC_TOOL_CMD_DUMP,
  CREC_TOOL_CMD_COMPILE,
  CREC_TOOL_CMD_CACHE,
  CREC_TOOL_CMD_PROFILE
} crec_tool_command;

typedef enum crec_tool_format {
  CREC_TOOL_FORMAT_TEXT = 0,
  CREC_TOOL_FORMAT_JSON,
  CREC_TOOL_FORMAT_DOT,
  CREC_TOOL_FORMAT_SVG,
  CREC_TOOL_FORMAT_HTML
} crec_tool_format;

/* NAME=VALUE from the command line; `arg` is the whole option as typed
 * ("--input x=iota"), for error messages. Strings point into argv. */
typedef struct crec_tool_pair {
  const char *name;  /* NUL-terminated copy owned by crec_tool_args */
  const char *value;
  const char *arg;   /* owned by crec_tool_args */
} crec_tool_pair;

/* Moments of one run, for run --timings: microseconds of CLOCK_MONOTONIC
 * (crec_tool_now_us), 0 where not reached. */
typedef struct crec_tool_times {
  double start;   /* the process started (crec_tool_process_start_us; 0 when unknown) */
  double main;    /* crec_tool_main began: the executable and its libraries are loaded */
  double program; /* the program was lowered or read */
  int cache_hit;  /* lowered: 1 the persistent cache answered, 0 it had no entry, -1 not asked (off) */
} crec_tool_times;

typedef struct crec_tool_args {
  crec_tool_command command;
  int help;          /* --help: print the (sub)command's help */
  int version;       /* --version */
  const char *program;
  const char *entry;
  crec_tool_pair *inputs;
  size_t num_inputs;
  crec_tool_pair *scalars;
  size_t num_scalars;
  crec_tool_pair *outputs;
  size_t num_outputs;
  crec_tool_pair *sizes;
  size_t num_sizes;
  uint64_t iters;    /* --iters, or the subcommand's default */
  int iters_given;
  int check;
  int json;
  crec_tool_format format;
  const char *out_path; /* dump -o, compile -o, profile -o; NULL: standard output (for compile, "-") */
  const char *chip;     /* compile --chip: the chip to lower for (NULL: the lowering's default) */
  int cubin;            /* compile --cubin: kernels as cubins for the chip (crec_lower_options.cubin) */
  int early_start;      /* compile --early-start: compiled kernels wait at entry (crec_lower_options.early_start) */
  int program_file;     /* set once loaded: `program` is a program file (.crecb), not MLIR */
  const char *cuda_dot;
  const char *profile;  /* dump --profile: a profile's JSON to draw on the HTML page */
  int force;            /* dump --force: draw a profile that does not match the program */
  uint64_t loop_limit; /* --loop-limit: for loops without their own; 0 none */
  uint64_t variants;   /* --variants: executable graphs of the recording (crec_record_options.variants); 0 not given */
  int timings;         /* run --timings: print when each phase ended */
  int quiet;           /* run --quiet: only what the program prints reaches standard output */
  int require_device;  /* run, bench, profile --require-device: no CUDA device is an error (exit 5) */
  uint64_t timeout_s;  /* run --timeout: seconds each execution may take; 0 none */
  crec_tool_times times;
} crec_tool_args;

/* Default --iters of run, bench and profile. */
#define CREC_TOOL_RUN_ITERS 1
#define CREC_TOOL_BENCH_ITERS 100
#define CREC_TOOL_PROFILE_ITERS 20
/* Default --loop-limit: a generous bound that still ends a stuck loop within a minute. */
#define CREC_TOOL_LOOP_LIMIT 10000000

/* Parses argv (argv[0] is the program name). On failure fills `d`, returns -1,
 * and leaves `args` freeable. */
int crec_tool_parse_args(int argc, char **argv, crec_tool_args *args, crec_tool_diag *d);
void crec_tool_args_free(crec_tool_args *args);
/* Returns "run", "bench", "dump", "compile", "cache", "profile" (or "" for none). */
const char *crec_tool_command_name(crec_tool_command command);
/* Returns the help text of `command` (the tool's when CREC_TOOL_CMD_NONE). */
const char *crec_tool_help(crec_tool_command command);
/* Returns "text", "json", "dot", "svg" or "html". */
const char *crec_tool_format_name(crec_tool_format format);

/* ---- values, specs and element types --------------------------------------- */

/* Parses `text` as a value of scalar type `type` (whole string, decimal or
 * 0x-hex integers, C floats incl. inf and nan). Returns 0, or -1 with the
 * reason in `d` (where left empty for the caller to fill). */
int crec_tool_parse_scalar(const char *text, crec_type type, crec_value *out, crec_tool_diag *d);

typedef enum crec_tool_spec_kind {
  CREC_TOOL_SPEC_FILL = 0,
  CREC_TOOL_SPEC_IOTA,
  CREC_TOOL_SPEC_RANDOM,
  CREC_TOOL_SPEC_FILE
} crec_tool_spec_kind;

/* An input SPEC: `fill:V`, `iota`, `random:SEED`, or a raw binary file path. */
typedef struct crec_tool_spec {
  crec_tool_spec_kind kind;
  const char *text;      /* the whole spec as given */
  const char *value;     /* fill: V as given */
  int value_is_integer;  /* fill: V reads as an integer */
  int64_t ivalue;        /* fill: integer V (bit pattern for values above INT64_MAX) */
  double fvalue;         /* fill: V as a double */
  uint64_t seed;         /* random */
  const char *path;      /* file */
} crec_tool_spec;

/* Parses a SPEC (strings keep pointing into `text`). A path must name an
 * existing regular file. */
int crec_tool_spec_parse(const char *text, crec_tool_spec *out, crec_tool_diag *d);
/* The size in bytes a spec provides by itself (a file's size), or 0 for the
 * generated kinds, which fill whatever size they are given. */
int crec_tool_spec_file_size(const crec_tool_spec *spec, uint64_t *size, crec_tool_diag *d);
/* Writes `size` bytes of buffer contents for elements of type `element` into
 * `dst`. Checks that a fill value fits the element type and that a file has
 * exactly `size` bytes. */
int crec_tool_spec_generate(const crec_tool_spec *spec, crec_element element, void *dst,
                            uint64_t size, crec_tool_diag *d);

/* IEEE half and bfloat16 conversions (round to nearest even). */
uint16_t crec_tool_f32_to_f16(float f);
float crec_tool_f16_to_f32(uint16_t h);
uint16_t crec_tool_f32_to_bf16(float f);
float crec_tool_bf16_to_f32(uint16_t h);

/* ---- printing buffers ------------------------------------------------------ */

/* FNV-1a 64 over the bytes: the checksum `crec run` prints. */
uint64_t crec_tool_checksum(const void *data, uint64_t size);
/* Formats the element at `p` into `out` ("1.5", "-3", "0x7f"). */
void crec_tool_format_element(char *out, size_t out_size, crec_element element, const void *p);
/* Prints one line: name, element type and count, checksum, and the first
 * `max_elements` elements. */
void crec_tool_print_buffer(FILE *out, const char *name, crec_element element, const void *data,
                            uint64_t size, size_t max_elements);
/* Writes `size` bytes to a new file at `path`. */
/* run --timings: prints when each phase ended, in ms since the process started
 * (or, when that is unknown, since crec_tool_main began): main, the program, and
 * with `st` (the exec's stats; NULL: stop there) the device, the record and the
 * first replay, at those crec_tool_now_us() moments. */
void crec_tool_print_timings(const crec_tool_args *args, double device, double recorded, double first,
                             const crec_exec_stats *st, FILE *out);
/* Microseconds of CLOCK_MONOTONIC. */
double crec_tool_now_us(void);
/* When this process started, in crec_tool_now_us()'s microseconds (from
 * /proc/self/stat, to the kernel's clock tick), or 0 when it cannot tell. */
double crec_tool_process_start_us(void);

int crec_tool_write_file(const char *path, const void *data, size_t size, crec_tool_diag *d);
/* Reads a whole file into a new NUL-terminated buffer (free() it). */
int crec_tool_read_file(const char *path, char **data, size_t *size, crec_tool_diag *d);

/* Writes `size` bytes to `path` atomically: into a new temporary file in the
 * same folder, then renamed over `path`, so a reader sees the old file or the
 * whole new one, never a part (and a failed write leaves no file behind). The
 * file gets the mode a new file would (0666 less the umask). */
int crec_tool_write_file_atomic(const char *path, const void *data, size_t size, crec_tool_diag *d);

/* ---- what an execution prints (run --check) ----------------------------------- */

/* File descriptor 1 sent to a temporary file while an execution runs: what the
 * program prints from its host code (printMemrefF32, vector.print) and from its
 * kernels' printf, which the driver writes out when the stream is synchronized. */
typedef struct crec_tool_capture {
  int saved_fd; /* a duplicate of the real descriptor 1, or -1 */
  FILE *file;   /* the temporary file, or NULL */
} crec_tool_capture;

/* Flushes stdout and sends descriptor 1 to a new temporary file. Returns 0, or
 * -1 with `d` naming the call that failed (tmpfile, dup or dup2); then nothing
 * is redirected and nothing is left open. */
int crec_tool_capture_begin(crec_tool_capture *c, crec_tool_diag *d);
/* Flushes stdout, gives descriptor 1 back and returns in *text (a new
 * NUL-terminated buffer of *size bytes; free() it) what was printed since
 * crec_tool_capture_begin(); *text is NULL, with *size 0, when the file could
 * not be read back or memory ran out. Closes what begin opened; safe to call on
 * a capture whose begin failed. */
void crec_tool_capture_end(crec_tool_capture *c, char **text, size_t *size);
/* Compares what two executions printed: 0 when the bytes are equal, but for
 * the address printMemref* prints after "base@ = " (where the memref lives: an
 * eager run places temporaries elsewhere); 1 when they hold the same lines in
 * another order (kernels' printf from several threads or
 * blocks has no fixed order); -1 when they differ, with `why` naming the first
 * line that differs and quoting both ("line 3: 'x = 2' against 'x = 1'"), or
 * saying that memory ran out. */
int crec_tool_compare_output(const char *a, size_t na, const char *b, size_t nb, char *why, size_t why_size);

/* ---- program files ---------------------------------------------------------- */

/* Whether the `size` bytes at `head` (a file's first bytes) start with the
 * magic of a program file (serialize.h). */
int crec_tool_is_program_file(const void *head, size_t size);
/* Whether a module built for `target` (one entry of crec_program_file_info's
 * target list: "sm_90", "sm_90a", "compute_80", "any") can run on a device of
 * compute capability major.minor. Returns 1 when it can; 0 when it cannot,
 * with the reason in `why` (a phrase: "a cubin for sm_90 runs on 9.0 to 9.9
 * only"). */
int crec_tool_chip_runs_one(const char *target, int major, int minor, char *why, size_t why_size);
/* As crec_tool_chip_runs_one(), for a whole comma-separated target list:
 * every module is loaded, so every entry must fit. */
int crec_tool_chip_runs(const char *targets, int major, int minor, char *why, size_t why_size);

/* ---- statistics and the bench report --------------------------------------- */

typedef struct crec_tool_stats {
  size_t count;
  double min, p50, p90, p99;
} crec_tool_stats;

/* Percentiles by the nearest-rank method (p-th is the smallest sample with at
 * least p% of the samples at or below it). `samples` is not modified. */
int crec_tool_stats_compute(const double *samples, size_t count, crec_tool_stats *out,
                            crec_tool_diag *d);

typedef struct crec_tool_bench_result {
  const char *program;
  const char *entry;
  const char *device;      /* "NVIDIA H200" */
  uint64_t nodes;
  uint64_t iters;
  uint64_t warmup;
  uint64_t rotated_sets;   /* buffer sets replay_update rotates among */
  uint64_t variants;       /* executable graphs the exec keeps (1: one, updated in place) */
  uint64_t variant_hits;   /* launches that found their buffer set held by another graph */
  double record_us;
  crec_tool_stats eager, replay, replay_update;
} crec_tool_bench_result;

/* Prints the one JSON object that 'crec bench --help' describes (and a newline). */
void crec_tool_bench_json(crec_tool_buf *out, const crec_tool_bench_result *r);
/* Prints the human-readable table. */
void crec_tool_bench_table(crec_tool_buf *out, const crec_tool_bench_result *r);

/* ---- progress bar ---------------------------------------------------------- */

typedef struct crec_tool_progress {
  FILE *out;
  int enabled;
  uint64_t total, done;
  int shown;   /* last drawn width in cells, -1 before the first draw */
  const char *label;
} crec_tool_progress;

/* Starts a progress bar on `out`, drawn only when `out` is a terminal. */
void crec_tool_progress_start(crec_tool_progress *p, FILE *out, const char *label, uint64_t total);
/* Advances by one step, redrawing when the bar changes. */
void crec_tool_progress_step(crec_tool_progress *p);
/* Sets the label of the following steps. */
void crec_tool_progress_label(crec_tool_progress *p, const char *label);
/* Erases the bar. */
void crec_tool_progress_finish(crec_tool_progress *p);

/* ---- dumps ----------------------------------------------------------------- */

/* Renders `program` in `format` into a new string `*out` (free()). `title` names
 * the program in the HTML page; `profile` (NULL: none) is a profile's JSON text
 * (docs/profile.md) that the page draws. */
int crec_tool_dump_render(const crec_program *program, crec_tool_format format, const char *title,
                          const char *profile, char **out, size_t *length, crec_tool_diag *d);
/* Whether the profile `text` (JSON, docs/profile.md) is of `program`: each command
 * it times, puts on its critical path or its timeline is one of the program's, and
 * it counts the iterations of its while loops and of nothing else. Returns 1 when
 * it is; 0 when not, with the first difference in `why` ("it times command #6, but
 * the program has 5 commands"). Members it lacks are not checked. */
int crec_tool_profile_matches(const crec_program *program, const char *text, char *why, size_t why_size);
/* Runs Graphviz `dot -Tsvg` on `dot`, giving the SVG text (free()). */
int crec_tool_dot_to_svg(const char *dot, size_t length, char **svg, size_t *svg_length,
                         crec_tool_diag *d);
/* The details the HTML page shows when a node is clicked, as JSON. */
int crec_tool_program_json(const crec_program *program, const crec_plan *plan, crec_tool_buf *out,
                           crec_tool_diag *d);
/* The self-contained HTML page around an SVG of `program`'s graph, with the
 * profile `profile` (JSON text; NULL: none) drawn on it. */
int crec_tool_html_page(const crec_program *program, const crec_plan *plan, const char *svg,
                        const char *title, const char *profile, crec_tool_buf *out, crec_tool_diag *d);

/* ---- running a program ----------------------------------------------------- */

/* One argument buffer with its initial contents. */
typedef struct crec_tool_buffer {
  crec_buffer buffer;
  crec_buffer_info info;
  uint64_t size;             /* bound size in bytes */
  unsigned char *host;       /* initial contents, `size` bytes */
  const char *spec;          /* the SPEC given, or NULL for zeros */
  const char *output_path;   /* --output NAME=FILE, or NULL */
  int written;               /* some command writes it: an output buffer */
} crec_tool_buffer;

/* Everything run, bench and profile need: the program and its prepared bindings. With
 * several sizes in a --size list, `crec run` prepares one job per size (a
 * variant) and replays with each in turn. */
typedef struct crec_tool_job {
  const crec_tool_args *args;
  crec_program *program;
  size_t variant;            /* which size of the --size lists this job takes */
  crec_tool_buffer *buffers; /* one per argument, in binding order */
  size_t num_buffers;
  crec_value *scalars;       /* one per bound scalar, in binding order */
  size_t num_scalars;
} crec_tool_job;

/* Counts the variants the --size lists ask for ("--size x=10,20": 2), checking
 * that the lists agree and that only `crec run` without --output gets several. */
int crec_tool_job_variants(const crec_tool_args *args, size_t *count, crec_tool_diag *d);
/* Resolves --input, --size, --scalar and --output against `program` for the
 * `variant`-th size of each --size list (its only size when it has one),
 * reading and generating every argument's initial contents. */
int crec_tool_job_prepare(crec_tool_job *job, const crec_tool_args *args, crec_program *program, size_t variant,
                          crec_tool_diag *d);
/* Frees what crec_tool_job_prepare() made (not the program). */
void crec_tool_job_free(crec_tool_job *job);
/* Prints the program summary and the prepared inputs and scalars of `count`
 * variants of one run (the sizes of the later ones after the first's). */
int crec_tool_job_summary(const crec_tool_job *jobs, size_t count, crec_tool_buf *out, crec_tool_diag *d);

/* The parts that need the MLIR front end or a GPU. */
typedef struct crec_tool_backend {
  /* crec_lower_mlir_file() or a replacement; NULL: the build has no front end. */
  crec_status (*lower)(const char *path, const crec_lower_options *options, crec_program **out);
  /* Returns 1 when a CUDA device is usable; else 0 with the reason in crec_last_error(). */
  int (*device_available)(void);
  /* `crec run` on a device, recording with jobs[0] and replaying with each of the
   * `count` jobs in turn; returns an exit status, with `d` filled for
   * CREC_TOOL_EXIT_ERROR (a --check mismatch prints its own report). NULL: not built. */
  int (*run)(const crec_tool_job *jobs, size_t count, FILE *out, FILE *err, crec_tool_diag *d);
  /* `crec bench` on a device; returns an exit status as `run` does. NULL: not built. */
  int (*bench)(const crec_tool_job *job, FILE *out, FILE *err, crec_tool_diag *d);
  /* Records the program and writes the driver's DOT of the graph to `path`. */
  int (*cuda_dot)(const crec_tool_job *job, const char *path, crec_tool_diag *d);
  /* `crec profile` on a device: records the program with the job and profiles
   * --iters replays (crec_exec_profile), giving the profile in `*out`, which
   * refers to job->program (crec_profile_destroy() it). The tool writes it in
   * the format asked for, so that part runs without a device too. Returns an
   * exit status as `run` does. NULL: not built. */
  int (*profile)(const crec_tool_job *job, crec_profile **out, crec_tool_diag *d);
} crec_tool_backend;

/* The whole tool: parses argv, runs the subcommand, prints to `out` and `err`,
 * and returns the exit status. */
int crec_tool_main(int argc, char **argv, FILE *out, FILE *err, const crec_tool_backend *backend);

#endif
