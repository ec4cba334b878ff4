/* The runtime's internal structures (docs/architecture.md): the driver, the
 * per-program runtime and its per-context state, the values of one execution
 * (addresses and scalars), and the libraries reached at run time: cuBLASLt,
 * NCCL and communicators, custom handlers, traced commands' work. */
#ifndef CREC_RUNTIME_INTERNAL_H
#define CREC_RUNTIME_INTERNAL_H

#include <pthread.h>
#include <time.h>

#include "driver.h"
#include "plan_internal.h"
#include "trace.h"


/* ---- per-context state of a program: loaded modules, constants ---- */

typedef struct crec__ctx_state {
  CUcontext ctx;
  CUmodule *modules;       /* per program module */
  CUfunction *functions;   /* per program kernel */
  CUdeviceptr *constants;  /* per buffer index; 0 for non-constants */
  CUmodule cond_module;    /* set-condition kernels (kernels/conditions.cu), loaded on demand */
  CUfunction set_while, set_while_limited, set_if, set_switch, set_switch_ifs, noop;
  CUfunction scale_f32, scale_f64; /* an FFT's output scaling (fft.c), in the same module */
  CUfunction filter_layout;        /* an HWIO convolution filter to K-first and back (conv.c) */
  CUfunction copy_bytes, fill_elements; /* a copy and a fill inside a conditional body (graph.c) */
  CUmodule upd_module;     /* the device-side updater (kernels/updater.cu), loaded on demand */
  CUfunction apply_updates;
  bool upd_tried;          /* loading it was tried; apply_updates NULL: this chip has no image */
  int major, minor;        /* the context's device's compute capability */
  void *lt;                        /* cublasLtHandle_t, made with the first GEMM plan */
  struct crec__gemm_plan **gemm;   /* per command: GEMM plans, made on first use (gemm.c) */
  struct crec__fft_plan **fft;     /* per command: cuFFT plans, made on first use (fft.c) */
  struct crec__solver *solver;     /* cuSOLVER's handle, made with the first Cholesky command (cholesky.c) */
  struct crec__dnn *dnn;           /* cuDNN's handle, made with the first convolution (conv.c) */
  struct crec__conv_plan **conv;   /* per command: convolution plans (conv.c) */
  struct crec__ctx_state *next;
} crec__ctx_state;

/* Branch handles one crec_set_switch_ifs kernel takes (CREC_SET_IFS_MAX in
 * kernels/conditions.cu; crec__load_conditions checks that they agree). */
#define CREC__SET_IFS_MAX 32

/* Hangs off crec_program.runtime: everything crec keeps per program for
 * execution, built lazily and shared by execs and eager runs under `lock`. */
/* A launch command packed for record and replay (crec__runtime.launches, one
 * entry per command, filled for launches): a record's preparation of its node
 * and a replay's marshalling read this and its crec__marshal_args, a few cache
 * lines per launch, instead of the command and its arguments. */
typedef struct crec__launch_info {
  uint32_t grid[3], block[3], shared; /* the dimensions, when none follows a scalar */
  uint32_t kernel, region, param_bytes;
  uint32_t first_arg, num_args;       /* its entries in crec__runtime.marshal */
  bool dims_from_scalars;             /* then crec__launch_dims() reads the command */
} crec__launch_info;

/* One kernel argument packed for marshalling: `what`'s top two bits say where
 * its bytes come from (CREC__MARSHAL_*), its low 30 bits are the buffer or
 * scalar index. */
typedef struct crec__marshal_arg {
  uint32_t offset; /* in the parameter block */
  uint32_t what;
  uint64_t value;  /* buffer: the range's offset; immediate: its bytes (at most 8); scalar: its size */
} crec__marshal_arg;
#define CREC__MARSHAL_BUFFER 0u
#define CREC__MARSHAL_IMMEDIATE (1u << 30)
#define CREC__MARSHAL_SCALAR (2u << 30)
#define CREC__MARSHAL_LONG (3u << 30) /* an immediate of more than 8 bytes: its bytes are the command's */
#define CREC__MARSHAL_KIND(what) ((what) & (3u << 30))
#define CREC__MARSHAL_INDEX(what) ((what) & ~(3u << 30))

typedef struct crec__runtime {
  pthread_mutex_t lock;
  const crec_program *program;
  crec_plan *plan;          /* default plan (CREC_SCHEDULE_CONCURRENT): eager runs, and records */
  crec_plan *sequential;    /* CREC_SCHEDULE_SEQUENTIAL's, made by the first record that asks (under lock) */
  uint64_t *required;       /* per argument binding: bytes the program touches */
  crec__launch_info *launches; /* per command (launches' entries filled) */
  crec__marshal_arg *marshal;   /* every launch's arguments, in command order */
  bool control;             /* some command has regions (while, if, switch) */
  bool traced;              /* some command may be captured (crec__runtime_get says which) */
  bool plain;               /* every command a launch, copy, set or local barrier: a record's nodes follow
                               from the plan alone */
  /* Per schedule (concurrent, sequential), for plain programs: what a record
   * derives from the plan alone (record/graph.c), made by the first record
   * and read-only after (published with a compare-and-swap). */
  struct crec__built *built[2];
  crec__ctx_state *states;
} crec__runtime;

/* Module loads, counted for a record's stats (crec_exec_stats.modules_loaded and
 * the rest): images loaded, those the driver compiled from PTX to load them
 * (crec_image_needs_jit), and the nanoseconds spent in the loads. */
typedef struct crec__loads {
  uint64_t modules, jit, ns;
} crec__loads;

/* Returns the program's runtime, creating it (and its plan) on first use. */
crec_status crec__runtime_get(const crec_program *p, const char *fn, crec__runtime **out);

/* The program's plan for `schedule`, planned once per program (the program is
 * frozen) and shared by every exec recorded from it: `*out` belongs to the
 * runtime. Errors: those of crec_plan_create(), as `fn`'s. */
crec_status crec__runtime_plan(crec__runtime *rt, crec_schedule schedule, const char *fn, const crec_plan **out);

/* Returns the state of the current context, loading modules (and every kernel
 * function in them, not lazily) and uploading constants on first use. The
 * context must be current on the calling thread. The loads it makes are added
 * to `*loads` (may be NULL), as are those of the two functions below. */
crec_status crec__ctx_state_get(const crec_program *p, const crec__cu *cu, crec__runtime *rt,
                                CUcontext ctx, const char *fn, crec__loads *loads, crec__ctx_state **out);

/* Whether the state of context `ctx` exists already (crec__ctx_state_get() made it:
 * its modules are loaded and its constants uploaded), with no CUDA call. */
bool crec__ctx_state_ready(crec__runtime *rt, CUcontext ctx);

/* Loads the set-condition kernels into `st` if not yet loaded (under the runtime lock). */
crec_status crec__load_conditions(const crec__cu *cu, crec__runtime *rt, crec__ctx_state *st,
                                  const char *fn, crec__loads *loads);

/* Loads the device-side updater into `st` if not yet tried (under the runtime
 * lock). A chip without an image in it (the embedded cubins cover sm_80 and
 * later) is no error: st->apply_updates stays NULL. */
crec_status crec__load_updater(const crec__cu *cu, crec__runtime *rt, crec__ctx_state *st, const char *fn,
                               crec__loads *loads);

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
/* Copies every value of `src` into `dst` (both allocated for `p`). */
void crec__values_copy(const crec_program *p, crec__values *dst, const crec__values *src);

/* Address of a range's first byte, the bytes of its buffer from its offset on,
 * and the bytes a memcpy/memset touches now. */
CUdeviceptr crec__range_addr(const crec__values *v, crec_range r);
uint64_t crec__range_remaining(const crec__values *v, crec_range r);
uint64_t crec__command_bytes(const crec__values *v, const crec__command *c);

/* One call of a host callback given its operands' addresses (fn_buffers): what a
 * host node or an eager launch passes as its user data. */
typedef struct crec__host_call {
  crec_host_buffers_fn fn;
  void *user;
  bool once;             /* an eager launch's: crec__host_call_run() frees it after the call */
  size_t count;
  void *addresses[];     /* per operand: its first byte in this execution */
} crec__host_call;

/* Bytes of a crec__host_call for host command `c`. */
size_t crec__host_call_bytes(const crec__command *c);
/* Fills `hc` (crec__host_call_bytes() of memory) with the addresses of `c`'s
 * operands in `v`. */
void crec__host_call_fill(crec__host_call *hc, const crec__values *v, const crec__command *c, bool once);
/* The host function of a host node or launch: calls hc->fn, then frees a `once` call. */
void crec__host_call_run(void *hc);

/* Computes the bytes each argument binding must hold (size of `p->num_arguments`). */
crec_status crec__required_bytes(const crec_program *p, uint64_t **out);

/* The parts of crec__check_bindings(): counts, NULL arrays and communicators;
 * binding `bd` of argument `i` (NULL, size, alignment); the sizes that whole ranges of
 * dynamic-size arguments take from the bindings. */
crec_status crec__check_binding_shape(const crec_program *p, const crec_bindings *b, const char *fn);
crec_status crec__check_binding(const crec_program *p, const uint64_t *required, size_t i, const crec_binding *bd,
                                const char *fn);
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

/* Sets temporary bases (the arena of their memory + planned offset) and constant bases. */
void crec__place_buffers(const crec_program *p, const crec_plan *plan, CUdeviceptr arena, CUdeviceptr host_arena,
                         const crec__ctx_state *st, crec__values *v);

/* Allocates the page-locked host arena of `bytes` (crec_plan_host_arena_bytes()),
 * mapped for the device, at an address host and device share. `*out` is 0 for 0
 * bytes; free it with cuMemFreeHost. Errors: CREC_ERR_CUDA (naming the call),
 * CREC_ERR_UNSUPPORTED (no unified addressing). */
crec_status crec__host_arena_alloc(const crec__cu *cu, uint64_t bytes, const char *fn, CUdeviceptr *out);

/* Value of a launch dimension; fails (naming command `c`) when a scalar gives 0 or too much. */
crec_status crec__dim(const crec_program *p, const crec__values *v, const crec__command *c,
                      const char *what, crec_dim d, uint32_t min, uint32_t max, uint32_t *out,
                      const char *fn);

/* All three dims plus dynamic shared memory of launch `c`. */
crec_status crec__launch_dims(const crec_program *p, const crec__values *v, const crec__command *c,
                              uint32_t grid[3], uint32_t block[3], uint32_t *shared, const char *fn);

/* Writes the kernel parameters of launch `c` into `block` (c->param_bytes bytes)
 * and pointers to each into `ptrs` (c->num_args entries), from the launch as the
 * program's runtime packed it (every program that records or runs has one:
 * crec__runtime_get). */
void crec__marshal_args(const crec_program *p, const crec__values *v, const crec__command *c,
                        uint8_t *block, void **ptrs);

/* Fills a 1-D memcpy descriptor for command `c`. */
void crec__memcpy_desc(const crec_program *p, const crec__values *v, const crec__command *c,
                       CUDA_MEMCPY3D *out);
/* The driver parameters of a memset node (a memset command, or the zeros of a
 * permute that sends this rank nothing). */
void crec__memset_node_params(const crec__values *v, const crec__command *c, CUDA_MEMSET_NODE_PARAMS *m);

/* Live-object accounting for CUDA resources (allocations, modules, graphs). */
#define CREC__CUDA_LIVE(delta) crec__live(delta)

/* The one way crec makes a context current: pushes `ctx` unless it is already
 * current; `*pushed` says whether crec__leave() must pop it. A failure returns
 * CREC_ERR_CUDA naming cuCtxPushCurrent, as the last error of `fn`; with `fn`
 * NULL (a clean-up, which must not replace the error it cleans up after) it
 * sets no error. */
static inline crec_status crec__enter(const crec__cu *cu, CUcontext ctx, bool *pushed, const char *fn) {
  CUcontext cur = NULL;
  *pushed = false;
  if (cu->cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == ctx) return CREC_OK;
  CUresult r = cu->cuCtxPushCurrent(ctx);
  if (r != CUDA_SUCCESS) return fn ? crec__cu_fail(fn, r, "cuCtxPushCurrent", NULL) : CREC_ERR_CUDA;
  *pushed = true;
  return CREC_OK;
}

/* Undoes crec__enter(): pops the context it pushed, if it pushed one. */
static inline void crec__leave(const crec__cu *cu, bool pushed) {
  CUcontext popped;
  if (pushed) cu->cuCtxPopCurrent(&popped);
}

/* ---- library commands at run time ---- */

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

/* FFT through cuFFT (fft.c). Makes the plans of every FFT of the program for the
 * context of `st` (current), with the scale kernels when an FFT scales; a plan
 * that needs more work area than the command's workspace fails, naming both.
 * CREC_ERR_UNSUPPORTED (naming the command) when cuFFT cannot be opened. */
crec_status crec__fft_prepare(const crec_program *p, const crec__cu *cu, crec__runtime *rt, crec__ctx_state *st,
                              crec__loads *loads, const char *fn);
/* Issues FFT command `ci` on `stream` with the addresses of `v`. */
crec_status crec__fft_issue(const crec_program *p, const crec__ctx_state *st, const crec__values *v, uint32_t ci,
                            CUstream stream, const char *fn);
/* Frees the FFT plans of `st` (its context is current). */
void crec__fft_state_free(const crec_program *p, crec__ctx_state *st);

/* Cholesky factorizations through cuSOLVER (cholesky.c). Makes the context's
 * cuSOLVER handle and checks each Cholesky command's workspace against the work
 * area cuSOLVER asks for (a need for host work area is refused). CREC_ERR_UNSUPPORTED
 * (naming the command) when cuSOLVER cannot be opened. */
crec_status crec__cholesky_prepare(const crec_program *p, crec__runtime *rt, crec__ctx_state *st, const char *fn);
/* Issues Cholesky command `ci` on `stream` with the addresses of `v`. */
crec_status crec__cholesky_issue(const crec_program *p, const crec__ctx_state *st, const crec__values *v, uint32_t ci,
                                 CUstream stream, const char *fn);
/* Frees the cuSOLVER handle of `st` (its context is current). */
void crec__cholesky_state_free(crec__ctx_state *st);

/* Convolutions through cuDNN (conv.c). Makes the context's cuDNN handle and each
 * convolution's plan: descriptors and the algorithm, chosen by heuristics or by
 * a search on scratch buffers (allocated and freed here), the first or fastest
 * whose work area fits the workspace; none that fits fails, naming the least;
 * with the set-condition module when a filter is HWIO (its transposing kernel).
 * CREC_ERR_UNSUPPORTED (naming the command and where cuDNN was looked for) when
 * cuDNN cannot be opened. */
crec_status crec__conv_prepare(const crec_program *p, const crec__cu *cu, crec__runtime *rt, crec__ctx_state *st,
                               crec__loads *loads, const char *fn);
/* Issues convolution command `ci` on `stream` with the addresses of `v`. */
crec_status crec__conv_issue(const crec_program *p, const crec__ctx_state *st, const crec__values *v, uint32_t ci,
                             CUstream stream, const char *fn);
/* What record chose for library command `ci` in the context of `st`, as one
 * phrase into `t` (nothing when no plan was made there): gemm.c, fft.c,
 * cholesky.c, conv.c. */
void crec__gemm_choice(const crec_program *p, const crec__ctx_state *st, uint32_t ci, crec__text *t);
void crec__fft_choice(const crec_program *p, const crec__ctx_state *st, uint32_t ci, crec__text *t);
void crec__cholesky_choice(const crec_program *p, const crec__ctx_state *st, uint32_t ci, crec__text *t);
void crec__conv_choice(const crec_program *p, const crec__ctx_state *st, uint32_t ci, crec__text *t);
/* Frees the convolution plans and cuDNN handle of `st` (its context is current). */
void crec__conv_state_free(const crec_program *p, crec__ctx_state *st);

/* Whether a library crec opens at run time can be used (crec_library_check()):
 * opened once per process, by whichever of this and its first command comes
 * first; CREC_ERR_UNSUPPORTED as `fn`'s, saying why, when it cannot. gemm.c,
 * collective.c, fft.c, cholesky.c, conv.c (CUPTI's: cupti.c). */
crec_status crec__gemm_library(const char *fn);
crec_status crec__nccl_library(const char *fn);
crec_status crec__fft_library(const char *fn);
crec_status crec__cholesky_library(const char *fn);
crec_status crec__conv_library(const char *fn);

/* Collectives through NCCL (collective.c). */
/* Checks the communicator bindings: count, NULL, the slot's size, and (device >= 0)
 * the device; the message names the first command using a bad binding. */
crec_status crec__check_comms(const crec_program *p, const crec_bindings *b, int device, const char *fn);
/* Checks communicator `c` bound to slot `i` alone, as crec__check_comms() does each. */
crec_status crec__check_comm(const crec_program *p, size_t i, const crec_comm *c, int device, const char *fn);
/* Issues collective start `ci` through NCCL on `stream` (not for degenerate ones). */
crec_status crec__collective_issue(const crec_program *p, const crec__values *v, uint32_t ci, CUstream stream,
                                   const char *fn);
/* What a degenerate collective does for this rank. */
typedef enum crec__degenerate {
  CREC__DEGENERATE_NOTHING, /* an in-place all_reduce */
  CREC__DEGENERATE_COPY,    /* copy send into recv (c->src, c->dst) */
  CREC__DEGENERATE_ZERO,    /* a permute that sends this rank nothing: zero recv (c->dst) */
  CREC__DEGENERATE_ID       /* replica_id, partition_id: fill recv with crec__collective_id() */
} crec__degenerate;
crec__degenerate crec__degenerate_action(const crec_program *p, const crec__values *v, uint32_t ci);
/* The value replica_id or partition_id command `c` writes for the communicator
 * bound in `v`: the row or the column of its rank in the groups (no groups: the
 * rank, or 0). */
uint32_t crec__collective_id(const crec__command *c, const crec__values *v);

/* Custom handlers (custom.c). A registry entry, counted by the execs using it. */
typedef struct crec__handler crec__handler;
/* Finds the handler of custom command `ci` and takes a reference; CREC_ERR_NOT_FOUND
 * names the command when its target is not registered. */
/* (registers the built-in handlers first: crec__tensor_map_register) */
crec_status crec__handler_acquire(const crec_program *p, uint32_t ci, const char *fn, crec__handler **out);
/* Registers the built-in handlers "crec.tensor_map" and "crec.tensor_map_use" (tensor_map.c). */
void crec__tensor_map_register(void);
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

/* The call a custom command's handler gets, with the arrays it points into: up
 * to 16 operands in place, more on the heap. Not to be moved once made. */
typedef struct crec__custom_args {
  crec_custom_call call;
  void **ops;
  uint64_t *sizes;
  void *small_ops[16];
  uint64_t small_sizes[16];
} crec__custom_args;

/* Builds the call of custom command `ci` for the values `v` into `a`; returns
 * CREC_ERR_OUT_OF_MEMORY as `fn`'s error. crec__custom_args_free() frees it
 * either way. */
crec_status crec__custom_args_make(const crec_program *p, const crec__values *v, uint32_t ci, crec__custom_args *a,
                                   const char *fn);
void crec__custom_args_free(crec__custom_args *a);

/* A handler context for command `ci` in `mode` (CREC__CUSTOM_*); the fields of
 * that mode (graph, stream, exec...) are left for the caller. */
crec_custom_context crec__custom_context(int mode, const crec_program *p, const crec__cu *cu,
                                         const crec__ctx_state *st, uint32_t ci, const char *fn);
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

#endif
