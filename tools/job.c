/* Preparing a run: resolving --input, --size, --scalar and --output against the
 * program, and generating each argument's initial contents. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tool.h"

/* The name of argument `i`, or of bound scalar `i` (NULL when it has none). */
static const char *argument_name(const crec_program *p, size_t i) {
  crec_buffer_info bi;
  return crec_buffer_get_info(p, crec_program_argument(p, i), &bi) == CREC_OK ? bi.name : NULL;
}

static const char *bound_scalar_name(const crec_program *p, size_t i) {
  crec_scalar_info si;
  return crec_scalar_get_info(p, crec_program_bound_scalar(p, i), &si) == CREC_OK ? si.name : NULL;
}

/* Lists the `n` names that `name` gives ("x, y") into `out`, or "none". */
static void list_names(const crec_program *p, size_t n, const char *(*name)(const crec_program *, size_t),
                       char *out, size_t size) {
  out[0] = '\0';
  size_t used = 0;
  for (size_t i = 0; i < n && used < size; i++) {
    const char *s = name(p, i);
    if (!s) continue;
    int w = snprintf(out + used, size - used, "%s%s", i ? ", " : "", s);
    if (w < 0) break;
    used += (size_t)w;
  }
  if (!n) snprintf(out, size, "none");
}

/* Lists the names of the argument buffers ("x, y") into `out`. */
static void argument_names(const crec_program *p, char *out, size_t size) {
  list_names(p, crec_program_argument_count(p), argument_name, out, size);
}

/* Finds argument `name` for option `pair`, giving its binding index. */
static int find_argument(const crec_program *p, const crec_tool_pair *pair, size_t *index, crec_tool_diag *d) {
  crec_buffer b;
  char names[512];
  if (crec_program_find_buffer(p, pair->name, &b) != CREC_OK) {
    argument_names(p, names, sizeof names);
    return crec_tool_fail(d, pair->arg, "the program has no buffer '%s' (argument buffers: %s)", pair->name, names);
  }
  crec_buffer_info bi;
  if (crec_buffer_get_info(p, b, &bi) != CREC_OK) return crec_tool_fail_library(d, pair->arg, NULL);
  if (bi.kind != CREC_BUFFER_ARGUMENT) {
    argument_names(p, names, sizeof names);
    return crec_tool_fail(d, pair->arg, "buffer '%s' is a %s, not an argument (argument buffers: %s)", pair->name,
                          crec_buffer_kind_name(bi.kind), names);
  }
  *index = bi.argument_index;
  return 0;
}

static const crec_tool_pair *find_pair(const crec_tool_pair *pairs, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(pairs[i].name, name)) return &pairs[i];
  return NULL;
}

/* Marks every argument some command writes. */
static void mark_written(crec_tool_job *job) {
  const crec_program *p = job->program;
  for (size_t i = 0; i < crec_program_command_count(p); i++) {
    crec_command c = crec_program_command(p, i);
    crec_command_info ci = CREC_COMMAND_INFO_INIT;
    if (crec_command_get_info(p, c, &ci) != CREC_OK) continue;
    crec_buffer written[2] = {{0}, {0}};
    if (ci.kind == CREC_COMMAND_MEMCPY || ci.kind == CREC_COMMAND_MEMSET) written[0] = ci.dst.buffer;
    for (size_t a = 0; ci.kind == CREC_COMMAND_LAUNCH && a < ci.num_args; a++) {
      crec_arg arg;
      if (crec_command_get_arg(p, c, a, &arg) != CREC_OK) continue;
      if (arg.kind == CREC_ARG_BUFFER && (arg.access & CREC_ACCESS_WRITE)) {
        for (size_t k = 0; k < job->num_buffers; k++)
          if (job->buffers[k].buffer.id == arg.range.buffer.id) job->buffers[k].written = 1;
      }
    }
    /* library commands (gemm, collective, custom, host) list the ranges they touch */
    for (size_t o = 0; o < ci.num_operands; o++) {
      crec_range range;
      crec_access access;
      if (crec_command_get_operand(p, c, o, &range, &access) != CREC_OK || !(access & CREC_ACCESS_WRITE)) continue;
      for (size_t k = 0; k < job->num_buffers; k++)
        if (job->buffers[k].buffer.id == range.buffer.id) job->buffers[k].written = 1;
    }
    for (size_t k = 0; k < job->num_buffers; k++)
      if (written[0].id && job->buffers[k].buffer.id == written[0].id) job->buffers[k].written = 1;
  }
}

/* Number of element counts in a --size value ("1000,5000": 2). */
static size_t size_list_length(const char *s) {
  size_t n = 1;
  for (; *s; s++) n += *s == ',';
  return n;
}

/* Parses the `k`-th element count of a --size value (its only one when it has one). */
static int parse_elements(const crec_tool_pair *pair, size_t k, uint64_t *out, crec_tool_diag *d) {
  const char *s = pair->value;
  if (size_list_length(s) == 1) k = 0;
  for (; k; k--) s = strchr(s, ',') + 1;
  size_t len = strcspn(s, ",");
  char item[64];
  if (len >= sizeof item) return crec_tool_fail(d, pair->arg, "'%.*s' is not an element count", (int)len, s);
  memcpy(item, s, len);
  item[len] = '\0';
  char *end = NULL;
  if (*item < '0' || *item > '9') return crec_tool_fail(d, pair->arg, "'%s' is not an element count", item);
  errno = 0;
  unsigned long long v = strtoull(item, &end, 10);
  if (*end) return crec_tool_fail(d, pair->arg, "'%s' is not an element count", item);
  if (errno == ERANGE || v == 0) return crec_tool_fail(d, pair->arg, "element count %s is out of range", item);
  *out = v;
  return 0;
}

int crec_tool_job_variants(const crec_tool_args *args, size_t *count, crec_tool_diag *d) {
  *count = 1;
  const crec_tool_pair *longest = NULL;
  for (size_t i = 0; i < args->num_sizes; i++) {
    size_t n = size_list_length(args->sizes[i].value);
    if (n == 1) continue;
    if (longest && n != *count)
      return crec_tool_fail(d, args->sizes[i].arg, "%zu sizes, but '%s' gives %zu (give every list as many sizes, or one)",
                            n, longest->arg, *count);
    longest = &args->sizes[i];
    *count = n;
  }
  if (!longest) return 0;
  if (args->command != CREC_TOOL_CMD_RUN)
    return crec_tool_fail(d, longest->arg, "several sizes are for 'crec run', which replays with each in turn; 'crec %s' takes one",
                          crec_tool_command_name(args->command));
  if (args->num_outputs)
    return crec_tool_fail(d, args->outputs[0].arg, "--output writes one execution's bytes: give one size per argument with it");
  if (args->iters_given && args->iters < *count)
    return crec_tool_fail(d, longest->arg, "%zu sizes, but --iters %llu replays fewer times", *count,
                          (unsigned long long)args->iters);
  return 0;
}

void crec_tool_job_free(crec_tool_job *job) {
  if (!job) return;
  for (size_t i = 0; i < job->num_buffers; i++) free(job->buffers[i].host);
  free(job->buffers);
  free(job->scalars);
  memset(job, 0, sizeof *job);
}

/* The job's argument buffers, as the program declares them, and room for its bound scalars. */
static int read_arguments(crec_tool_job *job, crec_tool_diag *d) {
  const crec_program *p = job->program;
  size_t nargs = crec_program_argument_count(p), nscalars = crec_program_bound_scalar_count(p);
  job->buffers = calloc(nargs ? nargs : 1, sizeof *job->buffers);
  job->scalars = calloc(nscalars ? nscalars : 1, sizeof *job->scalars);
  if (!job->buffers || !job->scalars) return crec_tool_fail(d, NULL, "out of memory");
  job->num_buffers = nargs;
  job->num_scalars = nscalars;
  for (size_t i = 0; i < nargs; i++) {
    crec_tool_buffer *tb = &job->buffers[i];
    tb->buffer = crec_program_argument(p, i);
    if (crec_buffer_get_info(p, tb->buffer, &tb->info) != CREC_OK)
      return crec_tool_fail_library(d, job->args->program, "reading an argument");
  }
  return 0;
}

/* Every buffer --input, --size and --output name must be an argument; outputs get their files. */
static int match_buffer_names(crec_tool_job *job, crec_tool_diag *d) {
  const crec_program *p = job->program;
  const crec_tool_args *args = job->args;
  size_t index;
  for (size_t i = 0; i < args->num_inputs; i++)
    if (find_argument(p, &args->inputs[i], &index, d)) return -1;
  for (size_t i = 0; i < args->num_sizes; i++)
    if (find_argument(p, &args->sizes[i], &index, d)) return -1;
  for (size_t i = 0; i < args->num_outputs; i++) {
    if (find_argument(p, &args->outputs[i], &index, d)) return -1;
    job->buffers[index].output_path = args->outputs[i].value;
  }
  return 0;
}

/* --scalar values: each names a bound scalar, and every bound scalar gets one. */
static int read_scalars(crec_tool_job *job, crec_tool_diag *d) {
  const crec_program *p = job->program;
  const crec_tool_args *args = job->args;
  for (size_t i = 0; i < args->num_scalars; i++) {
    const crec_tool_pair *pair = &args->scalars[i];
    crec_scalar s;
    crec_scalar_info si;
    char names[512];
    if (crec_program_find_scalar(p, pair->name, &s) != CREC_OK) {
      list_names(p, crec_program_bound_scalar_count(p), bound_scalar_name, names, sizeof names);
      return crec_tool_fail(d, pair->arg, "the program has no scalar '%s' (bound scalars: %s)", pair->name, names);
    }
    if (crec_scalar_get_info(p, s, &si) != CREC_OK) return crec_tool_fail_library(d, pair->arg, NULL);
    if (si.kind == CREC_SCALAR_DERIVED)
      return crec_tool_fail(d, pair->arg,
                            "scalar '%s' is computed by a host function from other scalars; it cannot be set",
                            pair->name);
    if (si.kind == CREC_SCALAR_SIZE) {
      crec_buffer_info bi;
      const char *of = crec_buffer_get_info(p, si.buffer, &bi) == CREC_OK ? bi.name : "?";
      return crec_tool_fail(d, pair->arg, "scalar '%s' is the size of argument '%s'; set it with --size %s=ELEMENTS",
                            pair->name, of, of);
    }
    if (crec_tool_parse_scalar(pair->value, si.type, &job->scalars[si.binding_index], d)) {
      snprintf(d->where, sizeof d->where, "%s", pair->arg);
      return -1;
    }
  }
  for (size_t i = 0; i < job->num_scalars; i++) {
    crec_scalar_info si;
    if (crec_scalar_get_info(p, crec_program_bound_scalar(p, i), &si) != CREC_OK)
      return crec_tool_fail_library(d, args->program, NULL);
    if (!find_pair(args->scalars, args->num_scalars, si.name))
      return crec_tool_fail(d, args->program, "scalar '%s' (%s) needs a value: --scalar %s=VALUE", si.name,
                            crec_type_name(si.type), si.name);
  }
  return 0;
}

/* The byte size of argument buffer `tb`: its static size, a --size count (this
 * variant's), a file input's size, or its minimum. */
static int size_buffer(crec_tool_job *job, crec_tool_buffer *tb, const crec_tool_pair *in,
                       const crec_tool_spec *spec, crec_tool_diag *d) {
  const crec_tool_pair *sz = find_pair(job->args->sizes, job->args->num_sizes, tb->info.name);
  size_t es = crec_element_size(tb->info.element);
  if (!es) es = 1;
  if (sz && !tb->info.dynamic_size)
    return crec_tool_fail(d, sz->arg,
                          "argument '%s' has a static size (%" PRIu64 " bytes); --size is for dynamic-size arguments",
                          tb->info.name, tb->info.size);
  if (!tb->info.dynamic_size) {
    tb->size = tb->info.size;
  } else if (sz) {
    uint64_t n = 0;
    if (parse_elements(sz, job->variant, &n, d)) return -1;
    if (n > UINT64_MAX / es) return crec_tool_fail(d, sz->arg, "element count %" PRIu64 " is out of range", n);
    tb->size = n * es;
    if (tb->size < tb->info.size)
      return crec_tool_fail(d, sz->arg,
                            "%" PRIu64 " bytes is less than the program's minimum of %" PRIu64 " bytes for '%s'",
                            tb->size, tb->info.size, tb->info.name);
  } else if (in && spec->kind == CREC_TOOL_SPEC_FILE) {
    if (crec_tool_spec_file_size(spec, &tb->size, d)) {
      snprintf(d->where, sizeof d->where, "%s", in->arg);
      return -1;
    }
    if (tb->size < tb->info.size || tb->size == 0 || tb->size % es)
      return crec_tool_fail(d, in->arg,
                            "file '%s' has %" PRIu64 " bytes, not a whole number of %s elements of at least %" PRIu64
                            " bytes",
                            spec->path, tb->size, crec_element_name(tb->info.element), tb->info.size);
  } else if (tb->info.size) {
    tb->size = tb->info.size;
  } else {
    return crec_tool_fail(d, job->args->program,
                          "argument '%s' has a dynamic size: give --size %s=ELEMENTS or a file input", tb->info.name,
                          tb->info.name);
  }
  return 0;
}

/* Sizes every argument buffer and fills its host copy from its --input (zero bytes without one). */
static int fill_buffers(crec_tool_job *job, crec_tool_diag *d) {
  for (size_t i = 0; i < job->num_buffers; i++) {
    crec_tool_buffer *tb = &job->buffers[i];
    const crec_tool_pair *in = find_pair(job->args->inputs, job->args->num_inputs, tb->info.name);
    crec_tool_spec spec;
    memset(&spec, 0, sizeof spec);
    if (in && crec_tool_spec_parse(in->value, &spec, d)) {
      snprintf(d->where, sizeof d->where, "%s", in->arg);
      return -1;
    }
    if (size_buffer(job, tb, in, &spec, d)) return -1;
    tb->host = calloc(1, (size_t)tb->size);
    if (!tb->host)
      return crec_tool_fail(d, NULL, "out of memory for the %" PRIu64 " bytes of '%s'", tb->size, tb->info.name);
    if (in) {
      tb->spec = in->value;
      if (crec_tool_spec_generate(&spec, tb->info.element, tb->host, tb->size, d)) {
        snprintf(d->where, sizeof d->where, "%s", in->arg);
        return -1;
      }
    }
  }
  return 0;
}

int crec_tool_job_prepare(crec_tool_job *job, const crec_tool_args *args, crec_program *program, size_t variant,
                          crec_tool_diag *d) {
  memset(job, 0, sizeof *job);
  job->args = args;
  job->program = program;
  job->variant = variant;
  if (read_arguments(job, d) || match_buffer_names(job, d) || read_scalars(job, d) || fill_buffers(job, d)) {
    crec_tool_job_free(job);
    return -1;
  }
  mark_written(job);
  return 0;
}

static void put_value(crec_tool_buf *b, crec_type t, crec_value v) {
  switch (t) {
    case CREC_TYPE_I32: crec_tool_buf_printf(b, "%" PRId32, v.i32); break;
    case CREC_TYPE_I64: crec_tool_buf_printf(b, "%" PRId64, v.i64); break;
    case CREC_TYPE_F32: crec_tool_buf_printf(b, "%.9g", (double)v.f32); break;
    case CREC_TYPE_F64: crec_tool_buf_printf(b, "%.17g", v.f64); break;
    default: crec_tool_buf_puts(b, "?"); break;
  }
}

int crec_tool_job_summary(const crec_tool_job *jobs, size_t count, crec_tool_buf *b, crec_tool_diag *d) {
  const crec_tool_job *job = &jobs[0];
  char *text = NULL;
  if (crec_dump(job->program, NULL, CREC_DUMP_TEXT, &text, NULL) != CREC_OK)
    return crec_tool_fail_library(d, job->args->program, "summarizing the program");
  if (job->args->program_file)
    crec_tool_buf_printf(b, "%s (a program file)\n", job->args->program);
  else
    crec_tool_buf_printf(b, "%s (entry %s)\n", job->args->program, job->args->entry ? job->args->entry : "main");
  crec_tool_buf_puts(b, text);
  crec_free(text);
  if (job->num_buffers) crec_tool_buf_puts(b, "inputs:\n");
  for (size_t i = 0; i < job->num_buffers; i++) {
    const crec_tool_buffer *tb = &job->buffers[i];
    size_t es = crec_element_size(tb->info.element);
    crec_tool_buf_printf(b, "  %-16s %s[%" PRIu64 "] %s", tb->info.name, crec_element_name(tb->info.element),
                         es ? tb->size / es : tb->size, tb->spec ? tb->spec : "zeros");
    if (tb->written) crec_tool_buf_puts(b, ", output");
    if (tb->output_path) crec_tool_buf_printf(b, " -> %s", tb->output_path);
    int varies = 0;
    for (size_t v = 1; v < count; v++) varies |= jobs[v].buffers[i].size != tb->size;
    if (varies) {
      crec_tool_buf_puts(b, "; replays take in turn");
      for (size_t v = 0; v < count; v++)
        crec_tool_buf_printf(b, "%s %s[%" PRIu64 "]", v ? "," : "", crec_element_name(tb->info.element),
                             es ? jobs[v].buffers[i].size / es : jobs[v].buffers[i].size);
    }
    crec_tool_buf_puts(b, "\n");
  }
  if (job->num_scalars) crec_tool_buf_puts(b, "scalar values:\n");
  for (size_t i = 0; i < job->num_scalars; i++) {
    crec_scalar_info si;
    if (crec_scalar_get_info(job->program, crec_program_bound_scalar(job->program, i), &si) != CREC_OK) continue;
    crec_tool_buf_printf(b, "  %s = ", si.name);
    put_value(b, si.type, job->scalars[i]);
    crec_tool_buf_puts(b, "\n");
  }
  return 0;
}
