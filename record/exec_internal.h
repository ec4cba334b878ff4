/* Internal structures of recording, replay and the eager executor. */
#ifndef CREC_RECORD_EXEC_INTERNAL_H
#define CREC_RECORD_EXEC_INTERNAL_H

#include <pthread.h>

#include "driver.h"
#include "plan_internal.h"

/* ---- per-context state of a program: loaded modules, constants ---- */

typedef struct crec__ctx_state {
  CUcontext ctx;
  CUmodule *modules;       /* per program module */
  CUfunction *functions;   /* per program kernel */
  CUdeviceptr *constants;  /* per buffer index; 0 for non-constants */
  CUmodule cond_module;    /* set-condition kernels (kernels/conditions.cu), loaded on demand */
  CUfunction set_while, set_while_limited, set_if, set_switch, set_switch_ifs, noop;
  void *lt;                        /* cublasLtHandle_t, made with the first GEMM plan */
  struct crec__gemm_plan **gemm;   /* per command: GEMM plans, made on first use (gemm.c) */
  struct crec__ctx_state *next;
} crec__ctx_state;

/* Branch handles one crec_set_switch_ifs kernel takes (CREC_SET_IFS_MAX in kernels/conditions.cu). */
#define CREC__SET_IFS_MAX 32

/* Hangs off crec_program.runtime: everything crec keeps per program for
 * execution, built lazily and shared by execs and eager runs under `lock`. */
typedef struct crec__runtime {
  pthread_mutex_t lock;
  const crec_program *program;
  crec_plan *plan;          /* default plan, for eager runs */
  uint64_t *required;       /* per argument binding: bytes the program touches */
  crec__ctx_state *states;
} crec__runtime;

/* Returns the program's runtime, creating it (and its plan) on first use. */
crec_status crec__runtime_get(const crec_program *p, const char *fn, crec__runtime **out);

/* Returns the state of the current context, loading modules (and every kernel
 * function in them, not lazily) and uploading constants on first use. The
 * context must be current on the calling thread. */
crec_status crec__ctx_state_get(const crec_program *p, const crec__cu *cu, crec__runtime *rt,
                                CUcontext ctx, const char *fn, crec__ctx_state **out);

/* Loads the set-condition kernels into `st` if not yet loaded (under the runtime lock). */
crec_status crec__load_conditions(const crec__cu *cu, crec__runtime *rt, crec__ctx_state *st,
                                  const char *fn);

/* Makes device `ordinal`'s primary context current (retaining it once per process). */
crec_status crec__use_device(const crec__cu *cu, int ordinal, const char *fn, CUcontext *ctx_out);

/* ---- values of one execution ---- */

typedef struct crec__values {
  CUdeviceptr *base;     /* per buffer: base address (binding, arena + offset, constant) */
  uint64_t *size;        /* per buffer: bound size (arguments) or declared size */
  crec_value *scalars;   /* per scalar, every kind */
  crec_comm **comms;     /* per communicator slot */
} crec__values;

/* Allocates the arrays of `v` for program `p`. */
crec_status crec__values_alloc(const crec_program *p, crec__values *v);
void crec__values_free(crec__values *v);

/* The parts of crec__check_bindings(): counts, NULL arrays and communicators;
 * one argument binding (NULL, size, alignment); the sizes that whole ranges of
 * dynamic-size arguments take from the bindings. */
crec_status crec__check_binding_shape(const crec_program *p, const crec_bindings *b, const char *fn);
crec_status crec__check_binding(const crec_program *p, const uint64_t *required, const crec_bindings *b,
                                size_t i, const char *fn);
crec_status crec__check_dynamic(const crec_program *p, const crec_bindings *b, const char *fn);

/* Checks `bindings` against the program (count, NULL, size, alignment) without
 * changing anything; messages name the binding. */
crec_status crec__check_bindings(const crec_program *p, const uint64_t *required,
                                 const crec_bindings *bindings, const char *fn);

/* Fills argument bases and sizes and bound/size scalars from `bindings` (already
 * checked), then runs every host function in order. `calls` counts them. */
crec_status crec__eval_bindings(const crec_program *p, const crec_bindings *bindings,
                                crec__values *v, uint64_t *calls, const char *fn);

/* The two halves of crec__eval_bindings(): copy what the bindings give, then run
 * the host functions over the scalars. */
void crec__fill_bindings(const crec_program *p, const crec_bindings *bindings, crec__values *v);
crec_status crec__run_host_fns(const crec_program *p, crec__values *v, uint64_t *calls, const char *fn);
/* Runs host function `h` alone. */
crec_status crec__run_host_fn(const crec_program *p, size_t h, crec__values *v, uint64_t *calls,
                              const char *fn);

/* Sets temporary bases (arena + planned offset) and constant bases. */
void crec__place_buffers(const crec_program *p, const crec_plan *plan, CUdeviceptr arena,
                         const crec__ctx_state *st, crec__values *v);

/* Computes the bytes each argument binding must hold (size of `p->num_arguments`). */
crec_status crec__required_bytes(const crec_program *p, uint64_t **out);

/* Value of a launch dimension; fails (naming command `c`) when a scalar gives 0 or too much. */
crec_status crec__dim(const crec_program *p, const crec__values *v, const crec__command *c,
                      const char *what, crec_dim d, uint32_t min, uint32_t max, uint32_t *out,
                      const char *fn);

/* All three dims plus dynamic shared memory of launch `c`. */
crec_status crec__launch_dims(const crec_program *p, const crec__values *v, const crec__command *c,
                              uint32_t grid[3], uint32_t block[3], uint32_t *shared, const char *fn);

/* Writes the kernel parameters of launch `c` into `block` (c->param_bytes bytes)
 * and pointers to each into `ptrs` (c->num_args entries). */
void crec__marshal_args(const crec_program *p, const crec__values *v, const crec__command *c,
                        uint8_t *block, void **ptrs);

/* Address of a range's first byte, and the bytes a memcpy/memset touches now. */
CUdeviceptr crec__range_addr(const crec__values *v, crec_range r);
uint64_t crec__command_bytes(const crec__values *v, const crec__command *c);

/* Fills a 1-D memcpy descriptor for command `c`. */
void crec__memcpy_desc(const crec_program *p, const crec__values *v, const crec__command *c,
                       CUDA_MEMCPY3D *out);


/* Live-object accounting for CUDA resources (allocations, modules, graphs). */
#define CREC__CUDA_LIVE(delta) crec__live(delta)

/* ---- library commands at run time ---- */

/* Opens a library by soname, then in the CUDA toolkit's library folder; NULL with
 * the reason in `reason` when neither works (driver.c). */
void *crec__open_library(const char *soname, char *reason, size_t reason_size);

/* A communicator (library.h). */
struct crec_comm {
  uint64_t id;  /* unique for the process: a new communicator at a freed one's address differs */
  void *nccl;   /* ncclComm_t; freed by NCCL once aborted */
  bool owned;   /* made by crec_comm_create(): destroyed with it */
  int rank, size, device;
  /* crec_comm_abort() may come from another thread while crec_comm_synchronize()
   * polls NCCL's asynchronous error: `lock` keeps the two apart */
  pthread_mutex_t lock;
  bool aborted;
  bool revoked; /* aborted through ncclCommRevoke: ncclCommDestroy still frees it */
};

/* Gives a new communicator its process-unique id. */
uint64_t crec__comm_next_id(void);

/* GEMM through cuBLASLt (gemm.c). Makes the plans of every GEMM of the program for
 * context state `st` (once; under the runtime lock): the cuBLASLt handle,
 * descriptors and the algorithm chosen for the alignment bindings guarantee. */
crec_status crec__gemm_prepare(const crec_program *p, crec__runtime *rt, crec__ctx_state *st, const char *fn);
/* Issues GEMM command `ci` on `stream` with the addresses of `v`. */
crec_status crec__gemm_issue(const crec_program *p, const crec__ctx_state *st, const crec__values *v,
                             uint32_t ci, CUstream stream, const char *fn);
/* Frees the GEMM plans and handle of `st` (its context is current). */
void crec__gemm_state_free(const crec_program *p, crec__ctx_state *st);

/* Collectives through NCCL (collective.c). */
/* Checks the communicator bindings: count, NULL, the slot's size, and (device >= 0)
 * the device; the message names the first command using a bad binding. */
crec_status crec__check_comms(const crec_program *p, const crec_bindings *b, int device, const char *fn);
/* Issues collective start `ci` through NCCL on `stream` (not for degenerate ones). */
crec_status crec__collective_issue(const crec_program *p, const crec__values *v, uint32_t ci, CUstream stream,
                                   const char *fn);
/* What a degenerate collective does for this rank. */
typedef enum crec__degenerate {
  CREC__DEGENERATE_NOTHING, /* an in-place all_reduce */
  CREC__DEGENERATE_COPY,    /* copy send into recv (c->src, c->dst) */
  CREC__DEGENERATE_ZERO     /* a permute that sends this rank nothing: zero recv (c->dst) */
} crec__degenerate;
crec__degenerate crec__degenerate_action(const crec_program *p, const crec__values *v, uint32_t ci);

/* Custom handlers (custom.c). A registry entry, counted by the execs using it. */
typedef struct crec__handler crec__handler;
/* Finds the handler of custom command `ci` and takes a reference; CREC_ERR_NOT_FOUND
 * names the command when its target is not registered. */
crec_status crec__handler_acquire(const crec_program *p, uint32_t ci, const char *fn, crec__handler **out);
void crec__handler_release(crec__handler *h);
const crec_custom_handler *crec__handler_get(const crec__handler *h);

/* What a custom command's create() made at record. */
typedef struct crec__custom_state {
  crec__handler *handler;
  CUgraphNode *nodes;   /* kernel nodes, in creation order */
  size_t num_nodes, cap_nodes;
} crec__custom_state;

/* The context handed to handlers (library.h's crec_custom_context). */
enum { CREC__CUSTOM_RECORD, CREC__CUSTOM_EAGER, CREC__CUSTOM_UPDATE };
struct crec_custom_context {
  int mode;
  const crec_program *p;
  const crec__cu *cu;
  const crec__ctx_state *st;
  uint32_t ci;
  const char *fn;
  crec_status error;            /* the first failure inside a context call, reported after the handler */
  /* record: nodes go into `graph`, the first after `deps` */
  CUgraph graph;
  const CUgraphNode *deps;
  size_t num_deps;
  crec__custom_state *state;
  /* eager */
  CUstream stream;
  size_t launched;
  /* update */
  CUgraphExec exec;
};

/* Builds the call of custom command `ci` for the values `v` into `call`, with its
 * arrays in `operands` and `sizes` (room for the command's operands). */
void crec__custom_call(const crec_program *p, const crec__values *v, uint32_t ci, void **operands,
                       uint64_t *sizes, crec_custom_call *call);
/* Runs a handler function (create, update) with `ctx`, turning its failure into a
 * message that names the command and the target. */
crec_status crec__custom_run(crec_custom_context *ctx, crec_custom_fn f, void *user, const crec_custom_call *call,
                             const char *what);
/* Runs a traced handler's trace() on `stream`. */
crec_status crec__custom_trace(const crec_program *p, const crec__values *v, uint32_t ci, const crec__handler *h,
                               CUstream stream, const char *fn);

/* Traced commands (traced.c): GEMM, collective start (not degenerate), custom
 * command of a traced handler. */
/* Issues the work of traced command `ci` on `stream` (at capture, and eagerly). */
crec_status crec__traced_issue(const crec_program *p, const crec__ctx_state *st, const crec__values *v, uint32_t ci,
                               const crec__handler *h, CUstream stream, const char *fn);

/* ---- a recorded execution ---- */

/* What a graph node does, for updates. */
typedef enum crec__node_kind {
  NODE_KERNEL,  /* a launch command */
  NODE_MEMCPY,  /* a memcpy command, or a degenerate collective copying */
  NODE_MEMSET,  /* a memset command, or a degenerate permute zeroing */
  NODE_SET,     /* a set-condition kernel of a control-flow command: only its
                   predicate/index pointer (at pred_offset) follows the bindings */
  NODE_TRACED,  /* the child graph of a traced command; ext is its crec__trace */
  NODE_CUSTOM   /* the kernel nodes of a custom command; ext is its crec__custom_state */
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
} crec__node;

/* One captured child graph of a traced command, under the addresses it was captured with. */
typedef struct crec__trace_entry {
  CUgraph graph;
  uint64_t *key;   /* key_words words */
  uint64_t used;   /* tick of its last use: the least recently used is evicted */
} crec__trace_entry;

/* The cache of a traced command's captured graphs. */
typedef struct crec__trace {
  uint32_t command;
  crec__handler *handler;     /* traced custom commands */
  size_t key_words;
  crec__trace_entry *entries; /* num_entries <= cap_entries (the cache size) */
  size_t num_entries, cap_entries;
  size_t installed;           /* the entry the exec's child node holds now */
  uint64_t tick;
  uint64_t *evicted;          /* hashes of recently evicted keys (a ring), to count re-captures */
  size_t num_evicted, cap_evicted, next_evicted;
} crec__trace;

/* A bump allocator for node parameter blocks: few large allocations. */
typedef struct crec__bump {
  struct crec__chunk *chunks;
  size_t used, cap; /* of the newest chunk */
} crec__bump;
void *crec__bump_alloc(crec__bump *b, size_t size);
void crec__bump_free(crec__bump *b);

/* A list of node indices per binding or scalar (CSR). */
typedef struct crec__uses {
  uint32_t *start; /* n + 1 */
  uint32_t *nodes;
} crec__uses;

struct crec_exec {
  crec_program *program;   /* retained */
  crec_plan *plan;
  const crec__cu *cu;
  CUcontext ctx;
  crec__ctx_state *state;
  CUdeviceptr arena;
  CUdeviceptr tables;      /* iteration counts of limited loops (8 bytes each), then switch case tables */
  uint64_t loop_default;   /* crec_record_options.max_loop_iterations */
  volatile uint32_t *tripped; /* mapped host memory: command index + 1 of a loop stopped at its limit */
  CUdeviceptr tripped_dev;
  CUgraph graph;
  CUgraphExec exec;
  crec__node *nodes;
  size_t num_nodes, cap_nodes;
  crec__uses buffer_uses;  /* per buffer index */
  crec__uses scalar_uses;  /* per scalar index */
  crec__uses comm_uses;    /* per communicator slot */
  CUstream capture_stream; /* traced commands are captured on it */
  uint32_t trace_cache_size;
  CUgraph *graveyard;      /* evicted captured graphs, destroyed once launches before them finished */
  size_t num_graveyard, cap_graveyard;
  size_t graveyard_waiting; /* the first this many wait for retire_event */
  CUevent retire_event;
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
  bool any_dynamic;        /* some argument has a dynamic size */
  crec__bump params;       /* every node's parameter block and pointers */
  uint32_t whole_update_percent; /* 0: never (always per node) */
  bool whole_update_broken; /* the driver refused a whole-graph update once */
  bool legacy_conditionals; /* one IF node per branch (driver < 12.8, or forced) */
  crec_exec_stats stats;
  bool poisoned;           /* a CUDA update failed midway: resynchronize every node next time */
  bool eager_only;         /* no graph: every replay runs the program eagerly (no conditional nodes) */
  CUevent eager_event;     /* eager_only: recorded after each replay, waited for by the next */
};

/* Pushes `ctx` unless it is already current; `*pushed` says whether to pop. */
static inline crec_status crec__enter(const crec__cu *cu, CUcontext ctx, bool *pushed, const char *fn) {
  CUcontext cur = NULL;
  *pushed = false;
  if (cu->cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == ctx) return CREC_OK;
  CUresult r = cu->cuCtxPushCurrent(ctx);
  if (r != CUDA_SUCCESS) return crec__cu_fail(fn, r, "cuCtxPushCurrent", NULL);
  *pushed = true;
  return CREC_OK;
}

static inline void crec__leave(const crec__cu *cu, bool pushed) {
  CUcontext popped;
  if (pushed) cu->cuCtxPopCurrent(&popped);
}

/* Runs a region of the program eagerly on `stream` with values `v` (the eager
 * executor's core); counts the control-flow commands it runs in `*control`.
 * Loops without a limit of their own stop after `loop_default` iterations (0: never). */
crec_status crec__eager_region(const crec_program *p, const crec__cu *cu, const crec__ctx_state *st,
                               crec__values *v, CUstream stream, uint32_t region, uint64_t *control,
                               uint64_t loop_default, const char *fn);

/* The driver parameters of a kernel node (from the node's function, dims and
 * parameter block) and of a memset node (a memset command, or the zeros of a
 * permute that sends this rank nothing), for adding and for updating nodes. */
void crec__kernel_node_params(const crec__node *n, CUDA_KERNEL_NODE_PARAMS *kp);
void crec__memset_node_params(const crec__values *v, const crec__command *c, CUDA_MEMSET_NODE_PARAMS *m);

/* The iteration limit of while command `c` in `e` (0: none). */
static inline uint64_t crec__loop_limit(const crec_exec *e, const crec__command *c) {
  if (c->loop_limit == CREC_LOOP_UNLIMITED) return 0;
  return c->loop_limit ? c->loop_limit : e->loop_default;
}

/* Builds the graph of `e` (nodes, uses, conditional nodes). Used by crec_record. */
crec_status crec__build_graph(crec_exec *e, const char *fn);

/* Traced commands in an exec (traced.c). Captures command `ci` with the values
 * `v` into a new graph `*out`. */
crec_status crec__trace_capture(crec_exec *e, uint32_t ci, const crec__handler *h, const crec__values *v,
                                CUgraph *out, const char *fn);
/* At record: makes the cache of traced command `ci` holding its first capture
 * (with e->cur), returned in `*first` for the child node. */
crec_status crec__trace_create(crec_exec *e, uint32_t ci, crec__handler *h, crec__trace **out, CUgraph *first,
                               const char *fn);
/* At replay: gives node `n` the child graph for the values `v`: found in the
 * cache, or captured (evicting the least recently used); then swapped in. */
crec_status crec__trace_update(crec_exec *e, crec__node *n, const crec__values *v, const char *fn);
/* Destroys a cache and its graphs (the exec's context is current). */
void crec__trace_free(crec_exec *e, crec__trace *t);
/* After a launch: evicted graphs wait for an event recorded now; those whose
 * event completed are destroyed. `all` destroys every one (exec destroy). */
crec_status crec__graveyard_after_launch(crec_exec *e, CUstream stream, const char *fn);
void crec__graveyard_collect(crec_exec *e, bool all);

/* Custom commands in an exec (custom.c): call update() for node `n` with `v`. */
crec_status crec__custom_update(crec_exec *e, crec__node *n, const crec__values *v, const char *fn);
void crec__custom_state_free(crec__custom_state *cs);

#endif
