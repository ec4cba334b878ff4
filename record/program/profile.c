/* Profiles (crec/profile.h): spans of graph-node runs become per-command device
 * time, start, concurrency and loop iterations, the critical path through the
 * program body's dependency DAG, the idle time and a timeline, written as text
 * or as JSON (docs/profile.schema.json). No CUDA: the spans come measured. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct per_command {
  crec_profile_command info;
  double *device;  /* per replay: busy microseconds */
  double *start;   /* per replay: first start, microseconds after the replay's first span (NAN: none) */
} per_command;

struct crec_profile {
  const crec_program *program;
  uint32_t replays, median;
  char *name, *entry, *device;
  crec_profile_spread replay_us, profiled_us;
  bool have_replay_us, have_profiled_us;
  double host[5];                /* binding checks, per-node, whole-graph, device updates, launch; < 0 unknown */
  per_command *commands;         /* per program command */
  crec_command *critical;
  size_t critical_length;
  double critical_us, span_us, idle_us;
  crec_profile_span *timeline;   /* the median replay's spans, by start; times relative to its first */
  size_t timeline_length;
  uint64_t timeline_origin;
};

/* ---- the program's shape ---- */

/* The command whose region holds command `ci`, or CREC__NONE at the top. */
static uint32_t parent_of(const crec_program *p, uint32_t ci) { return p->regions[p->commands[ci].region].parent; }

/* Whether `a` is `b` or holds it in its regions (at any depth). */
static bool holds(const crec_program *p, uint32_t a, uint32_t b) {
  for (uint32_t c = b; c != CREC__NONE; c = parent_of(p, c))
    if (c == a) return true;
  return false;
}

/* The innermost while loop whose regions hold command `ci` (or `ci` itself when
 * it is a while and `self`), or CREC__NONE. */
static uint32_t loop_of(const crec_program *p, uint32_t ci, bool self) {
  for (uint32_t c = self ? ci : parent_of(p, ci); c != CREC__NONE; c = parent_of(p, c))
    if (p->commands[c].kind == CREC_COMMAND_WHILE) return c;
  return CREC__NONE;
}

/* Whether span command `sc` runs in the body of while loop `loop` (the loop's
 * own set kernels included), not in its cond region: a loop's iterations are
 * its body's, and its cond runs once more. */
static bool in_body(const crec_program *p, uint32_t loop, uint32_t sc) {
  if (sc == loop) return true;
  for (uint32_t c = sc; c != CREC__NONE; c = parent_of(p, c))
    if (parent_of(p, c) == loop) return p->regions[p->commands[c].region].role == CREC_REGION_BODY;
  return false;
}

/* ---- numbers ---- */

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The spread of the `n` values at `v` that are not NAN (all 0 when none); sorts them. */
static crec_profile_spread spread_of(double *v, size_t n) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (!isnan(v[i])) v[k++] = v[i];
  crec_profile_spread s = {0, 0, 0};
  if (!k) return s;
  qsort(v, k, sizeof *v, cmp_double);
  s.min = v[0];
  s.p50 = v[(k - 1) / 2];
  s.max = v[k - 1];
  return s;
}

typedef struct interval {
  uint64_t start, end;
} interval;

static int cmp_interval(const void *a, const void *b) {
  const interval *x = a, *y = b;
  return x->start < y->start ? -1 : x->start > y->start ? 1 : (x->end > y->end) - (x->end < y->end);
}

/* Nanoseconds covered by the `n` intervals at `v` (sorted here), overlaps once. */
static uint64_t covered(interval *v, size_t n) {
  qsort(v, n, sizeof *v, cmp_interval);
  uint64_t total = 0, lo = 0, hi = 0;
  for (size_t i = 0; i < n; i++) {
    if (i == 0 || v[i].start > hi) {
      total += hi - lo;
      lo = v[i].start;
      hi = v[i].end;
    } else if (v[i].end > hi) {
      hi = v[i].end;
    }
  }
  return n ? total + (hi - lo) : 0;
}

static int cmp_span_start(const void *a, const void *b) {
  const crec_profile_span *x = a, *y = b;
  return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns ? 1 : (x->end_ns > y->end_ns) - (x->end_ns < y->end_ns);
}

/* ---- building ---- */

static void free_profile(crec_profile *pr) {
  if (!pr) return;
  if (pr->commands)
    for (size_t i = 0; i < pr->program->num_commands; i++) {
      crec__free(pr->commands[i].device);
      crec__free(pr->commands[i].start);
    }
  crec__free(pr->commands);
  crec__free(pr->critical);
  crec__free(pr->timeline);
  crec__free(pr->name);
  crec__free(pr->entry);
  crec__free(pr->device);
  crec__free(pr);
}

void crec_profile_destroy(crec_profile *profile) {
  if (!profile) return;
  free_profile(profile);
  crec__live(-1);
}

static crec_status check_spans(const crec_program *p, const crec_profile_span *spans, size_t n, uint32_t replays,
                               const char *fn) {
  for (size_t i = 0; i < n; i++) {
    const crec_profile_span *s = &spans[i];
    crec_status st = crec__check_handle(p, s->command.id, p->num_commands, fn, "command", "argument 'spans[%zu]'", i);
    if (st) return st;
    if (s->replay >= replays)
      return crec__error(CREC_ERR_OUT_OF_RANGE, fn, "argument 'spans[%zu]': replay %u of %u replays", i, s->replay,
                         replays);
    if (s->end_ns < s->start_ns)
      return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "argument 'spans[%zu]': it ends before it starts", i);
    uint32_t ci = (uint32_t)crec__index(s->command.id);
    if (s->iteration >= 0 && loop_of(p, ci, true) == CREC__NONE)
      return crec__error(CREC_ERR_INVALID_ARGUMENT, fn,
                         "argument 'spans[%zu]': iteration %d of command #%u, which no while loop holds", i,
                         (int)s->iteration, ci);
  }
  return CREC_OK;
}

/* Each replay's first start (`origin`) and device span (`span_us`, NAN for a
 * replay without spans), and the median replay by device span (`*median`). */
static crec_status median_replay(const crec_profile_span *spans, size_t n, uint32_t replays, uint64_t *origin,
                                 double *span_us, uint32_t *median, const char *fn) {
  uint64_t *last = crec__calloc(replays, sizeof *last);
  double *by = crec__malloc(replays * sizeof *by);
  if (!last || !by) {
    crec__free(last);
    crec__free(by);
    return crec__oom(fn);
  }
  for (uint32_t r = 0; r < replays; r++) origin[r] = UINT64_MAX;
  for (size_t i = 0; i < n; i++) {
    uint32_t r = spans[i].replay;
    if (spans[i].start_ns < origin[r]) origin[r] = spans[i].start_ns;
    if (spans[i].end_ns > last[r]) last[r] = spans[i].end_ns;
  }
  for (uint32_t r = 0; r < replays; r++) span_us[r] = origin[r] == UINT64_MAX ? NAN : (double)(last[r] - origin[r]) / 1e3;
  memcpy(by, span_us, replays * sizeof *by);
  crec_profile_spread s = spread_of(by, replays);
  *median = 0;
  for (uint32_t r = 0; r < replays; r++)
    if (span_us[r] == s.p50) {
      *median = r;
      break;
    }
  crec__free(last);
  crec__free(by);
  return CREC_OK;
}

/* Intervals per command, reused from one replay to the next. */
typedef struct interval_list {
  interval *v;
  size_t n, cap;
} interval_list;

static int cmp_replay(const void *a, const void *b) {
  const crec_profile_span *x = *(const crec_profile_span *const *)a, *y = *(const crec_profile_span *const *)b;
  return (x->replay > y->replay) - (x->replay < y->replay);
}

/* Per command: device time and start per replay, and loop iterations; nodes in
 * the median replay. A span counts for its command and every command that holds
 * it: O(spans x depth), a replay at a time. */
static crec_status per_command_times(crec_profile *pr, const crec_profile_span *spans, size_t n, const uint64_t *origin,
                                     const char *fn) {
  const crec_program *p = pr->program;
  size_t nc = p->num_commands;
  uint32_t R = pr->replays;
  interval_list *lists = crec__calloc(nc ? nc : 1, sizeof *lists);
  int32_t *iters = crec__malloc((nc ? nc : 1) * R * sizeof *iters);
  double *tmp = crec__malloc(R * sizeof *tmp);
  const crec_profile_span **by = crec__malloc(n * sizeof *by);
  crec_status st = CREC_OK;
  if (!lists || !iters || !tmp || !by) {
    st = crec__oom(fn);
    goto done;
  }
  for (size_t i = 0; i < n; i++) by[i] = &spans[i];
  qsort(by, n, sizeof *by, cmp_replay);
  for (size_t c = 0; c < nc * R; c++) iters[c] = -1;
  for (size_t c = 0; c < nc; c++)
    for (uint32_t r = 0; r < R; r++) {
      pr->commands[c].device[r] = NAN;
      pr->commands[c].start[r] = NAN;
      if (p->commands[c].kind == CREC_COMMAND_WHILE) iters[c * R + r] = 0;
    }
  for (size_t i = 0; i < n;) {
    uint32_t r = by[i]->replay;
    size_t k = i;
    for (; k < n && by[k]->replay == r; k++) {
      const crec_profile_span *sp = by[k];
      uint32_t sc = (uint32_t)crec__index(sp->command.id);
      uint32_t loop = sp->iteration >= 0 ? loop_of(p, sc, true) : CREC__NONE;
      if (loop != CREC__NONE && in_body(p, loop, sc) && sp->iteration + 1 > iters[loop * R + r])
        iters[loop * R + r] = sp->iteration + 1;
      for (uint32_t c = sc; c != CREC__NONE; c = parent_of(p, c)) {
        interval_list *l = &lists[c];
        if (CREC__RESERVE(l->v, l->cap, l->n + 1) != CREC_OK) {
          st = crec__oom(fn);
          goto done;
        }
        l->v[l->n++] = (interval){sp->start_ns, sp->end_ns};
        if (r == pr->median) pr->commands[c].info.nodes++;
      }
    }
    for (size_t c = 0; c < nc; c++) {
      interval_list *l = &lists[c];
      if (!l->n) continue;
      pr->commands[c].device[r] = (double)covered(l->v, l->n) / 1e3; /* sorted by start now */
      pr->commands[c].start[r] = (double)(l->v[0].start - origin[r]) / 1e3;
      pr->commands[c].info.ran = 1;
      l->n = 0;
    }
    i = k;
  }
  for (size_t c = 0; c < nc; c++) {
    per_command *pc = &pr->commands[c];
    pc->info.is_loop = p->commands[c].kind == CREC_COMMAND_WHILE;
    if (!pc->info.ran) continue;
    /* a replay where it did not run counts as 0 device time, once it ran in some */
    for (uint32_t r = 0; r < R; r++) tmp[r] = isnan(pc->device[r]) ? 0 : pc->device[r];
    pc->info.device_us = spread_of(tmp, R);
    memcpy(tmp, pc->start, R * sizeof *tmp);
    pc->info.start_us = spread_of(tmp, R).p50;
    if (pc->info.is_loop) {
      for (uint32_t r = 0; r < R; r++) tmp[r] = iters[c * R + r];
      pc->info.iterations = spread_of(tmp, R);
      pc->info.per_iteration_us = pc->info.iterations.p50 > 0 ? pc->info.device_us.p50 / pc->info.iterations.p50 : 0;
    }
  }
done:
  for (size_t c = 0; lists && c < nc; c++) crec__free(lists[c].v);
  crec__free(lists);
  crec__free(iters);
  crec__free(tmp);
  crec__free(by);
  return st;
}

/* Concurrency in the median replay (its timeline, sorted by start): for each
 * span, the spans of unrelated commands (neither holds the other) that overlap
 * it; a command gets the most over its spans and those of the commands it holds.
 * Each overlapping pair is seen once: O(spans + overlaps). */
static crec_status concurrency(crec_profile *pr, const char *fn) {
  const crec_program *p = pr->program;
  size_t n = pr->timeline_length;
  uint64_t *beside = crec__calloc(n ? n : 1, sizeof *beside);
  if (!beside) return crec__oom(fn);
  const crec_profile_span *t = pr->timeline;
  for (size_t i = 0; i < n; i++) {
    uint32_t a = (uint32_t)crec__index(t[i].command.id);
    for (size_t j = i + 1; j < n && t[j].start_ns < t[i].end_ns; j++) {
      uint32_t b = (uint32_t)crec__index(t[j].command.id);
      if (t[j].end_ns <= t[i].start_ns || holds(p, a, b) || holds(p, b, a)) continue;
      beside[i]++;
      beside[j]++;
    }
  }
  for (size_t i = 0; i < n; i++)
    for (uint32_t c = (uint32_t)crec__index(t[i].command.id); c != CREC__NONE; c = parent_of(p, c))
      if (pr->commands[c].info.concurrent < beside[i]) pr->commands[c].info.concurrent = beside[i];
  crec__free(beside);
  return CREC_OK;
}

/* The heaviest path through the program body's commands, by median device time. */
static crec_status critical_path(crec_profile *pr, const char *fn) {
  const crec_program *p = pr->program;
  size_t nc = p->num_commands;
  crec_plan *plan = NULL;
  crec_status st = crec_plan_create(p, NULL, &plan);
  if (st) return crec__rethrow(st, fn);
  double *best = crec__calloc(nc ? nc : 1, sizeof *best);
  uint32_t *from = crec__malloc((nc ? nc : 1) * sizeof *from);
  uint32_t *order = crec__malloc((nc ? nc : 1) * sizeof *order);
  if (!best || !from || !order) {
    st = crec__oom(fn);
    goto done;
  }
  /* program order: a command's deps come before it */
  const crec__region *body = &p->regions[crec__index(crec_program_body(p).id)];
  uint32_t end = CREC__NONE;
  for (size_t k = 0; k < body->num_commands; k++) {
    uint32_t ci = body->commands[k];
    const crec_command *deps;
    size_t nd;
    if ((st = crec_plan_get_deps(plan, crec_program_command(p, ci), &deps, &nd))) {
      st = crec__rethrow(st, fn);
      goto done;
    }
    double w = pr->commands[ci].info.ran ? pr->commands[ci].info.device_us.p50 : 0;
    best[ci] = w;
    from[ci] = CREC__NONE;
    for (size_t d = 0; d < nd; d++) {
      uint32_t di = (uint32_t)crec__index(deps[d].id);
      if (best[di] + w > best[ci]) {
        best[ci] = best[di] + w;
        from[ci] = di;
      }
    }
    if (end == CREC__NONE || best[ci] > best[end]) end = ci;
  }
  size_t len = 0;
  for (uint32_t c = end; c != CREC__NONE; c = from[c]) order[len++] = c;
  pr->critical = crec__malloc((len ? len : 1) * sizeof *pr->critical);
  if (!pr->critical) {
    st = crec__oom(fn);
    goto done;
  }
  for (size_t i = 0; i < len; i++) {
    uint32_t c = order[len - 1 - i];
    pr->critical[i] = crec_program_command(p, c);
    pr->commands[c].info.critical = 1;
  }
  pr->critical_length = len;
  pr->critical_us = end == CREC__NONE ? 0 : best[end];
done:
  crec__free(best);
  crec__free(from);
  crec__free(order);
  crec_plan_destroy(plan);
  return st;
}

/* The median replay's spans, by start, and the time when none of them ran. */
static crec_status timeline(crec_profile *pr, const crec_profile_span *spans, size_t n, uint64_t origin, const char *fn) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++) k += spans[i].replay == pr->median;
  pr->timeline = crec__malloc((k ? k : 1) * sizeof *pr->timeline);
  interval *iv = crec__malloc((k ? k : 1) * sizeof *iv);
  if (!pr->timeline || !iv) {
    crec__free(iv);
    return crec__oom(fn);
  }
  k = 0;
  for (size_t i = 0; i < n; i++)
    if (spans[i].replay == pr->median) {
      pr->timeline[k] = spans[i];
      iv[k++] = (interval){spans[i].start_ns, spans[i].end_ns};
    }
  qsort(pr->timeline, k, sizeof *pr->timeline, cmp_span_start);
  pr->timeline_length = k;
  pr->timeline_origin = origin;
  double busy = (double)covered(iv, k) / 1e3;
  pr->idle_us = pr->span_us > busy ? pr->span_us - busy : 0;
  crec__free(iv);
  return CREC_OK;
}

static bool wall_spread(const double *v, size_t n, crec_profile_spread *out, const char *fn, crec_status *st) {
  if (!v || !n) return false;
  double *tmp = crec__malloc(n * sizeof *tmp);
  if (!tmp) {
    *st = crec__oom(fn);
    return false;
  }
  memcpy(tmp, v, n * sizeof *tmp);
  *out = spread_of(tmp, n);
  crec__free(tmp);
  return true;
}

crec_status crec_profile_create(const crec_program *program, const crec_profile_span *spans, size_t num_spans,
                                uint32_t replays, const crec_profile_options *options, crec_profile **out) {
  static const char fn[] = "crec_profile_create";
  const crec_program *p = program;
  if (out) *out = NULL;
  if (!p) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'program' is NULL");
  if (!out) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'out' is NULL");
  if (!spans) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'spans' is NULL");
  if (!num_spans) return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "argument 'num_spans': no spans to profile");
  if (!replays) return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "argument 'replays': no replays to profile");
  if (replays > num_spans)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "argument 'replays': %u replays, but only %zu spans", replays,
                       num_spans);
  crec_profile_options o = CREC_PROFILE_OPTIONS_INIT;
  crec_status st = crec__take_struct(&o, sizeof o, options, sizeof o, fn, "argument 'options'", "CREC_PROFILE_OPTIONS_INIT");
  if (st) return st;
  if ((st = check_spans(p, spans, num_spans, replays, fn))) return st;
  crec_profile *pr = crec__calloc(1, sizeof *pr);
  uint64_t *origin = crec__malloc(replays * sizeof *origin);
  double *span_us = crec__malloc(replays * sizeof *span_us);
  if (!pr || !origin || !span_us) goto oom;
  pr->program = p;
  pr->replays = replays;
  pr->name = crec__strdup(o.program ? o.program : "");
  pr->entry = crec__strdup(o.entry ? o.entry : "");
  pr->device = crec__strdup(o.device ? o.device : "");
  pr->commands = crec__calloc(p->num_commands ? p->num_commands : 1, sizeof *pr->commands);
  if (!pr->name || !pr->entry || !pr->device || !pr->commands) goto oom;
  for (size_t i = 0; i < p->num_commands; i++) {
    pr->commands[i].info.struct_size = sizeof pr->commands[i].info;
    pr->commands[i].device = crec__malloc(replays * sizeof(double));
    pr->commands[i].start = crec__malloc(replays * sizeof(double));
    if (!pr->commands[i].device || !pr->commands[i].start) goto oom;
  }
  double hs[5] = {o.host_binding_checks_us, o.host_per_node_updates_us, o.host_whole_graph_updates_us,
                  o.host_device_updates_us, o.host_launch_us};
  memcpy(pr->host, hs, sizeof hs);
  pr->have_replay_us = wall_spread(o.replay_us, o.num_replay_us, &pr->replay_us, fn, &st);
  pr->have_profiled_us = wall_spread(o.profiled_us, o.num_profiled_us, &pr->profiled_us, fn, &st);
  if (st) goto fail;
  if ((st = median_replay(spans, num_spans, replays, origin, span_us, &pr->median, fn))) goto fail;
  pr->span_us = isnan(span_us[pr->median]) ? 0 : span_us[pr->median];
  if ((st = per_command_times(pr, spans, num_spans, origin, fn)) || (st = critical_path(pr, fn)) ||
      (st = timeline(pr, spans, num_spans, origin[pr->median], fn)) || (st = concurrency(pr, fn)))
    goto fail;
  crec__free(origin);
  crec__free(span_us);
  crec__live(1);
  *out = pr;
  return CREC_OK;
oom:
  st = crec__oom(fn);
fail:
  crec__free(origin);
  crec__free(span_us);
  free_profile(pr);
  return st;
}

/* ---- reading ---- */

crec_status crec_profile_get_command(const crec_profile *profile, crec_command command, crec_profile_command *out) {
  static const char fn[] = "crec_profile_get_command";
  if (!profile) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'profile' is NULL");
  if (!out) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'out' is NULL");
  const crec_program *p = profile->program;
  crec_status st = crec__check_handle(p, command.id, p->num_commands, fn, "command", "argument 'command'");
  if (st) return st;
  return crec__give_struct(out, &profile->commands[crec__index(command.id)].info, sizeof(crec_profile_command),
                           sizeof(crec_profile_command), fn, "argument 'out'", "CREC_PROFILE_COMMAND_INIT");
}

crec_status crec_profile_get_summary(const crec_profile *profile, crec_profile_summary *out) {
  static const char fn[] = "crec_profile_get_summary";
  if (!profile) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'profile' is NULL");
  if (!out) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'out' is NULL");
  crec_profile_summary s = {sizeof s,
                            profile->replays,
                            profile->median,
                            profile->span_us,
                            profile->idle_us,
                            profile->critical_us,
                            profile->critical,
                            profile->critical_length,
                            profile->timeline_length};
  return crec__give_struct(out, &s, sizeof s, sizeof s, fn, "argument 'out'", "CREC_PROFILE_SUMMARY_INIT");
}

/* ---- writing ---- */

static void json_spread(crec__text *t, const char *key, crec_profile_spread s) {
  crec__text_printf(t, "\"%s\": {\"min\": %.3f, \"p50\": %.3f, \"max\": %.3f}", key, s.min, s.p50, s.max);
}

static double us_of(const crec_profile *pr, uint64_t ns) { return (double)(ns - pr->timeline_origin) / 1e3; }

static void dump_json(crec__text *t, const crec_profile *pr) {
  const crec_program *p = pr->program;
  crec__text_puts(t, "{\"format\": \"crec-profile\", \"version\": 1, \"program\": ");
  crec__text_json_string(t, pr->name);
  crec__text_puts(t, ", \"entry\": ");
  crec__text_json_string(t, pr->entry);
  crec__text_puts(t, ", \"device\": ");
  crec__text_json_string(t, pr->device);
  crec__text_printf(t, ", \"iters\": %u", pr->replays);
  if (pr->have_replay_us && pr->have_profiled_us) {
    crec__text_puts(t, ", \"replay_us\": {");
    json_spread(t, "plain", pr->replay_us);
    crec__text_puts(t, ", ");
    json_spread(t, "profiled", pr->profiled_us);
    crec__text_puts(t, "}");
  }
  bool host = false;
  for (int i = 0; i < 5; i++) host |= pr->host[i] >= 0;
  if (host) {
    static const char *const keys[] = {"per_node", "whole_graph", "device"};
    crec__text_puts(t, ", \"host_us\": {");
    const char *sep = "";
    if (pr->host[0] >= 0) crec__text_printf(t, "\"binding_checks\": %.3f", pr->host[0]), sep = ", ";
    bool updates = pr->host[1] >= 0 || pr->host[2] >= 0 || pr->host[3] >= 0;
    if (updates) {
      crec__text_printf(t, "%s\"updates\": {", sep);
      const char *s2 = "";
      for (int i = 0; i < 3; i++)
        if (pr->host[1 + i] >= 0) crec__text_printf(t, "%s\"%s\": %.3f", s2, keys[i], pr->host[1 + i]), s2 = ", ";
      crec__text_puts(t, "}");
      sep = ", ";
    }
    if (pr->host[4] >= 0) crec__text_printf(t, "%s\"launch\": %.3f", sep, pr->host[4]);
    crec__text_puts(t, "}");
  }
  crec__text_puts(t, ",\n \"commands\": [");
  const char *sep = "";
  for (size_t i = 0; i < p->num_commands; i++) {
    const crec_profile_command *c = &pr->commands[i].info;
    if (!c->ran) continue;
    crec__text_printf(t, "%s\n  {\"id\": %zu, ", sep, i);
    json_spread(t, "device_us", c->device_us);
    crec__text_printf(t, ", \"start_us\": %.3f, \"nodes\": %llu, \"concurrent\": %llu", c->start_us,
                      (unsigned long long)c->nodes, (unsigned long long)c->concurrent);
    if (c->is_loop) {
      crec__text_puts(t, ", ");
      json_spread(t, "iterations", c->iterations);
      crec__text_printf(t, ", \"per_iteration_us\": %.3f", c->per_iteration_us);
    }
    crec__text_puts(t, "}");
    sep = ",";
  }
  crec__text_puts(t, "],\n \"critical_path\": {\"commands\": [");
  for (size_t i = 0; i < pr->critical_length; i++)
    crec__text_printf(t, "%s%zu", i ? ", " : "", crec__index(pr->critical[i].id));
  double share = pr->span_us > 0 ? pr->critical_us / pr->span_us : 0;
  crec__text_printf(t, "], \"us\": %.3f, \"share\": %.4f}, \"idle_us\": %.3f,\n \"timeline\": [", pr->critical_us,
                    share > 1 ? 1 : share, pr->idle_us);
  for (size_t i = 0; i < pr->timeline_length; i++) {
    const crec_profile_span *s = &pr->timeline[i];
    crec__text_printf(t, "%s\n  {\"command\": %zu, \"start_us\": %.3f, \"end_us\": %.3f", i ? "," : "",
                      crec__index(s->command.id), us_of(pr, s->start_ns), us_of(pr, s->end_ns));
    if (s->iteration >= 0) crec__text_printf(t, ", \"iteration\": %d", (int)s->iteration);
    crec__text_puts(t, "}");
  }
  crec__text_puts(t, "]}\n");
}

/* Commands that ran, slowest first (by median device time; ties in program order). */
typedef struct by_time {
  double us;
  uint32_t index;
} by_time;
static int cmp_slowest(const void *a, const void *b) {
  const by_time *x = a, *y = b;
  return x->us > y->us ? -1 : x->us < y->us ? 1 : (x->index > y->index) - (x->index < y->index);
}

static void dump_text(crec__text *t, const crec_profile *pr, by_time *order) {
  const crec_program *p = pr->program;
  crec__text_printf(t, "profile of %s%s%s%s: %u replays\n", pr->name[0] ? pr->name : "the program",
                    pr->entry[0] ? " (entry " : "", pr->entry, pr->entry[0] ? ")" : "", pr->replays);
  if (pr->device[0]) crec__text_printf(t, "device: %s\n", pr->device);
  if (pr->have_replay_us)
    crec__text_printf(t, "a replay: %.2f us p50 (min %.2f, max %.2f)", pr->replay_us.p50, pr->replay_us.min,
                      pr->replay_us.max);
  if (pr->have_replay_us && pr->have_profiled_us && pr->replay_us.p50 > 0)
    crec__text_printf(t, "; under the profiler %.2f us p50 (+%.0f%%)", pr->profiled_us.p50,
                      (pr->profiled_us.p50 / pr->replay_us.p50 - 1) * 100);
  if (pr->have_replay_us) crec__text_puts(t, "\n");
  crec__text_printf(t, "device span of the median replay (#%u): %.2f us, idle %.2f us\n", pr->median, pr->span_us,
                    pr->idle_us);
  crec__text_printf(t, "critical path: %.2f us (%.0f%% of the span):", pr->critical_us,
                    pr->span_us > 0 ? 100 * pr->critical_us / pr->span_us : 0);
  for (size_t i = 0; i < pr->critical_length; i++) {
    size_t c = crec__index(pr->critical[i].id);
    crec__text_printf(t, "%s #%zu '%s'", i ? " ->" : "", c, p->commands[c].name);
  }
  crec__text_puts(t, "\n");
  static const char *const phases[] = {"binding checks", "per-node updates", "whole-graph updates", "device updates",
                                       "launch"};
  bool host = false;
  for (int i = 0; i < 5; i++)
    if (pr->host[i] >= 0) {
      crec__text_printf(t, "%s%s %.2f us", host ? ", " : "host side of a replay: ", phases[i], pr->host[i]);
      host = true;
    }
  if (host) crec__text_puts(t, "\n");
  size_t n = 0;
  for (uint32_t i = 0; i < p->num_commands; i++)
    if (pr->commands[i].info.ran) order[n++] = (by_time){pr->commands[i].info.device_us.p50, i};
  qsort(order, n, sizeof *order, cmp_slowest);
  crec__text_printf(t, "\n  %-40s %10s %9s %9s %9s %6s %7s  %s\n", "command (slowest first; * critical path)",
                    "device us", "min", "max", "start us", "nodes", "beside", "iterations");
  for (size_t k = 0; k < n; k++) {
    uint32_t i = order[k].index;
    const crec_profile_command *c = &pr->commands[i].info;
    char label[64];
    snprintf(label, sizeof label, "%s#%u %s '%s'", c->critical ? "* " : "  ", i, crec_command_kind_name(p->commands[i].kind),
             p->commands[i].name);
    crec__text_printf(t, "  %-40.40s %10.2f %9.2f %9.2f %9.2f %6llu %7llu", label, c->device_us.p50, c->device_us.min,
                      c->device_us.max, c->start_us, (unsigned long long)c->nodes, (unsigned long long)c->concurrent);
    if (c->is_loop)
      crec__text_printf(t, "  %.0f (min %.0f, max %.0f), %.2f us each", c->iterations.p50, c->iterations.min,
                        c->iterations.max, c->per_iteration_us);
    crec__text_puts(t, "\n");
  }
}

crec_status crec_profile_dump(const crec_profile *profile, crec_profile_format format, char **out, size_t *length) {
  static const char fn[] = "crec_profile_dump";
  if (out) *out = NULL;
  if (length) *length = 0;
  if (!profile) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'profile' is NULL");
  if (!out) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'out' is NULL");
  if ((unsigned)format > CREC_PROFILE_JSON)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "argument 'format': unknown profile format %d", (int)format);
  crec__text t = {0};
  if (format == CREC_PROFILE_JSON) {
    dump_json(&t, profile);
  } else {
    size_t nc = profile->program->num_commands;
    by_time *order = crec__malloc((nc ? nc : 1) * sizeof *order);
    if (!order) return crec__oom(fn);
    dump_text(&t, profile, order);
    crec__free(order);
  }
  if (t.failed || !t.data) {
    crec__free(t.data);
    return crec__oom(fn);
  }
  *out = t.data;
  if (length) *length = t.len;
  return CREC_OK;
}
