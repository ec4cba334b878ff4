/* What replay/ does for each execution: the eager executor, library commands'
 * swaps and updates, imported graphs' parameters. (What recording uses for the
 * first execution too, the bindings and parameters, is the runtime's:
 * record/runtime/values.c.) */
#ifndef CREC_REPLAY_INTERNAL_H
#define CREC_REPLAY_INTERNAL_H

#include "exec_internal.h"

/* Runs a region of the program eagerly on `stream` with values `v` (the eager
 * executor's core); counts the control-flow commands it runs in `*control`.
 * Loops without a limit of their own stop after `loop_default` iterations (0: never). */
crec_status crec__eager_region(const crec_program *p, const crec__cu *cu, const crec__ctx_state *st,
                               crec__values *v, CUstream stream, uint32_t region, uint64_t *control,
                               uint64_t loop_default, const char *fn);

/* Whether `stream` is being captured (someone else's graph), into `*capturing`
 * (replay.c). Errors: CREC_ERR_UNSUPPORTED for the legacy stream while another
 * stream captures in global mode (the message says to `verb` on a stream of the
 * caller's own), CREC_ERR_CUDA for a capture already invalidated, and the
 * driver's failure of cuStreamIsCapturing, as `fn`'s. */
crec_status crec__stream_capturing(const crec__cu *cu, CUstream stream, const char *verb, const char *fn,
                                   bool *capturing);

/* ---- library commands (swap.c) ---- */

/* Gives traced node `n` the child graph for the values `v`: found in the
 * cache, or captured (evicting the least recently used); then swapped in. */
crec_status crec__trace_update(crec_exec *e, crec__node *n, const crec__values *v, const char *fn);
/* Calls the custom handler's update() for node `n` with `v`. */
crec_status crec__custom_update(crec_exec *e, crec__node *n, const crec__values *v, const char *fn);

/* ---- imported graphs (import.c; the analysis is record/capture.c's) ---- */

/* Sets imported node `n`'s parameters in the executable graph (`exec` != NULL)
 * or in the template; a failure names the call and the captured node. A node
 * inside a child graph is set in the template's child graph, and its child
 * graph node waits for crec__import_flush(). */
crec_status crec__import_apply(crec_exec *e, const crec__node *n, CUgraphExec exec, const char *fn);
/* Updates each child graph node of the executable graph whose nodes
 * crec__import_apply() set since the last flush, once. */
crec_status crec__import_flush(crec_exec *e, const char *fn);

#endif
