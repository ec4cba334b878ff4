/* Traced commands: their work is issued on a stream under capture and placed in
 * the graph as a child-graph node. Each keeps a cache of captured graphs keyed
 * by the addresses (and sizes, and communicator) the command uses; a replay with
 * new addresses swaps in a cached graph, or captures one first, evicting the
 * least recently used (replay/swap.c, with the graveyard where evicted graphs
 * wait until the launches enqueued before their eviction are done). */
#include <stdio.h>
#include <string.h>

#include "exec_internal.h"

crec_status crec__traced_issue(const crec_program *p, const crec__ctx_state *st, const crec__values *v, uint32_t ci,
                               const crec__handler *h, CUstream stream, const char *fn) {
  switch (p->commands[ci].kind) {
    case CREC_COMMAND_GEMM: return crec__gemm_issue(p, st, v, ci, stream, fn);
    case CREC_COMMAND_FFT: return crec__fft_issue(p, st, v, ci, stream, fn);
    case CREC_COMMAND_CHOLESKY: return crec__cholesky_issue(p, st, v, ci, stream, fn);
    case CREC_COMMAND_CONV: return crec__conv_issue(p, st, v, ci, stream, fn);
    case CREC_COMMAND_COLLECTIVE:
    case CREC_COMMAND_BARRIER: return crec__collective_issue(p, v, ci, stream, fn); /* a barrier across ranks */
    case CREC_COMMAND_CUSTOM: return crec__custom_trace(p, v, ci, h, stream, fn);
    default: {
      char label[200];
      return crec__error(CREC_ERR_INTERNAL, fn, "%s is not a traced command", crec__command_label(p, ci, label, sizeof label));
    }
  }
}

/* ---- keys ---- */

static size_t key_words(const crec_program *p, uint32_t ci) {
  const crec__command *c = &p->commands[ci];
  return 2 * c->num_ops + (c->coll ? 1 : 0);
}

void crec__trace_key(const crec_program *p, const crec__values *v, uint32_t ci, uint64_t *key) {
  const crec__command *c = &p->commands[ci];
  size_t k = 0;
  for (size_t i = 0; i < c->num_ops; i++) {
    crec_range r = c->ops[i].range;
    key[k++] = crec__range_addr(v, r);
    key[k++] = r.size != CREC_WHOLE ? r.size : v->size[crec__index(r.buffer.id)];
  }
  if (c->coll) key[k++] = v->comms[c->coll->comm]->id; /* not the address: it may be reused */
}

/* ---- capture ---- */

crec_status crec__trace_capture(crec_exec *e, uint32_t ci, const crec__handler *h, const crec__values *v, CUgraph *out,
                                const char *fn) {
  const crec__cu *cu = e->cu;
  char label[200];
  crec__command_label(e->program, ci, label, sizeof label);
  *out = NULL;
  /* relaxed: libraries may make calls a stricter mode forbids during capture
   * (NCCL, cuBLASLt's first use of a kernel) */
  CREC__CU_TRY(fn, label, cu, cuStreamBeginCapture, e->capture_stream, CU_STREAM_CAPTURE_MODE_RELAXED);
  crec_status s = crec__traced_issue(e->program, e->state, v, ci, h, e->capture_stream, fn);
  CUgraph g = NULL;
  /* always ended, and so called without CREC__CU's fault hook: a stream left
   * capturing would break the exec */
  CUresult r = cu->cuStreamEndCapture(e->capture_stream, &g);
  if (!s && r != CUDA_SUCCESS) s = crec__cu_fail(fn, r, "cuStreamEndCapture", label);
  if (s) {
    if (g) cu->cuGraphDestroy(g);
    return s;
  }
  CREC__CUDA_LIVE(1);
  /* work that issues nothing (an in-place one-rank collective) still needs a node */
  size_t n = 0;
  CREC__CU_STEP(s, fn, label, cu, cuGraphGetNodes, g, NULL, &n);
  CUgraphNode empty;
  if (!s && n == 0) CREC__CU_STEP(s, fn, label, cu, cuGraphAddEmptyNode, &empty, g, NULL, 0);
  if (s) {
    cu->cuGraphDestroy(g);
    CREC__CUDA_LIVE(-1);
    return s;
  }
  e->stats.trace_captures++;
  *out = g;
  return CREC_OK;
}

crec_status crec__trace_create(crec_exec *e, uint32_t ci, crec__handler *h, crec__trace **out, CUgraph *first,
                               const char *fn) {
  const crec_program *p = e->program;
  *out = NULL;
  *first = NULL;
  crec__trace *t = crec__calloc(1, sizeof *t);
  if (!t) return crec__oom(fn);
  t->command = ci;
  t->handler = h;
  t->key_words = key_words(p, ci);
  t->cap_entries = e->trace_cache_size;
  t->entries = crec__calloc(t->cap_entries, sizeof *t->entries);
  t->cap_evicted = 4 * (size_t)t->cap_entries;
  t->evicted = crec__calloc(t->cap_evicted, sizeof *t->evicted);
  uint64_t *key = crec__malloc(t->key_words * sizeof *key + 1);
  if (!t->entries || !t->evicted || !key) {
    crec__free(key);
    t->handler = NULL; /* the caller keeps its reference on failure */
    crec__trace_free(e, t);
    return crec__oom(fn);
  }
  crec__trace_key(p, &e->cur, ci, key);
  CUgraph g;
  crec_status s = crec__trace_capture(e, ci, h, &e->cur, &g, fn);
  if (s) {
    crec__free(key);
    t->handler = NULL;
    crec__trace_free(e, t);
    return s;
  }
  t->entries[0].graph = g;
  t->entries[0].key = key;
  t->entries[0].used = ++t->tick;
  t->num_entries = 1;
  t->installed = 0;
  *out = t;
  *first = g;
  return CREC_OK;
}

void crec__trace_free(crec_exec *e, crec__trace *t) {
  if (!t) return;
  for (size_t i = 0; i < t->num_entries; i++) {
    if (t->entries[i].graph) {
      e->cu->cuGraphDestroy(t->entries[i].graph);
      CREC__CUDA_LIVE(-1);
    }
    crec__free(t->entries[i].key);
  }
  crec__handler_release(t->handler);
  crec__free(t->entries);
  crec__free(t->evicted);
  crec__free(t);
}
