/* Imported graphs as commands of a program (crec_program_add_graph(), capture.h).
 *
 * The command holds the imported exec (crec__graphcmd.ref). Each record flattens
 * the exec's template graph (its child graphs opened, so that what is left is
 * kernels, copies, fills and empty nodes, which a conditional body may hold)
 * and graph.c adds those nodes to the region's graph after the command's
 * dependencies. Each relocated node gets a copy of its import node in the
 * exec's parameter memory, its relocations pointing into the command's
 * operands, and becomes a NODE_IMPORTED node of the exec: the uses table,
 * per-node updates, variants and stats then treat it as an imported exec's.
 * Inside a conditional body a relocated copy or fill becomes crec's copy or
 * fill kernel, whose parameters the driver updates there. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec_internal.h"

/* ---- the command ---- */

/* A graph command's release: the program lets go of the imported exec. */
static void release_import(void *ref) { crec_exec_destroy(ref); }

crec_status crec_program_add_graph(crec_program *program, crec_region region, const char *name,
                                   crec_exec *imported, const crec_operand *operands, size_t num_operands,
                                   crec_command *out) {
  static const char fn[] = "crec_program_add_graph";
  if (out) out->id = 0;
  if (!program) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'program' is NULL");
  if (!imported) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'imported' is NULL");
  if (!out) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'out' is NULL");
  const crec__import *im = imported->import;
  if (!im)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn,
                       "argument 'imported' is an exec recorded from a program, not an imported graph "
                       "(crec_import_graph(), crec_capture_import())");
  if (num_operands && !operands)
    return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'operands' is NULL but num_operands is %zu", num_operands);
  if (num_operands != im->num_args)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn,
                       "argument 'num_operands': %zu, but the imported graph has %zu arguments (one operand each, "
                       "in their order)", num_operands, im->num_args);
  /* what only the import knows: each operand device memory, as large as the argument was captured */
  const crec_program *ip = imported->program;
  for (size_t i = 0; i < num_operands; i++) {
    crec_range r = operands[i].range;
    char what[48];
    snprintf(what, sizeof what, "operands[%zu]", i);
    crec_status s = crec__check_range(program, fn, what, &r);
    if (s) return s;
    const char *arg = ip->buffers[ip->arguments[i]].name;
    if (crec__range_is_host(program, r))
      return crec__error(CREC_ERR_INVALID_ARGUMENT, fn,
                         "argument '%s' (for the import's argument '%s') is in host memory; the captured work "
                         "reads and writes device memory", what, arg);
    if (im->args[i].why && im->args[i].copied_back && !(operands[i].access & CREC_ACCESS_WRITE))
      return crec__error(CREC_ERR_INVALID_ARGUMENT, fn,
                         "argument '%s' (for the import's argument '%s') is read only, but the import copies that "
                         "argument back after the work (%s): give it CREC_ACCESS_READ_WRITE", what, arg,
                         im->args[i].why);
    if (r.size == CREC_WHOLE || r.size < im->sizes[i])
      return crec__error(CREC_ERR_OUT_OF_RANGE, fn,
                         "argument '%s' (for the import's argument '%s') has %s bytes, but the work was captured "
                         "with %" PRIu64, what, arg, r.size == CREC_WHOLE ? "a dynamic number of" : "too few",
                         im->sizes[i]);
  }
  /* the nodes of the exec's graph: the captured ones, and the copies crec added */
  size_t relocated = 0, added = 0;
  for (size_t i = 0; i < im->num_nodes; i++) relocated += im->nodes[i].num_relocs != 0, added += im->nodes[i].added != 0;
  crec__graphcmd g = {.ref = imported, .release = release_import, .nodes = im->num_graph_nodes + added,
                      .relocated = relocated};
  crec_status s = crec__program_add_graph_command(program, region, name, operands, num_operands, &g, fn, out);
  if (s) return s;
  /* the program holds the exec now: its owner's crec_exec_destroy() leaves it to the program */
  __atomic_fetch_add(&imported->holds, 1, __ATOMIC_ACQ_REL);
  return CREC_OK;
}

/* ---- flattening ---- */

typedef struct node_of {
  CUgraphNode node;
  const crec__import_node *in;
} node_of;

static int by_node(const void *a, const void *b) {
  uintptr_t x = (uintptr_t)((const node_of *)a)->node, y = (uintptr_t)((const node_of *)b)->node;
  return x < y ? -1 : x > y;
}

/* A node of one graph and its position in that graph's list. */
typedef struct node_at {
  CUgraphNode node;
  size_t at;
} node_at;

static int by_node_at(const void *a, const void *b) {
  uintptr_t x = (uintptr_t)((const node_at *)a)->node, y = (uintptr_t)((const node_at *)b)->node;
  return x < y ? -1 : x > y;
}

typedef struct raw_edge {
  uint32_t from, to;
  CUgraphEdgeData data;
} raw_edge;

typedef struct walk {
  const crec__cu *cu;
  const char *fn;
  node_of *relocated;         /* the import's nodes by their handle in the template (sorted) */
  size_t num_relocated;
  crec__flat_item *items;
  size_t num_items, cap_items;
  raw_edge *edges;
  size_t num_edges, cap_edges;
  uint32_t *pool;             /* lists of items: each node's entries and exits, each graph's roots and sinks */
  size_t num_pool, cap_pool;
} walk;

/* A list of items in w->pool. */
typedef struct span {
  size_t at, n;
} span;

static crec_status pool_push(walk *w, uint32_t item) {
  if (w->num_pool == w->cap_pool && CREC__RESERVE(w->pool, w->cap_pool, w->num_pool + 1) != CREC_OK)
    return crec__oom(w->fn);
  w->pool[w->num_pool++] = item;
  return CREC_OK;
}

static crec_status new_item(walk *w, CUgraphNode node, CUgraphNodeType type, const char *label, uint32_t *out) {
  if (w->num_items >= UINT32_MAX / 2) return crec__error(CREC_ERR_TOO_LARGE, w->fn, "the imported graph is too large");
  if (w->num_items == w->cap_items && CREC__RESERVE(w->items, w->cap_items, w->num_items + 1) != CREC_OK)
    return crec__oom(w->fn);
  crec__flat_item *it = &w->items[w->num_items];
  memset(it, 0, sizeof *it);
  it->node = node;
  it->type = type;
  snprintf(it->label, sizeof it->label, "%s", label);
  if (node) {
    node_of key = {node, NULL};
    const node_of *hit = bsearch(&key, w->relocated, w->num_relocated, sizeof key, by_node);
    if (hit) it->in = hit->in;
  }
  *out = (uint32_t)w->num_items++;
  return CREC_OK;
}

/* The most child graphs deep a flattening opens. */
#define FLAT_DEPTH 16

/* Appends the items and edges of graph `g` (its child graphs opened), whose
 * nodes are labelled `prefix` and their position; `*roots` and `*sinks` get
 * the items nothing in `g` comes before, and those nothing in `g` waits for. */
static crec_status walk_graph(walk *w, CUgraph g, const char *prefix, int depth, span *roots, span *sinks) {
  const char *fn = w->fn;
  size_t n = 0, m = 0;
  char what[CREC__IMPORT_LABEL + 64];
  snprintf(what, sizeof what, "the imported graph%s%s", prefix[0] ? "'s child graph " : "", prefix);
  if (depth > FLAT_DEPTH)
    return crec__error(CREC_ERR_UNSUPPORTED, fn, "%s: child graphs nested more than %d deep", what, FLAT_DEPTH);
  CREC__CU_TRY(fn, what, w->cu, cuGraphGetNodes, g, NULL, &n);
  CUgraphNode *nodes = crec__malloc((n ? n : 1) * sizeof *nodes);
  span *entry = crec__calloc(n ? n : 1, sizeof *entry), *exit = crec__calloc(n ? n : 1, sizeof *exit);
  node_at *index = crec__malloc((n ? n : 1) * sizeof *index); /* node -> position */
  bool *has_in = crec__calloc(n ? n : 1, 1), *has_out = crec__calloc(n ? n : 1, 1);
  CUgraphNode *from = NULL, *to = NULL;
  CUgraphEdgeData *data = NULL;
  crec_status s = CREC_OK;
  if (!nodes || !entry || !exit || !index || !has_in || !has_out) s = crec__oom(fn);
  if (!s && n) CREC__CU_STEP(s, fn, what, w->cu, cuGraphGetNodes, g, nodes, &n);
  for (size_t i = 0; i < n && !s; i++) {
    char label[CREC__IMPORT_LABEL];
    if (snprintf(label, sizeof label, "%s%s%zu", prefix, prefix[0] ? "." : "", i) >= (int)sizeof label)
      s = crec__error(CREC_ERR_UNSUPPORTED, fn, "%s: child graphs nested too deep to name", what);
    CUgraphNodeType t = CU_GRAPH_NODE_TYPE_EMPTY;
    if (!s) CREC__CU_STEP(s, fn, what, w->cu, cuGraphNodeGetType, nodes[i], &t);
    if (s) break;
    if (t == CU_GRAPH_NODE_TYPE_GRAPH) {
      CUgraph child = NULL;
      CREC__CU_STEP(s, fn, what, w->cu, cuGraphChildGraphNodeGetGraph, nodes[i], &child);
      if (!s) s = walk_graph(w, child, label, depth + 1, &entry[i], &exit[i]);
      if (s || entry[i].n) continue;
      /* an empty child graph still orders what comes before and after it */
    }
    uint32_t k = 0;
    if (!s) s = new_item(w, t == CU_GRAPH_NODE_TYPE_GRAPH ? NULL : nodes[i],
                         t == CU_GRAPH_NODE_TYPE_GRAPH ? CU_GRAPH_NODE_TYPE_EMPTY : t, label, &k);
    if (!s) s = pool_push(w, k);
    if (!s) entry[i] = exit[i] = (span){w->num_pool - 1, 1};
  }
  for (size_t i = 0; i < n && !s; i++) index[i] = (node_at){nodes[i], i};
  if (!s) qsort(index, n, sizeof *index, by_node_at);
  if (!s) s = crec__graph_edges(w->cu, g, fn, what, &from, &to, &data, &m);
  for (size_t q = 0; q < m && !s; q++) {
    node_at kf = {from[q], 0}, kt = {to[q], 0};
    const node_at *hf = bsearch(&kf, index, n, sizeof kf, by_node_at), *ht = bsearch(&kt, index, n, sizeof kt, by_node_at);
    if (!hf || !ht) {
      s = crec__error(CREC_ERR_INTERNAL, fn, "%s: an edge of a node the graph does not list", what);
      break;
    }
    size_t f = hf->at, t = ht->at;
    has_out[f] = has_in[t] = true;
    /* between two nodes of this graph the edge stays as captured; through a child graph, plain */
    bool direct = exit[f].n == 1 && entry[t].n == 1 && w->items[w->pool[exit[f].at]].node == from[q] &&
                  w->items[w->pool[entry[t].at]].node == to[q];
    for (size_t x = 0; x < exit[f].n && !s; x++)
      for (size_t y = 0; y < entry[t].n && !s; y++) {
        if (w->num_edges == w->cap_edges && CREC__RESERVE(w->edges, w->cap_edges, w->num_edges + 1) != CREC_OK) {
          s = crec__oom(fn);
          break;
        }
        raw_edge *e = &w->edges[w->num_edges++];
        memset(e, 0, sizeof *e);
        e->from = w->pool[exit[f].at + x];
        e->to = w->pool[entry[t].at + y];
        if (direct) e->data = data[q];
      }
  }
  /* roots and sinks of this graph, as two lists of the pool */
  size_t at = w->num_pool;
  for (size_t i = 0; i < n && !s; i++)
    for (size_t x = 0; x < entry[i].n && !has_in[i] && !s; x++) s = pool_push(w, w->pool[entry[i].at + x]);
  *roots = (span){at, w->num_pool - at};
  at = w->num_pool;
  for (size_t i = 0; i < n && !s; i++)
    for (size_t x = 0; x < exit[i].n && !has_out[i] && !s; x++) s = pool_push(w, w->pool[exit[i].at + x]);
  *sinks = (span){at, w->num_pool - at};
  crec__free(nodes);
  crec__free(entry);
  crec__free(exit);
  crec__free(index);
  crec__free(has_in);
  crec__free(has_out);
  crec__free(from);
  crec__free(to);
  crec__free(data);
  return s;
}

void crec__flat_free(crec__flat *f) {
  crec__free(f->items);
  crec__free(f->in_from);
  crec__free(f->in_data);
  crec__free(f->order);
  memset(f, 0, sizeof *f);
}

crec_status crec__flat_make(const crec_exec *ie, crec__flat *out, const char *fn) {
  memset(out, 0, sizeof *out);
  walk w = {.cu = ie->cu, .fn = fn};
  crec_status s = CREC_OK;
  w.relocated = crec__malloc((ie->num_nodes ? ie->num_nodes : 1) * sizeof *w.relocated);
  if (!w.relocated) return crec__oom(fn);
  for (size_t i = 0; i < ie->num_nodes; i++) w.relocated[i] = (node_of){ie->nodes[i].node, ie->nodes[i].ext};
  w.num_relocated = ie->num_nodes;
  qsort(w.relocated, w.num_relocated, sizeof *w.relocated, by_node);
  span roots, sinks;
  s = walk_graph(&w, ie->graph, "", 0, &roots, &sinks);
  size_t n = w.num_items;
  /* the edges grouped by the item they go into, and an order that follows them (Kahn's) */
  uint32_t *count = s ? NULL : crec__calloc(n + 1, sizeof *count), *ready = s ? NULL : crec__malloc((n ? n : 1) * 4);
  uint32_t *out_start = s ? NULL : crec__calloc(n + 1, sizeof *out_start);
  uint32_t *out_to = s ? NULL : crec__malloc((w.num_edges ? w.num_edges : 1) * sizeof *out_to);
  if (!s && (!count || !ready || !out_start || !out_to)) s = crec__oom(fn);
  if (!s) {
    out->items = w.items, w.items = NULL;
    out->num_items = n;
    out->in_from = crec__malloc((w.num_edges ? w.num_edges : 1) * sizeof *out->in_from);
    out->in_data = crec__malloc((w.num_edges ? w.num_edges : 1) * sizeof *out->in_data);
    out->order = crec__malloc((n ? n : 1) * sizeof *out->order);
    if (!out->in_from || !out->in_data || !out->order) s = crec__oom(fn);
  }
  if (!s) {
    for (size_t q = 0; q < w.num_edges; q++) count[w.edges[q].to]++, out->items[w.edges[q].from].has_out = true;
    uint32_t at = 0;
    for (size_t i = 0; i < n; i++) {
      out->items[i].first_in = at;
      out->items[i].num_in = 0;
      at += count[i];
    }
    for (size_t q = 0; q < w.num_edges; q++) {
      crec__flat_item *it = &out->items[w.edges[q].to];
      out->in_from[it->first_in + it->num_in] = w.edges[q].from;
      out->in_data[it->first_in + it->num_in] = w.edges[q].data;
      it->num_in++;
    }
    /* each item's out-edges, grouped the same way */
    for (size_t q = 0; q < w.num_edges; q++) out_start[w.edges[q].from + 1]++;
    for (size_t i = 0; i < n; i++) out_start[i + 1] += out_start[i];
    for (size_t q = 0; q < w.num_edges; q++) out_to[out_start[w.edges[q].from]++] = w.edges[q].to;
    for (size_t i = n; i > 0; i--) out_start[i] = out_start[i - 1]; /* the fill moved each start to its end */
    out_start[0] = 0;
    /* count[i]: edges into i not yet satisfied */
    size_t head = 0, tail = 0, done = 0;
    for (size_t i = 0; i < n; i++)
      if (!count[i]) ready[tail++] = (uint32_t)i;
    while (head < tail) {
      uint32_t x = ready[head++];
      out->order[done++] = x;
      for (uint32_t q = out_start[x]; q < out_start[x + 1]; q++)
        if (--count[out_to[q]] == 0) ready[tail++] = out_to[q];
    }
    if (done != n) s = crec__error(CREC_ERR_INTERNAL, fn, "the imported graph's edges make a cycle");
  }
  crec__free(count);
  crec__free(ready);
  crec__free(out_start);
  crec__free(out_to);
  crec__free(w.relocated);
  crec__free(w.items);
  crec__free(w.edges);
  crec__free(w.pool);
  return s;
}

/* ---- relocated nodes ---- */

void crec__import_prepare(crec__import_node *in, const crec__values *v) {
  for (size_t k = 0; k < in->num_relocs; k++) {
    const crec__reloc *r = &in->relocs[k];
    uint64_t addr = (uint64_t)v->base[r->buffer] + r->delta;
    if (in->type == CU_GRAPH_NODE_TYPE_KERNEL) memcpy(in->block + r->offset, &addr, 8); /* 4-byte aligned at least */
    else if (in->type == CU_GRAPH_NODE_TYPE_MEMSET) in->set.dst = (CUdeviceptr)addr;
    else if (r->offset == 0) in->copy.srcDevice = (CUdeviceptr)addr;
    else in->copy.dstDevice = (CUdeviceptr)addr;
  }
  if (in->as_kernel == CREC__AS_COPY)
    in->kp.gridDimX = crec__copy_kernel_args(in->block, in->copy.dstDevice, in->copy.srcDevice, in->copy.WidthInBytes);
  else if (in->as_kernel == CREC__AS_FILL)
    in->kp.gridDimX = crec__fill_kernel_args(in->block, in->set.dst, in->set.width, in->set.value, in->set.elementSize);
}


crec_status crec__flat_node(crec_exec *e, const crec__command *c, const crec__import_node *src, uint8_t as,
                            CUfunction func, crec__import_node **out, const char *fn) {
  *out = NULL;
  /* one block: the node, its parameter bytes (or the copy kernel's 24), pointers, relocations */
  bool kernel = src->type == CU_GRAPH_NODE_TYPE_KERNEL;
  size_t block = kernel ? src->block_size : as ? 24 : 0;
  size_t params = kernel ? src->num_params : as ? 4 : 0;
  size_t head = (sizeof **out + 15) & ~(size_t)15, body = (block + 15) & ~(size_t)15;
  uint8_t *mem = crec__bump_alloc(&e->params, head + body + params * sizeof(void *) +
                                                  src->num_relocs * sizeof(crec__reloc) + 8);
  if (!mem) return crec__oom(fn);
  crec__import_node *x = (crec__import_node *)mem;
  *x = *src;
  x->depth = 0;
  x->block = block ? mem + head : NULL;
  x->ptrs = params ? (void **)(mem + head + body) : NULL;
  x->relocs = (crec__reloc *)(mem + head + body + params * sizeof(void *));
  x->as_kernel = as;
  if (kernel) {
    if (block) memcpy(x->block, src->block, block);
    for (size_t i = 0; i < params; i++) x->ptrs[i] = x->block + ((uint8_t *)src->ptrs[i] - src->block);
    x->kp.kernelParams = x->ptrs;
  } else if (as) {
    static const uint32_t offsets[2][4] = {{0, 8, 16, 0}, {0, 8, 16, 20}};
    x->num_params = as == CREC__AS_COPY ? 3 : 4;
    x->block_size = 24;
    for (uint32_t i = 0; i < x->num_params; i++) x->ptrs[i] = x->block + offsets[as == CREC__AS_FILL][i];
    memset(&x->kp, 0, sizeof x->kp);
    x->kp.func = func;
    x->kp.gridDimY = x->kp.gridDimZ = 1;
    x->kp.blockDimX = 256, x->kp.blockDimY = x->kp.blockDimZ = 1;
    x->kp.kernelParams = x->ptrs;
  }
  for (size_t k = 0; k < src->num_relocs; k++) {
    crec__reloc r = src->relocs[k];
    const crec_operand *o = &c->ops[r.buffer];
    r.buffer = (uint32_t)crec__index(o->range.buffer.id);
    r.delta += o->range.offset;
    x->relocs[k] = r;
  }
  *out = x;
  return CREC_OK;
}
