/* The GPU half of the tool: `crec run` (record, replay, --check against the
 * eager executor), `crec bench`, `crec profile`, and --cuda-dot. Reached through
 * crec_tool_backend, so crec_tool_core itself needs no recorder. */
#include <stdbool.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu.h"

enum { CHECK_SETS = 3, BENCH_SETS = 2, BENCH_WARMUP = 10, SHOW_ELEMENTS = 8 };

/* One allocation per argument buffer, and the bindings that point at them. An
 * allocation fits the largest size any variant of the run binds. */
typedef struct buffer_set {
  crec_binding *bindings;
  size_t count;
  const struct comm_set *comms; /* bound with the buffers; not owned */
} buffer_set;

/* The NCCL communicators bound to the program's communicator slots. */
typedef struct comm_set {
  crec_comm **comms;
  size_t count;
} comm_set;

static int fail_call(crec_tool_diag *d, const crec_tool_job *job, const char *what) {
  return crec_tool_fail_library(d, job->args->program, what);
}

/* Waits for an execution on `stream`, within --timeout when it was given. */
static crec_status wait_run(const crec_tool_args *args, crec_stream stream) {
  return args->timeout_s ? crec_stream_wait(stream, (int)(args->timeout_s * 1000u)) : crec_stream_synchronize(stream);
}

/* An execution that failed: with CREC_ERR_TIMEOUT (--timeout) it still runs on the
 * device, so the caller frees nothing and the process exits at once (d->abandoned). */
static int fail_run(crec_tool_diag *d, const crec_tool_job *job, crec_status s, const char *what, uint64_t i) {
  char context[160];
  snprintf(context, sizeof context, "%s (execution %" PRIu64 " of %" PRIu64 ")", what, i + 1, job->args->iters);
  fail_call(d, job, context);
  d->abandoned = s == CREC_ERR_TIMEOUT;
  return -1;
}

/* Gives every loop of the program without a limit of its own --loop-limit, so
 * that eager runs and replays alike stop a loop that never ends. */
static int apply_loop_limit(const crec_tool_job *job, crec_tool_diag *d) {
  crec_program *p = job->program;
  if (!job->args->loop_limit) return 0;
  for (size_t i = 0; i < crec_program_command_count(p); i++) {
    crec_command c = crec_program_command(p, i);
    crec_command_info ci = CREC_COMMAND_INFO_INIT;
    uint64_t own;
    if (crec_command_get_info(p, c, &ci) != CREC_OK) return fail_call(d, job, "reading a command");
    if (ci.kind != CREC_COMMAND_WHILE) continue;
    if (crec_program_get_loop_limit(p, c, &own) != CREC_OK ||
        (!own && crec_program_set_loop_limit(p, c, job->args->loop_limit) != CREC_OK))
      return fail_call(d, job, "setting --loop-limit");
  }
  return 0;
}

static void set_free(const crec_tool_job *job, buffer_set *s) {
  for (size_t i = 0; s->bindings && i < s->count; i++) {
    if (job->buffers[i].info.memory == CREC_MEMORY_HOST) crec_host_free(s->bindings[i].ptr);
    else crec_device_free(s->bindings[i].ptr);
  }
  free(s->bindings);
  s->bindings = NULL;
  s->count = 0;
}

/* Copies `data` (one host array per argument; NULL: the job's initial contents) into the set. */
static int set_upload(const crec_tool_job *job, buffer_set *s, unsigned char *const *data, crec_tool_diag *d) {
  for (size_t i = 0; i < s->count; i++) {
    const crec_tool_buffer *tb = &job->buffers[i];
    const unsigned char *src = data ? data[i] : tb->host;
    if (tb->info.memory == CREC_MEMORY_HOST) {
      memcpy(s->bindings[i].ptr, src, (size_t)tb->size);
    } else if (crec_copy(s->bindings[i].ptr, src, tb->size) != CREC_OK) {
      return fail_call(d, job, "uploading an argument");
    }
  }
  return 0;
}

static int set_download(const crec_tool_job *job, const buffer_set *s, size_t i, unsigned char *dst, crec_tool_diag *d) {
  const crec_tool_buffer *tb = &job->buffers[i];
  if (tb->info.memory == CREC_MEMORY_HOST) memcpy(dst, s->bindings[i].ptr, (size_t)tb->size);
  else if (crec_copy(dst, s->bindings[i].ptr, tb->size) != CREC_OK) return fail_call(d, job, "downloading an argument");
  return 0;
}

/* Allocates a set for the `count` variants in `jobs`, holding the first's initial contents. */
static int set_alloc(const crec_tool_job *jobs, size_t count, buffer_set *s, crec_tool_diag *d) {
  const crec_tool_job *job = &jobs[0];
  s->count = 0;
  s->bindings = calloc(job->num_buffers ? job->num_buffers : 1, sizeof *s->bindings);
  if (!s->bindings) return crec_tool_fail(d, NULL, "out of memory");
  for (size_t i = 0; i < job->num_buffers; i++) {
    const crec_tool_buffer *tb = &job->buffers[i];
    uint64_t size = 0;
    for (size_t v = 0; v < count; v++)
      if (jobs[v].buffers[i].size > size) size = jobs[v].buffers[i].size;
    void *ptr = NULL;
    crec_status st = tb->info.memory == CREC_MEMORY_HOST ? crec_host_alloc(0, size, &ptr)
                                                          : crec_device_alloc(0, size, &ptr);
    if (st != CREC_OK) {
      char what[256];
      snprintf(what, sizeof what, "allocating %" PRIu64 " bytes for argument '%s'", size, tb->info.name);
      set_free(job, s);
      return fail_call(d, job, what);
    }
    s->bindings[i].ptr = ptr;
    s->bindings[i].size = tb->size;
    s->count = i + 1;
  }
  if (set_upload(job, s, NULL, d)) {
    set_free(job, s);
    return -1;
  }
  return 0;
}

/* The bindings of the set, with the sizes of `job`'s variant. */
static crec_bindings bindings_of(const crec_tool_job *job, buffer_set *s) {
  for (size_t i = 0; i < s->count; i++) s->bindings[i].size = job->buffers[i].size;
  crec_bindings b = CREC_BINDINGS_INIT;
  b.buffers = s->bindings;
  b.num_buffers = s->count;
  b.scalars = job->scalars;
  b.num_scalars = job->num_scalars;
  if (s->comms) {
    b.communicators = s->comms->comms;
    b.num_communicators = s->comms->count;
  }
  return b;
}

static void comms_destroy(comm_set *c) {
  for (size_t i = 0; c->comms && i < c->count; i++) crec_comm_destroy(c->comms[i]);
  free(c->comms);
  c->comms = NULL;
  c->count = 0;
}

/* One communicator per slot of the program. The tool is one process on one GPU,
 * so it can only make communicators of one rank (their collectives move nothing
 * between ranks); a program written for more ranks runs under its own launcher
 * through the C API. */
static int comms_create(const crec_tool_job *job, comm_set *c, crec_tool_diag *d) {
  size_t n = crec_program_communicator_count(job->program);
  c->comms = NULL;
  c->count = 0;
  if (!n) return 0;
  c->comms = calloc(n, sizeof *c->comms);
  if (!c->comms) return crec_tool_fail(d, NULL, "out of memory");
  for (size_t i = 0; i < n; i++) {
    const char *name = "?";
    int size = 0;
    crec_program_get_communicator(job->program, i, &name, &size);
    if (size != 1) {
      comms_destroy(c);
      return crec_tool_fail(d, job->args->program,
                            "communicator '%s' has %d ranks, but crec runs one process on one GPU: it can bind "
                            "only communicators of 1 rank",
                            name, size);
    }
    crec_comm_id id;
    if (crec_comm_get_unique_id(&id) != CREC_OK || crec_comm_create(0, &id, 0, 1, &c->comms[i]) != CREC_OK) {
      char what[300];
      snprintf(what, sizeof what, "creating communicator '%s'", name);
      comms_destroy(c);
      return fail_call(d, job, what);
    }
    c->count = i + 1;
  }
  return 0;
}

/* Host copies of every argument. */
static unsigned char **snapshot_alloc(const crec_tool_job *job) {
  unsigned char **snap = calloc(job->num_buffers ? job->num_buffers : 1, sizeof *snap);
  if (!snap) return NULL;
  for (size_t i = 0; i < job->num_buffers; i++) {
    snap[i] = malloc((size_t)job->buffers[i].size);
    if (!snap[i]) {
      for (size_t k = 0; k < i; k++) free(snap[k]);
      free(snap);
      return NULL;
    }
    memcpy(snap[i], job->buffers[i].host, (size_t)job->buffers[i].size);
  }
  return snap;
}

static void snapshot_free(const crec_tool_job *job, unsigned char **snap) {
  if (!snap) return;
  for (size_t i = 0; i < job->num_buffers; i++) free(snap[i]);
  free(snap);
}

static int snapshot_take(const crec_tool_job *job, const buffer_set *s, unsigned char **snap, crec_tool_diag *d) {
  for (size_t i = 0; i < job->num_buffers; i++)
    if (set_download(job, s, i, snap[i], d)) return -1;
  return 0;
}

/* Prints each output buffer and writes the --output files from host copies `snap`. */
static int report_outputs(const crec_tool_job *job, unsigned char **snap, FILE *out, crec_tool_diag *d) {
  for (size_t i = 0; i < job->num_buffers; i++) {
    const crec_tool_buffer *tb = &job->buffers[i];
    if (tb->written) crec_tool_print_buffer(out, tb->info.name, tb->info.element, snap[i], tb->size, SHOW_ELEMENTS);
  }
  for (size_t i = 0; i < job->num_buffers; i++) {
    const crec_tool_buffer *tb = &job->buffers[i];
    if (!tb->output_path) continue;
    if (crec_tool_write_file(tb->output_path, snap[i], (size_t)tb->size, d)) return -1;
    fprintf(out, "wrote %s (%" PRIu64 " bytes of '%s')\n", tb->output_path, tb->size, tb->info.name);
  }
  return 0;
}

/* Compares replay and eager copies of every argument; prints the first difference. */
static int compare(const crec_tool_job *job, size_t variants, unsigned char **replay, unsigned char **eager,
                   uint64_t execution, size_t set, FILE *err) {
  for (size_t i = 0; i < job->num_buffers; i++) {
    const crec_tool_buffer *tb = &job->buffers[i];
    if (!memcmp(replay[i], eager[i], (size_t)tb->size)) continue;
    uint64_t at = 0;
    while (replay[i][at] == eager[i][at]) at++;
    size_t es = crec_element_size(tb->info.element);
    if (!es) es = 1;
    uint64_t elem = at / es;
    char r[64] = "", e[64] = "", sizes[96] = "";
    if ((elem + 1) * es <= tb->size) {
      crec_tool_format_element(r, sizeof r, tb->info.element, replay[i] + elem * es);
      crec_tool_format_element(e, sizeof e, tb->info.element, eager[i] + elem * es);
    }
    if (variants > 1)
      snprintf(sizes, sizeof sizes, ", with the sizes of variant %zu of %zu", job->variant + 1, variants);
    fprintf(err,
            "crec: check failed: execution %" PRIu64 " of %" PRIu64 " (replay on buffer set %zu of %d%s): argument '%s' "
            "first differs from the eager executor at byte %" PRIu64 " (%s element %" PRIu64
            "): replay 0x%02x (%s), eager 0x%02x (%s)\n",
            execution + 1, job->args->iters, set + 1, CHECK_SETS, sizes, tb->info.name, at,
            crec_element_name(tb->info.element), elem, replay[i][at], r, eager[i][at], e);
    return -1;
  }
  return 0;
}

/* Creates the stream, the communicators and `n` sets of buffers for `jobs`. */
static int sets_create(const crec_tool_job *jobs, size_t count, crec_stream *stream, comm_set *comms, buffer_set *sets,
                       size_t n, crec_tool_diag *d) {
  if (crec_stream_create(0, stream) != CREC_OK) return fail_call(d, &jobs[0], "creating a stream");
  if (comms_create(&jobs[0], comms, d)) return -1;
  for (size_t s = 0; s < n; s++) {
    if (set_alloc(jobs, count, &sets[s], d)) return -1;
    sets[s].comms = comms;
  }
  return 0;
}

/* Frees what sets_create() made, once the stream's work is done. */
static void sets_destroy(const crec_tool_job *job, crec_stream stream, comm_set *comms, buffer_set *sets, size_t n) {
  for (size_t s = 0; s < n; s++) set_free(job, &sets[s]);
  comms_destroy(comms);
  crec_stream_destroy(stream);
}

/* Records the program with the bindings of `set`; `us` (if not NULL) gets the time it took.
 * With `profile`, for crec_exec_profile (crec_record_options.profile). */
static int record_set(const crec_tool_job *job, buffer_set *set, crec_exec **exec, double *us, bool profile,
                      crec_tool_diag *d) {
  crec_bindings b = bindings_of(job, set);
  crec_record_options ro = CREC_RECORD_OPTIONS_INIT;
  ro.profile = profile;
  if (job->args->variants) ro.variants = (uint32_t)job->args->variants;
  double t0 = crec_tool_now_us();
  if (crec_record(job->program, &b, &ro, exec) != CREC_OK) return fail_call(d, job, "recording");
  if (us) *us = crec_tool_now_us() - t0;
  return 0;
}

static void describe_device(char *name, size_t size) {
  int major = 0, minor = 0;
  if (crec_device_describe(0, name, size, &major, &minor) != CREC_OK) snprintf(name, size, "device 0");
}

/* One host copy of every argument per variant (NULL entries where allocation failed). */
static unsigned char ***states_alloc(const crec_tool_job *jobs, size_t count) {
  unsigned char ***states = calloc(count, sizeof *states);
  if (!states) return NULL;
  for (size_t v = 0; v < count; v++) {
    states[v] = snapshot_alloc(&jobs[v]);
    if (!states[v]) {
      for (size_t k = 0; k < v; k++) snapshot_free(&jobs[k], states[k]);
      free(states);
      return NULL;
    }
  }
  return states;
}

static void states_free(const crec_tool_job *jobs, size_t count, unsigned char ***states) {
  for (size_t v = 0; states && v < count; v++) snapshot_free(&jobs[v], states[v]);
  free(states);
}

/* --check, before replay `i`: the eager run of variant `jv` on the eager set,
 * what it printed captured in `*eager_out` (shown only when it fails), its
 * arguments kept in `snapshot`, then the capture of the replay's printing begun. */
static int eager_step(const crec_tool_job *job, const crec_tool_job *jv, size_t count, buffer_set *eager_set,
                      unsigned char **snapshot, crec_stream stream, uint64_t i, crec_tool_capture *cap,
                      char **eager_out, size_t *eager_len, crec_tool_diag *d) {
  if (count > 1 && set_upload(jv, eager_set, snapshot, d)) return -1;
  crec_bindings be = bindings_of(jv, eager_set);
  if (crec_tool_capture_begin(cap, d)) return -1;
  crec_status es = crec_run_eager(job->program, &be, stream);
  if (es == CREC_OK) es = wait_run(job->args, stream);
  crec_tool_capture_end(cap, eager_out, eager_len);
  if (es != CREC_OK) {
    if (*eager_out) fwrite(*eager_out, 1, *eager_len, stdout);
    return fail_run(d, job, es, "running eagerly", i);
  }
  if (!*eager_out)
    return crec_tool_fail(d, NULL, "reading back what the eager run printed: out of memory or a temporary file error");
  if (snapshot_take(jv, eager_set, snapshot, d)) return -1;
  return crec_tool_capture_begin(cap, d) ? -1 : 0;
}

/* --check, after execution `i` (of `iters`) replayed on buffer set `s`: 0 when
 * the replay printed what the eager run printed, 1 when it did in another
 * order, -1 after reporting on `err` how it differs. */
static int same_printing(const char *replay_out, size_t replay_len, const char *eager_out, size_t eager_len,
                         uint64_t i, uint64_t iters, size_t s, crec_tool_progress *progress, FILE *err) {
  char why[512];
  int same = replay_out ? crec_tool_compare_output(replay_out, replay_len, eager_out, eager_len, why, sizeof why) : -1;
  if (!replay_out) snprintf(why, sizeof why, "what the replay printed could not be read back");
  if (same >= 0) return same;
  crec_tool_progress_finish(progress);
  fprintf(err,
          "crec: check failed: execution %" PRIu64 " of %" PRIu64 " (replay on buffer set %zu of %d): what "
          "the replay printed differs from what the eager executor printed: %s\n",
          i + 1, iters, s + 1, CHECK_SETS, why);
  return -1;
}

/* What a run measured and saw, for its report. */
typedef struct run_report {
  double record_us, replay_us;              /* the record; all replays, each synchronized */
  double device_at, recorded_at, first_at;  /* --timings: first use of the device, record done, first replay done */
  uint64_t printed, reordered;              /* --check: bytes the replays printed; how many printed lines reordered */
} run_report;

/* The report of a run that passed: what was recorded and replayed, the outputs, --check's verdict, --timings. */
static int report_run(const crec_tool_job *jobs, size_t count, crec_exec *exec, unsigned char ***state,
                      const run_report *rr, FILE *out, crec_tool_diag *d) {
  const crec_tool_job *job = &jobs[0];
  const crec_tool_args *args = job->args;
  int check = args->check;
  crec_exec_stats st = CREC_EXEC_STATS_INIT;
  crec_exec_get_stats(exec, &st);
  char device[256];
  describe_device(device, sizeof device);
  fprintf(out,
          "recorded %s (entry %s) on %s: %" PRIu64 " nodes in %.1f us; replayed %" PRIu64
          " time%s, %.1f us per replay (synchronized), %" PRIu64 " node updates\n",
          args->program, args->entry ? args->entry : "main", device, st.nodes, rr->record_us, args->iters,
          args->iters == 1 ? "" : "s", rr->replay_us / (double)args->iters, st.nodes_updated);
  if (count > 1)
    fprintf(out, "each replay took the next of %zu sizes in turn; one recording served them all\n", count);
  if (st.variants > 1)
    fprintf(out,
            "%" PRIu64 " executable graphs (--variants): %" PRIu64
            " replays found their buffer set held by another graph and updated nothing\n",
            st.variants, st.variant_hits);
  if (st.eager_commands)
    fprintf(out, "note: %" PRIu64 " control-flow commands ran eagerly: this driver lacks conditional graph nodes\n",
            st.eager_commands);
  for (size_t v = 0; v < count; v++)
    if (report_outputs(&jobs[v], state[v], out, d)) return -1;
  if (check) {
    fprintf(out,
            "check passed: %" PRIu64 " replay%s, rotated among %d sets of argument buffers, equal%s the eager "
            "executor in every byte of all %zu arguments",
            args->iters, args->iters == 1 ? "" : "s", CHECK_SETS, args->iters == 1 ? "s" : "", job->num_buffers);
    if (rr->printed)
      fprintf(out, ", and printed what the eager run printed (%" PRIu64 " bytes in all%s)", rr->printed,
              rr->reordered ? ", some lines in another order" : "");
    fputc('\n', out);
  }
  if (args->cuda_dot) fprintf(out, "wrote %s (the CUDA driver's DOT of the instantiated graph)\n", args->cuda_dot);
  if (args->timings) crec_tool_print_timings(args, rr->device_at, rr->recorded_at, rr->first_at, &st, out);
  return 0;
}

int crec_tool_device_run(const crec_tool_job *jobs, size_t count, FILE *out, FILE *err, crec_tool_diag *d) {
  const crec_tool_job *job = &jobs[0];
  const crec_tool_args *args = job->args;
  int check = args->check;
  size_t nsets = check ? CHECK_SETS : 1;
  buffer_set sets[CHECK_SETS] = {{0}}, eager_set = {0};
  comm_set comms = {0};
  /* per variant: the arguments after its last replay, and after its last eager run */
  unsigned char ***state = NULL, ***eager_state = NULL;
  crec_stream stream = NULL;
  crec_exec *exec = NULL;
  int rc = CREC_TOOL_EXIT_ERROR;
  /* --check: what each execution printed, and how much the replays printed in all */
  crec_tool_capture cap = {-1, NULL};
  char *eager_out = NULL, *replay_out = NULL;
  size_t eager_len = 0, replay_len = 0;
  uint64_t printed = 0, reordered = 0;
  crec_tool_progress progress;
  crec_tool_progress_start(&progress, err, check ? "run --check" : "run", args->iters);

  if (sets_create(jobs, count, &stream, &comms, sets, nsets, d)) goto done;
  if (check) {
    if (set_alloc(jobs, count, &eager_set, d)) goto done;
    eager_set.comms = &comms;
  }
  state = states_alloc(jobs, count);
  eager_state = check ? states_alloc(jobs, count) : NULL;
  if (!state || (check && !eager_state)) {
    crec_tool_fail(d, NULL, "out of memory for host copies of the arguments");
    goto done;
  }

  double device_at = crec_tool_now_us(), first_at = 0;
  double record_us;
  if (apply_loop_limit(job, d) || record_set(job, &sets[0], &exec, &record_us, false, d)) goto done;
  double recorded_at = crec_tool_now_us();
  if (args->cuda_dot) {
    if (crec_exec_dump_cuda_dot(exec, args->cuda_dot) != CREC_OK) {
      crec_tool_fail_library(d, args->cuda_dot, "writing the CUDA graph's DOT");
      goto done;
    }
  }

  double replay_us = 0;
  for (uint64_t i = 0; i < args->iters; i++) {
    /* each replay takes the next variant's sizes; a variant continues from its own last state */
    size_t v = (size_t)(i % count);
    const crec_tool_job *jv = &jobs[v];
    /* --check: the first replay already uses another set than the recorded one */
    size_t s = check ? (size_t)((i + 1) % nsets) : 0;
    if (check && eager_step(job, jv, count, &eager_set, eager_state[v], stream, i, &cap, &eager_out, &eager_len, d))
      goto done;
    /* carry the state of the variant's last replay over into this set */
    if ((check || count > 1) && i > 0 && set_upload(jv, &sets[s], state[v], d)) goto done;
    crec_bindings b = bindings_of(jv, &sets[s]);
    double r0 = crec_tool_now_us();
    crec_status rs = crec_exec_replay(exec, &b, stream);
    if (rs == CREC_OK) rs = wait_run(args, stream);
    if (rs == CREC_OK) rs = crec_exec_check(exec);
    replay_us += crec_tool_now_us() - r0;
    if (check) {
      /* the replay's output is shown, as a plain run shows it */
      crec_tool_capture_end(&cap, &replay_out, &replay_len);
      if (replay_out) fwrite(replay_out, 1, replay_len, stdout);
      fflush(stdout);
    }
    if (rs != CREC_OK) {
      fail_run(d, job, rs, "replaying", i);
      goto done;
    }
    if (check) {
      int same = same_printing(replay_out, replay_len, eager_out, eager_len, i, args->iters, s, &progress, err);
      if (same < 0) {
        rc = CREC_TOOL_EXIT_MISMATCH;
        goto done;
      }
      reordered += same == 1;
      printed += replay_len;
      free(eager_out), free(replay_out);
      eager_out = replay_out = NULL;
    }
    if (i == 0) first_at = crec_tool_now_us();
    if (check || count > 1) {
      if (snapshot_take(jv, &sets[s], state[v], d)) goto done;
    }
    if (check && compare(jv, count, state[v], eager_state[v], i, s, err)) {
      crec_tool_progress_finish(&progress);
      rc = CREC_TOOL_EXIT_MISMATCH;
      goto done;
    }
    crec_tool_progress_step(&progress);
  }
  crec_tool_progress_finish(&progress);
  if (!check && count == 1 && snapshot_take(job, &sets[0], state[0], d)) goto done;

  const run_report rr = {.record_us = record_us, .replay_us = replay_us, .device_at = device_at,
                         .recorded_at = recorded_at, .first_at = first_at, .printed = printed, .reordered = reordered};
  if (report_run(jobs, count, exec, state, &rr, out, d)) goto done;
  rc = CREC_TOOL_EXIT_OK;
done:
  crec_tool_progress_finish(&progress);
  /* the device still runs what timed out: nothing it uses may be freed */
  if (d->abandoned) return rc;
  if (stream) crec_stream_synchronize(stream);
  if (cap.file) {
    /* a failure between a capture's start and end: what was printed still reaches stdout */
    crec_tool_capture_end(&cap, &replay_out, &replay_len);
    if (replay_out) fwrite(replay_out, 1, replay_len, stdout);
  }
  free(eager_out);
  free(replay_out);
  crec_exec_destroy(exec);
  set_free(job, &eager_set);
  states_free(jobs, count, state);
  states_free(jobs, count, eager_state);
  sets_destroy(job, stream, &comms, sets, nsets);
  return rc;
}

/* Times `iters` executions of one kind after `warmup` untimed ones, restoring
 * the initial contents before each so that data-dependent loops do the same
 * work every time. `kind`: 0 eager, 1 replay unchanged, 2 replay rotated. */
static int time_kind(const crec_tool_job *job, int kind, crec_exec *exec, buffer_set *sets, crec_stream stream,
                     uint64_t warmup, double *samples, crec_tool_progress *progress, crec_tool_diag *d) {
  uint64_t total = warmup + job->args->iters;
  for (uint64_t i = 0; i < total; i++) {
    size_t s = kind == 2 ? (size_t)((i + 1) % BENCH_SETS) : 0;
    if (set_upload(job, &sets[s], NULL, d)) return -1;
    crec_bindings b = bindings_of(job, &sets[s]);
    double t0 = crec_tool_now_us();
    crec_status st = kind == 0 ? crec_run_eager(job->program, &b, stream) : crec_exec_replay(exec, &b, stream);
    if (st == CREC_OK) st = crec_stream_synchronize(stream);
    if (st == CREC_OK && kind != 0) st = crec_exec_check(exec);
    double t1 = crec_tool_now_us();
    if (st != CREC_OK) return fail_call(d, job, kind == 0 ? "running eagerly" : "replaying");
    if (i >= warmup) samples[i - warmup] = t1 - t0;
    crec_tool_progress_step(progress);
  }
  return 0;
}

int crec_tool_device_bench(const crec_tool_job *job, FILE *out, FILE *err, crec_tool_diag *d) {
  const crec_tool_args *args = job->args;
  uint64_t warmup = args->iters < BENCH_WARMUP ? args->iters : BENCH_WARMUP;
  buffer_set sets[BENCH_SETS] = {{0}};
  comm_set comms = {0};
  crec_stream stream = NULL;
  crec_exec *exec = NULL;
  double *samples = NULL;
  crec_tool_buf text = {0};
  int rc = CREC_TOOL_EXIT_ERROR;
  crec_tool_progress progress;
  crec_tool_progress_start(&progress, err, "bench: eager", 3 * (warmup + args->iters));

  samples = malloc(3 * (size_t)args->iters * sizeof *samples);
  if (!samples) {
    crec_tool_fail(d, NULL, "out of memory for %" PRIu64 " samples", 3 * args->iters);
    goto done;
  }
  if (sets_create(job, 1, &stream, &comms, sets, BENCH_SETS, d)) goto done;
  double record_us;
  if (apply_loop_limit(job, d) || record_set(job, &sets[0], &exec, &record_us, false, d)) goto done;

  static const char *const labels[] = {"bench: eager", "bench: replay", "bench: update"};
  for (int kind = 0; kind < 3; kind++) {
    crec_tool_progress_label(&progress, labels[kind]);
    if (time_kind(job, kind, exec, sets, stream, warmup, samples + (size_t)kind * args->iters, &progress, d))
      goto done;
  }
  crec_tool_progress_finish(&progress);

  crec_tool_bench_result r;
  memset(&r, 0, sizeof r);
  char device[256];
  describe_device(device, sizeof device);
  crec_exec_stats st = CREC_EXEC_STATS_INIT;
  crec_exec_get_stats(exec, &st);
  r.program = args->program;
  r.entry = args->entry ? args->entry : "main";
  r.device = device;
  r.nodes = st.nodes;
  r.iters = args->iters;
  r.warmup = warmup;
  r.rotated_sets = BENCH_SETS;
  r.variants = st.variants;
  r.variant_hits = st.variant_hits;
  r.record_us = record_us;
  if (crec_tool_stats_compute(samples, args->iters, &r.eager, d) ||
      crec_tool_stats_compute(samples + args->iters, args->iters, &r.replay, d) ||
      crec_tool_stats_compute(samples + 2 * args->iters, args->iters, &r.replay_update, d))
    goto done;
  if (args->json) crec_tool_bench_json(&text, &r);
  else crec_tool_bench_table(&text, &r);
  /* the table ends with what record chose for the library calls, if any */
  char *choices = NULL;
  if (!args->json && crec_exec_library_choices(exec, &choices) == CREC_OK && choices && *choices) {
    crec_tool_buf_puts(&text, "library calls, as recorded:\n");
    crec_tool_buf_puts(&text, choices);
  }
  crec_free(choices);
  if (text.failed) {
    crec_tool_fail(d, NULL, "out of memory formatting the report");
    goto done;
  }
  fputs(text.data, out);
  rc = CREC_TOOL_EXIT_OK;
done:
  crec_tool_progress_finish(&progress);
  if (stream) crec_stream_synchronize(stream);
  crec_exec_destroy(exec);
  sets_destroy(job, stream, &comms, sets, BENCH_SETS);
  free(samples);
  crec_tool_buf_free(&text);
  return rc;
}

int crec_tool_device_profile(const crec_tool_job *job, crec_profile **out, crec_tool_diag *d) {
  const crec_tool_args *args = job->args;
  buffer_set set = {0};
  comm_set comms = {0};
  crec_stream stream = NULL;
  crec_exec *exec = NULL;
  int rc = CREC_TOOL_EXIT_ERROR;
  *out = NULL;
  if (sets_create(job, 1, &stream, &comms, &set, 1, d)) goto done;
  if (apply_loop_limit(job, d) || record_set(job, &set, &exec, NULL, true, d)) goto done;
  /* the report names what bench's does: the program as given, its entry, the device */
  char device[256];
  describe_device(device, sizeof device);
  crec_profile_options po = CREC_PROFILE_OPTIONS_INIT;
  po.program = args->program;
  po.entry = args->entry ? args->entry : "main";
  po.device = device;
  /* unlike bench, nothing restores the initial contents between the replays
   * (crec_exec_profile runs them back to back): each sees the state the one before
   * left, so a loop whose trip count depends on its data should reset that data
   * itself, as examples/jacobi.mlir does */
  crec_bindings b = bindings_of(job, &set);
  if (crec_exec_profile(exec, &b, stream, (uint32_t)args->iters, &po, out) != CREC_OK) {
    fail_call(d, job, "crec profile: crec_exec_profile");
    goto done;
  }
  rc = CREC_TOOL_EXIT_OK;
done:
  if (stream) crec_stream_synchronize(stream);
  crec_exec_destroy(exec);
  sets_destroy(job, stream, &comms, &set, 1);
  return rc;
}

int crec_tool_device_cuda_dot(const crec_tool_job *job, const char *path, crec_tool_diag *d) {
  buffer_set set = {0};
  comm_set comms = {0};
  crec_exec *exec = NULL;
  int rc = -1;
  if (comms_create(job, &comms, d)) return -1;
  if (set_alloc(job, 1, &set, d)) {
    comms_destroy(&comms);
    return -1;
  }
  set.comms = &comms;
  if (record_set(job, &set, &exec, NULL, false, d)) goto done;
  if (crec_exec_dump_cuda_dot(exec, path) != CREC_OK) {
    crec_tool_fail_library(d, path, "writing the CUDA graph's DOT");
    goto done;
  }
  rc = 0;
done:
  crec_exec_destroy(exec);
  set_free(job, &set);
  comms_destroy(&comms);
  return rc;
}
