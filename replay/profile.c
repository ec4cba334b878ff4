/* crec_exec_profile(): replays of an exec measured under CUPTI's activity API,
 * turned into spans per command and handed to crec_profile_create()
 * (record/program/profile.c does the analysis).
 *
 * Which node ran. A record of a graph launch carries the id of the node that
 * ran it, in the executable graph's numbering: the graph's id in the high 32
 * bits (the record's graphId), and in the low 32 an index. Measured on the H200
 * (CUDA 13.0, with a probe that launched known graphs under CUPTI): the nodes of the
 * top-level graph come first, in creation order; then, depth first, the nodes
 * of each graph nested in them (conditional bodies, child graphs) in the order
 * of their parent nodes, each graph's own nested graphs right after it (an IF
 * in a WHILE body comes before a child graph that follows the WHILE). Nodes
 * inside bodies keep one id in every iteration, and a body's nodes are reported
 * once for each of their runs only when CUPTI's activities were on before the
 * graph was instantiated: in a graph instantiated before, CUPTI reports each
 * body node once per launch whatever the iterations. So an exec with a loop is
 * profiled only when it was recorded with crec_record_options.profile, which
 * turns the activities on first (crec__cupti_arm, record/runtime/cupti.c). The template nodes have
 * ids of their own graph, so nothing maps them directly: this file numbers the
 * template the same way and checks each record against the node it lands on
 * (a kernel's name; a copy or fill, which in a body may run as the driver's own
 * kernel, "memcpy..."/"memset..."). A record that does not fit its node is
 * given to the one command whose kernels have its name; one that fits nothing
 * fails the profile rather than leave time out of it unsaid. Not yet measured:
 * a traced command's child after a swap (numbered from the capture installed
 * now). CREC_PROFILE_DEBUG=1 prints the numbering and every record left out,
 * to standard error. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crec/profile.h"
#include "cupti_internal.h"
#include "replay_internal.h"

/* Held by the profile in progress: the collector is the process's one. */
static pthread_mutex_t profiling = PTHREAD_MUTEX_INITIALIZER;

/* ---- the executable graph's numbering, rebuilt from the template ---- */

typedef struct slot {
  CUgraphNode node;
  CUgraphNodeType type;
  int64_t command;  /* -1: no command (crec's updater) */
  int64_t loop;     /* the command of the innermost WHILE whose body graph holds the node, or -1 */
  const char *name; /* a kernel node's function name, or NULL when unknown */
} slot;

typedef struct owner {
  CUgraphNode node;
  int64_t command;
  const crec__node *crec; /* the exec's node, when it is one (not a conditional or a handler's kernel) */
} owner;

static int by_node(const void *a, const void *b) {
  uintptr_t x = (uintptr_t)((const owner *)a)->node, y = (uintptr_t)((const owner *)b)->node;
  return x < y ? -1 : x > y;
}

typedef struct numbering {
  slot *v;
  size_t n, cap;
  owner *owners; /* crec's nodes and conditional nodes, sorted by node */
  size_t num_owners;
} numbering;

static const owner *owner_of(const numbering *m, CUgraphNode node) {
  owner key = {node, 0, NULL};
  return bsearch(&key, m->owners, m->num_owners, sizeof *m->owners, by_node);
}

static const crec__cond *cond_of(const crec_exec *e, CUgraphNode node) {
  for (size_t i = 0; i < e->num_conds; i++)
    if (e->conds[i].node == node) return &e->conds[i];
  return NULL;
}

static const char *kernel_name(const crec__cu *cu, CUgraphNode node) {
  CUDA_KERNEL_NODE_PARAMS kp;
  memset(&kp, 0, sizeof kp);
  if (cu->cuGraphKernelNodeGetParams(node, &kp) != CUDA_SUCCESS) return NULL;
  CUfunction f = kp.func;
  if (!f && kp.kern && cu->cuKernelGetFunction(&f, kp.kern) != CUDA_SUCCESS) return NULL;
  const char *name = NULL;
  if (!f || !cu->cuFuncGetName || cu->cuFuncGetName(&name, f) != CUDA_SUCCESS) return NULL;
  return name;
}

/* Numbers graph `g` (its nodes inherit `command` and `loop`) and, after all
 * of its nodes, each graph nested in them in node order, depth first: the
 * executable graph's order. `depth` bounds the recursion (crec nests a body
 * per loop, branch or traced command of the program). */
static crec_status number_one(const crec_exec *e, numbering *m, CUgraph g, int64_t command, int64_t loop,
                              unsigned depth, const char *fn) {
  const crec__cu *cu = e->cu;
  crec_status s = CREC_OK;
  if (depth > 4096) return crec__error(CREC_ERR_INTERNAL, fn, "graphs nested more than 4096 deep");
  size_t count = 0;
  CREC__CU_STEP(s, fn, "reading the graph's nodes", cu, cuGraphGetNodes, g, NULL, &count);
  if (s) return s;
  CUgraphNode *nodes = crec__malloc((count ? count : 1) * sizeof *nodes);
  if (!nodes) return crec__oom(fn);
  CREC__CU_STEP(s, fn, "reading the graph's nodes", cu, cuGraphGetNodes, g, nodes, &count);
  size_t first = m->n;
  for (size_t i = 0; !s && i < count; i++) {
    CUgraphNodeType type;
    CREC__CU_STEP(s, fn, "reading a node's type", cu, cuGraphNodeGetType, nodes[i], &type);
    if (s) break;
    /* a node crec did not make (a library's, a no-op) counts for its graph's command */
    const owner *o = owner_of(m, nodes[i]);
    int64_t c = e->updater && nodes[i] == e->updater ? -1 : o ? o->command : command;
    if (CREC__RESERVE(m->v, m->cap, m->n + 1) != CREC_OK) {
      s = crec__oom(fn);
      break;
    }
    m->v[m->n++] = (slot){nodes[i], type, c, loop, type == CU_GRAPH_NODE_TYPE_KERNEL ? kernel_name(cu, nodes[i]) : NULL};
  }
  crec__free(nodes);
  /* then the graphs nested in this one's nodes (m->v may move: index it) */
  size_t last = m->n;
  for (size_t i = first; !s && i < last; i++) {
    slot sl = m->v[i];
    const crec__cond *c = sl.type == CU_GRAPH_NODE_TYPE_CONDITIONAL ? cond_of(e, sl.node) : NULL;
    for (unsigned b = 0; !s && c && b < c->num_bodies; b++)
      s = number_one(e, m, c->bodies[b], c->command, c->loop ? (int64_t)c->command : loop, depth + 1, fn);
    if (!s && sl.type == CU_GRAPH_NODE_TYPE_GRAPH) {
      /* a traced command's: the capture installed now, which a replay may have swapped in */
      const owner *o = owner_of(m, sl.node);
      const crec__trace *t = o && o->crec && o->crec->kind == NODE_TRACED ? o->crec->ext : NULL;
      CUgraph child = t && t->num_entries ? t->entries[t->installed].graph : NULL;
      if (!child) CREC__CU_STEP(s, fn, "reading a child graph", cu, cuGraphChildGraphNodeGetGraph, sl.node, &child);
      if (!s) s = number_one(e, m, child, sl.command, loop, depth + 1, fn);
    }
  }
  return s;
}

/* Numbers the template graph of `e` as the executable graph's records do. */
static crec_status number_graph(const crec_exec *e, numbering *m, const char *fn) {
  /* the exec's nodes, its conditional nodes, the nodes of graph commands, and
   * every kernel of a nodes handler's custom command or of an inlined traced
   * command (the exec keeps only the last as its node) */
  size_t n = e->num_nodes + e->num_conds + e->num_embedded;
  for (size_t i = 0; i < e->num_nodes; i++) {
    if (e->nodes[i].kind == NODE_CUSTOM && e->nodes[i].ext) n += ((const crec__custom_state *)e->nodes[i].ext)->num_nodes;
    if (e->nodes[i].kind == NODE_TRACED && e->nodes[i].ext) n += ((const crec__trace *)e->nodes[i].ext)->num_inline;
  }
  m->owners = crec__malloc((n ? n : 1) * sizeof *m->owners);
  if (!m->owners) return crec__oom(fn);
  for (size_t i = 0; i < e->num_nodes; i++) {
    const crec__node *en = &e->nodes[i];
    m->owners[m->num_owners++] = (owner){en->node, en->command, en};
    const crec__custom_state *cs = en->kind == NODE_CUSTOM ? en->ext : NULL;
    for (size_t k = 0; cs && k < cs->num_nodes; k++)
      if (cs->nodes[k] != en->node) m->owners[m->num_owners++] = (owner){cs->nodes[k], en->command, NULL};
    /* an inlined traced command's kernels, the last of which is its node */
    const crec__trace *t = en->kind == NODE_TRACED ? en->ext : NULL;
    for (size_t k = 0; t && k < t->num_inline; k++)
      if (t->inline_nodes[k] != en->node) m->owners[m->num_owners++] = (owner){t->inline_nodes[k], en->command, NULL};
  }
  for (size_t i = 0; i < e->num_conds; i++) m->owners[m->num_owners++] = (owner){e->conds[i].node, e->conds[i].command, NULL};
  /* a graph command's nodes that no replay updates */
  for (size_t i = 0; i < e->num_embedded; i++)
    m->owners[m->num_owners++] = (owner){e->embedded[i].node, e->embedded[i].command, NULL};
  qsort(m->owners, m->num_owners, sizeof *m->owners, by_node);
  return number_one(e, m, e->graph, -1, -1, 0, fn);
}

/* Whether record `r` can be the work of slot `sl`. */
static bool fits(const crec__activity *r, const slot *sl) {
  switch (sl->type) {
    case CU_GRAPH_NODE_TYPE_KERNEL:
      return r->kind == CREC__ACTIVITY_KERNEL && (!sl->name || !r->name || strcmp(sl->name, r->name) == 0);
    case CU_GRAPH_NODE_TYPE_MEMCPY:
      return r->kind == CREC__ACTIVITY_MEMCPY || (r->kind == CREC__ACTIVITY_KERNEL && r->name && strncmp(r->name, "memcpy", 6) == 0);
    case CU_GRAPH_NODE_TYPE_MEMSET:
      return r->kind == CREC__ACTIVITY_MEMSET || (r->kind == CREC__ACTIVITY_KERNEL && r->name && strncmp(r->name, "memset", 6) == 0);
    default:
      return false;
  }
}

/* The one slot with a command whose kernel has `name` (for a record that did
 * not fit its own), or NULL when none or several commands have it. */
static const slot *by_name(const numbering *m, const char *name) {
  const slot *found = NULL;
  for (size_t i = 0; name && i < m->n; i++) {
    const slot *sl = &m->v[i];
    if (sl->command < 0 || !sl->name || strcmp(sl->name, name) != 0) continue;
    if (found && found->command != sl->command) return NULL;
    if (!found) found = sl;
  }
  return found;
}

static bool debugging(void) {
  const char *d = getenv("CREC_PROFILE_DEBUG");
  return d && *d && strcmp(d, "0") != 0;
}

static int by_start(const void *a, const void *b) {
  const crec__activity *x = *(const crec__activity *const *)a, *y = *(const crec__activity *const *)b;
  return x->start < y->start ? -1 : x->start > y->start;
}

/* Whether command `c` of `p` is a WHILE (its set kernels run in its own body
 * graph and, once, in the graph around it). */
static bool is_while(const crec_program *p, int64_t c) {
  return c >= 0 && (size_t)c < p->num_commands && p->commands[c].kind == CREC_COMMAND_WHILE;
}

/* The spans of the records: each record's command, and in a WHILE body graph
 * the iteration (the k-th run of its node in that replay, by start time), as
 * crec_profile_create() counts a loop's iterations: the loop's own set kernel in
 * its body has one; a WHILE's set kernel outside its own body (an inner loop's
 * entry) has none. A record that is incomplete or fits no node is left out and
 * counted in `*left_out`. */
static crec_status spans_of(const crec_program *program, const numbering *m, uint32_t replays,
                            crec_profile_span **out, size_t *num, size_t *left_out, const char *fn) {
  const crec__activities *col = crec__cupti_collected();
  crec_profile_span *spans = crec__malloc((col->n ? col->n : 1) * sizeof *spans);
  uint32_t *seen = crec__malloc((m->n ? m->n : 1) * sizeof *seen);
  const crec__activity **order = crec__malloc((col->n ? col->n : 1) * sizeof *order);
  if (!spans || !seen || !order) {
    crec__free(spans);
    crec__free(seen);
    crec__free(order);
    return crec__oom(fn);
  }
  bool debug = debugging();
  size_t n = 0;
  *left_out = 0;
  for (uint32_t rp = 0; rp < replays; rp++) {
    memset(seen, 0, (m->n ? m->n : 1) * sizeof *seen);
    size_t k = 0;
    for (size_t i = 0; i < col->n; i++)
      if (col->v[i].replay == rp) order[k++] = &col->v[i];
    qsort(order, k, sizeof *order, by_start);
    for (size_t i = 0; i < k; i++) {
      const crec__activity *r = order[i];
      uint64_t index = r->node_id & 0xffffffffu;
      bool complete = r->start != 0 && r->end >= r->start;
      const slot *sl = complete && (r->node_id >> 32) == col->graph_id && index < m->n && fits(r, &m->v[index])
                           ? &m->v[index]
                           : NULL;
      if (!sl && complete && r->kind == CREC__ACTIVITY_KERNEL) sl = by_name(m, r->name);
      if (!sl) {
        ++*left_out;
        if (debug)
          fprintf(stderr, "crec profile: replay %" PRIu32 ": a record of node index %" PRIu64 " (%s %s) fits no node\n",
                  rp, index, r->kind == CREC__ACTIVITY_KERNEL ? "kernel" : r->kind == CREC__ACTIVITY_MEMCPY ? "memcpy" : "memset",
                  r->name ? r->name : "");
        continue;
      }
      if (sl->command < 0) continue; /* crec's own: the updater */
      int32_t iteration = -1;
      if (sl->loop >= 0 && (sl->command == sl->loop || !is_while(program, sl->command)))
        iteration = (int32_t)seen[sl - m->v]++;
      spans[n++] = (crec_profile_span){{crec__handle(program, (size_t)sl->command)}, rp, iteration, r->start, r->end};
    }
  }
  crec__free(seen);
  crec__free(order);
  *out = spans;
  *num = n;
  return CREC_OK;
}

static void debug_numbering(const numbering *m) {
  if (!debugging()) return;
  for (size_t i = 0; i < m->n; i++)
    fprintf(stderr, "crec profile: node index %zu: type %d, command %" PRId64 ", loop %" PRId64 ", %s\n", i,
            (int)m->v[i].type, m->v[i].command, m->v[i].loop, m->v[i].name ? m->v[i].name : "-");
}

/* ---- the profile ---- */

static double now_us(void) { return (double)crec__now_ns() * 1e-3; }

/* `n` replays, each synchronized, their wall times in `us`; with `flush`, the
 * activity buffers are flushed after each, so that its records say which
 * replay they belong to. */
static crec_status replays(crec_exec *e, const crec_bindings *b, crec_stream stream, uint32_t n, double *us,
                           bool flush, const char *fn) {
  for (uint32_t i = 0; i < n; i++) {
    crec__cupti_collect_replay(i);
    double t0 = now_us();
    crec_status s = crec_exec_replay(e, b, stream);
    /* crec_stream_synchronize enters the exec's context (the legacy stream is the context's) */
    if (!s) s = crec_stream_synchronize(stream);
    if (s) return crec__rethrow(s, fn);
    if (us) us[i] = now_us() - t0;
    if (flush && (s = crec__cupti_flush(fn))) return s;
  }
  return CREC_OK;
}

/* Stops collecting: every record delivered (CUPTI's thread adds none to the
 * profile after this), and this profile's use of the activities ended. */
static void stop(bool using) {
  crec__cupti_collect_end();
  if (using) crec__cupti_disarm();
}

/* Whether `e`'s graph holds a WHILE node (whose body's runs CUPTI counts only
 * in a graph instantiated with the activities on). */
static bool has_loop(const crec_exec *e) {
  for (size_t i = 0; i < e->num_conds; i++)
    if (e->conds[i].loop) return true;
  return false;
}

crec_status crec_exec_profile(crec_exec *exec, const crec_bindings *bindings, crec_stream stream, uint32_t iters,
                              const crec_profile_options *options, crec_profile **out) {
  static const char fn[] = "crec_exec_profile";
  if (out) *out = NULL;
  if (!exec || !bindings || !out)
    return crec__error(CREC_ERR_NULL_POINTER, fn, "'%s' is NULL", !exec ? "exec" : !bindings ? "bindings" : "out");
  if (iters == 0) return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "iters is 0: profile at least one replay");
  crec_profile_options o = CREC_PROFILE_OPTIONS_INIT;
  crec_status s = crec__take_struct(&o, sizeof o, options, sizeof o, fn, "argument 'options'", "CREC_PROFILE_OPTIONS_INIT");
  if (s) return s;
  if (exec->import)
    return crec__error(CREC_ERR_UNSUPPORTED, fn,
                       "the exec is an imported graph's: its program has no commands to give the time to");
  if (exec->eager_only || !exec->exec)
    return crec__error(CREC_ERR_UNSUPPORTED, fn,
                       "the exec replays its program eagerly (eager_control_flow, or a driver without conditional "
                       "nodes): there is no graph to profile");
  if ((s = crec__cupti_library(fn))) return s;
  if (has_loop(exec) && !exec->profile_armed)
    return crec__error(CREC_ERR_UNSUPPORTED, fn,
                       "the exec has a while loop and was recorded without crec_record_options.profile: CUPTI "
                       "reports the nodes of a loop's body once per launch, whatever its iterations, in a graph "
                       "instantiated before its activities were on; record with .profile = 1");
  const crec_program *program = exec->program;
  double *plain = crec__malloc(iters * sizeof *plain), *profiled = crec__malloc(iters * sizeof *profiled);
  numbering m = {0};
  crec_profile_span *spans = NULL;
  size_t num_spans = 0, left_out = 0;
  bool using = false;
  if (!plain || !profiled) {
    s = crec__oom(fn);
    goto done;
  }
  /* one profile at a time, from the warm-up on: another's CUPTI would see these replays */
  pthread_mutex_lock(&profiling);
  /* a warm-up replay applies the bindings: a traced command's child graph may be
   * swapped by it, so the graph is numbered after it; then the plain replays */
  s = replays(exec, bindings, stream, 1, NULL, false, fn);
  bool pushed = false;
  if (!s && !(s = crec__enter(exec->cu, exec->ctx, &pushed, fn))) {
    s = number_graph(exec, &m, fn);
    crec__leave(exec->cu, pushed);
  }
  if (!s) debug_numbering(&m);
  if (!s) s = replays(exec, bindings, stream, iters, plain, false, fn);
  uint32_t graph_id = 0;
  if (!s) s = crec__cupti_graph_id(exec->exec, &graph_id, fn);
  if (!s && graph_id == 0)
    s = crec__error(CREC_ERR_CUDA, fn, "cuptiGetGraphExecId gave the exec's graph id 0, which records outside graphs carry");
  if (!s) s = crec__cupti_arm(fn);
  using = !s;
  /* records of the replays so far (an exec recorded with .profile has the
   * activities on throughout) are delivered now, while no profile collects */
  if (!s) s = crec__cupti_flush(fn);
  crec__cupti_collect_begin(graph_id, !s);
  /* the profiled replays' host phases too (launch_pending() adds them while set) */
  memset(exec->phase_ns, 0, sizeof exec->phase_ns);
  memset(exec->phase_runs, 0, sizeof exec->phase_runs);
  exec->phase_timing = !s;
  if (!s) s = replays(exec, bindings, stream, iters, profiled, true, fn);
  exec->phase_timing = false;
  stop(using);
  const crec__activities *col = crec__cupti_collected();
  if (!s && col->oom) s = crec__oom(fn);
  if (!s && col->dropped)
    s = crec__error(CREC_ERR_INVALID_PROGRAM, fn, "CUPTI dropped %zu activity records: the profile would miss them",
                    col->dropped);
  if (!s) s = spans_of(program, &m, iters, &spans, &num_spans, &left_out, fn);
  size_t records = col->n;
  crec__cupti_collect_begin(0, false);
  pthread_mutex_unlock(&profiling);
  if (s) goto done;
  /* time that fits no command would be missing from the report without a word: refuse */
  if (left_out || num_spans < iters) {
    s = crec__error(CREC_ERR_INVALID_PROGRAM, fn,
                    "of the %zu activity records of the exec's graph, %zu are incomplete or fit none of its nodes, "
                    "and %zu spans for %" PRIu32 " replays remain (CREC_PROFILE_DEBUG=1 lists the nodes and the "
                    "records left out)",
                    records, left_out, num_spans, iters);
    goto done;
  }
  o.replay_us = plain;
  o.num_replay_us = iters;
  o.profiled_us = profiled;
  o.num_profiled_us = iters;
  /* microseconds per replay that took the phase; -1 for a phase none took (with
   * the same bindings every time, the profiled replays update nothing) */
  double us[CREC__PHASES];
  for (int k = 0; k < CREC__PHASES; k++)
    us[k] = exec->phase_runs[k] ? (double)exec->phase_ns[k] * 1e-3 / (double)exec->phase_runs[k] : -1;
  o.host_binding_checks_us = us[CREC__PHASE_CHECKS];
  o.host_per_node_updates_us = us[CREC__PHASE_PER_NODE];
  o.host_whole_graph_updates_us = us[CREC__PHASE_WHOLE];
  o.host_device_updates_us = us[CREC__PHASE_DEVICE];
  o.host_launch_us = us[CREC__PHASE_LAUNCH];
  s = crec_profile_create(program, spans, num_spans, iters, &o, out);
  if (s) s = crec__rethrow(s, fn);
done:
  crec__free(plain);
  crec__free(profiled);
  crec__free(spans);
  crec__free(m.v);
  crec__free(m.owners);
  return s;
}
