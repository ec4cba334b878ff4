/* crec_record: from a program and its first bindings to an instantiated CUDA graph. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "cupti_internal.h"
#include "exec_internal.h"

/* Frees a CUDA object the exec holds, if it holds one, and counts it gone. */
#define RELEASE(handle, destroy) \
  do {                           \
    if (handle) {                \
      destroy;                   \
      CREC__CUDA_LIVE(-1);       \
    }                            \
  } while (0)

void crec_exec_destroy(crec_exec *e) {
  if (!e) return;
  /* an imported exec that a program's graph command holds: the last to let go frees it */
  if (__atomic_fetch_sub(&e->holds, 1, __ATOMIC_ACQ_REL) > 0) return;
  const crec__cu *cu = e->cu;
  bool pushed = false;
  if (cu && e->ctx && crec__enter(cu, e->ctx, &pushed, NULL) == CREC_OK) {
    RELEASE(e->exec, cu->cuGraphExecDestroy(e->exec));
    for (size_t i = 0; i < e->num_nodes; i++)
      if (e->nodes[i].kind == NODE_TRACED) {
        crec__trace_free(e, e->nodes[i].ext);
        e->nodes[i].ext = NULL;
      }
    crec__graveyard_collect(e, true);
    RELEASE(e->retire_event, cu->cuEventDestroy(e->retire_event));
    RELEASE(e->capture_stream, cu->cuStreamDestroy(e->capture_stream));
    RELEASE(e->graph, cu->cuGraphDestroy(e->graph));
    RELEASE(e->eager_event, cu->cuEventDestroy(e->eager_event));
    RELEASE(e->arena, cu->cuMemFree(e->arena));
    RELEASE(e->host_arena, cu->cuMemFreeHost((void *)(uintptr_t)e->host_arena));
    RELEASE(e->tables, cu->cuMemFree(e->tables));
    RELEASE(e->tripped, cu->cuMemFreeHost((void *)e->tripped));
    for (size_t i = 0; i < CREC__UPD_SLOTS; i++) {
      RELEASE(e->slots[i].done, cu->cuEventDestroy(e->slots[i].done));
      RELEASE(e->slots[i].entries, cu->cuMemFreeHost(e->slots[i].entries));
    }
    RELEASE(e->upd_ctl, cu->cuMemFreeHost(e->upd_ctl));
    RELEASE(e->upd_seq, cu->cuMemFree(e->upd_seq));
    for (uint32_t k = 0; e->variants && k < e->num_variants; k++)
      if (k != e->active) RELEASE(e->variants[k].exec, cu->cuGraphExecDestroy(e->variants[k].exec));
    RELEASE(e->order_event, cu->cuEventDestroy(e->order_event));
    crec__leave(cu, pushed);
  }
  for (uint32_t k = 0; e->variants && k < e->num_variants; k++) {
    if (k == e->active) continue;
    crec__free(e->variants[k].block);
    crec__values_free(&e->variants[k].cur);
    crec__values_free(&e->variants[k].next);
  }
  crec__free(e->variants);
  crec__free(e->variant_block);
  for (size_t i = 0; i < e->num_nodes; i++) {
    if (e->nodes[i].kind == NODE_CUSTOM) crec__custom_state_free(e->nodes[i].ext);
    /* caches not freed above: the context could not be entered (graphs need none) */
    if (e->nodes[i].kind == NODE_TRACED) crec__trace_free(e, e->nodes[i].ext);
  }
  crec__bump_free(&e->params);
  crec__free(e->nodes);
  crec__free(e->conds);
  crec__free(e->embedded);
  crec__free(e->graveyard);
  crec__free(e->slab_uses);
  crec__free(e->slab);
  crec__free(e->slab_dirty);
  crec__values_free(&e->cur);
  crec__values_free(&e->next);
  crec__import_free(e->import);
  crec__program_release(e->program);
  if (e->profile_armed) crec__cupti_disarm();
  crec__free(e);
  crec__live(-1);
}

/* The caller's options, with defaults for what an older header lacks, checked. */
static crec_status take_options(const crec_record_options *options, crec_record_options *o, const char *fn) {
  /* a caller compiled against an older header passes fewer fields: the rest keep their defaults */
  *o = (crec_record_options)CREC_RECORD_OPTIONS_INIT;
  crec_status s = crec__take_struct(o, sizeof *o, options, offsetof(crec_record_options, max_loop_iterations), fn,
                                    "argument 'options'", "CREC_RECORD_OPTIONS_INIT");
  if (s) return s;
  if (o->schedule != CREC_SCHEDULE_CONCURRENT && o->schedule != CREC_SCHEDULE_SEQUENTIAL)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "argument 'options': unknown schedule %d", (int)o->schedule);
  if (o->trace_cache_size > 65536)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "argument 'options': trace_cache_size %u is above 65536",
                       o->trace_cache_size);
  if (o->whole_update_percent > 100)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "argument 'options': whole_update_percent %u is above 100",
                       o->whole_update_percent);
  if ((unsigned)o->update_strategy > CREC_UPDATE_WHOLE_GRAPH)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "argument 'options': unknown update_strategy %d",
                       (int)o->update_strategy);
  if (o->update_strategy == CREC_UPDATE_DEVICE && !o->device_updates)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn,
                       "argument 'options': update_strategy CREC_UPDATE_DEVICE needs device_updates");
  if (o->update_strategy == CREC_UPDATE_WHOLE_GRAPH && o->device_updates)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn,
                       "argument 'options': update_strategy CREC_UPDATE_WHOLE_GRAPH with device_updates (the driver "
                       "refuses whole-graph updates of graphs with device-updatable nodes)");
  if (o->variants > CREC__VARIANTS_MAX)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "argument 'options': variants %u is above %d", o->variants,
                       CREC__VARIANTS_MAX);
  if (o->variants == 0) o->variants = 1;
  if (o->variants > 1 && (o->device_updates || o->whole_update_percent || o->update_strategy == CREC_UPDATE_WHOLE_GRAPH))
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn,
                       "argument 'options': variants %u with %s (each executable graph holds its own values, and "
                       "%s works on one: the device updater's node handles, or the template graph a whole-graph "
                       "update copies from)",
                       o->variants,
                       o->device_updates ? "device_updates"
                       : o->whole_update_percent ? "whole_update_percent"
                                                 : "update_strategy CREC_UPDATE_WHOLE_GRAPH",
                       o->device_updates ? "the updater" : "a whole-graph update");
  return CREC_OK;
}

/* An exec of `program` that holds nothing yet but its settings (counted live). */
static crec_exec *new_exec(const crec_program *program, const crec__cu *cu, const crec_record_options *o) {
  crec_exec *e = crec__calloc(1, sizeof *e);
  if (!e) return NULL;
  crec__live(1);
  crec__program_retain((crec_program *)program);
  e->program = (crec_program *)program;
  e->cu = cu;
  e->whole_update_percent = o->whole_update_percent;
  e->update_strategy = o->update_strategy;
  e->model = crec__default_update_model;
  e->legacy_conditionals = cu->driver_version < 12080 || o->legacy_conditionals;
  e->trace_cache_size = o->trace_cache_size ? o->trace_cache_size : 1;
  e->trace_child_graphs = o->trace_child_graphs != 0;
  e->loop_default = o->max_loop_iterations;
  e->device_updates = o->device_updates != 0;
  /* asked for, whole-graph updates are off on every chip (the driver refuses
   * them where the updater runs; a chip without it behaves the same) */
  e->whole_update_broken = e->device_updates;
  e->num_variants = o->variants;
  e->stats.struct_size = sizeof e->stats;
  return e;
}

/* What the exec needs loaded in its context (current): the plan, the modules and
 * constants, the set-condition kernels, GEMM, FFT and convolution plans,
 * cuSOLVER's handle, the capture stream. */
static crec_status load_state(crec_exec *e, crec__runtime *rt, const crec_record_options *o, bool conditions,
                              crec__loads *loads, const char *fn) {
  const crec_program *program = e->program;
  const crec__cu *cu = e->cu;
  /* planned once per program and schedule: later records share it */
  crec_status s = crec__runtime_plan(rt, o->schedule, fn, &e->plan);
  if (s) return s;
  if ((s = crec__ctx_state_get(program, cu, rt, e->ctx, fn, loads, &e->state))) return s;
  if (conditions && (s = crec__load_conditions(cu, rt, e->state, fn, loads))) return s;
  if ((s = crec__gemm_prepare(program, rt, e->state, fn))) return s;
  if ((s = crec__fft_prepare(program, cu, rt, e->state, loads, fn))) return s;
  if ((s = crec__cholesky_prepare(program, rt, e->state, fn))) return s;
  if ((s = crec__conv_prepare(program, cu, rt, e->state, loads, fn))) return s;
  if (rt->traced) {
    CREC__CU_STEP(s, fn, "the stream traced commands are captured on", cu, cuStreamCreate, &e->capture_stream,
                  CU_STREAM_NON_BLOCKING);
    if (s) {
      e->capture_stream = NULL;
      return s;
    }
    CREC__CUDA_LIVE(1);
  }
  return CREC_OK;
}

/* The per-slot arrays of the exec, zeroed, in one block (e->slab): what replays
 * compare against and what binding slot by slot needs. False when out of memory. */
static bool alloc_slots(crec_exec *e) {
  const crec_program *p = e->program;
  size_t na = p->num_arguments, nb = p->num_bound_scalars, nc = p->num_comms, num_size = 0;
  for (size_t i = 0; i < p->num_scalars; i++) num_size += p->scalars[i].kind == CREC_SCALAR_SIZE;
  const size_t sizes[] = {
      na * sizeof *e->required,      na * sizeof *e->last,           na * sizeof *e->changed,
      nc * sizeof *e->comm_ids,      nc * sizeof *e->comm_rank,      nc * sizeof *e->comm_device,
      na * sizeof *e->bound,         nb * sizeof *e->bound_scalars,  nc * sizeof *e->bound_comms,
      na * sizeof *e->pending,       nb * sizeof *e->pending_scalars, nc * sizeof *e->pending_comms,
      na + nb + nc,                  nb * sizeof *e->scalar_of_binding, p->num_scalars * sizeof *e->schanged,
      (na + 1) * sizeof *e->size_scalars.start, num_size * sizeof *e->size_scalars.nodes};
  size_t at[sizeof sizes / sizeof *sizes];
  uint8_t *b = crec__slab(sizeof sizes / sizeof *sizes, sizes, at);
  if (!b) return false;
  e->slab = b;
  e->required = (void *)(b + at[0]), e->last = (void *)(b + at[1]), e->changed = (void *)(b + at[2]);
  e->comm_ids = (void *)(b + at[3]), e->comm_rank = (void *)(b + at[4]), e->comm_device = (void *)(b + at[5]);
  e->bound = (void *)(b + at[6]), e->bound_scalars = (void *)(b + at[7]), e->bound_comms = (void *)(b + at[8]);
  e->pending = (void *)(b + at[9]), e->pending_scalars = (void *)(b + at[10]), e->pending_comms = (void *)(b + at[11]);
  e->pending_mark = b + at[12], e->scalar_of_binding = (void *)(b + at[13]), e->schanged = (void *)(b + at[14]);
  e->size_scalars.start = (void *)(b + at[15]), e->size_scalars.nodes = (void *)(b + at[16]);
  return true;
}

/* What binding slot by slot needs (crec_exec_bind_*): the slots as bound,
 * pending lists, each bound scalar's index, and the size scalars that follow
 * each argument's binding. */
static void bind_slots(crec_exec *e, const crec_bindings *bindings) {
  const crec_program *p = e->program;
  size_t na = p->num_arguments, nb = p->num_bound_scalars, nc = p->num_comms;
  if (na) memcpy(e->bound, bindings->buffers, na * sizeof *e->bound);
  if (nb) memcpy(e->bound_scalars, bindings->scalars, nb * sizeof *e->bound_scalars);
  if (nc) memcpy(e->bound_comms, bindings->communicators, nc * sizeof *e->bound_comms);
  for (size_t i = 0; i < p->num_scalars; i++) {
    const crec__scalar *sc = &p->scalars[i];
    if (sc->kind == CREC_SCALAR_BOUND) e->scalar_of_binding[sc->binding_index] = (uint32_t)i;
    else if (sc->kind == CREC_SCALAR_SIZE) e->size_scalars.start[p->buffers[sc->buffer].arg_index + 1]++;
  }
  for (size_t i = 0; i < na; i++) e->size_scalars.start[i + 1] += e->size_scalars.start[i];
  /* fill each argument's list in scalar order, through a moving cursor per argument */
  uint32_t *fill = e->changed; /* free until the first replay, and one per argument */
  memcpy(fill, e->size_scalars.start, na * sizeof *fill);
  for (size_t i = 0; i < p->num_scalars; i++)
    if (p->scalars[i].kind == CREC_SCALAR_SIZE) e->size_scalars.nodes[fill[p->buffers[p->scalars[i].buffer].arg_index]++] = (uint32_t)i;
}

/* The first execution's values: the bindings, the arena and where every buffer
 * lies, and what later replays compare against. */
static crec_status bind_first(crec_exec *e, crec__runtime *rt, const crec_bindings *bindings, const char *fn) {
  const crec_program *program = e->program;
  if (!alloc_slots(e) || crec__values_alloc(program, &e->cur) || crec__values_alloc(program, &e->next))
    return crec__oom(fn);
  memcpy(e->required, rt->required, program->num_arguments * sizeof *e->required);
  crec_status s = crec__eval_bindings(program, bindings, &e->cur, &e->stats.host_function_calls, fn);
  if (s) return s;
  if (e->plan->arena_bytes) {
    char what[80];
    snprintf(what, sizeof what, "temporary arena of %llu bytes", (unsigned long long)e->plan->arena_bytes);
    CREC__CU_STEP(s, fn, what, e->cu, cuMemAlloc, &e->arena, e->plan->arena_bytes);
    if (s) {
      e->arena = 0;
      return s;
    }
    CREC__CUDA_LIVE(1);
    /* zeroed once, and waited for (a replay may come on a stream that does not
     * wait for the legacy one): compute-sanitizer's initcheck checks a graph's
     * copies when the graph is launched, before the kernels that write their
     * sources in the same graph run, and reports a copy from a temporary on the
     * first launch. A program still may not count on the zeros (docs/mlir.md). */
    CREC__CU_STEP(s, fn, what, e->cu, cuMemsetD8Async, e->arena, 0, e->plan->arena_bytes, NULL);
    CREC__CU_STEP(s, fn, what, e->cu, cuStreamSynchronize, NULL);
    if (s) return s;
  }
  if ((s = crec__host_arena_alloc(e->cu, e->plan->host_arena_bytes, fn, &e->host_arena))) return s;
  crec__place_buffers(program, e->plan, e->arena, e->host_arena, e->state, &e->cur);
  /* a replay starts from next == cur and changes only what its bindings change */
  crec__values_copy(program, &e->next, &e->cur);
  if (program->num_arguments) memcpy(e->last, bindings->buffers, program->num_arguments * sizeof *e->last);
  for (size_t i = 0; i < program->num_comms; i++) {
    const crec_comm *cm = bindings->communicators[i];
    e->comm_ids[i] = cm->id;
    e->comm_rank[i] = cm->rank;
    e->comm_device[i] = cm->device;
  }
  for (size_t i = 0; i < program->num_arguments; i++) e->any_dynamic |= program->buffers[program->arguments[i]].dynamic_size;
  bind_slots(e, bindings);
  return CREC_OK;
}

/* The updater's tables (device updates): CREC__UPD_SLOTS page-locked slots of
 * one entry and the parameter bytes per device-path node, each with the event
 * that says its launch finished; the updater starts disabled. */
static crec_status make_slots(crec_exec *e, const char *fn) {
  crec_status s = CREC_OK;
  static const char what[] = "the device-side updater's tables";
  size_t bytes = e->upd_cap_entries * sizeof(crec__update) + e->upd_cap_bytes;
  for (size_t i = 0; i < CREC__UPD_SLOTS && e->upd_cap_entries && !s; i++) {
    crec__upd_slot *sl = &e->slots[i];
    void *h = NULL;
    CREC__CU_STEP(s, fn, what, e->cu, cuMemHostAlloc, &h, bytes, CU_MEMHOSTALLOC_DEVICEMAP);
    if (s) break;
    CREC__CUDA_LIVE(1);
    sl->entries = h;
    sl->values = (uint8_t *)h + e->upd_cap_entries * sizeof(crec__update);
    CREC__CU_STEP(s, fn, what, e->cu, cuMemHostGetDevicePointer, &sl->entries_dev, h, 0);
    sl->values_dev = sl->entries_dev + e->upd_cap_entries * sizeof(crec__update);
    e->upd_ctl->slots[i].entries = sl->entries_dev;
    e->upd_ctl->slots[i].values = sl->values_dev;
    CREC__CU_STEP(s, fn, what, e->cu, cuEventCreate, &sl->done, CU_EVENT_DISABLE_TIMING);
    if (s) sl->done = NULL;
    else CREC__CUDA_LIVE(1);
  }
  /* the device handles of the executable graph's nodes */
  for (size_t i = 0; i < e->num_nodes && !s; i++) {
    crec__node *n = &e->nodes[i];
    if (!n->device_path) continue;
    CUlaunchAttributeValue v;
    memset(&v, 0, sizeof v);
    CREC__CU_STEP(s, fn, what, e->cu, cuGraphKernelNodeGetAttribute, n->node,
                  CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE, &v);
    n->dev = v.deviceUpdatableKernelNode.devNode;
  }
  CREC__CU_STEP(s, fn, what, e->cu, cuGraphNodeSetEnabled, e->exec, e->updater, 0);
  /* a graph whose nodes are updated from the device is uploaded before its first launch */
  CREC__CU_STEP(s, fn, what, e->cu, cuGraphUpload, e->exec, NULL);
  CREC__CU_STEP(s, fn, what, e->cu, cuStreamSynchronize, NULL);
  e->uploaded = !s;
  e->stats.device_nodes = e->upd_cap_entries;
  return s;
}

/* The other executable graphs of an exec with variants, each instantiated from
 * the graph as recorded and holding the first execution's values, as the first
 * one does now; whole-graph updates are off (each graph holds its own values,
 * the template one set of them). */
static crec_status make_variants(crec_exec *e, const char *fn) {
  const crec_program *p = e->program;
  if (e->num_conds)
    return crec__error(CREC_ERR_UNSUPPORTED, fn,
                       "argument 'options': variants %u, but the graph holds %zu conditional node%s (the program's "
                       "control flow), and CUDA instantiates such a graph once (a second cuGraphInstantiateWithFlags "
                       "fails with CUDA_ERROR_NOT_SUPPORTED): record with variants 1",
                       e->num_variants, e->num_conds, e->num_conds == 1 ? "" : "s");
  if (e->import && e->import->num_children)
    return crec__error(CREC_ERR_UNSUPPORTED, fn,
                       "argument 'options': variants %u, but the imported graph has nodes to relocate inside %zu "
                       "child graph%s, which a replay sets through the one template graph: record with variants 1",
                       e->num_variants, e->import->num_children, e->import->num_children == 1 ? "" : "s");
  e->variants = crec__calloc(e->num_variants, sizeof *e->variants);
  if (!e->variants) return crec__oom(fn);
  e->whole_update_broken = true;
  crec_status s = CREC_OK;
  static const char what[] = "ordering the launches of the exec's variants";
  CREC__CU_STEP(s, fn, what, e->cu, cuEventCreate, &e->order_event, CU_EVENT_DISABLE_TIMING);
  if (s) {
    e->order_event = NULL;
    return s;
  }
  CREC__CUDA_LIVE(1);
  size_t na = p->num_arguments, nc = p->num_comms;
  for (uint32_t k = 1; k < e->num_variants; k++) {
    crec__variant *v = &e->variants[k];
    const size_t sizes[] = {na * sizeof *v->last, nc * sizeof *v->comm_ids};
    size_t at[2];
    uint8_t *b = v->block = crec__slab(2, sizes, at);
    if (!b || crec__values_alloc(p, &v->cur) || crec__values_alloc(p, &v->next)) return crec__oom(fn);
    v->last = (void *)(b + at[0]), v->comm_ids = (void *)(b + at[1]);
    if (na) memcpy(v->last, e->last, na * sizeof *v->last);
    if (nc) memcpy(v->comm_ids, e->comm_ids, nc * sizeof *v->comm_ids);
    crec__values_copy(p, &v->cur, &e->cur);
    crec__values_copy(p, &v->next, &e->next);
    char label[64];
    snprintf(label, sizeof label, "variant %u of %u", k + 1, e->num_variants);
    CREC__CU_STEP(s, fn, label, e->cu, cuGraphInstantiateWithFlags, &v->exec, e->graph, 0);
    if (s) {
      v->exec = NULL;
      return s;
    }
    CREC__CUDA_LIVE(1);
  }
  return CREC_OK;
}

/* The graph, what replays mark dirty in it, and its executable form. */
static crec_status instantiate(crec_exec *e, const char *fn) {
  const crec_program *program = e->program;
  uint64_t t0 = crec__now_ns();
  crec_status s = crec__build_graph(e, fn);
  if (s) return s;
  /* child graphs and handlers' nodes are updated in the exec only: the template
   * graph does not follow them, so a whole-graph update would undo them */
  for (size_t i = 0; i < e->num_nodes; i++)
    if (e->nodes[i].kind == NODE_TRACED || e->nodes[i].kind == NODE_CUSTOM) e->whole_update_broken = true;
  /* the driver refuses whole-graph updates of graphs with device-updatable nodes */
  if (e->updater) e->whole_update_broken = true;
  const size_t sizes[] = {e->num_nodes * sizeof *e->dirty, e->num_nodes, program->num_scalars};
  size_t at[3];
  uint8_t *b = e->slab_dirty = crec__slab(3, sizes, at);
  if (!b) return crec__oom(fn);
  e->dirty = (void *)(b + at[0]), e->dirty_mark = b + at[1], e->scalar_changed = b + at[2];
  uint64_t t1 = crec__now_ns();
  e->record_ns[CREC__RECORD_BUILD] = t1 - t0;
  CREC__CU_STEP(s, fn, NULL, e->cu, cuGraphInstantiateWithFlags, &e->exec, e->graph, 0);
  if (s) {
    e->exec = NULL;
    return s;
  }
  CREC__CUDA_LIVE(1);
  if (e->updater && (s = make_slots(e, fn))) return s;
  if (e->num_variants > 1 && (s = make_variants(e, fn))) return s;
  /* No explicit cuGraphUpload: the first launch uploads the graph on its own
   * stream, so record does not wait for the device. An explicit upload showed
   * no steady gain across runs (the bench's "upload stream experiment"). */
  e->stats.nodes = e->num_nodes;
  e->record_ns[CREC__RECORD_INSTANTIATE] = crec__now_ns() - t1;
  return CREC_OK;
}

crec_status crec_record(const crec_program *program, const crec_bindings *bindings,
                        const crec_record_options *options, crec_exec **out) {
  static const char fn[] = "crec_record";
  if (!out) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'out' is NULL");
  *out = NULL;
  if (!program) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'program' is NULL");
  return crec__record(program, bindings, options, NULL, fn, out);
}

crec_status crec__record(const crec_program *program, const crec_bindings *bindings,
                         const crec_record_options *options, crec__import *import, const char *fn,
                         crec_exec **out) {
  uint64_t t0 = crec__now_ns();
  crec_record_options o;
  crec_status s = take_options(options, &o, fn);
  if (s) {
    crec__import_free(import);
    return s;
  }
  crec__runtime *rt;
  const crec__cu *cu = NULL;
  if ((s = crec_program_validate(program))) s = crec__rethrow(s, fn);
  else if (!(s = crec__runtime_get(program, fn, &rt)) &&
           !(s = crec__check_bindings(program, import ? import->sizes : rt->required, bindings, fn)) &&
           !(s = crec__check_comms(program, bindings, o.device, fn)) && !(cu = crec__driver(fn)))
    s = CREC_ERR_NO_DEVICE;
  if (s) {
    crec__import_free(import);
    return s;
  }
  bool control = rt->control;
  /* without conditional nodes (before CUDA 12.3) a program with control flow
   * replays eagerly on the exec's arena, and the stats say so */
  bool eager_only = control && (cu->driver_version < 12030 || o.eager_control_flow);

  crec_exec *e = new_exec(program, cu, &o);
  if (!e) {
    crec__import_free(import);
    return crec__oom(fn);
  }
  e->import = import;
  uint64_t t1 = crec__now_ns();
  e->record_ns[CREC__RECORD_CHECKS] = t1 - t0;
  /* CUPTI's activities on before the graph is built, from record to destruction,
   * for crec_exec_profile() (replay/profile.c says why; it refuses execs without
   * a graph and imported ones: they are not armed) */
  if (o.profile && !eager_only && !import) {
    if ((s = crec__cupti_arm(fn))) {
      crec_exec_destroy(e);
      return s;
    }
    e->profile_armed = true;
  }
  bool pushed = false;
  if ((s = crec__use_device(cu, o.device, fn, &e->ctx))) goto fail;
  if ((s = crec__enter(cu, e->ctx, &pushed, fn))) goto fail;
  crec__loads loads = {0};
  if ((s = load_state(e, rt, &o, control && !eager_only, &loads, fn))) goto fail;
  uint64_t t2 = crec__now_ns();
  if ((s = bind_first(e, rt, bindings, fn))) goto fail;
  e->record_ns[CREC__RECORD_BIND] = crec__now_ns() - t2;
  /* an imported graph's arguments need what the work was captured with */
  if (import) memcpy(e->required, import->sizes, program->num_arguments * sizeof *e->required);
  /* device updates need the updater, which needs a chip it has an image for */
  if (e->device_updates && !eager_only && (s = crec__load_updater(cu, rt, e->state, fn, &loads))) goto fail;
  e->stats.modules_loaded = loads.modules;
  e->stats.modules_jit = loads.jit;
  e->stats.module_load_us = loads.ns / 1000;
  e->device_updates = e->device_updates && !eager_only && e->state->apply_updates;
  e->record_ns[CREC__RECORD_STATE] = crec__now_ns() - t1 - e->record_ns[CREC__RECORD_BIND];
  if (eager_only) e->eager_only = true, e->num_variants = 1;
  else if ((s = instantiate(e, fn))) goto fail;
  e->stats.variants = e->num_variants;
  crec__leave(cu, pushed);
  *out = e;
  return CREC_OK;
fail:
  crec__leave(cu, pushed);
  crec_exec_destroy(e);
  return s;
}

crec_status crec_exec_get_stats(const crec_exec *exec, crec_exec_stats *out) {
  static const char fn[] = "crec_exec_get_stats";
  if (!exec) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'exec' is NULL");
  if (!out) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'out' is NULL");
  return crec__give_struct(out, &exec->stats, sizeof exec->stats, offsetof(crec_exec_stats, launches), fn, "argument 'out'",
                           "CREC_EXEC_STATS_INIT");
}

/* How traced command `ci` sits in the exec's graph: "; inlined as 1 kernel
 * (name)" or "; a child graph node" (its first node, for a command emitted twice). */
static void describe_trace(const crec_exec *exec, uint32_t ci, crec__text *t) {
  for (size_t i = 0; i < exec->num_nodes; i++) {
    const crec__node *n = &exec->nodes[i];
    if (n->kind != NODE_TRACED || n->command != ci) continue;
    const crec__trace *tr = n->ext;
    if (!tr->num_inline) {
      crec__text_puts(t, "; a child graph node");
      return;
    }
    crec__text_printf(t, "; inlined as %zu kernel%s (", tr->num_inline, tr->num_inline == 1 ? "" : "s");
    const crec__trace_entry *en = &tr->entries[tr->installed];
    for (size_t k = 0; k < tr->num_inline; k++) {
      const char *name = NULL;
      if (exec->cu->cuFuncGetName(&name, en->kp[k].func) != CUDA_SUCCESS || !name) name = "?";
      crec__text_printf(t, "%s%s", k ? ", " : "", name);
    }
    crec__text_puts(t, ")");
    return;
  }
}

crec_status crec_exec_library_choices(const crec_exec *exec, char **out) {
  static const char fn[] = "crec_exec_library_choices";
  if (out) *out = NULL;
  if (!exec) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'exec' is NULL");
  if (!out) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'out' is NULL");
  if (exec->eager_only || exec->import || !exec->state)
    return crec__error(CREC_ERR_UNSUPPORTED, fn,
                       "the exec %s: record chose nothing for library calls",
                       exec->import ? "imports a captured graph" : "replays its program eagerly");
  const crec_program *p = exec->program;
  crec__text t = {0};
  crec__text_puts(&t, "");
  for (size_t i = 0; i < p->num_commands; i++) {
    crec_command_kind k = p->commands[i].kind;
    if (k != CREC_COMMAND_GEMM && k != CREC_COMMAND_FFT && k != CREC_COMMAND_CHOLESKY && k != CREC_COMMAND_CONV)
      continue;
    crec__text_printf(&t, "#%zu %s '%s': ", i, crec_command_kind_name(k), p->commands[i].name);
    size_t before = t.len;
    if (k == CREC_COMMAND_GEMM) crec__gemm_choice(p, exec->state, (uint32_t)i, &t);
    else if (k == CREC_COMMAND_FFT) crec__fft_choice(p, exec->state, (uint32_t)i, &t);
    else if (k == CREC_COMMAND_CHOLESKY) crec__cholesky_choice(p, exec->state, (uint32_t)i, &t);
    else crec__conv_choice(p, exec->state, (uint32_t)i, &t);
    if (t.len == before) crec__text_puts(&t, "no plan in this context");
    describe_trace(exec, (uint32_t)i, &t);
    crec__text_puts(&t, "\n");
  }
  if (t.failed) {
    crec__free(t.data);
    return crec__oom(fn);
  }
  *out = t.data;
  return CREC_OK;
}

crec_status crec_exec_dump_cuda_dot(const crec_exec *exec, const char *path) {
  static const char fn[] = "crec_exec_dump_cuda_dot";
  if (!exec) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'exec' is NULL");
  if (!path) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'path' is NULL");
  if (exec->eager_only)
    return crec__error(CREC_ERR_UNSUPPORTED, fn,
                       "this exec has no graph: it replays eagerly (no conditional nodes on this driver, or eager_control_flow)");
  if (!exec->cu->cuGraphDebugDotPrint)
    return crec__error(CREC_ERR_UNSUPPORTED, fn, "the CUDA driver has no cuGraphDebugDotPrint");
  CREC__CU_TRY(fn, path, exec->cu, cuGraphDebugDotPrint, exec->graph, path, CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE);
  return CREC_OK;
}
