/* Command builders: launch, memcpy, memset, barrier, while, if, switch.
 * Each validates everything, allocates everything, then commits. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* Checks `program`, `region` and `out` common to every command builder. */
crec_status crec__check_common(crec_program *p, const char *fn, crec_region region, const void *out) {
  if (!p) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'program' is NULL");
  if (p->frozen) return crec__frozen(fn);
  if (!out) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'out' is NULL");
  crec_status s = crec__check_handle(p, region.id, p->num_regions, fn, "region", "argument 'region'");
  if (s) return s;
  if (p->num_commands >= CREC__MAX_ITEMS)
    return crec__error(CREC_ERR_TOO_LARGE, fn, "too many commands (at most %u)", CREC__MAX_ITEMS);
  return CREC_OK;
}

/* Validates a buffer range and resolves CREC_WHOLE for static buffers.
 * `what` names the argument in messages ("dst", "args[2]"). */
crec_status crec__check_range(const crec_program *p, const char *fn, const char *what,
                               crec_range *r) {
  crec_status s = crec__check_handle(p, r->buffer.id, p->num_buffers, fn, "buffer", "argument '%s'", what);
  if (s) return s;
  const crec__buffer *b = &p->buffers[crec__index(r->buffer.id)];
  if (r->size == 0)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "argument '%s' (buffer '%s'): empty range",
                       what, b->name);
  if (b->dynamic_size) {
    /* checked against the binding at record and replay; but no binding reaches past
     * 2^64 bytes, and a wrapped end would hide the range from dependency analysis */
    if (r->size != CREC_WHOLE && r->size > UINT64_MAX - r->offset)
      return crec__error(CREC_ERR_OUT_OF_RANGE, fn,
                         "argument '%s' (buffer '%s'): offset %llu + size %llu overflows 64 bits", what,
                         b->name, (unsigned long long)r->offset, (unsigned long long)r->size);
    return CREC_OK;
  }
  if (r->offset >= b->size)
    return crec__error(CREC_ERR_OUT_OF_RANGE, fn,
                       "argument '%s' (buffer '%s'): offset %llu is beyond buffer size %llu", what,
                       b->name, (unsigned long long)r->offset, (unsigned long long)b->size);
  if (r->size == CREC_WHOLE) {
    r->size = b->size - r->offset;
  } else if (r->size > b->size - r->offset) {
    return crec__error(CREC_ERR_OUT_OF_RANGE, fn,
                       "argument '%s' (buffer '%s'): offset %llu + size %llu exceeds buffer size %llu",
                       what, b->name, (unsigned long long)r->offset, (unsigned long long)r->size,
                       (unsigned long long)b->size);
  }
  return CREC_OK;
}

static crec_status check_dim(const crec_program *p, const char *fn, const char *what, crec_dim d,
                             uint32_t max) {
  if (d.scalar.id == 0) {
    if (d.value == 0)
      return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "argument '%s' is 0", what);
    if (d.value > max)
      return crec__error(CREC_ERR_OUT_OF_RANGE, fn, "argument '%s' is %u, above the CUDA limit %u",
                         what, d.value, max);
    return CREC_OK;
  }
  crec_status st = crec__check_handle(p, d.scalar.id, p->num_scalars, fn, "scalar", "argument '%s'", what);
  if (st) return st;
  const crec__scalar *s = &p->scalars[crec__index(d.scalar.id)];
  if (s->type != CREC_TYPE_I32 && s->type != CREC_TYPE_I64)
    return crec__error(CREC_ERR_TYPE_MISMATCH, fn,
                       "argument '%s': scalar '%s' has type %s, but a dimension must be an integer",
                       what, s->name, crec_type_name(s->type));
  return CREC_OK;
}

static uint32_t imm_align(uint32_t size) {
  uint32_t a = 1;
  while (a < 8 && size % (a * 2) == 0) a *= 2;
  return a;
}

uint32_t crec__arg_size(const crec_program *p, const crec_arg *a) {
  switch (a->kind) {
    case CREC_ARG_BUFFER: return 8;
    case CREC_ARG_SCALAR:
      return (uint32_t)crec_type_size(p->scalars[crec__index(a->scalar.id)].type);
    case CREC_ARG_IMMEDIATE: return a->size;
  }
  return 0;
}

/* Reserves room for one more command in the program and in region `r`, plus `extra_regions`. */
crec_status crec__reserve_command(crec_program *p, uint32_t r, size_t extra_regions) {
  if (CREC__RESERVE(p->commands, p->cap_commands, p->num_commands + 1) != CREC_OK) return CREC_ERR_OUT_OF_MEMORY;
  if (CREC__RESERVE(p->regions, p->cap_regions, p->num_regions + extra_regions) != CREC_OK) return CREC_ERR_OUT_OF_MEMORY;
  crec__region *reg = &p->regions[r];
  if (CREC__RESERVE(reg->commands, reg->cap_commands, reg->num_commands + 1) != CREC_OK) return CREC_ERR_OUT_OF_MEMORY;
  return CREC_OK;
}

/* Appends a fully built command to region `r` (crec__reserve_command() succeeded). */
uint32_t crec__commit_command(crec_program *p, uint32_t r, crec__command *c) {
  crec__region *reg = &p->regions[r];
  uint32_t index = (uint32_t)p->num_commands++;
  c->region = r;
  c->index_in_region = (uint32_t)reg->num_commands;
  reg->commands[reg->num_commands++] = index;
  p->commands[index] = *c;
  return index;
}

static char *default_name(const char *name, const char *fallback) {
  return crec__strdup(name ? name : fallback);
}

/* ---- launch ---- */

/* PTX functions: the text from one ".entry" or ".func" to the next is one function's. */
static const char *next_function(const char *at) {
  const char *e = strstr(at, ".entry"), *f = strstr(at, ".func");
  return e && (!f || e < f) ? e : f;
}

static bool ident_char(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '$'; }

/* Whether [from, to) holds `name` as a whole identifier. */
static bool has_ident(const char *from, const char *to, const char *name) {
  size_t len = strlen(name);
  for (const char *h = strstr(from, name); h && h + len <= to; h = strstr(h + 1, name))
    if ((h == from || !ident_char(h[-1])) && !ident_char(h[len])) return true;
  return false;
}

/* The name of the .func at `f` (after ".func", past a return parameter list in
 * parentheses) into `name`; its length (0: none). */
static size_t func_name(const char *f, char name[256]) {
  const char *n = f + 5;
  while (*n == ' ' || *n == '\t' || *n == '\n' || *n == '\r') n++;
  if (*n == '(') {
    n = strchr(n, ')');
    if (!n) return 0;
    n++;
    while (*n == ' ' || *n == '\t' || *n == '\n' || *n == '\r') n++;
  }
  size_t k = 0;
  while (ident_char(n[k]) && k + 1 < 256) name[k] = n[k], k++;
  name[k] = 0;
  return k;
}

/* Whether [from, to) calls a .func of `ptx` whose text has `what`. */
static bool calls_func_with(const char *ptx, const char *from, const char *to, const char *what) {
  for (const char *f = strstr(ptx, ".func"); f; f = strstr(f + 5, ".func")) {
    const char *end = next_function(f + 5), *hit = strstr(f, what);
    char name[256];
    if (hit && (!end || hit < end) && func_name(f, name) && has_ident(from, to, name)) return true;
  }
  return false;
}

/* Whether PTX instruction `m` (its mnemonic) reaches memory that another kernel may
 * write or read: loads, stores, atomics, copies and texture or surface accesses,
 * but not of parameters, shared or local memory, or the constant bank. */
static bool touches_memory(const char *m) {
  static const char *const kinds[] = {"ld.", "ldu.", "st.", "atom.", "red.", "cp.", "tex.", "tld4.", "suld.", "sust.", "sured."};
  static const char *const own[] = {"ld.param", "ld.shared", "ld.local", "ld.const", "st.param", "st.shared", "st.local"};
  bool memory = false;
  for (size_t i = 0; i < sizeof kinds / sizeof *kinds && !memory; i++) memory = strncmp(m, kinds[i], strlen(kinds[i])) == 0;
  for (size_t i = 0; i < sizeof own / sizeof *own && memory; i++)
    if (strncmp(m, own[i], strlen(own[i])) == 0) memory = false;
  return memory;
}

typedef enum { WAITS, NO_WAIT, TOUCHES_FIRST, NO_ENTRY } ptx_wait;

/* Whether entry `entry` of PTX text `ptx` runs griddepcontrol.wait before it touches
 * memory (touches_memory): in its own body, or by calling a .func that has it (one
 * call deep). `*line` gets the first instruction that touches memory before any wait
 * (TOUCHES_FIRST). A PTX image is what crec can read of a kernel's code; a cubin's is not. */
static ptx_wait ptx_entry_waits(const char *ptx, const char *entry, char line[120]) {
  static const char wait[] = "griddepcontrol.wait";
  const char *body = NULL, *body_end = NULL;
  for (const char *at = next_function(ptx); at && !body; at = next_function(at + 5)) {
    if (strncmp(at, ".entry", 6) != 0) continue;
    const char *n = at + 6;
    while (*n == ' ' || *n == '\t' || *n == '\n' || *n == '\r') n++;
    if (strncmp(n, entry, strlen(entry)) == 0 && !ident_char(n[strlen(entry)])) body = at, body_end = next_function(at + 5);
  }
  if (!body) return NO_ENTRY;
  if (!body_end) body_end = body + strlen(body);
  const char *brace = strchr(body, '{');
  if (!brace || brace > body_end) return NO_WAIT;
  for (const char *l = brace + 1; l < body_end;) {
    const char *eol = memchr(l, '\n', (size_t)(body_end - l));
    if (!eol) eol = body_end;
    const char *m = l;
    while (m < eol && (*m == ' ' || *m == '\t')) m++;
    if (*m == '@') { /* a predicate: @%p1 or @!%p1 */
      while (m < eol && *m != ' ' && *m != '\t') m++;
      while (m < eol && (*m == ' ' || *m == '\t')) m++;
    }
    if (strncmp(m, wait, sizeof wait - 1) == 0) return WAITS;
    if (strncmp(m, "call", 4) == 0 && calls_func_with(ptx, m, eol, wait)) return WAITS;
    if (m < eol && touches_memory(m)) {
      size_t n = (size_t)(eol - m) < 119 ? (size_t)(eol - m) : 119;
      memcpy(line, m, n);
      line[n] = 0;
      return TOUCHES_FIRST;
    }
    l = eol + 1;
  }
  return NO_WAIT;
}

/* A launch's grid, block and dynamic shared memory against CUDA's limits and the kernel's. */
static crec_status check_launch_dims(const crec_program *p, const char *fn, const crec_launch *launch,
                                     const crec__kernel *k, const char *cname) {
  static const char *const axis = "xyz";
  static const uint32_t grid_max[3] = {0x7fffffffu, 65535u, 65535u};
  static const uint32_t block_max[3] = {1024u, 1024u, 64u};
  char what[64];
  crec_status s;
  for (int i = 0; i < 3; i++) {
    snprintf(what, sizeof what, "launch.grid.%c", axis[i]);
    if ((s = check_dim(p, fn, what, launch->grid[i], grid_max[i]))) return s;
    snprintf(what, sizeof what, "launch.block.%c", axis[i]);
    if ((s = check_dim(p, fn, what, launch->block[i], block_max[i]))) return s;
  }
  if (launch->block[0].scalar.id == 0 && launch->block[1].scalar.id == 0 &&
      launch->block[2].scalar.id == 0) {
    uint64_t threads = (uint64_t)launch->block[0].value * launch->block[1].value * launch->block[2].value;
    if (threads > 1024)
      return crec__error(CREC_ERR_OUT_OF_RANGE, fn,
                         "argument 'launch.block': %llu threads per block in '%s', above the CUDA limit 1024",
                         (unsigned long long)threads, cname);
  }
  if (launch->shared_bytes.scalar.id != 0)
    return check_dim(p, fn, "launch.shared_bytes", launch->shared_bytes, UINT32_MAX);
  uint32_t limit = k->shared_bytes > 48u * 1024u ? k->shared_bytes : 48u * 1024u;
  if (launch->shared_bytes.value > limit)
    return crec__error(CREC_ERR_TOO_LARGE, fn,
                       "argument 'launch.shared_bytes': %u bytes of dynamic shared memory for '%s', "
                       "above the kernel's %u (raise crec_kernel_options.shared_bytes)",
                       launch->shared_bytes.value, cname, limit);
  return CREC_OK;
}

/* Checks one kernel argument (`what` names it) and clears the fields its kind does not use. */
static crec_status check_launch_arg(const crec_program *p, const char *fn, const char *what, crec_arg *a) {
  crec_status s;
  switch (a->kind) {
    case CREC_ARG_BUFFER:
      if (a->access < CREC_ACCESS_READ || a->access > CREC_ACCESS_READ_WRITE)
        return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "argument '%s': unknown access %d", what, (int)a->access);
      if ((s = crec__check_range(p, fn, what, &a->range))) return s;
      if ((a->access & CREC_ACCESS_WRITE) && p->buffers[crec__index(a->range.buffer.id)].kind == CREC_BUFFER_CONSTANT)
        return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "argument '%s': buffer '%s' is a constant and cannot be written",
                           what, p->buffers[crec__index(a->range.buffer.id)].name);
      a->scalar.id = 0;
      a->type = CREC_TYPE_NONE;
      a->data = NULL;
      a->size = 0;
      return CREC_OK;
    case CREC_ARG_SCALAR:
      if ((s = crec__check_handle(p, a->scalar.id, p->num_scalars, fn, "scalar", "argument '%s'", what))) return s;
      memset(&a->range, 0, sizeof a->range);
      a->access = CREC_ACCESS_READ;
      a->type = p->scalars[crec__index(a->scalar.id)].type;
      a->data = NULL;
      a->size = 0;
      return CREC_OK;
    case CREC_ARG_IMMEDIATE:
      if (a->size == 0 || a->size > CREC_MAX_PARAM_BYTES)
        return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "argument '%s': immediate of %u bytes (1 to %u allowed)", what,
                           a->size, CREC_MAX_PARAM_BYTES);
      if (!a->data && a->size > sizeof a->value)
        return crec__error(CREC_ERR_NULL_POINTER, fn, "argument '%s': immediate of %u bytes needs 'data'", what, a->size);
      if (a->type != CREC_TYPE_NONE && crec_type_size(a->type) != a->size)
        return crec__error(CREC_ERR_TYPE_MISMATCH, fn, "argument '%s': immediate of %u bytes labelled %s", what, a->size,
                           crec_type_name(a->type));
      memset(&a->range, 0, sizeof a->range);
      a->access = CREC_ACCESS_READ;
      a->scalar.id = 0;
      return CREC_OK;
    default:
      return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "argument '%s': unknown argument kind %d", what, (int)a->kind);
  }
}

/* Copies immediate bytes into `args`: small ones into `value`, large ones into owned memory. */
static crec_status copy_immediates(crec__arg *args, size_t n, const char *fn) {
  for (size_t i = 0; i < n; i++) {
    crec_arg *a = &args[i].arg;
    if (a->kind != CREC_ARG_IMMEDIATE || !a->data) continue;
    if (a->size <= sizeof a->value) {
      memcpy(a->value.bytes, a->data, a->size);
      a->data = NULL;
    } else {
      void *copy = crec__memdup(a->data, a->size);
      /* later immediates still point at the caller's bytes, which the cleanup skips */
      if (!copy) return crec__oom(fn);
      a->data = copy;
    }
  }
  return CREC_OK;
}

crec_status crec_program_add_launch(crec_program *program, crec_region region, const char *name,
                                    const crec_launch *launch, crec_command *out) {
  static const char fn[] = "crec_program_add_launch";
  crec_program *p = program;
  if (out) out->id = 0;
  crec_status s = crec__check_common(p, fn, region, out);
  if (s) return s;
  if (!launch) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'launch' is NULL");
  crec_launch given = CREC_LAUNCH_INIT;
  /* the oldest size: the fields before flags */
  if ((s = crec__take_struct(&given, sizeof given, launch, offsetof(crec_launch, flags), fn, "argument 'launch'",
                             "CREC_LAUNCH_INIT")))
    return s;
  launch = &given;
  if (launch->flags & ~CREC_LAUNCH_EARLY_START)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "argument 'launch.flags': unknown bits 0x%x (CREC_LAUNCH_*)",
                       launch->flags & ~CREC_LAUNCH_EARLY_START);
  if ((s = crec__check_handle(p, launch->kernel.id, p->num_kernels, fn, "kernel", "argument 'launch.kernel'")))
    return s;
  crec__kernel *k = &p->kernels[crec__index(launch->kernel.id)];
  const char *cname = name ? name : k->entry;
  if ((s = check_launch_dims(p, fn, launch, k, cname))) return s;
  /* early start is a promise about the kernel's code: checked where crec can read it,
   * once per kernel (a module's text is read again only to explain a refusal) */
  const crec__module *km = &p->modules[k->module];
  char first[120] = "";
  ptx_wait pw = (launch->flags & CREC_LAUNCH_EARLY_START) && km->format == CREC_IMAGE_PTX && !k->waits_first
                    ? ptx_entry_waits(km->image, k->entry, first)
                    : WAITS;
  if (pw == WAITS && (launch->flags & CREC_LAUNCH_EARLY_START)) k->waits_first = true;
  if (pw == NO_WAIT || pw == NO_ENTRY)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn,
                       "argument 'launch.flags': CREC_LAUNCH_EARLY_START for '%s', but kernel '%s' of PTX module '%s' "
                       "has no griddepcontrol.wait (cudaGridDependencySynchronize()), so it could run before the "
                       "kernels it depends on finish (PTX for sm_90 or later has it)",
                       cname, k->entry, km->name);
  if (pw == TOUCHES_FIRST)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn,
                       "argument 'launch.flags': CREC_LAUNCH_EARLY_START for '%s', but kernel '%s' of PTX module '%s' "
                       "touches memory before its griddepcontrol.wait ('%s'), so it could read what the kernels "
                       "before it have not written yet",
                       cname, k->entry, km->name, first);
  if (launch->num_args && !launch->args)
    return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'launch.args' is NULL but num_args is %zu",
                       launch->num_args);
  if (launch->num_args > CREC_MAX_PARAM_BYTES)
    return crec__error(CREC_ERR_TOO_LARGE, fn, "argument 'launch.num_args': %zu arguments", launch->num_args);

  /* the arguments, checked and laid out in the parameter block */
  crec__arg *args = launch->num_args ? crec__calloc(launch->num_args, sizeof *args) : NULL;
  if (launch->num_args && !args) return crec__oom(fn);
  uint64_t offset = 0;
  for (size_t i = 0; i < launch->num_args; i++) {
    crec_arg a = launch->args[i];
    char what[64];
    snprintf(what, sizeof what, "launch.args[%zu]", i);
    if ((s = check_launch_arg(p, fn, what, &a))) goto fail;
    uint32_t size = crec__arg_size(p, &a);
    uint32_t align = a.kind == CREC_ARG_IMMEDIATE ? imm_align(size) : size;
    offset = (offset + align - 1) / align * align;
    args[i].arg = a;
    args[i].param_offset = (uint32_t)(offset < UINT32_MAX ? offset : UINT32_MAX);
    offset += size;
  }
  if (offset > CREC_MAX_PARAM_BYTES) {
    s = crec__error(CREC_ERR_TOO_LARGE, fn,
                    "argument 'launch.args': %llu bytes of kernel parameters for '%s', above the "
                    "%u a CUDA kernel node accepts",
                    (unsigned long long)offset, cname, CREC_MAX_PARAM_BYTES);
    goto fail;
  }
  if ((s = copy_immediates(args, launch->num_args, fn))) goto fail;

  /* commit */
  crec__command c = {0};
  c.kind = CREC_COMMAND_LAUNCH;
  c.name = default_name(name, k->entry);
  if (!c.name || crec__reserve_command(p, (uint32_t)crec__index(region.id), 0) != CREC_OK) {
    crec__free(c.name);
    s = crec__oom(fn);
    goto fail;
  }
  c.kernel = (uint32_t)crec__index(launch->kernel.id);
  memcpy(c.grid, launch->grid, sizeof c.grid);
  memcpy(c.block, launch->block, sizeof c.block);
  c.shared_bytes = launch->shared_bytes;
  c.args = args;
  c.num_args = launch->num_args;
  c.param_bytes = (uint32_t)offset;
  c.launch_flags = launch->flags;
  out->id = crec__handle(p, crec__commit_command(p, (uint32_t)crec__index(region.id), &c));
  return CREC_OK;
fail:
  if (args) {
    for (size_t i = 0; i < launch->num_args; i++)
      if (args[i].arg.kind == CREC_ARG_IMMEDIATE && args[i].arg.data &&
          args[i].arg.data != launch->args[i].data)
        crec__free((void *)args[i].arg.data);
    crec__free(args);
  }
  return s;
}

/* ---- memcpy, memset, barrier ---- */

crec_status crec__check_writable(const crec_program *p, const char *fn, const char *what,
                                  crec_range r) {
  const crec__buffer *b = &p->buffers[crec__index(r.buffer.id)];
  if (b->kind == CREC_BUFFER_CONSTANT)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn,
                       "argument '%s': buffer '%s' is a constant and cannot be written", what, b->name);
  return CREC_OK;
}

crec_status crec_program_add_memcpy(crec_program *program, crec_region region, const char *name,
                                    crec_range dst, crec_range src, crec_command *out) {
  static const char fn[] = "crec_program_add_memcpy";
  crec_program *p = program;
  if (out) out->id = 0;
  crec_status s = crec__check_common(p, fn, region, out);
  if (s) return s;
  bool dst_whole = dst.size == CREC_WHOLE, src_whole = src.size == CREC_WHOLE;
  if ((s = crec__check_range(p, fn, "dst", &dst))) return s;
  if ((s = crec__check_range(p, fn, "src", &src))) return s;
  if ((s = crec__check_writable(p, fn, "dst", dst))) return s;
  /* a whole range takes its size from the other side when that one is explicit */
  if (dst_whole && !src_whole && src.size != CREC_WHOLE) {
    const crec__buffer *b = &p->buffers[crec__index(dst.buffer.id)];
    if (!b->dynamic_size && dst.size < src.size)
      return crec__error(CREC_ERR_OUT_OF_RANGE, fn,
                         "argument 'dst' (buffer '%s'): %llu bytes remain, %llu copied", b->name,
                         (unsigned long long)dst.size, (unsigned long long)src.size);
    dst.size = src.size;
  } else if (src_whole && !dst_whole && dst.size != CREC_WHOLE) {
    const crec__buffer *b = &p->buffers[crec__index(src.buffer.id)];
    if (!b->dynamic_size && src.size < dst.size)
      return crec__error(CREC_ERR_OUT_OF_RANGE, fn,
                         "argument 'src' (buffer '%s'): %llu bytes remain, %llu copied", b->name,
                         (unsigned long long)src.size, (unsigned long long)dst.size);
    src.size = dst.size;
  }
  /* A side still whole is a dynamic buffer's rest: it takes the other side's
   * size when that one is known, so its binding must hold that many bytes. */
  if (dst.size == CREC_WHOLE && src.size != CREC_WHOLE) dst.size = src.size;
  else if (src.size == CREC_WHOLE && dst.size != CREC_WHOLE) src.size = dst.size;
  if (dst.size != src.size && dst.size != CREC_WHOLE && src.size != CREC_WHOLE)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn,
                       "arguments 'dst' (buffer '%s') and 'src' (buffer '%s'): sizes differ (%llu and %llu bytes)",
                       crec__buffer_name(p, dst.buffer), crec__buffer_name(p, src.buffer),
                       (unsigned long long)dst.size, (unsigned long long)src.size);
  if (dst.buffer.id == src.buffer.id) {
    /* a copy between overlapping ranges has no defined result on the device */
    uint64_t dend = dst.size == CREC_WHOLE ? UINT64_MAX : dst.offset + dst.size;
    uint64_t send = src.size == CREC_WHOLE ? UINT64_MAX : src.offset + src.size;
    if (dst.offset < send && src.offset < dend)
      return crec__error(CREC_ERR_INVALID_ARGUMENT, fn,
                         "arguments 'dst' and 'src' overlap in buffer '%s' (bytes %llu and %llu onward)",
                         crec__buffer_name(p, dst.buffer), (unsigned long long)dst.offset,
                         (unsigned long long)src.offset);
  }
  crec__command c = {0};
  c.kind = CREC_COMMAND_MEMCPY;
  c.name = default_name(name, "memcpy");
  if (!c.name || crec__reserve_command(p, (uint32_t)crec__index(region.id), 0) != CREC_OK) {
    crec__free(c.name);
    return crec__oom(fn);
  }
  c.dst = dst;
  c.src = src;
  c.bytes = dst.size != CREC_WHOLE ? dst.size : src.size;
  out->id = crec__handle(p, crec__commit_command(p, (uint32_t)crec__index(region.id), &c));
  return CREC_OK;
}

crec_status crec_program_add_memset(crec_program *program, crec_region region, const char *name,
                                    crec_range dst, uint32_t value, uint32_t element_size,
                                    crec_command *out) {
  static const char fn[] = "crec_program_add_memset";
  crec_program *p = program;
  if (out) out->id = 0;
  crec_status s = crec__check_common(p, fn, region, out);
  if (s) return s;
  if ((s = crec__check_range(p, fn, "dst", &dst))) return s;
  if ((s = crec__check_writable(p, fn, "dst", dst))) return s;
  const crec__buffer *b = &p->buffers[crec__index(dst.buffer.id)];
  if (element_size != 1 && element_size != 2 && element_size != 4)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn,
                       "argument 'element_size': %u (memset elements are 1, 2 or 4 bytes)", element_size);
  if (element_size < 4 && value >> (8 * element_size))
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn,
                       "argument 'value': 0x%x does not fit in %u-byte elements", value, element_size);
  if (b->memory == CREC_MEMORY_HOST)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn,
                       "argument 'dst': buffer '%s' is host memory; memset writes device memory", b->name);
  if (dst.offset % element_size != 0)
    return crec__error(CREC_ERR_MISALIGNED, fn,
                       "argument 'dst' (buffer '%s'): offset %llu is not a multiple of the element size %u",
                       b->name, (unsigned long long)dst.offset, element_size);
  if (b->alignment % element_size != 0)
    return crec__error(CREC_ERR_MISALIGNED, fn,
                       "argument 'dst' (buffer '%s'): the buffer's alignment %u is not a multiple of the element size %u",
                       b->name, b->alignment, element_size);
  if (dst.size != CREC_WHOLE && dst.size % element_size != 0)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn,
                       "argument 'dst' (buffer '%s'): size %llu is not a multiple of the element size %u",
                       b->name, (unsigned long long)dst.size, element_size);
  crec__command c = {0};
  c.kind = CREC_COMMAND_MEMSET;
  c.name = default_name(name, "memset");
  if (!c.name || crec__reserve_command(p, (uint32_t)crec__index(region.id), 0) != CREC_OK) {
    crec__free(c.name);
    return crec__oom(fn);
  }
  c.dst = dst;
  c.bytes = dst.size;
  c.memset_value = value;
  c.memset_element_size = element_size;
  out->id = crec__handle(p, crec__commit_command(p, (uint32_t)crec__index(region.id), &c));
  return CREC_OK;
}

crec_status crec_program_add_barrier(crec_program *program, crec_region region, const char *name,
                                     crec_command *out) {
  static const char fn[] = "crec_program_add_barrier";
  crec_program *p = program;
  if (out) out->id = 0;
  crec_status s = crec__check_common(p, fn, region, out);
  if (s) return s;
  crec__command c = {0};
  c.kind = CREC_COMMAND_BARRIER;
  c.name = default_name(name, "barrier");
  if (!c.name || crec__reserve_command(p, (uint32_t)crec__index(region.id), 0) != CREC_OK) {
    crec__free(c.name);
    return crec__oom(fn);
  }
  out->id = crec__handle(p, crec__commit_command(p, (uint32_t)crec__index(region.id), &c));
  return CREC_OK;
}

/* ---- control flow ---- */

/* Reports a predicate or switch index range smaller than `min_bytes`. */
static crec_status condition_too_small(const char *fn, const char *what, const crec__buffer *b,
                                       uint64_t size, uint32_t min_bytes) {
  return crec__error(CREC_ERR_OUT_OF_RANGE, fn, "argument '%s' (buffer '%s'): %llu bytes, but %s needs %u",
                     what, b->name, (unsigned long long)size,
                     min_bytes == 1 ? "a predicate" : "a 32-bit index", min_bytes);
}

/* Checks a predicate (min_bytes 1) or switch index (min_bytes 4) range. */
static crec_status check_condition(const crec_program *p, const char *fn, const char *what,
                                   crec_range *r, uint32_t min_bytes) {
  /* an empty range is a condition smaller than it needs (crec__check_range() would call
   * it an invalid argument) */
  if (r->size == 0 && crec__valid(p, r->buffer.id, p->num_buffers))
    return condition_too_small(fn, what, &p->buffers[crec__index(r->buffer.id)], 0, min_bytes);
  crec_status s = crec__check_range(p, fn, what, r);
  if (s) return s;
  const crec__buffer *b = &p->buffers[crec__index(r->buffer.id)];
  if (b->memory == CREC_MEMORY_HOST)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn,
                       "argument '%s': buffer '%s' is host memory; conditions are read on the device",
                       what, b->name);
  if (r->size != CREC_WHOLE && r->size < min_bytes)
    return condition_too_small(fn, what, b, r->size, min_bytes);
  if (min_bytes > 1 && (r->offset % min_bytes != 0 || b->alignment % min_bytes != 0))
    return crec__error(CREC_ERR_MISALIGNED, fn,
                       "argument '%s' (buffer '%s'): a 32-bit index needs 4-byte alignment (offset %llu, buffer alignment %u)",
                       what, b->name, (unsigned long long)r->offset, b->alignment);
  /* only the first bytes are read */
  r->size = min_bytes;
  return CREC_OK;
}

/* Adds a control-flow command owning `n` new regions with the given roles. */
static crec_status add_control(crec_program *p, const char *fn, crec_region region,
                               const char *name, crec_command_kind kind, crec_range cond,
                               size_t n, const crec_region_role *roles, const int32_t *cases,
                               crec_command *out, crec_region *regions_out) {
  crec__command c = {0};
  c.kind = kind;
  c.name = default_name(name, crec_command_kind_name(kind));
  c.regions = crec__calloc(n, sizeof *c.regions);
  c.case_values = cases && n > 1 ? crec__memdup(cases, (n - 1) * sizeof *cases) : NULL;
  bool ok = c.name && c.regions && (!cases || n <= 1 || c.case_values) &&
            p->num_regions + n <= CREC__MAX_ITEMS &&
            crec__reserve_command(p, (uint32_t)crec__index(region.id), n) == CREC_OK;
  if (!ok) {
    crec__free(c.name);
    crec__free(c.regions);
    crec__free(c.case_values);
    return crec__oom(fn);
  }
  c.predicate = cond;
  c.num_regions = n;
  uint32_t index = (uint32_t)p->num_commands; /* the index crec__commit_command() will give */
  for (size_t i = 0; i < n; i++) {
    crec__region *r = &p->regions[p->num_regions];
    memset(r, 0, sizeof *r);
    r->role = roles[i];
    r->parent = index;
    r->index_in_parent = (uint32_t)i;
    c.regions[i] = (uint32_t)p->num_regions++;
    regions_out[i].id = crec__handle(p, c.regions[i]);
  }
  out->id = crec__handle(p, crec__commit_command(p, (uint32_t)crec__index(region.id), &c));
  return CREC_OK;
}

crec_status crec_program_add_while(crec_program *program, crec_region region, const char *name,
                                   crec_range predicate, crec_command *out, crec_region *cond_out,
                                   crec_region *body_out) {
  static const char fn[] = "crec_program_add_while";
  if (out) out->id = 0;
  if (cond_out) cond_out->id = 0;
  if (body_out) body_out->id = 0;
  crec_status s = crec__check_common(program, fn, region, out);
  if (s) return s;
  if (!cond_out) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'cond_out' is NULL");
  if (!body_out) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'body_out' is NULL");
  if ((s = check_condition(program, fn, "predicate", &predicate, 1))) return s;
  static const crec_region_role roles[2] = {CREC_REGION_COND, CREC_REGION_BODY};
  crec_region regions[2];
  s = add_control(program, fn, region, name, CREC_COMMAND_WHILE, predicate, 2, roles, NULL, out,
                  regions);
  if (s) return s;
  *cond_out = regions[0];
  *body_out = regions[1];
  return CREC_OK;
}

/* The while command `loop` names, for the loop-limit calls. */
static crec_status while_of(const crec_program *p, crec_command loop, const char *fn, crec__command **out) {
  crec_status s = crec__check_handle(p, loop.id, p->num_commands, fn, "command", "argument 'loop'");
  if (s) return s;
  crec__command *c = &p->commands[crec__index(loop.id)];
  char label[160];
  if (c->kind != CREC_COMMAND_WHILE)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "argument 'loop': %s is a %s command, not a while",
                       crec__command_label(p, crec__index(loop.id), label, sizeof label),
                       crec_command_kind_name(c->kind));
  *out = c;
  return CREC_OK;
}

crec_status crec_program_set_loop_limit(crec_program *program, crec_command loop, uint64_t max_iterations) {
  static const char fn[] = "crec_program_set_loop_limit";
  if (!program) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'program' is NULL");
  if (program->frozen) return crec__frozen(fn);
  crec__command *c = NULL;
  crec_status s = while_of(program, loop, fn, &c);
  if (s) return s;
  c->loop_limit = max_iterations;
  return CREC_OK;
}

crec_status crec_program_get_loop_limit(const crec_program *program, crec_command loop, uint64_t *out) {
  static const char fn[] = "crec_program_get_loop_limit";
  if (out) *out = 0;
  if (!program) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'program' is NULL");
  if (!out) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'out' is NULL");
  crec__command *c = NULL;
  crec_status s = while_of(program, loop, fn, &c);
  if (s) return s;
  *out = c->loop_limit;
  return CREC_OK;
}

crec_status crec_program_add_if(crec_program *program, crec_region region, const char *name,
                                crec_range predicate, crec_command *out, crec_region *then_out,
                                crec_region *else_out) {
  static const char fn[] = "crec_program_add_if";
  if (out) out->id = 0;
  if (then_out) then_out->id = 0;
  if (else_out) else_out->id = 0;
  crec_status s = crec__check_common(program, fn, region, out);
  if (s) return s;
  if (!then_out) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'then_out' is NULL");
  if (!else_out) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'else_out' is NULL");
  if ((s = check_condition(program, fn, "predicate", &predicate, 1))) return s;
  static const crec_region_role roles[2] = {CREC_REGION_THEN, CREC_REGION_ELSE};
  crec_region regions[2];
  s = add_control(program, fn, region, name, CREC_COMMAND_IF, predicate, 2, roles, NULL, out,
                  regions);
  if (s) return s;
  *then_out = regions[0];
  *else_out = regions[1];
  return CREC_OK;
}

crec_status crec_program_add_switch(crec_program *program, crec_region region, const char *name,
                                    crec_range index, size_t num_branches,
                                    const int32_t *case_values, crec_command *out,
                                    crec_region *branches_out) {
  static const char fn[] = "crec_program_add_switch";
  if (out) out->id = 0;
  /* every output is reset before any check can fail */
  if (branches_out)
    for (size_t i = 0; i < num_branches && i < 65536; i++) branches_out[i].id = 0;
  crec_status s = crec__check_common(program, fn, region, out);
  if (s) return s;
  if (!branches_out) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'branches_out' is NULL");
  if (num_branches == 0)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "argument 'num_branches': a switch needs at least one branch");
  if (num_branches > 65536)
    return crec__error(CREC_ERR_TOO_LARGE, fn, "argument 'num_branches': %zu branches (at most 65536)",
                       num_branches);
  if ((s = check_condition(program, fn, "index", &index, 4))) return s;
  if (case_values) {
    for (size_t i = 1; i + 1 < num_branches; i++)
      for (size_t j = 0; j < i; j++)
        if (case_values[i] == case_values[j])
          return crec__error(CREC_ERR_INVALID_ARGUMENT, fn,
                             "argument 'case_values': value %d is given for branches %zu and %zu",
                             (int)case_values[i], j, i);
  }
  crec_region_role *roles = crec__malloc(num_branches * sizeof *roles);
  if (!roles) return crec__oom(fn);
  for (size_t i = 0; i < num_branches; i++) roles[i] = CREC_REGION_BRANCH;
  s = add_control(program, fn, region, name, CREC_COMMAND_SWITCH, index, num_branches, roles,
                  case_values, out, branches_out);
  crec__free(roles);
  return s;
}
