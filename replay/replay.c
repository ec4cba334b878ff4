/* crec_exec_replay: diff this execution's bindings against the last one, update
 * only the nodes that use a changed binding (node by node, through the
 * device-side updater, or in one whole-graph update: record/model.c chooses),
 * then launch. */
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

/* Slot comparisons: a buffer binding, scalar `si`'s value (its type's bytes),
 * a communicator bound against one recorded with id `was_id`. */
static bool same_binding(crec_binding a, crec_binding b) { return a.ptr == b.ptr && a.size == b.size; }
static bool same_scalar(const crec_program *p, size_t si, const crec_value *a, const crec_value *b) {
  return memcmp(a->bytes, b->bytes, crec_type_size(p->scalars[si].type)) == 0;
}
static bool same_comm(const crec_comm *now, const crec_comm *was, uint64_t was_id) {
  return now == was && now->id == was_id;
}

static bool scalar_changed(const crec_program *p, const crec__values *a, const crec__values *b, size_t i) {
  return !same_scalar(p, i, &a->scalars[i], &b->scalars[i]);
}

/* Recomputes a dirty node's parameters from `v` into its own storage. */
static void prepare(crec_exec *e, crec__node *n, const crec__values *v) {
  const crec_program *p = e->program;
  if (n->kind == NODE_IMPORTED) {
    crec__import_prepare(n->ext, v);
    return;
  }
  const crec__command *c = &p->commands[n->command];
  if (n->kind == NODE_KERNEL) {
    crec__marshal_args(p, v, c, n->param_block, n->param_ptrs);
  } else if (n->kind == NODE_SET) {
    CUdeviceptr pred = crec__range_addr(v, c->predicate);
    memcpy(n->param_block + n->pred_offset, &pred, sizeof pred);
  } else if (n->kind == NODE_COPY || n->kind == NODE_FILL) {
    crec__copy_node_prepare(p, v, n);
  }
}

/* Sets a node's parameters in the executable graph (`exec` != NULL) or in the
 * template; a failure names the call and the node's command. */
static crec_status apply(crec_exec *e, const crec__node *n, const crec__values *v, CUgraphExec exec, const char *fn) {
  if (n->kind == NODE_IMPORTED) return crec__import_apply(e, n, exec, fn);
  const crec__cu *cu = e->cu;
  const crec__command *c = &e->program->commands[n->command];
  crec_status s = CREC_OK;
  char label[160];
#define NODE_LABEL crec__command_label(e->program, n->command, label, sizeof label)
  switch (n->kind) {
    case NODE_KERNEL:
    case NODE_SET:
    case NODE_COPY:
    case NODE_FILL: {
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
    case NODE_IMPORTED: /* above */
      break; /* updated by update_per_node() itself */
  }
  return crec__error(CREC_ERR_INTERNAL, fn, "%s: its node has no parameters to set", NODE_LABEL);
#undef NODE_LABEL
}

/* ---- device-side updates ---- */

/* The slot this replay fills, for its first entry: the next in the ring, once
 * the launch that used it last has finished (slots outnumber the launches
 * usually in flight). e->upd_count is 0 (update_graph() starts each replay so). */
static crec_status upd_begin(crec_exec *e, const char *fn) {
  crec__upd_slot *sl = &e->slots[e->next_slot];
  crec_status s = CREC_OK;
  if (sl->in_flight) {
    CREC__CU_STEP(s, fn, "waiting for the device-side updater's table", e->cu, cuEventSynchronize, sl->done);
    if (s) return s;
    sl->in_flight = false;
  }
  e->upd_count = e->upd_bytes = 0;
  return CREC_OK;
}

/* Queues node `n`'s new parameter block (prepared in its storage) for the updater. */
static void upd_add(crec_exec *e, const crec__node *n) {
  crec__upd_slot *sl = &e->slots[e->next_slot];
  uint32_t bytes = e->program->commands[n->command].param_bytes;
  crec__update *u = &sl->entries[e->upd_count++];
  u->node = n->dev;
  u->offset = 0;
  u->size = bytes;
  u->value = e->upd_bytes;
  memcpy(sl->values + e->upd_bytes, n->param_block, bytes);
  e->upd_bytes += (bytes + 7u) & ~(size_t)7u;
}

/* Gives the updater this replay's count of entries (in the control block: its
 * parameters stay as recorded) and enables it, or disables it when there are
 * none (it costs a kernel launch in each replay it runs in). The updater
 * takes the slot e->next_slot by counting its own runs, so the launch that
 * follows must run it, or fail (then neither side counts it). */
static crec_status upd_arm(crec_exec *e, const char *fn) {
  crec_status s = CREC_OK;
  static const char what[] = "crec's device-side updater";
  if (!e->upd_count) {
    if (e->updater_enabled) {
      CREC__CU_STEP(s, fn, what, e->cu, cuGraphNodeSetEnabled, e->exec, e->updater, 0);
      if (!s) e->updater_enabled = false;
    }
    return s;
  }
  e->upd_ctl->slots[e->next_slot].count = (uint32_t)e->upd_count;
  if (!e->updater_enabled) {
    CREC__CU_STEP(s, fn, what, e->cu, cuGraphNodeSetEnabled, e->exec, e->updater, 1);
    if (!s) e->updater_enabled = true;
  }
  return s;
}

/* After the launch of a replay whose updater ran: its slot is in flight until
 * the launch finishes, and the next replay fills the next slot. */
static crec_status upd_launched(crec_exec *e, CUstream stream, const char *fn) {
  crec__upd_slot *sl = &e->slots[e->next_slot];
  crec_status s = CREC_OK;
  CREC__CU_STEP(s, fn, "the device-side updater's table", e->cu, cuEventRecord, sl->done, stream);
  if (s) return s;
  sl->in_flight = true;
  e->next_slot = (e->next_slot + 1) % CREC__UPD_SLOTS;
  e->upd_runs++;
  e->stats.device_node_updates += e->upd_count;
  e->stats.device_update_launches++;
  return CREC_OK;
}

/* Node by node; with `device`, the device-path nodes through the updater. */
static crec_status update_per_node(crec_exec *e, size_t num_dirty, bool device, const char *fn) {
  crec_status s = CREC_OK;
  for (size_t k = 0; k < num_dirty; k++) {
    crec__node *n = &e->nodes[e->dirty[k]];
    if (device && n->device_path) {
      /* a slot is taken (and waited for, if still in use) only by a replay with entries */
      if (!e->upd_count && (s = upd_begin(e, fn))) return s;
      upd_add(e, n);
      n->template_stale = true;
      continue;
    }
    if (n->kind == NODE_TRACED || n->kind == NODE_CUSTOM) {
      s = n->kind == NODE_TRACED ? crec__trace_update(e, n, &e->next, fn) : crec__custom_update(e, n, &e->next, fn);
      if (s) return s;
      continue;
    }
    if ((s = apply(e, n, &e->next, e->exec, fn))) return s;
    n->template_stale = true;
    e->stats.device_path_host_updates += n->device_path;
  }
  /* an import's child graph nodes whose nodes were set: once each */
  if (e->import && (s = crec__import_flush(e, fn))) return s;
  if (e->updater && (s = upd_arm(e, fn))) return s;
  e->stats.per_node_updates++;
  return CREC_OK;
}

/* Brings the template graph up to this execution's values: its dirty nodes and
 * those updated in the executable graph alone since (stale). */
static crec_status refresh_template(crec_exec *e, const char *fn) {
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
  return CREC_OK;
}

/* Brings the template graph up to date, then updates the executable graph from
 * it in one call. Returns CREC_ERR_UNSUPPORTED when the driver refuses the
 * update, so the caller can fall back. */
static crec_status update_whole(crec_exec *e, const char *fn) {
  crec_status s = refresh_template(e, fn);
  if (s) return s;
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

/* ---- variants ----
 * An exec recorded with variants keeps several executable graphs of its one
 * graph, each with the values it was last launched with. The active one's live
 * in the exec's fields; a launch first picks the one that already holds its
 * slots (nothing to update), else the least recently launched, and makes it
 * active. The pending lists are then rebuilt against that one's values, so
 * everything after works as with one executable graph. */

/* Makes variant `w` active: the active one's fields go back to its entry. */
static void variant_swap(crec_exec *e, uint32_t w) {
  crec__variant *a = &e->variants[e->active], *b = &e->variants[w];
  a->exec = e->exec, a->last = e->last, a->comm_ids = e->comm_ids, a->block = e->variant_block;
  a->cur = e->cur, a->next = e->next, a->poisoned = e->poisoned, a->uploaded = e->uploaded;
  e->exec = b->exec, e->last = b->last, e->comm_ids = b->comm_ids, e->variant_block = b->block;
  e->cur = b->cur, e->next = b->next, e->poisoned = b->poisoned, e->uploaded = b->uploaded;
  e->active = w;
}

/* Whether variant `w` (not the active one, whose values live in the exec's
 * fields) holds the slots as bound: buffers, bound scalars, communicators. */
static bool variant_holds(const crec_exec *e, uint32_t w) {
  const crec_program *p = e->program;
  const crec__variant *v = &e->variants[w];
  for (size_t i = 0; i < p->num_arguments; i++)
    if (!same_binding(e->bound[i], v->last[i])) return false;
  for (size_t j = 0; j < p->num_bound_scalars; j++) {
    size_t si = e->scalar_of_binding[j];
    if (!same_scalar(p, si, &e->bound_scalars[j], &v->cur.scalars[si])) return false;
  }
  for (size_t k = 0; k < p->num_comms; k++)
    if (!same_comm(e->bound_comms[k], v->cur.comms[k], v->comm_ids[k])) return false;
  return true;
}

/* The variant to launch with the slots as bound, the active one excluded (the
 * caller found it does not hold them): one that holds them, else the least
 * recently launched. */
static uint32_t variant_pick(const crec_exec *e) {
  uint32_t lru = e->active;
  for (uint32_t k = 0; k < e->num_variants; k++) {
    if (k == e->active) continue;
    if (variant_holds(e, k)) return k;
    if (lru == e->active || e->variants[k].used < e->variants[lru].used) lru = k;
  }
  return lru;
}

/* Before a launch: one on another stream than the last waits for the last
 * (each executable graph's launches are ordered by CUDA, different ones' are
 * not, and they share the exec's temporaries). */
static crec_status variant_order(crec_exec *e, CUstream stream, const char *fn) {
  if (!e->order_recorded || stream == e->order_stream) return CREC_OK;
  CREC__CU_TRY(fn, "ordering the launches of the exec's variants", e->cu, cuStreamWaitEvent, stream, e->order_event, 0);
  return CREC_OK;
}

/* After a launch: the event the next launch on another stream waits for, and the counters. */
static crec_status variant_launched(crec_exec *e, CUstream stream, size_t num_dirty, const char *fn) {
  CREC__CU_TRY(fn, "ordering the launches of the exec's variants", e->cu, cuEventRecord, e->order_event, stream);
  e->order_stream = stream;
  e->order_recorded = true;
  if (e->active != e->last_launched) {
    e->stats.variant_switches++;
    e->stats.variant_hits += num_dirty == 0;
    e->last_launched = e->active;
  }
  e->variants[e->active].used = ++e->variant_tick;
  return CREC_OK;
}

/* ---- pending slots ----
 * Both ways of binding end in one place: crec_exec_bind_*() stage a slot in
 * e->bound (checked) and list it as pending; crec_exec_replay() stages every
 * slot that differs from the last execution the same way. launch_pending()
 * then works from the pending lists alone, so a launch costs what was bound. */

static uint8_t *arg_mark(crec_exec *e, size_t i) { return &e->pending_mark[i]; }
static uint8_t *scalar_mark(crec_exec *e, size_t j) { return &e->pending_mark[e->program->num_arguments + j]; }
static uint8_t *comm_mark(crec_exec *e, size_t k) {
  return &e->pending_mark[e->program->num_arguments + e->program->num_bound_scalars + k];
}

static void pend_arg(crec_exec *e, size_t i, crec_binding b) {
  e->bound[i] = b;
  uint8_t *m = arg_mark(e, i);
  if (!*m) *m = 1, e->pending[e->num_pending++] = (uint32_t)i;
}
static void pend_scalar(crec_exec *e, size_t j, crec_value v) {
  e->bound_scalars[j] = v;
  uint8_t *m = scalar_mark(e, j);
  if (!*m) *m = 1, e->pending_scalars[e->num_pending_scalars++] = (uint32_t)j;
}
static void pend_comm(crec_exec *e, size_t k, crec_comm *c) {
  e->bound_comms[k] = c;
  uint8_t *m = comm_mark(e, k);
  if (!*m) *m = 1, e->pending_comms[e->num_pending_comms++] = (uint32_t)k;
}

/* Forgets the pending lists; `revert`: the slots go back to the last execution's. */
static void clear_pending(crec_exec *e, bool revert) {
  for (size_t k = 0; k < e->num_pending; k++) {
    uint32_t i = e->pending[k];
    *arg_mark(e, i) = 0;
    if (revert) e->bound[i] = e->last[i];
  }
  for (size_t k = 0; k < e->num_pending_scalars; k++) {
    uint32_t j = e->pending_scalars[k];
    *scalar_mark(e, j) = 0;
    if (revert) e->bound_scalars[j] = e->cur.scalars[e->scalar_of_binding[j]];
  }
  for (size_t k = 0; k < e->num_pending_comms; k++) {
    uint32_t c = e->pending_comms[k];
    *comm_mark(e, c) = 0;
    if (revert) e->bound_comms[c] = e->cur.comms[c];
  }
  e->num_pending = e->num_pending_scalars = e->num_pending_comms = 0;
}

/* After a switch of variants: the slots as bound stay, and the pending lists
 * become those that differ from the new active one's values. */
static void variant_repend(crec_exec *e) {
  const crec_program *p = e->program;
  clear_pending(e, false);
  for (size_t i = 0; i < p->num_arguments; i++)
    if (!same_binding(e->bound[i], e->last[i])) pend_arg(e, i, e->bound[i]);
  for (size_t j = 0; j < p->num_bound_scalars; j++) {
    size_t si = e->scalar_of_binding[j];
    if (!same_scalar(p, si, &e->bound_scalars[j], &e->cur.scalars[si])) pend_scalar(e, j, e->bound_scalars[j]);
  }
  for (size_t k = 0; k < p->num_comms; k++)
    if (!same_comm(e->bound_comms[k], e->cur.comms[k], e->comm_ids[k])) pend_comm(e, k, e->bound_comms[k]);
}

/* Whether the slots bound since the last launch all equal the active variant's values. */
static bool pending_all_equal(const crec_exec *e) {
  const crec_program *p = e->program;
  for (size_t k = 0; k < e->num_pending; k++) {
    uint32_t i = e->pending[k];
    if (!same_binding(e->bound[i], e->last[i])) return false;
  }
  for (size_t k = 0; k < e->num_pending_scalars; k++) {
    uint32_t j = e->pending_scalars[k];
    size_t si = e->scalar_of_binding[j];
    if (!same_scalar(p, si, &e->bound_scalars[j], &e->cur.scalars[si])) return false;
  }
  for (size_t k = 0; k < e->num_pending_comms; k++) {
    uint32_t c = e->pending_comms[k];
    if (!same_comm(e->bound_comms[c], e->cur.comms[c], e->comm_ids[c])) return false;
  }
  return true;
}

/* Before a launch (once) with slots pending that the active variant does not
 * hold: the variant that holds them becomes active, else the least recently
 * launched one, and the pending lists are rebuilt against its values. A slot
 * bound one by one was checked when it was bound; one staged from whole
 * bindings is checked after this if it is still pending (it differs from what
 * the chosen graph holds, which was checked when it was bound). */
static void variant_choose(crec_exec *e) {
  if (e->num_variants < 2 || !(e->num_pending || e->num_pending_scalars || e->num_pending_comms) ||
      pending_all_equal(e))
    return;
  variant_swap(e, variant_pick(e));
  variant_repend(e);
}

/* The slots as bound now, as whole bindings (for the checks that span slots). */
static crec_bindings bound_view(const crec_exec *e) {
  const crec_program *p = e->program;
  crec_bindings b = CREC_BINDINGS_INIT;
  b.buffers = e->bound, b.num_buffers = p->num_arguments;
  b.scalars = e->bound_scalars, b.num_scalars = p->num_bound_scalars;
  b.communicators = e->bound_comms, b.num_communicators = p->num_comms;
  return b;
}

static void note_scalar(crec_exec *e, size_t i) {
  const crec_program *p = e->program;
  if (e->scalar_changed[i] || !scalar_changed(p, &e->cur, &e->next, i)) return;
  e->scalar_changed[i] = 1;
  e->schanged[e->num_schanged++] = (uint32_t)i;
}

/* This execution's values in `next` (equal to `cur` but for the pending slots
 * that changed): the arguments that changed go to e->changed, the scalars that
 * changed to e->schanged; a host function runs only when one of its inputs
 * changed. Slots that span a check (whole ranges of dynamic-size arguments)
 * are checked here. */
static crec_status stage_values(crec_exec *e, size_t *num_changed, const char *fn) {
  const crec_program *p = e->program;
  size_t n = 0;
  bool dynamic_changed = false;
  for (size_t k = 0; k < e->num_pending; k++) {
    uint32_t i = e->pending[k];
    if (same_binding(e->bound[i], e->last[i])) continue;
    e->changed[n++] = i;
    dynamic_changed |= p->buffers[p->arguments[i]].dynamic_size;
  }
  *num_changed = n;
  e->num_schanged = 0;
  if (dynamic_changed) {
    crec_bindings view = bound_view(e);
    crec_status s = crec__check_dynamic(p, &view, fn);
    if (s) return s;
  }
  for (size_t k = 0; k < n; k++) {
    size_t i = e->changed[k], bi = p->arguments[i];
    e->next.base[bi] = (CUdeviceptr)(uintptr_t)e->bound[i].ptr;
    e->next.size[bi] = p->buffers[bi].dynamic_size ? e->bound[i].size : p->buffers[bi].size;
    for (uint32_t u = e->size_scalars.start[i]; u < e->size_scalars.start[i + 1]; u++) {
      uint32_t si = e->size_scalars.nodes[u];
      e->next.scalars[si].i64 = (int64_t)e->bound[i].size;
      note_scalar(e, si);
    }
  }
  for (size_t k = 0; k < e->num_pending_scalars; k++) {
    uint32_t j = e->pending_scalars[k], si = e->scalar_of_binding[j];
    e->next.scalars[si] = e->bound_scalars[j];
    note_scalar(e, si);
  }
  for (size_t k = 0; k < e->num_pending_comms; k++) {
    uint32_t c = e->pending_comms[k];
    e->next.comms[c] = e->bound_comms[c];
  }
  if (!e->num_schanged) return CREC_OK;
  for (size_t h = 0; h < p->num_host_fns; h++) {
    const crec__host_fn *f = &p->host_fns[h];
    bool run = false;
    for (size_t i = 0; i < f->num_inputs && !run; i++) run = e->scalar_changed[crec__index(f->inputs[i].id)];
    if (!run) continue;
    crec_status s = crec__run_host_fn(p, h, &e->next, &e->stats.host_function_calls, fn);
    if (s) return s;
    for (size_t i = 0; i < f->num_outputs; i++) note_scalar(e, crec__index(f->outputs[i].id));
  }
  return CREC_OK;
}

/* Brings `next` back to `cur` for what this execution staged, and clears the
 * scalar flags (a replay starts from next == cur). */
static void restore_next(crec_exec *e, size_t num_changed) {
  const crec_program *p = e->program;
  for (size_t k = 0; k < num_changed; k++) {
    size_t bi = p->arguments[e->changed[k]];
    e->next.base[bi] = e->cur.base[bi];
    e->next.size[bi] = e->cur.size[bi];
  }
  /* host functions may have written outputs equal to cur's, or none: either way
   * a staged scalar is flagged or already equal */
  for (size_t k = 0; k < e->num_schanged; k++) {
    uint32_t si = e->schanged[k];
    e->next.scalars[si] = e->cur.scalars[si];
    e->scalar_changed[si] = 0;
  }
  for (size_t k = 0; k < e->num_pending_comms; k++) {
    uint32_t c = e->pending_comms[k];
    e->next.comms[c] = e->cur.comms[c];
  }
  e->num_schanged = 0;
}

static crec_status refuse(crec_exec *e, size_t num_changed, size_t num_dirty, crec_status s) {
  clear_marks(e, num_dirty);
  restore_next(e, num_changed);
  return s;
}

/* The nodes that use a changed slot (every node after a failed update), into
 * e->dirty; returns how many. */
static size_t mark_dirty(crec_exec *e, size_t num_changed) {
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
  for (size_t k = 0; k < e->num_schanged; k++) mark(e, &e->scalar_uses, e->schanged[k], &num_dirty);
  for (size_t k = 0; k < e->num_pending_comms; k++) {
    uint32_t c = e->pending_comms[k];
    if (e->bound_comms[c]->id != e->comm_ids[c]) mark(e, &e->comm_uses, c, &num_dirty);
  }
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

/* Applies the dirty nodes to the executable graph as crec__update_choice()
 * says: node by node on the host, with the device-side updater taking the
 * device-path nodes, or in one whole-graph update (node by node when the driver
 * refuses it). A failure poisons the exec (some nodes may hold this execution's
 * values, others the last one's), so the next replay updates every node. A
 * device-path node set on the host keeps working: the host's set overrides what
 * the updater wrote before, and a later updater run overrides it in turn. */
static crec_status update_graph(crec_exec *e, size_t num_dirty, const char *fn) {
  crec_status s = CREC_OK;
  e->upd_count = 0;
  if (num_dirty == 0) {
    /* an updater left on would apply its last table again, which a later replay may be refilling */
    if (e->updater_enabled && (s = upd_arm(e, fn))) return s;
    e->stats.updates_skipped++;
    return CREC_OK;
  }
  size_t num_device = 0;
  if (e->updater)
    for (size_t k = 0; k < num_dirty; k++) num_device += e->nodes[e->dirty[k]].device_path;
  crec_update_strategy how = crec__update_choice(e, num_dirty, num_device);
  /* a host set of a device-updatable node while the device may be updating it is
   * undefined (cuGraphExecKernelNodeSetParams): while an updater run of a queued
   * launch has not finished, such nodes stay with the updater */
  if (how == CREC_UPDATE_PER_NODE && num_device && e->upd_runs != __atomic_load_n(&e->upd_ctl->done, __ATOMIC_ACQUIRE))
    how = CREC_UPDATE_DEVICE;
  bool whole = how == CREC_UPDATE_WHOLE_GRAPH;
  if (whole) {
    s = update_whole(e, fn);
    if (s == CREC_ERR_UNSUPPORTED) {
      /* this driver cannot update this graph in one call: per node from now on */
      e->whole_update_broken = true;
      whole = false;
      s = CREC_OK;
    }
  }
  if (!s && !whole) s = update_per_node(e, num_dirty, how == CREC_UPDATE_DEVICE, fn);
  e->poisoned = s != CREC_OK;
  if (!s) e->stats.nodes_updated += num_dirty;
  return s;
}

/* This execution's values become the last ones; the pending lists empty. */
static void commit_values(crec_exec *e, size_t num_changed) {
  const crec_program *p = e->program;
  for (size_t k = 0; k < num_changed; k++) {
    size_t i = e->changed[k], bi = p->arguments[i];
    e->cur.base[bi] = e->next.base[bi];
    e->cur.size[bi] = e->next.size[bi];
    e->last[i] = e->bound[i];
  }
  for (size_t k = 0; k < e->num_schanged; k++) {
    uint32_t si = e->schanged[k];
    e->cur.scalars[si] = e->next.scalars[si];
    e->scalar_changed[si] = 0;
  }
  e->num_schanged = 0;
  for (size_t k = 0; k < e->num_pending_comms; k++) {
    uint32_t c = e->pending_comms[k];
    e->cur.comms[c] = e->next.comms[c];
    e->comm_ids[c] = e->bound_comms[c]->id;
  }
  clear_pending(e, false);
}

/* ---- replays into a capturing stream ----
 * A replay on a stream that is being captured (someone else's graph: PyTorch's,
 * an inference server's) launches nothing: the template graph is brought to
 * this replay's values and added to the capture as one child graph node, after
 * the capture's current dependencies, and the capture goes on from it. The
 * child node is the driver's copy, owned by the outer graph; the executable
 * graphs keep the last execution's values and the slots stay as bound, so the
 * exec goes on as if this replay had not happened. */

crec_status crec__stream_capturing(const crec__cu *cu, CUstream stream, const char *verb, const char *fn,
                                   bool *capturing) {
  CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
  CUresult r = CREC__CU(cu, cuStreamIsCapturing, stream, &cs);
  if (r == CUDA_ERROR_STREAM_CAPTURE_IMPLICIT)
    return crec__error(CREC_ERR_UNSUPPORTED, fn,
                       "the stream is the legacy default stream, and another stream is being captured in global "
                       "mode (cuStreamIsCapturing: CUDA_ERROR_STREAM_CAPTURE_IMPLICIT); %s on a stream of your "
                       "own, which can be captured", verb);
  if (r != CUDA_SUCCESS) return crec__cu_fail(fn, r, "cuStreamIsCapturing", "the stream's capture status");
  if (cs == CU_STREAM_CAPTURE_STATUS_INVALIDATED)
    return crec__error(CREC_ERR_CUDA, fn,
                       "the stream's capture was invalidated by an earlier call (cuStreamIsCapturing: "
                       "CU_STREAM_CAPTURE_STATUS_INVALIDATED); end the capture and begin it again");
  *capturing = cs == CU_STREAM_CAPTURE_STATUS_ACTIVE;
  return CREC_OK;
}

/* What a replay cannot add to a capture: what a child graph node cannot hold,
 * or a replay cannot put in the template. With `child`, the replay's graph must
 * fit in a child graph (XLA traces a command-buffer custom call into one), so
 * conditional nodes are refused too. */
static crec_status capture_refusal(const crec_exec *e, bool child, const char *fn) {
  static const char why[] = "cannot replay into a capturing stream";
  if (e->eager_only)
    return crec__error(CREC_ERR_UNSUPPORTED, fn, "%s: the exec runs eagerly (its control flow is decided on the host)",
                       why);
  if (child && e->num_conds)
    return crec__error(CREC_ERR_UNSUPPORTED, fn,
                       "%s that is traced into a child graph (XLA's command buffers): the exec's graph has "
                       "conditional nodes (while, if, switch), which a child graph cannot hold (a replay on a "
                       "stream being captured adds them to the captured graph itself)", why);
  /* built into the capture (conditional nodes): a host node's table of addresses would be the build's, freed after it */
  for (size_t ci = 0; e->num_conds && ci < e->program->num_commands; ci++) {
    const crec__command *c = &e->program->commands[ci];
    char label[160];
    if (c->kind == CREC_COMMAND_HOST && c->hostcb->fn_buffers)
      return crec__error(CREC_ERR_UNSUPPORTED, fn,
                         "%s: %s is a host callback given its operands' addresses, whose table a replay built into "
                         "the captured graph (the exec has while, if or switch commands) cannot keep alive", why,
                         crec__command_label(e->program, ci, label, sizeof label));
  }
  if (e->updater)
    return crec__error(CREC_ERR_UNSUPPORTED, fn, "%s: the exec was recorded with device_updates", why);
  for (size_t ni = 0; ni < e->num_nodes; ni++) {
    const crec__node *n = &e->nodes[ni];
    char label[160];
    if (n->kind == NODE_TRACED || n->kind == NODE_CUSTOM)
      return crec__error(CREC_ERR_UNSUPPORTED, fn, "%s: %s is a %s, whose graph only the executable graph holds", why,
                         crec__command_label(e->program, n->command, label, sizeof label),
                         n->kind == NODE_TRACED ? "library call" : "custom command");
    if (n->kind == NODE_IMPORTED && ((const crec__import_node *)n->ext)->depth)
      return crec__error(CREC_ERR_UNSUPPORTED, fn,
                         "%s: node %s of the imported graph is rebound inside a child graph", why,
                         ((const crec__import_node *)n->ext)->label);
  }
  return CREC_OK;
}

crec_status crec_exec_capturable(const crec_exec *e) {
  static const char fn[] = "crec_exec_capturable";
  if (!e) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'exec' is NULL");
  return capture_refusal(e, true, fn);
}

/* Adds this replay (its values staged in `next`, its dirty nodes marked) to
 * the graph being captured on `stream`; capture_refusal() passed. */
static crec_status replay_into_capture(crec_exec *e, CUstream stream, size_t num_dirty, const char *fn) {
  static const char what[] = "adding the replay to the stream's capture";
  CUstreamCaptureStatus cs;
  CUgraph outer = NULL;
  const CUgraphNode *deps = NULL;
  const CUgraphEdgeData *edges = NULL; /* asked for, so that the query is not lossy; the node waits fully */
  size_t num_deps = 0;
  CREC__CU_TRY(fn, what, e->cu, cuStreamGetCaptureInfo, stream, &cs, NULL, &outer, &deps, &edges, &num_deps);
  if (e->num_conds) {
    /* a child graph cannot hold conditional nodes: the program's nodes go into the outer graph itself, after
     * the capture's dependencies (copied: the driver's array lives until the next capture call) */
    CUgraphNode *sinks = NULL, *after = crec__malloc((num_deps ? num_deps : 1) * sizeof *after);
    size_t num_sinks = 0;
    if (!after) return crec__oom(fn);
    if (num_deps) memcpy(after, deps, num_deps * sizeof *after);
    crec_status s = crec__build_into(e, &e->next, outer, after, num_deps, &sinks, &num_sinks, fn);
    crec__free(after);
    if (!s && num_sinks)
      CREC__CU_STEP(s, fn, what, e->cu, cuStreamUpdateCaptureDependencies, stream, sinks, NULL, num_sinks,
                    CU_STREAM_SET_CAPTURE_DEPENDENCIES);
    crec__free(sinks);
    if (!s) e->stats.captured_replays++;
    return s;
  }
  crec_status s = refresh_template(e, fn);
  CUgraphNode node = NULL;
  CREC__CU_STEP(s, fn, what, e->cu, cuGraphAddChildGraphNode, &node, outer, deps, num_deps, e->graph);
  /* the template holds this replay's values, the executable graphs the last execution's */
  for (size_t k = 0; k < num_dirty; k++) e->nodes[e->dirty[k]].template_stale = true;
  CREC__CU_STEP(s, fn, what, e->cu, cuStreamUpdateCaptureDependencies, stream, &node, NULL, 1,
                CU_STREAM_SET_CAPTURE_DEPENDENCIES);
  if (!s) e->stats.captured_replays++;
  return s;
}

/* An eager exec runs the program whole: the slots as bound, checked together. */
static crec_status launch_eagerly(crec_exec *e, CUstream stream, const char *fn) {
  crec_bindings view = bound_view(e);
  crec_status s = crec__check_bindings(e->program, e->required, &view, fn);
  if (!s) s = replay_eagerly(e, &view, stream, fn);
  if (s) return s;
  for (size_t k = 0; k < e->num_pending; k++) e->last[e->pending[k]] = e->bound[e->pending[k]];
  for (size_t k = 0; k < e->num_pending_comms; k++)
    e->comm_ids[e->pending_comms[k]] = e->bound_comms[e->pending_comms[k]]->id;
  clear_pending(e, false);
  return CREC_OK;
}

/* Stages what is pending, updates the nodes that use it, and launches. On a
 * failure the graph keeps the last execution's values (or is poisoned, see
 * update_graph()) and the pending slots stay pending. `z`: the caller's zone,
 * begun where its checks began, for crec_exec_profile()'s phases. */
static crec_status launch_pending(crec_exec *e, CUstream stream, crec__zone *z, const char *fn) {
  bool pushed = false, capturing = false;
  crec_status s = crec__enter(e->cu, e->ctx, &pushed, fn);
  if (s) return s;
  if (!(s = crec__stream_capturing(e->cu, stream, "replay", fn, &capturing)) && capturing)
    s = capture_refusal(e, false, fn);
  if (s || e->eager_only) {
    crec__leave(e->cu, pushed);
    return s ? s : launch_eagerly(e, stream, fn);
  }
  size_t num_changed = 0, num_dirty = 0;
  if (!(s = stage_values(e, &num_changed, fn))) {
    num_dirty = mark_dirty(e, num_changed);
    /* until the graph is touched, a failure leaves it with the last execution's values */
    s = prepare_dirty(e, num_dirty, fn);
  }
  if (s || capturing) {
    if (!s) s = replay_into_capture(e, stream, num_dirty, fn);
    crec__leave(e->cu, pushed);
    return refuse(e, num_changed, num_dirty, s); /* a replay into a capture keeps the last execution's values */
  }
  if (e->num_graveyard) crec__graveyard_collect(e, false);
  uint64_t wholes = e->stats.whole_graph_updates;
  /* an executable graph never launched is uploaded before its first update (exec_internal.h says why) */
  if (num_dirty && !e->uploaded) {
    CREC__CU_STEP(s, fn, "uploading the graph before its first update", e->cu, cuGraphUpload, e->exec, stream);
    if (s) {
      crec__leave(e->cu, pushed);
      return refuse(e, num_changed, num_dirty, s);
    }
    e->uploaded = true;
  }
  CREC__ZONE_END(*z, e->phase_ns[CREC__PHASE_CHECKS]);
  if ((s = update_graph(e, num_dirty, fn))) {
    crec__leave(e->cu, pushed);
    return refuse(e, num_changed, num_dirty, s);
  }
  if (CREC__ZONE_LIVE(*z)) {
    /* nothing to update: the check that said so counts with the checks */
    int phase = num_dirty == 0                          ? CREC__PHASE_CHECKS
                : e->stats.whole_graph_updates != wholes ? CREC__PHASE_WHOLE
                : e->upd_count                           ? CREC__PHASE_DEVICE
                                                         : CREC__PHASE_PER_NODE;
    CREC__ZONE_END(*z, e->phase_ns[phase]);
    if (phase != CREC__PHASE_CHECKS) e->phase_runs[phase]++;
    e->phase_runs[CREC__PHASE_CHECKS]++;
  }
  e->stats.last_nodes_updated = num_dirty;
  clear_marks(e, num_dirty);
  commit_values(e, num_changed);
  if (e->num_variants > 1) s = variant_order(e, stream, fn);
  if (!s) CREC__CU_STEP(s, fn, NULL, e->cu, cuGraphLaunch, e->exec, stream);
  if (!s && e->num_variants > 1) s = variant_launched(e, stream, num_dirty, fn);
  /* the updater's table stays untouched until this launch finished; a launch
   * that failed applied none of it, so every node is updated next time */
  if (e->upd_count) {
    if (!s) s = upd_launched(e, stream, fn);
    e->poisoned |= s != CREC_OK;
  }
  /* evicted child graphs retire after this launch; if that cannot be arranged now
   * they wait for the next launch, or the exec's destruction */
  if (!s) (void)crec__graveyard_after_launch(e, stream, fn);
  crec__leave(e->cu, pushed);
  if (!s) {
    e->stats.replays++;
    e->uploaded = true;
  }
  CREC__ZONE_END(*z, e->phase_ns[CREC__PHASE_LAUNCH]);
  if (CREC__ZONE_LIVE(*z)) e->phase_runs[CREC__PHASE_LAUNCH]++;
  return s;
}

/* ---- whole bindings ---- */

/* The exec holds one rank's work: a communicator may change, its rank and device may not. */
static crec_status check_comm_rank(const crec_exec *e, size_t i, const crec_comm *now, const char *fn) {
  if (now->rank == e->comm_rank[i] && now->device == e->comm_device[i]) return CREC_OK;
  return crec__error(CREC_ERR_BINDING, fn,
                     "communicator binding %zu ('%s'): rank %d on device %d, but the exec was recorded for rank %d "
                     "on device %d", i, e->program->comms[i].name, now->rank, now->device, e->comm_rank[i],
                     e->comm_device[i]);
}

/* Stages every slot of `b` that differs from the last execution (one tight
 * pass over the arguments), unchecked: check_pending() checks them once the
 * variant to launch is chosen. */
static void stage_bindings(crec_exec *e, const crec_bindings *b) {
  const crec_program *p = e->program;
  for (size_t i = 0; i < p->num_arguments; i++)
    if (!same_binding(b->buffers[i], e->last[i])) pend_arg(e, i, b->buffers[i]);
  for (size_t j = 0; j < p->num_bound_scalars; j++) {
    size_t si = e->scalar_of_binding[j];
    if (!same_scalar(p, si, &b->scalars[j], &e->cur.scalars[si])) pend_scalar(e, j, b->scalars[j]);
  }
  for (size_t k = 0; k < p->num_comms; k++)
    if (!same_comm(b->communicators[k], e->cur.comms[k], e->comm_ids[k])) pend_comm(e, k, b->communicators[k]);
}

/* Checks the pending arguments: only those differ from what the graph about to
 * launch holds, and that was checked when it was bound. */
static crec_status check_pending(const crec_exec *e, const char *fn) {
  for (size_t k = 0; k < e->num_pending; k++) {
    uint32_t i = e->pending[k];
    crec_status s = crec__check_binding(e->program, e->required, i, &e->bound[i], fn);
    if (s) return s;
  }
  return CREC_OK;
}

/* The end of both whole-binding replays, once every slot that differs is
 * staged: the variant to launch chosen, what still differs from it checked
 * (an eager exec checks everything as it runs), then the launch; on a failure
 * nothing stays pending. */
static crec_status launch_staged(crec_exec *e, CUstream stream, crec__zone *z, const char *fn) {
  variant_choose(e);
  crec_status s = e->eager_only ? CREC_OK : check_pending(e, fn);
  if (!s) s = launch_pending(e, stream, z, fn);
  if (s) clear_pending(e, true);
  return s;
}

crec_status crec_exec_replay(crec_exec *e, const crec_bindings *b, crec_stream stream) {
  static const char fn[] = "crec_exec_replay";
  if (!e) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'exec' is NULL");
  CREC__ZONE_BEGIN(z, e->phase_timing); /* its checks count as the launch's first phase */
  const crec_program *p = e->program;
  crec_status s = report_trip(e, fn, "; this replay launched nothing");
  if (s) return s;
  s = e->eager_only ? crec__check_bindings(p, e->required, b, fn) : crec__check_binding_shape(p, b, fn);
  if (s) return s;
  for (size_t i = 0; i < p->num_comms && !s; i++) s = check_comm_rank(e, i, b->communicators[i], fn);
  if (s) return s;
  /* every slot is bound anew: what was bound one by one and not launched is dropped */
  clear_pending(e, true);
  stage_bindings(e, b);
  return launch_staged(e, stream, &z, fn);
}

crec_status crec_exec_replay_buffers(crec_exec *e, void *const *ptrs, size_t count, crec_stream stream) {
  static const char fn[] = "crec_exec_replay_buffers";
  if (!e) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'exec' is NULL");
  const crec_program *p = e->program;
  if (count != p->num_arguments)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "argument 'count': %zu addresses, but the program has %zu arguments",
                       count, p->num_arguments);
  if (count && !ptrs) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'ptrs' is NULL");
  if (p->num_bound_scalars || p->num_comms)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn,
                       "the program binds %zu scalars and %zu communicators besides its buffers: use crec_exec_replay",
                       p->num_bound_scalars, p->num_comms);
  CREC__ZONE_BEGIN(z, e->phase_timing);
  crec_status s = report_trip(e, fn, "; this replay launched nothing");
  if (s) return s;
  clear_pending(e, true);
  for (size_t i = 0; i < count; i++) {
    crec_binding b = {ptrs[i], e->last[i].size};
    if (!same_binding(b, e->last[i])) pend_arg(e, i, b);
  }
  return launch_staged(e, stream, &z, fn);
}

/* ---- bind as you go ---- */

static crec_status check_slot(const crec_exec *e, size_t index, size_t count, const char *what, const char *fn) {
  if (!e) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'exec' is NULL");
  if (index >= count)
    return crec__error(CREC_ERR_OUT_OF_RANGE, fn, "argument 'index': %s %zu, but the program has %zu", what, index,
                       count);
  return CREC_OK;
}

crec_status crec_exec_bind_buffer(crec_exec *e, size_t index, void *ptr, uint64_t size) {
  static const char fn[] = "crec_exec_bind_buffer";
  crec_status s = check_slot(e, index, e ? e->program->num_arguments : 0, "argument", fn);
  if (s) return s;
  crec_binding b = {ptr, size};
  if ((s = crec__check_binding(e->program, e->required, index, &b, fn))) return s;
  pend_arg(e, index, b);
  return CREC_OK;
}

crec_status crec_exec_bind_scalar(crec_exec *e, size_t index, crec_value value) {
  static const char fn[] = "crec_exec_bind_scalar";
  crec_status s = check_slot(e, index, e ? e->program->num_bound_scalars : 0, "bound scalar", fn);
  if (s) return s;
  pend_scalar(e, index, value);
  return CREC_OK;
}

crec_status crec_exec_bind_comm(crec_exec *e, size_t index, crec_comm *comm) {
  static const char fn[] = "crec_exec_bind_comm";
  crec_status s = check_slot(e, index, e ? e->program->num_comms : 0, "communicator slot", fn);
  if (s) return s;
  if ((s = crec__check_comm(e->program, index, comm, e->comm_device[index], fn))) return s;
  if ((s = check_comm_rank(e, index, comm, fn))) return s;
  pend_comm(e, index, comm);
  return CREC_OK;
}

crec_status crec_exec_clear_bindings(crec_exec *e) {
  if (!e) return crec__error(CREC_ERR_NULL_POINTER, "crec_exec_clear_bindings", "argument 'exec' is NULL");
  clear_pending(e, true);
  return CREC_OK;
}

crec_status crec_exec_launch(crec_exec *e, crec_stream stream) {
  static const char fn[] = "crec_exec_launch";
  if (!e) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'exec' is NULL");
  crec_status s = report_trip(e, fn, "; this launch launched nothing");
  if (s) return s;
  CREC__ZONE_BEGIN(z, e->phase_timing);
  variant_choose(e);
  uint64_t captured = e->stats.captured_replays;
  if ((s = launch_pending(e, stream, &z, fn))) return s;
  if (e->stats.captured_replays == captured) e->stats.launches++; /* as replays counts: launched ones */
  return CREC_OK;
}
