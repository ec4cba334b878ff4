/* Each execution of an imported graph's exec (capture.h), or of a program with
 * graph commands: the nodes whose arguments moved set (their relocations are
 * written by crec__import_prepare(), record/embed.c), and the child graph nodes
 * that hold some of them updated once. The analysis that found the
 * relocations is record/capture.c's, at import. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "replay_internal.h"

/* "node N (kind) of the imported graph", for a failed update's message; in a
 * program, of its graph command, named. */
static const char *import_label(const crec_exec *e, const crec__node *n, char *buf, size_t size) {
  const crec__import_node *in = n->ext;
  const char *kind = in->added ? "a copy crec added" : crec__graph_node_type_name(in->type);
  char command[160] = "the imported graph";
  if (!e->import) {
    char label[128];
    snprintf(command, sizeof command, "the graph of %s", crec__command_label(e->program, n->command, label, sizeof label));
  }
  if (snprintf(buf, size, "node %s (%s%s) of %s", in->label, kind, in->as_kernel ? ", as crec's kernel" : "",
               command) >= (int)size)
    buf[size - 1] = 0; /* cut short: still names the node */
  return buf;
}

crec_status crec__import_apply(crec_exec *e, const crec__node *n, CUgraphExec exec, const char *fn) {
  crec__import_node *in = n->ext;
  crec_status s = CREC_OK;
  /* inside a child graph: set in the template's copy, the exec follows at the flush */
  if (in->depth) {
    e->import->children[in->child].pending = true;
    exec = NULL;
  }
  char label[CREC__IMPORT_LABEL + 240];
  /* formatted only when a call fails (as replay.c's NODE_LABEL): this runs for every rewritten node of every replay */
#define IMPORT_LABEL import_label(e, n, label, sizeof label)
  const crec__cu *cu = e->cu;
  if (in->as_kernel) {
    /* a copy or fill inside a conditional body: crec's kernel (crec__import_prepare() set its block and grid) */
    if (exec) CREC__CU_STEP(s, fn, IMPORT_LABEL, cu, cuGraphExecKernelNodeSetParams, exec, n->node, &in->kp);
    else CREC__CU_STEP(s, fn, IMPORT_LABEL, cu, cuGraphKernelNodeSetParams, n->node, &in->kp);
  } else if (in->type == CU_GRAPH_NODE_TYPE_KERNEL) {
    CUDA_KERNEL_NODE_PARAMS kp = in->kp;
    /* a launch that took its parameters as one buffer gets them so again */
    size_t extra_size = in->extra_size;
    void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, in->block, CU_LAUNCH_PARAM_BUFFER_SIZE, &extra_size,
                     CU_LAUNCH_PARAM_END};
    if (extra_size) kp.kernelParams = NULL, kp.extra = extra;
    if (exec) CREC__CU_STEP(s, fn, IMPORT_LABEL, cu, cuGraphExecKernelNodeSetParams, exec, n->node, &kp);
    else CREC__CU_STEP(s, fn, IMPORT_LABEL, cu, cuGraphKernelNodeSetParams, n->node, &kp);
  } else if (in->type == CU_GRAPH_NODE_TYPE_MEMSET) {
    if (exec) CREC__CU_STEP(s, fn, IMPORT_LABEL, cu, cuGraphExecMemsetNodeSetParams, exec, n->node, &in->set, e->ctx);
    else CREC__CU_STEP(s, fn, IMPORT_LABEL, cu, cuGraphMemsetNodeSetParams, n->node, &in->set);
  } else {
    if (exec) CREC__CU_STEP(s, fn, IMPORT_LABEL, cu, cuGraphExecMemcpyNodeSetParams, exec, n->node, &in->copy, e->ctx);
    else CREC__CU_STEP(s, fn, IMPORT_LABEL, cu, cuGraphMemcpyNodeSetParams, n->node, &in->copy);
  }
#undef IMPORT_LABEL
  return s;
}

crec_status crec__import_flush(crec_exec *e, const char *fn) {
  crec__import *im = e->import;
  crec_status s = CREC_OK;
  for (size_t c = 0; c < im->num_children && !s; c++) {
    crec__import_child *ch = &im->children[c];
    if (!ch->pending) continue;
    char where[64];
    snprintf(where, sizeof where, "child graph node %" PRIu32 " of the imported graph", ch->index);
    CREC__CU_STEP(s, fn, where, e->cu, cuGraphExecChildGraphNodeSetParams, e->exec, ch->node, ch->graph);
    if (!s) ch->pending = false;
  }
  return s;
}
