/* Program files (serialize.h): a program written to bytes, and rebuilt from
 * them through the public builders.
 *
 * The writer reads the program's own tables (internal.h), in creation order.
 * The reader never fills those tables: it calls the builders in the order the
 * original was built, so that every builder check runs again on the file's
 * contents. The one thing creation order does not say by itself is how buffer
 * creation interleaves with commands: a GEMM adds its workspace temporary, and
 * a barrier across ranks its scratch, when they are added. So each buffer
 * record names the command that made it (or none), and the reader creates the
 * buffers lazily, in order: before a command, every buffer it uses (and, for
 * a GEMM or a barrier across ranks, every buffer before the one it makes);
 * scalars likewise, a size scalar after the argument it measures. Any order
 * the original was really built in satisfies these rules, so a file that
 * breaks them was not written by crec_program_serialize(). */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

#define HEADER_SIZE 32u
#define NONE CREC__NONE

static const unsigned char magic[8] = {0x89, 'C', 'R', 'E', 'C', 'B', '\r', '\n'};

/* Sections, in the order they come (every format version). */
enum { SEC_META, SEC_MODS, SEC_KERN, SEC_COMM, SEC_BUFS, SEC_SCAL, SEC_CMDS, NUM_SECTIONS };
static const char section_tags[NUM_SECTIONS][5] = {"META", "MODS", "KERN", "COMM", "BUFS", "SCAL", "CMDS"};

/* ================================================================ writing ==== */

typedef crec__text writer;

static void w_bytes(writer *w, const void *data, size_t n) {
  if (n) crec__text_putn(w, data, n);
}
static void w_u8(writer *w, uint32_t v) {
  unsigned char b = (unsigned char)v;
  w_bytes(w, &b, 1);
}
static void w_u32(writer *w, uint32_t v) {
  unsigned char b[4];
  for (int i = 0; i < 4; i++) b[i] = (unsigned char)(v >> (8 * i));
  w_bytes(w, b, 4);
}
static void w_u64(writer *w, uint64_t v) {
  unsigned char b[8];
  for (int i = 0; i < 8; i++) b[i] = (unsigned char)(v >> (8 * i));
  w_bytes(w, b, 8);
}
static void w_i32(writer *w, int32_t v) { w_u32(w, (uint32_t)v); }
static void w_f64(writer *w, double v) {
  uint64_t bits;
  memcpy(&bits, &v, sizeof bits);
  w_u64(w, bits);
}
static void w_str(writer *w, const char *s) {
  size_t n = strlen(s);
  w_u32(w, (uint32_t)n);
  w_bytes(w, s, n);
}
/* A table index from a handle (NONE for id 0). */
static uint32_t index_of(uint32_t id) { return id ? (uint32_t)crec__index(id) : NONE; }
static void w_range(writer *w, crec_range r) {
  w_u32(w, index_of(r.buffer.id));
  w_u64(w, r.offset);
  w_u64(w, r.size);
}
static void w_dim(writer *w, crec_dim d) {
  w_u32(w, index_of(d.scalar.id));
  w_u32(w, d.value);
}
static void w_matrix(writer *w, const crec_matrix *m) {
  w_range(w, m->range);
  w_u64(w, m->rows);
  w_u64(w, m->cols);
  w_u64(w, m->ld);
  w_u64(w, m->batch_stride);
}
static void put_le64(unsigned char *at, uint64_t v) {
  for (int i = 0; i < 8; i++) at[i] = (unsigned char)(v >> (8 * i));
}

/* Starts a section; returns where its size goes (patched by end_section()). */
static size_t begin_section(writer *w, int sec) {
  w_bytes(w, section_tags[sec], 4);
  size_t at = w->len;
  w_u64(w, 0);
  return at;
}
static void end_section(writer *w, size_t at) {
  if (!w->failed) put_le64((unsigned char *)w->data + at, w->len - at - 8);
}

/* ---- the target chips ---- */

/* The chip one module is built for ("sm_90", "compute_90"), or "" when it does not say. */
static void module_target(const crec__module *m, char *out, size_t size) {
  const unsigned char *img = m->image;
  out[0] = '\0';
  if (m->format == CREC_IMAGE_PTX) {
    /* the first ".target sm_XX" directive; PTX is compiled for that chip and later ones */
    static const char dir[] = ".target";
    for (size_t i = 0; i + sizeof dir <= m->size; i++) {
      if (memcmp(img + i, dir, sizeof dir - 1) != 0 || (i > 0 && img[i - 1] != '\n' && img[i - 1] != ' ' &&
                                                        img[i - 1] != '\t'))
        continue;
      size_t j = i + sizeof dir - 1;
      if (j >= m->size || (img[j] != ' ' && img[j] != '\t')) continue;
      while (j < m->size && (img[j] == ' ' || img[j] == '\t')) j++;
      if (j + 3 > m->size || memcmp(img + j, "sm_", 3) != 0) return;
      size_t k = j + 3, n = 0;
      char chip[24];
      while (k < m->size && n + 1 < sizeof chip &&
             ((img[k] >= '0' && img[k] <= '9') || (img[k] >= 'a' && img[k] <= 'z')))
        chip[n++] = (char)img[k++];
      chip[n] = '\0';
      if (n) snprintf(out, size, "compute_%s", chip);
      return;
    }
  } else if (m->format == CREC_IMAGE_CUBIN) {
    /* a 64-bit little-endian CUDA ELF: the SM is in e_flags, whose layout
     * changed with the ELF ABI version 8 (CUDA 12.8) */
    if (m->size < 0x34 || img[4] != 2 || img[5] != 1 || img[7] != 0x41) return;
    uint32_t flags = (uint32_t)img[0x30] | (uint32_t)img[0x31] << 8 | (uint32_t)img[0x32] << 16 |
                     (uint32_t)img[0x33] << 24;
    uint32_t sm = img[8] >= 8 ? (flags >> 8) & 0xffu : flags & 0xffu;
    if (sm >= 10) snprintf(out, size, "sm_%u", sm);
  }
}

/* True when `chip` is one of the comma-separated entries of `list`. */
static bool listed(const char *list, const char *chip) {
  size_t n = strlen(chip);
  for (const char *s = list; *s;) {
    const char *comma = strchr(s, ',');
    size_t len = comma ? (size_t)(comma - s) : strlen(s);
    if (len == n && memcmp(s, chip, n) == 0) return true;
    s += len + (comma ? 1 : 0);
  }
  return false;
}

/* The target of the whole program: its modules' chips in order, without repeats. */
static void program_target(const crec_program *p, char *out, size_t size) {
  size_t len = 0;
  out[0] = '\0';
  for (size_t i = 0; i < p->num_modules; i++) {
    char chip[40];
    module_target(&p->modules[i], chip, sizeof chip);
    if (!chip[0] || listed(out, chip)) continue;
    size_t n = strlen(chip) + (len ? 1 : 0);
    if (len + n + 1 > size) break; /* the rest does not fit in crec_program_file_info.target */
    snprintf(out + len, size - len, "%s%s", len ? "," : "", chip);
    len += n;
  }
  if (!out[0]) snprintf(out, size, "any");
}

/* ---- what a file cannot hold ---- */

static crec_status refuse_host_code(const crec_program *p, const char *fn) {
  static const char need[] =
      "a program file would need its code as a relinkable host object or as its MLIR source, which this crec "
      "does not write yet; lower the program from MLIR in each process instead";
  if (p->num_host_fns)
    return crec__error(CREC_ERR_UNSUPPORTED, fn,
                       "host function 0 ('%s') computes scalars with code of this process (a function pointer); %s",
                       p->host_fns[0].name, need);
  for (size_t i = 0; i < p->num_commands; i++)
    if (p->commands[i].kind == CREC_COMMAND_GRAPH) {
      char label[160];
      return crec__error(CREC_ERR_UNSUPPORTED, fn,
                         "%s is an imported graph, a CUDA graph of this process and the memory its work "
                         "allocated; a program file cannot hold it (capture and import the work in each process)",
                         crec__command_label(p, i, label, sizeof label));
    }
  for (size_t i = 0; i < p->num_commands; i++)
    if (p->commands[i].kind == CREC_COMMAND_HOST) {
      char label[160];
      return crec__error(CREC_ERR_UNSUPPORTED, fn, "%s is a host callback, code of this process (a function pointer); %s",
                         crec__command_label(p, i, label, sizeof label), need);
    }
  return CREC_OK;
}

/* ---- sections ---- */

static void write_launch(writer *w, const crec_program *p, const crec__command *c) {
  (void)p;
  w_u32(w, c->kernel);
  for (int i = 0; i < 3; i++) w_dim(w, c->grid[i]);
  for (int i = 0; i < 3; i++) w_dim(w, c->block[i]);
  w_dim(w, c->shared_bytes);
  w_u32(w, (uint32_t)c->num_args);
  for (size_t i = 0; i < c->num_args; i++) {
    const crec_arg *a = &c->args[i].arg;
    w_u8(w, (uint32_t)a->kind);
    if (a->kind == CREC_ARG_BUFFER) {
      w_u8(w, (uint32_t)a->access);
      w_range(w, a->range);
    } else if (a->kind == CREC_ARG_SCALAR) {
      w_u32(w, index_of(a->scalar.id));
    } else {
      w_i32(w, (int32_t)a->type);
      w_u32(w, a->size);
      w_bytes(w, a->data ? a->data : (const void *)a->value.bytes, a->size);
    }
  }
  w_u32(w, c->launch_flags); /* since version 2 */
}

static void write_copy(writer *w, const crec_program *p, const crec__command *c) {
  (void)p;
  w_range(w, c->dst);
  w_range(w, c->src);
}

static void write_fill(writer *w, const crec_program *p, const crec__command *c) {
  (void)p;
  w_range(w, c->dst);
  w_u32(w, c->memset_value);
  w_u32(w, c->memset_element_size);
}

static void write_barrier(writer *w, const crec_program *p, const crec__command *c) {
  (void)p;
  w_u32(w, c->coll ? c->coll->comm : NONE);
}

static void write_while(writer *w, const crec_program *p, const crec__command *c) {
  (void)p;
  w_range(w, c->predicate);
  w_u64(w, c->loop_limit);
}

static void write_if(writer *w, const crec_program *p, const crec__command *c) {
  (void)p;
  w_range(w, c->predicate);
}

static void write_switch(writer *w, const crec_program *p, const crec__command *c) {
  (void)p;
  w_range(w, c->predicate);
  w_u32(w, (uint32_t)c->num_regions);
  w_u8(w, c->case_values != NULL);
  if (c->case_values)
    for (size_t i = 0; i + 1 < c->num_regions; i++) w_i32(w, c->case_values[i]);
}

static void write_gemm(writer *w, const crec_program *p, const crec__command *c) {
  (void)p;
  const crec_gemm *g = &c->gemm->desc;
  /* the output type, where it differs, in the high nibble (0 in files before it) */
  w_u8(w, (uint32_t)g->type | (g->output_type != g->type ? (uint32_t)g->output_type << 4 : 0));
  w_i32(w, g->transpose_a);
  w_i32(w, g->transpose_b);
  w_f64(w, g->alpha);
  w_f64(w, g->beta);
  w_u64(w, g->batch);
  w_matrix(w, &g->a);
  w_matrix(w, &g->b);
  w_matrix(w, &g->c);
  w_matrix(w, &g->d);
  w_u8(w, (uint32_t)g->epilogue);
  w_range(w, g->bias);
  w_u64(w, g->workspace_bytes);
}

static void write_fft(writer *w, const crec_program *p, const crec__command *c) {
  (void)p;
  const crec_fft *f = &c->fft->desc;
  w_u8(w, (uint32_t)f->type);
  w_u8(w, (uint32_t)f->precision);
  w_u32(w, f->rank);
  for (int i = 0; i < 3; i++) w_u64(w, f->length[i]);
  w_u64(w, f->batch);
  w_range(w, f->input);
  w_range(w, f->output);
  w_f64(w, f->scale);
  w_u64(w, f->workspace_bytes);
}

static void write_conv(writer *w, const crec_program *p, const crec__command *c) {
  (void)p;
  const crec_conv *d = &c->conv->desc;
  w_u8(w, (uint32_t)d->kind);
  w_u8(w, (uint32_t)d->type);
  w_u8(w, (uint32_t)d->layout);
  w_u32(w, d->spatial);
  w_u64(w, d->batch);
  w_u64(w, d->in_channels);
  w_u64(w, d->out_channels);
  for (int i = 0; i < 3; i++) {
    w_u64(w, d->in_size[i]);
    w_u64(w, d->filter_size[i]);
    w_u64(w, d->stride[i]);
    w_u64(w, d->padding[i]);
    w_u64(w, d->dilation[i]);
  }
  w_u64(w, d->groups);
  w_range(w, d->input);
  w_range(w, d->filter);
  w_range(w, d->output);
  w_range(w, d->bias);
  w_u8(w, (uint32_t)d->activation);
  w_u8(w, (uint32_t)d->algorithm);
  w_u64(w, d->workspace_bytes);
  w_u8(w, (uint32_t)d->filter_layout);
}

static void write_cholesky(writer *w, const crec_program *p, const crec__command *c) {
  (void)p;
  const crec_cholesky *d = &c->chol->desc;
  w_u8(w, (uint32_t)d->type);
  w_u8(w, (uint32_t)d->upper);
  w_u64(w, d->n);
  w_u64(w, d->batch);
  w_range(w, d->a);
  w_range(w, d->info);
  w_u64(w, d->workspace_bytes);
}

static void write_collective(writer *w, const crec_program *p, const crec__command *c) {
  (void)p;
  const crec__coll *k = c->coll;
  w_u32(w, k->start);
  if (k->start != NONE) return; /* a done: its start says the rest */
  const crec_collective *d = &k->desc;
  w_u8(w, (uint32_t)d->kind);
  w_u32(w, k->comm);
  w_u8(w, (uint32_t)d->type);
  w_u8(w, (uint32_t)d->reduction);
  w_range(w, d->send);
  w_range(w, d->recv);
  w_u32(w, d->groups ? (uint32_t)d->num_groups : 0);
  w_u32(w, d->groups ? (uint32_t)d->group_size : 0);
  if (d->groups)
    for (size_t i = 0; i < d->num_groups * d->group_size; i++) w_i32(w, d->groups[i]);
  w_u32(w, (uint32_t)d->num_pairs);
  for (size_t i = 0; i < 2 * d->num_pairs; i++) w_i32(w, d->pairs[i]);
  w_u8(w, d->async != 0);
}

static void write_custom(writer *w, const crec_program *p, const crec__command *c) {
  (void)p;
  const crec__custom *u = c->custom;
  w_str(w, u->target);
  w_u32(w, (uint32_t)u->num_operands);
  for (size_t i = 0; i < u->num_operands; i++) {
    w_range(w, u->operands[i].range);
    w_u8(w, (uint32_t)u->operands[i].access);
  }
  w_u32(w, (uint32_t)u->num_kernels);
  for (size_t i = 0; i < u->num_kernels; i++) w_u32(w, index_of(u->kernels[i].id));
  w_u64(w, u->attributes_size);
  w_bytes(w, u->attributes, u->attributes_size);
}

/* The writer of each command kind (NULL: a host callback, refused before writing). */
static void (*const command_writers[])(writer *, const crec_program *, const crec__command *) = {
    [CREC_COMMAND_LAUNCH] = write_launch,
    [CREC_COMMAND_MEMCPY] = write_copy,
    [CREC_COMMAND_MEMSET] = write_fill,
    [CREC_COMMAND_BARRIER] = write_barrier,
    [CREC_COMMAND_WHILE] = write_while,
    [CREC_COMMAND_IF] = write_if,
    [CREC_COMMAND_SWITCH] = write_switch,
    [CREC_COMMAND_GEMM] = write_gemm,
    [CREC_COMMAND_FFT] = write_fft,
    [CREC_COMMAND_CONV] = write_conv,
    [CREC_COMMAND_CHOLESKY] = write_cholesky,
    [CREC_COMMAND_COLLECTIVE] = write_collective,
    [CREC_COMMAND_CUSTOM] = write_custom,
};

static void write_command(writer *w, const crec_program *p, const crec__command *c) {
  w_u8(w, (uint32_t)c->kind);
  w_u32(w, c->region);
  w_str(w, c->name);
  if ((size_t)c->kind < sizeof command_writers / sizeof *command_writers && command_writers[c->kind])
    command_writers[c->kind](w, p, c);
}

static void write_program(writer *w, const crec_program *p, uint32_t *owner) {
  char target[sizeof ((crec_program_file_info *)0)->target];
  program_target(p, target, sizeof target);
  size_t at = begin_section(w, SEC_META);
  w_str(w, crec_version());
  w_str(w, target);
  end_section(w, at);

  at = begin_section(w, SEC_MODS);
  w_u32(w, (uint32_t)p->num_modules);
  for (size_t i = 0; i < p->num_modules; i++) {
    const crec__module *m = &p->modules[i];
    w_str(w, m->name);
    w_u8(w, (uint32_t)m->format);
    w_u64(w, m->size);
    w_bytes(w, m->image, m->size);
  }
  end_section(w, at);

  at = begin_section(w, SEC_KERN);
  w_u32(w, (uint32_t)p->num_kernels);
  for (size_t i = 0; i < p->num_kernels; i++) {
    const crec__kernel *k = &p->kernels[i];
    w_u32(w, k->module);
    w_str(w, k->entry);
    w_u32(w, k->shared_bytes);
    for (int j = 0; j < 3; j++) w_u32(w, k->cluster[j]);
  }
  end_section(w, at);

  at = begin_section(w, SEC_COMM);
  w_u32(w, (uint32_t)p->num_comms);
  for (size_t i = 0; i < p->num_comms; i++) {
    w_str(w, p->comms[i].name);
    w_u32(w, (uint32_t)p->comms[i].size);
  }
  end_section(w, at);

  at = begin_section(w, SEC_BUFS);
  w_u32(w, (uint32_t)p->num_buffers);
  for (size_t i = 0; i < p->num_buffers; i++) {
    const crec__buffer *b = &p->buffers[i];
    w_str(w, b->name);
    w_u8(w, (uint32_t)b->kind);
    w_u8(w, (uint32_t)b->memory);
    w_u8(w, b->dynamic_size);
    w_u8(w, (uint32_t)b->element);
    w_u32(w, b->alignment);
    w_u64(w, b->size);
    w_u32(w, owner[i]);
    if (b->kind == CREC_BUFFER_CONSTANT) w_bytes(w, b->data, (size_t)b->size);
  }
  end_section(w, at);

  at = begin_section(w, SEC_SCAL);
  w_u32(w, (uint32_t)p->num_scalars);
  for (size_t i = 0; i < p->num_scalars; i++) {
    const crec__scalar *s = &p->scalars[i];
    w_str(w, s->name);
    w_i32(w, (int32_t)s->type);
    w_u8(w, (uint32_t)s->kind);
    w_u32(w, s->kind == CREC_SCALAR_SIZE ? s->buffer : NONE);
  }
  end_section(w, at);

  at = begin_section(w, SEC_CMDS);
  w_u32(w, (uint32_t)p->num_commands);
  for (size_t i = 0; i < p->num_commands; i++) write_command(w, p, &p->commands[i]);
  end_section(w, at);
}

crec_status crec_program_serialize(const crec_program *program, void **bytes, size_t *size) {
  static const char fn[] = "crec_program_serialize";
  if (bytes) *bytes = NULL;
  if (size) *size = 0;
  if (!program) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'program' is NULL");
  if (!bytes) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'bytes' is NULL");
  if (!size) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'size' is NULL");
  const crec_program *p = program;
  crec_status s = refuse_host_code(p, fn);
  if (s) return s;
  /* the buffers commands made themselves: a library call's workspace, a barrier's scratch */
  uint32_t *owner = crec__malloc((p->num_buffers ? p->num_buffers : 1) * sizeof *owner);
  if (!owner) return crec__oom(fn);
  for (size_t i = 0; i < p->num_buffers; i++) owner[i] = NONE;
  for (size_t i = 0; i < p->num_commands; i++) {
    const crec__command *c = &p->commands[i];
    if (c->kind == CREC_COMMAND_GEMM) owner[c->gemm->workspace] = (uint32_t)i;
    if (c->kind == CREC_COMMAND_FFT) owner[c->fft->workspace] = (uint32_t)i;
    if (c->kind == CREC_COMMAND_CHOLESKY) owner[c->chol->workspace] = (uint32_t)i;
    if (c->kind == CREC_COMMAND_CONV) owner[c->conv->workspace] = (uint32_t)i;
    if (c->kind == CREC_COMMAND_BARRIER && c->coll) owner[crec__index(c->ops[0].range.buffer.id)] = (uint32_t)i;
  }
  writer w = {0};
  unsigned char header[HEADER_SIZE] = {0};
  w_bytes(&w, header, sizeof header); /* filled in below */
  write_program(&w, p, owner);
  crec__free(owner);
  if (w.failed) {
    crec__free(w.data);
    return crec__oom(fn);
  }
  unsigned char *out = (unsigned char *)w.data;
  uint64_t body = w.len - HEADER_SIZE;
  memcpy(out, magic, sizeof magic);
  out[8] = CREC_PROGRAM_FILE_VERSION;
  out[12] = HEADER_SIZE;
  put_le64(out + 16, body);
  put_le64(out + 24, crec__hash(out + HEADER_SIZE, (size_t)body, 0));
  *bytes = out;
  *size = w.len;
  return CREC_OK;
}

/* ================================================================ reading ==== */

typedef struct reader {
  const unsigned char *data;
  size_t size;
  size_t pos, end;   /* the next byte; the end of the current section */
  crec_status status; /* the first failure; reads after it return zeros */
  const char *fn;
  void **keep;       /* what the reader allocated (strings, arrays), freed at the end */
  size_t num_keep, cap_keep;
  uint32_t version;  /* the file's format version (read_header) */
} reader;

static bool failed(const reader *r) { return r->status != CREC_OK; }

/* Fails the read at byte `at` (the first failure wins). */
__attribute__((format(printf, 4, 5))) static void fail_at(reader *r, crec_status status, size_t at,
                                                          const char *fmt, ...) {
  if (failed(r)) return;
  char msg[1536];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  r->status = crec__error(status, r->fn, "at byte %zu: %s", at, msg);
  r->pos = r->end;
}

static void *keep(reader *r, void *ptr) {
  if (!ptr || CREC__RESERVE(r->keep, r->cap_keep, r->num_keep + 1) != CREC_OK) {
    crec__free(ptr);
    if (!failed(r)) r->status = crec__oom(r->fn);
    r->pos = r->end;
    return NULL;
  }
  r->keep[r->num_keep++] = ptr;
  return ptr;
}

/* The next `n` bytes of the section, or NULL (a failure) when it has fewer. */
static const unsigned char *take(reader *r, size_t n, const char *what) {
  if (failed(r)) return NULL;
  if (n > r->end - r->pos) {
    fail_at(r, CREC_ERR_INVALID_ARGUMENT, r->pos, "%s needs %zu bytes, but its section has %zu left", what, n,
            r->end - r->pos);
    return NULL;
  }
  const unsigned char *at = r->data + r->pos;
  r->pos += n;
  return at;
}

static uint32_t r_u8(reader *r, const char *what) {
  const unsigned char *b = take(r, 1, what);
  return b ? b[0] : 0;
}
static uint32_t r_u32(reader *r, const char *what) {
  const unsigned char *b = take(r, 4, what);
  return b ? (uint32_t)crec__get_le(b, 4) : 0;
}
static uint64_t r_u64(reader *r, const char *what) {
  const unsigned char *b = take(r, 8, what);
  return b ? crec__get_le(b, 8) : 0;
}
static int32_t r_i32(reader *r, const char *what) {
  uint32_t u = r_u32(r, what);
  int32_t v;
  memcpy(&v, &u, sizeof v);
  return v;
}
static double r_f64(reader *r, const char *what) {
  uint64_t bits = r_u64(r, what);
  double v;
  memcpy(&v, &bits, sizeof v);
  return v;
}
/* A boolean byte: 0 or 1. */
static bool r_bool(reader *r, const char *what) {
  size_t at = r->pos;
  uint32_t v = r_u8(r, what);
  if (v > 1) fail_at(r, CREC_ERR_INVALID_ARGUMENT, at, "%s is %u, not 0 or 1", what, v);
  return v == 1;
}
/* A string, copied with a NUL (kept by the reader); "" after a failure. */
static const char *r_str(reader *r, const char *what) {
  size_t at = r->pos;
  uint32_t n = r_u32(r, what);
  const unsigned char *b = take(r, n, what);
  if (!b) return "";
  if (memchr(b, '\0', n)) {
    fail_at(r, CREC_ERR_INVALID_ARGUMENT, at, "%s holds a NUL byte", what);
    return "";
  }
  char *s = keep(r, crec__malloc((size_t)n + 1));
  if (!s) return "";
  memcpy(s, b, n);
  s[n] = '\0';
  return s;
}
/* A count of records of at least `min_bytes` each, which the section must be able to hold. */
static uint32_t r_count(reader *r, size_t min_bytes, const char *what) {
  size_t at = r->pos;
  uint32_t n = r_u32(r, what);
  if (!failed(r) && n > (r->end - r->pos) / min_bytes)
    fail_at(r, CREC_ERR_INVALID_ARGUMENT, at, "%s is %u, but %zu bytes cannot hold that many", what, n,
            r->end - r->pos);
  return failed(r) ? 0 : n;
}
/* An index below `count` (or NONE when `none_ok`). */
static uint32_t r_index(reader *r, uint32_t count, bool none_ok, const char *what, const char *things) {
  size_t at = r->pos;
  uint32_t v = r_u32(r, what);
  if (!failed(r) && !(none_ok && v == NONE) && v >= count)
    fail_at(r, CREC_ERR_INVALID_ARGUMENT, at, "%s is %s %" PRIu32 ", but there are %" PRIu32 " %s", what, things, v,
            count, things);
  return failed(r) ? (none_ok ? NONE : 0) : v;
}

static void begin_read_section(reader *r, int sec) {
  size_t at = r->pos;
  r->end = r->size;
  const unsigned char *tag = take(r, 4, "a section tag");
  if (!tag) return;
  if (memcmp(tag, section_tags[sec], 4) != 0) {
    char seen[5];
    for (int i = 0; i < 4; i++) seen[i] = tag[i] >= 0x20 && tag[i] < 0x7f ? (char)tag[i] : '?';
    seen[4] = '\0';
    fail_at(r, CREC_ERR_INVALID_ARGUMENT, at, "section '%s' where section '%s' comes", seen, section_tags[sec]);
    return;
  }
  uint64_t n = r_u64(r, "a section size");
  if (!failed(r) && n > r->size - r->pos) {
    fail_at(r, CREC_ERR_INVALID_ARGUMENT, at + 4, "section '%s' has %" PRIu64 " bytes, but the file has %zu left",
            section_tags[sec], n, r->size - r->pos);
    return;
  }
  r->end = r->pos + (size_t)n;
}

static void end_read_section(reader *r, int sec) {
  if (!failed(r) && r->pos != r->end)
    fail_at(r, CREC_ERR_INVALID_ARGUMENT, r->pos, "%zu bytes left over at the end of section '%s'", r->end - r->pos,
            section_tags[sec]);
}

/* ---- the header ---- */

/* Checks magic, version, sizes and checksum; positions `r` at the body. */
static void read_header(reader *r) {
  const unsigned char *d = r->data;
  size_t n = r->size;
  size_t have = n < sizeof magic ? n : sizeof magic;
  for (size_t i = 0; i < have; i++)
    if (d[i] != magic[i]) {
      fail_at(r, CREC_ERR_INVALID_ARGUMENT, i, "not a crec program file (its first 8 bytes are not the magic "
              "\\x89CRECB\\r\\n)");
      return;
    }
  if (n < HEADER_SIZE) {
    fail_at(r, CREC_ERR_INVALID_ARGUMENT, n, "truncated: %zu bytes, but the header alone has %u", n, HEADER_SIZE);
    return;
  }
  uint32_t version = (uint32_t)crec__get_le(d + 8, 4);
  if (version < 1 || version > CREC_PROGRAM_FILE_VERSION) {
    fail_at(r, CREC_ERR_UNSUPPORTED, 8, "format version %" PRIu32 ", but crec %s reads versions 1 to %d", version,
            crec_version(), CREC_PROGRAM_FILE_VERSION);
    return;
  }
  r->version = version;
  uint32_t header = (uint32_t)crec__get_le(d + 12, 4);
  if (header != HEADER_SIZE) {
    fail_at(r, CREC_ERR_UNSUPPORTED, 12, "a header of %" PRIu32 " bytes, but format version %d has %u", header,
            CREC_PROGRAM_FILE_VERSION, HEADER_SIZE);
    return;
  }
  uint64_t body = crec__get_le(d + 16, 8), present = n - HEADER_SIZE;
  if (body > present) {
    fail_at(r, CREC_ERR_INVALID_ARGUMENT, n, "truncated: the header (byte 16) says %" PRIu64 " bytes of body, but "
            "only %" PRIu64 " follow it", body, present);
    return;
  }
  if (body < present) {
    fail_at(r, CREC_ERR_INVALID_ARGUMENT, HEADER_SIZE + (size_t)body, "%" PRIu64 " bytes after the end of the "
            "program (the header at byte 16 says %" PRIu64 " bytes of body)", present - body, body);
    return;
  }
  uint64_t want = crec__get_le(d + 24, 8), got = crec__hash(d + HEADER_SIZE, (size_t)body, 0);
  if (want != got) {
    fail_at(r, CREC_ERR_INVALID_ARGUMENT, 24, "checksum mismatch: the header says 0x%016" PRIx64 ", the body's "
            "FNV-1a is 0x%016" PRIx64 " (the file is corrupt)", want, got);
    return;
  }
  r->pos = HEADER_SIZE;
  r->end = n;
}

static void read_meta(reader *r, crec_program_file_info *info) {
  begin_read_section(r, SEC_META);
  size_t at = r->pos;
  const char *version = r_str(r, "the crec version");
  if (!failed(r) && strlen(version) >= sizeof info->crec_version)
    fail_at(r, CREC_ERR_INVALID_ARGUMENT, at, "a crec version of %zu bytes (at most %zu)", strlen(version),
            sizeof info->crec_version - 1);
  at = r->pos;
  const char *target = r_str(r, "the target");
  if (!failed(r) && strlen(target) >= sizeof info->target)
    fail_at(r, CREC_ERR_INVALID_ARGUMENT, at, "a target of %zu bytes (at most %zu)", strlen(target),
            sizeof info->target - 1);
  end_read_section(r, SEC_META);
  if (failed(r)) return;
  info->format_version = r->version;
  snprintf(info->crec_version, sizeof info->crec_version, "%s", version);
  snprintf(info->target, sizeof info->target, "%s", target);
}

/* ---- rebuilding ---- */

typedef struct buffer_rec {
  const char *name;
  uint32_t kind, memory, element, alignment, owner;
  bool dynamic;
  uint64_t size;
  const unsigned char *data; /* constants: in the file */
  size_t at;                 /* where its record starts */
} buffer_rec;

typedef struct scalar_rec {
  const char *name;
  int32_t type;
  uint32_t kind, buffer;
  size_t at;
} scalar_rec;

typedef struct builder {
  reader *r;
  crec_program *p;
  crec_module *modules;
  uint32_t num_modules;
  crec_kernel *kernels;
  uint32_t num_kernels;
  crec_comm_slot *comms;
  uint32_t num_comms;
  buffer_rec *bufs;
  crec_buffer *buffers; /* handles of the buffers made so far */
  uint32_t num_bufs, made_bufs;
  scalar_rec *scals;
  crec_scalar *scalars;
  uint32_t num_scals, made_scals;
  uint32_t *owned; /* per command: the buffer it makes, or NONE */
  char label[96];  /* "command 3 ('mm')": what the current builder call makes */
} builder;

/* Turns a builder's failure into the reader's, naming what was being built. */
static void builder_failed(builder *b, crec_status s, size_t at) {
  char inner[1024];
  snprintf(inner, sizeof inner, "%s", crec_last_error());
  fail_at(b->r, s == CREC_ERR_OUT_OF_MEMORY ? s : CREC_ERR_INVALID_ARGUMENT, at, "%s: %s", b->label, inner);
}

static void make_scalars(builder *b, uint32_t upto);

/* Makes every buffer below `upto` not made yet, in order; a buffer a command
 * makes itself cannot be among them. */
static void make_buffers(builder *b, uint32_t upto, size_t at) {
  while (!failed(b->r) && b->made_bufs < upto) {
    uint32_t i = b->made_bufs;
    const buffer_rec *br = &b->bufs[i];
    if (br->owner != NONE) {
      fail_at(b->r, CREC_ERR_INVALID_ARGUMENT, at, "%s needs buffer %" PRIu32 " ('%s'), which command %" PRIu32
              " makes later", b->label, i, br->name, br->owner);
      return;
    }
    crec_status s = CREC_OK;
    crec_buffer h = {0};
    char saved[sizeof b->label];
    memcpy(saved, b->label, sizeof saved);
    snprintf(b->label, sizeof b->label, "buffer %" PRIu32 " ('%.40s')", i, br->name);
    if (br->kind == CREC_BUFFER_ARGUMENT) {
      crec_argument_options o = CREC_ARGUMENT_OPTIONS_INIT;
      o.memory = (crec_memory)br->memory;
      o.alignment = br->alignment;
      o.dynamic_size = br->dynamic;
      o.element = (crec_element)br->element;
      s = crec_program_add_argument(b->p, br->name, br->size, &o, &h);
    } else if (br->kind == CREC_BUFFER_TEMPORARY) {
      s = br->memory == CREC_MEMORY_HOST ? crec_program_add_host_temporary(b->p, br->name, br->size, &h)
                                         : crec_program_add_temporary(b->p, br->name, br->size, &h);
    } else {
      s = crec_program_add_constant(b->p, br->name, br->data, br->size, &h);
    }
    if (s) builder_failed(b, s, br->at);
    memcpy(b->label, saved, sizeof saved);
    if (s) return;
    b->buffers[b->made_bufs++] = h;
  }
}

/* Makes every scalar below `upto` not made yet, in order (a size scalar after its buffer). */
static void make_scalars(builder *b, uint32_t upto) {
  while (!failed(b->r) && b->made_scals < upto) {
    uint32_t i = b->made_scals;
    const scalar_rec *sr = &b->scals[i];
    char saved[sizeof b->label];
    memcpy(saved, b->label, sizeof saved);
    snprintf(b->label, sizeof b->label, "scalar %" PRIu32 " ('%.40s')", i, sr->name);
    crec_status s;
    crec_scalar h = {0};
    if (sr->kind == CREC_SCALAR_SIZE) {
      make_buffers(b, sr->buffer + 1, sr->at);
      if (failed(b->r)) return;
      s = crec_program_add_size_scalar(b->p, sr->name, b->buffers[sr->buffer], &h);
    } else if (sr->kind == CREC_SCALAR_DERIVED) {
      s = crec_program_add_derived_scalar(b->p, sr->name, (crec_type)sr->type, &h);
    } else {
      s = crec_program_add_scalar(b->p, sr->name, (crec_type)sr->type, &h);
    }
    if (s) builder_failed(b, s, sr->at);
    memcpy(b->label, saved, sizeof saved);
    if (s) return;
    b->scalars[b->made_scals++] = h;
  }
}

static void read_modules(builder *b) {
  reader *r = b->r;
  begin_read_section(r, SEC_MODS);
  uint32_t n = r_count(r, 13, "the module count");
  b->modules = keep(r, crec__calloc(n ? n : 1, sizeof *b->modules));
  for (uint32_t i = 0; i < n && !failed(r); i++) {
    size_t at = r->pos;
    const char *name = r_str(r, "a module name");
    uint32_t format = r_u8(r, "a module format");
    uint64_t size = r_u64(r, "a module size");
    const unsigned char *image = size <= SIZE_MAX ? take(r, (size_t)size, "a module image") : NULL;
    if (failed(r)) break;
    snprintf(b->label, sizeof b->label, "module %" PRIu32 " ('%.40s')", i, name);
    crec_status s = crec_program_add_module(b->p, name, (crec_image_format)format, image, (size_t)size, &b->modules[i]);
    if (s) builder_failed(b, s, at);
    b->num_modules = i + 1;
  }
  end_read_section(r, SEC_MODS);
}

static void read_kernels(builder *b) {
  reader *r = b->r;
  begin_read_section(r, SEC_KERN);
  uint32_t n = r_count(r, 24, "the kernel count");
  b->kernels = keep(r, crec__calloc(n ? n : 1, sizeof *b->kernels));
  for (uint32_t i = 0; i < n && !failed(r); i++) {
    size_t at = r->pos;
    uint32_t module = r_index(r, b->num_modules, false, "a kernel's module", "module");
    const char *entry = r_str(r, "a kernel entry");
    crec_kernel_options o = CREC_KERNEL_OPTIONS_INIT;
    o.shared_bytes = r_u32(r, "a kernel's shared bytes");
    for (int j = 0; j < 3; j++) o.cluster[j] = r_u32(r, "a kernel's cluster dims");
    if (failed(r)) break;
    snprintf(b->label, sizeof b->label, "kernel %" PRIu32 " ('%.40s')", i, entry);
    crec_status s = crec_program_add_kernel(b->p, b->modules[module], entry, &o, &b->kernels[i]);
    if (s) builder_failed(b, s, at);
    b->num_kernels = i + 1;
  }
  end_read_section(r, SEC_KERN);
}

static void read_comms(builder *b) {
  reader *r = b->r;
  begin_read_section(r, SEC_COMM);
  uint32_t n = r_count(r, 8, "the communicator count");
  b->comms = keep(r, crec__calloc(n ? n : 1, sizeof *b->comms));
  for (uint32_t i = 0; i < n && !failed(r); i++) {
    size_t at = r->pos;
    const char *name = r_str(r, "a communicator name");
    int32_t size = r_i32(r, "a communicator size");
    if (failed(r)) break;
    snprintf(b->label, sizeof b->label, "communicator %" PRIu32 " ('%.40s')", i, name);
    crec_status s = crec_program_add_communicator(b->p, name, size, &b->comms[i]);
    if (s) builder_failed(b, s, at);
    b->num_comms = i + 1;
  }
  end_read_section(r, SEC_COMM);
}

static void read_buffers(builder *b) {
  reader *r = b->r;
  begin_read_section(r, SEC_BUFS);
  uint32_t n = r_count(r, 24, "the buffer count");
  b->bufs = keep(r, crec__calloc(n ? n : 1, sizeof *b->bufs));
  b->buffers = keep(r, crec__calloc(n ? n : 1, sizeof *b->buffers));
  for (uint32_t i = 0; i < n && !failed(r); i++) {
    buffer_rec *br = &b->bufs[i];
    br->at = r->pos;
    br->name = r_str(r, "a buffer name");
    size_t at = r->pos;
    br->kind = r_u8(r, "a buffer kind");
    if (!failed(r) && br->kind > CREC_BUFFER_CONSTANT)
      fail_at(r, CREC_ERR_INVALID_ARGUMENT, at, "buffer %" PRIu32 " ('%s') has unknown kind %" PRIu32, i, br->name,
              br->kind);
    br->memory = r_u8(r, "a buffer's memory");
    br->dynamic = r_bool(r, "a buffer's dynamic size");
    br->element = r_u8(r, "a buffer's element type");
    br->alignment = r_u32(r, "a buffer's alignment");
    br->size = r_u64(r, "a buffer size");
    br->owner = r_u32(r, "the command that made a buffer");
    /* only arguments have options (and temporaries their memory): what the builders give
     * the others is all a file may say */
    bool memory_ok = br->memory == CREC_MEMORY_DEVICE || (br->kind == CREC_BUFFER_TEMPORARY && br->memory == CREC_MEMORY_HOST);
    if (!failed(r) && br->kind != CREC_BUFFER_ARGUMENT &&
        (!memory_ok || br->dynamic || br->element != CREC_ELEMENT_BYTES || br->alignment != 256))
      fail_at(r, CREC_ERR_INVALID_ARGUMENT, at, "buffer %" PRIu32 " ('%s'), a %s, has argument options", i, br->name,
              crec_buffer_kind_name((crec_buffer_kind)br->kind));
    if (!failed(r) && br->owner != NONE && br->kind != CREC_BUFFER_TEMPORARY)
      fail_at(r, CREC_ERR_INVALID_ARGUMENT, at, "buffer %" PRIu32 " ('%s') is made by a command but is a %s", i,
              br->name, crec_buffer_kind_name((crec_buffer_kind)br->kind));
    if (br->kind == CREC_BUFFER_CONSTANT && !failed(r))
      br->data = br->size <= SIZE_MAX ? take(r, (size_t)br->size, "a constant's data") : NULL;
    b->num_bufs = i + 1;
  }
  end_read_section(r, SEC_BUFS);
}

static void read_scalars(builder *b) {
  reader *r = b->r;
  begin_read_section(r, SEC_SCAL);
  uint32_t n = r_count(r, 13, "the scalar count");
  b->scals = keep(r, crec__calloc(n ? n : 1, sizeof *b->scals));
  b->scalars = keep(r, crec__calloc(n ? n : 1, sizeof *b->scalars));
  for (uint32_t i = 0; i < n && !failed(r); i++) {
    scalar_rec *sr = &b->scals[i];
    sr->at = r->pos;
    sr->name = r_str(r, "a scalar name");
    sr->type = r_i32(r, "a scalar type");
    size_t at = r->pos;
    sr->kind = r_u8(r, "a scalar kind");
    if (!failed(r) && sr->kind > CREC_SCALAR_SIZE)
      fail_at(r, CREC_ERR_INVALID_ARGUMENT, at, "scalar %" PRIu32 " ('%s') has unknown kind %" PRIu32, i, sr->name,
              sr->kind);
    sr->buffer = r_index(r, b->num_bufs, sr->kind != CREC_SCALAR_SIZE, "a size scalar's buffer", "buffer");
    if (!failed(r) && sr->kind != CREC_SCALAR_SIZE && sr->buffer != NONE)
      fail_at(r, CREC_ERR_INVALID_ARGUMENT, at, "scalar %" PRIu32 " ('%s') is not a size scalar but names a buffer",
              i, sr->name);
    b->num_scals = i + 1;
  }
  end_read_section(r, SEC_SCAL);
}

/* What one command uses, so that it exists before the command is added. */
typedef struct needs {
  uint32_t buffers; /* one past the highest buffer index used */
  uint32_t scalars; /* likewise for scalars */
} needs;

/* For a command that makes its workspace (`what`: "a GEMM"): checks that the
 * file names that buffer and that it comes after every buffer the command
 * uses, then makes the buffers before it. False when the file is refused. */
static bool make_before_workspace(builder *b, const needs *n, uint32_t owned, size_t at, const char *what) {
  if (owned == NONE) {
    fail_at(b->r, CREC_ERR_INVALID_ARGUMENT, at, "%s is %s, but no buffer is its workspace", b->label, what);
    return false;
  }
  if (n->buffers > owned) {
    fail_at(b->r, CREC_ERR_INVALID_ARGUMENT, at, "%s uses buffer %" PRIu32 ", made after its workspace %" PRIu32,
            b->label, n->buffers - 1, owned);
    return false;
  }
  make_buffers(b, owned, at);
  return !failed(b->r);
}

static crec_range r_range(builder *b, needs *n, bool none_ok, const char *what) {
  crec_range rg = {{0}, 0, 0};
  uint32_t i = r_index(b->r, b->num_bufs, none_ok, what, "buffer");
  rg.offset = r_u64(b->r, what);
  rg.size = r_u64(b->r, what);
  if (failed(b->r) || i == NONE) return rg;
  rg.buffer.id = i + 1; /* an index + 1 until resolve_range() turns it into a handle */
  if (i + 1 > n->buffers) n->buffers = i + 1;
  return rg;
}
static void resolve_range(const builder *b, crec_range *rg) {
  if (rg->buffer.id) rg->buffer = b->buffers[rg->buffer.id - 1];
}
static crec_dim r_dim(builder *b, needs *n, const char *what) {
  crec_dim d = {{0}, 0};
  uint32_t i = r_index(b->r, b->num_scals, true, what, "scalar");
  d.value = r_u32(b->r, what);
  if (failed(b->r) || i == NONE) return d;
  d.scalar.id = i + 1;
  if (i + 1 > n->scalars) n->scalars = i + 1;
  return d;
}
static void resolve_dim(const builder *b, crec_dim *d) {
  if (d->scalar.id) d->scalar = b->scalars[d->scalar.id - 1];
}
static crec_matrix r_matrix(builder *b, needs *n, bool none_ok, const char *what) {
  crec_matrix m;
  m.range = r_range(b, n, none_ok, what);
  m.rows = r_u64(b->r, what);
  m.cols = r_u64(b->r, what);
  m.ld = r_u64(b->r, what);
  m.batch_stride = r_u64(b->r, what);
  return m;
}
static uint32_t r_access(reader *r, const char *what) {
  size_t at = r->pos;
  uint32_t a = r_u8(r, what);
  if (!failed(r) && (a < CREC_ACCESS_READ || a > CREC_ACCESS_READ_WRITE))
    fail_at(r, CREC_ERR_INVALID_ARGUMENT, at, "%s is %" PRIu32 ", not an access", what, a);
  return a;
}

/* Reads and adds command `ci`. */
/* One command as it is read: what its reader is given, and what it adds. A
 * reader returns the builder's status; a failure of the file is left in the
 * reader (failed()), with CREC_OK returned. */
typedef struct command_read {
  builder *b;
  uint32_t ci, kind;
  size_t at;           /* where the command starts in the file */
  const char *name;
  crec_region rg;
  uint32_t owned;      /* the buffer the command makes (a workspace, a scratch), or NONE */
  bool makes_buffer;   /* set by a reader whose command makes `owned` */
  crec_command out;
} command_read;

static crec_status read_launch(command_read *c) {
  builder *b = c->b;
  reader *r = b->r;
  crec_program *p = b->p;
  needs n = {0, 0};
  crec_launch l = CREC_LAUNCH_INIT;
  uint32_t k = r_index(r, b->num_kernels, false, "a launch's kernel", "kernel");
  for (int i = 0; i < 3; i++) l.grid[i] = r_dim(b, &n, "a launch's grid");
  for (int i = 0; i < 3; i++) l.block[i] = r_dim(b, &n, "a launch's block");
  l.shared_bytes = r_dim(b, &n, "a launch's shared bytes");
  uint32_t na = r_count(r, 5, "a launch's argument count");
  crec_arg *args = keep(r, crec__calloc(na ? na : 1, sizeof *args));
  for (uint32_t i = 0; i < na && !failed(r); i++) {
    crec_arg *a = &args[i];
    size_t aat = r->pos;
    a->kind = (crec_arg_kind)r_u8(r, "an argument kind");
    a->type = CREC_TYPE_NONE;
    if (a->kind == CREC_ARG_BUFFER) {
      a->access = (crec_access)r_access(r, "an argument's access");
      a->range = r_range(b, &n, false, "an argument's range");
    } else if (a->kind == CREC_ARG_SCALAR) {
      a->access = CREC_ACCESS_READ;
      uint32_t si = r_index(r, b->num_scals, false, "an argument's scalar", "scalar");
      a->scalar.id = si + 1;
      if (si + 1 > n.scalars) n.scalars = si + 1;
    } else if (a->kind == CREC_ARG_IMMEDIATE) {
      a->access = CREC_ACCESS_READ;
      a->type = (crec_type)r_i32(r, "an immediate's type");
      a->size = r_u32(r, "an immediate's size");
      a->data = take(r, a->size, "an immediate's bytes");
    } else if (!failed(r)) {
      fail_at(r, CREC_ERR_INVALID_ARGUMENT, aat, "%s: argument %" PRIu32 " has unknown kind %d", b->label, i,
              (int)a->kind);
    }
  }
  if (failed(r)) return CREC_OK;
  make_buffers(b, n.buffers, c->at);
  make_scalars(b, n.scalars);
  if (failed(r)) return CREC_OK;
  l.kernel = b->kernels[k];
  for (int i = 0; i < 3; i++) resolve_dim(b, &l.grid[i]), resolve_dim(b, &l.block[i]);
  resolve_dim(b, &l.shared_bytes);
  for (uint32_t i = 0; i < na; i++) {
    resolve_range(b, &args[i].range);
    if (args[i].kind == CREC_ARG_SCALAR) args[i].scalar = b->scalars[args[i].scalar.id - 1];
  }
  l.args = args;
  l.num_args = na;
  /* version 1 had no flags */
  if (r->version >= 2) l.flags = r_u32(r, "a launch's flags");
  if (failed(r)) return CREC_OK;
  return crec_program_add_launch(p, c->rg, c->name, &l, &c->out);
}

static crec_status read_copy(command_read *c) {
  builder *b = c->b;
  reader *r = b->r;
  crec_program *p = b->p;
  needs n = {0, 0};
  crec_range dst = r_range(b, &n, false, "a copy's destination"), src = {{0}, 0, 0};
  uint32_t value = 0, esize = 0;
  if (c->kind == CREC_COMMAND_MEMCPY) {
    src = r_range(b, &n, false, "a copy's source");
  } else {
    value = r_u32(r, "a fill's value");
    esize = r_u32(r, "a fill's element size");
  }
  make_buffers(b, n.buffers, c->at);
  if (failed(r)) return CREC_OK;
  resolve_range(b, &dst);
  resolve_range(b, &src);
  return c->kind == CREC_COMMAND_MEMCPY ? crec_program_add_memcpy(p, c->rg, c->name, dst, src, &c->out)
                                  : crec_program_add_memset(p, c->rg, c->name, dst, value, esize, &c->out);
}

static crec_status read_barrier(command_read *c) {
  builder *b = c->b;
  reader *r = b->r;
  crec_program *p = b->p;
  uint32_t comm = r_index(r, b->num_comms, true, "a barrier's communicator", "communicator");
  if (failed(r)) return CREC_OK;
  if (comm == NONE) return crec_program_add_barrier(p, c->rg, c->name, &c->out);
  c->makes_buffer = true;
  if (c->owned == NONE) {
    fail_at(r, CREC_ERR_INVALID_ARGUMENT, c->at, "%s is a barrier across ranks, but no buffer is its scratch",
            b->label);
    return CREC_OK;
  }
  make_buffers(b, c->owned, c->at);
  if (failed(r)) return CREC_OK;
  return crec_program_add_comm_barrier(p, c->rg, c->name, b->comms[comm], &c->out);
}

static crec_status read_conditional(command_read *c) {
  builder *b = c->b;
  reader *r = b->r;
  crec_program *p = b->p;
  needs n = {0, 0};
  crec_status s = CREC_OK;
  crec_range pred = r_range(b, &n, false, "a predicate");
  uint64_t limit = c->kind == CREC_COMMAND_WHILE ? r_u64(r, "a loop limit") : 0;
  make_buffers(b, n.buffers, c->at);
  if (failed(r)) return CREC_OK;
  resolve_range(b, &pred);
  crec_region r1, r2;
  if (c->kind == CREC_COMMAND_IF) return crec_program_add_if(p, c->rg, c->name, pred, &c->out, &r1, &r2);
  s = crec_program_add_while(p, c->rg, c->name, pred, &c->out, &r1, &r2);
  if (!s && limit) s = crec_program_set_loop_limit(p, c->out, limit);
  return s;
}

static crec_status read_switch(command_read *c) {
  builder *b = c->b;
  reader *r = b->r;
  crec_program *p = b->p;
  needs n = {0, 0};
  crec_range index = r_range(b, &n, false, "a switch index");
  size_t nat = r->pos;
  uint32_t nb = r_u32(r, "a switch's branch count");
  bool cases = r_bool(r, "a switch's case table flag");
  if (!failed(r) && (nb == 0 || nb > 65536))
    fail_at(r, CREC_ERR_INVALID_ARGUMENT, nat, "%s: a switch of %" PRIu32 " branches (1 to 65536)", b->label, nb);
  if (failed(r)) return CREC_OK;
  int32_t *values = NULL;
  if (cases) {
    values = keep(r, crec__calloc(nb, sizeof *values));
    for (uint32_t i = 0; i + 1 < nb && !failed(r); i++) values[i] = r_i32(r, "a case value");
  }
  crec_region *branches = keep(r, crec__calloc(nb, sizeof *branches));
  make_buffers(b, n.buffers, c->at);
  if (failed(r)) return CREC_OK;
  resolve_range(b, &index);
  return crec_program_add_switch(p, c->rg, c->name, index, nb, values, &c->out, branches);
}

static crec_status read_gemm(command_read *c) {
  builder *b = c->b;
  reader *r = b->r;
  crec_program *p = b->p;
  needs n = {0, 0};
  crec_gemm g = CREC_GEMM_INIT;
  uint32_t types = r_u8(r, "a GEMM's element types");
  g.type = (crec_element)(types & 15);
  g.output_type = (crec_element)(types >> 4);
  g.transpose_a = r_i32(r, "a GEMM's transpose_a");
  g.transpose_b = r_i32(r, "a GEMM's transpose_b");
  g.alpha = r_f64(r, "a GEMM's alpha");
  g.beta = r_f64(r, "a GEMM's beta");
  g.batch = r_u64(r, "a GEMM's batch");
  g.a = r_matrix(b, &n, false, "a GEMM's A");
  g.b = r_matrix(b, &n, false, "a GEMM's B");
  g.c = r_matrix(b, &n, true, "a GEMM's C");
  g.d = r_matrix(b, &n, false, "a GEMM's D");
  g.epilogue = (crec_gemm_epilogue)r_u8(r, "a GEMM's epilogue");
  g.bias = r_range(b, &n, true, "a GEMM's bias");
  g.workspace_bytes = r_u64(r, "a GEMM's workspace size");
  if (failed(r)) return CREC_OK;
  c->makes_buffer = true;
  if (!make_before_workspace(b, &n, c->owned, c->at, "a GEMM")) return CREC_OK;
  resolve_range(b, &g.a.range);
  resolve_range(b, &g.b.range);
  resolve_range(b, &g.c.range);
  resolve_range(b, &g.d.range);
  resolve_range(b, &g.bias);
  return crec_program_add_gemm(p, c->rg, c->name, &g, &c->out);
}

static crec_status read_fft(command_read *c) {
  builder *b = c->b;
  reader *r = b->r;
  crec_program *p = b->p;
  needs n = {0, 0};
  crec_fft f = CREC_FFT_INIT;
  f.type = (crec_fft_type)r_u8(r, "an FFT's type");
  f.precision = (crec_element)r_u8(r, "an FFT's precision");
  f.rank = r_u32(r, "an FFT's rank");
  for (int i = 0; i < 3; i++) f.length[i] = r_u64(r, "an FFT's length");
  f.batch = r_u64(r, "an FFT's batch");
  f.input = r_range(b, &n, false, "an FFT's input");
  f.output = r_range(b, &n, false, "an FFT's output");
  f.scale = r_f64(r, "an FFT's scale");
  f.workspace_bytes = r_u64(r, "an FFT's workspace size");
  if (failed(r)) return CREC_OK;
  c->makes_buffer = true;
  if (!make_before_workspace(b, &n, c->owned, c->at, "an FFT")) return CREC_OK;
  resolve_range(b, &f.input);
  resolve_range(b, &f.output);
  return crec_program_add_fft(p, c->rg, c->name, &f, &c->out);
}

static crec_status read_conv(command_read *c) {
  builder *b = c->b;
  reader *r = b->r;
  crec_program *p = b->p;
  needs n = {0, 0};
  crec_conv d = CREC_CONV_INIT;
  d.kind = (crec_conv_kind)r_u8(r, "a convolution's kind");
  d.type = (crec_element)r_u8(r, "a convolution's element type");
  d.layout = (crec_conv_layout)r_u8(r, "a convolution's layout");
  d.spatial = r_u32(r, "a convolution's spatial dimensions");
  d.batch = r_u64(r, "a convolution's batch");
  d.in_channels = r_u64(r, "a convolution's input channels");
  d.out_channels = r_u64(r, "a convolution's output channels");
  for (int i = 0; i < 3; i++) {
    d.in_size[i] = r_u64(r, "a convolution's input size");
    d.filter_size[i] = r_u64(r, "a convolution's filter size");
    d.stride[i] = r_u64(r, "a convolution's stride");
    d.padding[i] = r_u64(r, "a convolution's padding");
    d.dilation[i] = r_u64(r, "a convolution's dilation");
  }
  d.groups = r_u64(r, "a convolution's groups");
  d.input = r_range(b, &n, false, "a convolution's input");
  d.filter = r_range(b, &n, false, "a convolution's filter");
  d.output = r_range(b, &n, false, "a convolution's output");
  d.bias = r_range(b, &n, true, "a convolution's bias");
  d.activation = (crec_conv_activation)r_u8(r, "a convolution's activation");
  d.algorithm = (crec_conv_algorithm)r_u8(r, "a convolution's algorithm choice");
  d.workspace_bytes = r_u64(r, "a convolution's workspace size");
  d.filter_layout = (crec_conv_filter_layout)r_u8(r, "a convolution's filter layout");
  if (failed(r)) return CREC_OK;
  c->makes_buffer = true;
  if (!make_before_workspace(b, &n, c->owned, c->at, "a convolution")) return CREC_OK;
  resolve_range(b, &d.input);
  resolve_range(b, &d.filter);
  resolve_range(b, &d.output);
  resolve_range(b, &d.bias);
  return crec_program_add_conv(p, c->rg, c->name, &d, &c->out);
}

static crec_status read_cholesky(command_read *c) {
  builder *b = c->b;
  reader *r = b->r;
  crec_program *p = b->p;
  needs n = {0, 0};
  crec_cholesky d = CREC_CHOLESKY_INIT;
  d.type = (crec_element)r_u8(r, "a Cholesky factorization's element type");
  d.upper = (int)r_u8(r, "a Cholesky factorization's triangle");
  d.n = r_u64(r, "a Cholesky factorization's order");
  d.batch = r_u64(r, "a Cholesky factorization's batch");
  d.a = r_range(b, &n, false, "a Cholesky factorization's matrices");
  d.info = r_range(b, &n, false, "a Cholesky factorization's info");
  d.workspace_bytes = r_u64(r, "a Cholesky factorization's workspace size");
  if (failed(r)) return CREC_OK;
  c->makes_buffer = true;
  if (!make_before_workspace(b, &n, c->owned, c->at, "a Cholesky factorization")) return CREC_OK;
  resolve_range(b, &d.a);
  resolve_range(b, &d.info);
  return crec_program_add_cholesky(p, c->rg, c->name, &d, &c->out);
}

static crec_status read_collective(command_read *c) {
  builder *b = c->b;
  reader *r = b->r;
  crec_program *p = b->p;
  needs n = {0, 0};
  uint32_t start = r_index(r, c->ci, true, "a collective done's start", "earlier command");
  if (failed(r)) return CREC_OK;
  if (start != NONE) {
    return crec_program_add_collective_done(p, c->rg, c->name, crec_program_command(p, start), &c->out);
  }
  crec_collective d = CREC_COLLECTIVE_INIT;
  d.kind = (crec_collective_kind)r_u8(r, "a collective's kind");
  uint32_t comm = r_index(r, b->num_comms, false, "a collective's communicator", "communicator");
  d.type = (crec_element)r_u8(r, "a collective's element type");
  d.reduction = (crec_reduction)r_u8(r, "a collective's reduction");
  d.send = r_range(b, &n, true, "a collective's send range"); /* none: replica_id, partition_id */
  d.recv = r_range(b, &n, false, "a collective's recv range");
  size_t gat = r->pos;
  uint32_t ng = r_u32(r, "a collective's group count"), gs = r_u32(r, "a collective's group size");
  uint64_t nranks = (uint64_t)ng * gs;
  if (!failed(r) && (nranks > 65536 || (ng == 0) != (gs == 0)))
    fail_at(r, CREC_ERR_INVALID_ARGUMENT, gat, "%s: %" PRIu32 " groups of %" PRIu32 " ranks", b->label, ng, gs);
  if (failed(r)) return CREC_OK;
  int32_t *groups = NULL;
  if (ng) {
    groups = keep(r, crec__calloc((size_t)nranks, sizeof *groups));
    for (uint64_t i = 0; i < nranks && !failed(r); i++) groups[i] = r_i32(r, "a group's rank");
  }
  size_t pat = r->pos;
  uint32_t np = r_u32(r, "a collective's pair count");
  if (!failed(r) && np > 65536)
    fail_at(r, CREC_ERR_INVALID_ARGUMENT, pat, "%s: %" PRIu32 " pairs (at most 65536)", b->label, np);
  if (failed(r)) return CREC_OK;
  int32_t *pairs = NULL;
  if (np) {
    pairs = keep(r, crec__calloc(2 * (size_t)np, sizeof *pairs));
    for (uint32_t i = 0; i < 2 * np && !failed(r); i++) pairs[i] = r_i32(r, "a pair's rank");
  }
  d.async = r_bool(r, "a collective's async flag");
  make_buffers(b, n.buffers, c->at);
  if (failed(r)) return CREC_OK;
  d.communicator = b->comms[comm];
  resolve_range(b, &d.send);
  resolve_range(b, &d.recv);
  d.groups = groups;
  d.num_groups = ng;
  d.group_size = gs;
  d.pairs = pairs;
  d.num_pairs = np;
  return crec_program_add_collective(p, c->rg, c->name, &d, &c->out);
}

static crec_status read_custom(command_read *c) {
  builder *b = c->b;
  reader *r = b->r;
  crec_program *p = b->p;
  needs n = {0, 0};
  crec_custom u = CREC_CUSTOM_INIT;
  u.target = r_str(r, "a custom command's target");
  uint32_t no = r_count(r, 21, "a custom command's operand count");
  crec_operand *ops = keep(r, crec__calloc(no ? no : 1, sizeof *ops));
  for (uint32_t i = 0; i < no && !failed(r); i++) {
    ops[i].range = r_range(b, &n, true, "a custom command's operand");
    ops[i].access = (crec_access)r_access(r, "a custom command operand's access");
  }
  uint32_t nk = r_count(r, 4, "a custom command's kernel count");
  crec_kernel *ks = keep(r, crec__calloc(nk ? nk : 1, sizeof *ks));
  for (uint32_t i = 0; i < nk && !failed(r); i++)
    ks[i] = b->kernels[r_index(r, b->num_kernels, false, "a custom command's kernel", "kernel")];
  uint64_t na = r_u64(r, "a custom command's attribute size");
  u.attributes = na <= SIZE_MAX ? take(r, (size_t)na, "a custom command's attributes") : NULL;
  make_buffers(b, n.buffers, c->at);
  if (failed(r)) return CREC_OK;
  for (uint32_t i = 0; i < no; i++) resolve_range(b, &ops[i].range);
  u.operands = ops;
  u.num_operands = no;
  u.kernels = ks;
  u.num_kernels = nk;
  u.attributes_size = (size_t)na;
  return crec_program_add_custom(p, c->rg, c->name, &u, &c->out);
}

/* The reader of each command kind a program file holds (NULL: none). */
static crec_status (*const command_readers[])(command_read *) = {
    [CREC_COMMAND_LAUNCH] = read_launch,
    [CREC_COMMAND_MEMCPY] = read_copy,
    [CREC_COMMAND_MEMSET] = read_copy,
    [CREC_COMMAND_BARRIER] = read_barrier,
    [CREC_COMMAND_WHILE] = read_conditional,
    [CREC_COMMAND_IF] = read_conditional,
    [CREC_COMMAND_SWITCH] = read_switch,
    [CREC_COMMAND_GEMM] = read_gemm,
    [CREC_COMMAND_FFT] = read_fft,
    [CREC_COMMAND_CONV] = read_conv,
    [CREC_COMMAND_CHOLESKY] = read_cholesky,
    [CREC_COMMAND_COLLECTIVE] = read_collective,
    [CREC_COMMAND_CUSTOM] = read_custom,
};

static void read_command(builder *b, uint32_t ci) {
  reader *r = b->r;
  crec_program *p = b->p;
  size_t at = r->pos;
  uint32_t kind = r_u8(r, "a command kind");
  uint32_t region = r_index(r, (uint32_t)crec_program_region_count(p), false, "a command's region", "region");
  const char *name = r_str(r, "a command name");
  if (failed(r)) return;
  snprintf(b->label, sizeof b->label, "command %" PRIu32 " ('%.40s')", ci, name);
  command_read c = {.b = b, .ci = ci, .kind = kind, .at = at, .name = name, .rg = crec_program_region(p, region),
                    .owned = b->owned[ci]};
  if (kind >= sizeof command_readers / sizeof *command_readers || !command_readers[kind]) {
    fail_at(r, CREC_ERR_INVALID_ARGUMENT, at, "%s has kind %" PRIu32 ", which a program file cannot hold", b->label,
            kind);
    return;
  }
  crec_status s = command_readers[kind](&c);
  if (failed(r)) return;
  if (s) {
    builder_failed(b, s, at);
    return;
  }
  if (!c.makes_buffer && c.owned != NONE) {
    fail_at(r, CREC_ERR_INVALID_ARGUMENT, at, "buffer %" PRIu32 " ('%s') is said to be made by %s, a %s, which makes "
            "no buffer", c.owned, b->bufs[c.owned].name, b->label, crec_command_kind_name((crec_command_kind)c.kind));
    return;
  }
  if (c.makes_buffer) {
    /* the builder made the next buffer: it must be the file's */
    crec_buffer made = crec_program_buffer(p, c.owned);
    crec_buffer_info info;
    const buffer_rec *br = &b->bufs[c.owned];
    if (crec_program_buffer_count(p) != (size_t)c.owned + 1 || crec_buffer_get_info(p, made, &info) != CREC_OK ||
        strcmp(info.name, br->name) != 0 || info.size != br->size) {
      fail_at(r, CREC_ERR_INVALID_ARGUMENT, br->at, "buffer %" PRIu32 " ('%s', %" PRIu64 " bytes) is not the one "
              "%s makes", c.owned, br->name, br->size, b->label);
      return;
    }
    b->buffers[b->made_bufs++] = made;
  }
}

static void read_commands(builder *b) {
  reader *r = b->r;
  begin_read_section(r, SEC_CMDS);
  uint32_t n = r_count(r, 9, "the command count");
  if (failed(r)) return;
  b->owned = keep(r, crec__malloc((n ? n : 1) * sizeof *b->owned));
  if (failed(r)) return;
  for (uint32_t i = 0; i < n; i++) b->owned[i] = NONE;
  for (uint32_t i = 0; i < b->num_bufs && !failed(r); i++) {
    uint32_t o = b->bufs[i].owner;
    if (o == NONE) continue;
    if (o >= n || b->owned[o] != NONE)
      fail_at(r, CREC_ERR_INVALID_ARGUMENT, b->bufs[i].at, "buffer %" PRIu32 " ('%s') is said to be made by "
              "command %" PRIu32 ", %s", i, b->bufs[i].name, o, o >= n ? "which does not exist" : "which makes another");
    else
      b->owned[o] = i;
  }
  for (uint32_t i = 0; i < n && !failed(r); i++) read_command(b, i);
  end_read_section(r, SEC_CMDS);
}

static void free_reader(reader *r) {
  for (size_t i = 0; i < r->num_keep; i++) crec__free(r->keep[i]);
  CREC__FREE(r->keep);
}

crec_status crec_program_deserialize(const void *bytes, size_t size, crec_program **out) {
  static const char fn[] = "crec_program_deserialize";
  if (!out) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'out' is NULL");
  *out = NULL;
  if (!bytes && size) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'bytes' is NULL");
  reader r = {bytes ? bytes : (const void *)"", size, 0, size, CREC_OK, fn, NULL, 0, 0, 0};
  read_header(&r);
  crec_program_file_info info = CREC_PROGRAM_FILE_INFO_INIT;
  read_meta(&r, &info);
  if (failed(&r)) {
    free_reader(&r);
    return r.status;
  }
  builder b = {0};
  b.r = &r;
  crec_status s = crec_program_create(&b.p);
  if (s) {
    free_reader(&r);
    return crec__rethrow(s, fn);
  }
  read_modules(&b);
  read_kernels(&b);
  read_comms(&b);
  read_buffers(&b);
  read_scalars(&b);
  read_commands(&b);
  if (!failed(&r) && r.pos != r.size)
    fail_at(&r, CREC_ERR_INVALID_ARGUMENT, r.pos, "%zu bytes after the last section", r.size - r.pos);
  /* what no command needed comes after them all */
  snprintf(b.label, sizeof b.label, "the end of the program");
  make_buffers(&b, b.num_bufs, r.size);
  make_scalars(&b, b.num_scals);
  s = r.status;
  free_reader(&r);
  if (s) {
    crec_program_destroy(b.p);
    return s;
  }
  *out = b.p;
  return CREC_OK;
}

crec_status crec_program_file_get_info(const void *bytes, size_t size, crec_program_file_info *out) {
  static const char fn[] = "crec_program_file_get_info";
  if (!out) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'out' is NULL");
  if (!bytes && size) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'bytes' is NULL");
  crec_program_file_info info = CREC_PROGRAM_FILE_INFO_INIT;
  crec_status s = crec__give_struct(out, &info, sizeof info, sizeof info, fn, "argument 'out'",
                                    "CREC_PROGRAM_FILE_INFO_INIT");
  if (s) return s;
  reader r = {bytes ? bytes : (const void *)"", size, 0, size, CREC_OK, fn, NULL, 0, 0, 0};
  read_header(&r);
  read_meta(&r, &info);
  s = r.status;
  free_reader(&r);
  if (s) return s;
  return crec__give_struct(out, &info, sizeof info, sizeof info, fn, "argument 'out'", "CREC_PROGRAM_FILE_INFO_INIT");
}
