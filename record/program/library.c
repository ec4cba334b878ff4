/* Builders and getters of the library commands (library.h): GEMM, FFT, Cholesky, convolution, collectives
 * and their communicator slots, custom commands, host callbacks. Like every
 * builder they validate everything, allocate everything, then commit. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stddef.h>
#include <string.h>

#include "internal.h"

void crec__library_free(crec__command *c) {
  crec__free(c->ops);
  crec__free(c->gemm);
  crec__free(c->fft);
  crec__free(c->chol);
  crec__free(c->conv);
  if (c->coll) {
    crec__free(c->coll->groups);
    crec__free(c->coll->pairs);
    crec__free(c->coll);
  }
  if (c->custom) {
    crec__free(c->custom->target);
    crec__free(c->custom->operands);
    crec__free(c->custom->kernels);
    crec__free(c->custom->attributes);
    crec__free(c->custom);
  }
  if (c->hostcb) {
    if (c->hostcb->user_free) c->hostcb->user_free(c->hostcb->user);
    crec__free(c->hostcb);
  }
  if (c->graph) {
    if (c->graph->release) c->graph->release(c->graph->ref);
    crec__free(c->graph);
  }
}

/* The command of a handle, after the usual checks of a getter. */
static crec_status command_of(const crec_program *p, const char *fn, crec_command command,
                              crec_command_kind kind, const void *out, size_t out_size,
                              size_t want_size, const crec__command **c_out) {
  *c_out = NULL; /* set on failure too: GCC's -O3 cannot see that crec__error() never returns CREC_OK */
  if (!p) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'program' is NULL");
  if (!out) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'out' is NULL");
  if (out_size < want_size)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn,
                       "argument 'out': struct_size %zu is smaller than %zu", out_size, want_size);
  crec_status s = crec__check_handle(p, command.id, p->num_commands, fn, "command", NULL);
  if (s) return s;
  const crec__command *c = &p->commands[crec__index(command.id)];
  if (c->kind != kind)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "command '%s' is a %s, not a %s", c->name,
                       crec_command_kind_name(c->kind), crec_command_kind_name(kind));
  *c_out = c;
  return CREC_OK;
}

/* Appends a built library command: reserves, then commits (nothing fails after). */
static crec_status commit(crec_program *p, const char *fn, crec_region region, crec__command *c,
                          crec_command *out) {
  uint32_t r = (uint32_t)crec__index(region.id);
  if (!c->name || crec__reserve_command(p, r, 0) != CREC_OK) return crec__oom(fn);
  out->id = crec__handle(p, crec__commit_command(p, r, c));
  return CREC_OK;
}

/* Checks an operand range: valid, a known access, writable when written. */
static crec_status check_operand(const crec_program *p, const char *fn, const char *what,
                                 crec_operand *o) {
  crec_status s = crec__check_range(p, fn, what, &o->range);
  if (s) return s;
  if (o->access < CREC_ACCESS_READ || o->access > CREC_ACCESS_READ_WRITE)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "argument '%s': unknown access %d", what, (int)o->access);
  if (o->access & CREC_ACCESS_WRITE) return crec__check_writable(p, fn, what, o->range);
  return CREC_OK;
}

/* ---------------------------------------------------------------- GEMM ---- */

/* Checks one matrix operand and resolves its ld and batch stride. `what` is "a",
 * "b", "c" or "d"; `label` names the command for messages. */
static crec_status check_matrix(const crec_program *p, const char *fn, const char *label,
                                const char *what, crec_matrix *m, uint64_t batch, size_t esize,
                                bool written) {
  crec_status s = crec__check_range(p, fn, what, &m->range);
  if (s) return s;
  const crec__buffer *b = &p->buffers[crec__index(m->range.buffer.id)];
  if (m->range.size == CREC_WHOLE)
    return crec__error(CREC_ERR_UNSUPPORTED, fn,
                       "%s: argument '%s' (buffer '%s'): a GEMM needs a range of static size, not the "
                       "whole of a dynamic-size buffer", label, what, b->name);
  if (written && (s = crec__check_writable(p, fn, what, m->range))) return s;
  if (crec__range_is_host(p, m->range))
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "%s: argument '%s': buffer '%s' is host memory; "
                       "cuBLASLt reads and writes device memory", label, what, b->name);
  if (m->rows == 0 || m->cols == 0)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "%s: argument '%s': a %" PRIu64 "x%" PRIu64 " matrix is empty",
                       label, what, m->rows, m->cols);
  if (m->rows > INT32_MAX || m->cols > INT32_MAX)
    return crec__error(CREC_ERR_TOO_LARGE, fn, "%s: argument '%s': %" PRIu64 "x%" PRIu64 " is above 2^31-1 in a dimension",
                       label, what, m->rows, m->cols);
  if (m->ld == 0) m->ld = m->cols;
  if (m->ld < m->cols)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "%s: argument '%s': ld %" PRIu64 " is below its %" PRIu64 " columns",
                       label, what, m->ld, m->cols);
  if (m->batch_stride == 0) m->batch_stride = m->rows * m->ld;
  if (written && batch > 1 && m->batch_stride < m->rows * m->ld)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn,
                       "%s: argument '%s': batch stride %" PRIu64 " makes the %" PRIu64 " written matrices overlap "
                       "(at least %" PRIu64 " elements)", label, what, m->batch_stride, batch, m->rows * m->ld);
  if (m->range.offset % esize || b->alignment % esize)
    return crec__error(CREC_ERR_MISALIGNED, fn,
                       "%s: argument '%s' (buffer '%s'): offset %" PRIu64 " or buffer alignment %u is not a "
                       "multiple of the %zu-byte element", label, what, b->name, m->range.offset,
                       b->alignment, esize);
  /* elements the last matrix of the batch ends at, overflow-checked */
  uint64_t last_row = (m->rows - 1) * m->ld + m->cols;
  if (batch > 1 && m->batch_stride > (UINT64_MAX / 4 - last_row) / (batch - 1))
    return crec__error(CREC_ERR_TOO_LARGE, fn, "%s: argument '%s': the batch spans more than 2^62 elements", label, what);
  uint64_t elems = (batch - 1) * m->batch_stride + last_row;
  if (elems > m->range.size / esize)
    return crec__error(CREC_ERR_OUT_OF_RANGE, fn,
                       "%s: argument '%s' (buffer '%s'): %" PRIu64 " bytes hold %" PRIu64 " elements, but %" PRIu64
                       " matrices of %" PRIu64 "x%" PRIu64 " (ld %" PRIu64 ", batch stride %" PRIu64 ") need %" PRIu64,
                       label, what, b->name, m->range.size, m->range.size / esize, batch, m->rows, m->cols,
                       m->ld, m->batch_stride, elems);
  return CREC_OK;
}

/* Returns a buffer name "<base>.<what>" not taken yet, with a number appended
 * when it is (written into `buf`). */
static const char *unique_buffer_name(const crec_program *p, const char *base, const char *what, char *buf,
                                      size_t size) {
  crec_buffer found;
  snprintf(buf, size, "%s.%s", base, what);
  for (unsigned i = 2; crec_program_find_buffer(p, buf, &found) == CREC_OK; i++)
    snprintf(buf, size, "%s.%s%u", base, what, i);
  return buf;
}

/* The common start of a library command that makes a temporary of its own
 * (`what`: "workspace", "scratch"): its name, `num_ops` operands, room in the
 * region, then the temporary "<name>.<what>" of `bytes`, the last step that can
 * fail. `part` is the kind's own part the caller allocated (NULL: out of
 * memory). On failure nothing is in the program and `c` holds nothing. */
static crec_status start_command(crec_program *p, const char *fn, crec_region region, crec__command *c,
                                 const char *cname, const void *part, size_t num_ops, const char *what,
                                 uint64_t bytes, crec_buffer *made) {
  c->name = crec__strdup(cname);
  c->ops = crec__calloc(num_ops, sizeof *c->ops);
  crec_status s = CREC_OK;
  if (!part || !c->name || !c->ops || crec__reserve_command(p, (uint32_t)crec__index(region.id), 0) != CREC_OK) {
    s = crec__oom(fn);
  } else {
    char tname[320];
    if ((s = crec_program_add_temporary(p, unique_buffer_name(p, cname, what, tname, sizeof tname), bytes, made)))
      s = crec__rethrow(s, fn);
  }
  if (s) {
    crec__library_free(c);
    crec__free(c->name);
    memset(c, 0, sizeof *c);
  }
  return s;
}

crec_status crec_program_add_gemm(crec_program *program, crec_region region, const char *name,
                                  const crec_gemm *gemm, crec_command *out) {
  static const char fn[] = "crec_program_add_gemm";
  crec_program *p = program;
  if (out) out->id = 0;
  crec_status s = crec__check_common(p, fn, region, out);
  if (s) return s;
  if (!gemm) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'gemm' is NULL");
  crec_gemm given = CREC_GEMM_INIT;
  /* a caller built before output_type passes the smaller struct (one element type) */
  if ((s = crec__take_struct(&given, sizeof given, gemm, offsetof(crec_gemm, output_type), fn, "argument 'gemm'",
                             "CREC_GEMM_INIT")))
    return s;
  gemm = &given;
  const char *cname = name ? name : "gemm";
  char label[300];
  snprintf(label, sizeof label, "gemm '%s'", cname);
  crec_gemm g = *gemm;
  g.struct_size = sizeof g;
  if (g.type != CREC_ELEMENT_F32 && g.type != CREC_ELEMENT_F16 && g.type != CREC_ELEMENT_BF16)
    return crec__error(CREC_ERR_UNSUPPORTED, fn, "%s: element type %s is not supported (f32, f16 or bf16)",
                       label, crec_element_name(g.type));
  if (g.output_type == CREC_ELEMENT_BYTES) g.output_type = g.type;
  if (g.output_type != g.type && !(g.output_type == CREC_ELEMENT_F32 && g.type != CREC_ELEMENT_F32))
    return crec__error(CREC_ERR_UNSUPPORTED, fn,
                       "%s: output type %s with %s inputs is not supported (f32 output from f16 or bf16 inputs, or "
                       "the inputs' type)",
                       label, crec_element_name(g.output_type), crec_element_name(g.type));
  if (g.batch == 0)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "%s: argument 'gemm.batch' is 0", label);
  if (g.batch > INT32_MAX)
    return crec__error(CREC_ERR_TOO_LARGE, fn, "%s: a batch of %" PRIu64 " is above 2^31-1", label, g.batch);
  if ((unsigned)g.epilogue > CREC_GEMM_EPILOGUE_BIAS_RELU)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "%s: unknown epilogue %d", label, (int)g.epilogue);
  size_t es = crec_element_size(g.type), eo = crec_element_size(g.output_type);
  if ((s = check_matrix(p, fn, label, "a", &g.a, g.batch, es, false))) return s;
  if ((s = check_matrix(p, fn, label, "b", &g.b, g.batch, es, false))) return s;
  if ((s = check_matrix(p, fn, label, "d", &g.d, g.batch, eo, true))) return s;
  bool has_c = g.c.range.buffer.id != 0;
  if (has_c && (s = check_matrix(p, fn, label, "c", &g.c, g.batch, eo, false))) return s;
  uint64_t m = g.transpose_a ? g.a.cols : g.a.rows, ka = g.transpose_a ? g.a.rows : g.a.cols;
  uint64_t kb = g.transpose_b ? g.b.cols : g.b.rows, n = g.transpose_b ? g.b.rows : g.b.cols;
  if (ka != kb)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn,
                       "%s: shape mismatch: op(A) is %" PRIu64 "x%" PRIu64 " but op(B) is %" PRIu64 "x%" PRIu64
                       " (inner dimensions %" PRIu64 " and %" PRIu64 " differ)", label, m, ka, kb, n, ka, kb);
  if (g.d.rows != m || g.d.cols != n)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn,
                       "%s: shape mismatch: D is %" PRIu64 "x%" PRIu64 " but op(A)·op(B) is %" PRIu64 "x%" PRIu64,
                       label, g.d.rows, g.d.cols, m, n);
  if (has_c && (g.c.rows != m || g.c.cols != n))
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn,
                       "%s: shape mismatch: C is %" PRIu64 "x%" PRIu64 " but D is %" PRIu64 "x%" PRIu64, label,
                       g.c.rows, g.c.cols, m, n);
  if (!has_c) g.c = (crec_matrix){{{0}, 0, 0}, 0, 0, 0, 0};
  bool wants_bias = g.epilogue == CREC_GEMM_EPILOGUE_BIAS || g.epilogue == CREC_GEMM_EPILOGUE_BIAS_RELU;
  if (wants_bias != (g.bias.buffer.id != 0))
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, wants_bias ? "%s: the bias epilogue needs 'gemm.bias'"
                                                                 : "%s: 'gemm.bias' is given but the epilogue adds no bias",
                       label);
  if (wants_bias) {
    if ((s = crec__check_range(p, fn, "bias", &g.bias))) return s;
    const crec__buffer *bb = &p->buffers[crec__index(g.bias.buffer.id)];
    if (g.bias.size == CREC_WHOLE)
      return crec__error(CREC_ERR_UNSUPPORTED, fn, "%s: argument 'bias' needs a range of static size", label);
    if (crec__range_is_host(p, g.bias))
      return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "%s: argument 'bias': buffer '%s' is host memory", label, bb->name);
    if (g.bias.offset % eo || bb->alignment % eo)
      return crec__error(CREC_ERR_MISALIGNED, fn, "%s: argument 'bias' (buffer '%s'): offset %" PRIu64
                         " is not a multiple of the %zu-byte element", label, bb->name, g.bias.offset, eo);
    if (g.bias.size / eo < n)
      return crec__error(CREC_ERR_INVALID_ARGUMENT, fn,
                         "%s: shape mismatch: bias holds %" PRIu64 " elements, D has %" PRIu64 " columns", label,
                         g.bias.size / eo, n);
  }
  if (g.workspace_bytes == 0) g.workspace_bytes = CREC_GEMM_DEFAULT_WORKSPACE;
  if (g.workspace_bytes > ((uint64_t)1 << 40))
    return crec__error(CREC_ERR_TOO_LARGE, fn, "%s: a workspace of %" PRIu64 " bytes", label, g.workspace_bytes);

  crec__command c = {0};
  c.kind = CREC_COMMAND_GEMM;
  c.gemm = crec__calloc(1, sizeof *c.gemm);
  crec_buffer ws;
  if ((s = start_command(p, fn, region, &c, cname, c.gemm, 6, "workspace", g.workspace_bytes, &ws))) return s;
  c.gemm->desc = g;
  c.gemm->m = m, c.gemm->n = n, c.gemm->k = ka;
  c.gemm->workspace = (uint32_t)crec__index(ws.id);
  size_t k = 0;
  c.ops[k++] = crec_operand_of(g.a.range, CREC_ACCESS_READ);
  c.ops[k++] = crec_operand_of(g.b.range, CREC_ACCESS_READ);
  if (has_c) c.ops[k++] = crec_operand_of(g.c.range, CREC_ACCESS_READ);
  c.ops[k++] = crec_operand_of(g.d.range, !has_c && g.beta != 0 ? CREC_ACCESS_READ_WRITE : CREC_ACCESS_WRITE);
  if (wants_bias) c.ops[k++] = crec_operand_of(g.bias, CREC_ACCESS_READ);
  c.ops[k++] = crec_operand_of(crec_range_whole(ws), CREC_ACCESS_READ_WRITE);
  c.ops[k - 1].range.size = g.workspace_bytes;
  c.num_ops = k;
  out->id = crec__handle(p, crec__commit_command(p, (uint32_t)crec__index(region.id), &c));
  return CREC_OK;
}

crec_status crec_command_get_gemm(const crec_program *p, crec_command command, crec_gemm *out) {
  static const char fn[] = "crec_command_get_gemm";
  const crec__command *c;
  /* a caller built before output_type passes the smaller struct */
  size_t oldest = offsetof(crec_gemm, output_type);
  crec_status s = command_of(p, fn, command, CREC_COMMAND_GEMM, out, out ? out->struct_size : 0, oldest, &c);
  if (s) return s;
  return crec__give_struct(out, &c->gemm->desc, sizeof c->gemm->desc, oldest, fn, "argument 'out'", "CREC_GEMM_INIT");
}

/* ----------------------------------------------------------------- FFT ---- */

/* The operand checks of the library commands that take whole tensors (FFT,
 * Cholesky, convolution). */
typedef struct tensor_check {
  const char *fn, *label; /* the builder, and the command for messages ("fft 'x'") */
  const char *command;    /* what needs it: "an FFT" */
  const char *library;    /* what reads and writes it: "cuFFT" */
} tensor_check;

/* Checks tensor operand `what`: valid, static size `bytes` (`holds` says what
 * needs them: "the transforms' real side is"), device memory, aligned to the
 * `esize`-byte `element`, writable when `written`. */
static crec_status check_tensor(const crec_program *p, const tensor_check *k, const char *what, crec_range *r,
                                uint64_t bytes, size_t esize, const char *element, const char *holds, bool written) {
  crec_status s = crec__check_range(p, k->fn, what, r);
  if (s) return s;
  const crec__buffer *b = &p->buffers[crec__index(r->buffer.id)];
  if (r->size == CREC_WHOLE)
    return crec__error(CREC_ERR_UNSUPPORTED, k->fn,
                       "%s: argument '%s' (buffer '%s'): %s needs a range of static size, not the whole of a "
                       "dynamic-size buffer", k->label, what, b->name, k->command);
  if (written && (s = crec__check_writable(p, k->fn, what, *r))) return s;
  if (crec__range_is_host(p, *r))
    return crec__error(CREC_ERR_INVALID_ARGUMENT, k->fn,
                       "%s: argument '%s': buffer '%s' is host memory; %s reads and writes device memory", k->label,
                       what, b->name, k->library);
  if (r->offset % esize || b->alignment % esize)
    return crec__error(CREC_ERR_MISALIGNED, k->fn,
                       "%s: argument '%s' (buffer '%s'): offset %" PRIu64 " or buffer alignment %u is not a multiple "
                       "of the %zu-byte %s", k->label, what, b->name, r->offset, b->alignment, esize, element);
  if (r->size != bytes)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, k->fn,
                       "%s: shape mismatch: argument '%s' (buffer '%s') is %" PRIu64 " bytes, but %s %" PRIu64 " bytes",
                       k->label, what, b->name, r->size, holds, bytes);
  return CREC_OK;
}

/* Whether ranges `a` and `b` share a byte. */
static bool ranges_overlap(crec_range a, crec_range b) {
  return a.buffer.id == b.buffer.id && a.offset < b.offset + b.size && b.offset < a.offset + a.size;
}


const char *crec_fft_type_name(crec_fft_type type) {
  static const char *const names[] = {"fft", "ifft", "rfft", "irfft"};
  return (unsigned)type < sizeof names / sizeof *names ? names[type] : "?";
}

static bool fft_is_real(crec_fft_type t) { return t == CREC_FFT_REAL_FORWARD || t == CREC_FFT_REAL_INVERSE; }

crec_status crec_program_add_fft(crec_program *program, crec_region region, const char *name, const crec_fft *fft,
                                 crec_command *out) {
  static const char fn[] = "crec_program_add_fft";
  crec_program *p = program;
  if (out) out->id = 0;
  crec_status s = crec__check_common(p, fn, region, out);
  if (s) return s;
  if (!fft) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'fft' is NULL");
  crec_fft f = CREC_FFT_INIT;
  if ((s = crec__take_struct(&f, sizeof f, fft, sizeof(crec_fft), fn, "argument 'fft'", "CREC_FFT_INIT"))) return s;
  f.struct_size = sizeof f;
  const char *cname = name ? name : "fft";
  char label[300];
  snprintf(label, sizeof label, "fft '%s'", cname);
  if ((unsigned)f.type > CREC_FFT_REAL_INVERSE)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "%s: unknown type %d", label, (int)f.type);
  if (f.precision != CREC_ELEMENT_F32 && f.precision != CREC_ELEMENT_F64)
    return crec__error(CREC_ERR_UNSUPPORTED, fn, "%s: precision %s is not supported (f32 or f64)", label,
                       crec_element_name(f.precision));
  if (f.rank < 1 || f.rank > 3)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "%s: rank %u: an FFT has 1 to 3 dimensions", label, f.rank);
  if (f.batch == 0) return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "%s: argument 'fft.batch' is 0", label);
  if (!isfinite(f.scale))
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "%s: scale %g is not finite", label, f.scale);
  const uint64_t limit = (uint64_t)1 << 40;
  uint64_t elements = 1, complex_elements = 1;
  for (uint32_t d = 0; d < f.rank; d++) {
    uint64_t n = f.length[d];
    if (n == 0) return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "%s: length[%u] is 0", label, d);
    uint64_t nc = fft_is_real(f.type) && d == f.rank - 1 ? n / 2 + 1 : n;
    if (n > limit || elements > limit / n || elements * n > limit / f.batch)
      return crec__error(CREC_ERR_TOO_LARGE, fn, "%s: the transforms hold more than 2^40 elements", label);
    elements *= n;
    complex_elements *= nc;
  }
  for (uint32_t d = f.rank; d < 3; d++) f.length[d] = 0;
  size_t re = crec_element_size(f.precision), ce = 2 * re;
  uint64_t real_bytes = f.batch * elements * re, complex_bytes = f.batch * complex_elements * ce;
  bool real_in = f.type == CREC_FFT_REAL_FORWARD, real_out = f.type == CREC_FFT_REAL_INVERSE;
  uint64_t in_bytes = real_in ? real_bytes : complex_bytes, out_bytes = real_out ? real_bytes : complex_bytes;
  const tensor_check k = {fn, label, "an FFT", "cuFFT"};
  /* cuFFT wants both sides aligned to the complex element, the real one too */
  if ((s = check_tensor(p, &k, "input", &f.input, in_bytes, ce, "complex element",
                        real_in ? "the transforms' real side is" : "the transforms' complex side is", false)))
    return s;
  if ((s = check_tensor(p, &k, "output", &f.output, out_bytes, ce, "complex element",
                        real_out ? "the transforms' real side is" : "the transforms' complex side is", true)))
    return s;
  bool in_place = f.input.buffer.id == f.output.buffer.id && f.input.offset == f.output.offset &&
                  f.input.size == f.output.size;
  if (in_place && fft_is_real(f.type))
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn,
                       "%s: a %s transform cannot run in place: give the output a range of its own", label,
                       crec_fft_type_name(f.type));
  if (!in_place && ranges_overlap(f.input, f.output))
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn,
                       "%s: arguments 'input' and 'output' overlap in buffer '%s' without being the same range", label,
                       crec__buffer_name(p, f.input.buffer));
  uint64_t larger = in_bytes > out_bytes ? in_bytes : out_bytes;
  if (f.workspace_bytes == 0)
    f.workspace_bytes = 2 * larger > CREC_FFT_DEFAULT_WORKSPACE_MIN ? 2 * larger : CREC_FFT_DEFAULT_WORKSPACE_MIN;
  if (f.workspace_bytes > limit)
    return crec__error(CREC_ERR_TOO_LARGE, fn, "%s: a workspace of %" PRIu64 " bytes", label, f.workspace_bytes);
  /* a REAL_INVERSE copies its input after cuFFT's area (cuFFT overwrites a C2R input) */
  uint64_t copy_offset = (f.workspace_bytes + 255) & ~(uint64_t)255;
  uint64_t temp_bytes = real_out ? copy_offset + in_bytes : f.workspace_bytes;

  crec__command c = {0};
  c.kind = CREC_COMMAND_FFT;
  c.fft = crec__calloc(1, sizeof *c.fft);
  crec_buffer ws;
  if ((s = start_command(p, fn, region, &c, cname, c.fft, 3, "workspace", temp_bytes, &ws))) return s;
  *c.fft = (crec__fft){.desc = f,
                       .elements = elements,
                       .complex_elements = complex_elements,
                       .input_bytes = in_bytes,
                       .output_bytes = out_bytes,
                       .copy_offset = real_out ? copy_offset : 0,
                       .workspace = (uint32_t)crec__index(ws.id)};
  size_t n = 0;
  if (in_place) {
    c.ops[n++] = crec_operand_of(f.output, CREC_ACCESS_READ_WRITE);
  } else {
    c.ops[n++] = crec_operand_of(f.input, CREC_ACCESS_READ);
    c.ops[n++] = crec_operand_of(f.output, CREC_ACCESS_WRITE);
  }
  c.ops[n] = crec_operand_of(crec_range_whole(ws), CREC_ACCESS_READ_WRITE);
  c.ops[n++].range.size = temp_bytes;
  c.num_ops = n;
  out->id = crec__handle(p, crec__commit_command(p, (uint32_t)crec__index(region.id), &c));
  return CREC_OK;
}

crec_status crec_command_get_fft(const crec_program *p, crec_command command, crec_fft *out) {
  static const char fn[] = "crec_command_get_fft";
  const crec__command *c;
  crec_status s = command_of(p, fn, command, CREC_COMMAND_FFT, out, out ? out->struct_size : 0, sizeof(crec_fft), &c);
  if (s) return s;
  *out = c->fft->desc;
  return CREC_OK;
}

/* ------------------------------------------------------------ Cholesky ---- */

crec_status crec_program_add_cholesky(crec_program *program, crec_region region, const char *name,
                                      const crec_cholesky *cholesky, crec_command *out) {
  static const char fn[] = "crec_program_add_cholesky";
  crec_program *p = program;
  if (out) out->id = 0;
  crec_status s = crec__check_common(p, fn, region, out);
  if (s) return s;
  if (!cholesky) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'cholesky' is NULL");
  crec_cholesky d = CREC_CHOLESKY_INIT;
  if ((s = crec__take_struct(&d, sizeof d, cholesky, sizeof(crec_cholesky), fn, "argument 'cholesky'",
                             "CREC_CHOLESKY_INIT")))
    return s;
  d.struct_size = sizeof d;
  d.upper = d.upper != 0;
  const char *cname = name ? name : "cholesky";
  char label[300];
  snprintf(label, sizeof label, "cholesky '%s'", cname);
  if (d.type != CREC_ELEMENT_F32 && d.type != CREC_ELEMENT_F64)
    return crec__error(CREC_ERR_UNSUPPORTED, fn, "%s: element type %s is not supported (f32 or f64)", label,
                       crec_element_name(d.type));
  if (d.n == 0) return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "%s: argument 'cholesky.n' is 0", label);
  if (d.batch == 0) return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "%s: argument 'cholesky.batch' is 0", label);
  /* one cuSOLVER call per matrix in the child graph: bounded, so a capture stays small */
  if (d.batch > CREC_CHOLESKY_MAX_BATCH)
    return crec__error(CREC_ERR_TOO_LARGE, fn,
                       "%s: a batch of %" PRIu64 " is above %u (crec factors one matrix after another; split the batch)",
                       label, d.batch, CREC_CHOLESKY_MAX_BATCH);
  const uint64_t limit = (uint64_t)1 << 40;
  if (d.n > INT32_MAX || d.n * d.n > limit / d.batch)
    return crec__error(CREC_ERR_TOO_LARGE, fn, "%s: %" PRIu64 " matrices of order %" PRIu64 " hold more than 2^40 elements",
                       label, d.batch, d.n);
  size_t es = crec_element_size(d.type);
  char holds[96];
  snprintf(holds, sizeof holds, "%" PRIu64 " matrices of %" PRIu64 "x%" PRIu64 " %s are", d.batch, d.n, d.n,
           crec_element_name(d.type));
  const tensor_check k = {fn, label, "a Cholesky factorization", "cuSOLVER"};
  if ((s = check_tensor(p, &k, "a", &d.a, d.batch * d.n * d.n * es, es, "element", holds, true))) return s;
  snprintf(holds, sizeof holds, "%" PRIu64 " i32 are", d.batch);
  if ((s = check_tensor(p, &k, "info", &d.info, d.batch * 4, 4, "i32", holds, true))) return s;
  if (ranges_overlap(d.a, d.info))
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "%s: arguments 'a' and 'info' overlap in buffer '%s'", label,
                       crec__buffer_name(p, d.a.buffer));
  if (d.workspace_bytes == 0) {
    uint64_t w = d.n * d.n * es;
    d.workspace_bytes = w > (1u << 20) ? w : (1u << 20);
  }
  if (d.workspace_bytes > limit)
    return crec__error(CREC_ERR_TOO_LARGE, fn, "%s: a workspace of %" PRIu64 " bytes", label, d.workspace_bytes);

  crec__command c = {0};
  c.kind = CREC_COMMAND_CHOLESKY;
  c.chol = crec__calloc(1, sizeof *c.chol);
  crec_buffer ws;
  if ((s = start_command(p, fn, region, &c, cname, c.chol, 3, "workspace", d.workspace_bytes, &ws))) return s;
  *c.chol = (crec__chol){.desc = d, .workspace = (uint32_t)crec__index(ws.id)};
  c.ops[0] = crec_operand_of(d.a, CREC_ACCESS_READ_WRITE);
  c.ops[1] = crec_operand_of(d.info, CREC_ACCESS_WRITE);
  c.ops[2] = crec_operand_of(crec_range_whole(ws), CREC_ACCESS_READ_WRITE);
  c.ops[2].range.size = d.workspace_bytes;
  c.num_ops = 3;
  out->id = crec__handle(p, crec__commit_command(p, (uint32_t)crec__index(region.id), &c));
  return CREC_OK;
}

crec_status crec_command_get_cholesky(const crec_program *p, crec_command command, crec_cholesky *out) {
  static const char fn[] = "crec_command_get_cholesky";
  const crec__command *c;
  crec_status s = command_of(p, fn, command, CREC_COMMAND_CHOLESKY, out, out ? out->struct_size : 0,
                             sizeof(crec_cholesky), &c);
  if (s) return s;
  *out = c->chol->desc;
  return CREC_OK;
}

/* --------------------------------------------------------- convolution ---- */

const char *crec_conv_kind_name(crec_conv_kind kind) {
  static const char *const names[] = {"forward", "backward_data", "backward_filter"};
  return (unsigned)kind < sizeof names / sizeof *names ? names[kind] : "?";
}

int crec_conv_output_size(const crec_conv *d, uint64_t out[3]) {
  out[0] = out[1] = out[2] = 0;
  if (!d || (d->spatial != 2 && d->spatial != 3)) return 0;
  for (uint32_t i = 0; i < d->spatial; i++) {
    uint64_t st = d->stride[i] ? d->stride[i] : 1, dl = d->dilation[i] ? d->dilation[i] : 1;
    uint64_t in = d->in_size[i], f = d->filter_size[i], pad = d->padding[i];
    if (f == 0 || in == 0 || in > INT32_MAX || f > INT32_MAX || pad > INT32_MAX || st > INT32_MAX || dl > INT32_MAX)
      return 0;
    uint64_t span = dl * (f - 1) + 1, padded = in + 2 * pad;
    if (span > padded) return 0;
    out[i] = (padded - span) / st + 1;
  }
  return 1;
}

/* Elements of n x c x sizes[0..spatial), or 0 past 2^40. */
static uint64_t tensor_elements(uint64_t n, uint64_t c, const uint64_t *sizes, uint32_t spatial) {
  const uint64_t limit = (uint64_t)1 << 40;
  if (n > limit || c > limit || n * c > limit) return 0;
  uint64_t e = n * c;
  for (uint32_t i = 0; i < spatial; i++) {
    if (sizes[i] > limit || e > limit / sizes[i]) return 0;
    e *= sizes[i];
  }
  return e;
}

/* The shape of convolution `d`: its kinds and element type, counts, and each
 * spatial dimension's sizes (the defaults filled in: groups, strides and
 * dilations of 0 are 1; dimensions past `spatial` are zeroed). */
static crec_status check_conv_shape(crec_conv *d, const char *label, const char *fn) {
  if ((unsigned)d->kind > CREC_CONV_BACKWARD_FILTER)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "%s: unknown kind %d", label, (int)d->kind);
  if ((unsigned)d->layout > CREC_CONV_NHWC)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "%s: unknown layout %d", label, (int)d->layout);
  if ((unsigned)d->filter_layout > CREC_CONV_FILTER_HWIO)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "%s: unknown filter layout %d", label, (int)d->filter_layout);
  if ((unsigned)d->activation > CREC_CONV_ACTIVATION_RELU)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "%s: unknown activation %d", label, (int)d->activation);
  if ((unsigned)d->algorithm > CREC_CONV_SEARCH)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "%s: unknown algorithm choice %d", label, (int)d->algorithm);
  if (d->type != CREC_ELEMENT_F32 && d->type != CREC_ELEMENT_F16 && d->type != CREC_ELEMENT_BF16)
    return crec__error(CREC_ERR_UNSUPPORTED, fn, "%s: element type %s is not supported (f32, f16 or bf16)", label,
                       crec_element_name(d->type));
  if (d->spatial != 2 && d->spatial != 3)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "%s: spatial %u: a convolution has 2 or 3 spatial dimensions",
                       label, d->spatial);
  if (d->groups == 0) d->groups = 1;
  if (d->batch == 0 || d->in_channels == 0 || d->out_channels == 0)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "%s: batch %" PRIu64 ", in_channels %" PRIu64
                       " and out_channels %" PRIu64 " must be at least 1", label, d->batch, d->in_channels, d->out_channels);
  if (d->batch > INT32_MAX || d->in_channels > INT32_MAX || d->out_channels > INT32_MAX || d->groups > INT32_MAX)
    return crec__error(CREC_ERR_TOO_LARGE, fn, "%s: a batch, channel or group count above 2^31-1", label);
  if (d->in_channels % d->groups || d->out_channels % d->groups)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn,
                       "%s: in_channels %" PRIu64 " and out_channels %" PRIu64 " must be multiples of groups %" PRIu64,
                       label, d->in_channels, d->out_channels, d->groups);
  for (uint32_t i = 0; i < 3; i++) {
    if (i >= d->spatial) {
      d->in_size[i] = d->filter_size[i] = d->stride[i] = d->padding[i] = d->dilation[i] = 0;
      continue;
    }
    if (d->in_size[i] == 0 || d->filter_size[i] == 0)
      return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "%s: in_size[%u] %" PRIu64 " and filter_size[%u] %" PRIu64
                         " must be at least 1", label, i, d->in_size[i], i, d->filter_size[i]);
    if (d->stride[i] == 0) d->stride[i] = 1;
    if (d->dilation[i] == 0) d->dilation[i] = 1;
    if (d->in_size[i] > INT32_MAX || d->filter_size[i] > INT32_MAX || d->stride[i] > INT32_MAX ||
        d->padding[i] > INT32_MAX || d->dilation[i] > INT32_MAX)
      return crec__error(CREC_ERR_TOO_LARGE, fn, "%s: a size, stride, padding or dilation of dimension %u above 2^31-1",
                         label, i);
  }
  return CREC_OK;
}

crec_status crec_program_add_conv(crec_program *program, crec_region region, const char *name, const crec_conv *conv,
                                  crec_command *out) {
  static const char fn[] = "crec_program_add_conv";
  crec_program *p = program;
  if (out) out->id = 0;
  crec_status s = crec__check_common(p, fn, region, out);
  if (s) return s;
  if (!conv) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'conv' is NULL");
  crec_conv d = CREC_CONV_INIT;
  if ((s = crec__take_struct(&d, sizeof d, conv, sizeof(crec_conv), fn, "argument 'conv'", "CREC_CONV_INIT"))) return s;
  d.struct_size = sizeof d;
  const char *cname = name ? name : "conv";
  char label[300];
  snprintf(label, sizeof label, "conv '%s'", cname);
  if ((s = check_conv_shape(&d, label, fn))) return s;
  uint64_t osz[3];
  if (!crec_conv_output_size(&d, osz))
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn,
                       "%s: the output is empty: a dilated filter spans more than the padded input in some dimension",
                       label);
  for (uint32_t i = 0; i < d.spatial; i++)
    if (osz[i] > INT32_MAX)
      return crec__error(CREC_ERR_TOO_LARGE, fn, "%s: output size %" PRIu64 " in dimension %u is above 2^31-1", label,
                         osz[i], i);
  uint64_t xe = tensor_elements(d.batch, d.in_channels, d.in_size, d.spatial);
  uint64_t we = tensor_elements(d.out_channels, d.in_channels / d.groups, d.filter_size, d.spatial);
  uint64_t ye = tensor_elements(d.batch, d.out_channels, osz, d.spatial);
  if (!xe || !we || !ye) return crec__error(CREC_ERR_TOO_LARGE, fn, "%s: a tensor of more than 2^40 elements", label);
  bool forward = d.kind == CREC_CONV_FORWARD;
  bool has_bias = d.bias.buffer.id != 0;
  if (!forward && (has_bias || d.activation != CREC_CONV_ACTIVATION_NONE))
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "%s: a bias or an activation belongs to a forward convolution, "
                       "not a %s one", label, crec_conv_kind_name(d.kind));
  size_t es = crec_element_size(d.type);
  const tensor_check k = {fn, label, "a convolution", "cuDNN"};
  char holds[160];
  snprintf(holds, sizeof holds, "its %" PRIu64 " %s elements are", xe, crec_element_name(d.type));
  if ((s = check_tensor(p, &k, "input", &d.input, xe * es, es, "element", holds, d.kind == CREC_CONV_BACKWARD_DATA)))
    return s;
  snprintf(holds, sizeof holds, "its %" PRIu64 " %s elements are", we, crec_element_name(d.type));
  if ((s = check_tensor(p, &k, "filter", &d.filter, we * es, es, "element", holds,
                        d.kind == CREC_CONV_BACKWARD_FILTER)))
    return s;
  snprintf(holds, sizeof holds, "its %" PRIu64 " %s elements are", ye, crec_element_name(d.type));
  if ((s = check_tensor(p, &k, "output", &d.output, ye * es, es, "element", holds, forward))) return s;
  if (has_bias) {
    snprintf(holds, sizeof holds, "its %" PRIu64 " %s elements (one per output channel) are", d.out_channels,
             crec_element_name(d.type));
    if ((s = check_tensor(p, &k, "bias", &d.bias, d.out_channels * es, es, "element", holds, false))) return s;
  }
  /* the written tensor overlaps none of the read ones */
  crec_range *written = forward ? &d.output : d.kind == CREC_CONV_BACKWARD_DATA ? &d.input : &d.filter;
  const char *wname = forward ? "output" : d.kind == CREC_CONV_BACKWARD_DATA ? "input" : "filter";
  struct {
    const crec_range *r;
    const char *name;
  } reads[] = {{&d.input, "input"}, {&d.filter, "filter"}, {&d.output, "output"}, {&d.bias, "bias"}};
  for (size_t i = 0; i < sizeof reads / sizeof *reads; i++)
    if (reads[i].r != written && reads[i].r->buffer.id && ranges_overlap(*written, *reads[i].r))
      return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "%s: arguments '%s' (written) and '%s' overlap in buffer '%s'",
                         label, wname, reads[i].name, crec__buffer_name(p, written->buffer));
  if (d.workspace_bytes == 0) d.workspace_bytes = CREC_CONV_DEFAULT_WORKSPACE;
  if (d.workspace_bytes > ((uint64_t)1 << 40))
    return crec__error(CREC_ERR_TOO_LARGE, fn, "%s: a workspace of %" PRIu64 " bytes", label, d.workspace_bytes);
  /* an HWIO filter's K-first copy after cuDNN's area */
  uint64_t filter_copy = (d.workspace_bytes + 255) & ~(uint64_t)255;
  uint64_t temp_bytes = d.filter_layout == CREC_CONV_FILTER_HWIO ? filter_copy + we * es : d.workspace_bytes;

  crec__command c = {0};
  c.kind = CREC_COMMAND_CONV;
  c.conv = crec__calloc(1, sizeof *c.conv);
  crec_buffer ws;
  if ((s = start_command(p, fn, region, &c, cname, c.conv, 5, "workspace", temp_bytes, &ws))) return s;
  *c.conv = (crec__conv){.desc = d, .out_size = {osz[0], osz[1], osz[2]},
                         .filter_copy = d.filter_layout == CREC_CONV_FILTER_HWIO ? filter_copy : 0,
                         .workspace = (uint32_t)crec__index(ws.id)};
  size_t n = 0;
  c.ops[n++] = crec_operand_of(d.input, d.kind == CREC_CONV_BACKWARD_DATA ? CREC_ACCESS_WRITE : CREC_ACCESS_READ);
  c.ops[n++] = crec_operand_of(d.filter, d.kind == CREC_CONV_BACKWARD_FILTER ? CREC_ACCESS_WRITE : CREC_ACCESS_READ);
  c.ops[n++] = crec_operand_of(d.output, forward ? CREC_ACCESS_WRITE : CREC_ACCESS_READ);
  if (has_bias) c.ops[n++] = crec_operand_of(d.bias, CREC_ACCESS_READ);
  c.ops[n] = crec_operand_of(crec_range_whole(ws), CREC_ACCESS_READ_WRITE);
  c.ops[n++].range.size = temp_bytes;
  c.num_ops = n;
  out->id = crec__handle(p, crec__commit_command(p, (uint32_t)crec__index(region.id), &c));
  return CREC_OK;
}

crec_status crec_command_get_conv(const crec_program *p, crec_command command, crec_conv *out) {
  static const char fn[] = "crec_command_get_conv";
  const crec__command *c;
  crec_status s = command_of(p, fn, command, CREC_COMMAND_CONV, out, out ? out->struct_size : 0, sizeof(crec_conv), &c);
  if (s) return s;
  *out = c->conv->desc;
  return CREC_OK;
}

/* --------------------------------------------------------- collectives ---- */

crec_status crec_program_add_communicator(crec_program *program, const char *name, int size,
                                          crec_comm_slot *out) {
  static const char fn[] = "crec_program_add_communicator";
  crec_program *p = program;
  if (out) out->id = 0;
  if (!p) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'program' is NULL");
  if (p->frozen) return crec__frozen(fn);
  if (!name) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'name' is NULL");
  if (!out) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'out' is NULL");
  if (!name[0]) return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "argument 'name' is empty");
  for (size_t i = 0; i < p->num_comms; i++)
    if (strcmp(p->comms[i].name, name) == 0)
      return crec__error(CREC_ERR_DUPLICATE_NAME, fn, "argument 'name': a communicator named '%s' already exists", name);
  if (size < 1 || size > 65536)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "argument 'size': %d ranks for communicator '%s' (1 to 65536)",
                       size, name);
  if (p->num_comms >= CREC__MAX_ITEMS) return crec__error(CREC_ERR_TOO_LARGE, fn, "too many communicators");
  char *copy = crec__strdup(name);
  if (!copy || CREC__RESERVE(p->comms, p->cap_comms, p->num_comms + 1) != CREC_OK) {
    crec__free(copy);
    return crec__oom(fn);
  }
  p->comms[p->num_comms].name = copy;
  p->comms[p->num_comms].size = size;
  out->id = crec__handle(p, p->num_comms++);
  return CREC_OK;
}

size_t crec_program_communicator_count(const crec_program *p) { return p ? p->num_comms : 0; }

crec_status crec_program_get_communicator(const crec_program *p, size_t index, const char **name, int *size) {
  static const char fn[] = "crec_program_get_communicator";
  if (!p) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'program' is NULL");
  if (name) *name = NULL;
  if (size) *size = 0;
  if (index >= p->num_comms)
    return crec__error(CREC_ERR_OUT_OF_RANGE, fn, "argument 'index': %zu, but there are %zu communicators", index,
                       p->num_comms);
  if (name) *name = p->comms[index].name;
  if (size) *size = p->comms[index].size;
  return CREC_OK;
}

const char *crec_collective_kind_name(crec_collective_kind kind) {
  static const char *const names[] = {"all_reduce",         "all_gather", "reduce_scatter", "all_to_all",
                                      "collective_permute", "replica_id", "partition_id"};
  return (unsigned)kind < sizeof names / sizeof *names ? names[kind] : "unknown";
}

const char *crec_reduction_name(crec_reduction reduction) {
  static const char *const names[] = {"sum", "prod", "min", "max"};
  return (unsigned)reduction < sizeof names / sizeof *names ? names[reduction] : "unknown";
}

/* Checks send or recv of a collective. */
static crec_status check_coll_range(const crec_program *p, const char *fn, const char *label, const char *what,
                                    crec_range *r, size_t esize, bool written) {
  crec_status s = crec__check_range(p, fn, what, r);
  if (s) return s;
  const crec__buffer *b = &p->buffers[crec__index(r->buffer.id)];
  if (r->size == CREC_WHOLE)
    return crec__error(CREC_ERR_UNSUPPORTED, fn, "%s: argument '%s' (buffer '%s'): a collective needs a range of "
                       "static size", label, what, b->name);
  if (written && (s = crec__check_writable(p, fn, what, *r))) return s;
  if (crec__range_is_host(p, *r))
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "%s: argument '%s': buffer '%s' is host memory; collectives "
                       "move device memory", label, what, b->name);
  if (r->offset % esize || b->alignment % esize)
    return crec__error(CREC_ERR_MISALIGNED, fn, "%s: argument '%s' (buffer '%s'): offset %" PRIu64 " or alignment %u "
                       "is not a multiple of the %zu-byte element", label, what, b->name, r->offset, b->alignment, esize);
  if (r->size % esize)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "%s: argument '%s': %" PRIu64 " bytes are not whole %zu-byte "
                       "elements", label, what, r->size, esize);
  return CREC_OK;
}

/* What checking a collective found out, for building it. */
typedef struct coll_check {
  const char *fn;
  char label[300];            /* "all_reduce 'name'", for messages */
  const crec__comm_slot *slot;
  uint32_t group_size;        /* ranks in each group */
  bool degenerate;            /* groups of one rank, or a permute of self-pairs: a copy or a zero fill */
  bool in_place;
} coll_check;

/* The element type and the reduction. */
static crec_status check_coll_types(crec_collective *d, const coll_check *k) {
  bool reduces = d->kind == CREC_COLLECTIVE_ALL_REDUCE || d->kind == CREC_COLLECTIVE_REDUCE_SCATTER;
  if ((unsigned)d->type > CREC_ELEMENT_F64)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, k->fn, "%s: unknown element type %d", k->label, (int)d->type);
  if (reduces && d->type == CREC_ELEMENT_BYTES)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, k->fn, "%s: a reduction needs a typed element, not bytes", k->label);
  if (reduces && (unsigned)d->reduction > CREC_REDUCTION_MAX)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, k->fn, "%s: unknown reduction %d", k->label, (int)d->reduction);
  if (reduces && d->type == CREC_ELEMENT_I16)
    return crec__error(CREC_ERR_UNSUPPORTED, k->fn, "%s: NCCL has no 16-bit integer type to reduce", k->label);
  if (!reduces) d->reduction = CREC_REDUCTION_SUM;
  return CREC_OK;
}

/* send and recv: in range, whole elements, and apart unless an all_reduce is exactly in place. */
static crec_status check_coll_ranges(const crec_program *p, crec_collective *d, coll_check *k) {
  size_t es = crec_element_size(d->type);
  crec_status s;
  if ((s = check_coll_range(p, k->fn, k->label, "send", &d->send, es, false))) return s;
  if ((s = check_coll_range(p, k->fn, k->label, "recv", &d->recv, es, true))) return s;
  bool same = d->send.buffer.id == d->recv.buffer.id;
  k->in_place = same && d->send.offset == d->recv.offset && d->send.size == d->recv.size;
  if (same && d->send.offset < d->recv.offset + d->recv.size && d->recv.offset < d->send.offset + d->send.size &&
      !(k->in_place && d->kind == CREC_COLLECTIVE_ALL_REDUCE))
    return crec__error(CREC_ERR_INVALID_ARGUMENT, k->fn,
                       "%s: 'send' and 'recv' overlap in buffer '%s' (only an all_reduce may be exactly in place)",
                       k->label, crec__buffer_name(p, d->send.buffer));
  return CREC_OK;
}

/* A permute's pairs: ranks of the communicator, each a source once and a target once. */
static crec_status check_pairs(const crec_collective *d, coll_check *k) {
  int nranks = k->slot->size;
  if (d->groups || d->num_groups)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, k->fn, "%s: a collective_permute takes pairs, not groups", k->label);
  if (d->num_pairs && !d->pairs) return crec__error(CREC_ERR_NULL_POINTER, k->fn, "%s: 'collective.pairs' is NULL", k->label);
  k->degenerate = true;
  for (size_t i = 0; i < d->num_pairs; i++) {
    int32_t src = d->pairs[2 * i], dst = d->pairs[2 * i + 1];
    if (src < 0 || src >= nranks || dst < 0 || dst >= nranks)
      return crec__error(CREC_ERR_INVALID_ARGUMENT, k->fn,
                         "%s: pair %zu (%d -> %d) names a rank outside communicator '%s' of %d ranks", k->label, i,
                         (int)src, (int)dst, k->slot->name, nranks);
    for (size_t j = 0; j < i; j++) {
      if (d->pairs[2 * j] == src)
        return crec__error(CREC_ERR_INVALID_ARGUMENT, k->fn, "%s: rank %d is the source of pairs %zu and %zu",
                           k->label, (int)src, j, i);
      if (d->pairs[2 * j + 1] == dst)
        return crec__error(CREC_ERR_INVALID_ARGUMENT, k->fn, "%s: rank %d is the target of pairs %zu and %zu",
                           k->label, (int)dst, j, i);
    }
    k->degenerate &= src == dst;
  }
  return CREC_OK;
}

/* The rank table of a collective's groups, or of an id's device assignment:
 * NULL with no shape, or num_groups rows of group_size ranks that hold every rank
 * of the communicator once. The words name the rows and columns ("groups",
 * "ranks"), what the rows do to the ranks ("partition"), a row ("group") and
 * what a rank may be in once ("group"). */
typedef struct table_words {
  const char *rows, *columns, *verb, *row, *place;
} table_words;

static crec_status check_rank_table(const crec_collective *d, const coll_check *k, const table_words *w) {
  int nranks = k->slot->size;
  const char *fn = k->fn, *label = k->label;
  if (!d->groups) {
    if (d->num_groups || d->group_size)
      return crec__error(CREC_ERR_NULL_POINTER, fn,
                         "%s: 'collective.groups' is NULL but num_groups is %zu and group_size %zu", label,
                         d->num_groups, d->group_size);
    return CREC_OK;
  }
  /* each factor first: their product could wrap around */
  if (d->num_groups == 0 || d->group_size == 0 || d->num_groups > (size_t)nranks || d->group_size > (size_t)nranks ||
      d->num_groups * d->group_size != (size_t)nranks)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "%s: %zu %s of %zu %s do not %s communicator '%s' of %d ranks",
                       label, d->num_groups, w->rows, d->group_size, w->columns, w->verb, k->slot->name, nranks);
  uint8_t seen[65536 / 8];
  memset(seen, 0, ((size_t)nranks + 7) / 8);
  for (size_t i = 0; i < (size_t)nranks; i++) {
    int32_t r = d->groups[i];
    if (r < 0 || r >= nranks)
      return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "%s: %s %zu names rank %d, outside communicator '%s' of %d ranks",
                         label, w->row, i / d->group_size, (int)r, k->slot->name, nranks);
    if (seen[r / 8] & (1u << (r % 8)))
      return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "%s: rank %d is in more than one %s", label, (int)r, w->place);
    seen[r / 8] |= (uint8_t)(1u << (r % 8));
  }
  return CREC_OK;
}

/* Replica groups: a partition of the communicator's ranks, of one rank each or
 * of every rank (in rank order but for an all_reduce). */
static crec_status check_groups(const crec_collective *d, coll_check *k) {
  int nranks = k->slot->size;
  const char *fn = k->fn, *label = k->label;
  if (d->pairs || d->num_pairs)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "%s: only a collective_permute takes pairs", label);
  static const table_words groups = {"groups", "ranks", "partition", "group", "group"};
  crec_status s = check_rank_table(d, k, &groups);
  if (s || !d->groups) return s;
  if (d->group_size != 1 && d->group_size != (size_t)nranks)
    return crec__error(CREC_ERR_UNSUPPORTED, fn,
                       "%s: groups of %zu out of %d ranks need NCCL sub-communicators, which crec does not make "
                       "yet; use one group of every rank, or groups of one rank", label, d->group_size, nranks);
  /* NCCL orders blocks by rank: a group in another order would need a renumbered communicator */
  if (d->group_size == (size_t)nranks && d->kind != CREC_COLLECTIVE_ALL_REDUCE)
    for (size_t i = 0; i < (size_t)nranks; i++)
      if (d->groups[i] != (int32_t)i)
        return crec__error(CREC_ERR_UNSUPPORTED, fn,
                           "%s: the group lists the ranks out of order (rank %d at position %zu); NCCL orders the "
                           "blocks of a %s by rank", label, (int)d->groups[i], i, crec_collective_kind_name(d->kind));
  k->group_size = (uint32_t)d->group_size;
  k->degenerate = d->group_size == 1;
  return CREC_OK;
}

/* send and recv hold as many elements as the kind needs over groups of k->group_size. */
static crec_status check_coll_shape(const crec_collective *d, const coll_check *k) {
  size_t es = crec_element_size(d->type);
  uint64_t ns = d->send.size / es, nr = d->recv.size / es, g = k->group_size;
  bool fits = true;
  switch (d->kind) {
    case CREC_COLLECTIVE_ALL_REDUCE:
    case CREC_COLLECTIVE_PERMUTE: fits = nr == ns; break;
    case CREC_COLLECTIVE_ALL_GATHER: fits = nr == ns * g; break;
    case CREC_COLLECTIVE_REDUCE_SCATTER: fits = ns == nr * g; break;
    case CREC_COLLECTIVE_ALL_TO_ALL: fits = ns == nr && ns % g == 0; break;
    case CREC_COLLECTIVE_REPLICA_ID:
    case CREC_COLLECTIVE_PARTITION_ID: break; /* check_id() */
  }
  if (!fits)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, k->fn,
                       "%s: shape mismatch: send holds %" PRIu64 " and recv %" PRIu64 " %s elements, which does not "
                       "fit a %s over groups of %u ranks", k->label, ns, nr, crec_element_name(d->type),
                       crec_collective_kind_name(d->kind), k->group_size);
  return CREC_OK;
}

/* replica_id and partition_id: one i32 written, no send, no pairs; groups (if
 * any) a partition of the ranks, in any shape and order (rows are replicas). */
static crec_status check_id(const crec_program *p, crec_collective *d, coll_check *k) {
  const char *fn = k->fn, *label = k->label;
  if (d->send.buffer.id || d->send.size || d->send.offset)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "%s: argument 'collective.send': a %s reads nothing (leave it zero)",
                       label, crec_collective_kind_name(d->kind));
  if (d->type != CREC_ELEMENT_I32)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "%s: argument 'collective.type' is %s: a %s writes one i32", label,
                       crec_element_name(d->type), crec_collective_kind_name(d->kind));
  if (d->async)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "%s: a %s cannot be async (it moves nothing between ranks)", label,
                       crec_collective_kind_name(d->kind));
  crec_status s = check_coll_range(p, fn, label, "recv", &d->recv, 4, true);
  if (s) return s;
  if (d->recv.size != 4)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "%s: argument 'recv' is %" PRIu64 " bytes: it holds one i32", label,
                       d->recv.size);
  if (d->pairs || d->num_pairs)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "%s: only a collective_permute takes pairs", label);
  static const table_words assignment = {"replicas", "partitions", "cover", "replica", "place"};
  if ((s = check_rank_table(d, k, &assignment))) return s;
  d->reduction = CREC_REDUCTION_SUM;
  k->group_size = (uint32_t)(d->groups ? d->group_size : 1);
  k->degenerate = true; /* a fill of recv, never NCCL */
  return CREC_OK;
}

/* Whether `kind` is replica_id or partition_id. */
static bool is_id(crec_collective_kind kind) {
  return kind == CREC_COLLECTIVE_REPLICA_ID || kind == CREC_COLLECTIVE_PARTITION_ID;
}

/* The command of a checked collective, owning copies of its groups and pairs. */
static crec_status build_collective(const crec_collective *desc, const char *name, const coll_check *k,
                                    crec__command *c) {
  crec_collective d = *desc;
  int nranks = k->slot->size;
  memset(c, 0, sizeof *c);
  c->kind = CREC_COMMAND_COLLECTIVE;
  c->name = crec__strdup(name);
  c->coll = crec__calloc(1, sizeof *c->coll);
  c->ops = crec__calloc(2, sizeof *c->ops);
  bool ok = c->name && c->coll && c->ops;
  if (ok && d.groups) ok = (c->coll->groups = crec__memdup(d.groups, (size_t)nranks * sizeof *d.groups)) != NULL;
  if (ok && d.num_pairs) ok = (c->coll->pairs = crec__memdup(d.pairs, d.num_pairs * 2 * sizeof *d.pairs)) != NULL;
  if (!ok) {
    crec__library_free(c);
    crec__free(c->name);
    return crec__oom(k->fn);
  }
  d.groups = c->coll->groups;
  d.pairs = c->coll->pairs;
  d.async = d.async != 0;
  c->coll->desc = d;
  c->coll->comm = (uint32_t)crec__index(d.communicator.id);
  c->coll->group_size = k->group_size;
  c->coll->start = CREC__NONE;
  c->coll->degenerate = k->degenerate;
  c->coll->send_count = d.send.size / crec_element_size(d.type);
  if (k->degenerate) {
    /* recorded as a copy of send into recv (or a zero fill of recv): the memcpy and
     * memset node machinery reads these fields */
    c->src = d.send;
    c->dst = d.recv;
    c->bytes = d.recv.size;
    c->memset_value = 0;
    c->memset_element_size = 1;
  }
  if (is_id(d.kind)) {
    /* a fill of one i32, its value from the bound communicator's rank */
    c->memset_element_size = 4;
    c->ops[0] = crec_operand_of(d.recv, CREC_ACCESS_WRITE);
    c->num_ops = 1;
    return CREC_OK;
  }
  c->ops[0] = crec_operand_of(d.send, CREC_ACCESS_READ);
  c->ops[1] = crec_operand_of(d.recv, k->in_place ? CREC_ACCESS_READ_WRITE : CREC_ACCESS_WRITE);
  c->num_ops = 2;
  return CREC_OK;
}

crec_status crec_program_add_collective(crec_program *program, crec_region region, const char *name,
                                        const crec_collective *collective, crec_command *out) {
  static const char fn[] = "crec_program_add_collective";
  crec_program *p = program;
  if (out) out->id = 0;
  crec_status s = crec__check_common(p, fn, region, out);
  if (s) return s;
  if (!collective) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'collective' is NULL");
  crec_collective d = CREC_COLLECTIVE_INIT;
  if ((s = crec__take_struct(&d, sizeof d, collective, sizeof(crec_collective), fn, "argument 'collective'",
                             "CREC_COLLECTIVE_INIT")))
    return s;
  d.struct_size = sizeof d;
  if ((unsigned)d.kind > CREC_COLLECTIVE_PARTITION_ID)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "argument 'collective.kind': unknown kind %d", (int)d.kind);
  const char *cname = name ? name : crec_collective_kind_name(d.kind);
  coll_check k;
  memset(&k, 0, sizeof k);
  k.fn = fn;
  snprintf(k.label, sizeof k.label, "%s '%s'", crec_collective_kind_name(d.kind), cname);
  if ((s = crec__check_handle(p, d.communicator.id, p->num_comms, fn, "communicator",
                              "%s: argument 'collective.communicator'", k.label)))
    return s;
  k.slot = &p->comms[crec__index(d.communicator.id)];
  k.group_size = (uint32_t)k.slot->size;
  if (is_id(d.kind) ? (s = check_id(p, &d, &k)) != CREC_OK
                    : (s = check_coll_types(&d, &k)) || (s = check_coll_ranges(p, &d, &k)) ||
                          (s = d.kind == CREC_COLLECTIVE_PERMUTE ? check_pairs(&d, &k) : check_groups(&d, &k)) ||
                          (s = check_coll_shape(&d, &k)))
    return s;
  crec__command c;
  if ((s = build_collective(&d, cname, &k, &c))) return s;
  s = commit(p, fn, region, &c, out);
  if (s) {
    crec__library_free(&c);
    crec__free(c.name);
  }
  return s;
}

crec_status crec_program_add_collective_done(crec_program *program, crec_region region,
                                             const char *name, crec_command start,
                                             crec_command *out) {
  static const char fn[] = "crec_program_add_collective_done";
  crec_program *p = program;
  if (out) out->id = 0;
  crec_status s = crec__check_common(p, fn, region, out);
  if (s) return s;
  if ((s = crec__check_handle(p, start.id, p->num_commands, fn, "command", "argument 'start'"))) return s;
  size_t si = crec__index(start.id);
  crec__command *sc = &p->commands[si];
  if (sc->kind != CREC_COMMAND_COLLECTIVE || sc->coll->start != CREC__NONE || !sc->coll->desc.async)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "argument 'start': command '%s' is not an async collective start",
                       sc->name);
  if (sc->coll->has_done)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "argument 'start': collective '%s' already has its done", sc->name);
  if (sc->region != crec__index(region.id))
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn,
                       "argument 'region': the done of '%s' must be in the region of its start", sc->name);
  crec__command c = {0};
  c.kind = CREC_COMMAND_COLLECTIVE;
  if (name) {
    c.name = crec__strdup(name);
  } else if ((c.name = crec__malloc(strlen(sc->name) + 6)) != NULL) {
    strcpy(c.name, sc->name);
    strcat(c.name, ".done");
  }
  c.coll = crec__calloc(1, sizeof *c.coll);
  /* the done touches what its start touches: hazards order it after the start,
   * and later users of the buffers after it */
  c.ops = crec__memdup(sc->ops, sc->num_ops * sizeof *sc->ops);
  if (!c.name || !c.coll || !c.ops || crec__reserve_command(p, (uint32_t)crec__index(region.id), 0) != CREC_OK) {
    crec__library_free(&c);
    crec__free(c.name);
    return crec__oom(fn);
  }
  for (size_t i = 0; i < sc->num_ops; i++) c.ops[i].access = CREC_ACCESS_READ_WRITE;
  c.num_ops = sc->num_ops;
  c.coll->desc = sc->coll->desc;
  c.coll->desc.groups = NULL; /* the start owns them; getters read the start */
  c.coll->desc.pairs = NULL;
  c.coll->comm = sc->coll->comm;
  c.coll->start = (uint32_t)si;
  uint32_t ci = crec__commit_command(p, (uint32_t)crec__index(region.id), &c);
  p->commands[si].coll->has_done = true; /* `sc` may have moved with the commands array */
  out->id = crec__handle(p, ci);
  return CREC_OK;
}

crec_status crec_command_get_collective(const crec_program *p, crec_command command,
                                        crec_collective *out, crec_command *start) {
  static const char fn[] = "crec_command_get_collective";
  if (start) start->id = 0;
  const crec__command *c;
  crec_status s = command_of(p, fn, command, CREC_COMMAND_COLLECTIVE, out, out ? out->struct_size : 0,
                             sizeof(crec_collective), &c);
  if (s) return s;
  if (c->coll->start != CREC__NONE) {
    if (start) start->id = crec__handle(p, c->coll->start);
    c = &p->commands[c->coll->start];
  }
  *out = c->coll->desc;
  return CREC_OK;
}

/* ------------------------------------------------- barriers across ranks ---- */

crec_status crec_program_add_comm_barrier(crec_program *program, crec_region region, const char *name,
                                          crec_comm_slot communicator, crec_command *out) {
  static const char fn[] = "crec_program_add_comm_barrier";
  crec_program *p = program;
  if (out) out->id = 0;
  crec_status s = crec__check_common(p, fn, region, out);
  if (s) return s;
  const char *cname = name ? name : "barrier";
  if ((s = crec__check_handle(p, communicator.id, p->num_comms, fn, "communicator",
                              "barrier '%s': argument 'communicator'", cname)))
    return s;
  uint32_t slot = (uint32_t)crec__index(communicator.id);
  int nranks = p->comms[slot].size;
  crec__command c = {0};
  c.kind = CREC_COMMAND_BARRIER;
  c.coll = crec__calloc(1, sizeof *c.coll);
  crec_buffer scratch;
  if ((s = start_command(p, fn, region, &c, cname, c.coll, 1, "scratch", 4, &scratch))) return s;
  /* a one-element all_reduce: it completes on a rank only after every rank has
   * started it, which it does after everything before the barrier */
  crec_range r = crec_range_of(scratch, 0, 4);
  crec_collective d = CREC_COLLECTIVE_INIT;
  d.kind = CREC_COLLECTIVE_ALL_REDUCE;
  d.communicator = communicator;
  d.type = CREC_ELEMENT_I32;
  d.reduction = CREC_REDUCTION_MAX; /* of whatever the scratch holds: no overflow */
  d.send = d.recv = r;
  c.coll->desc = d;
  c.coll->comm = slot;
  c.coll->group_size = (uint32_t)nranks;
  c.coll->start = CREC__NONE;
  c.coll->degenerate = nranks == 1; /* an in-place one-rank all_reduce: nothing to do */
  c.coll->send_count = 1;
  c.ops[0] = crec_operand_of(r, CREC_ACCESS_READ_WRITE);
  c.num_ops = 1;
  out->id = crec__handle(p, crec__commit_command(p, (uint32_t)crec__index(region.id), &c));
  return CREC_OK;
}

crec_status crec_command_get_barrier(const crec_program *p, crec_command command, crec_comm_slot *communicator,
                                     crec_buffer *scratch) {
  static const char fn[] = "crec_command_get_barrier";
  if (communicator) communicator->id = 0;
  if (scratch) scratch->id = 0;
  if (!p) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'program' is NULL");
  crec_status s = crec__check_handle(p, command.id, p->num_commands, fn, "command", NULL);
  if (s) return s;
  const crec__command *c = &p->commands[crec__index(command.id)];
  if (c->kind != CREC_COMMAND_BARRIER)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "command '%s' is a %s, not a barrier", c->name,
                       crec_command_kind_name(c->kind));
  if (!c->coll) return CREC_OK; /* a barrier within the rank */
  if (communicator) communicator->id = crec__handle(p, c->coll->comm);
  if (scratch) *scratch = c->ops[0].range.buffer;
  return CREC_OK;
}

/* ----------------------------------------------------- custom commands ---- */

crec_status crec_program_add_custom(crec_program *program, crec_region region, const char *name,
                                    const crec_custom *custom, crec_command *out) {
  static const char fn[] = "crec_program_add_custom";
  crec_program *p = program;
  if (out) out->id = 0;
  crec_status s = crec__check_common(p, fn, region, out);
  if (s) return s;
  if (!custom) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'custom' is NULL");
  crec_custom given = CREC_CUSTOM_INIT;
  if ((s = crec__take_struct(&given, sizeof given, custom, sizeof(crec_custom), fn, "argument 'custom'", "CREC_CUSTOM_INIT")))
    return s;
  custom = &given;
  if (!custom->target) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'custom.target' is NULL");
  if (!custom->target[0]) return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "argument 'custom.target' is empty");
  if (custom->num_operands && !custom->operands)
    return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'custom.operands' is NULL but num_operands is %zu",
                       custom->num_operands);
  if (custom->num_kernels && !custom->kernels)
    return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'custom.kernels' is NULL but num_kernels is %zu",
                       custom->num_kernels);
  if (custom->attributes_size && !custom->attributes)
    return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'custom.attributes' is NULL but attributes_size is %zu",
                       custom->attributes_size);
  if (custom->num_operands > 65536 || custom->num_kernels > 65536)
    return crec__error(CREC_ERR_TOO_LARGE, fn, "custom '%s': more than 65536 operands or kernels", custom->target);
  size_t no = custom->num_operands, nk = custom->num_kernels, used = 0;
  crec__command c = {0};
  c.kind = CREC_COMMAND_CUSTOM;
  c.custom = crec__calloc(1, sizeof *c.custom);
  if (!c.custom) return crec__oom(fn);
  c.custom->operands = crec__calloc(no ? no : 1, sizeof *c.custom->operands);
  c.custom->kernels = crec__calloc(nk ? nk : 1, sizeof *c.custom->kernels);
  if (!c.custom->operands || !c.custom->kernels) {
    s = crec__oom(fn);
    goto fail;
  }
  char what[48];
  for (size_t i = 0; i < no; i++) {
    crec_operand o = custom->operands[i];
    if (o.range.buffer.id == 0) {
      c.custom->operands[i] = crec_operand_hole();
      continue;
    }
    snprintf(what, sizeof what, "custom.operands[%zu]", i);
    if ((s = check_operand(p, fn, what, &o))) goto fail;
    c.custom->operands[i] = o;
    used++;
  }
  for (size_t i = 0; i < nk; i++) {
    if ((s = crec__check_handle(p, custom->kernels[i].id, p->num_kernels, fn, "kernel", "argument 'custom.kernels[%zu]'",
                                i))) {
      goto fail;
    }
    c.custom->kernels[i] = custom->kernels[i];
  }
  c.name = crec__strdup(name ? name : custom->target);
  c.custom->target = crec__strdup(custom->target);
  c.ops = crec__calloc(used ? used : 1, sizeof *c.ops);
  if (custom->attributes_size) c.custom->attributes = crec__memdup(custom->attributes, custom->attributes_size);
  if (!c.name || !c.custom->target || !c.ops || (custom->attributes_size && !c.custom->attributes)) {
    s = crec__oom(fn);
    goto fail;
  }
  c.custom->num_operands = no;
  c.custom->num_kernels = nk;
  c.custom->attributes_size = custom->attributes_size;
  for (size_t i = 0; i < no; i++)
    if (c.custom->operands[i].range.buffer.id) c.ops[c.num_ops++] = c.custom->operands[i];
  if ((s = commit(p, fn, region, &c, out))) goto fail;
  return CREC_OK;
fail:
  crec__library_free(&c);
  crec__free(c.name);
  return s;
}

crec_status crec_command_get_custom(const crec_program *p, crec_command command, crec_custom *out) {
  static const char fn[] = "crec_command_get_custom";
  const crec__command *c;
  crec_status s = command_of(p, fn, command, CREC_COMMAND_CUSTOM, out, out ? out->struct_size : 0,
                             sizeof(crec_custom), &c);
  if (s) return s;
  const crec__custom *u = c->custom;
  out->struct_size = sizeof *out;
  out->target = u->target;
  out->operands = u->operands;
  out->num_operands = u->num_operands;
  out->kernels = u->kernels;
  out->num_kernels = u->num_kernels;
  out->attributes = u->attributes;
  out->attributes_size = u->attributes_size;
  return CREC_OK;
}

/* ------------------------------------------------------ host callbacks ---- */

/* The first crec_host_callback: fn through num_operands (fn_buffers came later). */
#define HOST_CALLBACK_OLDEST offsetof(crec_host_callback, fn_buffers)

crec_status crec_program_add_host_callback(crec_program *program, crec_region region,
                                           const char *name, const crec_host_callback *callback,
                                           crec_command *out) {
  static const char fn[] = "crec_program_add_host_callback";
  crec_program *p = program;
  if (out) out->id = 0;
  crec_status s = crec__check_common(p, fn, region, out);
  if (s) return s;
  if (!callback) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'callback' is NULL");
  crec_host_callback given = CREC_HOST_CALLBACK_INIT;
  if ((s = crec__take_struct(&given, sizeof given, callback, HOST_CALLBACK_OLDEST, fn, "argument 'callback'", "CREC_HOST_CALLBACK_INIT")))
    return s;
  callback = &given;
  if (!callback->fn && !callback->fn_buffers)
    return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'callback': both fn and fn_buffers are NULL");
  if (callback->fn && callback->fn_buffers)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "argument 'callback': fn and fn_buffers are both set; set one");
  if (callback->num_operands && !callback->operands)
    return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'callback.operands' is NULL but num_operands is %zu",
                       callback->num_operands);
  if (callback->num_operands > 65536)
    return crec__error(CREC_ERR_TOO_LARGE, fn, "argument 'callback.num_operands': %zu operands", callback->num_operands);
  size_t no = callback->num_operands;
  crec__command c = {0};
  c.kind = CREC_COMMAND_HOST;
  c.ops = crec__calloc(no ? no : 1, sizeof *c.ops);
  if (!c.ops) return crec__oom(fn);
  char what[48];
  for (size_t i = 0; i < no; i++) {
    crec_operand o = callback->operands[i];
    snprintf(what, sizeof what, "callback.operands[%zu]", i);
    if ((s = check_operand(p, fn, what, &o))) goto fail;
    c.ops[i] = o;
  }
  c.num_ops = no;
  c.name = crec__strdup(name ? name : "host");
  c.hostcb = crec__calloc(1, sizeof *c.hostcb);
  if (!c.hostcb) {
    s = crec__oom(fn);
    goto fail;
  }
  if ((s = commit(p, fn, region, &c, out))) goto fail;
  /* only now does the program own `user` (the committed command shares c.hostcb) */
  c.hostcb->fn = callback->fn;
  c.hostcb->fn_buffers = callback->fn_buffers;
  c.hostcb->user = callback->user;
  c.hostcb->user_free = callback->user_free;
  return CREC_OK;
fail:
  crec__library_free(&c); /* user_free is still NULL: the caller keeps `user` */
  crec__free(c.name);
  return s;
}

crec_status crec_command_get_host_callback(const crec_program *p, crec_command command,
                                           crec_host_callback *out) {
  static const char fn[] = "crec_command_get_host_callback";
  const crec__command *c;
  crec_status s = command_of(p, fn, command, CREC_COMMAND_HOST, out, out ? out->struct_size : 0,
                             HOST_CALLBACK_OLDEST, &c);
  if (s) return s;
  crec_host_callback v = CREC_HOST_CALLBACK_INIT;
  v.fn = c->hostcb->fn;
  v.fn_buffers = c->hostcb->fn_buffers;
  v.user = c->hostcb->user;
  v.user_free = c->hostcb->user_free;
  v.operands = c->ops;
  v.num_operands = c->num_ops;
  return crec__give_struct(out, &v, sizeof v, HOST_CALLBACK_OLDEST, fn, "argument 'out'", "CREC_HOST_CALLBACK_INIT");
}

/* ----------------------------------------------------- imported graphs ---- */

crec_status crec__program_add_graph_command(crec_program *p, crec_region region, const char *name,
                                            const crec_operand *ops, size_t num_ops, const crec__graphcmd *g,
                                            const char *fn, crec_command *out) {
  if (out) out->id = 0;
  crec_status s = crec__check_common(p, fn, region, out);
  if (s) return s;
  crec__command c = {0};
  c.kind = CREC_COMMAND_GRAPH;
  c.ops = crec__calloc(num_ops ? num_ops : 1, sizeof *c.ops);
  if (!c.ops) return crec__oom(fn);
  char what[48];
  for (size_t i = 0; i < num_ops; i++) {
    crec_operand o = ops[i];
    snprintf(what, sizeof what, "operands[%zu]", i);
    if ((s = check_operand(p, fn, what, &o))) goto fail;
    c.ops[i] = o;
  }
  c.num_ops = num_ops;
  c.name = crec__strdup(name ? name : "graph");
  c.graph = crec__calloc(1, sizeof *c.graph);
  if (!c.graph) {
    s = crec__oom(fn);
    goto fail;
  }
  if ((s = commit(p, fn, region, &c, out))) goto fail;
  /* only now does the program own the hold (the committed command shares c.graph) */
  *c.graph = *g;
  return CREC_OK;
fail:
  crec__library_free(&c); /* release is still NULL: the caller keeps its hold */
  crec__free(c.name);
  return s;
}

bool crec__tensor_map_describe(const void *attributes, size_t size, char *buf, size_t buf_size) {
  static const char *const types[] = {"u8",  "u16", "u32",  "i32",     "u64",  "i64",     "f16",
                                      "f32", "f64", "bf16", "f32 ftz", "tf32", "tf32 ftz"};
  static const char *const swizzles[] = {"none", "32B", "64B", "128B"};
  static const char *const promos[] = {"none", "64B", "128B", "256B"};
  static const char *const interleaves[] = {"none", "16B", "32B"};
  crec__tensor_map_attrs a;
  if (!attributes || size != sizeof a || !buf_size) return false;
  memcpy(&a, attributes, sizeof a);
  if (a.version != CREC__TENSOR_MAP_VERSION || a.rank < 1 || a.rank > 5) return false;
  size_t n = (size_t)snprintf(buf, buf_size, "%s, rank %u, dims ",
                              a.data_type < sizeof types / sizeof *types ? types[a.data_type] : "?", a.rank);
  for (uint32_t i = 0; i < a.rank && n < buf_size; i++)
    n += (size_t)snprintf(buf + n, buf_size - n, "%s%" PRIu64, i ? "x" : "", a.dims[i]);
  for (uint32_t i = 0; i + 1 < a.rank && n < buf_size; i++)
    n += (size_t)snprintf(buf + n, buf_size - n, "%s%" PRIu64 " B", i ? ", " : ", strides ", a.strides[i]);
  for (uint32_t i = 0; i < a.rank && n < buf_size; i++)
    n += (size_t)snprintf(buf + n, buf_size - n, "%s%" PRIu32, i ? "x" : ", box ", a.box[i]);
  if (n < buf_size)
    snprintf(buf + n, buf_size - n, ", swizzle %s, L2 promotion %s, out-of-bounds fill %s, interleave %s",
             a.swizzle < 4 ? swizzles[a.swizzle] : "?", a.l2_promotion < 4 ? promos[a.l2_promotion] : "?",
             a.oob_fill ? "NaN" : "zero", a.interleave < 3 ? interleaves[a.interleave] : "?");
  return true;
}
