/* What a replay does to the nodes of library commands: a traced command's
 * child graph is swapped for the one captured under the new addresses (from
 * its cache, or captured now), or an inlined one's kernel nodes are set from
 * that capture's kernels (evicted graphs go to the graveyard,
 * record/traced.c), and custom handlers update their own kernel nodes. */
#include <string.h>

#include "replay_internal.h"

/* ---- replay ---- */

static uint64_t key_hash(const uint64_t *key, size_t n) { return crec__hash(key, n * sizeof *key, 0); }

crec_status crec__trace_update(crec_exec *e, crec__node *n, const crec__values *v, const char *fn) {
  crec__trace *t = n->ext;
  const crec_program *p = e->program;
  uint64_t small[34];
  uint64_t *key = t->key_words <= 34 ? small : crec__malloc(t->key_words * sizeof *key);
  if (!key) return crec__oom(fn);
  crec__trace_key(p, v, t->command, key);
  size_t kb = t->key_words * sizeof *key;
  size_t hit = t->num_entries;
  for (size_t i = 0; i < t->num_entries && hit == t->num_entries; i++)
    if (memcmp(t->entries[i].key, key, kb) == 0) hit = i;
  crec_status s = CREC_OK;
  char label[200];
  if (hit < t->num_entries) {
    e->stats.trace_hits++;
  } else {
    e->stats.trace_misses++;
    uint64_t h = key_hash(key, t->key_words);
    for (size_t i = 0; i < t->num_evicted; i++)
      if (t->evicted[i] == h) {
        e->stats.trace_recaptures++;
        break;
      }
    uint64_t *copy = crec__malloc(kb + 1);
    CUgraph g = NULL;
    if (!copy) s = crec__oom(fn);
    if (!s && e->num_graveyard == e->cap_graveyard &&
        CREC__RESERVE(e->graveyard, e->cap_graveyard, e->num_graveyard + 1) != CREC_OK)
      s = crec__oom(fn);
    if (!s) s = crec__trace_capture(e, t->command, t->handler, v, &g, fn);
    if (s) {
      crec__free(copy);
      if (key != small) crec__free(key);
      return s;
    }
    memcpy(copy, key, kb);
    if (t->num_entries < t->cap_entries) {
      hit = t->num_entries++;
    } else {
      /* evict the least recently used entry; never the installed one, which the
       * exec holds until the swap below */
      hit = t->num_entries;
      for (size_t i = 0; i < t->num_entries; i++)
        if (i != t->installed && (hit == t->num_entries || t->entries[i].used < t->entries[hit].used)) hit = i;
      if (hit == t->num_entries) hit = t->installed; /* a cache of one */
      crec__trace_entry *old = &t->entries[hit];
      t->evicted[t->next_evicted] = key_hash(old->key, t->key_words);
      t->next_evicted = (t->next_evicted + 1) % t->cap_evicted;
      if (t->num_evicted < t->cap_evicted) t->num_evicted++;
      /* launches already enqueued may still run it: destroyed once they are done
       * (room was reserved above) */
      e->graveyard[e->num_graveyard++] = old->graph;
      crec__free(old->key);
      crec__free(old->kp);
    }
    t->entries[hit].graph = g;
    t->entries[hit].key = copy;
    t->entries[hit].kp = NULL;
  }
  if (key != small) crec__free(key);
  t->entries[hit].used = ++t->tick;
  if (t->num_inline) {
    if ((s = crec__trace_set_inline(e, t, hit, fn))) return s;
    t->installed = hit;
    return CREC_OK;
  }
  CUresult r = CREC__CU(e->cu, cuGraphExecChildGraphNodeSetParams, e->exec, n->node, t->entries[hit].graph);
  if (r == CUDA_ERROR_INVALID_VALUE || r == CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE)
    return crec__error(CREC_ERR_UNSUPPORTED, fn,
                       "%s: the work captured for the new addresses has another graph shape than at record, so it "
                       "cannot replace the recorded child graph (cuGraphExecChildGraphNodeSetParams failed: %s); "
                       "record again with these bindings",
                       crec__command_label(p, t->command, label, sizeof label),
                       r == CUDA_ERROR_INVALID_VALUE ? "CUDA_ERROR_INVALID_VALUE" : "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE");
  if (r != CUDA_SUCCESS)
    return crec__cu_fail(fn, r, "cuGraphExecChildGraphNodeSetParams", crec__command_label(p, t->command, label, sizeof label));
  t->installed = hit;
  return CREC_OK;
}

/* ---- custom commands ---- */

crec_status crec__custom_update(crec_exec *e, crec__node *n, const crec__values *v, const char *fn) {
  const crec_program *p = e->program;
  crec__custom_state *cs = n->ext;
  crec__custom_args a;
  crec_status s = crec__custom_args_make(p, v, n->command, &a, fn);
  if (!s) {
    crec_custom_context ctx = crec__custom_context(CREC__CUSTOM_UPDATE, p, e->cu, e->state, n->command, fn);
    ctx.state = cs;
    ctx.exec = e->exec;
    const crec_custom_handler *h = crec__handler_get(cs->handler);
    s = crec__custom_run(&ctx, h->update, h->user, &a.call, "update");
    if (!s) e->stats.custom_updates++;
  }
  crec__custom_args_free(&a);
  return s;
}
