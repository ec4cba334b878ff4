/* The program object and its non-command builders: buffers, scalars, host
 * functions, modules, kernels. Each builder validates everything, then
 * allocates everything, then commits with steps that cannot fail. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "access.h"

/* Program tags: the high bits of every handle, 1 .. NUM_TAGS. There are few, so
 * tags are recycled; a new program takes a tag no live program holds (the next
 * free one round robin, so a freed tag comes back as late as possible). That
 * keeps a live program's handles foreign to every other live program as long as
 * at most NUM_TAGS programs are alive; beyond that, tags are shared. */
#define NUM_TAGS ((1u << (32 - CREC__INDEX_BITS)) - 1u)
static pthread_mutex_t tag_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t tag_users[NUM_TAGS + 1]; /* live programs per tag */
static uint32_t last_tag;                /* the tag given out last */

static uint32_t take_tag(void) {
  pthread_mutex_lock(&tag_lock);
  uint32_t tag = last_tag % NUM_TAGS + 1;
  for (uint32_t i = 0; i < NUM_TAGS; i++) {
    uint32_t t = (last_tag + i) % NUM_TAGS + 1;
    if (tag_users[t] == 0) {
      tag = t;
      break;
    }
  }
  tag_users[tag]++;
  last_tag = tag;
  pthread_mutex_unlock(&tag_lock);
  return tag;
}

static void give_back_tag(uint32_t tag) {
  pthread_mutex_lock(&tag_lock);
  tag_users[tag]--;
  pthread_mutex_unlock(&tag_lock);
}

/* ---- life cycle ---- */

crec_status crec_program_create(crec_program **out) {
  static const char fn[] = "crec_program_create";
  if (!out) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'out' is NULL");
  *out = NULL;
  crec_program *p = crec__calloc(1, sizeof *p);
  if (!p) return crec__oom(fn);
  crec__region *body = NULL;
  if (CREC__RESERVE(p->regions, p->cap_regions, 1) != CREC_OK) {
    crec__free(p);
    return crec__oom(fn);
  }
  p->tag = take_tag(); /* never 0, so no valid handle is 0 */
  atomic_init(&p->refs, 1);
  body = &p->regions[0];
  memset(body, 0, sizeof *body);
  body->role = CREC_REGION_PROGRAM;
  body->parent = CREC__NONE;
  p->num_regions = 1;
  crec__live(1);
  *out = p;
  return CREC_OK;
}

static void free_program(crec_program *p) {
  crec__warnings_forget(p);
  if (p->runtime && p->runtime_free) p->runtime_free(p->runtime);
  for (size_t i = 0; i < p->num_buffers; i++) {
    crec__free(p->buffers[i].name);
    crec__free(p->buffers[i].data);
  }
  for (size_t i = 0; i < p->num_scalars; i++) crec__free(p->scalars[i].name);
  for (size_t i = 0; i < p->num_host_fns; i++) {
    crec__host_fn *h = &p->host_fns[i];
    if (h->user_free) h->user_free(h->user);
    crec__free(h->name);
    crec__free(h->inputs);
    crec__free(h->outputs);
  }
  for (size_t i = 0; i < p->num_modules; i++) {
    crec__free(p->modules[i].name);
    crec__free(p->modules[i].image);
  }
  for (size_t i = 0; i < p->num_kernels; i++) crec__free(p->kernels[i].entry);
  for (size_t i = 0; i < p->num_regions; i++) crec__free(p->regions[i].commands);
  for (size_t i = 0; i < p->num_commands; i++) {
    crec__command *c = &p->commands[i];
    crec__free(c->name);
    for (size_t a = 0; a < c->num_args; a++)
      if (c->args[a].arg.kind == CREC_ARG_IMMEDIATE && c->args[a].arg.data)
        crec__free((void *)c->args[a].arg.data);
    crec__free(c->args);
    crec__free(c->regions);
    crec__free(c->case_values);
    crec__library_free(c);
  }
  for (size_t i = 0; i < p->num_comms; i++) crec__free(p->comms[i].name);
  crec__free(p->comms);
  crec__free(p->buffers);
  crec__free(p->arguments);
  crec__free(p->scalars);
  crec__free(p->bound_scalars);
  crec__free(p->host_fns);
  crec__free(p->modules);
  crec__free(p->kernels);
  crec__free(p->regions);
  crec__free(p->commands);
  crec__names_free(&p->buffer_names);
  crec__names_free(&p->scalar_names);
  give_back_tag(p->tag);
  crec__free(p);
  crec__live(-1);
}

crec_status crec__frozen(const char *fn) {
  return crec__error(CREC_ERR_INVALID_PROGRAM, fn,
                     "the program was already recorded or run eagerly and can no longer change; build a new one");
}

void crec__program_retain(crec_program *p) { atomic_fetch_add(&p->refs, 1); }

void crec__program_release(crec_program *p) {
  if (p && atomic_fetch_sub(&p->refs, 1) == 1) free_program(p);
}

void crec_program_destroy(crec_program *program) { crec__program_release(program); }

crec_region crec_program_body(const crec_program *program) {
  crec_region r = {program ? crec__handle(program, 0) : 0};
  return r;
}

/* ---- shared helpers ---- */


const char *crec__buffer_name(const crec_program *p, crec_buffer b) {
  if (!crec__valid(p, b.id, p->num_buffers)) return "?";
  return p->buffers[crec__index(b.id)].name;
}

uint64_t crec__range_end(const crec_program *p, crec_range r) {
  const crec__buffer *b = &p->buffers[crec__index(r.buffer.id)];
  if (r.size == CREC_WHOLE) return b->dynamic_size ? CREC_WHOLE : b->size;
  return r.offset + r.size;
}

/* Common checks of a builder that adds a named buffer or scalar. */
static crec_status check_new_name(crec_program *p, const char *fn, const char *name, bool scalar,
                                  const void *out) {
  if (!p) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'program' is NULL");
  if (p->frozen) return crec__frozen(fn);
  if (!name) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'name' is NULL");
  if (!out) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'out' is NULL");
  if (!name[0]) return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "argument 'name' is empty");
  const crec__names *t = scalar ? &p->scalar_names : &p->buffer_names;
  if (crec__names_find(t, name, p, scalar ? crec__scalar_name_at : crec__buffer_name_at) != CREC__NONE)
    return crec__error(CREC_ERR_DUPLICATE_NAME, fn, "argument 'name': a %s named '%s' already exists",
                       scalar ? "scalar" : "buffer", name);
  return CREC_OK;
}

/* ---- buffers ---- */

static crec_status add_buffer(crec_program *p, const char *fn, const char *name,
                              crec__buffer proto, const void *data, crec_buffer *out) {
  char *name_copy = NULL;
  void *data_copy = NULL;
  if (p->num_buffers >= CREC__MAX_ITEMS)
    return crec__error(CREC_ERR_TOO_LARGE, fn, "too many buffers (at most %u)", CREC__MAX_ITEMS);
  name_copy = crec__strdup(name);
  if (!name_copy) goto oom;
  if (data) {
    data_copy = crec__memdup(data, (size_t)proto.size);
    if (!data_copy) goto oom;
  }
  if (CREC__RESERVE(p->buffers, p->cap_buffers, p->num_buffers + 1) != CREC_OK) goto oom;
  if (proto.kind == CREC_BUFFER_ARGUMENT &&
      CREC__RESERVE(p->arguments, p->cap_arguments, p->num_arguments + 1) != CREC_OK)
    goto oom;
  if (crec__names_reserve(&p->buffer_names, p, crec__buffer_name_at) != CREC_OK) goto oom;
  /* commit: nothing below can fail */
  uint32_t index = (uint32_t)p->num_buffers++;
  proto.name = name_copy;
  proto.data = data_copy;
  if (proto.kind == CREC_BUFFER_ARGUMENT) {
    proto.arg_index = (uint32_t)p->num_arguments;
    p->arguments[p->num_arguments++] = index;
  }
  p->buffers[index] = proto;
  crec__names_insert(&p->buffer_names, name_copy, index);
  out->id = crec__handle(p, index);
  return CREC_OK;
oom:
  crec__free(name_copy);
  crec__free(data_copy);
  return crec__oom(fn);
}

crec_status crec_program_add_argument(crec_program *program, const char *name, uint64_t size,
                                      const crec_argument_options *options, crec_buffer *out) {
  static const char fn[] = "crec_program_add_argument";
  if (out) out->id = 0;
  crec_status s = check_new_name(program, fn, name, false, out);
  if (s) return s;
  crec_argument_options opts = CREC_ARGUMENT_OPTIONS_INIT;
  if ((s = crec__take_struct(&opts, sizeof opts, options, sizeof(crec_argument_options), fn, "argument 'options'",
                             "CREC_ARGUMENT_OPTIONS_INIT")))
    return s;
  const crec_argument_options *o = &opts;
  if (o->memory != CREC_MEMORY_DEVICE && o->memory != CREC_MEMORY_HOST)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "argument 'options': unknown memory %d for '%s'",
                       (int)o->memory, name);
  if (o->alignment == 0 || (o->alignment & (o->alignment - 1)) != 0)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn,
                       "argument 'options': alignment %u of '%s' is not a power of two",
                       o->alignment, name);
  if ((unsigned)o->element > CREC_ELEMENT_F64)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "argument 'options': unknown element type %d for '%s'",
                       (int)o->element, name);
  if (size == 0 && !o->dynamic_size)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "argument 'size': buffer '%s' has size 0", name);
  crec__buffer proto = {0};
  proto.kind = CREC_BUFFER_ARGUMENT;
  proto.memory = o->memory;
  proto.size = size;
  proto.alignment = o->alignment;
  proto.dynamic_size = o->dynamic_size != 0;
  proto.element = o->element;
  return add_buffer(program, fn, name, proto, NULL, out);
}

static crec_status add_temporary(crec_program *program, const char *fn, const char *name, uint64_t size,
                                 crec_memory memory, crec_buffer *out) {
  if (out) out->id = 0;
  crec_status s = check_new_name(program, fn, name, false, out);
  if (s) return s;
  if (size == 0)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "argument 'size': buffer '%s' has size 0", name);
  crec__buffer proto = {0};
  proto.kind = CREC_BUFFER_TEMPORARY;
  proto.memory = memory;
  proto.size = size;
  proto.alignment = 256;
  return add_buffer(program, fn, name, proto, NULL, out);
}

crec_status crec_program_add_temporary(crec_program *program, const char *name, uint64_t size,
                                       crec_buffer *out) {
  return add_temporary(program, "crec_program_add_temporary", name, size, CREC_MEMORY_DEVICE, out);
}

crec_status crec_program_add_host_temporary(crec_program *program, const char *name, uint64_t size,
                                            crec_buffer *out) {
  return add_temporary(program, "crec_program_add_host_temporary", name, size, CREC_MEMORY_HOST, out);
}

crec_status crec_program_add_constant(crec_program *program, const char *name, const void *data,
                                      uint64_t size, crec_buffer *out) {
  static const char fn[] = "crec_program_add_constant";
  if (out) out->id = 0;
  crec_status s = check_new_name(program, fn, name, false, out);
  if (s) return s;
  if (!data) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'data' is NULL");
  if (size == 0)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "argument 'size': buffer '%s' has size 0", name);
  if (size > SIZE_MAX)
    return crec__error(CREC_ERR_TOO_LARGE, fn, "argument 'size': %llu bytes do not fit in memory",
                       (unsigned long long)size);
  crec__buffer proto = {0};
  proto.kind = CREC_BUFFER_CONSTANT;
  proto.size = size;
  proto.alignment = 256;
  return add_buffer(program, fn, name, proto, data, out);
}

/* ---- scalars ---- */

static crec_status add_scalar(crec_program *p, const char *fn, const char *name, crec__scalar proto,
                              crec_scalar *out) {
  if (p->num_scalars >= CREC__MAX_ITEMS)
    return crec__error(CREC_ERR_TOO_LARGE, fn, "too many scalars (at most %u)", CREC__MAX_ITEMS);
  char *name_copy = crec__strdup(name);
  if (!name_copy) return crec__oom(fn);
  if (CREC__RESERVE(p->scalars, p->cap_scalars, p->num_scalars + 1) != CREC_OK ||
      (proto.kind == CREC_SCALAR_BOUND &&
       CREC__RESERVE(p->bound_scalars, p->cap_bound_scalars, p->num_bound_scalars + 1) != CREC_OK) ||
      crec__names_reserve(&p->scalar_names, p, crec__scalar_name_at) != CREC_OK) {
    crec__free(name_copy);
    return crec__oom(fn);
  }
  uint32_t index = (uint32_t)p->num_scalars++;
  proto.name = name_copy;
  proto.host_fn = CREC__NONE;
  if (proto.kind == CREC_SCALAR_BOUND) {
    proto.binding_index = (uint32_t)p->num_bound_scalars;
    p->bound_scalars[p->num_bound_scalars++] = index;
  }
  p->scalars[index] = proto;
  crec__names_insert(&p->scalar_names, name_copy, index);
  out->id = crec__handle(p, index);
  return CREC_OK;
}

static crec_status check_type(const char *fn, crec_type type, const char *name) {
  if ((unsigned)type > CREC_TYPE_F64)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "argument 'type': unknown type %d for '%s'",
                       (int)type, name);
  return CREC_OK;
}

/* A bound or derived scalar: a new name, a known type. */
static crec_status add_typed_scalar(crec_program *program, const char *fn, const char *name, crec_type type,
                                    crec_scalar_kind kind, crec_scalar *out) {
  if (out) out->id = 0;
  crec_status s = check_new_name(program, fn, name, true, out);
  if (!s) s = check_type(fn, type, name);
  if (s) return s;
  crec__scalar proto = {0};
  proto.type = type;
  proto.kind = kind;
  return add_scalar(program, fn, name, proto, out);
}

crec_status crec_program_add_scalar(crec_program *program, const char *name, crec_type type,
                                    crec_scalar *out) {
  return add_typed_scalar(program, "crec_program_add_scalar", name, type, CREC_SCALAR_BOUND, out);
}

crec_status crec_program_add_derived_scalar(crec_program *program, const char *name,
                                            crec_type type, crec_scalar *out) {
  return add_typed_scalar(program, "crec_program_add_derived_scalar", name, type, CREC_SCALAR_DERIVED, out);
}

crec_status crec_program_add_size_scalar(crec_program *program, const char *name,
                                         crec_buffer buffer, crec_scalar *out) {
  static const char fn[] = "crec_program_add_size_scalar";
  if (out) out->id = 0;
  crec_status s = check_new_name(program, fn, name, true, out);
  if (s) return s;
  if ((s = crec__check_handle(program, buffer.id, program->num_buffers, fn, "buffer", "argument 'buffer'"))) return s;
  const crec__buffer *b = &program->buffers[crec__index(buffer.id)];
  if (b->kind != CREC_BUFFER_ARGUMENT)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn,
                       "argument 'buffer': '%s' is a %s buffer; only arguments have a bound size",
                       b->name, crec_buffer_kind_name(b->kind));
  crec__scalar proto = {0};
  proto.type = CREC_TYPE_I64;
  proto.kind = CREC_SCALAR_SIZE;
  proto.buffer = (uint32_t)crec__index(buffer.id);
  return add_scalar(program, fn, name, proto, out);
}

crec_status crec_program_add_host_function(crec_program *program, const char *name,
                                           crec_host_fn fnp, void *user, void (*user_free)(void *),
                                           const crec_scalar *inputs, size_t num_inputs,
                                           const crec_scalar *outputs, size_t num_outputs) {
  static const char fn[] = "crec_program_add_host_function";
  crec_program *p = program;
  if (!p) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'program' is NULL");
  if (p->frozen) return crec__frozen(fn);
  if (!name) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'name' is NULL");
  if (!fnp) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'fn' is NULL");
  if (num_inputs && !inputs) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'inputs' is NULL");
  if (!outputs) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'outputs' is NULL");
  if (!name[0]) return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "argument 'name' is empty");
  if (num_outputs == 0)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "host function '%s' has no outputs", name);
  for (size_t i = 0; i < num_inputs; i++) {
    crec_status st = crec__check_handle(p, inputs[i].id, p->num_scalars, fn, "scalar", "argument 'inputs[%zu]'", i);
    if (st) return st;
    const crec__scalar *s = &p->scalars[crec__index(inputs[i].id)];
    if (s->kind == CREC_SCALAR_DERIVED && s->host_fn == CREC__NONE)
      return crec__error(CREC_ERR_INVALID_ARGUMENT, fn,
                         "argument 'inputs[%zu]': derived scalar '%s' is not computed by an earlier host function",
                         i, s->name);
  }
  for (size_t i = 0; i < num_outputs; i++) {
    crec_status st = crec__check_handle(p, outputs[i].id, p->num_scalars, fn, "scalar", "argument 'outputs[%zu]'", i);
    if (st) return st;
    const crec__scalar *s = &p->scalars[crec__index(outputs[i].id)];
    if (s->kind != CREC_SCALAR_DERIVED)
      return crec__error(CREC_ERR_INVALID_ARGUMENT, fn,
                         "argument 'outputs[%zu]': scalar '%s' is not a derived scalar", i, s->name);
    if (s->host_fn != CREC__NONE)
      return crec__error(CREC_ERR_INVALID_ARGUMENT, fn,
                         "argument 'outputs[%zu]': scalar '%s' is already computed by host function '%s'",
                         i, s->name, p->host_fns[s->host_fn].name);
    for (size_t j = 0; j < i; j++)
      if (outputs[j].id == outputs[i].id)
        return crec__error(CREC_ERR_INVALID_ARGUMENT, fn,
                           "argument 'outputs[%zu]': scalar '%s' is listed twice", i, s->name);
  }
  crec__host_fn h = {0};
  h.name = crec__strdup(name);
  h.inputs = crec__memdup(inputs ? (const void *)inputs : (const void *)"", num_inputs * sizeof *inputs);
  h.outputs = crec__memdup(outputs, num_outputs * sizeof *outputs);
  if (!h.name || !h.inputs || !h.outputs ||
      CREC__RESERVE(p->host_fns, p->cap_host_fns, p->num_host_fns + 1) != CREC_OK) {
    crec__free(h.name);
    crec__free(h.inputs);
    crec__free(h.outputs);
    return crec__oom(fn);
  }
  h.fn = fnp;
  h.user = user;
  h.user_free = user_free;
  h.num_inputs = num_inputs;
  h.num_outputs = num_outputs;
  uint32_t index = (uint32_t)p->num_host_fns++;
  p->host_fns[index] = h;
  for (size_t i = 0; i < num_outputs; i++) p->scalars[crec__index(outputs[i].id)].host_fn = index;
  return CREC_OK;
}

/* ---- modules and kernels ---- */

static bool looks_like(crec_image_format format, const unsigned char *img, size_t size) {
  switch (format) {
    case CREC_IMAGE_PTX: {
      /* PTX is text with at least one kernel entry */
      static const char needle[] = ".entry";
      for (size_t i = 0; i + sizeof needle - 1 <= size; i++)
        if (memcmp(img + i, needle, sizeof needle - 1) == 0) return true;
      return false;
    }
    case CREC_IMAGE_CUBIN:
      return size >= 4 && img[0] == 0x7f && img[1] == 'E' && img[2] == 'L' && img[3] == 'F';
    case CREC_IMAGE_FATBIN:
      /* fatbin header magic 0xBA55ED50, or the fatbin wrapper magic 0x466243B1 */
      return size >= 4 && ((img[0] == 0x50 && img[1] == 0xED && img[2] == 0x55 && img[3] == 0xBA) ||
                           (img[0] == 0xB1 && img[1] == 0x43 && img[2] == 0x62 && img[3] == 0x46));
  }
  return false;
}

crec_status crec_program_add_module(crec_program *program, const char *name,
                                    crec_image_format format, const void *image, size_t size,
                                    crec_module *out) {
  static const char fn[] = "crec_program_add_module";
  crec_program *p = program;
  if (out) out->id = 0;
  if (!p) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'program' is NULL");
  if (p->frozen) return crec__frozen(fn);
  if (!name) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'name' is NULL");
  if (!image) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'image' is NULL");
  if (!out) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'out' is NULL");
  if ((unsigned)format > CREC_IMAGE_FATBIN)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "argument 'format': unknown image format %d",
                       (int)format);
  if (size == 0)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "argument 'size': module '%s' is empty", name);
  if (!looks_like(format, image, size))
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "argument 'image': module '%s' is not a %s image",
                       name, crec_image_format_name(format));
  if (p->num_modules >= CREC__MAX_ITEMS)
    return crec__error(CREC_ERR_TOO_LARGE, fn, "too many modules");
  crec__module m = {0};
  m.name = crec__strdup(name);
  m.image = crec__malloc(size + 1);
  if (!m.name || !m.image || CREC__RESERVE(p->modules, p->cap_modules, p->num_modules + 1) != CREC_OK) {
    crec__free(m.name);
    crec__free(m.image);
    return crec__oom(fn);
  }
  memcpy(m.image, image, size);
  ((char *)m.image)[size] = '\0';
  m.size = size;
  m.format = format;
  m.hash = crec__hash(image, size, 0);
  uint32_t index = (uint32_t)p->num_modules++;
  p->modules[index] = m;
  out->id = crec__handle(p, index);
  return CREC_OK;
}

crec_status crec_program_add_kernel(crec_program *program, crec_module module, const char *entry,
                                    const crec_kernel_options *options, crec_kernel *out) {
  static const char fn[] = "crec_program_add_kernel";
  crec_program *p = program;
  if (out) out->id = 0;
  if (!p) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'program' is NULL");
  if (p->frozen) return crec__frozen(fn);
  if (!entry) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'entry' is NULL");
  if (!out) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'out' is NULL");
  if (!entry[0]) return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "argument 'entry' is empty");
  crec_status s = crec__check_handle(p, module.id, p->num_modules, fn, "module", "argument 'module'");
  if (s) return s;
  crec_kernel_options opts = CREC_KERNEL_OPTIONS_INIT;
  if ((s = crec__take_struct(&opts, sizeof opts, options, sizeof(crec_kernel_options), fn, "argument 'options'",
                             "CREC_KERNEL_OPTIONS_INIT")))
    return s;
  const crec_kernel_options *o = &opts;
  bool any = o->cluster[0] || o->cluster[1] || o->cluster[2];
  bool all = o->cluster[0] && o->cluster[1] && o->cluster[2];
  if (any && !all)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn,
                       "argument 'options': cluster dims (%u,%u,%u) of kernel '%s' must be all zero or all positive",
                       o->cluster[0], o->cluster[1], o->cluster[2], entry);
  if (p->num_kernels >= CREC__MAX_ITEMS) return crec__error(CREC_ERR_TOO_LARGE, fn, "too many kernels");
  crec__kernel k = {0};
  k.entry = crec__strdup(entry);
  if (!k.entry || CREC__RESERVE(p->kernels, p->cap_kernels, p->num_kernels + 1) != CREC_OK) {
    crec__free(k.entry);
    return crec__oom(fn);
  }
  k.module = (uint32_t)crec__index(module.id);
  k.shared_bytes = o->shared_bytes;
  memcpy(k.cluster, o->cluster, sizeof k.cluster);
  uint32_t index = (uint32_t)p->num_kernels++;
  p->kernels[index] = k;
  out->id = crec__handle(p, index);
  return CREC_OK;
}

crec_status crec_program_validate(const crec_program *program) {
  static const char fn[] = "crec_program_validate";
  if (!program) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'program' is NULL");
  for (size_t i = 0; i < program->num_scalars; i++) {
    const crec__scalar *s = &program->scalars[i];
    if (s->kind == CREC_SCALAR_DERIVED && s->host_fn == CREC__NONE)
      return crec__error(CREC_ERR_INVALID_PROGRAM, fn,
                         "derived scalar '%s' is not computed by any host function", s->name);
  }
  /* kept for crec_program_warning_count() and crec_program_get_warning() */
  return crec__warnings_update(program, fn);
}
