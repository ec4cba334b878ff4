/* Introspection: reading buffers, scalars, modules, kernels, regions and commands back. */
#include <stddef.h>
#include <string.h>

#include "internal.h"

const char *crec_command_kind_name(crec_command_kind kind) {
  static const char *const names[] = {"launch", "memcpy", "memset", "barrier", "while", "if",
                                      "switch", "gemm",   "collective", "custom", "host", "fft", "cholesky", "conv",
                                      "graph"};
  return (unsigned)kind < sizeof names / sizeof *names ? names[kind] : "unknown";
}

const char *crec_region_role_name(crec_region_role role) {
  static const char *const names[] = {"program", "body", "cond", "then", "else", "branch"};
  return (unsigned)role < sizeof names / sizeof *names ? names[role] : "unknown";
}

const char *crec_buffer_kind_name(crec_buffer_kind kind) {
  static const char *const names[] = {"argument", "temporary", "constant"};
  return (unsigned)kind < sizeof names / sizeof *names ? names[kind] : "unknown";
}

const char *crec_type_name(crec_type type) {
  static const char *const names[] = {"i32", "i64", "f32", "f64"};
  return (unsigned)type < sizeof names / sizeof *names ? names[type] : "unknown";
}

const char *crec_element_name(crec_element element) {
  static const char *const names[] = {"bytes", "i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64"};
  return (unsigned)element < sizeof names / sizeof *names ? names[element] : "unknown";
}

size_t crec_element_size(crec_element element) {
  static const size_t sizes[] = {1, 1, 2, 4, 8, 2, 2, 4, 8};
  return (unsigned)element < sizeof sizes / sizeof *sizes ? sizes[element] : 0;
}

size_t crec_type_size(crec_type type) {
  static const size_t sizes[] = {4, 8, 4, 8};
  return (unsigned)type < sizeof sizes / sizeof *sizes ? sizes[type] : 0;
}

const char *crec_image_format_name(crec_image_format format) {
  static const char *const names[] = {"ptx", "cubin", "fatbin"};
  return (unsigned)format < sizeof names / sizeof *names ? names[format] : "unknown";
}

/* A fatbin (nvcc -fatbin) as nvcc writes it; NVIDIA does not document the layout:
 * a 16-byte header (u32 magic 0xBA55ED50, u16 version, u16 header size, u64 bytes
 * of entries), then entries, each a header (u16 kind, 1 PTX or 2 ELF; u16 version;
 * u32 header size; u64 payload size; at 28 a u32 arch, major * 10 + minor; at 40
 * u64 flags, bit 20 set for an arch-specific 'a' target) and its payload. */

int crec_image_needs_jit(crec_image_format format, const void *image, size_t size, int major, int minor) {
  const unsigned char *img = image;
  if (!img) return -1;
  switch (format) {
    case CREC_IMAGE_PTX: return 1;
    case CREC_IMAGE_CUBIN: return 0;
    case CREC_IMAGE_FATBIN: break;
    default: return -1;
  }
  if (size < 16 || crec__get_le(img, 4) != 0xBA55ED50u) return 1;
  uint64_t head = crec__get_le(img + 6, 2), end = head + crec__get_le(img + 8, 8);
  if (end > size || head < 16) return 1;
  for (uint64_t o = head; o + 48 <= end;) {
    uint64_t kind = crec__get_le(img + o, 2), hs = crec__get_le(img + o + 4, 4), payload = crec__get_le(img + o + 8, 8);
    if (hs < 48 || payload > end - o - hs) return 1;
    uint64_t arch = crec__get_le(img + o + 28, 4), flags = crec__get_le(img + o + 40, 8);
    int am = (int)(arch / 10), an = (int)(arch % 10);
    bool specific = flags & (1u << 20);
    if (kind == 2 && am == major && (specific ? an == minor : an <= minor)) return 0;
    o += hs + payload;
  }
  return 1;
}

size_t crec_handle_index(uint32_t id) { return id ? crec__index(id) : SIZE_MAX; }

#define CHECK_INFO(fn, p, out)                                                         \
  do {                                                                                 \
    if (!(p)) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'program' is NULL"); \
    if (!(out)) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'out' is NULL");   \
  } while (0)

/* The start of a getter of `what` `id` (a handle into a table of `count`):
 * `p` and `out` given, `*out` cleared, the handle valid. */
#define BEGIN_GET(fn, p, out, id, count, what)                                      \
  do {                                                                              \
    CHECK_INFO(fn, p, out);                                                         \
    memset(out, 0, sizeof *out);                                                    \
    crec_status s_ = crec__check_handle(p, id, count, fn, what, NULL);              \
    if (s_) return s_;                                                              \
  } while (0)

/* ---- buffers ---- */

size_t crec_program_buffer_count(const crec_program *p) { return p ? p->num_buffers : 0; }

crec_buffer crec_program_buffer(const crec_program *p, size_t index) {
  crec_buffer b = {p && index < p->num_buffers ? crec__handle(p, index) : 0};
  return b;
}

size_t crec_program_argument_count(const crec_program *p) { return p ? p->num_arguments : 0; }

crec_buffer crec_program_argument(const crec_program *p, size_t index) {
  crec_buffer b = {p && index < p->num_arguments ? crec__handle(p, p->arguments[index]) : 0};
  return b;
}

crec_status crec_buffer_get_info(const crec_program *p, crec_buffer buffer, crec_buffer_info *out) {
  static const char fn[] = "crec_buffer_get_info";
  BEGIN_GET(fn, p, out, buffer.id, p->num_buffers, "buffer");
  const crec__buffer *b = &p->buffers[crec__index(buffer.id)];
  out->name = b->name;
  out->kind = b->kind;
  out->memory = b->memory;
  out->size = b->size;
  out->alignment = b->alignment;
  out->dynamic_size = b->dynamic_size;
  out->element = b->element;
  out->argument_index = b->kind == CREC_BUFFER_ARGUMENT ? b->arg_index : SIZE_MAX;
  out->data = b->data;
  return CREC_OK;
}


/* The handle of the `what` named `name` in `names` (0 and CREC_ERR_NOT_FOUND when none). */
static crec_status find_named(const crec_program *p, const crec__names *names, crec__name_at name_at,
                              const char *name, const char *what, const char *fn, uint32_t *id) {
  *id = 0;
  if (!name) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'name' is NULL");
  uint32_t i = crec__names_find(names, name, p, name_at);
  if (i == CREC__NONE) return crec__error(CREC_ERR_NOT_FOUND, fn, "no %s named '%s'", what, name);
  *id = crec__handle(p, i);
  return CREC_OK;
}

crec_status crec_program_find_buffer(const crec_program *p, const char *name, crec_buffer *out) {
  static const char fn[] = "crec_program_find_buffer";
  CHECK_INFO(fn, p, out);
  return find_named(p, &p->buffer_names, crec__buffer_name_at, name, "buffer", fn, &out->id);
}

/* ---- scalars ---- */

size_t crec_program_scalar_count(const crec_program *p) { return p ? p->num_scalars : 0; }

crec_scalar crec_program_scalar(const crec_program *p, size_t index) {
  crec_scalar s = {p && index < p->num_scalars ? crec__handle(p, index) : 0};
  return s;
}

size_t crec_program_bound_scalar_count(const crec_program *p) { return p ? p->num_bound_scalars : 0; }

crec_scalar crec_program_bound_scalar(const crec_program *p, size_t index) {
  crec_scalar s = {p && index < p->num_bound_scalars ? crec__handle(p, p->bound_scalars[index]) : 0};
  return s;
}

crec_status crec_scalar_get_info(const crec_program *p, crec_scalar scalar, crec_scalar_info *out) {
  static const char fn[] = "crec_scalar_get_info";
  BEGIN_GET(fn, p, out, scalar.id, p->num_scalars, "scalar");
  const crec__scalar *s = &p->scalars[crec__index(scalar.id)];
  out->name = s->name;
  out->type = s->type;
  out->kind = s->kind;
  out->binding_index = s->kind == CREC_SCALAR_BOUND ? s->binding_index : SIZE_MAX;
  if (s->kind == CREC_SCALAR_SIZE) out->buffer.id = crec__handle(p, s->buffer);
  return CREC_OK;
}

crec_status crec_program_find_scalar(const crec_program *p, const char *name, crec_scalar *out) {
  static const char fn[] = "crec_program_find_scalar";
  CHECK_INFO(fn, p, out);
  return find_named(p, &p->scalar_names, crec__scalar_name_at, name, "scalar", fn, &out->id);
}

size_t crec_program_host_function_count(const crec_program *p) { return p ? p->num_host_fns : 0; }

crec_status crec_program_get_host_function(const crec_program *p, size_t index,
                                       crec_host_function_info *out) {
  static const char fn[] = "crec_program_get_host_function";
  CHECK_INFO(fn, p, out);
  memset(out, 0, sizeof *out);
  if (index >= p->num_host_fns)
    return crec__error(CREC_ERR_OUT_OF_RANGE, fn, "argument 'index': %zu, but there are %zu host functions",
                       index, p->num_host_fns);
  const crec__host_fn *h = &p->host_fns[index];
  out->name = h->name;
  out->fn = h->fn;
  out->user = h->user;
  out->inputs = h->inputs;
  out->num_inputs = h->num_inputs;
  out->outputs = h->outputs;
  out->num_outputs = h->num_outputs;
  return CREC_OK;
}

/* ---- modules and kernels ---- */

size_t crec_program_module_count(const crec_program *p) { return p ? p->num_modules : 0; }

crec_module crec_program_module(const crec_program *p, size_t index) {
  crec_module m = {p && index < p->num_modules ? crec__handle(p, index) : 0};
  return m;
}

crec_status crec_module_get_info(const crec_program *p, crec_module module, crec_module_info *out) {
  static const char fn[] = "crec_module_get_info";
  BEGIN_GET(fn, p, out, module.id, p->num_modules, "module");
  const crec__module *m = &p->modules[crec__index(module.id)];
  out->name = m->name;
  out->format = m->format;
  out->image = m->image;
  out->size = m->size;
  return CREC_OK;
}

size_t crec_program_kernel_count(const crec_program *p) { return p ? p->num_kernels : 0; }

crec_kernel crec_program_kernel(const crec_program *p, size_t index) {
  crec_kernel k = {p && index < p->num_kernels ? crec__handle(p, index) : 0};
  return k;
}

crec_status crec_kernel_get_info(const crec_program *p, crec_kernel kernel, crec_kernel_info *out) {
  static const char fn[] = "crec_kernel_get_info";
  BEGIN_GET(fn, p, out, kernel.id, p->num_kernels, "kernel");
  const crec__kernel *k = &p->kernels[crec__index(kernel.id)];
  out->module.id = crec__handle(p, k->module);
  out->entry = k->entry;
  out->shared_bytes = k->shared_bytes;
  memcpy(out->cluster, k->cluster, sizeof out->cluster);
  return CREC_OK;
}

/* ---- regions and commands ---- */

size_t crec_program_region_count(const crec_program *p) { return p ? p->num_regions : 0; }

crec_region crec_program_region(const crec_program *p, size_t index) {
  crec_region r = {p && index < p->num_regions ? crec__handle(p, index) : 0};
  return r;
}

crec_status crec_region_get_info(const crec_program *p, crec_region region, crec_region_info *out) {
  static const char fn[] = "crec_region_get_info";
  BEGIN_GET(fn, p, out, region.id, p->num_regions, "region");
  const crec__region *r = &p->regions[crec__index(region.id)];
  out->role = r->role;
  out->parent.id = r->parent == CREC__NONE ? 0 : crec__handle(p, r->parent);
  out->index_in_parent = r->index_in_parent;
  out->num_commands = r->num_commands;
  return CREC_OK;
}

crec_command crec_region_command(const crec_program *p, crec_region region, size_t index) {
  crec_command c = {0};
  if (p && crec__valid(p, region.id, p->num_regions)) {
    const crec__region *r = &p->regions[crec__index(region.id)];
    if (index < r->num_commands) c.id = crec__handle(p, r->commands[index]);
  }
  return c;
}

size_t crec_program_command_count(const crec_program *p) { return p ? p->num_commands : 0; }

crec_command crec_program_command(const crec_program *p, size_t index) {
  crec_command c = {p && index < p->num_commands ? crec__handle(p, index) : 0};
  return c;
}

/* The oldest crec_command_info taken: its first version's fields, kind through
 * case_values (num_operands, start and workspace came with library commands). */
#define COMMAND_INFO_OLDEST offsetof(crec_command_info, num_operands)

static crec_status give_command_info(crec_command_info *out, const crec_command_info *info, const char *fn) {
  return crec__give_struct(out, info, sizeof *info, COMMAND_INFO_OLDEST, fn, "argument 'out'",
                           "CREC_COMMAND_INFO_INIT");
}

crec_status crec_command_get_info(const crec_program *p, crec_command command, crec_command_info *out) {
  static const char fn[] = "crec_command_get_info";
  CHECK_INFO(fn, p, out);
  crec_command_info info;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  /* the caller's struct_size is checked first; a bad handle then leaves its fields zero */
  crec_status s_ = give_command_info(out, &info, fn);
  if (s_) return s_;
  if ((s_ = crec__check_handle(p, command.id, p->num_commands, fn, "command", NULL))) return s_;
  const crec__command *c = &p->commands[crec__index(command.id)];
  info.kind = c->kind;
  info.name = c->name;
  info.region.id = crec__handle(p, c->region);
  info.index_in_region = c->index_in_region;
  switch (c->kind) {
    case CREC_COMMAND_LAUNCH:
      info.kernel.id = crec__handle(p, c->kernel);
      memcpy(info.grid, c->grid, sizeof info.grid);
      memcpy(info.block, c->block, sizeof info.block);
      info.shared_bytes = c->shared_bytes;
      info.num_args = c->num_args;
      info.launch_flags = c->launch_flags;
      break;
    case CREC_COMMAND_MEMCPY:
      info.src = c->src;
      /* fall through */
    case CREC_COMMAND_MEMSET:
      info.dst = c->dst;
      info.bytes = c->bytes;
      info.memset_value = c->memset_value;
      info.memset_element_size = c->memset_element_size;
      break;
    case CREC_COMMAND_WHILE:
    case CREC_COMMAND_IF:
    case CREC_COMMAND_SWITCH:
      info.predicate = c->predicate;
      info.num_regions = c->num_regions;
      info.case_values = c->case_values;
      break;
    case CREC_COMMAND_GEMM:
      info.workspace.id = crec__handle(p, c->gemm->workspace);
      break;
    case CREC_COMMAND_FFT:
      info.workspace.id = crec__handle(p, c->fft->workspace);
      break;
    case CREC_COMMAND_CHOLESKY:
      info.workspace.id = crec__handle(p, c->chol->workspace);
      break;
    case CREC_COMMAND_CONV:
      info.workspace.id = crec__handle(p, c->conv->workspace);
      break;
    case CREC_COMMAND_BARRIER:
      if (c->num_ops) info.workspace = c->ops[0].range.buffer; /* across ranks: its scratch */
      break;
    case CREC_COMMAND_COLLECTIVE:
      if (c->coll->start != CREC__NONE) info.start.id = crec__handle(p, c->coll->start);
      break;
    default:
      break;
  }
  info.num_operands = c->num_ops;
  return give_command_info(out, &info, fn);
}

crec_status crec_command_get_operand(const crec_program *p, crec_command command, size_t index,
                                     crec_range *range, crec_access *access) {
  static const char fn[] = "crec_command_get_operand";
  if (!p) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'program' is NULL");
  if (!range || !access)
    return crec__error(CREC_ERR_NULL_POINTER, fn, "argument '%s' is NULL", range ? "access" : "range");
  memset(range, 0, sizeof *range);
  *access = CREC_ACCESS_READ;
  crec_status s_ = crec__check_handle(p, command.id, p->num_commands, fn, "command", NULL);
  if (s_) return s_;
  const crec__command *c = &p->commands[crec__index(command.id)];
  if (!crec__is_library(c->kind) && !(c->kind == CREC_COMMAND_BARRIER && c->num_ops))
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "command '%s' is a %s, not a library command or a barrier across ranks",
                       c->name, crec_command_kind_name(c->kind));
  if (index >= c->num_ops)
    return crec__error(CREC_ERR_OUT_OF_RANGE, fn, "argument 'index': %zu, but %s '%s' has %zu operands", index,
                       crec_command_kind_name(c->kind), c->name, c->num_ops);
  *range = c->ops[index].range;
  *access = c->ops[index].access;
  return CREC_OK;
}

crec_status crec_command_get_arg(const crec_program *p, crec_command command, size_t index,
                                 crec_arg *out) {
  static const char fn[] = "crec_command_get_arg";
  BEGIN_GET(fn, p, out, command.id, p->num_commands, "command");
  const crec__command *c = &p->commands[crec__index(command.id)];
  if (c->kind != CREC_COMMAND_LAUNCH)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "command '%s' is a %s, not a launch", c->name,
                       crec_command_kind_name(c->kind));
  if (index >= c->num_args)
    return crec__error(CREC_ERR_OUT_OF_RANGE, fn, "argument 'index': %zu, but launch '%s' has %zu arguments",
                       index, c->name, c->num_args);
  *out = c->args[index].arg;
  return CREC_OK;
}

crec_region crec_command_region(const crec_program *p, crec_command command, size_t index) {
  crec_region r = {0};
  if (p && crec__valid(p, command.id, p->num_commands)) {
    const crec__command *c = &p->commands[crec__index(command.id)];
    if (index < c->num_regions) r.id = crec__handle(p, c->regions[index]);
  }
  return r;
}

/* Program order without a stack: region and command parent links say where to resume. */
void crec__program_order(const crec_program *p, uint32_t *out) {
  size_t n = 0;
  uint32_t region = 0;
  size_t pos = 0;
  for (;;) {
    const crec__region *r = &p->regions[region];
    if (pos < r->num_commands) {
      uint32_t ci = r->commands[pos];
      const crec__command *c = &p->commands[ci];
      out[n++] = ci;
      if (c->num_regions) {
        region = c->regions[0];
        pos = 0;
      } else {
        pos++;
      }
      continue;
    }
    if (r->parent == CREC__NONE) return;
    /* region finished: go to the parent's next region, or past the parent */
    const crec__command *c = &p->commands[r->parent];
    if (r->index_in_parent + 1 < c->num_regions) {
      region = c->regions[r->index_in_parent + 1];
      pos = 0;
    } else {
      region = c->region;
      pos = c->index_in_region + 1;
    }
  }
}
