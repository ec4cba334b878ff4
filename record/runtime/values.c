/* The values of one execution (addresses, sizes, scalars, communicators) and
 * what every layer above reads from them: a range's address, the bytes a copy
 * touches, and the bytes each argument binding must hold. */
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
