/* The exec's internal structures (docs/architecture.md): its nodes, traced
 * commands' caches, and the exec itself; recording builds them (record/),
 * replay/ uses them for each execution (replay_internal.h). Nothing here is
 * replay's: record/ calls nothing in replay/. */
#ifndef CREC_RECORD_EXEC_INTERNAL_H
#define CREC_RECORD_EXEC_INTERNAL_H

#include "runtime_internal.h"

/* A driver call made for command `ci` by `w`, a graph builder or an eager runner
 * (any struct with members `fn`, `p` and `cu`): a failure returns from the
 * calling function with CREC__CU_TRY's message, its context the command's label. */
#define CREC__CU_TRY_COMMAND(w, ci, name, ...)                                                         \
  do {                                                                                                 \
    char label_[160];                                                                                  \
    CREC__CU_TRY((w)->fn, crec__command_label((w)->p, ci, label_, sizeof label_), (w)->cu, name,      \
                 __VA_ARGS__);                                                                         \
  } while (0)

/* ---- a recorded execution ---- */

/* What a graph node does, for updates. */
typedef enum crec__node_kind {
  NODE_KERNEL,  /* a launch command */
  NODE_MEMCPY,  /* a memcpy command, or a degenerate collective copying */
  NODE_MEMSET,  /* a memset command, or a degenerate permute zeroing */
  NODE_COPY,    /* a memcpy command between device ranges inside a conditional body: crec's copy
                   kernel (the driver keeps a memcpy node's addresses there), parameters in param_block */
  NODE_FILL,    /* a memset command inside a conditional body: crec's fill kernel, likewise */
  NODE_SET,     /* a set-condition kernel of a control-flow command: only its
                   predicate/index pointer (at pred_offset) follows the bindings */
  NODE_TRACED,  /* the child graph of a traced command; ext is its crec__trace */
  NODE_CUSTOM,  /* the kernel nodes of a custom command; ext is its crec__custom_state */
  NODE_IMPORTED /* a node of an imported graph with relocations; ext is its crec__import_node */
} crec__node_kind;

typedef struct crec__node {
  CUgraphNode node;
  uint32_t command;        /* program command index */
  crec__node_kind kind;
  bool template_stale;     /* updated in the exec per node; the template graph not yet */
  uint32_t pred_offset;    /* NODE_SET: offset of the condition pointer in param_block */
  uint32_t grid[3], block[3], shared; /* NODE_KERNEL: dims of the pending update */
  bool dims_from_scalars;  /* NODE_KERNEL: some dim follows a scalar (else fixed at record) */
  CUfunction func;         /* NODE_KERNEL, NODE_SET */
  void **param_ptrs;       /* NODE_KERNEL, NODE_SET: pointers into param_block */
  uint8_t *param_block;
  void *ext;               /* NODE_TRACED, NODE_CUSTOM: their state */
  bool device_path;        /* NODE_KERNEL: updated by the updater (device updates) */
  CUgraphDeviceNode dev;   /* its handle for the updater, read after instantiation */
} crec__node;

/* One entry of the device-side updater's table (kernels/updater.cu's crec_update):
 * new parameter bytes for one kernel node. */
typedef struct crec__update {
  CUgraphDeviceNode node;
  uint32_t offset, size;   /* in the node's parameter block */
  uint64_t value;          /* offset of the new bytes in the slot's values */
} crec__update;

/* A table the host fills for one replay: page-locked, read by the updater node
 * of that replay's launch; `done` is recorded after the launch, and a slot is
 * filled again only once it completed. */
typedef struct crec__upd_slot {
  crec__update *entries;   /* host pointer; `entries_dev` the device's */
  uint8_t *values;
  CUdeviceptr entries_dev, values_dev;
  CUevent done;
  bool in_flight;
} crec__upd_slot;
#define CREC__UPD_SLOTS 4

/* The updater's control block (kernels/updater.cu's crec_upd_ctl), page-locked
 * and mapped: per slot its table's device addresses, written at record, and the
 * count of entries the host writes before each launch that runs the updater;
 * then the updater's runs that finished, which the device writes. */
typedef struct crec__upd_ctl {
  struct {
    CUdeviceptr entries, values;
    uint32_t count, pad;
  } slots[CREC__UPD_SLOTS];
  uint32_t done, pad;
} crec__upd_ctl;
/* The updater's grid: blocks of 256 threads that stride over the entries. */
#define CREC__UPD_BLOCKS 8

/* The host phases of a launch that crec_exec_profile() times (crec_profile_options' host_*_us). */
enum {
  CREC__PHASE_CHECKS,      /* binding checks, staging, node parameters */
  CREC__PHASE_PER_NODE,    /* updates on the host, node by node */
  CREC__PHASE_WHOLE,       /* a whole-graph update */
  CREC__PHASE_DEVICE,      /* device-side updates (with the host's per-node ones of that replay) */
  CREC__PHASE_LAUNCH,      /* cuGraphLaunch and what follows it */
  CREC__PHASES
};

/* Where a record's time went (crec_record's phases, for crec_bench_replay). */
enum {
  CREC__RECORD_CHECKS,      /* validation, the program's runtime, binding checks, the driver */
  CREC__RECORD_STATE,       /* the context (retained), CUPTI armed, the plan, the context's modules (loads and
                               JIT, the updater's), library plans */
  CREC__RECORD_BIND,        /* the first execution's values, the temporary arena */
  CREC__RECORD_BUILD,       /* building the graph and its node table */
  CREC__RECORD_INSTANTIATE, /* instantiating it (and the updater's tables and upload) */
  CREC__RECORD_PHASES
};

/* A conditional node of the graph and its bodies (driver-owned graphs, valid
 * while the node lives): what crec_exec_profile() walks to find the nodes of
 * bodies, which the driver has no getter for. */
typedef struct crec__cond {
  CUgraphNode node;
  uint32_t command;        /* the while, if or switch */
  CUgraph *bodies;         /* num_bodies */
  unsigned num_bodies;
  bool loop;               /* a WHILE node */
} crec__cond;

/* One captured child graph of a traced command, under the addresses it was captured with. */
typedef struct crec__trace_entry {
  CUgraph graph;
  uint64_t *key;   /* key_words words */
  uint64_t used;   /* tick of its last use: the least recently used is evicted */
  CUDA_KERNEL_NODE_PARAMS *kp; /* an inlined trace's: its kernels' parameters in chain order (num_inline;
                                  kernelParams point into `graph`'s nodes) */
} crec__trace_entry;

/* The most kernel nodes a capture may have to be inlined (crec__trace.inline_nodes). */
#define CREC__TRACE_INLINE_MAX 8

/* The cache of a traced command's captured graphs. */
typedef struct crec__trace {
  uint32_t command;
  crec__handler *handler;     /* traced custom commands */
  size_t key_words;
  crec__trace_entry *entries; /* num_entries <= cap_entries (the cache size) */
  size_t num_entries, cap_entries;
  size_t installed;           /* the entry the exec's node(s) hold now */
  /* Inlined: the first capture was a chain of kernel nodes joined by plain edges,
   * copied into the exec's graph as such (no child graph node); a replay sets
   * these from the entry's kp, each capture having to be the same chain of the
   * same kernels. Else num_inline is 0 and the exec holds a child graph node. */
  CUgraphNode inline_nodes[CREC__TRACE_INLINE_MAX];
  size_t num_inline;
  uint64_t tick;
  uint64_t *evicted;          /* hashes of recently evicted keys (a ring), to count re-captures */
  size_t num_evicted, cap_evicted, next_evicted;
} crec__trace;

/* A list of node indices per binding or scalar (CSR). */
typedef struct crec__uses {
  uint32_t *start; /* n + 1 */
  uint32_t *nodes;
} crec__uses;

/* ---- imported graphs (capture.c) ---- */

/* A word of a captured node that points into an argument: rewritten from the
 * argument's address at each replay. */
typedef struct crec__reloc {
  uint32_t offset;  /* kernel: byte offset in the parameter block; memcpy: 0 source, 1 destination; memset: 0 */
  uint32_t buffer;  /* the argument's buffer index */
  uint64_t delta;   /* bytes past the argument's address (interior pointers keep it) */
} crec__reloc;

/* Child graphs an import looks into, nested at most this deep; a node's label
 * ("3", "3.1.0": its position in the graph, then in each child graph) fits in
 * CREC__IMPORT_LABEL bytes. */
#define CREC__IMPORT_DEPTH 4
#define CREC__IMPORT_LABEL 64 /* 5 positions of 10 digits, their dots, the NUL */

/* A captured node with relocations, as captured. */
typedef struct crec__import_node {
  CUgraphNodeType type;         /* kernel, memcpy or memset */
  uint32_t index;               /* its place in the captured graph's node list (of its top-level child graph
                                   node's, inside one), for dumps */
  char label[CREC__IMPORT_LABEL]; /* its place, through child graphs: "3.1", for errors and dumps */
  uint8_t depth;                /* 0: a node of the graph; else inside that many nested child graphs */
  uint32_t path[CREC__IMPORT_DEPTH]; /* depth > 0: its position in each child graph below the top-level one */
  CUgraphNode top_original;     /* depth > 0: the top-level child graph node, in the captured graph */
  uint32_t child;               /* depth > 0: its entry in the exec's crec__import.children */
  CUgraphNode original;         /* in the captured graph */
  uint8_t added;                /* CREC__IMPORT_COPY_IN or _BACK: a copy node crec added (no `original`) */
  CUDA_KERNEL_NODE_PARAMS kp;   /* kernel: kernelParams become the node's param_ptrs */
  uint8_t *block;               /* kernel: the parameter bytes as captured (noise included) */
  void **ptrs;                  /* kernel: one per parameter, into `block` */
  uint32_t block_size, num_params;
  size_t extra_size;            /* kernel: nonzero when `block` is passed as one `extra` buffer of this size */
  CUDA_MEMCPY3D copy;           /* memcpy */
  CUDA_MEMSET_NODE_PARAMS set;  /* memset */
  crec__reloc *relocs;
  size_t num_relocs;
  uint8_t as_kernel;            /* a program's copy of a memcpy or memset inside a conditional body:
                                   CREC__AS_COPY or CREC__AS_FILL, crec's copy or fill kernel (kp, block, ptrs)
                                   whose parameters follow `copy` or `set` (the driver keeps a memcpy node's
                                   addresses there) */
} crec__import_node;
enum { CREC__AS_NODE, CREC__AS_COPY, CREC__AS_FILL };

/* A top-level child graph node of an imported exec whose nodes are rewritten:
 * a replay sets them in `graph` (the exec template's copy) and then updates
 * `node` in the executable graph from it, once. */
typedef struct crec__import_child {
  CUgraphNode node;             /* in the exec's template graph */
  CUgraph graph;                /* its child graph (the node's) */
  uint32_t index;               /* its place in the captured graph */
  bool pending;                 /* set in `graph` since the exec was last updated from it */
} crec__import_child;

/* Copy nodes an import adds for an argument it cannot follow (crec__import_node.added). */
enum { CREC__IMPORT_CAPTURED, CREC__IMPORT_COPY_IN, CREC__IMPORT_COPY_BACK };

/* How an import passes one argument (crec_exec_import_route()). */
typedef struct crec__import_arg {
  char *why;                    /* NULL: rebound; else copied, and why (owned) */
  size_t relocations;           /* words rewritten for it */
  bool copied_back;
} crec__import_arg;

/* Bytes replayed as the first capture had them (noise), the first few listed for dumps. */
#define CREC__IMPORT_NOISE_LISTED 64
typedef struct crec__import_noise {
  char label[CREC__IMPORT_LABEL]; /* the node's place */
  uint32_t param;               /* the kernel parameter; UINT32_MAX: an `extra` buffer */
  uint32_t offset, size;        /* in the node's parameter block */
} crec__import_noise;

/* What crec_graph_import() found in the captured graph: the exec clones
 * `source`, adds the copy nodes, and updates the nodes listed. */
typedef struct crec__import {
  CUgraph source;               /* the caller's; cloned by crec__build_graph */
  crec__import_node *nodes;     /* relocated nodes of the graph, then the copy nodes crec adds */
  size_t num_nodes;
  crec__import_arg *args;       /* per argument */
  size_t num_args, num_copied;
  crec__import_noise noise[CREC__IMPORT_NOISE_LISTED];
  size_t num_noise;
  uint64_t noise_bytes;
  size_t num_graph_nodes;       /* every node of the graph and of its child graphs, relocated or not */
  size_t num_edges;             /* the edges of the graph and of its child graphs */
  size_t num_programmatic;      /* of those, programmatic ones (kernels that use PDL), kept as captured */
  crec__import_child *children; /* the exec's, made by crec__import_build */
  size_t num_children;
  uint64_t *sizes;              /* per argument: the bytes the work was captured with */
  pthread_mutex_t lock;         /* held by a record that reads the exec's template graph for a graph command,
                                   and by a graph command's eager run that replays the exec (embed.c) */
} crec__import;

/* The edges of `g`: `*m` of them, from `(*from)[q]` to `(*to)[q]` with `(*data)[q]`
 * (the caller frees the three arrays, also on an error). */
crec_status crec__graph_edges(const crec__cu *cu, CUgraph g, const char *fn, const char *what, CUgraphNode **from,
                              CUgraphNode **to, CUgraphEdgeData **data, size_t *m);

/* ---- imported graphs as commands of a program (embed.c) ---- */

/* A graph command's crec__graphcmd.ref is its imported exec, which the program
 * holds: the exec lives until the program and its owner have both let it go
 * (crec_exec.holds). Its import's lock (crec__import.lock) serializes the
 * commands that share it. */

/* One node of an imported graph flattened for a program's graph: child graphs
 * are opened (an edge into one goes to its roots, an edge out of one leaves its
 * sinks), so what is left is nodes a conditional body may hold. */
typedef struct crec__flat_item {
  CUgraphNode node;              /* in the imported exec's template graph; NULL for an empty child graph */
  CUgraphNodeType type;          /* an empty child graph is an empty node */
  const crec__import_node *in;   /* its relocations, or NULL: made as captured */
  char label[CREC__IMPORT_LABEL]; /* its place through child graphs, "3.1.0" */
  uint32_t first_in, num_in;     /* its edges in crec__flat's in_from and in_data */
  bool has_out;                  /* some item waits for it */
} crec__flat_item;

typedef struct crec__flat {
  crec__flat_item *items;
  size_t num_items;
  uint32_t *in_from;             /* per edge, grouped by the item it goes into: the item it comes from */
  CUgraphEdgeData *in_data;      /* as captured between two nodes of one graph; plain into or out of a child graph */
  uint32_t *order;               /* the items in an order where each comes after those it waits for */
} crec__flat;

/* Flattens the template graph of imported exec `ie` into `*out` (the caller holds its import's lock,
 * and frees `*out` with crec__flat_free() also on an error). */
crec_status crec__flat_make(const crec_exec *ie, crec__flat *out, const char *fn);
void crec__flat_free(crec__flat *f);

/* Writes the relocations of imported node `in` from the values `v` (the
 * addresses of its arguments, or of a graph command's operands' buffers) into
 * its parameters: at record, and at each replay that moves them. */
void crec__import_prepare(crec__import_node *in, const crec__values *v);

/* Copies imported node `src` into the exec's parameter memory for graph command
 * `c` of the exec's program: its relocations then point into the command's
 * operands (program buffer indices, the operand's offset added). With `as`
 * (CREC__AS_COPY, _FILL) it is crec's copy or fill kernel `func`. */
crec_status crec__flat_node(crec_exec *e, const crec__command *c, const crec__import_node *src, uint8_t as,
                            CUfunction func, crec__import_node **out, const char *fn);

/* Frees what crec_graph_import() analysed (NULL is a no-op). */
void crec__import_free(crec__import *im);

/* Builds the graph of an exec of an imported graph (crec__build_graph for it). */
crec_status crec__import_build(crec_exec *e, const char *fn);

/* Records an exec as crec_record() does; with `import`, its graph is the
 * imported one (the program then holds only the arguments). */
crec_status crec__record(const crec_program *program, const crec_bindings *bindings,
                         const crec_record_options *options, crec__import *import, const char *fn,
                         crec_exec **out);

/* The most executable graphs one exec keeps (crec_record_options.variants). */
#define CREC__VARIANTS_MAX 16

/* What one executable graph of the exec holds: while it is the active one, these
 * live in the exec's own fields (exec, last, cur, next, comm_ids, poisoned, uploaded) and
 * its entry here is stale but for `used`; replay.c's variant_swap() trades them. */
typedef struct crec__variant {
  CUgraphExec exec;
  crec_binding *last;      /* per argument */
  uint64_t *comm_ids;      /* per communicator slot */
  void *block;             /* owns last and comm_ids (NULL: the exec's slab does) */
  crec__values cur, next;
  bool poisoned;
  bool uploaded;
  uint64_t used;           /* tick of its last launch: the least recently launched is updated */
} crec__variant;

struct crec_exec {
  int holds;               /* programs that hold it (graph commands): crec_exec_destroy() by its owner, or by
                              the last of them, frees it */
  crec_program *program;   /* retained */
  crec__import *import;    /* an imported graph's exec: owned */
  const crec_plan *plan;       /* the program's runtime's (crec__runtime_plan) */
  const crec__cu *cu;
  CUcontext ctx;
  crec__ctx_state *state;
  CUdeviceptr arena;
  CUdeviceptr host_arena;  /* page-locked, mapped: host temporaries (one address for host and device) */
  CUdeviceptr tables;      /* iteration counts of limited loops (8 bytes each), then switch case tables */
  uint64_t loop_default;   /* crec_record_options.max_loop_iterations */
  volatile uint32_t *tripped; /* mapped host memory: command index + 1 of a loop stopped at its limit */
  CUdeviceptr tripped_dev;
  CUgraph graph;
  CUgraphExec exec;
  bool uploaded;           /* exec was launched or uploaded: on driver 13.0 an executable graph whose nodes
                              are set before its first upload runs slower at every launch after (measured on
                              an H200: +24% for a chain of 1,000 tiny kernels), so a replay that updates
                              first uploads it (replay.c) */
  crec__node *nodes;
  size_t num_nodes, cap_nodes;
  crec__cond *conds;       /* every conditional node, in creation order */
  size_t num_conds, cap_conds;
  crec__cond *embedded;    /* the nodes of graph commands that no replay updates (bodies unused): whose
                              command they are, for profiles */
  size_t num_embedded, cap_embedded;
  crec__uses buffer_uses;  /* per buffer index */
  crec__uses scalar_uses;  /* per scalar index */
  crec__uses comm_uses;    /* per communicator slot */
  CUstream capture_stream; /* traced commands are captured on it */
  uint32_t trace_cache_size;
  bool trace_child_graphs; /* crec_record_options.trace_child_graphs: no traced command is inlined */
  CUgraph *graveyard;      /* evicted captured graphs, destroyed once launches before them finished */
  size_t num_graveyard, cap_graveyard;
  size_t graveyard_waiting; /* the first this many wait for retire_event */
  CUevent retire_event;
  void *slab;              /* one block for the per-slot arrays: required, last, changed, comm_*, bound*,
                              pending*, scalar_of_binding, schanged, size_scalars (record.c's bind_first) */
  void *slab_dirty;        /* dirty, dirty_mark, scalar_changed */
  void *slab_uses;         /* buffer_uses, scalar_uses, comm_uses; NULL when they are the runtime's (graph.c) */
  uint64_t *required;      /* per argument */
  crec__values cur;        /* values of the last execution */
  crec__values next;       /* staging for the replay being prepared */
  uint32_t *dirty;         /* node indices to update */
  uint8_t *dirty_mark;     /* per node */
  uint8_t *scalar_changed; /* per scalar, during one replay */
  crec_binding *last;      /* per argument: the binding of the last execution */
  uint64_t *comm_ids;      /* per communicator slot: id bound at the last execution */
  int *comm_rank, *comm_device; /* per communicator slot: what the graph was recorded for */
  uint32_t *changed;       /* argument indices that changed, during one replay */
  uint32_t *schanged;      /* scalar indices that changed, during one replay (flagged in scalar_changed) */
  size_t num_schanged;
  /* Bind as you go (crec_exec_bind_*): the slots as bound now, which are the
   * last execution's but for the pending ones, bound since the last launch. */
  crec_binding *bound;     /* per argument */
  crec_value *bound_scalars; /* per bound scalar */
  crec_comm **bound_comms; /* per communicator slot */
  uint32_t *pending;       /* argument indices bound since the last launch */
  size_t num_pending;
  uint32_t *pending_scalars; /* bound-scalar indices likewise */
  size_t num_pending_scalars;
  uint32_t *pending_comms; /* communicator slots likewise */
  size_t num_pending_comms;
  uint8_t *pending_mark;   /* per argument, then per bound scalar, then per slot: pending already */
  uint32_t *scalar_of_binding; /* per bound scalar: its scalar index */
  crec__uses size_scalars; /* per argument: the size scalars that follow its binding (CSR of scalar indices) */
  bool any_dynamic;        /* some argument has a dynamic size */
  crec__bump params;       /* every node's parameter block and pointers */
  uint32_t whole_update_percent; /* 0: update_strategy decides */
  crec_update_strategy update_strategy;
  crec_update_model model; /* what CREC_UPDATE_AUTO decides by (record/model.c) */
  bool whole_update_broken; /* the driver refused a whole-graph update once */
  bool legacy_conditionals; /* one IF node per branch (driver < 12.8, or forced) */
  crec_exec_stats stats;
  bool poisoned;           /* a CUDA update failed midway: resynchronize every node next time */
  bool eager_only;         /* no graph: every replay runs the program eagerly (no conditional nodes) */
  CUevent eager_event;     /* eager_only: recorded after each replay, waited for by the next */
  /* device-side updates (crec_record_options.device_updates) */
  bool device_updates;     /* asked for, and this chip runs the updater */
  CUgraphNode updater;     /* the head node of the graph, enabled only for launches with entries */
  bool updater_enabled;
  crec__upd_slot slots[CREC__UPD_SLOTS];
  crec__upd_ctl *upd_ctl;  /* host pointer; upd_ctl_dev the device's */
  CUdeviceptr upd_ctl_dev;
  CUdeviceptr upd_seq;     /* device memory: the updater's runs so far, and its blocks that finished this run */
  size_t next_slot;        /* the slot of the next run: runs so far modulo CREC__UPD_SLOTS, as the device counts */
  uint32_t upd_runs;       /* launches that ran the updater; while upd_ctl->done is behind, one may still write nodes */
  size_t upd_cap_entries, upd_cap_bytes; /* per slot: device-path nodes, their parameter bytes */
  size_t upd_count, upd_bytes; /* entries and bytes of the slot being filled (slots[next_slot]) */
  /* crec_exec_profile(): while set, each launch adds its host time by phase */
  bool phase_timing;
  bool profile_armed;      /* recorded with crec_record_options.profile: holds CUPTI's activities on */
  uint64_t phase_ns[CREC__PHASES];
  uint64_t phase_runs[CREC__PHASES]; /* launches that took each phase (an update phase: only replays that updated) */
  uint64_t record_ns[CREC__RECORD_PHASES]; /* what the record took, by phase */
  /* variants (crec_record_options.variants > 1): e->exec and the fields that
   * crec__variant lists are the active one's */
  crec__variant *variants; /* num_variants; NULL with one */
  uint32_t num_variants, active, last_launched;
  void *variant_block;     /* owns the active one's last and comm_ids (NULL: the slab does) */
  uint64_t variant_tick;
  CUevent order_event;     /* recorded after each launch; a launch on another stream waits for it */
  CUstream order_stream;   /* the stream of the last launch */
  bool order_recorded;
};

/* The iteration limit of while command `c` in `e` (0: none). */
static inline uint64_t crec__loop_limit(const crec_exec *e, const crec__command *c) {
  if (c->loop_limit == CREC_LOOP_UNLIMITED) return 0;
  return c->loop_limit ? c->loop_limit : e->loop_default;
}

/* Builds the graph of `e` (nodes, uses, conditional nodes). Used by crec_record. */
crec_status crec__build_graph(crec_exec *e, const char *fn);

/* Builds the program of `e` with the values `v` into graph `g` (someone else's
 * capture), after `deps`: its nodes belong to `g`, the exec's tables of loop
 * counts and switch cases are shared, and nothing of the exec changes. `*sinks`
 * (freed by the caller) gets the nodes nothing in the program waits for. The
 * exec has no traced or custom commands and no device-side updater. */
crec_status crec__build_into(const crec_exec *e, const crec__values *v, CUgraph g, const CUgraphNode *deps, size_t nd,
                             CUgraphNode **sinks, size_t *num_sinks, const char *fn);

/* Traced commands in an exec (traced.c). Captures command `ci` with the values
 * `v` into a new graph `*out`. */
crec_status crec__trace_capture(crec_exec *e, uint32_t ci, const crec__handler *h, const crec__values *v,
                                CUgraph *out, const char *fn);
/* At record: makes the cache of traced command `ci` holding its first capture
 * (with e->cur), returned in `*first` for the child node. */
crec_status crec__trace_create(crec_exec *e, uint32_t ci, crec__handler *h, crec__trace **out, CUgraph *first,
                               const char *fn);
/* At record, unless e->trace_child_graphs: when the first capture of `t` is a
 * chain of kernel nodes, adds those kernels to graph `g` after `deps` instead of
 * a child graph node (their attributes copied), sets t->inline_nodes, and returns
 * the last in `*exit`; else `*exit` is NULL and nothing was added. */
crec_status crec__trace_inline(crec_exec *e, crec__trace *t, CUgraph g, const CUgraphNode *deps, size_t nd,
                               CUgraphNode *exit, const char *fn);
/* At replay, for an inlined trace: sets its kernel nodes in the executable graph
 * from cache entry `entry` (whose parameters are read the first time: a capture
 * that is not the same chain of the same kernels is CREC_ERR_UNSUPPORTED). */
crec_status crec__trace_set_inline(crec_exec *e, crec__trace *t, size_t entry, const char *fn);
/* The cache key of traced command `ci` under `v`: each operand's address and
 * size, and the communicator (collectives and barriers across ranks). */
void crec__trace_key(const crec_program *p, const crec__values *v, uint32_t ci, uint64_t *key);
/* Destroys a cache and its graphs (the exec's context is current). */
void crec__trace_free(crec_exec *e, crec__trace *t);
/* After a launch: evicted graphs wait for an event recorded now; those whose
 * event completed are destroyed. `all` destroys every one (exec destroy). */
crec_status crec__graveyard_after_launch(crec_exec *e, CUstream stream, const char *fn);
void crec__graveyard_collect(crec_exec *e, bool all);

/* Custom commands in an exec: free what create() made. */
void crec__custom_state_free(crec__custom_state *cs);

/* The driver parameters of a kernel node, from the node's function, dims and
 * parameter block, for adding and for updating nodes (record/graph.c). */
void crec__kernel_node_params(const crec__node *n, CUDA_KERNEL_NODE_PARAMS *kp);
/* A NODE_COPY or NODE_FILL node's kernel parameters (in its param_block) and grid for
 * values `v`: from its memcpy's or memset's ranges (graph.c). */
void crec__copy_node_prepare(const crec_program *p, const crec__values *v, crec__node *n);
/* The parameters of crec's copy kernel (dst, src, bytes) and fill kernel (dst,
 * count, value, element size) into a 24-byte `block`; each returns its grid's blocks. */
uint32_t crec__copy_kernel_args(uint8_t *block, uint64_t dst, uint64_t src, uint64_t bytes);
uint32_t crec__fill_kernel_args(uint8_t *block, uint64_t dst, uint64_t count, uint32_t value, uint32_t size);

/* The cost model's defaults, set at record (record/model.c). */
extern const crec_update_model crec__default_update_model;
/* How a replay of `e` that changes `k` nodes, `k_dev` of them on the device
 * path, applies them: CREC_UPDATE_PER_NODE, _DEVICE or _WHOLE_GRAPH, by the
 * exec's update_strategy, whole_update_percent and cost model. */
crec_update_strategy crec__update_choice(const crec_exec *e, size_t k, size_t k_dev);

#endif
