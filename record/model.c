/* The update cost model (crec_update_model): for each replay, whether the nodes
 * that changed are set node by node on the host, through the device-side
 * updater, or in one whole-graph update, by what each is estimated to cost. */
#include <math.h>
#include <stddef.h>

#include "exec_internal.h"

/* Measured on an H200 with driver 580 (crec_bench_replay, 2026-12-04): host
 * per-node updates of 1,000 nodes 0.37 us each; the updater 0.12 us per node,
 * and about 4 us more than the host path for a handful of nodes (its arming,
 * the event, its kernel at the head of the graph); a whole-graph update 110 us
 * for 1,000 nodes when 1% changed, 405 us when all did; and G, 0.016 us per node
 * of the graph, fitted to crec's host path with 1% changed (383 us at 10,000
 * nodes against 37 that per_node_us alone gives; at 1,000 nodes it overestimates
 * up to 2x: 9.1 to 31.5 us measured in three runs, 19.7 estimated). It picks the
 * faster way in every row measured; the launch itself costs no more after a
 * change (the launch table). */
const crec_update_model crec__default_update_model = {sizeof(crec_update_model), 0.37, 4.0, 0.12, 0.11, 0.30, 0.016};

static bool has_device(const crec_exec *e) { return e->updater && e->upd_cap_entries; }
static bool has_whole(const crec_exec *e) { return !e->whole_update_broken; }

/* exec.h's formulas; G is paid by every path that changes the executable graph
 * on the host (the updater's path only when it sets nodes on the host or must
 * be enabled first). */
static void estimate(const crec_exec *e, size_t k, size_t k_dev, crec_update_estimate *o) {
  const crec_update_model *m = &e->model;
  double n = (double)e->num_nodes, graph = m->host_graph_node_us * n;
  o->per_node_us = m->per_node_us * (double)k + (k ? graph : 0);
  o->device_us = has_device(e) ? m->device_launch_us + m->device_node_us * (double)k_dev +
                                     m->per_node_us * (double)(k - k_dev) +
                                     (k > k_dev || !e->updater_enabled ? graph : 0)
                               : -1;
  o->whole_graph_us = has_whole(e) ? m->whole_graph_node_us * n + m->whole_changed_us * (double)k + graph : -1;
}

crec_update_strategy crec__update_choice(const crec_exec *e, size_t k, size_t k_dev) {
  if (k == 0) return CREC_UPDATE_PER_NODE;
  bool whole = has_whole(e), device = has_device(e) && k_dev;
  if (e->whole_update_percent && whole) {
    if ((uint64_t)k * 100 >= (uint64_t)e->whole_update_percent * e->num_nodes) return CREC_UPDATE_WHOLE_GRAPH;
    whole = false; /* below the caller's threshold: not whole, whatever the model says */
  }
  switch (e->update_strategy) {
    case CREC_UPDATE_PER_NODE:
      return CREC_UPDATE_PER_NODE;
    case CREC_UPDATE_DEVICE:
      return device ? CREC_UPDATE_DEVICE : CREC_UPDATE_PER_NODE;
    case CREC_UPDATE_WHOLE_GRAPH:
      return whole ? CREC_UPDATE_WHOLE_GRAPH : CREC_UPDATE_PER_NODE;
    case CREC_UPDATE_AUTO:
      break;
  }
  crec_update_estimate est;
  estimate(e, k, k_dev, &est);
  crec_update_strategy best = CREC_UPDATE_PER_NODE;
  double cost = est.per_node_us;
  if (device && est.device_us < cost) best = CREC_UPDATE_DEVICE, cost = est.device_us;
  if (whole && est.whole_graph_us < cost) best = CREC_UPDATE_WHOLE_GRAPH;
  return best;
}

crec_status crec_exec_get_update_model(const crec_exec *exec, crec_update_model *out) {
  static const char fn[] = "crec_exec_get_update_model";
  if (!exec) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'exec' is NULL");
  if (!out) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'out' is NULL");
  /* a caller built before host_graph_node_us passes the smaller struct */
  return crec__give_struct(out, &exec->model, sizeof exec->model, offsetof(crec_update_model, host_graph_node_us), fn,
                           "argument 'out'", "CREC_UPDATE_MODEL_INIT");
}

crec_status crec_exec_set_update_model(crec_exec *exec, const crec_update_model *model) {
  static const char fn[] = "crec_exec_set_update_model";
  if (!exec) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'exec' is NULL");
  if (!model) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'model' is NULL");
  crec_update_model m = exec->model;
  /* an older, smaller struct keeps the exec's host_graph_node_us */
  crec_status s = crec__take_struct(&m, sizeof m, model, offsetof(crec_update_model, host_graph_node_us), fn,
                                    "argument 'model'", "CREC_UPDATE_MODEL_INIT");
  if (s) return s;
  const struct {
    const char *name;
    double v;
  } costs[] = {{"per_node_us", m.per_node_us},
               {"device_launch_us", m.device_launch_us},
               {"device_node_us", m.device_node_us},
               {"whole_graph_node_us", m.whole_graph_node_us},
               {"whole_changed_us", m.whole_changed_us},
               {"host_graph_node_us", m.host_graph_node_us}};
  for (size_t i = 0; i < sizeof costs / sizeof *costs; i++)
    if (!isfinite(costs[i].v) || costs[i].v < 0)
      return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "argument 'model': %s is %g (a cost is finite and at least 0)",
                         costs[i].name, costs[i].v);
  m.struct_size = sizeof m;
  exec->model = m;
  return CREC_OK;
}

crec_status crec_exec_estimate_update(const crec_exec *exec, uint64_t changed, uint64_t changed_device,
                                      crec_update_estimate *out) {
  static const char fn[] = "crec_exec_estimate_update";
  if (!exec) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'exec' is NULL");
  if (!out) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'out' is NULL");
  if (changed > exec->num_nodes)
    return crec__error(CREC_ERR_OUT_OF_RANGE, fn, "argument 'changed': %llu nodes, but the graph has %zu",
                       (unsigned long long)changed, exec->num_nodes);
  uint64_t dev = has_device(exec) ? exec->upd_cap_entries : 0;
  if (changed_device > changed || changed_device > dev)
    return crec__error(CREC_ERR_OUT_OF_RANGE, fn,
                       "argument 'changed_device': %llu nodes, but %llu changed and the exec has %llu on the device path",
                       (unsigned long long)changed_device, (unsigned long long)changed, (unsigned long long)dev);
  crec_update_estimate est = CREC_UPDATE_ESTIMATE_INIT;
  estimate(exec, (size_t)changed, (size_t)changed_device, &est);
  est.choice = crec__update_choice(exec, (size_t)changed, (size_t)changed_device);
  return crec__give_struct(out, &est, sizeof est, sizeof est, fn, "argument 'out'", "CREC_UPDATE_ESTIMATE_INIT");
}
