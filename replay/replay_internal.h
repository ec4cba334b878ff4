/* What replay/ does for each execution, used by recording too: binding checks
 * and host functions, buffer placement, launch dimensions and kernel
 * parameters, node parameters, the eager executor. */
#ifndef CREC_REPLAY_INTERNAL_H
#define CREC_REPLAY_INTERNAL_H

#include "exec_internal.h"

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

/* The cost model's defaults, set at record (replay/model.c). */
extern const crec_update_model crec__default_update_model;
/* How a replay of `e` that changes `k` nodes, `k_dev` of them on the device
 * path, applies them: CREC_UPDATE_PER_NODE, _DEVICE or _WHOLE_GRAPH, by the
 * exec's update_strategy, whole_update_percent and cost model. */
crec_update_strategy crec__update_choice(const crec_exec *e, size_t k, size_t k_dev);

/* Fills a 1-D memcpy descriptor for command `c`. */
void crec__memcpy_desc(const crec_program *p, const crec__values *v, const crec__command *c,
                       CUDA_MEMCPY3D *out);


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

/* ---- imported graphs (import.c; the analysis is record/capture.c's) ---- */

/* At replay: writes the relocations of imported node `in` from the values `v`
 * (the arguments' addresses) into its parameters. */
void crec__import_prepare(crec__import_node *in, const crec__values *v);
/* Sets imported node `n`'s parameters in the executable graph (`exec` != NULL)
 * or in the template; a failure names the call and the captured node. A node
 * inside a child graph is set in the template's child graph, and its child
 * graph node waits for crec__import_flush(). */
crec_status crec__import_apply(crec_exec *e, const crec__node *n, CUgraphExec exec, const char *fn);
/* Updates each child graph node of the executable graph whose nodes
 * crec__import_apply() set since the last flush, once. */
crec_status crec__import_flush(crec_exec *e, const char *fn);

#endif
