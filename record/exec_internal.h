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
  CUfunction set_while, set_if, set_switch, set_switch_ifs, noop;
  struct crec__ctx_state *next;
} crec__ctx_state;

/* Hangs off crec_program.device_cache: everything crec keeps per program for
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

/* Returns the state of the current context, loading modules and uploading
 * constants on first use. The context must be current on the calling thread. */
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
} crec__values;

/* Allocates the arrays of `v` for program `p`. */
crec_status crec__values_alloc(const crec_program *p, crec__values *v);
void crec__values_free(crec__values *v);

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

/* Formats "command N ('name')" for messages into `buf`. */
const char *crec__command_label(const crec_program *p, size_t ci, char *buf, size_t size);

/* Live-object accounting for CUDA resources (allocations, modules, graphs). */
#define CREC__CUDA_LIVE(delta) crec__live(delta)

/* ---- a recorded execution ---- */

/* What a graph node does, for updates. */
typedef enum crec__node_kind {
  NODE_KERNEL,  /* a launch command */
  NODE_MEMCPY,
  NODE_MEMSET,
  NODE_SET      /* a set-condition kernel of a control-flow command: only its
                   predicate/index pointer (at pred_offset) follows the bindings */
} crec__node_kind;

typedef struct crec__node {
  CUgraphNode node;
  uint32_t command;        /* program command index */
  crec__node_kind kind;
  bool template_stale;     /* updated in the exec per node; the template graph not yet */
  uint32_t pred_offset;    /* NODE_SET: offset of the condition pointer in param_block */
  uint32_t grid[3], block[3], shared; /* NODE_KERNEL: dims of the pending update */
  CUfunction func;         /* NODE_KERNEL, NODE_SET */
  void **param_ptrs;       /* NODE_KERNEL, NODE_SET: pointers into param_block */
  uint8_t *param_block;
} crec__node;

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
  CUdeviceptr tables;      /* switch case tables and IF-node handle lists */
  CUgraph graph;
  CUgraphExec exec;
  crec__node *nodes;
  size_t num_nodes, cap_nodes;
  crec__uses buffer_uses;  /* per buffer index */
  crec__uses scalar_uses;  /* per scalar index */
  uint64_t *required;      /* per argument */
  crec__values cur;        /* values of the last execution */
  crec__values next;       /* staging for the replay being prepared */
  uint32_t *dirty;         /* node indices to update */
  uint8_t *dirty_mark;     /* per node */
  uint8_t *scalar_changed; /* per scalar, during one replay */
  crec__bump params;       /* every node's parameter block and pointers */
  uint32_t whole_update_percent; /* 0: never (always per node) */
  bool whole_update_broken; /* the driver refused a whole-graph update once */
  bool legacy_conditionals; /* one IF node per branch (driver < 12.8, or forced) */
  crec_exec_stats stats;
  bool poisoned;           /* a CUDA update failed midway: resynchronize every node next time */
  bool uploaded;           /* the graph was uploaded on `upload_stream` */
  CUstream upload_stream;
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

/* Builds the graph of `e` (nodes, uses, conditional nodes). Used by crec_record. */
crec_status crec__build_graph(crec_exec *e, const char *fn);

#endif
