/* crec_exec_replay: diff this execution's bindings against the last one, update
 * only the nodes that use a changed binding (node by node, or one whole-graph
 * update when many changed), then launch. */
#include <string.h>

#include "replay_internal.h"

static void mark(crec_exec *e, const crec__uses *u, size_t i, size_t *num_dirty) {
  for (uint32_t k = u->start[i]; k < u->start[i + 1]; k++) {
    uint32_t ni = u->nodes[k];
    if (!e->dirty_mark[ni]) {
      e->dirty_mark[ni] = 1;
      e->dirty[(*num_dirty)++] = ni;
    }
  }
}

static void clear_marks(crec_exec *e, size_t num_dirty) {
  for (size_t k = 0; k < num_dirty; k++) e->dirty_mark[e->dirty[k]] = 0;
}

static bool scalar_changed(const crec_program *p, const crec__values *a, const crec__values *b, size_t i) {
  return memcmp(a->scalars[i].bytes, b->scalars[i].bytes, crec_type_size(p->scalars[i].type)) != 0;
}

/* Recomputes a dirty node's parameters from `v` into its own storage. */
static void prepare(crec_exec *e, crec__node *n, const crec__values *v) {
  const crec_program *p = e->program;
  const crec__command *c = &p->commands[n->command];
  if (n->kind == NODE_KERNEL) {
    crec__marshal_args(p, v, c, n->param_block, n->param_ptrs);
  } else if (n->kind == NODE_SET) {
    CUdeviceptr pred = crec__range_addr(v, c->predicate);
    memcpy(n->param_block + n->pred_offset, &pred, sizeof pred);
  }
}

/* Sets a node's parameters in the executable graph (`exec` != NULL) or in the
 * template; a failure names the call and the node's command. */
static crec_status apply(crec_exec *e, const crec__node *n, const crec__values *v, CUgraphExec exec, const char *fn) {
  const crec__cu *cu = e->cu;
  const crec__command *c = &e->program->commands[n->command];
  crec_status s = CREC_OK;
  char label[160];
#define NODE_LABEL crec__command_label(e->program, n->command, label, sizeof label)
  switch (n->kind) {
    case NODE_KERNEL:
    case NODE_SET: {
      CUDA_KERNEL_NODE_PARAMS kp;
      crec__kernel_node_params(n, &kp);
      if (exec) CREC__CU_STEP(s, fn, NODE_LABEL, cu, cuGraphExecKernelNodeSetParams, exec, n->node, &kp);
      else CREC__CU_STEP(s, fn, NODE_LABEL, cu, cuGraphKernelNodeSetParams, n->node, &kp);
      return s;
    }
    case NODE_MEMCPY: {
      CUDA_MEMCPY3D d;
      crec__memcpy_desc(e->program, v, c, &d);
      if (exec) CREC__CU_STEP(s, fn, NODE_LABEL, cu, cuGraphExecMemcpyNodeSetParams, exec, n->node, &d, e->ctx);
      else CREC__CU_STEP(s, fn, NODE_LABEL, cu, cuGraphMemcpyNodeSetParams, n->node, &d);
      return s;
    }
    case NODE_MEMSET: {
      CUDA_MEMSET_NODE_PARAMS m;
      crec__memset_node_params(v, c, &m);
      if (exec) CREC__CU_STEP(s, fn, NODE_LABEL, cu, cuGraphExecMemsetNodeSetParams, exec, n->node, &m, e->ctx);
      else CREC__CU_STEP(s, fn, NODE_LABEL, cu, cuGraphMemsetNodeSetParams, n->node, &m);
      return s;
    }
    case NODE_TRACED:
    case NODE_CUSTOM:
      break; /* updated by update_per_node() itself */
  }
  return crec__error(CREC_ERR_INTERNAL, fn, "%s: its node has no parameters to set", NODE_LABEL);
#undef NODE_LABEL
}

static crec_status update_per_node(crec_exec *e, size_t num_dirty, const char *fn) {
  for (size_t k = 0; k < num_dirty; k++) {
    crec__node *n = &e->nodes[e->dirty[k]];
    if (n->kind == NODE_TRACED || n->kind == NODE_CUSTOM) {
      crec_status s = n->kind == NODE_TRACED ? crec__trace_update(e, n, &e->next, fn)
                                             : crec__custom_update(e, n, &e->next, fn);
      if (s) return s;
      continue;
    }
    crec_status s = apply(e, n, &e->next, e->exec, fn);
    if (s) return s;
    n->template_stale = true;
  }
  e->stats.per_node_updates++;
  return CREC_OK;
}

/* Brings the template graph up to date (dirty and stale nodes), then updates
 * the executable graph from it in one call. Returns CREC_ERR_UNSUPPORTED when
 * the driver refuses the update, so the caller can fall back. */
static crec_status update_whole(crec_exec *e, const char *fn) {
  for (size_t ni = 0; ni < e->num_nodes; ni++) {
    crec__node *n = &e->nodes[ni];
    if (!e->dirty_mark[ni] && !n->template_stale) continue;
    if (!e->dirty_mark[ni]) {
      /* stale but unchanged: refresh its storage, which may hold values never applied */
      prepare(e, n, &e->next);
      if (n->kind == NODE_KERNEL && n->dims_from_scalars)
        crec__launch_dims(e->program, &e->next, &e->program->commands[n->command], n->grid, n->block,
                          &n->shared, fn);
    }
    crec_status s = apply(e, n, &e->next, NULL, fn);
    if (s) return s;
    n->template_stale = false;
  }
  CUgraphExecUpdateResultInfo info;
  memset(&info, 0, sizeof info);
  /* the one call whose failure is not an error: the driver may refuse the update */
  CUresult r = CREC__CU(e->cu, cuGraphExecUpdate, e->exec, e->graph, &info);
  if (r == CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE) return CREC_ERR_UNSUPPORTED;
  if (r != CUDA_SUCCESS) return crec__cu_fail(fn, r, "cuGraphExecUpdate", NULL);
  e->stats.whole_graph_updates++;
  return CREC_OK;
}

/* An exec without a graph (no conditional nodes): the program runs eagerly on
 * the exec's arena, its control flow decided on the host. */
static crec_status replay_eagerly(crec_exec *e, const crec_bindings *b, CUstream stream, const char *fn) {
  const crec_program *p = e->program;
  crec__fill_bindings(p, b, &e->next);
  crec_status s = crec__run_host_fns(p, &e->next, &e->stats.host_function_calls, fn);
  if (s) return s;
  bool pushed = false;
  if ((s = crec__enter(e->cu, e->ctx, &pushed, fn))) return s;
  /* replays share the exec's arena: one on another stream waits for the last
   * (graph launches of one exec are ordered by CUDA; eager work is not) */
  static const char ordering[] = "ordering eager replays";
  if (!e->eager_event) {
    CREC__CU_STEP(s, fn, ordering, e->cu, cuEventCreate, &e->eager_event, CU_EVENT_DISABLE_TIMING);
    if (!s) CREC__CUDA_LIVE(1);
    else e->eager_event = NULL;
  } else {
    CREC__CU_STEP(s, fn, ordering, e->cu, cuStreamWaitEvent, stream, e->eager_event, 0);
  }
  if (!s) s = crec__eager_region(p, e->cu, e->state, &e->next, stream, 0, &e->stats.eager_commands, e->loop_default, fn);
  CREC__CU_STEP(s, fn, ordering, e->cu, cuEventRecord, e->eager_event, stream);
  crec__leave(e->cu, pushed);
  if (s) return s;
  crec__values t = e->cur;
  e->cur = e->next;
  e->next = t;
  e->stats.replays++;
  return CREC_OK;
}

/* Brings `next` back to `cur` for what this replay changed (a replay starts
 * from next == cur). */
static void restore_next(crec_exec *e, size_t num_changed) {
  const crec_program *p = e->program;
  for (size_t k = 0; k < num_changed; k++) {
    size_t bi = p->arguments[e->changed[k]];
    e->next.base[bi] = e->cur.base[bi];
    e->next.size[bi] = e->cur.size[bi];
  }
  memcpy(e->next.scalars, e->cur.scalars, p->num_scalars * sizeof *e->cur.scalars);
  if (p->num_comms) memcpy(e->next.comms, e->cur.comms, p->num_comms * sizeof *e->cur.comms);
}

static crec_status refuse(crec_exec *e, size_t num_changed, size_t num_dirty, crec_status s) {
  clear_marks(e, num_dirty);
  restore_next(e, num_changed);
  return s;
}

/* Reports (once) a loop an earlier replay stopped at its limit. */
static crec_status report_trip(crec_exec *e, const char *fn, const char *then) {
  if (!e->tripped || !*e->tripped) return CREC_OK;
  /* read and clear at once: a replay still in flight may trip meanwhile */
  uint32_t loop = __atomic_exchange_n(e->tripped, 0u, __ATOMIC_ACQ_REL);
  if (!loop) return CREC_OK;
  const crec__command *c = &e->program->commands[loop - 1];
  char label[160];
  return crec__error(CREC_ERR_LOOP_LIMIT, fn,
                     "loop %s ran its limit of %llu iterations in an earlier replay and was stopped there%s "
                     "(a loop whose predicate never turns false, or raise the limit: crec_program_set_loop_limit, "
                     "crec_record_options.max_loop_iterations)",
                     crec__command_label(e->program, loop - 1, label, sizeof label),
                     (unsigned long long)crec__loop_limit(e, c), then);
}

crec_status crec_exec_check(crec_exec *e) {
  static const char fn[] = "crec_exec_check";
  if (!e) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'exec' is NULL");
  return report_trip(e, fn, "");
}

/* Which bindings changed: one tight pass over the bindings; only those are
 * checked again (the others were checked when they were bound), so a replay
 * costs what changed plus this pass. Their indices go to e->changed. */
static crec_status find_changed(crec_exec *e, const crec_bindings *b, size_t *num_changed, const char *fn) {
  const crec_program *p = e->program;
  size_t n = 0;
  bool dynamic_changed = false;
  crec_status s;
  for (size_t i = 0; i < p->num_arguments; i++)
    if (b->buffers[i].ptr != e->last[i].ptr || b->buffers[i].size != e->last[i].size) e->changed[n++] = (uint32_t)i;
  *num_changed = n;
  for (size_t k = 0; k < n; k++) {
    if ((s = crec__check_binding(p, e->required, b, e->changed[k], fn))) return s;
    dynamic_changed |= p->buffers[p->arguments[e->changed[k]]].dynamic_size;
  }
  if (dynamic_changed && (s = crec__check_dynamic(p, b, fn))) return s;
  return CREC_OK;
}

/* This execution's values in `next` (equal to `cur` but for what changed); a
 * host function runs only when one of its inputs changed. */
static crec_status stage_values(crec_exec *e, const crec_bindings *b, size_t num_changed, const char *fn) {
  const crec_program *p = e->program;
  for (size_t k = 0; k < num_changed; k++) {
    size_t i = e->changed[k], bi = p->arguments[i];
    e->next.base[bi] = (CUdeviceptr)(uintptr_t)b->buffers[i].ptr;
    e->next.size[bi] = p->buffers[bi].dynamic_size ? b->buffers[i].size : p->buffers[bi].size;
  }
  for (size_t i = 0; i < p->num_comms; i++) e->next.comms[i] = b->communicators[i];
  for (size_t i = 0; i < p->num_scalars; i++) {
    const crec__scalar *sc = &p->scalars[i];
    if (sc->kind == CREC_SCALAR_BOUND) e->next.scalars[i] = b->scalars[sc->binding_index];
    else if (sc->kind == CREC_SCALAR_SIZE) e->next.scalars[i].i64 = (int64_t)b->buffers[p->buffers[sc->buffer].arg_index].size;
    e->scalar_changed[i] = sc->kind != CREC_SCALAR_DERIVED && scalar_changed(p, &e->cur, &e->next, i);
  }
  for (size_t h = 0; h < p->num_host_fns; h++) {
    const crec__host_fn *f = &p->host_fns[h];
    bool run = false;
    for (size_t i = 0; i < f->num_inputs && !run; i++) run = e->scalar_changed[crec__index(f->inputs[i].id)];
    if (!run) continue;
    crec_status s = crec__run_host_fn(p, h, &e->next, &e->stats.host_function_calls, fn);
    if (s) return s;
    for (size_t i = 0; i < f->num_outputs; i++) {
      size_t o = crec__index(f->outputs[i].id);
      e->scalar_changed[o] = scalar_changed(p, &e->cur, &e->next, o);
    }
  }
  return CREC_OK;
}

/* The nodes that use a changed binding (every node after a failed update), into
 * e->dirty; returns how many. */
static size_t mark_dirty(crec_exec *e, const crec_bindings *b, size_t num_changed) {
  const crec_program *p = e->program;
  size_t num_dirty = 0;
  if (e->poisoned) {
    for (size_t ni = 0; ni < e->num_nodes; ni++) {
      e->dirty_mark[ni] = 1;
      e->dirty[num_dirty++] = (uint32_t)ni;
    }
    return num_dirty;
  }
  for (size_t k = 0; k < num_changed; k++) mark(e, &e->buffer_uses, p->arguments[e->changed[k]], &num_dirty);
  for (size_t i = 0; i < p->num_scalars; i++)
    if (e->scalar_changed[i]) mark(e, &e->scalar_uses, i, &num_dirty);
  for (size_t i = 0; i < p->num_comms; i++)
    if (b->communicators[i]->id != e->comm_ids[i]) mark(e, &e->comm_uses, i, &num_dirty);
  return num_dirty;
}

/* New parameters for every dirty node, into its own storage; launch dimensions
 * from scalars are checked before anything reaches the graph. */
static crec_status prepare_dirty(crec_exec *e, size_t num_dirty, const char *fn) {
  const crec_program *p = e->program;
  for (size_t k = 0; k < num_dirty; k++) {
    crec__node *n = &e->nodes[e->dirty[k]];
    if (n->kind == NODE_KERNEL && n->dims_from_scalars) {
      crec_status s = crec__launch_dims(p, &e->next, &p->commands[n->command], n->grid, n->block, &n->shared, fn);
      if (s) return s;
    }
    prepare(e, n, &e->next);
  }
  return CREC_OK;
}

/* Applies the dirty nodes to the executable graph: in one whole-graph update
 * when enough changed and the driver allows it, else node by node. A failure
 * poisons the exec (some nodes may hold this execution's values, others the
 * last one's), so the next replay updates every node. */
static crec_status update_graph(crec_exec *e, size_t num_dirty, const char *fn) {
  if (num_dirty == 0) {
    e->stats.updates_skipped++;
    return CREC_OK;
  }
  crec_status s = CREC_OK;
  bool whole = e->whole_update_percent && !e->whole_update_broken &&
               (uint64_t)num_dirty * 100 >= (uint64_t)e->whole_update_percent * e->num_nodes;
  if (whole) {
    s = update_whole(e, fn);
    if (s == CREC_ERR_UNSUPPORTED) {
      /* this driver cannot update this graph in one call: per node from now on */
      e->whole_update_broken = true;
      whole = false;
      s = CREC_OK;
    }
  }
  if (!s && !whole) s = update_per_node(e, num_dirty, fn);
  e->poisoned = s != CREC_OK;
  if (!s) e->stats.nodes_updated += num_dirty;
  return s;
}

/* This execution's values become the last ones. */
static void commit_values(crec_exec *e, const crec_bindings *b, size_t num_changed) {
  const crec_program *p = e->program;
  for (size_t k = 0; k < num_changed; k++) {
    size_t i = e->changed[k], bi = p->arguments[i];
    e->cur.base[bi] = e->next.base[bi];
    e->cur.size[bi] = e->next.size[bi];
    e->last[i] = b->buffers[i];
  }
  memcpy(e->cur.scalars, e->next.scalars, p->num_scalars * sizeof *e->cur.scalars);
  if (p->num_comms) memcpy(e->cur.comms, e->next.comms, p->num_comms * sizeof *e->cur.comms);
  for (size_t i = 0; i < p->num_comms; i++) e->comm_ids[i] = b->communicators[i]->id;
}

crec_status crec_exec_replay(crec_exec *e, const crec_bindings *b, crec_stream stream) {
  static const char fn[] = "crec_exec_replay";
  if (!e) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'exec' is NULL");
  const crec_program *p = e->program;
  crec_status s = report_trip(e, fn, "; this replay launched nothing");
  if (s) return s;
  s = e->eager_only ? crec__check_bindings(p, e->required, b, fn) : crec__check_binding_shape(p, b, fn);
  if (s) return s;
  /* the exec holds one rank's work: a communicator may change, its rank may not */
  for (size_t i = 0; i < p->num_comms; i++) {
    const crec_comm *now = b->communicators[i];
    if (now->rank != e->comm_rank[i] || now->device != e->comm_device[i])
      return crec__error(CREC_ERR_BINDING, fn,
                         "communicator binding %zu ('%s'): rank %d on device %d, but the exec was recorded for rank %d "
                         "on device %d", i, p->comms[i].name, now->rank, now->device, e->comm_rank[i], e->comm_device[i]);
  }
  if (e->eager_only) return replay_eagerly(e, b, stream, fn);

  size_t num_changed = 0;
  if ((s = find_changed(e, b, &num_changed, fn))) return s;
  if ((s = stage_values(e, b, num_changed, fn))) return refuse(e, num_changed, 0, s);
  size_t num_dirty = mark_dirty(e, b, num_changed);
  /* until the graph is touched, a failure leaves it with the last execution's values */
  if ((s = prepare_dirty(e, num_dirty, fn))) return refuse(e, num_changed, num_dirty, s);
  bool pushed = false;
  if ((s = crec__enter(e->cu, e->ctx, &pushed, fn))) return refuse(e, num_changed, num_dirty, s);
  if (e->num_graveyard) crec__graveyard_collect(e, false);
  if ((s = update_graph(e, num_dirty, fn))) {
    crec__leave(e->cu, pushed);
    return refuse(e, num_changed, num_dirty, s);
  }
  e->stats.last_nodes_updated = num_dirty;
  clear_marks(e, num_dirty);
  commit_values(e, b, num_changed);
  CREC__CU_STEP(s, fn, NULL, e->cu, cuGraphLaunch, e->exec, stream);
  /* evicted child graphs retire after this launch; if that cannot be arranged now
   * they wait for the next launch, or the exec's destruction */
  if (!s) (void)crec__graveyard_after_launch(e, stream, fn);
  crec__leave(e->cu, pushed);
  if (!s) e->stats.replays++;
  return s;
}
