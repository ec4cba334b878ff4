/* Dependency analysis: per region, edges from byte-range hazards on physical
 * addresses (arena offsets for temporaries), barriers and sequential mode,
 * then transitive reduction. */
#include <stdlib.h>
#include <string.h>

#include "access.h"
#include "plan_internal.h"

/* One byte range a command touches. `space` is the buffer index for arguments
 * and constants, ARENA for every temporary (their offsets are planned),
 * HOST_ORDER for host callbacks, which all write its one byte so that they run
 * in program order, GRAPH_ORDER for imported graphs likewise (captured work uses
 * memory of its own besides its operands: a capture pool, a library's
 * workspace, the buffer a copied argument is copied into, which two commands of
 * one import, or imports of one pool, share), and COMM_ORDER(slot) for the NCCL work over communicator
 * slot `slot` (collective starts, barriers across ranks), which runs in program
 * order too: NCCL needs every rank to run a communicator's collectives in the
 * same order, and two of them running at once on one rank could deadlock. */
typedef struct access {
  uint32_t space;
  bool write;
  uint64_t lo, hi; /* [lo, hi); hi may be UINT64_MAX for dynamic sizes */
} access;
#define ARENA (CREC__NONE - 1)
#define HOST_ORDER (CREC__NONE - 2)
#define GRAPH_ORDER (CREC__NONE - 3)
#define COMM_ORDER(slot) (CREC__NONE - 4 - (uint32_t)(slot))

/* True for a command that issues NCCL work: a collective start or a barrier
 * across ranks, unless it moves nothing between ranks. */
static bool issues_nccl(const crec__command *c) {
  return c->coll && c->coll->start == CREC__NONE && !c->coll->degenerate &&
         (c->kind == CREC_COMMAND_COLLECTIVE || c->kind == CREC_COMMAND_BARRIER);
}

typedef struct access_list {
  access *v;
  size_t n, cap;
} access_list;

/* A live access in a space, while walking a region. */
typedef struct live {
  uint32_t pos; /* position in the region */
  bool write;
  uint64_t lo, hi;
} live;

typedef struct live_list {
  live *v;
  size_t n, cap;
} live_list;

static crec_status push_access(access_list *l, const crec_program *p, const crec__plan_temp *temps,
                               crec_range r, bool write) {
  size_t b = crec__index(r.buffer.id);
  uint64_t end = crec__range_end(p, r);
  access a = {(uint32_t)b, write, r.offset, end};
  if (p->buffers[b].kind == CREC_BUFFER_TEMPORARY) {
    a.space = ARENA;
    a.lo += temps[b].offset;
    a.hi += temps[b].offset;
  }
  if (CREC__RESERVE(l->v, l->cap, l->n + 1) != CREC_OK) return CREC_ERR_OUT_OF_MEMORY;
  l->v[l->n++] = a;
  return CREC_OK;
}

/* A command's own ranges go to its access list: reads, then writes. */
typedef struct push_ctx {
  access_list *l;
  const crec_program *p;
  const crec__plan_temp *temps;
} push_ctx;

static crec_status push_range(void *user, crec_range r, crec_access how, uint32_t slot) {
  (void)slot;
  push_ctx *x = user;
  crec_status s = CREC_OK;
  if (how & CREC_ACCESS_READ) s = push_access(x->l, x->p, x->temps, r, false);
  if (!s && (how & CREC_ACCESS_WRITE)) s = push_access(x->l, x->p, x->temps, r, true);
  return s;
}

crec_status crec__command_ranges(const crec__command *c, crec__range_fn fn, void *user) {
  crec_status s = CREC_OK;
  switch (c->kind) {
    case CREC_COMMAND_LAUNCH:
      for (size_t a = 0; a < c->num_args && !s; a++) {
        const crec_arg *arg = &c->args[a].arg;
        if (arg->kind == CREC_ARG_BUFFER) s = fn(user, arg->range, arg->access, (uint32_t)a);
      }
      break;
    case CREC_COMMAND_MEMCPY:
      s = fn(user, c->src, CREC_ACCESS_READ, 0);
      if (!s) s = fn(user, c->dst, CREC_ACCESS_WRITE, 1);
      break;
    case CREC_COMMAND_MEMSET:
      s = fn(user, c->dst, CREC_ACCESS_WRITE, 0);
      break;
    case CREC_COMMAND_WHILE:
    case CREC_COMMAND_IF:
    case CREC_COMMAND_SWITCH:
      s = fn(user, c->predicate, CREC_ACCESS_READ, CREC__SLOT_PREDICATE);
      break;
    case CREC_COMMAND_GEMM:
    case CREC_COMMAND_FFT:
    case CREC_COMMAND_CHOLESKY:
    case CREC_COMMAND_CONV:
    case CREC_COMMAND_COLLECTIVE:
    case CREC_COMMAND_CUSTOM:
    case CREC_COMMAND_HOST:
    case CREC_COMMAND_GRAPH:
    case CREC_COMMAND_BARRIER: /* across ranks: its scratch, which control-flow parents must show */
      for (size_t k = 0; k < c->num_ops && !s; k++) s = fn(user, c->ops[k].range, c->ops[k].access, (uint32_t)k);
      break;
    default:
      break;
  }
  return s;
}

/* Fills the access list of every command; control-flow commands get the union
 * of their regions plus their predicate. Children are created after their
 * parent, so a pass in reverse creation order finishes every child first. */
static crec_status compute_accesses(const crec_program *p, const crec__plan_temp *temps,
                                    access_list *acc) {
  for (size_t ci = p->num_commands; ci-- > 0;) {
    const crec__command *c = &p->commands[ci];
    access_list *l = &acc[ci];
    push_ctx x = {l, p, temps};
    crec_status s = crec__command_ranges(c, push_range, &x);
    for (size_t r = 0; r < c->num_regions && !s; r++) {
      const crec__region *reg = &p->regions[c->regions[r]];
      for (size_t k = 0; k < reg->num_commands && !s; k++) {
        const access_list *child = &acc[reg->commands[k]];
        if (CREC__RESERVE(l->v, l->cap, l->n + child->n) != CREC_OK) {
          s = CREC_ERR_OUT_OF_MEMORY;
          break;
        }
        /* an empty child may have no list at all: memcpy from NULL is undefined */
        if (child->n) memcpy(l->v + l->n, child->v, child->n * sizeof *child->v);
        l->n += child->n;
      }
    }
    if (!s && (c->kind == CREC_COMMAND_HOST || c->kind == CREC_COMMAND_GRAPH || issues_nccl(c))) {
      uint32_t space = c->kind == CREC_COMMAND_HOST    ? HOST_ORDER
                       : c->kind == CREC_COMMAND_GRAPH ? GRAPH_ORDER
                                                       : COMM_ORDER(c->coll->comm);
      access a = {space, true, 0, 1};
      if (CREC__RESERVE(l->v, l->cap, l->n + 1) != CREC_OK) s = CREC_ERR_OUT_OF_MEMORY;
      else l->v[l->n++] = a;
    }
    if (s) return s;
  }
  return CREC_OK;
}

static bool overlap(uint64_t alo, uint64_t ahi, uint64_t blo, uint64_t bhi) {
  return alo < bhi && blo < ahi;
}

/* A binary max-heap of region positions (the reduction's frontier). */
typedef struct heap {
  uint32_t *v;
  size_t n, cap;
} heap;

static crec_status heap_push(heap *h, uint32_t x) {
  if (CREC__RESERVE(h->v, h->cap, h->n + 1) != CREC_OK) return CREC_ERR_OUT_OF_MEMORY;
  size_t i = h->n++;
  while (i > 0 && h->v[(i - 1) / 2] < x) {
    h->v[i] = h->v[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  h->v[i] = x;
  return CREC_OK;
}

static uint32_t heap_pop(heap *h) {
  uint32_t top = h->v[0], x = h->v[--h->n];
  size_t i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= h->n) break;
    if (c + 1 < h->n && h->v[c + 1] > h->v[c]) c++;
    if (h->v[c] <= x) break;
    h->v[i] = h->v[c];
    i = c;
  }
  if (h->n) h->v[i] = x;
  return top;
}

static int cmp_desc(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? 1 : x > y ? -1 : 0;
}

/* Work space shared by every region of one plan. */
typedef struct deps_ws {
  live_list *spaces;    /* per space (buffer index; the arena is the last) */
  uint32_t *touched;    /* spaces with live entries, to reset after a region */
  size_t num_touched, cap_touched;
  uint32_t *cand;       /* candidate predecessors of one command */
  size_t num_cand, cap_cand;
  uint32_t *mark;       /* per region position: stamp of the command whose ancestors it is in */
  size_t cap_mark;
  heap frontier;
  /* reduced predecessors per region position, as a linked CSR */
  uint32_t *pred_start, *pred_count;
  uint32_t *preds;
  size_t num_preds, cap_preds, cap_pos;
  uint32_t *last_comm_op; /* sequential schedules: per communicator slot, the region position of its last NCCL work */
  uint32_t *open;         /* sequential schedules: region positions of async starts not yet done */
  size_t num_open, cap_open;
} deps_ws;

/* Whether two commands touch overlapping bytes of one space, one of them writing. */
static bool conflict(const access_list *a, const access_list *b) {
  for (size_t i = 0; i < a->n; i++)
    for (size_t j = 0; j < b->n; j++)
      if (a->v[i].space == b->v[j].space && (a->v[i].write || b->v[j].write) &&
          overlap(a->v[i].lo, a->v[i].hi, b->v[j].lo, b->v[j].hi))
        return true;
  return false;
}

/* Position of a space in deps_ws.spaces: buffers, the arena, host order, then
 * one per communicator slot. */
static uint32_t space_index(const crec_program *p, uint32_t space) {
  uint32_t nb = (uint32_t)p->num_buffers;
  if (space == ARENA) return nb;
  if (space == HOST_ORDER) return nb + 1;
  if (space == GRAPH_ORDER) return nb + 2;
  if (space >= nb) return nb + 3 + (CREC__NONE - 4 - space); /* COMM_ORDER(slot): buffers are below nb */
  return space;
}

/* The number of spaces (deps_ws.spaces). */
static size_t num_spaces(const crec_program *p) { return p->num_buffers + 3 + p->num_comms; }

static live_list *space_list(deps_ws *w, const crec_program *p, uint32_t space) {
  return &w->spaces[space_index(p, space)];
}

static crec_status add_cand(deps_ws *w, uint32_t pos) {
  if (CREC__RESERVE(w->cand, w->cap_cand, w->num_cand + 1) != CREC_OK) return CREC_ERR_OUT_OF_MEMORY;
  w->cand[w->num_cand++] = pos;
  return CREC_OK;
}

/* Collects hazard candidates of command `pos` and records its accesses as live. */
static crec_status hazards(deps_ws *w, const crec_program *p, const access_list *l, uint32_t pos) {
  for (size_t k = 0; k < l->n; k++) {
    const access *a = &l->v[k];
    live_list *s = space_list(w, p, a->space);
    for (size_t e = 0; e < s->n; e++)
      if ((a->write || s->v[e].write) && s->v[e].pos != pos &&
          overlap(a->lo, a->hi, s->v[e].lo, s->v[e].hi))
        if (add_cand(w, s->v[e].pos)) return CREC_ERR_OUT_OF_MEMORY;
  }
  for (size_t k = 0; k < l->n; k++) {
    const access *a = &l->v[k];
    live_list *s = space_list(w, p, a->space);
    if (s->n == 0) {
      if (CREC__RESERVE(w->touched, w->cap_touched, w->num_touched + 1) != CREC_OK) return CREC_ERR_OUT_OF_MEMORY;
      w->touched[w->num_touched++] = space_index(p, a->space);
    }
    /* A write orders itself after everything it overlaps, so earlier entries it
     * covers completely are implied for any later command and can go. */
    if (a->write) {
      size_t keep = 0;
      for (size_t e = 0; e < s->n; e++)
        if (!(s->v[e].lo >= a->lo && s->v[e].hi <= a->hi)) s->v[keep++] = s->v[e];
      s->n = keep;
    }
    if (CREC__RESERVE(s->v, s->cap, s->n + 1) != CREC_OK) return CREC_ERR_OUT_OF_MEMORY;
    live e = {pos, a->write, a->lo, a->hi};
    s->v[s->n++] = e;
  }
  return CREC_OK;
}

static void reset_spaces(deps_ws *w) {
  for (size_t i = 0; i < w->num_touched; i++) w->spaces[w->touched[i]].n = 0;
  w->num_touched = 0;
}

/* Keeps the candidates of `pos` that no other kept candidate already reaches. */
static crec_status reduce(deps_ws *w, uint32_t pos) {
  if (w->num_cand > 1) qsort(w->cand, w->num_cand, sizeof *w->cand, cmp_desc); /* cand may be NULL */
  uint32_t stamp = pos + 1;
  w->frontier.n = 0;
  w->pred_start[pos] = (uint32_t)w->num_preds;
  w->pred_count[pos] = 0;
  uint32_t prev = CREC__NONE;
  for (size_t k = 0; k < w->num_cand; k++) {
    uint32_t c = w->cand[k];
    if (c == prev) continue;
    prev = c;
    /* expand ancestors above c: anything reachable at or below c is found by then */
    while (w->frontier.n && w->frontier.v[0] > c) {
      uint32_t v = heap_pop(&w->frontier);
      for (uint32_t i = 0; i < w->pred_count[v]; i++) {
        uint32_t u = w->preds[w->pred_start[v] + i];
        if (w->mark[u] != stamp) {
          w->mark[u] = stamp;
          if (heap_push(&w->frontier, u)) return CREC_ERR_OUT_OF_MEMORY;
        }
      }
    }
    if (w->mark[c] == stamp) continue; /* implied */
    w->mark[c] = stamp;
    if (heap_push(&w->frontier, c)) return CREC_ERR_OUT_OF_MEMORY;
    if (CREC__RESERVE(w->preds, w->cap_preds, w->num_preds + 1) != CREC_OK) return CREC_ERR_OUT_OF_MEMORY;
    w->preds[w->num_preds++] = c;
    w->pred_count[pos]++;
  }
  return CREC_OK;
}

/* Plans one region: fills the reduced predecessor lists of its positions. */
static crec_status plan_region(deps_ws *w, const crec_program *p, const crec__region *r,
                               const access_list *acc, crec_schedule schedule) {
  size_t n = r->num_commands;
  if (n == 0) return CREC_OK; /* and w->mark may still be NULL */
  if (n > w->cap_pos) {
    uint32_t *a = crec__realloc(w->pred_start, n * sizeof *a);
    if (!a) return CREC_ERR_OUT_OF_MEMORY;
    w->pred_start = a;
    uint32_t *b = crec__realloc(w->pred_count, n * sizeof *b);
    if (!b) return CREC_ERR_OUT_OF_MEMORY;
    w->pred_count = b;
    uint32_t *m = crec__realloc(w->mark, n * sizeof *m);
    if (!m) return CREC_ERR_OUT_OF_MEMORY;
    w->mark = m;
    w->cap_pos = n;
  }
  memset(w->mark, 0, n * sizeof *w->mark);
  w->num_preds = 0;
  uint32_t last_barrier = CREC__NONE;
  uint32_t chain = CREC__NONE; /* sequential: the last command the next one waits for */
  w->num_open = 0;
  for (size_t k = 0; k < p->num_comms; k++) w->last_comm_op[k] = CREC__NONE;
  crec_status s = CREC_OK;
  for (uint32_t pos = 0; pos < n && !s; pos++) {
    const crec__command *c = &p->commands[r->commands[pos]];
    w->num_cand = 0;
    if (schedule == CREC_SCHEDULE_SEQUENTIAL) {
      /* an async collective start leaves the chain, so what follows it overlaps
       * the collective; its done waits for both the chain and the start */
      bool start = c->kind == CREC_COMMAND_COLLECTIVE && c->coll->start == CREC__NONE && c->coll->desc.async;
      if (chain != CREC__NONE) s = add_cand(w, chain);
      if (!s && c->kind == CREC_COMMAND_COLLECTIVE && c->coll->start != CREC__NONE) {
        uint32_t sp = p->commands[c->coll->start].index_in_region;
        s = add_cand(w, sp);
        for (size_t k = 0; k < w->num_open; k++)
          if (w->open[k] == sp) w->open[k] = w->open[--w->num_open];
      }
      /* work that touches what an open async collective reads or writes waits
       * for it, as in concurrent schedules: only other work overlaps it */
      for (size_t k = 0; k < w->num_open && !s; k++)
        if (conflict(&acc[r->commands[pos]], &acc[r->commands[w->open[k]]])) s = add_cand(w, w->open[k]);
      if (!s && start) {
        if (CREC__RESERVE(w->open, w->cap_open, w->num_open + 1) != CREC_OK) s = CREC_ERR_OUT_OF_MEMORY;
        else w->open[w->num_open++] = pos;
      }
      /* NCCL work after an async start waits for it (the chain does not) */
      if (!s && issues_nccl(c)) {
        uint32_t *last = &w->last_comm_op[c->coll->comm];
        if (*last != CREC__NONE) s = add_cand(w, *last);
        *last = pos;
      }
      if (!start) chain = pos;
    } else if (c->kind == CREC_COMMAND_BARRIER) {
      /* everything since the last barrier (and that barrier) comes first */
      uint32_t from = last_barrier == CREC__NONE ? 0 : last_barrier;
      for (uint32_t q = from; q < pos && !s; q++) s = add_cand(w, q);
      last_barrier = pos;
      reset_spaces(w); /* later commands are ordered after the barrier anyway */
    } else {
      if (last_barrier != CREC__NONE) s = add_cand(w, last_barrier);
      if (!s) s = hazards(w, p, &acc[r->commands[pos]], pos);
    }
    if (!s) s = reduce(w, pos);
  }
  reset_spaces(w);
  return s;
}

crec_status crec__plan_deps(const crec_program *p, const crec__plan_temp *temps,
                            crec_schedule schedule, uint32_t **start_out, crec_command **deps_out) {
  size_t nc = p->num_commands;
  crec_status s = CREC_ERR_OUT_OF_MEMORY;
  access_list *acc = crec__calloc(nc ? nc : 1, sizeof *acc);
  uint32_t *count = crec__calloc(nc + 1, sizeof *count);
  crec_command *deps = NULL;
  uint32_t *start = NULL;
  deps_ws w = {0};
  w.spaces = crec__calloc(num_spaces(p), sizeof *w.spaces);
  w.last_comm_op = crec__calloc(p->num_comms ? p->num_comms : 1, sizeof *w.last_comm_op);
  /* per-command reduced predecessors, gathered region by region */
  uint32_t **per = crec__calloc(nc ? nc : 1, sizeof *per);
  if (!acc || !count || !w.spaces || !w.last_comm_op || !per) goto done;
  if ((s = compute_accesses(p, temps, acc))) goto done;
  s = CREC_OK;
  for (size_t ri = 0; ri < p->num_regions && !s; ri++) {
    const crec__region *r = &p->regions[ri];
    if ((s = plan_region(&w, p, r, acc, schedule))) break;
    for (size_t pos = 0; pos < r->num_commands; pos++) {
      uint32_t ci = r->commands[pos], k = w.pred_count[pos];
      count[ci] = k;
      if (!k) continue;
      per[ci] = crec__malloc(k * sizeof **per);
      if (!per[ci]) {
        s = CREC_ERR_OUT_OF_MEMORY;
        break;
      }
      /* positions → command indices, increasing (positions follow creation order) */
      for (uint32_t i = 0; i < k; i++) per[ci][i] = r->commands[w.preds[w.pred_start[pos] + k - 1 - i]];
    }
  }
  if (s) goto done;
  start = crec__malloc((nc + 1) * sizeof *start);
  size_t total = 0;
  for (size_t c = 0; c < nc; c++) total += count[c];
  deps = crec__malloc((total ? total : 1) * sizeof *deps);
  if (!start || !deps) {
    s = CREC_ERR_OUT_OF_MEMORY;
    goto done;
  }
  size_t at = 0;
  for (size_t c = 0; c < nc; c++) {
    start[c] = (uint32_t)at;
    for (uint32_t i = 0; i < count[c]; i++) deps[at++].id = crec__handle(p, per[c][i]);
  }
  start[nc] = (uint32_t)at;
  *start_out = start;
  *deps_out = deps;
  start = NULL;
  deps = NULL;
done:
  if (acc)
    for (size_t c = 0; c < nc; c++) crec__free(acc[c].v);
  if (per)
    for (size_t c = 0; c < nc; c++) crec__free(per[c]);
  if (w.spaces)
    for (size_t i = 0; i < num_spaces(p); i++) crec__free(w.spaces[i].v);
  crec__free(per);
  crec__free(acc);
  crec__free(count);
  crec__free(start);
  crec__free(deps);
  crec__free(w.spaces);
  crec__free(w.touched);
  crec__free(w.cand);
  crec__free(w.mark);
  crec__free(w.frontier.v);
  crec__free(w.pred_start);
  crec__free(w.pred_count);
  crec__free(w.preds);
  crec__free(w.last_comm_op);
  crec__free(w.open);
  return s;
}
