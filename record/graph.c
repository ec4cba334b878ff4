/* Building the CUDA graph of an exec from the program and its plan.
 *
 * Each region becomes a sub-DAG of one CUDA graph (the top-level graph, or a
 * conditional node's body graph). A command's dependencies are the exit nodes
 * of the commands the plan says it waits for; commands with none hang off the
 * region's external dependencies. Control flow:
 *  - while: cond commands, set kernel, WHILE node; the body graph holds body
 *    commands, cond commands again, the set kernel again (a limited loop's set
 *    kernel also counts its iterations);
 *  - if: set kernel, then one IF node with one or two bodies (in legacy mode,
 *    one IF node per body, chained);
 *  - switch: set kernel, then one SWITCH node (in legacy mode, its set kernels,
 *    then one IF node per branch, chained).
 * An empty body gets a no-op kernel: empty bodies hung on drivers before 12.8. */
#include <stdio.h>
#include <string.h>

#include "exec_internal.h"

/* ---- what each node uses ---- */

/* One binding a node uses, as node_uses() finds it. */
typedef struct use_pair {
  uint32_t index; /* the buffer, scalar or communicator slot */
  uint32_t node;
  uint32_t what;  /* USE_BUFFER, USE_SCALAR or USE_COMM */
} use_pair;

/* The uses collected so far: each binding a node uses, once per node, appended
 * to `pairs` as the node is made (its command's data is still in the cache
 * then) and counted per binding. */
typedef struct uses_pass {
  crec_exec *e;
  uint32_t node;
  uint32_t *count[3];    /* per buffer, scalar, communicator slot */
  use_pair *pairs;
  size_t num_pairs, cap_pairs;
  bool failed;           /* out of memory */
  uint32_t seen[2][8];   /* the node's buffers and scalars so far, to list each once */
  size_t num_seen[2];
} uses_pass;

enum { USE_BUFFER, USE_SCALAR, USE_COMM };

static void use(uses_pass *u, int what, uint32_t i) {
  if (what != USE_COMM) {
    /* past 8 a binding may be listed twice for one node: replay's marks make that harmless */
    size_t n = u->num_seen[what];
    for (size_t q = 0; q < n && q < 8; q++)
      if (u->seen[what][q] == i) return;
    if (n < 8) u->seen[what][n] = i;
    u->num_seen[what]++;
  }
  if (u->num_pairs == u->cap_pairs && CREC__RESERVE(u->pairs, u->cap_pairs, u->num_pairs + 1) != CREC_OK) {
    u->failed = true;
    return;
  }
  u->pairs[u->num_pairs++] = (use_pair){i, u->node, (uint32_t)what};
  u->count[what][i]++;
}

static void use_buffer_index(uses_pass *u, uint32_t bi) {
  if (u->e->program->buffers[bi].kind == CREC_BUFFER_ARGUMENT) use(u, USE_BUFFER, bi);
}

static void use_buffer(uses_pass *u, crec_range r) { use_buffer_index(u, (uint32_t)crec__index(r.buffer.id)); }

static void use_scalar(uses_pass *u, crec_scalar sc) {
  if (sc.id) use(u, USE_SCALAR, (uint32_t)crec__index(sc.id));
}

/* The bindings node `ni` reads: argument buffers, scalars, communicators. */
static void node_uses(uses_pass *u, uint32_t ni) {
  const crec__node *n = &u->e->nodes[ni];
  u->node = ni;
  u->num_seen[0] = u->num_seen[1] = 0;
  if (n->kind == NODE_IMPORTED) {
    /* an imported exec's arguments, or the buffers of a graph command's operands */
    const crec__import_node *in = n->ext;
    for (size_t k = 0; k < in->num_relocs; k++) use_buffer_index(u, in->relocs[k].buffer);
    return;
  }
  const crec__command *c = &u->e->program->commands[n->command];
  switch (n->kind) {
    case NODE_KERNEL: {
      /* the packed launch's arguments; the command only for dims from scalars */
      const crec__runtime *rt = u->e->program->runtime;
      const crec__launch_info *li = &rt->launches[n->command];
      const crec__marshal_arg *m = rt->marshal + li->first_arg;
      for (uint32_t a = 0; a < li->num_args; a++) {
        uint32_t i = CREC__MARSHAL_INDEX(m[a].what);
        if (CREC__MARSHAL_KIND(m[a].what) == CREC__MARSHAL_BUFFER) use_buffer_index(u, i);
        else if (CREC__MARSHAL_KIND(m[a].what) == CREC__MARSHAL_SCALAR) use(u, USE_SCALAR, i);
      }
      if (!li->dims_from_scalars) break;
      for (int i = 0; i < 3; i++) {
        use_scalar(u, c->grid[i].scalar);
        use_scalar(u, c->block[i].scalar);
      }
      use_scalar(u, c->shared_bytes.scalar);
      break;
    }
    case NODE_MEMCPY:
    case NODE_COPY:
      use_buffer(u, c->src);
      /* fall through */
    case NODE_MEMSET:
    case NODE_FILL:
      use_buffer(u, c->dst);
      break;
    case NODE_SET:
      use_buffer(u, c->predicate);
      break;
    case NODE_TRACED:
    case NODE_CUSTOM:
      for (size_t k = 0; k < c->num_ops; k++) use_buffer(u, c->ops[k].range);
      if (c->coll) use(u, USE_COMM, c->coll->comm); /* a collective, or a barrier across ranks */
      break;
    case NODE_IMPORTED:
      break; /* above */
  }
}

/* Counts → where each binding's list starts (n + 1 entries, into uses->start);
 * `count` becomes each list's fill cursor. */
static void lay_out_uses(crec__uses *uses, uint32_t *count, size_t n) {
  uint32_t at = 0;
  for (size_t i = 0; i < n; i++) {
    uses->start[i] = at;
    at += count[i];
    count[i] = uses->start[i];
  }
  uses->start[n] = at;
}

/* Room for the uses of a graph of about `expect` nodes. */
static crec_status uses_begin(uses_pass *u, crec_exec *e, size_t expect, const char *fn) {
  const crec_program *p = e->program;
  memset(u, 0, sizeof *u);
  u->e = e;
  size_t nb = p->num_buffers, ns = p->num_scalars, nc = p->num_comms;
  uint32_t *counts = crec__calloc(nb + ns + nc + 3, sizeof *counts);
  if (!counts) return crec__oom(fn);
  u->count[0] = counts, u->count[1] = counts + nb + 1, u->count[2] = u->count[1] + ns + 1;
  /* most nodes use a binding or two: room for two each up front */
  if (CREC__RESERVE(u->pairs, u->cap_pairs, 2 * expect + 1) != CREC_OK) return crec__oom(fn);
  return CREC_OK;
}

static void uses_free(uses_pass *u) {
  crec__free(u->count[0]);
  crec__free(u->pairs);
  u->count[0] = NULL, u->pairs = NULL;
}

/* For each argument buffer, scalar and communicator slot, the nodes that use it
 * (e->buffer_uses, scalar_uses, comm_uses, in one block e->slab_uses): what a
 * replay marks dirty when it changes. The pairs node_uses() collected, in node
 * order, are placed by a counting sort, so each list is in node order too. */
static crec_status uses_finish(uses_pass *u, const char *fn) {
  crec_exec *e = u->e;
  const crec_program *p = e->program;
  const size_t n[3] = {p->num_buffers, p->num_scalars, p->num_comms};
  crec__uses *uses[3] = {&e->buffer_uses, &e->scalar_uses, &e->comm_uses};
  crec_status s = u->failed ? crec__oom(fn) : CREC_OK;
  size_t listed[3] = {0, 0, 0};
  for (size_t q = 0; q < u->num_pairs; q++) listed[u->pairs[q].what]++;
  const size_t sizes[6] = {(n[0] + 1) * 4, listed[0] * 4, (n[1] + 1) * 4, listed[1] * 4, (n[2] + 1) * 4, listed[2] * 4};
  size_t at[6];
  uint8_t *b = s ? NULL : crec__slab(6, sizes, at);
  if (!s && !b) s = crec__oom(fn);
  if (!s) {
    e->slab_uses = b;
    for (int k = 0; k < 3; k++) {
      uses[k]->start = (void *)(b + at[2 * k]);
      uses[k]->nodes = (void *)(b + at[2 * k + 1]);
      lay_out_uses(uses[k], u->count[k], n[k]);
    }
    for (size_t q = 0; q < u->num_pairs; q++) {
      const use_pair *pr = &u->pairs[q];
      uses[pr->what]->nodes[u->count[pr->what][pr->index]++] = pr->node;
    }
  }
  uses_free(u);
  return s;
}

/* What a record of a plain program (crec__runtime.plain) derives from the plan
 * alone: its nodes' uses, and which commands of the body a later one waits
 * for. The first record of such a program makes it (publish_built()); later
 * records with the same schedule share it, read-only, through the runtime,
 * which frees it with the program. One block. */
typedef struct crec__built {
  size_t num_nodes;      /* what the record that made it made: later ones check theirs */
  crec__uses uses[3];    /* buffer, scalar, communicator */
  const uint8_t *waited; /* per position in the body: some later command waits for it */
} crec__built;

/* Copies the uses of the exec just built, and the body's waited marks, into a
 * crec__built for later records of `rt` with schedule `which`; another
 * thread's, published first, wins. */
static crec_status publish_built(crec_exec *e, crec__runtime *rt, int which, const char *fn) {
  const crec_program *p = e->program;
  const crec__region *r = &p->regions[0];
  const crec__uses *from[3] = {&e->buffer_uses, &e->scalar_uses, &e->comm_uses};
  const size_t n[3] = {p->num_buffers, p->num_scalars, p->num_comms};
  size_t sizes[8], at[8];
  sizes[0] = sizeof(crec__built);
  for (int k = 0; k < 3; k++) sizes[1 + 2 * k] = (n[k] + 1) * 4, sizes[2 + 2 * k] = from[k]->start[n[k]] * 4;
  sizes[7] = r->num_commands;
  uint8_t *block = crec__slab(8, sizes, at);
  if (!block) return crec__oom(fn);
  crec__built *bt = (void *)(block + at[0]);
  bt->num_nodes = e->num_nodes;
  for (int k = 0; k < 3; k++) {
    bt->uses[k].start = (void *)(block + at[1 + 2 * k]);
    bt->uses[k].nodes = (void *)(block + at[2 + 2 * k]);
    memcpy(bt->uses[k].start, from[k]->start, sizes[1 + 2 * k]);
    if (sizes[2 + 2 * k]) memcpy(bt->uses[k].nodes, from[k]->nodes, sizes[2 + 2 * k]);
  }
  uint8_t *waited = block + at[7];
  memset(waited, 0, r->num_commands);
  const crec_plan *plan = e->plan;
  for (size_t k = 0; k < r->num_commands; k++) {
    uint32_t ci = r->commands[k];
    for (uint32_t d = plan->dep_start[ci]; d < plan->dep_start[ci + 1]; d++)
      waited[p->commands[crec__index(plan->deps[d].id)].index_in_region] = 1;
  }
  bt->waited = waited;
  crec__built *none = NULL;
  if (!__atomic_compare_exchange_n(&rt->built[which], &none, bt, false, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
    crec__free(block);
  return CREC_OK;
}

/* ---- the builder ---- */

void crec__kernel_node_params(const crec__node *n, CUDA_KERNEL_NODE_PARAMS *kp) {
  memset(kp, 0, sizeof *kp);
  kp->func = n->func;
  kp->gridDimX = n->grid[0], kp->gridDimY = n->grid[1], kp->gridDimZ = n->grid[2];
  kp->blockDimX = n->block[0], kp->blockDimY = n->block[1], kp->blockDimZ = n->block[2];
  kp->sharedMemBytes = n->shared;
  kp->kernelParams = n->param_ptrs;
}


typedef struct builder {
  crec_exec *e;
  const crec_program *p;
  const crec__cu *cu;
  const char *fn;
  CUgraphNode *exits;    /* per command: its exit node in the emission in progress */
  int32_t *host_tables;  /* switch case tables */
  size_t table_words;    /* int32 words used so far */
  size_t table_cap;      /* int32 words count_tables() counted */
  CUdeviceptr cases;     /* where the case tables go: after the loop counts */
  size_t counts;         /* iteration counts of limited loops used so far */
  size_t counts_cap;     /* counts count_tables() counted */
  uses_pass uses;        /* what each node made so far uses */
  const crec__built *built; /* a plain program's, made by an earlier record: uses and waits are known */
} builder;

static crec_status new_node(builder *b, crec__node_kind kind, uint32_t ci, crec__node **out) {
  crec_exec *e = b->e;
  *out = NULL;
  if (e->num_nodes == e->cap_nodes && CREC__RESERVE(e->nodes, e->cap_nodes, e->num_nodes + 1) != CREC_OK)
    return crec__oom(b->fn);
  crec__node *n = &e->nodes[e->num_nodes];
  *n = (crec__node){.kind = kind, .command = ci}; /* a store of the zeroes, not a call */
  *out = n;
  return CREC_OK;
}

/* Counts the node new_node() made, now filled in, and collects its uses; returns its index. */
static uint32_t count_node(builder *b) {
  crec_exec *e = b->e;
  if (!b->built) node_uses(&b->uses, (uint32_t)e->num_nodes);
  return (uint32_t)e->num_nodes++;
}

/* crec's part of a launch's node, without the driver: the node, its dims and its
 * parameter block for the first execution. Its index in `*index`. */
static crec_status prepare_kernel(builder *b, uint32_t ci, uint32_t *index) {
  const crec_program *p = b->p;
  /* the packed launch: the command itself is read only for dims from scalars */
  const crec__launch_info *li = &p->runtime->launches[ci];
  crec_exec *e = b->e;
  crec__node *n;
  crec_status s = new_node(b, NODE_KERNEL, ci, &n);
  if (s) return s;
  /* the parameter block, then its pointers, in one allocation */
  size_t block_bytes = ((size_t)(li->param_bytes ? li->param_bytes : 1) + 15) & ~(size_t)15;
  n->param_block = crec__bump_alloc(&e->params, block_bytes + (li->num_args ? li->num_args : 1) * sizeof(void *));
  if (!n->param_block) return crec__oom(b->fn);
  n->param_ptrs = (void **)(n->param_block + block_bytes);
  n->func = e->state->functions[li->kernel];
  n->dims_from_scalars = li->dims_from_scalars;
  if (li->dims_from_scalars) {
    if ((s = crec__launch_dims(p, &e->cur, &p->commands[ci], n->grid, n->block, &n->shared, b->fn))) return s;
  } else {
    memcpy(n->grid, li->grid, sizeof n->grid);
    memcpy(n->block, li->block, sizeof n->block);
    n->shared = li->shared;
  }
  crec__marshal_args(p, &e->cur, &p->commands[ci], n->param_block, n->param_ptrs);
  /* counted now: the node holds its slot (a failure later leaves it without a graph node) */
  *index = count_node(b);
  return CREC_OK;
}

/* A kernel node of `kp` in `g` after `nd` dependencies, with their edge data
 * `edges` (some programmatic) or plain ones (NULL); a failure names command `ci`. */
static crec_status add_kernel_node(builder *b, CUgraph g, uint32_t ci, const CUgraphNode *deps,
                                   const CUgraphEdgeData *edges, size_t nd, const CUDA_KERNEL_NODE_PARAMS *kp,
                                   CUgraphNode *out) {
  if (!edges) {
    CREC__CU_TRY_COMMAND(b, ci, cuGraphAddKernelNode, out, g, deps, nd, kp);
    return CREC_OK;
  }
  CUgraphNodeParams np;
  memset(&np, 0, sizeof np);
  np.type = CU_GRAPH_NODE_TYPE_KERNEL;
  np.kernel.func = kp->func;
  np.kernel.gridDimX = kp->gridDimX, np.kernel.gridDimY = kp->gridDimY, np.kernel.gridDimZ = kp->gridDimZ;
  np.kernel.blockDimX = kp->blockDimX, np.kernel.blockDimY = kp->blockDimY, np.kernel.blockDimZ = kp->blockDimZ;
  np.kernel.sharedMemBytes = kp->sharedMemBytes;
  np.kernel.kernelParams = kp->kernelParams;
  np.kernel.extra = kp->extra;
  np.kernel.kern = kp->kern;
  np.kernel.ctx = kp->ctx;
  CREC__CU_TRY_COMMAND(b, ci, cuGraphAddNode, out, g, deps, edges, nd, &np);
  return CREC_OK;
}

/* The driver's part of a launch's node that prepare_kernel() made: the node
 * itself, its cluster, and whether the device-side updater may set it. `edges`,
 * when not NULL, annotates the `nd` dependencies (some programmatic). */
static crec_status add_kernel(builder *b, CUgraph g, uint32_t ci, uint32_t index, const CUgraphNode *deps,
                              const CUgraphEdgeData *edges, size_t nd, CUgraphNode *out) {
  const crec_program *p = b->p;
  const crec__launch_info *li = &p->runtime->launches[ci];
  crec_exec *e = b->e;
  crec__node *n = &e->nodes[index];
  CUDA_KERNEL_NODE_PARAMS kp;
  crec__kernel_node_params(n, &kp);
  crec_status s = add_kernel_node(b, g, ci, deps, edges, nd, &kp, &n->node);
  if (s) return s;
  const crec__kernel *k = &p->kernels[li->kernel];
  if (k->cluster[0]) {
    CUlaunchAttributeValue v;
    memset(&v, 0, sizeof v);
    v.clusterDim.x = k->cluster[0], v.clusterDim.y = k->cluster[1], v.clusterDim.z = k->cluster[2];
    CREC__CU_TRY_COMMAND(b, ci, cuGraphKernelNodeSetAttribute, n->node, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, &v);
  }
  /* the device path: nodes of the body whose dims are fixed (the updater writes parameters only) */
  if (e->updater && li->region == 0 && !n->dims_from_scalars && !k->cluster[0]) {
    CUlaunchAttributeValue v;
    memset(&v, 0, sizeof v);
    v.deviceUpdatableKernelNode.deviceUpdatable = 1;
    CREC__CU_TRY_COMMAND(b, ci, cuGraphKernelNodeSetAttribute, n->node,
                         CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE, &v);
    n->device_path = true; /* its device handle is read once the graph is instantiated */
    e->upd_cap_entries++;
    e->upd_cap_bytes += (li->param_bytes + 7u) & ~7u;
  }
  *out = n->node;
  return CREC_OK;
}

/* The updater node at the head of the graph (device updates): every command
 * of the body without dependencies waits for it. Its parameters, the control
 * block and the run counter made here, never change: a replay writes this
 * launch's count into the control block, and the updater is disabled for
 * replays without entries. */
static crec_status add_updater(builder *b, CUgraph g) {
  crec_exec *e = b->e;
  static const char what[] = "crec's device-side updater";
  void *h = NULL;
  CREC__CU_TRY(b->fn, what, b->cu, cuMemHostAlloc, &h, sizeof(crec__upd_ctl), CU_MEMHOSTALLOC_DEVICEMAP);
  CREC__CUDA_LIVE(1);
  e->upd_ctl = h;
  memset(e->upd_ctl, 0, sizeof *e->upd_ctl);
  CREC__CU_TRY(b->fn, what, b->cu, cuMemHostGetDevicePointer, &e->upd_ctl_dev, h, 0);
  CREC__CU_TRY(b->fn, what, b->cu, cuMemAlloc, &e->upd_seq, 2 * sizeof(uint32_t));
  CREC__CUDA_LIVE(1);
  static const uint32_t zero[2] = {0, 0};
  CREC__CU_TRY(b->fn, what, b->cu, cuMemcpyHtoD, e->upd_seq, zero, sizeof zero);
  void *params[] = {&e->upd_ctl_dev, &e->upd_seq};
  CUDA_KERNEL_NODE_PARAMS kp;
  memset(&kp, 0, sizeof kp);
  kp.func = e->state->apply_updates;
  kp.gridDimX = CREC__UPD_BLOCKS, kp.gridDimY = kp.gridDimZ = 1;
  kp.blockDimX = 256, kp.blockDimY = kp.blockDimZ = 1;
  kp.kernelParams = params;
  CREC__CU_TRY(b->fn, what, b->cu, cuGraphAddKernelNode, &e->updater, g, NULL, 0, &kp);
  return CREC_OK;
}

/* A set-condition kernel node: `params` (sizes in `sizes`) with the condition
 * pointer at index `pred_index`, which follows the bindings. */
static crec_status add_set(builder *b, CUgraph g, uint32_t ci, CUfunction f, const void *const *vals,
                           const uint32_t *sizes, size_t np, size_t pred_index, const CUgraphNode *deps,
                           size_t nd, CUgraphNode *out) {
  crec_exec *e = b->e;
  crec__node *n;
  crec_status s = new_node(b, NODE_SET, ci, &n);
  if (s) return s;
  uint32_t off[8], total = 0;
  for (size_t i = 0; i < np; i++) {
    uint32_t align = sizes[i] < 8 ? sizes[i] : 8; /* a struct of handles aligns as its words */
    total = (total + align - 1) / align * align;
    off[i] = total;
    total += sizes[i];
  }
  n->param_block = crec__bump_alloc(&e->params, total);
  n->param_ptrs = crec__bump_alloc(&e->params, np * sizeof(void *));
  if (!n->param_block || !n->param_ptrs) return crec__oom(b->fn);
  for (size_t i = 0; i < np; i++) {
    memcpy(n->param_block + off[i], vals[i], sizes[i]);
    n->param_ptrs[i] = n->param_block + off[i];
  }
  n->pred_offset = off[pred_index];
  n->func = f;
  /* one thread: updates rebuild the launch from these */
  for (int i = 0; i < 3; i++) n->grid[i] = n->block[i] = 1;
  n->shared = 0;
  CUDA_KERNEL_NODE_PARAMS kp;
  crec__kernel_node_params(n, &kp);
  CREC__CU_TRY_COMMAND(b, ci, cuGraphAddKernelNode, &n->node, g, deps, nd, &kp);
  count_node(b);
  *out = n->node;
  return CREC_OK;
}

static crec_status add_noop(builder *b, CUgraph g, uint32_t ci) {
  CUDA_KERNEL_NODE_PARAMS kp = {0};
  kp.func = b->e->state->noop;
  kp.gridDimX = kp.gridDimY = kp.gridDimZ = 1;
  kp.blockDimX = kp.blockDimY = kp.blockDimZ = 1;
  CUgraphNode n;
  CREC__CU_TRY_COMMAND(b, ci, cuGraphAddKernelNode, &n, g, NULL, 0, &kp);
  return CREC_OK;
}

static crec_status add_conditional(builder *b, CUgraph g, uint32_t ci, CUgraphConditionalHandle h,
                                   CUgraphConditionalNodeType type, unsigned size, const CUgraphNode *deps,
                                   size_t nd, CUgraphNode *out, CUgraph **bodies) {
  CUgraphNodeParams np;
  memset(&np, 0, sizeof np);
  np.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
  np.conditional.handle = h;
  np.conditional.type = type;
  np.conditional.size = size;
  np.conditional.ctx = b->e->ctx;
  CREC__CU_TRY_COMMAND(b, ci, cuGraphAddNode, out, g, deps, NULL, nd, &np);
  *bodies = np.conditional.phGraph_out;
  crec_exec *e = b->e;
  if (CREC__RESERVE(e->conds, e->cap_conds, e->num_conds + 1) != CREC_OK) return crec__oom(b->fn);
  e->conds[e->num_conds++] = (crec__cond){*out, ci, np.conditional.phGraph_out, size, type == CU_GRAPH_COND_TYPE_WHILE};
  return CREC_OK;
}

static crec_status new_handle(builder *b, CUgraph g, uint32_t ci, CUgraphConditionalHandle *h) {
  CREC__CU_TRY_COMMAND(b, ci, cuGraphConditionalHandleCreate, h, g, b->e->ctx, 0, 0);
  return CREC_OK;
}

/* A list of nodes (dependencies, sinks). */
typedef struct nodes {
  CUgraphNode *v;
  size_t n, cap;
} nodes;

static crec_status push(builder *b, nodes *l, CUgraphNode x) {
  if (l->n == l->cap && CREC__RESERVE(l->v, l->cap, l->n + 1) != CREC_OK) return crec__oom(b->fn);
  l->v[l->n++] = x;
  return CREC_OK;
}

static crec_status emit_region(builder *b, CUgraph g, uint32_t region, const nodes *ext, nodes *sinks);

/* Fills a body graph with a region; an empty region gets a no-op kernel. */
static crec_status emit_body(builder *b, CUgraph body, uint32_t region, uint32_t ci) {
  if (b->p->regions[region].num_commands == 0) return add_noop(b, body, ci);
  nodes none = {0}, sinks = {0};
  crec_status s = emit_region(b, body, region, &none, &sinks);
  crec__free(sinks.v);
  return s;
}

static crec_status emit_while(builder *b, CUgraph g, uint32_t ci, const nodes *deps, CUgraphNode *out) {
  const crec__command *c = &b->p->commands[ci];
  crec_exec *e = b->e;
  CUgraphConditionalHandle h;
  crec_status s = new_handle(b, g, ci, &h);
  if (s) return s;
  CUdeviceptr pred = crec__range_addr(&e->cur, c->predicate);
  /* a limited loop counts its iterations in its own word of the table buffer */
  uint64_t limit = crec__loop_limit(e, c);
  CUdeviceptr count = 0;
  uint32_t loop = ci + 1;
  int entry = 1;
  if (limit) {
    if (b->counts >= b->counts_cap)
      return crec__error(CREC_ERR_INTERNAL, b->fn, "loop counts outgrew the %zu counted for them", b->counts_cap);
    count = e->tables + b->counts++ * 8;
  }
  const void *vals[7] = {&h, &pred, &count, &limit, &e->tripped_dev, &loop, &entry};
  const uint32_t sizes[7] = {8, 8, 8, 8, 8, 4, 4};
  size_t np = limit ? 7 : 2;
  CUfunction f = limit ? e->state->set_while_limited : e->state->set_while;
  nodes after_cond = {0}, body_sinks = {0}, cond_sinks = {0}, none = {0};
  CUgraphNode set, node;
  CUgraph *bodies;
  /* cond in the parent, then the set kernel, then the WHILE node */
  if ((s = emit_region(b, g, c->regions[0], deps, &after_cond))) goto done;
  if ((s = add_set(b, g, ci, f, vals, sizes, np, 1, after_cond.v, after_cond.n, &set))) goto done;
  if ((s = add_conditional(b, g, ci, h, CU_GRAPH_COND_TYPE_WHILE, 1, &set, 1, &node, &bodies))) goto done;
  /* the body graph: body, cond again after all of body, set kernel again */
  if ((s = emit_region(b, bodies[0], c->regions[1], &none, &body_sinks))) goto done;
  if ((s = emit_region(b, bodies[0], c->regions[0], &body_sinks, &cond_sinks))) goto done;
  entry = 0;
  if ((s = add_set(b, bodies[0], ci, f, vals, sizes, np, 1, cond_sinks.v, cond_sinks.n, &set))) goto done;
  *out = node;
done:
  crec__free(after_cond.v);
  crec__free(body_sinks.v);
  crec__free(cond_sinks.v);
  return s;
}

static crec_status emit_if(builder *b, CUgraph g, uint32_t ci, const nodes *deps, CUgraphNode *out) {
  const crec__command *c = &b->p->commands[ci];
  const crec_program *p = b->p;
  crec_exec *e = b->e;
  bool has_else = p->regions[c->regions[1]].num_commands > 0;
  CUgraphConditionalHandle h = 0, h_else = 0;
  crec_status s = new_handle(b, g, ci, &h);
  if (!s && has_else && e->legacy_conditionals) s = new_handle(b, g, ci, &h_else);
  if (s) return s;
  CUdeviceptr pred = crec__range_addr(&e->cur, c->predicate);
  int legacy_else = has_else && e->legacy_conditionals;
  const void *vals[4] = {&h, &h_else, &legacy_else, &pred};
  const uint32_t sizes[4] = {8, 8, 4, 8};
  CUgraphNode set, node;
  CUgraph *bodies;
  if ((s = add_set(b, g, ci, e->state->set_if, vals, sizes, 4, 3, deps->v, deps->n, &set))) return s;
  if (!e->legacy_conditionals) {
    if ((s = add_conditional(b, g, ci, h, CU_GRAPH_COND_TYPE_IF, has_else ? 2 : 1, &set, 1, &node, &bodies))) return s;
    if ((s = emit_body(b, bodies[0], c->regions[0], ci))) return s;
    if (has_else && (s = emit_body(b, bodies[1], c->regions[1], ci))) return s;
    *out = node;
    return CREC_OK;
  }
  /* legacy: one IF node per body, in a chain (see emit_switch_ifs) */
  if ((s = add_conditional(b, g, ci, h, CU_GRAPH_COND_TYPE_IF, 1, &set, 1, &node, &bodies)) ||
      (s = emit_body(b, bodies[0], c->regions[0], ci)))
    return s;
  if (has_else) {
    CUgraphNode then_node = node;
    if ((s = add_conditional(b, g, ci, h_else, CU_GRAPH_COND_TYPE_IF, 1, &then_node, 1, &node, &bodies)) ||
        (s = emit_body(b, bodies[0], c->regions[1], ci)))
      return s;
  }
  *out = node;
  return CREC_OK;
}

/* A legacy switch: one IF node per branch, set by one set kernel per
 * CREC__SET_IFS_MAX branches that takes their handles as parameters. The set
 * kernels run first, one after another, so every one reads the index before
 * any branch (which may write it) runs; then the IF nodes run one after
 * another. Fanned out from the set kernel and joined by an empty node, IF
 * nodes of a switch in a while's cond region ran the wrong branches or never
 * finished, at random and mostly under load (H200, driver 580). */
static crec_status emit_switch_ifs(builder *b, CUgraph g, uint32_t ci, CUdeviceptr index, CUdeviceptr cases,
                                   const nodes *deps, CUgraphNode *out) {
  const crec__command *c = &b->p->commands[ci];
  crec_exec *e = b->e;
  int n = (int)c->num_regions;
  CUgraphConditionalHandle *hs = crec__calloc((size_t)n, sizeof *hs);
  if (!hs) return crec__oom(b->fn);
  crec_status s = CREC_OK;
  for (int i = 0; i < n && !s; i++) s = new_handle(b, g, ci, &hs[i]);
  CUgraphNode last = NULL;
  for (int first = 0; first < n && !s; first += CREC__SET_IFS_MAX) {
    int count = n - first < CREC__SET_IFS_MAX ? n - first : CREC__SET_IFS_MAX;
    CUgraphConditionalHandle group[CREC__SET_IFS_MAX] = {0};
    memcpy(group, hs + first, (size_t)count * sizeof *hs);
    const void *vals[6] = {group, &first, &count, &index, &cases, &n};
    const uint32_t sizes[6] = {sizeof group, 4, 4, 8, 8, 4};
    /* the first set kernel waits for the switch's dependencies, a later one for the set before it */
    CUgraphNode prev = last;
    s = add_set(b, g, ci, e->state->set_switch_ifs, vals, sizes, 6, 3, prev ? &prev : deps->v, prev ? 1 : deps->n,
                &last);
  }
  for (int i = 0; i < n && !s; i++) {
    CUgraphNode prev = last;
    CUgraph *bodies;
    if (!(s = add_conditional(b, g, ci, hs[i], CU_GRAPH_COND_TYPE_IF, 1, &prev, 1, &last, &bodies)))
      s = emit_body(b, bodies[0], c->regions[i], ci);
  }
  crec__free(hs);
  if (!s) *out = last;
  return s;
}

static crec_status emit_switch(builder *b, CUgraph g, uint32_t ci, const nodes *deps, CUgraphNode *out) {
  const crec__command *c = &b->p->commands[ci];
  crec_exec *e = b->e;
  int n = (int)c->num_regions;
  size_t need = c->case_values ? (size_t)n - 1 : 0;
  if (b->table_words + need > b->table_cap)
    return crec__error(CREC_ERR_INTERNAL, b->fn, "switch tables outgrew the %zu words counted for them", b->table_cap);
  /* the case table lives in the exec's table buffer */
  CUdeviceptr cases = 0;
  if (c->case_values && n > 1) {
    cases = b->cases + b->table_words * 4;
    memcpy(b->host_tables + b->table_words, c->case_values, (size_t)(n - 1) * 4);
    b->table_words += (size_t)(n - 1);
  }
  CUdeviceptr index = crec__range_addr(&e->cur, c->predicate);
  if (e->legacy_conditionals) return emit_switch_ifs(b, g, ci, index, cases, deps, out);
  CUgraphConditionalHandle h;
  CUgraphNode set, node;
  CUgraph *bodies;
  crec_status s;
  if ((s = new_handle(b, g, ci, &h))) return s;
  const void *vals[4] = {&h, &index, &cases, &n};
  const uint32_t sizes[4] = {8, 8, 8, 4};
  if ((s = add_set(b, g, ci, e->state->set_switch, vals, sizes, 4, 1, deps->v, deps->n, &set))) return s;
  if ((s = add_conditional(b, g, ci, h, CU_GRAPH_COND_TYPE_SWITCH, (unsigned)n, &set, 1, &node, &bodies))) return s;
  for (int i = 0; i < n; i++)
    if ((s = emit_body(b, bodies[i], c->regions[i], ci))) return s;
  *out = node;
  return CREC_OK;
}

/* ---- library commands ---- */

/* A traced command: its first capture becomes a child-graph node, or, when it is
 * a chain of kernel nodes, those kernels (inlined: a replay then sets kernel
 * nodes, which costs the driver far less than swapping a child graph). NCCL's
 * work stays a child graph: its captures hold resources of the communicator. */
static crec_status emit_traced(builder *b, CUgraph g, uint32_t ci, crec__handler *h, const nodes *deps,
                               CUgraphNode *out) {
  crec_exec *e = b->e;
  crec__trace *t;
  CUgraph first;
  crec_status s = crec__trace_create(e, ci, h, &t, &first, b->fn);
  if (s) {
    crec__handler_release(h);
    return s;
  }
  CUgraphNode node = NULL;
  crec__node *n = NULL;
  if (!e->trace_child_graphs && !b->p->commands[ci].coll)
    s = crec__trace_inline(e, t, g, deps->v, deps->n, &node, b->fn);
  if (!s && !node) CREC__CU_STEP(s, b->fn, NULL, b->cu, cuGraphAddChildGraphNode, &node, g, deps->v, deps->n, first);
  if (!s) s = new_node(b, NODE_TRACED, ci, &n);
  if (s) {
    crec__trace_free(e, t);
    return s;
  }
  n->node = node;
  n->ext = t;
  count_node(b);
  e->stats.traced_nodes++;
  e->stats.traced_inline += t->num_inline != 0;
  *out = node;
  return CREC_OK;
}

/* A custom command of a nodes handler: its create() adds kernel nodes in a chain. */
static crec_status emit_custom_nodes(builder *b, CUgraph g, uint32_t ci, crec__handler *h, const nodes *deps,
                                     CUgraphNode *out) {
  crec_exec *e = b->e;
  const crec_program *p = b->p;
  crec__custom_args a;
  crec_status s = crec__custom_args_make(p, &e->cur, ci, &a, b->fn);
  crec__custom_state *cs = s ? NULL : crec__calloc(1, sizeof *cs);
  if (!cs) {
    crec__handler_release(h);
    if (!s) s = crec__oom(b->fn);
    goto done;
  }
  cs->handler = h;
  crec_custom_context ctx = crec__custom_context(CREC__CUSTOM_RECORD, p, b->cu, e->state, ci, b->fn);
  ctx.graph = g;
  ctx.deps = deps->v;
  ctx.num_deps = deps->n;
  ctx.state = cs;
  const crec_custom_handler *hd = crec__handler_get(h);
  if ((s = crec__custom_run(&ctx, hd->create, hd->user, &a.call, "create"))) goto done;
  CUgraphNode exit;
  if (cs->num_nodes) {
    exit = cs->nodes[cs->num_nodes - 1];
  } else {
    /* a custom command that made no launch: an empty node orders what follows */
    CREC__CU_STEP(s, b->fn, NULL, b->cu, cuGraphAddEmptyNode, &exit, g, deps->v, deps->n);
    if (s) goto done;
  }
  crec__node *n;
  if ((s = new_node(b, NODE_CUSTOM, ci, &n))) goto done;
  n->node = exit;
  n->ext = cs;
  cs = NULL;
  count_node(b);
  *out = exit;
done:
  crec__custom_state_free(cs);
  crec__custom_args_free(&a);
  return s;
}

/* The blocks of 256 threads crec's copy and fill kernels take for `work` loop
 * steps: at most 1,024 (their loops stride over the rest). */
static uint32_t copy_kernel_blocks(uint64_t work) {
  uint64_t blocks = (work + 255) / 256;
  return blocks < 1 ? 1 : blocks > 1024 ? 1024 : (uint32_t)blocks;
}

uint32_t crec__copy_kernel_args(uint8_t *block, uint64_t dst, uint64_t src, uint64_t bytes) {
  memcpy(block, &dst, 8);
  memcpy(block + 8, &src, 8);
  memcpy(block + 16, &bytes, 8);
  return copy_kernel_blocks(((dst | src | bytes) & 15) == 0 ? bytes / 16 : bytes); /* as the kernel's loop */
}

uint32_t crec__fill_kernel_args(uint8_t *block, uint64_t dst, uint64_t count, uint32_t value, uint32_t size) {
  memcpy(block, &dst, 8);
  memcpy(block + 8, &count, 8);
  memcpy(block + 16, &value, 4);
  memcpy(block + 20, &size, 4);
  return copy_kernel_blocks(count);
}

void crec__copy_node_prepare(const crec_program *p, const crec__values *v, crec__node *n) {
  const crec__command *c = &p->commands[n->command];
  if (n->kind == NODE_COPY) {
    CUDA_MEMCPY3D d;
    crec__memcpy_desc(p, v, c, &d);
    n->grid[0] = crec__copy_kernel_args(n->param_block, d.dstDevice, d.srcDevice, d.WidthInBytes);
  } else {
    CUDA_MEMSET_NODE_PARAMS m;
    crec__memset_node_params(v, c, &m);
    n->grid[0] = crec__fill_kernel_args(n->param_block, m.dst, m.width, m.value, m.elementSize);
  }
  n->grid[1] = n->grid[2] = 1;
  n->block[0] = 256, n->block[1] = n->block[2] = 1;
  n->shared = 0;
}

/* A memcpy or memset node (`kind`) of command `ci`: a memcpy or memset, or a
 * collective that copies or zeroes. Inside a conditional body (`g` is not the
 * exec's graph) it is crec's copy or fill kernel instead (NODE_COPY, NODE_FILL),
 * a memcpy between device ranges or a memset: on an H100 (driver 580) the driver
 * refused to update a memcpy node there with new addresses, and a kernel node
 * takes them. A copy from or to host memory stays a memcpy node. */
static crec_status add_copy(builder *b, CUgraph g, uint32_t ci, crec__node_kind kind, const nodes *deps,
                            CUgraphNode *out) {
  const crec__command *c = &b->p->commands[ci];
  crec_exec *e = b->e;
  if (g != e->graph && kind == NODE_MEMCPY &&
      !crec__range_is_host(b->p, c->src) && !crec__range_is_host(b->p, c->dst))
    kind = NODE_COPY;
  else if (g != e->graph && kind == NODE_MEMSET)
    kind = NODE_FILL;
  crec__node *n;
  crec_status s = new_node(b, kind, ci, &n);
  if (s) return s;
  if (kind == NODE_COPY || kind == NODE_FILL) {
    /* 24 bytes of parameters: dst, src, bytes; or dst, count, value, size */
    n->param_block = crec__bump_alloc(&e->params, 24 + 4 * sizeof(void *));
    if (!n->param_block) return crec__oom(b->fn);
    n->param_ptrs = (void **)(n->param_block + 24);
    static const uint32_t offsets[2][4] = {{0, 8, 16, 0}, {0, 8, 16, 20}};
    for (int i = 0; i < (kind == NODE_COPY ? 3 : 4); i++) n->param_ptrs[i] = n->param_block + offsets[kind == NODE_FILL][i];
    n->func = kind == NODE_COPY ? e->state->copy_bytes : e->state->fill_elements;
    crec__copy_node_prepare(b->p, &e->cur, n);
    CUDA_KERNEL_NODE_PARAMS kp;
    crec__kernel_node_params(n, &kp);
    CREC__CU_TRY_COMMAND(b, ci, cuGraphAddKernelNode, &n->node, g, deps->v, deps->n, &kp);
  } else if (kind == NODE_MEMCPY) {
    CUDA_MEMCPY3D d;
    crec__memcpy_desc(b->p, &e->cur, c, &d);
    CREC__CU_TRY_COMMAND(b, ci, cuGraphAddMemcpyNode, &n->node, g, deps->v, deps->n, &d, e->ctx);
  } else {
    CUDA_MEMSET_NODE_PARAMS m;
    crec__memset_node_params(&e->cur, c, &m);
    CREC__CU_TRY_COMMAND(b, ci, cuGraphAddMemsetNode, &n->node, g, deps->v, deps->n, &m, e->ctx);
  }
  count_node(b);
  *out = n->node;
  return CREC_OK;
}

static crec_status emit_library(builder *b, CUgraph g, uint32_t ci, const nodes *deps, CUgraphNode *out) {
  const crec_program *p = b->p;
  const crec__command *c = &p->commands[ci];
  crec_exec *e = b->e;
  crec_status s;
  switch (c->kind) {
    case CREC_COMMAND_GEMM:
    case CREC_COMMAND_FFT:
    case CREC_COMMAND_CHOLESKY:
    case CREC_COMMAND_CONV:
      return emit_traced(b, g, ci, NULL, deps, out);
    case CREC_COMMAND_COLLECTIVE: {
      if (c->coll->start != CREC__NONE || (c->coll->degenerate && crec__degenerate_action(p, &e->cur, ci) ==
                                                                      CREC__DEGENERATE_NOTHING)) {
        /* a done, or an in-place single-rank all_reduce: only an ordering point */
        CREC__CU_TRY_COMMAND(b, ci, cuGraphAddEmptyNode, out, g, deps->v, deps->n);
        return CREC_OK;
      }
      if (!c->coll->degenerate) return emit_traced(b, g, ci, NULL, deps, out);
      /* single-rank groups copy send into recv; a permute that sends this rank nothing zeroes it */
      bool copy = crec__degenerate_action(p, &e->cur, ci) == CREC__DEGENERATE_COPY;
      return add_copy(b, g, ci, copy ? NODE_MEMCPY : NODE_MEMSET, deps, out);
    }
    case CREC_COMMAND_CUSTOM: {
      crec__handler *h;
      if ((s = crec__handler_acquire(p, ci, b->fn, &h))) return s;
      if (crec__handler_get(h)->kind == CREC_CUSTOM_TRACED) return emit_traced(b, g, ci, h, deps, out);
      return emit_custom_nodes(b, g, ci, h, deps, out);
    }
    case CREC_COMMAND_HOST: {
      if (p->regions[c->region].parent != CREC__NONE)
        return crec__error(CREC_ERR_UNSUPPORTED, b->fn,
                           "a host callback inside a while, if or switch cannot be recorded (CUDA conditional "
                           "bodies hold no host nodes); crec_run_eager() runs it");
      CUDA_HOST_NODE_PARAMS hp;
      memset(&hp, 0, sizeof hp);
      hp.fn = c->hostcb->fn;
      hp.userData = c->hostcb->user;
      if (c->hostcb->fn_buffers) {
        /* one table of addresses per node, fixed at record: an argument's could change
         * under a host node of an earlier launch that is still to run */
        for (size_t k = 0; k < c->num_ops; k++) {
          const crec__buffer *ob = &p->buffers[crec__index(c->ops[k].range.buffer.id)];
          if (ob->kind == CREC_BUFFER_ARGUMENT)
            return crec__error(CREC_ERR_UNSUPPORTED, b->fn,
                               "operand %zu is argument '%s'; a recorded host callback given its operands' "
                               "addresses (fn_buffers) takes temporaries and constants only, since a replay "
                               "cannot yet rebind the addresses of a host node (crec_run_eager() takes arguments)",
                               k, ob->name);
        }
        crec__host_call *hc = crec__bump_alloc(&b->e->params, crec__host_call_bytes(c));
        if (!hc) return crec__oom(b->fn);
        crec__host_call_fill(hc, &b->e->cur, c, false);
        hp.fn = crec__host_call_run;
        hp.userData = hc;
      }
      CREC__CU_TRY_COMMAND(b, ci, cuGraphAddHostNode, out, g, deps->v, deps->n, &hp);
      return CREC_OK;
    }
    default:
      return crec__error(CREC_ERR_INTERNAL, b->fn, "not a library command");
  }
}

/* ---- graph commands (record/embed.c) ---- */

/* The kernel node of flattened item `it` after `deps` (with `edges`, some of them
 * programmatic, or NULL): its relocated copy `x`'s parameters, or the template's. */
static crec_status add_flat_kernel(builder *b, CUgraph g, uint32_t ci, const crec__flat_item *it,
                                   const crec__import_node *x, const CUgraphNode *deps, const CUgraphEdgeData *edges,
                                   size_t nd, CUgraphNode *made) {
  CUDA_KERNEL_NODE_PARAMS kp;
  memset(&kp, 0, sizeof kp);
  size_t extra_size = x ? x->extra_size : 0;
  void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, x ? x->block : NULL, CU_LAUNCH_PARAM_BUFFER_SIZE, &extra_size,
                   CU_LAUNCH_PARAM_END};
  if (x) {
    kp = x->kp;
    if (extra_size) kp.kernelParams = NULL, kp.extra = extra;
  } else {
    /* as captured: the driver's copy of its parameters, valid while the template's node is */
    CREC__CU_TRY_COMMAND(b, ci, cuGraphKernelNodeGetParams, it->node, &kp);
    /* a library's CUkernel: its function in this context (the import's, checked above) */
    if (!kp.func && kp.kern) CREC__CU_TRY_COMMAND(b, ci, cuKernelGetFunction, &kp.func, kp.kern);
    kp.kern = NULL;
  }
  crec_status s = add_kernel_node(b, g, ci, deps, edges, nd, &kp, made);
  if (s) return s;
  /* the launch's attributes as captured (a cluster, a priority, ...) */
  if (it->node) CREC__CU_TRY_COMMAND(b, ci, cuGraphKernelNodeCopyAttributes, *made, it->node);
  return CREC_OK;
}

/* Why item `it` cannot be made inside a conditional body, or NULL. */
static const char *body_refusal(const crec__flat_item *it, const crec__import_node *in) {
  switch (it->type) {
    case CU_GRAPH_NODE_TYPE_KERNEL:
    case CU_GRAPH_NODE_TYPE_EMPTY:
      return NULL;
    case CU_GRAPH_NODE_TYPE_MEMCPY:
      if (!in) return NULL;
      if (in->copy.Height > 1 || in->copy.Depth > 1 || in->copy.srcXInBytes || in->copy.dstXInBytes ||
          in->copy.srcY || in->copy.dstY || in->copy.srcZ || in->copy.dstZ || in->copy.srcMemoryType == CU_MEMORYTYPE_HOST ||
          in->copy.dstMemoryType == CU_MEMORYTYPE_HOST || in->copy.srcMemoryType == CU_MEMORYTYPE_ARRAY ||
          in->copy.dstMemoryType == CU_MEMORYTYPE_ARRAY)
        return "a copy that is not one range of device memory to another, whose rebinding crec's copy kernel "
               "cannot take over";
      return NULL;
    case CU_GRAPH_NODE_TYPE_MEMSET:
      if (in && in->set.height > 1) return "a 2-D fill, whose rebinding crec's fill kernel cannot take over";
      return NULL;
    case CU_GRAPH_NODE_TYPE_HOST: return "a host node, which CUDA's conditional bodies cannot hold";
    default: return "a node CUDA's conditional bodies cannot hold";
  }
}

/* Keeps node `node` of graph command `ci`, which no replay updates, for profiles. */
static crec_status embedded(builder *b, uint32_t ci, CUgraphNode node) {
  crec_exec *e = b->e;
  if (e->num_embedded == e->cap_embedded && CREC__RESERVE(e->embedded, e->cap_embedded, e->num_embedded + 1) != CREC_OK)
    return crec__oom(b->fn);
  e->embedded[e->num_embedded++] = (crec__cond){.node = node, .command = ci};
  return CREC_OK;
}

/* One item of a flattened imported graph, after `deps`. A relocated node becomes
 * a NODE_IMPORTED node of the exec, with its own copy of its import node. */
static crec_status add_flat(builder *b, CUgraph g, uint32_t ci, const crec__flat_item *it, const CUgraphNode *deps,
                            const CUgraphEdgeData *edges, size_t nd, CUgraphNode *made) {
  crec_exec *e = b->e;
  const crec__command *c = &b->p->commands[ci];
  bool body = g != e->graph;
  const char *no = body ? body_refusal(it, it->in) : NULL;
  if (no)
    return crec__error(CREC_ERR_UNSUPPORTED, b->fn,
                       "node %s of the imported graph is %s (%s), inside a while, if or switch; capture that work "
                       "outside the loop or branch, or without it", it->label, no,
                       crec__graph_node_type_name(it->type));
  crec__import_node *x = NULL;
  crec_status s = CREC_OK;
  if (it->in) {
    uint8_t as = !body                                   ? CREC__AS_NODE
                 : it->type == CU_GRAPH_NODE_TYPE_MEMCPY ? CREC__AS_COPY
                 : it->type == CU_GRAPH_NODE_TYPE_MEMSET ? CREC__AS_FILL
                                                         : CREC__AS_NODE;
    CUfunction func = as == CREC__AS_COPY ? e->state->copy_bytes : as == CREC__AS_FILL ? e->state->fill_elements : NULL;
    if ((s = crec__flat_node(e, c, it->in, as, func, &x, b->fn))) return s;
    crec__import_prepare(x, &e->cur);
  }
  switch (it->type) {
    case CU_GRAPH_NODE_TYPE_KERNEL:
      s = add_flat_kernel(b, g, ci, it, x, deps, edges, nd, made);
      break;
    case CU_GRAPH_NODE_TYPE_MEMCPY: {
      if (x && x->as_kernel) {
        CREC__CU_STEP(s, b->fn, it->label, b->cu, cuGraphAddKernelNode, made, g, deps, nd, &x->kp);
        break;
      }
      CUDA_MEMCPY3D d;
      if (x) d = x->copy;
      else CREC__CU_STEP(s, b->fn, it->label, b->cu, cuGraphMemcpyNodeGetParams, it->node, &d);
      if (!s && body && (d.srcMemoryType == CU_MEMORYTYPE_HOST || d.dstMemoryType == CU_MEMORYTYPE_HOST))
        return crec__error(CREC_ERR_UNSUPPORTED, b->fn,
                           "node %s of the imported graph is a copy to or from host memory, inside a while, if or "
                           "switch (CUDA's conditional bodies copy device memory); capture that work outside the "
                           "loop or branch", it->label);
      if (!s) CREC__CU_STEP(s, b->fn, it->label, b->cu, cuGraphAddMemcpyNode, made, g, deps, nd, &d, e->ctx);
      break;
    }
    case CU_GRAPH_NODE_TYPE_MEMSET: {
      if (x && x->as_kernel) {
        CREC__CU_STEP(s, b->fn, it->label, b->cu, cuGraphAddKernelNode, made, g, deps, nd, &x->kp);
        break;
      }
      CUDA_MEMSET_NODE_PARAMS m;
      if (x) m = x->set;
      else CREC__CU_STEP(s, b->fn, it->label, b->cu, cuGraphMemsetNodeGetParams, it->node, &m);
      if (!s) CREC__CU_STEP(s, b->fn, it->label, b->cu, cuGraphAddMemsetNode, made, g, deps, nd, &m, e->ctx);
      break;
    }
    case CU_GRAPH_NODE_TYPE_EMPTY:
      CREC__CU_STEP(s, b->fn, it->label, b->cu, cuGraphAddEmptyNode, made, g, deps, nd);
      break;
    case CU_GRAPH_NODE_TYPE_HOST: {
      CUDA_HOST_NODE_PARAMS hp;
      CREC__CU_STEP(s, b->fn, it->label, b->cu, cuGraphHostNodeGetParams, it->node, &hp);
      if (!s) CREC__CU_STEP(s, b->fn, it->label, b->cu, cuGraphAddHostNode, made, g, deps, nd, &hp);
      break;
    }
    default:
      return crec__error(CREC_ERR_UNSUPPORTED, b->fn,
                         "node %s of the imported graph is a %s node; a graph command holds kernel, memcpy, memset, "
                         "host, empty and child graph nodes", it->label, crec__graph_node_type_name(it->type));
  }
  if (s) {
    char where[CREC__IMPORT_LABEL + 40];
    snprintf(where, sizeof where, "node %s of the imported graph", it->label);
    return crec__annotate(s, b->fn, where);
  }
  if (!x) return embedded(b, ci, *made);
  crec__node *n;
  if ((s = new_node(b, NODE_IMPORTED, ci, &n))) return s;
  n->node = *made;
  n->ext = x;
  n->func = x->kp.func;
  count_node(b);
  return CREC_OK;
}

/* A graph command: the imported exec's template graph, flattened, its nodes
 * added after `deps` in an order that follows its edges (programmatic ones kept
 * between kernels); its sinks joined by an empty node when there are several. */
static crec_status emit_graph(builder *b, CUgraph g, uint32_t ci, const nodes *deps, CUgraphNode *out) {
  crec_exec *e = b->e;
  const crec__command *c = &b->p->commands[ci];
  crec_exec *ie = c->graph->ref;
  if (ie->ctx != e->ctx)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, b->fn,
                       "the graph was imported in the CUDA context of another device than this record's; import it "
                       "on the device the program records for");
  pthread_mutex_lock(&ie->import->lock);
  crec__flat f;
  crec_status s = crec__flat_make(ie, &f, b->fn);
  CUgraphNode *made = s ? NULL : crec__calloc(f.num_items ? f.num_items : 1, sizeof *made);
  nodes in = {0}, sinks = {0};
  CUgraphEdgeData *data = NULL;
  size_t cap_data = 0;
  if (!s && !made) s = crec__oom(b->fn);
  for (size_t k = 0; k < f.num_items && !s; k++) {
    const crec__flat_item *it = &f.items[f.order[k]];
    const nodes *dv = deps;
    const CUgraphEdgeData *ed = NULL;
    if (it->num_in) {
      in.n = 0;
      bool special = false;
      for (uint32_t q = 0; q < it->num_in && !s; q++) {
        s = push(b, &in, made[f.in_from[it->first_in + q]]);
        special |= f.in_data[it->first_in + q].type != CU_GRAPH_DEPENDENCY_TYPE_DEFAULT ||
                   f.in_data[it->first_in + q].from_port != 0;
      }
      if (s) break;
      if (special && it->type == CU_GRAPH_NODE_TYPE_KERNEL) {
        if (cap_data < it->num_in && CREC__RESERVE(data, cap_data, it->num_in) != CREC_OK) {
          s = crec__oom(b->fn);
          break;
        }
        memcpy(data, f.in_data + it->first_in, it->num_in * sizeof *data);
        for (uint32_t q = 0; q < it->num_in; q++) e->stats.programmatic_edges += data[q].type == CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC;
        ed = data;
      }
      dv = &in;
    }
    s = add_flat(b, g, ci, it, dv->v, ed, dv->n, &made[f.order[k]]);
  }
  for (size_t i = 0; i < f.num_items && !s; i++)
    if (!f.items[i].has_out) s = push(b, &sinks, made[i]);
  if (!s && sinks.n == 1) {
    *out = sinks.v[0];
  } else if (!s) {
    CREC__CU_STEP(s, b->fn, NULL, b->cu, cuGraphAddEmptyNode, out, g, sinks.n ? sinks.v : deps->v,
                  sinks.n ? sinks.n : deps->n);
    if (!s) s = embedded(b, ci, *out);
  }
  pthread_mutex_unlock(&ie->import->lock);
  /* whole-graph updates cost every node of the imported graph, which the cost model does not count */
  e->whole_update_broken = true;
  crec__flat_free(&f);
  crec__free(made);
  crec__free(in.v);
  crec__free(sinks.v);
  crec__free(data);
  return s;
}

static crec_status emit_command(builder *b, CUgraph g, uint32_t ci, const nodes *deps, CUgraphNode *out) {
  const crec_program *p = b->p;
  const crec__command *c = &p->commands[ci];
  switch (c->kind) {
    case CREC_COMMAND_MEMCPY:
      return add_copy(b, g, ci, NODE_MEMCPY, deps, out);
    case CREC_COMMAND_MEMSET:
      return add_copy(b, g, ci, NODE_MEMSET, deps, out);
    case CREC_COMMAND_BARRIER:
      /* across ranks: the captured all_reduce is the node later commands wait for */
      if (c->coll && !c->coll->degenerate) return emit_traced(b, g, ci, NULL, deps, out);
      CREC__CU_TRY_COMMAND(b, ci, cuGraphAddEmptyNode, out, g, deps->v, deps->n);
      return CREC_OK;
    case CREC_COMMAND_WHILE:
      return emit_while(b, g, ci, deps, out);
    case CREC_COMMAND_IF:
      return emit_if(b, g, ci, deps, out);
    case CREC_COMMAND_SWITCH:
      return emit_switch(b, g, ci, deps, out);
    case CREC_COMMAND_GEMM:
    case CREC_COMMAND_FFT:
    case CREC_COMMAND_CHOLESKY:
    case CREC_COMMAND_CONV:
    case CREC_COMMAND_COLLECTIVE:
    case CREC_COMMAND_CUSTOM:
    case CREC_COMMAND_HOST:
      return emit_library(b, g, ci, deps, out);
    case CREC_COMMAND_GRAPH:
      return emit_graph(b, g, ci, deps, out);
    case CREC_COMMAND_LAUNCH:
      /* emit_region() adds launches itself, with their nodes prepared first */
      return crec__error(CREC_ERR_INTERNAL, b->fn, "a launch reached emit_command()");
    default:
      return crec__error(CREC_ERR_UNSUPPORTED, b->fn, "%s commands cannot be recorded yet",
                         crec_command_kind_name(c->kind));
  }
}

/* A failure of command `ci` on its way up: its label added to the message, once
 * (a message that names the command already keeps its words). */
static crec_status annotate(const builder *b, uint32_t ci, crec_status s) {
  if (s == CREC_OK) return s;
  char label[160];
  return crec__annotate(s, b->fn, crec__command_label(b->p, ci, label, sizeof label));
}

/* The edge data of launch `ci`'s dependencies (its plan's, in order), which has
 * CREC_LAUNCH_EARLY_START on a device that has programmatic dependent launch:
 * programmatic from a launch (whose exit is its kernel node: it may start as that
 * kernel's blocks finish, and waits for the rest with griddepcontrol.wait), plain
 * from anything else. Counted in the exec's stats. */
static crec_status early_edges(builder *b, uint32_t ci, CUgraphEdgeData **edges, size_t *cap) {
  const crec_program *p = b->p;
  const crec_plan *plan = b->e->plan;
  uint32_t d0 = plan->dep_start[ci], d1 = plan->dep_start[ci + 1];
  if (*cap < d1 - d0 && CREC__RESERVE(*edges, *cap, d1 - d0) != CREC_OK) return crec__oom(b->fn);
  for (uint32_t d = d0; d < d1; d++) {
    CUgraphEdgeData *ed = &(*edges)[d - d0];
    memset(ed, 0, sizeof *ed);
    if (p->commands[crec__index(plan->deps[d].id)].kind != CREC_COMMAND_LAUNCH) continue;
    ed->type = CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC;
    ed->from_port = CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC;
    b->e->stats.programmatic_edges++;
  }
  return CREC_OK;
}

/* Emits a region's commands into `g`; commands without dependencies hang off
 * `ext`. Writes the exit nodes nothing else in the region waits for to `sinks`
 * (or `ext` itself for an empty region). */
static crec_status emit_region(builder *b, CUgraph g, uint32_t region, const nodes *ext, nodes *sinks) {
  const crec_program *p = b->p;
  const crec__region *r = &p->regions[region];
  const crec_plan *plan = b->e->plan;
  crec_status s = CREC_OK;
  sinks->n = 0;
  if (r->num_commands == 0) {
    for (size_t i = 0; i < ext->n && !s; i++) s = push(b, sinks, ext->v[i]);
    return s;
  }
  nodes deps = {0};
  CUgraphEdgeData *edges = NULL; /* a launch's dependencies' edge data (early start) */
  size_t cap_edges = 0;
  /* waited[k]: command at position k is a dependency of a later one (known
   * already for a plain program's body); kernel[k]: the node prepared for the
   * launch at position k */
  const uint8_t *known = region == 0 && b->built ? b->built->waited : NULL;
  uint8_t *waited = known ? NULL : crec__calloc(r->num_commands, 1);
  uint32_t *kernel = crec__malloc(r->num_commands * sizeof *kernel);
  if ((!known && !waited) || !kernel) s = crec__oom(b->fn);
  /* Two passes: crec's bookkeeping of every launch first, in one tight loop,
   * then the driver's calls, so that the driver's work does not evict what the
   * next node's bookkeeping reads. crec_bench_replay's record section, build
   * phase at 1,000 nodes, 3 runs side by side on an H200: 0.64-0.65 ms this
   * way, 0.66-0.73 ms interleaved (hand-built 0.48-0.53 ms). */
  for (size_t k = 0; k < r->num_commands && !s; k++) {
    uint32_t ci = r->commands[k];
    if (!known)
      for (uint32_t d = plan->dep_start[ci]; d < plan->dep_start[ci + 1]; d++)
        waited[p->commands[crec__index(plan->deps[d].id)].index_in_region] = 1;
    kernel[k] = UINT32_MAX;
    if (p->commands[ci].kind == CREC_COMMAND_LAUNCH) s = prepare_kernel(b, ci, &kernel[k]);
  }
  for (size_t k = 0; k < r->num_commands && !s; k++) {
    uint32_t ci = r->commands[k];
    uint32_t d0 = plan->dep_start[ci], d1 = plan->dep_start[ci + 1];
    deps.n = 0;
    for (uint32_t d = d0; d < d1 && !s; d++) s = push(b, &deps, b->exits[crec__index(plan->deps[d].id)]);
    if (s) break;
    const nodes *dv = d0 == d1 ? ext : &deps;
    bool early = kernel[k] != UINT32_MAX && d0 != d1 && b->e->state->major >= 9 &&
                 (p->commands[ci].launch_flags & CREC_LAUNCH_EARLY_START);
    if (early && (s = early_edges(b, ci, &edges, &cap_edges))) break;
    s = kernel[k] != UINT32_MAX ? add_kernel(b, g, ci, kernel[k], dv->v, early ? edges : NULL, dv->n, &b->exits[ci])
                                : emit_command(b, g, ci, dv, &b->exits[ci]);
    s = annotate(b, ci, s);
  }
  for (size_t k = 0; k < r->num_commands && !s; k++)
    if (!(known ? known[k] : waited[k])) s = push(b, sinks, b->exits[r->commands[k]]);
  crec__free(waited);
  crec__free(kernel);
  crec__free(deps.v);
  crec__free(edges);
  return s;
}

/* What the table buffer holds: the iteration counts of limited loops and the
 * words of the case tables. */
static void count_tables(const crec_exec *e, size_t *times, size_t *counts, size_t *case_words) {
  /* A while's cond region is emitted twice (before the loop and in its body),
   * so a switch or loop inside it, at any depth, is emitted as often as its
   * enclosing cond regions multiply; each emission takes its own words. A parent
   * command comes before anything in its regions, so one pass in creation order works. */
  const crec_program *p = e->program;
  size_t w = 0, n = 0;
  for (size_t ci = 0; ci < p->num_commands; ci++) {
    const crec__command *c = &p->commands[ci];
    const crec__region *r = &p->regions[c->region];
    times[ci] = 1;
    if (r->parent != CREC__NONE) {
      const crec__command *pc = &p->commands[r->parent];
      times[ci] = times[r->parent] * (pc->kind == CREC_COMMAND_WHILE && r->role == CREC_REGION_COND ? 2 : 1);
    }
    if (c->kind == CREC_COMMAND_SWITCH && c->case_values) w += times[ci] * (c->num_regions - 1);
    if (c->kind == CREC_COMMAND_WHILE && crec__loop_limit(e, c)) n += times[ci];
  }
  *counts = n;
  *case_words = w;
}

/* The builder's arrays, and the exec's tables for `counts` loop counts and
 * `words` words of switch case tables: one device allocation (counts first,
 * then the cases), and the loop-limit report in mapped host memory. */
static crec_status alloc_tables(builder *b, size_t counts, size_t words, const char *fn) {
  crec_exec *e = b->e;
  const crec_program *p = b->p;
  crec_status s = CREC_OK;
  b->table_cap = words;
  b->counts_cap = counts;
  b->exits = crec__calloc(p->num_commands ? p->num_commands : 1, sizeof *b->exits);
  b->host_tables = words ? crec__calloc(words, sizeof *b->host_tables) : NULL;
  /* a node per command, most often: the table grows once, not once per doubling */
  if (!b->exits || (words && !b->host_tables) ||
      CREC__RESERVE(e->nodes, e->cap_nodes, p->num_commands + 1) != CREC_OK) {
    return crec__oom(fn);
  }
  if (words || counts) {
    CREC__CU_STEP(s, fn, "loop counts and switch tables", e->cu, cuMemAlloc, &e->tables, counts * 8 + words * 4);
    if (s) {
      e->tables = 0;
      return s;
    }
    CREC__CUDA_LIVE(1);
    b->cases = e->tables + counts * 8;
  }
  if (counts) {
    /* where a loop that reaches its limit says so: host memory the kernel writes */
    void *h = NULL;
    CREC__CU_STEP(s, fn, "the loop-limit report", e->cu, cuMemHostAlloc, &h, 4, CU_MEMHOSTALLOC_DEVICEMAP);
    if (s) return s;
    CREC__CUDA_LIVE(1);
    e->tripped = h;
    *e->tripped = 0;
    CREC__CU_STEP(s, fn, "the loop-limit report", e->cu, cuMemHostGetDevicePointer, &e->tripped_dev, h, 0);
    if (s) return s;
  }
  return CREC_OK;
}

crec_status crec__build_graph(crec_exec *e, const char *fn) {
  const crec_program *p = e->program;
  builder b = {.e = e, .p = p, .cu = e->cu, .fn = fn};
  crec__runtime *rt = p->runtime;
  int which = e->plan == rt->plan ? 0 : 1;
  bool plain = rt->plain && !e->import;
  b.built = plain ? __atomic_load_n(&rt->built[which], __ATOMIC_ACQUIRE) : NULL;
  crec_status s = b.built ? CREC_OK : uses_begin(&b.uses, e, e->import ? e->import->num_nodes : p->num_commands, fn);
  if (s) {
    uses_free(&b.uses);
    return s;
  }
  if (e->import) {
    if (!(s = crec__import_build(e, fn)))
      for (uint32_t ni = 0; ni < e->num_nodes; ni++) node_uses(&b.uses, ni);
    if (!s) return uses_finish(&b.uses, fn);
    uses_free(&b.uses);
    return s;
  }
  /* loop counts and case tables: only control flow has them */
  size_t words = 0, counts = 0;
  if (p->runtime->control) {
    size_t *times = crec__malloc(p->num_commands * sizeof *times);
    if (!times) {
      uses_free(&b.uses);
      return crec__oom(fn);
    }
    count_tables(e, times, &counts, &words);
    crec__free(times);
  }
  if ((s = alloc_tables(&b, counts, words, fn))) goto done;
  CREC__CU_STEP(s, fn, NULL, e->cu, cuGraphCreate, &e->graph, 0);
  if (s) {
    e->graph = NULL;
    goto done;
  }
  CREC__CUDA_LIVE(1);
  nodes none = {0}, head = {0}, sinks = {0};
  if (e->device_updates) {
    if ((s = add_updater(&b, e->graph))) goto done;
    head.v = &e->updater;
    head.n = 1;
  }
  s = emit_region(&b, e->graph, 0, e->updater ? &head : &none, &sinks);
  crec__free(sinks.v);
  if (s) goto done;
  if (words) {
    CREC__CU_STEP(s, fn, "switch tables", e->cu, cuMemcpyHtoD, b.cases, b.host_tables, words * 4);
    /* finished before any launch on a non-blocking stream reads the tables */
    CREC__CU_STEP(s, fn, "switch tables", e->cu, cuStreamSynchronize, NULL);
    if (s) goto done;
  }
  if (b.built) {
    if (e->num_nodes != b.built->num_nodes) {
      s = crec__error(CREC_ERR_INTERNAL, fn, "the graph has %zu nodes, an earlier record of this program %zu",
                      e->num_nodes, b.built->num_nodes);
      goto done;
    }
    e->buffer_uses = b.built->uses[0], e->scalar_uses = b.built->uses[1], e->comm_uses = b.built->uses[2];
  } else if (!(s = uses_finish(&b.uses, fn)) && plain) {
    s = publish_built(e, rt, which, fn);
  }
done:
  uses_free(&b.uses);
  crec__free(b.exits);
  crec__free(b.host_tables);
  return s;
}

crec_status crec__build_into(const crec_exec *e, const crec__values *v, CUgraph g, const CUgraphNode *deps, size_t nd,
                             CUgraphNode **sinks_out, size_t *num_sinks, const char *fn) {
  *sinks_out = NULL;
  *num_sinks = 0;
  const crec_program *p = e->program;
  /* a copy of the exec that builds into `g`: its own node table, conditional list and
   * parameter memory (the driver copies what a node is made with), dropped at the end;
   * the tables of loop counts and switch cases are the exec's, filled in the same order */
  crec_exec *t = crec__malloc(sizeof *t);
  if (!t) return crec__oom(fn);
  *t = *e;
  t->nodes = NULL, t->num_nodes = t->cap_nodes = 0;
  t->conds = NULL, t->num_conds = t->cap_conds = 0;
  t->embedded = NULL, t->num_embedded = t->cap_embedded = 0;
  t->graph = g;
  t->cur = *v;
  memset(&t->params, 0, sizeof t->params);
  t->updater = NULL, t->device_updates = false;
  memset(&t->stats, 0, sizeof t->stats);
  builder b = {.e = t, .p = p, .cu = e->cu, .fn = fn};
  size_t words = 0, counts = 0;
  crec_status s = uses_begin(&b.uses, t, p->num_commands, fn);
  if (!s && p->runtime->control) {
    size_t *times = crec__malloc(p->num_commands * sizeof *times);
    if (!times) s = crec__oom(fn);
    else count_tables(e, times, &counts, &words);
    crec__free(times);
  }
  b.table_cap = words, b.counts_cap = counts;
  b.cases = e->tables + counts * 8;
  b.exits = s ? NULL : crec__calloc(p->num_commands ? p->num_commands : 1, sizeof *b.exits);
  b.host_tables = s || !words ? NULL : crec__calloc(words, sizeof *b.host_tables);
  if (!s && (!b.exits || (words && !b.host_tables))) s = crec__oom(fn);
  nodes ext = {(CUgraphNode *)deps, nd, 0}, sinks = {0};
  if (!s) s = emit_region(&b, g, 0, &ext, &sinks);
  if (!s) {
    *sinks_out = sinks.v;
    *num_sinks = sinks.n;
  } else {
    crec__free(sinks.v);
  }
  uses_free(&b.uses);
  crec__free(b.exits);
  crec__free(b.host_tables);
  crec__free(t->nodes);
  crec__free(t->conds);
  crec__free(t->embedded);
  crec__bump_free(&t->params);
  crec__free(t);
  return s;
}
