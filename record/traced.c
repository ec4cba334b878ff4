/* Traced commands: their work is issued on a stream under capture and placed in
 * the graph as a child-graph node. Each keeps a cache of captured graphs keyed
 * by the addresses (and sizes, and communicator) the command uses; a replay with
 * new addresses swaps in a cached graph, or captures one first, evicting the
 * least recently used (replay/swap.c); evicted graphs wait in the graveyard
 * (here) until the launches enqueued before their eviction are done. */
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
    crec__free(t->entries[i].kp);
  }
  crec__handler_release(t->handler);
  crec__free(t->entries);
  crec__free(t->evicted);
  crec__free(t);
}

/* ---- inlining ---- */

/* Whether an edge is a plain one (full completion, no ports). */
static bool plain_edge(const CUgraphEdgeData *d) {
  return d->type == CU_GRAPH_DEPENDENCY_TYPE_DEFAULT && d->from_port == 0 && d->to_port == 0;
}

/* The kernel nodes of captured graph `g` in order into `chain` (CREC__TRACE_INLINE_MAX
 * of room), `*num` of them, when `g` is a chain of kernel nodes joined by plain
 * edges; else `*num` is 0. A failing driver call is the error. */
static crec_status kernel_chain(const crec__cu *cu, CUgraph g, CUgraphNode *chain, size_t *num, const char *label,
                                const char *fn) {
  *num = 0;
  CUgraphNode nodes[CREC__TRACE_INLINE_MAX];
  size_t n = 0;
  CREC__CU_TRY(fn, label, cu, cuGraphGetNodes, g, NULL, &n);
  /* more than one node needs the edges' kinds: a driver before 12.3 cannot say */
  if (n == 0 || n > CREC__TRACE_INLINE_MAX || (n > 1 && !cu->cuGraphGetEdges)) return CREC_OK;
  CREC__CU_TRY(fn, label, cu, cuGraphGetNodes, g, nodes, &n);
  for (size_t i = 0; i < n; i++) {
    CUgraphNodeType type;
    CREC__CU_TRY(fn, label, cu, cuGraphNodeGetType, nodes[i], &type);
    if (type != CU_GRAPH_NODE_TYPE_KERNEL) return CREC_OK;
  }
  if (n == 1) {
    chain[0] = nodes[0];
    *num = 1;
    return CREC_OK;
  }
  CUgraphNode from[CREC__TRACE_INLINE_MAX], to[CREC__TRACE_INLINE_MAX];
  CUgraphEdgeData data[CREC__TRACE_INLINE_MAX];
  size_t ne = 0;
  CREC__CU_TRY(fn, label, cu, cuGraphGetEdges, g, NULL, NULL, NULL, &ne);
  if (ne != n - 1) return CREC_OK; /* a chain of n nodes has n - 1 edges */
  CREC__CU_TRY(fn, label, cu, cuGraphGetEdges, g, from, to, data, &ne);
  /* each node's successor, and whether some edge enters it */
  int next[CREC__TRACE_INLINE_MAX];
  bool entered[CREC__TRACE_INLINE_MAX] = {false};
  for (size_t i = 0; i < n; i++) next[i] = -1;
  for (size_t k = 0; k < ne; k++) {
    if (!plain_edge(&data[k])) return CREC_OK;
    int f = -1, t = -1;
    for (size_t i = 0; i < n; i++) {
      if (nodes[i] == from[k]) f = (int)i;
      if (nodes[i] == to[k]) t = (int)i;
    }
    if (f < 0 || t < 0 || next[f] >= 0 || entered[t]) return CREC_OK; /* a fork or a join */
    next[f] = t;
    entered[t] = true;
  }
  int at = -1;
  for (size_t i = 0; i < n && at < 0; i++)
    if (!entered[i]) at = (int)i;
  size_t k = 0;
  for (; at >= 0 && k < n; at = next[at]) chain[k++] = nodes[at];
  if (k == n && at < 0) *num = n; /* n - 1 edges, no forks or joins, one root: connected */
  return CREC_OK;
}

/* Entry `en`'s kernels' parameters, read from its graph, which must be the same
 * chain of the same kernels as the one inlined (t->num_inline of them, their
 * kernels those of `like`'s parameters, or any when `like` is NULL). `chain`
 * (n nodes): the graph's chain when the caller walked it already; NULL: walked here. */
static crec_status entry_params(crec_exec *e, const crec__trace *t, crec__trace_entry *en,
                                const CUDA_KERNEL_NODE_PARAMS *like, const CUgraphNode *chain, size_t n,
                                const char *fn) {
  char label[200];
  crec__command_label(e->program, t->command, label, sizeof label);
  CUgraphNode walked[CREC__TRACE_INLINE_MAX];
  crec_status s = CREC_OK;
  if (!chain) {
    if ((s = kernel_chain(e->cu, en->graph, walked, &n, label, fn))) return s;
    chain = walked;
  }
  CUDA_KERNEL_NODE_PARAMS *kp = crec__calloc(t->num_inline, sizeof *kp);
  if (!kp) return crec__oom(fn);
  for (size_t i = 0; i < n && i < t->num_inline && !s; i++) {
    CREC__CU_STEP(s, fn, label, e->cu, cuGraphKernelNodeGetParams, chain[i], &kp[i]);
    /* a library's kernel (CUkernel, cudaLaunchKernel's) resolved to the context's
     * function once here, not by the driver at every set */
    CUfunction f = NULL;
    if (!s && !kp[i].func && kp[i].kern) CREC__CU_STEP(s, fn, label, e->cu, cuKernelGetFunction, &f, kp[i].kern);
    if (!s && f) {
      kp[i].func = f;
      kp[i].kern = NULL;
      kp[i].ctx = NULL;
    }
  }
  bool same = !s && n == t->num_inline;
  for (size_t i = 0; same && like && i < n; i++)
    same = kp[i].func == like[i].func && kp[i].kern == like[i].kern;
  if (!s && !same)
    s = crec__error(CREC_ERR_UNSUPPORTED, fn,
                    "%s: the work captured for the new addresses is not the chain of %zu kernel%s captured at "
                    "record (the library chose other kernels), so it cannot replace the recorded kernel nodes; "
                    "record again with these bindings, or with crec_record_options.trace_child_graphs",
                    label, t->num_inline, t->num_inline == 1 ? "" : "s");
  if (s) {
    crec__free(kp);
    return s;
  }
  en->kp = kp;
  return CREC_OK;
}

crec_status crec__trace_inline(crec_exec *e, crec__trace *t, CUgraph g, const CUgraphNode *deps, size_t nd,
                               CUgraphNode *exit, const char *fn) {
  *exit = NULL;
  char label[200];
  crec__command_label(e->program, t->command, label, sizeof label);
  crec__trace_entry *en = &t->entries[t->installed];
  CUgraphNode chain[CREC__TRACE_INLINE_MAX];
  size_t n;
  crec_status s = kernel_chain(e->cu, en->graph, chain, &n, label, fn);
  if (s || !n) return s;
  t->num_inline = n;
  if ((s = entry_params(e, t, en, NULL, chain, n, fn))) {
    t->num_inline = 0;
    return s;
  }
  for (size_t i = 0; i < n; i++) {
    const CUgraphNode *d = i ? &t->inline_nodes[i - 1] : deps;
    CREC__CU_STEP(s, fn, label, e->cu, cuGraphAddKernelNode, &t->inline_nodes[i], g, d, i ? 1 : nd, &en->kp[i]);
    /* the launch's attributes as captured (a cluster, a priority, ...) */
    CREC__CU_STEP(s, fn, label, e->cu, cuGraphKernelNodeCopyAttributes, t->inline_nodes[i], chain[i]);
    if (s) {
      /* nodes already added stay in the graph, which the failed record destroys */
      t->num_inline = 0;
      crec__free(en->kp);
      en->kp = NULL;
      return s;
    }
  }
  *exit = t->inline_nodes[n - 1];
  return CREC_OK;
}

crec_status crec__trace_set_inline(crec_exec *e, crec__trace *t, size_t entry, const char *fn) {
  crec__trace_entry *en = &t->entries[entry];
  crec_status s = CREC_OK;
  if (!en->kp && (s = entry_params(e, t, en, t->entries[t->installed].kp, NULL, 0, fn))) return s;
  char label[200];
  for (size_t i = 0; i < t->num_inline; i++) {
    CUresult r = CREC__CU(e->cu, cuGraphExecKernelNodeSetParams, e->exec, t->inline_nodes[i], &en->kp[i]);
    if (r != CUDA_SUCCESS)
      return crec__cu_fail(fn, r, "cuGraphExecKernelNodeSetParams",
                           crec__command_label(e->program, t->command, label, sizeof label));
  }
  return CREC_OK;
}

/* ---- the graveyard ---- */

void crec__graveyard_collect(crec_exec *e, bool all) {
  size_t done = 0;
  if (all) {
    done = e->num_graveyard;
  } else if (e->graveyard_waiting && e->cu->cuEventQuery(e->retire_event) == CUDA_SUCCESS) {
    done = e->graveyard_waiting;
  }
  for (size_t i = 0; i < done; i++) {
    e->cu->cuGraphDestroy(e->graveyard[i]);
    CREC__CUDA_LIVE(-1);
  }
  memmove(e->graveyard, e->graveyard + done, (e->num_graveyard - done) * sizeof *e->graveyard);
  e->num_graveyard -= done;
  e->graveyard_waiting = done >= e->graveyard_waiting ? 0 : e->graveyard_waiting - done;
}

crec_status crec__graveyard_after_launch(crec_exec *e, CUstream stream, const char *fn) {
  if (e->num_graveyard == e->graveyard_waiting) return CREC_OK;
  /* recorded after this launch, the event also follows every earlier launch of
   * the exec (CUDA runs the launches of one exec in order) */
  static const char what[] = "retiring evicted child graphs";
  crec_status s = CREC_OK;
  if (!e->retire_event) {
    CREC__CU_STEP(s, fn, what, e->cu, cuEventCreate, &e->retire_event, CU_EVENT_DISABLE_TIMING);
    if (s) {
      e->retire_event = NULL;
      return s;
    }
    CREC__CUDA_LIVE(1);
  }
  CREC__CU_TRY(fn, what, e->cu, cuEventRecord, e->retire_event, stream);
  e->graveyard_waiting = e->num_graveyard;
  return CREC_OK;
}
