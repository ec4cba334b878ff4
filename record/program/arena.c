/* Temporary-buffer arena planning: lifetimes over top-level program order,
 * then best-offset placement so temporaries never live together may share bytes. */
#include <stdlib.h>
#include <string.h>

#include "plan_internal.h"

/* Position of each command's top-level ancestor in the program body.
 * A control-flow command is created before anything in its regions, so one
 * pass in creation order sees every parent before its children. */
static void top_positions(const crec_program *p, size_t *top) {
  for (size_t c = 0; c < p->num_commands; c++) {
    const crec__command *cmd = &p->commands[c];
    const crec__region *r = &p->regions[cmd->region];
    top[c] = r->parent == CREC__NONE ? cmd->index_in_region : top[r->parent];
  }
}

static void use(crec__plan_temp *t, const crec_program *p, crec_buffer b, size_t pos) {
  size_t i = crec__index(b.id);
  if (p->buffers[i].kind != CREC_BUFFER_TEMPORARY) return;
  if (t[i].first > pos) t[i].first = pos;
  if (t[i].last < pos || t[i].last == SIZE_MAX) t[i].last = pos;
}

static int by_size_desc(const void *a, const void *b, void *ctx) {
  const crec__plan_temp *t = ctx;
  const uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  if (t[x].size != t[y].size) return t[x].size > t[y].size ? -1 : 1;
  if (t[x].first != t[y].first) return t[x].first < t[y].first ? -1 : 1;
  return x < y ? -1 : x > y;
}

/* A merge sort: C11 qsort has no context pointer for the sizes. */
static void sort_indices(uint32_t *v, size_t n, const crec__plan_temp *t, uint32_t *scratch) {
  if (n < 2) return;
  size_t h = n / 2;
  sort_indices(v, h, t, scratch);
  sort_indices(v + h, n - h, t, scratch);
  size_t i = 0, j = h, k = 0;
  while (i < h && j < n) scratch[k++] = by_size_desc(&v[j], &v[i], (void *)t) < 0 ? v[j++] : v[i++];
  while (i < h) scratch[k++] = v[i++];
  while (j < n) scratch[k++] = v[j++];
  memcpy(v, scratch, n * sizeof *v);
}

static bool live_together(const crec__plan_temp *a, const crec__plan_temp *b) {
  return a->first <= b->last && b->first <= a->last;
}

/* Places the used temporaries of one memory; returns that arena's peak. */
static uint64_t place(const crec_program *p, uint32_t alignment, crec__plan_temp *temps, crec_memory memory,
                      uint32_t *order, uint32_t *scratch, uint32_t *placed) {
  size_t nb = p->num_buffers, n = 0;
  for (size_t i = 0; i < nb; i++) {
    if (p->buffers[i].kind != CREC_BUFFER_TEMPORARY || p->buffers[i].memory != memory) continue;
    if (temps[i].first > temps[i].last) continue;
    order[n++] = (uint32_t)i;
  }
  sort_indices(order, n, temps, scratch);

  /* Largest first; each takes the lowest aligned offset that clears every
   * already-placed temporary it is live together with. */
  uint64_t peak = 0;
  size_t num_placed = 0;
  for (size_t k = 0; k < n; k++) {
    crec__plan_temp *t = &temps[order[k]];
    size_t m = 0;
    for (size_t q = 0; q < num_placed; q++)
      if (live_together(t, &temps[placed[q]])) scratch[m++] = placed[q];
    uint64_t offset = 0;
    bool moved = true;
    while (moved) { /* at most m passes: each move clears one more conflict */
      moved = false;
      for (size_t q = 0; q < m; q++) {
        const crec__plan_temp *o = &temps[scratch[q]];
        if (offset < o->offset + o->size && o->offset < offset + t->size) {
          offset = (o->offset + o->size + alignment - 1) / alignment * alignment;
          moved = true;
        }
      }
    }
    t->offset = offset;
    if (offset + t->size > peak) peak = offset + t->size;
    placed[num_placed++] = order[k];
  }
  return peak;
}

crec_status crec__plan_arena(const crec_program *p, uint32_t alignment, crec__plan_temp *temps,
                             uint64_t *peak_out, uint64_t *host_peak_out) {
  size_t nb = p->num_buffers, nc = p->num_commands;
  size_t *top = crec__malloc((nc ? nc : 1) * sizeof *top);
  uint32_t *order = crec__malloc((nb ? nb : 1) * sizeof *order);
  uint32_t *scratch = crec__malloc((nb ? nb : 1) * sizeof *scratch);
  uint32_t *placed = crec__malloc((nb ? nb : 1) * sizeof *placed);
  if (!top || !order || !scratch || !placed) {
    crec__free(top);
    crec__free(order);
    crec__free(scratch);
    crec__free(placed);
    return CREC_ERR_OUT_OF_MEMORY;
  }
  for (size_t i = 0; i < nb; i++) {
    temps[i].size = p->buffers[i].size;
    temps[i].first = SIZE_MAX;
    temps[i].last = SIZE_MAX;
    temps[i].offset = 0;
  }
  top_positions(p, top);
  for (size_t c = 0; c < nc; c++) {
    const crec__command *cmd = &p->commands[c];
    size_t pos = top[c];
    for (size_t a = 0; a < cmd->num_args; a++)
      if (cmd->args[a].arg.kind == CREC_ARG_BUFFER) use(temps, p, cmd->args[a].arg.range.buffer, pos);
    if (cmd->kind == CREC_COMMAND_MEMCPY || cmd->kind == CREC_COMMAND_MEMSET) use(temps, p, cmd->dst.buffer, pos);
    if (cmd->kind == CREC_COMMAND_MEMCPY) use(temps, p, cmd->src.buffer, pos);
    if (cmd->num_regions) use(temps, p, cmd->predicate.buffer, pos);
    for (size_t k = 0; k < cmd->num_ops; k++) use(temps, p, cmd->ops[k].range.buffer, pos);
  }
  /* unused temporaries: an empty interval (first > last) that overlaps nothing */
  for (size_t i = 0; i < nb; i++)
    if (p->buffers[i].kind == CREC_BUFFER_TEMPORARY && temps[i].first == SIZE_MAX) {
      temps[i].first = 1;
      temps[i].last = 0;
    }
  /* device temporaries in one arena, host temporaries in another */
  *peak_out = place(p, alignment, temps, CREC_MEMORY_DEVICE, order, scratch, placed);
  *host_peak_out = place(p, alignment, temps, CREC_MEMORY_HOST, order, scratch, placed);
  crec__free(top);
  crec__free(order);
  crec__free(scratch);
  crec__free(placed);
  return CREC_OK;
}
