/* Reads of undefined bytes: a command that reads (or accumulates into) bytes of
 * a temporary buffer that no command could have written before it. The arena
 * that holds temporaries is shared by lifetimes and never cleared, so such a
 * read sees whatever was there: replay and eager runs then disagree, which
 * reads like a crec bug. Arguments belong to the caller and constants hold
 * their data: neither is ever flagged.
 *
 * The rule, on byte ranges per buffer, meant to have no false positives:
 *  - Program order is depth first (crec__program_order()); a while's regions
 *    are its cond, then its body, which is also the order of its first
 *    iteration. A read is flagged when no write of an overlapping range comes
 *    before it in program order: not in an earlier command, not in any region
 *    of an earlier control-flow command (either branch of an if counts), and,
 *    for a while's predicate, not in its own cond region (which runs before
 *    each test).
 *  - Inside a loop, a later write counts too when the read might be skipped in
 *    an iteration that runs the write: when, within some while loop, the read
 *    sits in an if or switch branch or an inner while's body (which may not run
 *    in the first iteration), every write after it in program order up to the
 *    end of the outermost such loop counts, except the writes inside the
 *    command that holds the read at the level where it first became
 *    conditional (those run only after the read whenever they run).
 *    A read that runs unconditionally in each iteration runs before anything
 *    later in the loop has ever run, so later writes do not count for it.
 *  - A read is flagged when none of its bytes was written ("nothing wrote
 *    it"): a range written in part is not flagged. A read overlapping bytes
 *    already reported is not reported again.
 * Known false negatives: a range written only in part; a write in the other
 * branch of an if; a write in a branch not taken; a loop whose skipped read
 * becomes defined only in later iterations that never come. Scratch that crec
 * itself owns (a library call's workspace, a barrier's scratch) and a collective done
 * (which waits, it does not read) are not reads. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "access.h"

/* ---- sets of byte ranges: sorted, disjoint, merged ---- */

typedef struct span {
  uint64_t lo, hi;
} span;

typedef struct span_set {
  span *v;
  size_t n, cap;
} span_set;

/* The first span whose end is above `lo` (n when none). */
static size_t first_after(const span_set *s, uint64_t lo) {
  size_t a = 0, b = s->n;
  while (a < b) {
    size_t m = a + (b - a) / 2;
    if (s->v[m].hi <= lo) a = m + 1;
    else b = m;
  }
  return a;
}

static bool set_overlaps(const span_set *s, uint64_t lo, uint64_t hi) {
  size_t i = first_after(s, lo);
  return i < s->n && s->v[i].lo < hi;
}

static crec_status set_add(span_set *s, uint64_t lo, uint64_t hi) {
  size_t i = first_after(s, lo > 0 ? lo - 1 : 0); /* touching spans merge too */
  size_t j = i;
  while (j < s->n && s->v[j].lo <= hi) {
    if (s->v[j].lo < lo) lo = s->v[j].lo;
    if (s->v[j].hi > hi) hi = s->v[j].hi;
    j++;
  }
  if (j == i) {
    if (CREC__RESERVE(s->v, s->cap, s->n + 1) != CREC_OK) return CREC_ERR_OUT_OF_MEMORY;
    memmove(s->v + i + 1, s->v + i, (s->n - i) * sizeof *s->v);
    s->n++;
  } else if (j > i + 1) {
    memmove(s->v + i + 1, s->v + j, (s->n - j) * sizeof *s->v);
    s->n -= j - i - 1;
  }
  s->v[i].lo = lo;
  s->v[i].hi = hi;
  return CREC_OK;
}

/* ---- the walk ---- */

/* A write of a temporary, at a program-order position. */
typedef struct write_at {
  uint32_t pos;
  uint64_t lo, hi;
} write_at;

typedef struct write_list {
  write_at *v;
  size_t n, cap;
} write_list;

/* A while whose predicate is tested once its cond region (ending at `end`) is done. */
typedef struct pending {
  uint32_t command, end;
} pending;

typedef struct walk {
  const crec_program *p;
  uint32_t *order; /* program order */
  uint32_t *pos;   /* per command: its position in program order */
  uint32_t *end;   /* per command: the last position of it and its regions */
  bool *looped;    /* per region: it runs once per iteration of some while */
  span_set *written, *reported; /* per buffer */
  write_list *writes;           /* per buffer, by position */
  pending *stack;
  size_t num_pending, cap_pending;
  uint32_t command; /* the command whose ranges are being visited */
  crec__undefined_fn fn;
  void *user;
} walk;

static bool is_temporary(const walk *w, crec_range r) {
  return w->p->buffers[crec__index(r.buffer.id)].kind == CREC_BUFFER_TEMPORARY;
}

/* Ranges crec itself adds to a command, and commands that do not read. */
static bool not_a_read(const crec__command *c, crec_range r) {
  if (c->kind == CREC_COMMAND_BARRIER) return true;                                    /* its scratch */
  if (c->kind == CREC_COMMAND_COLLECTIVE && c->coll->start != CREC__NONE) return true; /* a done */
  if (c->kind == CREC_COMMAND_FFT) return crec__index(r.buffer.id) == c->fft->workspace;
  if (c->kind == CREC_COMMAND_CHOLESKY) return crec__index(r.buffer.id) == c->chol->workspace;
  if (c->kind == CREC_COMMAND_CONV) return crec__index(r.buffer.id) == c->conv->workspace;
  return c->kind == CREC_COMMAND_GEMM && crec__index(r.buffer.id) == c->gemm->workspace;
}

/* The window (lo, hi] of later positions whose writes count for a read by
 * command `ci` (lo == hi: none); see the rule above. */
static void later_window(const walk *w, uint32_t ci, uint32_t *lo, uint32_t *hi) {
  const crec_program *p = w->p;
  bool conditional = false, started = false;
  uint32_t x = ci, outer = CREC__NONE;
  *lo = *hi = 0;
  for (;;) {
    uint32_t r = p->commands[x].region;
    const crec__region *reg = &p->regions[r];
    if (!started && conditional && w->looped[r]) {
      started = true;
      *lo = w->end[x];
    }
    if (reg->role == CREC_REGION_BODY || reg->role == CREC_REGION_COND) outer = reg->parent;
    if (reg->role == CREC_REGION_THEN || reg->role == CREC_REGION_ELSE || reg->role == CREC_REGION_BRANCH ||
        reg->role == CREC_REGION_BODY)
      conditional = true;
    if (reg->parent == CREC__NONE) break;
    x = reg->parent;
  }
  if (started && outer != CREC__NONE) *hi = w->end[outer];
  if (*hi < *lo) *hi = *lo;
}

static bool written_later(const walk *w, uint32_t b, uint32_t ci, uint64_t lo, uint64_t hi) {
  uint32_t from, to;
  later_window(w, ci, &from, &to);
  if (from == to) return false;
  const write_list *l = &w->writes[b];
  size_t a = 0, e = l->n;
  while (a < e) { /* the first write after `from` */
    size_t m = a + (e - a) / 2;
    if (l->v[m].pos <= from) a = m + 1;
    else e = m;
  }
  for (size_t i = a; i < l->n && l->v[i].pos <= to; i++)
    if (l->v[i].lo < hi && lo < l->v[i].hi) return true;
  return false;
}

static crec_status check_read(walk *w, uint32_t ci, uint32_t slot, crec_range r, crec_access access) {
  uint32_t b = (uint32_t)crec__index(r.buffer.id);
  uint64_t lo = r.offset, hi = crec__range_end(w->p, r);
  if (lo >= hi || set_overlaps(&w->written[b], lo, hi) || set_overlaps(&w->reported[b], lo, hi)) return CREC_OK;
  if (written_later(w, b, ci, lo, hi)) return CREC_OK;
  crec__undefined_read u = {
      .command = ci, .slot = slot, .range = crec_range_of(r.buffer, lo, hi - lo), .access = access};
  if (w->fn(w->user, &u)) return set_add(&w->reported[b], lo, hi);
  return CREC_OK;
}

static crec_status visit_read(void *user, crec_range r, crec_access access, uint32_t slot) {
  walk *w = user;
  const crec__command *c = &w->p->commands[w->command];
  if (!(access & CREC_ACCESS_READ) || !is_temporary(w, r) || not_a_read(c, r)) return CREC_OK;
  return check_read(w, w->command, slot, r, access);
}

static crec_status visit_write(void *user, crec_range r, crec_access access, uint32_t slot) {
  (void)slot;
  walk *w = user;
  if (!(access & CREC_ACCESS_WRITE) || !is_temporary(w, r)) return CREC_OK;
  uint32_t b = (uint32_t)crec__index(r.buffer.id);
  return set_add(&w->written[b], r.offset, crec__range_end(w->p, r));
}

/* Notes every write of a temporary with its position (before the walk). */
static crec_status note_write(void *user, crec_range r, crec_access access, uint32_t slot) {
  (void)slot;
  walk *w = user;
  if (!(access & CREC_ACCESS_WRITE) || !is_temporary(w, r)) return CREC_OK;
  write_list *l = &w->writes[crec__index(r.buffer.id)];
  if (CREC__RESERVE(l->v, l->cap, l->n + 1) != CREC_OK) return CREC_ERR_OUT_OF_MEMORY;
  write_at a = {w->pos[w->command], r.offset, crec__range_end(w->p, r)};
  l->v[l->n++] = a;
  return CREC_OK;
}

/* Tests the predicates of the whiles whose cond regions end before position `q`. */
static crec_status test_pending(walk *w, uint32_t q) {
  while (w->num_pending && w->stack[w->num_pending - 1].end < q) {
    uint32_t ci = w->stack[--w->num_pending].command;
    const crec__command *c = &w->p->commands[ci];
    if (is_temporary(w, c->predicate)) {
      crec_status s = check_read(w, ci, CREC__SLOT_PREDICATE, c->predicate, CREC_ACCESS_READ);
      if (s) return s;
    }
  }
  return CREC_OK;
}

static crec_status run(walk *w) {
  const crec_program *p = w->p;
  size_t n = p->num_commands;
  crec__program_order(p, w->order);
  for (uint32_t q = 0; q < n; q++) w->pos[w->order[q]] = q;
  /* the last position of each command's subtree: children come after their parent */
  for (size_t ci = n; ci-- > 0;) {
    const crec__command *c = &p->commands[ci];
    uint32_t last = w->pos[ci];
    for (size_t k = 0; k < c->num_regions; k++) {
      const crec__region *r = &p->regions[c->regions[k]];
      if (r->num_commands && w->end[r->commands[r->num_commands - 1]] > last)
        last = w->end[r->commands[r->num_commands - 1]];
    }
    w->end[ci] = last;
  }
  /* a region's parent command lives in a region made before it */
  for (size_t r = 0; r < p->num_regions; r++) {
    const crec__region *reg = &p->regions[r];
    w->looped[r] = reg->role == CREC_REGION_BODY || reg->role == CREC_REGION_COND ||
                   (reg->parent != CREC__NONE && w->looped[p->commands[reg->parent].region]);
  }
  crec_status s = CREC_OK;
  for (uint32_t q = 0; q < n && !s; q++) {
    w->command = w->order[q];
    if (!p->commands[w->command].num_regions) s = crec__command_ranges(&p->commands[w->command], note_write, w);
  }
  for (uint32_t q = 0; q < n && !s; q++) {
    if ((s = test_pending(w, q))) break;
    uint32_t ci = w->order[q];
    const crec__command *c = &p->commands[ci];
    w->command = ci;
    if (c->kind == CREC_COMMAND_WHILE) {
      const crec__region *cond = &p->regions[c->regions[0]];
      uint32_t end = cond->num_commands ? w->end[cond->commands[cond->num_commands - 1]] : q;
      if (CREC__RESERVE(w->stack, w->cap_pending, w->num_pending + 1) != CREC_OK) s = CREC_ERR_OUT_OF_MEMORY;
      else w->stack[w->num_pending++] = (pending){ci, end};
    } else {
      /* reads see the state before the command; then its writes land */
      s = crec__command_ranges(c, visit_read, w);
      if (!s && !c->num_regions) s = crec__command_ranges(c, visit_write, w);
    }
  }
  if (!s) s = test_pending(w, UINT32_MAX);
  return s;
}

crec_status crec__undefined_reads(const crec_program *p, crec__undefined_fn fn, void *user) {
  size_t nc = p->num_commands ? p->num_commands : 1, nb = p->num_buffers ? p->num_buffers : 1;
  walk w = {0};
  w.p = p;
  w.fn = fn;
  w.user = user;
  w.order = crec__malloc(nc * sizeof *w.order);
  w.pos = crec__malloc(nc * sizeof *w.pos);
  w.end = crec__malloc(nc * sizeof *w.end);
  w.looped = crec__malloc(p->num_regions * sizeof *w.looped);
  w.written = crec__calloc(nb, sizeof *w.written);
  w.reported = crec__calloc(nb, sizeof *w.reported);
  w.writes = crec__calloc(nb, sizeof *w.writes);
  crec_status s = CREC_ERR_OUT_OF_MEMORY;
  if (w.order && w.pos && w.end && w.looped && w.written && w.reported && w.writes) s = run(&w);
  for (size_t b = 0; b < p->num_buffers; b++) {
    if (w.written) crec__free(w.written[b].v);
    if (w.reported) crec__free(w.reported[b].v);
    if (w.writes) crec__free(w.writes[b].v);
  }
  crec__free(w.order);
  crec__free(w.pos);
  crec__free(w.end);
  crec__free(w.looped);
  crec__free(w.written);
  crec__free(w.reported);
  crec__free(w.writes);
  crec__free(w.stack);
  return s;
}

/* ---- messages ---- */

const char *crec__undefined_verb(const crec_program *p, const crec__undefined_read *read) {
  const crec__command *c = &p->commands[read->command];
  if (read->slot == CREC__SLOT_PREDICATE)
    return c->kind == CREC_COMMAND_SWITCH ? "reads its index from" : "reads its condition from";
  if (read->access != CREC_ACCESS_READ_WRITE) return "reads";
  if (c->kind == CREC_COMMAND_CHOLESKY) return "factors in place";
  return c->kind == CREC_COMMAND_GEMM ? "accumulates into" : "reads and writes";
}

void crec__undefined_what(const crec_program *p, const crec__undefined_read *read, char *buf, size_t size) {
  const crec__buffer *b = &p->buffers[crec__index(read->range.buffer.id)];
  if (read->range.offset == 0 && read->range.size == b->size) snprintf(buf, size, "'%s'", b->name);
  else
    snprintf(buf, size, "bytes [%" PRIu64 ", %" PRIu64 ") of '%s'", read->range.offset,
             read->range.offset + read->range.size, b->name);
}

void crec__undefined_message(const crec_program *p, const crec__undefined_read *read, char *buf, size_t size) {
  char what[400], label[320];
  crec__undefined_what(p, read, what, sizeof what);
  snprintf(buf, size, "%s %s %s, which nothing wrote before: its bytes are undefined (%s)",
           crec__command_label(p, read->command, label, sizeof label), crec__undefined_verb(p, read), what,
           read->access == CREC_ACCESS_READ_WRITE ? "zero it first with crec_program_add_memset"
                                                  : "write it first, e.g. zero it with crec_program_add_memset");
}
