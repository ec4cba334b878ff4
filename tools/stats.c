/* Percentiles, the bench report (table and JSON), and the progress bar. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tool.h"

static int compare_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Nearest rank: the smallest sample with at least p% of the samples at or below it. */
static double rank(const double *sorted, size_t n, double p) {
  size_t k = (size_t)ceil(p / 100.0 * (double)n);
  if (k < 1) k = 1;
  if (k > n) k = n;
  return sorted[k - 1];
}

int crec_tool_stats_compute(const double *samples, size_t count, crec_tool_stats *out, crec_tool_diag *d) {
  memset(out, 0, sizeof *out);
  if (!count) return crec_tool_fail(d, NULL, "no samples to summarize");
  for (size_t i = 0; i < count; i++)
    if (!isfinite(samples[i]) || samples[i] < 0)
      return crec_tool_fail(d, NULL, "sample %zu is %g, not a duration", i, samples[i]);
  double *sorted = malloc(count * sizeof *sorted);
  if (!sorted) return crec_tool_fail(d, NULL, "out of memory sorting %zu samples", count);
  memcpy(sorted, samples, count * sizeof *sorted);
  qsort(sorted, count, sizeof *sorted, compare_double);
  out->count = count;
  out->min = sorted[0];
  out->p50 = rank(sorted, count, 50);
  out->p90 = rank(sorted, count, 90);
  out->p99 = rank(sorted, count, 99);
  free(sorted);
  return 0;
}

static void json_stats(crec_tool_buf *b, const char *key, const crec_tool_stats *s) {
  crec_tool_buf_printf(b, ", \"%s\": {\"min\": %.3f, \"p50\": %.3f, \"p90\": %.3f, \"p99\": %.3f}", key, s->min,
                       s->p50, s->p90, s->p99);
}

void crec_tool_bench_json(crec_tool_buf *b, const crec_tool_bench_result *r) {
  crec_tool_buf_printf(b, "{\"nodes\": %" PRIu64 ", \"record_us\": %.3f", r->nodes, r->record_us);
  json_stats(b, "eager_us", &r->eager);
  json_stats(b, "replay_us", &r->replay);
  json_stats(b, "replay_update_us", &r->replay_update);
  crec_tool_buf_puts(b, "}\n");
}

static void table_row(crec_tool_buf *b, const char *what, const crec_tool_stats *s) {
  crec_tool_buf_printf(b, "  %-17s %11.2f %11.2f %11.2f %11.2f\n", what, s->min, s->p50, s->p90, s->p99);
}

void crec_tool_bench_table(crec_tool_buf *b, const crec_tool_bench_result *r) {
  crec_tool_buf_printf(b, "%s (entry %s)%s%s\n", r->program ? r->program : "program", r->entry ? r->entry : "main",
                       r->device ? " on " : "", r->device ? r->device : "");
  crec_tool_buf_printf(b, "graph: %" PRIu64 " nodes, recorded in %.1f us\n", r->nodes, r->record_us);
  crec_tool_buf_printf(b,
                       "%" PRIu64 " timed executions of each kind after %" PRIu64
                       " warm-up; microseconds per execution:\n",
                       r->iters, r->warmup);
  crec_tool_buf_printf(b, "  %-17s %11s %11s %11s %11s\n", "", "min", "p50", "p90", "p99");
  table_row(b, "eager", &r->eager);
  table_row(b, "replay", &r->replay);
  table_row(b, "replay (update)", &r->replay_update);
  if (r->replay.p50 > 0)
    crec_tool_buf_printf(b, "replay is %.2fx eager at p50; rotating among %" PRIu64 " buffer sets costs %.2f us per replay\n",
                         r->eager.p50 / r->replay.p50, r->rotated_sets, r->replay_update.p50 - r->replay.p50);
  if (r->variants > 1)
    crec_tool_buf_printf(b,
                         "%" PRIu64 " executable graphs (--variants): %" PRIu64
                         " replays found their buffer set held by another graph and updated nothing\n",
                         r->variants, r->variant_hits);
}

/* ---- progress bar ---------------------------------------------------------- */

enum { BAR_CELLS = 30 };

void crec_tool_progress_start(crec_tool_progress *p, FILE *out, const char *label, uint64_t total) {
  memset(p, 0, sizeof *p);
  p->out = out;
  p->enabled = out && total && isatty(fileno(out));
  p->total = total;
  p->label = label ? label : "";
  p->shown = -1;
}

static void draw(crec_tool_progress *p, int cells) {
  char bar[BAR_CELLS + 1];
  for (int i = 0; i < BAR_CELLS; i++) bar[i] = i < cells ? '#' : '.';
  bar[BAR_CELLS] = '\0';
  fprintf(p->out, "\r%-18s [%s] %3d%%", p->label, bar, (int)(p->done * 100 / p->total));
  fflush(p->out);
  p->shown = cells;
}

void crec_tool_progress_step(crec_tool_progress *p) {
  if (!p->enabled || p->done >= p->total) return;
  p->done++;
  int cells = (int)(p->done * BAR_CELLS / p->total);
  if (cells != p->shown) draw(p, cells);
}

void crec_tool_progress_label(crec_tool_progress *p, const char *label) {
  p->label = label ? label : "";
  if (p->enabled) draw(p, (int)(p->done * BAR_CELLS / p->total));
}

void crec_tool_progress_finish(crec_tool_progress *p) {
  if (!p->enabled) return;
  if (p->shown >= 0) fprintf(p->out, "\r%*s\r", 18 + BAR_CELLS + 8, "");
  fflush(p->out);
  p->enabled = 0;
}
