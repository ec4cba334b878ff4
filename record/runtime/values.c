/* The values of one execution (addresses, sizes, scalars, communicators) and
 * what every layer above reads from them: a range's address, the bytes a copy
 * touches, and the bytes each argument binding must hold; the bindings checked
 * and copied in, host functions run, buffers placed; launch dimensions, kernel
 * parameters marshalled from the packed launches, and copy and fill
 * descriptors. Shared by record (the first execution), replay and the eager
 * executor. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "runtime_internal.h"

crec_status crec__values_alloc(const crec_program *p, crec__values *v) {
  memset(v, 0, sizeof *v);
  size_t nb = p->num_buffers ? p->num_buffers : 1, ns = p->num_scalars ? p->num_scalars : 1;
  v->base = crec__calloc(nb, sizeof *v->base);
  v->size = crec__calloc(nb, sizeof *v->size);
  v->scalars = crec__calloc(ns, sizeof *v->scalars);
  v->comms = crec__calloc(p->num_comms ? p->num_comms : 1, sizeof *v->comms);
  if (!v->base || !v->size || !v->scalars || !v->comms) {
    crec__values_free(v);
    return CREC_ERR_OUT_OF_MEMORY;
  }
  for (size_t i = 0; i < p->num_buffers; i++) v->size[i] = p->buffers[i].size;
  return CREC_OK;
}

void crec__values_free(crec__values *v) {
  CREC__FREE(v->base);
  CREC__FREE(v->size);
  CREC__FREE(v->scalars);
  CREC__FREE(v->comms);
}

void crec__values_copy(const crec_program *p, crec__values *dst, const crec__values *src) {
  if (p->num_buffers) {
    memcpy(dst->base, src->base, p->num_buffers * sizeof *dst->base);
    memcpy(dst->size, src->size, p->num_buffers * sizeof *dst->size);
  }
  if (p->num_scalars) memcpy(dst->scalars, src->scalars, p->num_scalars * sizeof *dst->scalars);
  if (p->num_comms) memcpy(dst->comms, src->comms, p->num_comms * sizeof *dst->comms);
}

/* Bytes a range needs of its buffer: a whole range of a dynamic buffer needs at least one. */
static uint64_t range_need(crec_range r) { return r.size == CREC_WHOLE ? r.offset + 1 : r.offset + r.size; }

static void need(const crec_program *p, uint64_t *req, crec_range r) {
  const crec__buffer *b = &p->buffers[crec__index(r.buffer.id)];
  if (b->kind != CREC_BUFFER_ARGUMENT) return;
  uint64_t n = range_need(r);
  if (n > req[b->arg_index]) req[b->arg_index] = n;
}

crec_status crec__required_bytes(const crec_program *p, uint64_t **out) {
  uint64_t *req = crec__calloc(p->num_arguments ? p->num_arguments : 1, sizeof *req);
  if (!req) return CREC_ERR_OUT_OF_MEMORY;
  for (size_t i = 0; i < p->num_arguments; i++) req[i] = p->buffers[p->arguments[i]].size;
  for (size_t ci = 0; ci < p->num_commands; ci++) {
    const crec__command *c = &p->commands[ci];
    for (size_t a = 0; a < c->num_args; a++)
      if (c->args[a].arg.kind == CREC_ARG_BUFFER) need(p, req, c->args[a].arg.range);
    if (c->kind == CREC_COMMAND_MEMCPY) need(p, req, c->src);
    if (c->kind == CREC_COMMAND_MEMCPY || c->kind == CREC_COMMAND_MEMSET) need(p, req, c->dst);
    if (c->num_regions) need(p, req, c->predicate);
    for (size_t k = 0; k < c->num_ops; k++) need(p, req, c->ops[k].range);
  }
  *out = req;
  return CREC_OK;
}

uint64_t crec__range_remaining(const crec__values *v, crec_range r) {
  size_t b = crec__index(r.buffer.id);
  return v->size[b] > r.offset ? v->size[b] - r.offset : 0;
}

uint64_t crec__command_bytes(const crec__values *v, const crec__command *c) {
  if (c->bytes != CREC_WHOLE) return c->bytes;
  if (c->dst.size != CREC_WHOLE) return c->dst.size;
  if (c->kind == CREC_COMMAND_MEMCPY && c->src.size != CREC_WHOLE) return c->src.size;
  return crec__range_remaining(v, c->dst);
}

CUdeviceptr crec__range_addr(const crec__values *v, crec_range r) {
  return v->base[crec__index(r.buffer.id)] + r.offset;
}

/* ---- host callbacks given their operands' addresses ---- */

size_t crec__host_call_bytes(const crec__command *c) {
  return sizeof(crec__host_call) + (c->num_ops ? c->num_ops : 1) * sizeof(void *);
}

void crec__host_call_fill(crec__host_call *hc, const crec__values *v, const crec__command *c, bool once) {
  hc->fn = c->hostcb->fn_buffers;
  hc->user = c->hostcb->user;
  hc->once = once;
  hc->count = c->num_ops;
  for (size_t i = 0; i < c->num_ops; i++) hc->addresses[i] = (void *)(uintptr_t)crec__range_addr(v, c->ops[i].range);
}

void crec__host_call_run(void *user) {
  crec__host_call *hc = user;
  hc->fn(hc->user, hc->addresses, hc->count);
  if (hc->once) crec__free(hc);
}

/* ---- bindings, host functions and placement ---- */

crec_status crec__check_binding_shape(const crec_program *p, const crec_bindings *b, const char *fn) {
  if (!b) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'bindings' is NULL");
  if (b->struct_size < sizeof(crec_bindings))
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn,
                       "argument 'bindings': struct_size %zu is smaller than %zu (use CREC_BINDINGS_INIT)",
                       b->struct_size, sizeof(crec_bindings));
  if (b->num_buffers != p->num_arguments)
    return crec__error(CREC_ERR_BINDING, fn, "%zu buffer bindings given, but the program has %zu arguments",
                       b->num_buffers, p->num_arguments);
  if (b->num_scalars != p->num_bound_scalars)
    return crec__error(CREC_ERR_BINDING, fn, "%zu scalar bindings given, but the program has %zu bound scalars",
                       b->num_scalars, p->num_bound_scalars);
  if (b->num_buffers && !b->buffers)
    return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'bindings.buffers' is NULL");
  if (b->num_scalars && !b->scalars)
    return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'bindings.scalars' is NULL");
  return crec__check_comms(p, b, -1, fn);
}

crec_status crec__check_binding(const crec_program *p, const uint64_t *required, size_t i, const crec_binding *bd,
                                const char *fn) {
  const crec__buffer *buf = &p->buffers[p->arguments[i]];
  if (!bd->ptr) return crec__error(CREC_ERR_BINDING, fn, "binding %zu ('%s'): NULL pointer", i, buf->name);
  if (bd->size < required[i])
    return crec__error(CREC_ERR_BINDING, fn, "binding %zu ('%s'): %" PRIu64 " bytes given, %" PRIu64 " needed", i,
                       buf->name, bd->size, required[i]);
  if ((uintptr_t)bd->ptr & (buf->alignment - 1)) /* a power of two: no division on the replay path */
    return crec__error(CREC_ERR_MISALIGNED, fn, "binding %zu ('%s'): address %p is not %u-byte aligned", i,
                       buf->name, bd->ptr, buf->alignment);
  return CREC_OK;
}

crec_status crec__check_dynamic(const crec_program *p, const crec_bindings *b, const char *fn) {
  /* whole ranges of dynamic buffers: sizes that follow the bindings */
  crec__values v = {0};
  uint64_t *sizes = crec__malloc((p->num_buffers ? p->num_buffers : 1) * sizeof *sizes);
  if (!sizes) return crec__oom(fn);
  for (size_t i = 0; i < p->num_buffers; i++) sizes[i] = p->buffers[i].size;
  for (size_t i = 0; i < p->num_arguments; i++) sizes[p->arguments[i]] = b->buffers[i].size;
  v.size = sizes;
  crec_status s = CREC_OK;
  for (size_t ci = 0; ci < p->num_commands && !s; ci++) {
    const crec__command *c = &p->commands[ci];
    if (c->bytes != CREC_WHOLE) continue;
    uint64_t bytes = crec__command_bytes(&v, c);
    char label[160];
    if (c->kind == CREC_COMMAND_MEMCPY && crec__range_remaining(&v, c->src) < bytes)
      s = crec__error(CREC_ERR_BINDING, fn, "%s copies %" PRIu64 " bytes, but source '%s' has %" PRIu64,
                      crec__command_label(p, ci, label, sizeof label), bytes,
                      crec__buffer_name(p, c->src.buffer), crec__range_remaining(&v, c->src));
    else if (c->kind == CREC_COMMAND_MEMSET && bytes % c->memset_element_size)
      s = crec__error(CREC_ERR_BINDING, fn, "%s fills %" PRIu64 " bytes of '%s', not a multiple of %u",
                      crec__command_label(p, ci, label, sizeof label), bytes,
                      crec__buffer_name(p, c->dst.buffer), c->memset_element_size);
  }
  crec__free(sizes);
  return s;
}

crec_status crec__check_bindings(const crec_program *p, const uint64_t *required,
                                 const crec_bindings *b, const char *fn) {
  crec_status s = crec__check_binding_shape(p, b, fn);
  bool dynamic = false;
  for (size_t i = 0; i < p->num_arguments && !s; i++) {
    s = crec__check_binding(p, required, i, &b->buffers[i], fn);
    dynamic |= p->buffers[p->arguments[i]].dynamic_size;
  }
  if (!s && dynamic) s = crec__check_dynamic(p, b, fn);
  return s;
}

void crec__fill_bindings(const crec_program *p, const crec_bindings *b, crec__values *v) {
  for (size_t i = 0; i < p->num_arguments; i++) {
    v->base[p->arguments[i]] = (CUdeviceptr)(uintptr_t)b->buffers[i].ptr;
    v->size[p->arguments[i]] = p->buffers[p->arguments[i]].dynamic_size ? b->buffers[i].size
                                                                       : p->buffers[p->arguments[i]].size;
  }
  for (size_t i = 0; i < p->num_comms; i++) v->comms[i] = b->communicators[i];
  for (size_t i = 0; i < p->num_scalars; i++) {
    const crec__scalar *s = &p->scalars[i];
    if (s->kind == CREC_SCALAR_BOUND) v->scalars[i] = b->scalars[s->binding_index];
    else if (s->kind == CREC_SCALAR_SIZE) v->scalars[i].i64 = (int64_t)b->buffers[p->buffers[s->buffer].arg_index].size;
  }
}

crec_status crec__eval_bindings(const crec_program *p, const crec_bindings *b, crec__values *v,
                                uint64_t *calls, const char *fn) {
  crec__fill_bindings(p, b, v);
  return crec__run_host_fns(p, v, calls, fn);
}

crec_status crec__run_host_fn(const crec_program *p, size_t h, crec__values *v, uint64_t *calls,
                              const char *fn) {
  const crec__host_fn *f = &p->host_fns[h];
  crec_value in_small[16], out_small[16];
  crec_value *in = f->num_inputs <= 16 ? in_small : crec__malloc(f->num_inputs * sizeof *in);
  crec_value *out = f->num_outputs <= 16 ? out_small : crec__malloc(f->num_outputs * sizeof *out);
  crec_status s = CREC_OK;
  if (!in || !out) {
    s = crec__oom(fn);
    goto done;
  }
  for (size_t i = 0; i < f->num_inputs; i++) in[i] = v->scalars[crec__index(f->inputs[i].id)];
  memset(out, 0, f->num_outputs * sizeof *out);
  int rc = f->fn(f->user, in, out);
  if (calls) (*calls)++;
  if (rc != 0) {
    s = crec__error(CREC_ERR_HOST_FUNCTION, fn, "host function '%s' returned %d", f->name, rc);
    goto done;
  }
  for (size_t i = 0; i < f->num_outputs; i++) v->scalars[crec__index(f->outputs[i].id)] = out[i];
done:
  if (in && in != in_small) crec__free(in);
  if (out && out != out_small) crec__free(out);
  return s;
}

crec_status crec__run_host_fns(const crec_program *p, crec__values *v, uint64_t *calls, const char *fn) {
  for (size_t h = 0; h < p->num_host_fns; h++) {
    crec_status s = crec__run_host_fn(p, h, v, calls, fn);
    if (s) return s;
  }
  return CREC_OK;
}

void crec__place_buffers(const crec_program *p, const crec_plan *plan, CUdeviceptr arena, CUdeviceptr host_arena,
                         const crec__ctx_state *st, crec__values *v) {
  for (size_t i = 0; i < p->num_buffers; i++) {
    if (p->buffers[i].kind == CREC_BUFFER_TEMPORARY)
      v->base[i] = (p->buffers[i].memory == CREC_MEMORY_HOST ? host_arena : arena) + plan->temps[i].offset;
    else if (p->buffers[i].kind == CREC_BUFFER_CONSTANT) v->base[i] = st->constants[i];
  }
}

static int64_t scalar_int(const crec_program *p, const crec__values *v, crec_scalar s) {
  size_t i = crec__index(s.id);
  return p->scalars[i].type == CREC_TYPE_I32 ? v->scalars[i].i32 : v->scalars[i].i64;
}

crec_status crec__dim(const crec_program *p, const crec__values *v, const crec__command *c,
                      const char *what, crec_dim d, uint32_t min, uint32_t max, uint32_t *out,
                      const char *fn) {
  if (!d.scalar.id) {
    *out = d.value;
    return CREC_OK;
  }
  int64_t x = scalar_int(p, v, d.scalar);
  if (x < (int64_t)min || x > (int64_t)max) {
    char label[160];
    return crec__error(CREC_ERR_BINDING, fn, "%s: %s from scalar '%s' is %" PRId64 ", outside %u..%u",
                       crec__command_label(p, (size_t)(c - p->commands), label, sizeof label), what,
                       p->scalars[crec__index(d.scalar.id)].name, x, min, max);
  }
  *out = (uint32_t)x;
  return CREC_OK;
}

crec_status crec__launch_dims(const crec_program *p, const crec__values *v, const crec__command *c,
                              uint32_t grid[3], uint32_t block[3], uint32_t *shared, const char *fn) {
  static const char *const gw[3] = {"grid.x", "grid.y", "grid.z"};
  static const char *const bw[3] = {"block.x", "block.y", "block.z"};
  static const uint32_t gmax[3] = {0x7fffffffu, 65535u, 65535u};
  static const uint32_t bmax[3] = {1024u, 1024u, 64u};
  crec_status s;
  for (int i = 0; i < 3; i++) {
    if ((s = crec__dim(p, v, c, gw[i], c->grid[i], 1, gmax[i], &grid[i], fn))) return s;
    if ((s = crec__dim(p, v, c, bw[i], c->block[i], 1, bmax[i], &block[i], fn))) return s;
  }
  uint32_t limit = p->kernels[c->kernel].shared_bytes > 48u * 1024u ? p->kernels[c->kernel].shared_bytes : 48u * 1024u;
  /* dynamic shared memory may be 0; a grid or block dimension may not */
  return crec__dim(p, v, c, "shared_bytes", c->shared_bytes, 0, limit, shared, fn);
}

void crec__marshal_args(const crec_program *p, const crec__values *v, const crec__command *c,
                        uint8_t *block, void **ptrs) {
  const crec__runtime *rt = p->runtime;
  const crec__launch_info *li = &rt->launches[c - p->commands];
  const crec__marshal_arg *m = rt->marshal + li->first_arg;
  for (uint32_t a = 0; a < li->num_args; a++) {
    uint8_t *dst = block + m[a].offset;
    uint32_t i = CREC__MARSHAL_INDEX(m[a].what);
    ptrs[a] = dst;
    switch (CREC__MARSHAL_KIND(m[a].what)) {
      case CREC__MARSHAL_BUFFER: {
        CUdeviceptr addr = v->base[i] + m[a].value;
        memcpy(dst, &addr, sizeof addr);
        break;
      }
      /* the common widths inline, not a call to memcpy */
      case CREC__MARSHAL_IMMEDIATE:
        if (i == 4) memcpy(dst, &m[a].value, 4);
        else if (i == 8) memcpy(dst, &m[a].value, 8);
        else memcpy(dst, &m[a].value, i);
        break;
      case CREC__MARSHAL_SCALAR:
        if (m[a].value == 4) memcpy(dst, v->scalars[i].bytes, 4);
        else if (m[a].value == 8) memcpy(dst, v->scalars[i].bytes, 8);
        else memcpy(dst, v->scalars[i].bytes, m[a].value);
        break;
      default: { /* LONG: the command holds them */
        const crec_arg *arg = &c->args[i].arg;
        memcpy(dst, arg->data ? arg->data : (const void *)arg->value.bytes, arg->size);
        break;
      }
    }
  }
}

void crec__memcpy_desc(const crec_program *p, const crec__values *v, const crec__command *c,
                       CUDA_MEMCPY3D *d) {
  memset(d, 0, sizeof *d);
  CUdeviceptr src = crec__range_addr(v, c->src), dst = crec__range_addr(v, c->dst);
  if (crec__range_is_host(p, c->src)) {
    d->srcMemoryType = CU_MEMORYTYPE_HOST;
    d->srcHost = (const void *)(uintptr_t)src;
  } else {
    d->srcMemoryType = CU_MEMORYTYPE_DEVICE;
    d->srcDevice = src;
  }
  if (crec__range_is_host(p, c->dst)) {
    d->dstMemoryType = CU_MEMORYTYPE_HOST;
    d->dstHost = (void *)(uintptr_t)dst;
  } else {
    d->dstMemoryType = CU_MEMORYTYPE_DEVICE;
    d->dstDevice = dst;
  }
  d->WidthInBytes = (size_t)crec__command_bytes(v, c);
  d->Height = 1;
  d->Depth = 1;
}

void crec__memset_node_params(const crec__values *v, const crec__command *c, CUDA_MEMSET_NODE_PARAMS *m) {
  memset(m, 0, sizeof *m);
  m->dst = crec__range_addr(v, c->dst);
  m->height = 1;
  if (c->kind == CREC_COMMAND_COLLECTIVE) {
    if (c->coll->desc.kind == CREC_COLLECTIVE_REPLICA_ID || c->coll->desc.kind == CREC_COLLECTIVE_PARTITION_ID) {
      /* one i32 from the bound communicator's rank */
      m->value = crec__collective_id(c, v);
      m->elementSize = 4;
      m->width = 1;
      return;
    }
    /* a permute over single-rank groups that sends this rank nothing: zeros */
    m->elementSize = 1;
    m->width = (size_t)c->bytes;
    return;
  }
  m->value = c->memset_value;
  m->elementSize = c->memset_element_size;
  m->width = (size_t)(crec__command_bytes(v, c) / c->memset_element_size);
}

crec_status crec__host_arena_alloc(const crec__cu *cu, uint64_t bytes, const char *fn, CUdeviceptr *out) {
  *out = 0;
  if (!bytes) return CREC_OK;
  char what[80];
  snprintf(what, sizeof what, "host temporary arena of %llu bytes", (unsigned long long)bytes);
  void *host = NULL;
  crec_status s = CREC_OK;
  CREC__CU_STEP(s, fn, what, cu, cuMemHostAlloc, &host, (size_t)bytes,
                CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE);
  if (s) return s;
  CUdeviceptr dev = 0;
  CREC__CU_STEP(s, fn, what, cu, cuMemHostGetDevicePointer, &dev, host, 0);
  if (!s && dev != (CUdeviceptr)(uintptr_t)host)
    s = crec__error(CREC_ERR_UNSUPPORTED, fn,
                    "%s: the device sees it at another address than the host (no unified addressing); host "
                    "temporaries need one address for both",
                    what);
  if (s) {
    cu->cuMemFreeHost(host);
    return s;
  }
  CREC__CUDA_LIVE(1);
  *out = dev;
  return CREC_OK;
}
