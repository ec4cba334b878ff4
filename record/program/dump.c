/* Program dumps: a text summary, JSON (the schema crec dump --format json and its
 * HTML page read), and Graphviz DOT. */
#include <inttypes.h>
#include <string.h>

#include "plan_internal.h"

/* "1 region", "3 regions": a count and its noun, singular for one. */
static void put_count(crec__text *t, uint64_t n, const char *one, const char *many) {
  crec__text_printf(t, "%" PRIu64 " %s", n, n == 1 ? one : many);
}

static void put_range(crec__text *t, const crec_program *p, crec_range r) {
  crec__text_printf(t, "%s[%" PRIu64, crec__buffer_name(p, r.buffer), r.offset);
  if (r.size == CREC_WHOLE) crec__text_puts(t, "..end)");
  else crec__text_printf(t, "..%" PRIu64 ")", r.offset + r.size);
}

static void put_dim(crec__text *t, const crec_program *p, crec_dim d) {
  if (d.scalar.id) crec__text_puts(t, p->scalars[crec__index(d.scalar.id)].name);
  else crec__text_printf(t, "%u", d.value);
}

static void put_dims(crec__text *t, const crec_program *p, const crec_dim *d) {
  put_dim(t, p, d[0]);
  crec__text_puts(t, "x");
  put_dim(t, p, d[1]);
  crec__text_puts(t, "x");
  put_dim(t, p, d[2]);
}

/* A launch's thread-block cluster dims: its kernel's, when it has them. */
static const uint32_t *launch_cluster(const crec_program *p, const crec__command *c) {
  if (c->kind != CREC_COMMAND_LAUNCH) return NULL;
  const crec__kernel *k = &p->kernels[c->kernel];
  return k->cluster[0] ? k->cluster : NULL;
}

static const char *access_name(crec_access a) {
  return a == CREC_ACCESS_READ ? "r" : a == CREC_ACCESS_WRITE ? "w" : "rw";
}

static void put_operands(crec__text *t, const crec_program *p, const crec_operand *ops, size_t n) {
  crec__text_puts(t, "(");
  for (size_t i = 0; i < n; i++) {
    if (i) crec__text_puts(t, ", ");
    if (!ops[i].range.buffer.id) {
      crec__text_puts(t, "hole");
      continue;
    }
    crec__text_printf(t, "%s ", access_name(ops[i].access));
    put_range(t, p, ops[i].range);
  }
  crec__text_puts(t, ")");
}

static void put_gemm(crec__text *t, const crec_program *p, const crec__gemm *g) {
  const crec_gemm *d = &g->desc;
  crec__text_printf(t, " %s%s%s M=%" PRIu64 " N=%" PRIu64 " K=%" PRIu64, crec_element_name(d->type),
                    d->output_type != d->type ? " into " : "", d->output_type != d->type ? crec_element_name(d->output_type) : "",
                    g->m, g->n, g->k);
  if (d->batch > 1) crec__text_printf(t, " batch %" PRIu64, d->batch);
  crec__text_puts(t, ": ");
  put_range(t, p, d->d.range);
  crec__text_printf(t, " = %g * A%s ", d->alpha, d->transpose_a ? "^T" : "");
  put_range(t, p, d->a.range);
  crec__text_printf(t, " * B%s ", d->transpose_b ? "^T" : "");
  put_range(t, p, d->b.range);
  if (d->beta != 0 || d->c.range.buffer.id) {
    crec__text_printf(t, " + %g * C ", d->beta);
    if (d->c.range.buffer.id) put_range(t, p, d->c.range);
    else crec__text_puts(t, "(D)");
  }
  if (d->epilogue == CREC_GEMM_EPILOGUE_BIAS || d->epilogue == CREC_GEMM_EPILOGUE_BIAS_RELU) {
    crec__text_puts(t, " + bias ");
    put_range(t, p, d->bias);
  }
  if (d->epilogue == CREC_GEMM_EPILOGUE_RELU || d->epilogue == CREC_GEMM_EPILOGUE_BIAS_RELU)
    crec__text_puts(t, ", relu");
  crec__text_printf(t, "; workspace %s", p->buffers[g->workspace].name);
}

/* "f32 rfft 8x16 batch 4 scale 0.5" (the shape and what is not the default) */
static void put_fft_shape(crec__text *t, const crec_fft *d, const char *sep) {
  crec__text_printf(t, "%s%s", crec_element_name(d->precision), sep);
  crec__text_printf(t, "%s ", crec_fft_type_name(d->type));
  for (uint32_t i = 0; i < d->rank; i++) crec__text_printf(t, "%s%" PRIu64, i ? "x" : "", d->length[i]);
  if (d->batch > 1) crec__text_printf(t, " batch %" PRIu64, d->batch);
}

static void put_fft(crec__text *t, const crec_program *p, const crec__fft *f) {
  const crec_fft *d = &f->desc;
  crec__text_puts(t, " ");
  put_fft_shape(t, d, " ");
  crec__text_puts(t, ": ");
  put_range(t, p, d->output);
  crec__text_puts(t, " <- ");
  put_range(t, p, d->input);
  if (d->scale != 1) crec__text_printf(t, ", scaled by %.17g", d->scale);
  crec__text_printf(t, "; workspace %s", p->buffers[f->workspace].name);
}

static void put_cholesky(crec__text *t, const crec_program *p, const crec__chol *k) {
  const crec_cholesky *d = &k->desc;
  crec__text_printf(t, " %s %s n=%" PRIu64, crec_element_name(d->type), d->upper ? "upper" : "lower", d->n);
  if (d->batch > 1) crec__text_printf(t, " batch %" PRIu64, d->batch);
  crec__text_puts(t, ": ");
  put_range(t, p, d->a);
  crec__text_puts(t, " in place, info ");
  put_range(t, p, d->info);
  crec__text_printf(t, "; workspace %s", p->buffers[k->workspace].name);
}

/* "f16 forward nhwc 3x3 stride 2x2 pad 1x1 groups 2" (what is not the default) */
static void put_conv_shape(crec__text *t, const crec__conv *k) {
  const crec_conv *d = &k->desc;
  crec__text_printf(t, "%s %s %s%s ", crec_element_name(d->type), crec_conv_kind_name(d->kind),
                    d->layout == CREC_CONV_NHWC ? "nhwc" : "nchw",
                    d->filter_layout == CREC_CONV_FILTER_HWIO ? " (hwio filter)" : "");
  for (uint32_t i = 0; i < d->spatial; i++) crec__text_printf(t, "%s%" PRIu64, i ? "x" : "", d->filter_size[i]);
  const struct {
    const char *name;
    const uint64_t *v;
    uint64_t deflt;
  } parts[] = {{"stride", d->stride, 1}, {"pad", d->padding, 0}, {"dilation", d->dilation, 1}};
  for (size_t j = 0; j < sizeof parts / sizeof *parts; j++) {
    bool shown = false;
    for (uint32_t i = 0; i < d->spatial; i++) shown = shown || parts[j].v[i] != parts[j].deflt;
    if (!shown) continue;
    crec__text_printf(t, " %s ", parts[j].name);
    for (uint32_t i = 0; i < d->spatial; i++) crec__text_printf(t, "%s%" PRIu64, i ? "x" : "", parts[j].v[i]);
  }
  if (d->groups > 1) crec__text_printf(t, " groups %" PRIu64, d->groups);
}

static void put_conv(crec__text *t, const crec_program *p, const crec__conv *k) {
  const crec_conv *d = &k->desc;
  crec__text_puts(t, " ");
  put_conv_shape(t, k);
  crec__text_printf(t, ", N=%" PRIu64 " C=%" PRIu64 " K=%" PRIu64 ": x ", d->batch, d->in_channels, d->out_channels);
  put_range(t, p, d->input);
  crec__text_puts(t, ", w ");
  put_range(t, p, d->filter);
  crec__text_puts(t, ", y ");
  put_range(t, p, d->output);
  if (d->bias.buffer.id) {
    crec__text_puts(t, ", bias ");
    put_range(t, p, d->bias);
  }
  if (d->activation == CREC_CONV_ACTIVATION_RELU) crec__text_puts(t, ", relu");
  crec__text_printf(t, "; algorithm by %s; workspace %s", d->algorithm == CREC_CONV_SEARCH ? "search" : "heuristics",
                    p->buffers[k->workspace].name);
}

static void put_collective(crec__text *t, const crec_program *p, const crec__command *c) {
  const crec__coll *k = c->coll;
  if (k->start != CREC__NONE) {
    crec__text_printf(t, " done of #%u ('%s')", k->start, p->commands[k->start].name);
    return;
  }
  const crec_collective *d = &k->desc;
  crec__text_printf(t, " %s", crec_collective_kind_name(d->kind));
  if (d->kind == CREC_COLLECTIVE_REPLICA_ID || d->kind == CREC_COLLECTIVE_PARTITION_ID) {
    crec__text_printf(t, " of '%s'", p->comms[k->comm].name);
    if (d->groups) crec__text_printf(t, " in %zu replicas of %zu partitions", d->num_groups, d->group_size);
    crec__text_puts(t, ": ");
    put_range(t, p, d->recv);
    crec__text_printf(t, " = the %s of the bound communicator's rank (a fill, no NCCL)",
                      d->kind == CREC_COLLECTIVE_REPLICA_ID ? "replica" : "partition");
    return;
  }
  if (d->kind == CREC_COLLECTIVE_ALL_REDUCE || d->kind == CREC_COLLECTIVE_REDUCE_SCATTER)
    crec__text_printf(t, " %s", crec_reduction_name(d->reduction));
  crec__text_printf(t, " %s over '%s'", crec_element_name(d->type), p->comms[k->comm].name);
  if (d->kind == CREC_COLLECTIVE_PERMUTE) {
    crec__text_puts(t, " pairs [");
    for (size_t i = 0; i < d->num_pairs; i++)
      crec__text_printf(t, "%s%d->%d", i ? ", " : "", (int)d->pairs[2 * i], (int)d->pairs[2 * i + 1]);
    crec__text_puts(t, "]");
  } else if (d->groups) {
    crec__text_printf(t, " in %zu groups of %zu", d->num_groups, d->group_size);
  }
  crec__text_puts(t, ": ");
  put_range(t, p, d->recv);
  crec__text_puts(t, " <- ");
  put_range(t, p, d->send);
  if (k->degenerate) crec__text_puts(t, " (single-rank groups: a copy, no NCCL)");
  if (d->async) crec__text_puts(t, ", async start");
}

/* A short summary of a library command, a barrier across ranks, or a loop's own
 * iteration limit, for DOT labels (empty for other kinds). */
static void put_library_summary(crec__text *t, const crec_program *p, const crec__command *c) {
  switch (c->kind) {
    case CREC_COMMAND_GEMM:
      crec__text_printf(t, "\\n%s %" PRIu64 "x%" PRIu64 "x%" PRIu64, crec_element_name(c->gemm->desc.type), c->gemm->m,
                        c->gemm->n, c->gemm->k);
      break;
    case CREC_COMMAND_COLLECTIVE:
      if (c->coll->start != CREC__NONE) crec__text_printf(t, "\\ndone of #%u", c->coll->start);
      else crec__text_printf(t, "\\n%s%s", crec_collective_kind_name(c->coll->desc.kind),
                             c->coll->desc.kind == CREC_COLLECTIVE_REPLICA_ID ||
                                     c->coll->desc.kind == CREC_COLLECTIVE_PARTITION_ID
                                 ? ""
                             : c->coll->degenerate                            ? " (copy)"
                             : c->coll->desc.async                            ? " (start)"
                                                                              : "");
      break;
    case CREC_COMMAND_FFT:
      crec__text_puts(t, "\\n");
      put_fft_shape(t, &c->fft->desc, " ");
      break;
    case CREC_COMMAND_CONV:
      crec__text_puts(t, "\\n");
      put_conv_shape(t, c->conv);
      break;
    case CREC_COMMAND_CHOLESKY:
      crec__text_printf(t, "\\n%s %s n=%" PRIu64, crec_element_name(c->chol->desc.type),
                        c->chol->desc.upper ? "upper" : "lower", c->chol->desc.n);
      if (c->chol->desc.batch > 1) crec__text_printf(t, " batch %" PRIu64, c->chol->desc.batch);
      break;
    case CREC_COMMAND_BARRIER:
      if (!c->coll) break;
      crec__text_puts(t, "\\nacross ");
      crec__text_dot_string(t, p->comms[c->coll->comm].name);
      break;
    case CREC_COMMAND_CUSTOM:
      crec__text_puts(t, "\\ntarget ");
      crec__text_dot_string(t, c->custom->target);
      break;
    case CREC_COMMAND_GRAPH:
      crec__text_printf(t, "\\nimported, %" PRIu64 " node%s", c->graph->nodes, c->graph->nodes == 1 ? "" : "s");
      break;
    case CREC_COMMAND_WHILE:
      if (c->loop_limit == CREC_LOOP_UNLIMITED) crec__text_puts(t, "\\nno iteration limit");
      else if (c->loop_limit) crec__text_printf(t, "\\nat most %" PRIu64 " iteration%s", c->loop_limit, c->loop_limit == 1 ? "" : "s");
      break;
    default:
      break;
  }
}

/* One line describing what a command does (without its deps). */
static void put_command_detail(crec__text *t, const crec_program *p, const crec__command *c) {
  switch (c->kind) {
    case CREC_COMMAND_LAUNCH: {
      const crec__kernel *k = &p->kernels[c->kernel];
      crec__text_printf(t, " %s<<<", k->entry);
      put_dims(t, p, c->grid);
      crec__text_puts(t, ", ");
      put_dims(t, p, c->block);
      if (c->shared_bytes.scalar.id || c->shared_bytes.value) {
        crec__text_puts(t, ", ");
        put_dim(t, p, c->shared_bytes);
      }
      if (k->cluster[0]) crec__text_printf(t, ", cluster %ux%ux%u", k->cluster[0], k->cluster[1], k->cluster[2]);
      if (c->launch_flags & CREC_LAUNCH_EARLY_START) crec__text_puts(t, ", early start");
      crec__text_puts(t, ">>>(");
      for (size_t a = 0; a < c->num_args; a++) {
        const crec_arg *arg = &c->args[a].arg;
        if (a) crec__text_puts(t, ", ");
        if (arg->kind == CREC_ARG_BUFFER) {
          crec__text_printf(t, "%s ", access_name(arg->access));
          put_range(t, p, arg->range);
        } else if (arg->kind == CREC_ARG_SCALAR) {
          crec__text_puts(t, p->scalars[crec__index(arg->scalar.id)].name);
        } else if (arg->type == CREC_TYPE_I32) {
          crec__text_printf(t, "%d", arg->value.i32);
        } else if (arg->type == CREC_TYPE_I64) {
          crec__text_printf(t, "%" PRId64, arg->value.i64);
        } else if (arg->type == CREC_TYPE_F32) {
          crec__text_printf(t, "%gf", (double)arg->value.f32);
        } else if (arg->type == CREC_TYPE_F64) {
          crec__text_printf(t, "%g", arg->value.f64);
        } else {
          crec__text_printf(t, "<%u byte%s>", arg->size, arg->size == 1 ? "" : "s");
        }
      }
      crec__text_puts(t, ")");
      break;
    }
    case CREC_COMMAND_MEMCPY:
      crec__text_puts(t, " ");
      put_range(t, p, c->dst);
      crec__text_puts(t, " <- ");
      put_range(t, p, c->src);
      break;
    case CREC_COMMAND_MEMSET:
      crec__text_puts(t, " ");
      put_range(t, p, c->dst);
      crec__text_printf(t, " = 0x%x (%u-byte elements)", c->memset_value, c->memset_element_size);
      break;
    case CREC_COMMAND_WHILE:
    case CREC_COMMAND_IF:
    case CREC_COMMAND_SWITCH:
      crec__text_puts(t, c->kind == CREC_COMMAND_SWITCH ? " index " : " predicate ");
      put_range(t, p, c->predicate);
      if (c->case_values) {
        crec__text_puts(t, " cases [");
        for (size_t i = 0; i + 1 < c->num_regions; i++)
          crec__text_printf(t, "%s%d", i ? ", " : "", (int)c->case_values[i]);
        crec__text_puts(t, "]");
      }
      /* a loop's own limit (crec.max_iterations); without one, the exec's applies */
      if (c->loop_limit == CREC_LOOP_UNLIMITED) crec__text_puts(t, " max_iterations unlimited");
      else if (c->loop_limit) crec__text_printf(t, " max_iterations %" PRIu64, c->loop_limit);
      break;
    case CREC_COMMAND_BARRIER:
      if (!c->coll) break;
      crec__text_printf(t, " across the %d ranks of '%s' (scratch %s)", p->comms[c->coll->comm].size,
                        p->comms[c->coll->comm].name, p->buffers[crec__index(c->ops[0].range.buffer.id)].name);
      if (c->coll->degenerate) crec__text_puts(t, ", one rank: no NCCL");
      break;
    case CREC_COMMAND_GEMM:
      put_gemm(t, p, c->gemm);
      break;
    case CREC_COMMAND_FFT:
      put_fft(t, p, c->fft);
      break;
    case CREC_COMMAND_CHOLESKY:
      put_cholesky(t, p, c->chol);
      break;
    case CREC_COMMAND_CONV:
      put_conv(t, p, c->conv);
      break;
    case CREC_COMMAND_COLLECTIVE:
      put_collective(t, p, c);
      break;
    case CREC_COMMAND_CUSTOM:
      crec__text_printf(t, " target '%s' ", c->custom->target);
      put_operands(t, p, c->custom->operands, c->custom->num_operands);
      if (c->custom->num_kernels) {
        crec__text_puts(t, " kernels");
        for (size_t i = 0; i < c->custom->num_kernels; i++)
          crec__text_printf(t, "%s %s", i ? "," : "", p->kernels[crec__index(c->custom->kernels[i].id)].entry);
      }
      char tmap[512];
      if (strcmp(c->custom->target, CREC__TENSOR_MAP_TARGET) == 0 &&
          crec__tensor_map_describe(c->custom->attributes, c->custom->attributes_size, tmap, sizeof tmap))
        crec__text_printf(t, ", TMA descriptor: %s", tmap);
      else if (c->custom->attributes_size)
        crec__text_printf(t, ", %zu attribute byte%s", c->custom->attributes_size,
                          c->custom->attributes_size == 1 ? "" : "s");
      break;
    case CREC_COMMAND_HOST:
      crec__text_puts(t, " callback ");
      put_operands(t, p, c->ops, c->num_ops);
      break;
    case CREC_COMMAND_GRAPH:
      crec__text_printf(t, " imported, %" PRIu64 " node%s, %" PRIu64 " rewritten at replays, ", c->graph->nodes,
                        c->graph->nodes == 1 ? "" : "s", c->graph->relocated);
      put_operands(t, p, c->ops, c->num_ops);
      break;
    default:
      break;
  }
}

/* Prints a region's commands at `depth`, each control-flow command followed by
 * its regions under their own headers (empty ones too). */
static void text_region(crec__text *t, const crec_program *p, const crec_plan *plan, uint32_t region,
                        int depth) {
  const crec__region *r = &p->regions[region];
  for (size_t i = 0; i < r->num_commands; i++) {
    uint32_t ci = r->commands[i];
    const crec__command *c = &p->commands[ci];
    crec__text_printf(t, "%*s#%u %s '%s'", 2 * depth, "", ci, crec_command_kind_name(c->kind), c->name);
    put_command_detail(t, p, c);
    uint32_t b = plan->dep_start[ci], e = plan->dep_start[ci + 1];
    if (b < e) {
      crec__text_puts(t, " after");
      for (uint32_t k = b; k < e; k++) crec__text_printf(t, " #%zu", crec__index(plan->deps[k].id));
    }
    crec__text_puts(t, "\n");
    for (size_t k = 0; k < c->num_regions; k++) {
      const crec__region *sub = &p->regions[c->regions[k]];
      crec__text_printf(t, "%*s%s", 2 * depth + 2, "", crec_region_role_name(sub->role));
      if (sub->role == CREC_REGION_BRANCH) {
        if (k + 1 == c->num_regions) crec__text_puts(t, " default");
        else if (c->case_values) crec__text_printf(t, " case %d", (int)c->case_values[k]);
        else crec__text_printf(t, " %zu", k);
      }
      crec__text_puts(t, sub->num_commands ? ":\n" : ": (empty)\n");
      text_region(t, p, plan, c->regions[k], depth + 2);
    }
  }
}

static void dump_text(crec__text *t, const crec_program *p, const crec_plan *plan) {
  size_t nargs = 0, ntemps = 0, nconsts = 0;
  for (size_t i = 0; i < p->num_buffers; i++) {
    nargs += p->buffers[i].kind == CREC_BUFFER_ARGUMENT;
    ntemps += p->buffers[i].kind == CREC_BUFFER_TEMPORARY;
    nconsts += p->buffers[i].kind == CREC_BUFFER_CONSTANT;
  }
  crec__text_puts(t, "program: ");
  put_count(t, p->num_commands, "command", "commands");
  crec__text_puts(t, " in ");
  put_count(t, p->num_regions, "region", "regions");
  crec__text_puts(t, ", ");
  put_count(t, p->num_buffers, "buffer", "buffers");
  crec__text_puts(t, " (");
  put_count(t, nargs, "argument", "arguments");
  crec__text_puts(t, ", ");
  put_count(t, ntemps, "temporary", "temporaries");
  crec__text_puts(t, ", ");
  put_count(t, nconsts, "constant", "constants");
  crec__text_puts(t, "), ");
  put_count(t, p->num_scalars, "scalar", "scalars");
  crec__text_puts(t, ", ");
  put_count(t, p->num_kernels, "kernel", "kernels");
  crec__text_puts(t, "; arena ");
  put_count(t, plan->arena_bytes, "byte", "bytes");
  if (plan->host_arena_bytes) {
    crec__text_puts(t, "; host arena ");
    put_count(t, plan->host_arena_bytes, "byte", "bytes");
  }
  crec__text_puts(t, "\n");
  if (p->num_buffers) crec__text_puts(t, "buffers:\n");
  for (size_t i = 0; i < p->num_buffers; i++) {
    const crec__buffer *b = &p->buffers[i];
    crec__text_printf(t, "  %-16s %-9s ", b->name, crec_buffer_kind_name(b->kind));
    put_count(t, b->size, "byte", "bytes");
    if (b->kind == CREC_BUFFER_ARGUMENT) {
      crec__text_printf(t, ", binding %u", b->arg_index);
      if (b->dynamic_size) crec__text_puts(t, ", dynamic size");
      if (b->memory == CREC_MEMORY_HOST) crec__text_puts(t, ", host memory");
    } else if (b->kind == CREC_BUFFER_TEMPORARY) {
      const crec__plan_temp *tp = &plan->temps[i];
      if (b->memory == CREC_MEMORY_HOST) crec__text_puts(t, ", host memory");
      if (tp->first > tp->last) crec__text_puts(t, ", unused");
      else crec__text_printf(t, ", %sarena offset %" PRIu64 ", live %zu..%zu", b->memory == CREC_MEMORY_HOST ? "host " : "",
                             tp->offset, tp->first, tp->last);
    }
    crec__text_puts(t, "\n");
  }
  if (p->num_scalars) crec__text_puts(t, "scalars:\n");
  for (size_t i = 0; i < p->num_scalars; i++) {
    const crec__scalar *s = &p->scalars[i];
    static const char *const kinds[] = {"bound", "derived", "size of"};
    crec__text_printf(t, "  %-16s %s %s", s->name, crec_type_name(s->type), kinds[s->kind]);
    if (s->kind == CREC_SCALAR_SIZE) crec__text_printf(t, " %s", p->buffers[s->buffer].name);
    if (s->kind == CREC_SCALAR_DERIVED && s->host_fn != CREC__NONE)
      crec__text_printf(t, " by %s", p->host_fns[s->host_fn].name);
    crec__text_puts(t, "\n");
  }
  if (p->num_kernels) crec__text_puts(t, "kernels:\n");
  for (size_t i = 0; i < p->num_kernels; i++) {
    const crec__kernel *k = &p->kernels[i];
    const crec__module *m = &p->modules[k->module];
    crec__text_printf(t, "  %-16s module %s (%s, ", k->entry, m->name, crec_image_format_name(m->format));
    put_count(t, m->size, "byte", "bytes");
    crec__text_puts(t, ")\n");
  }
  crec__text_puts(t, "commands:\n");
  text_region(t, p, plan, 0, 1);
}

/* ---- JSON (the schema is in include/crec/dump.h) ---- */

static const char *json_access(crec_access a) {
  return a == CREC_ACCESS_READ ? "read" : a == CREC_ACCESS_WRITE ? "write" : "read-write";
}

/* a dim: its number, or the name of the scalar it comes from */
static void json_dim(crec__text *t, const crec_program *p, crec_dim d) {
  if (d.scalar.id) crec__text_json_string(t, p->scalars[crec__index(d.scalar.id)].name);
  else crec__text_printf(t, "%u", d.value);
}

static void json_dims(crec__text *t, const crec_program *p, const char *key, const crec_dim *d) {
  crec__text_printf(t, ",\"%s\":[", key);
  for (int i = 0; i < 3; i++) {
    if (i) crec__text_puts(t, ",");
    json_dim(t, p, d[i]);
  }
  crec__text_puts(t, "]");
}

/* "buffer":"x","offset":0,"end":4096; end is null for CREC_WHOLE of a dynamic-size buffer */
static void json_range_fields(crec__text *t, const crec_program *p, crec_range r) {
  const crec__buffer *b = &p->buffers[crec__index(r.buffer.id)];
  crec__text_puts(t, "\"buffer\":");
  crec__text_json_string(t, b->name);
  crec__text_printf(t, ",\"offset\":%" PRIu64 ",\"end\":", r.offset);
  if (r.size != CREC_WHOLE) crec__text_printf(t, "%" PRIu64, r.offset + r.size);
  else if (!b->dynamic_size) crec__text_printf(t, "%" PRIu64, b->size);
  else crec__text_puts(t, "null");
}

static void json_range(crec__text *t, const crec_program *p, const char *key, crec_range r) {
  crec__text_printf(t, ",\"%s\":{", key);
  json_range_fields(t, p, r);
  crec__text_puts(t, "}");
}

/* the bytes a copy or fill writes: null when that is the rest of a dynamic-size buffer,
 * known only from its binding */
static void json_bytes(crec__text *t, uint64_t bytes) {
  if (bytes == CREC_WHOLE) crec__text_puts(t, ",\"bytes\":null");
  else crec__text_printf(t, ",\"bytes\":%" PRIu64, bytes);
}

/* An immediate's type and value; the value is a string so that no digit is lost. */
static void json_immediate(crec__text *t, const crec_arg *a) {
  switch (a->type) {
    case CREC_TYPE_I32: crec__text_printf(t, "\"i32\",\"value\":\"%" PRId32 "\"", a->value.i32); break;
    case CREC_TYPE_I64: crec__text_printf(t, "\"i64\",\"value\":\"%" PRId64 "\"", a->value.i64); break;
    case CREC_TYPE_F32: crec__text_printf(t, "\"f32\",\"value\":\"%.9g\"", (double)a->value.f32); break;
    case CREC_TYPE_F64: crec__text_printf(t, "\"f64\",\"value\":\"%.17g\"", a->value.f64); break;
    default: crec__text_printf(t, "\"bytes\",\"value\":\"%u bytes\"", a->size); break;
  }
}

static void json_launch(crec__text *t, const crec_program *p, const crec__command *c) {
  const crec__kernel *k = &p->kernels[c->kernel];
  const crec__module *m = &p->modules[k->module];
  crec__text_puts(t, ",\"kernel\":{\"entry\":");
  crec__text_json_string(t, k->entry);
  crec__text_puts(t, ",\"module\":");
  crec__text_json_string(t, m->name);
  crec__text_printf(t, ",\"format\":\"%s\"}", crec_image_format_name(m->format));
  json_dims(t, p, "grid", c->grid);
  json_dims(t, p, "block", c->block);
  crec__text_puts(t, ",\"shared\":");
  json_dim(t, p, c->shared_bytes);
  const uint32_t *cl = launch_cluster(p, c); /* only where the kernel has thread-block cluster dims */
  if (cl) crec__text_printf(t, ",\"cluster\":[%u,%u,%u]", cl[0], cl[1], cl[2]);
  /* only where the launch has it (CREC_LAUNCH_EARLY_START) */
  if (c->launch_flags & CREC_LAUNCH_EARLY_START) crec__text_puts(t, ",\"early_start\":true");
  crec__text_puts(t, ",\"args\":[");
  for (size_t a = 0; a < c->num_args; a++) {
    const crec_arg *arg = &c->args[a].arg;
    crec__text_puts(t, a ? ",{" : "{");
    if (arg->kind == CREC_ARG_BUFFER) {
      crec__text_puts(t, "\"kind\":\"buffer\",");
      json_range_fields(t, p, arg->range);
      crec__text_printf(t, ",\"access\":\"%s\"", json_access(arg->access));
    } else if (arg->kind == CREC_ARG_SCALAR) {
      const crec__scalar *s = &p->scalars[crec__index(arg->scalar.id)];
      crec__text_puts(t, "\"kind\":\"scalar\",\"name\":");
      crec__text_json_string(t, s->name);
      crec__text_printf(t, ",\"type\":\"%s\"", crec_type_name(s->type));
    } else {
      crec__text_puts(t, "\"kind\":\"immediate\",\"type\":");
      json_immediate(t, arg);
    }
    crec__text_puts(t, "}");
  }
  crec__text_puts(t, "]");
}

static void json_gemm(crec__text *t, const crec__gemm *g) {
  static const char *const epilogues[] = {"none", "bias", "relu", "bias_relu"};
  const crec_gemm *d = &g->desc;
  crec__text_printf(t,
                    ",\"gemm\":{\"type\":\"%s\",\"output_type\":\"%s\",\"m\":%" PRIu64 ",\"n\":%" PRIu64 ",\"k\":%" PRIu64
                    ",\"batch\":%" PRIu64 ",\"transpose_a\":%s,\"transpose_b\":%s,\"alpha\":%.17g,"
                    "\"beta\":%.17g,\"accumulate\":%s,\"epilogue\":\"%s\",\"workspace_bytes\":%" PRIu64 "}",
                    crec_element_name(d->type), crec_element_name(d->output_type), g->m, g->n, g->k, d->batch,
                    d->transpose_a ? "true" : "false",
                    d->transpose_b ? "true" : "false", d->alpha, d->beta, d->c.range.buffer.id ? "false" : "true",
                    (unsigned)d->epilogue < 4 ? epilogues[d->epilogue] : "unknown", d->workspace_bytes);
}

static void json_fft(crec__text *t, const crec__fft *f) {
  const crec_fft *d = &f->desc;
  crec__text_printf(t, ",\"fft\":{\"type\":\"%s\",\"precision\":\"%s\",\"length\":[", crec_fft_type_name(d->type),
                    crec_element_name(d->precision));
  for (uint32_t i = 0; i < d->rank; i++) crec__text_printf(t, "%s%" PRIu64, i ? "," : "", d->length[i]);
  crec__text_printf(t, "],\"batch\":%" PRIu64 ",\"scale\":%.17g,\"workspace_bytes\":%" PRIu64 "}", d->batch,
                    d->scale, d->workspace_bytes);
}

/* "name":[a,b] of the first `n` of `v` */
static void json_sizes(crec__text *t, const char *name, const uint64_t *v, uint32_t n) {
  crec__text_printf(t, ",\"%s\":[", name);
  for (uint32_t i = 0; i < n; i++) crec__text_printf(t, "%s%" PRIu64, i ? "," : "", v[i]);
  crec__text_puts(t, "]");
}

static void json_conv(crec__text *t, const crec__conv *k) {
  const crec_conv *d = &k->desc;
  crec__text_printf(t, ",\"conv\":{\"kind\":\"%s\",\"type\":\"%s\",\"layout\":\"%s\",\"batch\":%" PRIu64
                    ",\"in_channels\":%" PRIu64 ",\"out_channels\":%" PRIu64 ",\"groups\":%" PRIu64,
                    crec_conv_kind_name(d->kind), crec_element_name(d->type), d->layout == CREC_CONV_NHWC ? "nhwc" : "nchw",
                    d->batch, d->in_channels, d->out_channels, d->groups);
  json_sizes(t, "in_size", d->in_size, d->spatial);
  json_sizes(t, "filter_size", d->filter_size, d->spatial);
  json_sizes(t, "out_size", k->out_size, d->spatial);
  json_sizes(t, "stride", d->stride, d->spatial);
  json_sizes(t, "padding", d->padding, d->spatial);
  json_sizes(t, "dilation", d->dilation, d->spatial);
  crec__text_printf(t,
                    ",\"filter_layout\":\"%s\",\"bias\":%s,\"activation\":\"%s\",\"algorithm\":\"%s\","
                    "\"workspace_bytes\":%" PRIu64 "}",
                    d->filter_layout == CREC_CONV_FILTER_HWIO ? "hwio" : "k_first", d->bias.buffer.id ? "true" : "false",
                    d->activation == CREC_CONV_ACTIVATION_RELU ? "relu" : "none",
                    d->algorithm == CREC_CONV_SEARCH ? "search" : "heuristics", d->workspace_bytes);
}

static void json_collective(crec__text *t, const crec_program *p, const crec__command *c) {
  /* a done describes the start it finishes */
  const crec__coll *k = c->coll->start != CREC__NONE ? p->commands[c->coll->start].coll : c->coll;
  const crec_collective *d = &k->desc;
  crec__text_printf(t, ",\"collective\":{\"op\":\"%s\",\"type\":\"%s\",", crec_collective_kind_name(d->kind),
                    crec_element_name(d->type));
  if (d->kind == CREC_COLLECTIVE_ALL_REDUCE || d->kind == CREC_COLLECTIVE_REDUCE_SCATTER)
    crec__text_printf(t, "\"reduction\":\"%s\",", crec_reduction_name(d->reduction));
  crec__text_puts(t, "\"communicator\":");
  crec__text_json_string(t, p->comms[k->comm].name);
  crec__text_printf(t, ",\"ranks\":%d,\"async\":\"%s\"}", p->comms[k->comm].size,
                    c->coll->start != CREC__NONE ? "done" : d->async ? "start" : "no");
}

/* What a command does, after its common fields: the fields of its kind, then
 * the ranges a library command or a barrier across ranks touches, then the
 * regions of control flow. */
static void json_command_detail(crec__text *t, const crec_program *p, const crec__command *c) {
  switch (c->kind) {
    case CREC_COMMAND_LAUNCH:
      json_launch(t, p, c);
      break;
    case CREC_COMMAND_MEMCPY:
      json_range(t, p, "dst", c->dst);
      json_range(t, p, "src", c->src);
      json_bytes(t, c->bytes);
      break;
    case CREC_COMMAND_MEMSET:
      json_range(t, p, "dst", c->dst);
      json_bytes(t, c->bytes);
      crec__text_printf(t, ",\"value\":\"0x%x\",\"element_size\":%u", c->memset_value, c->memset_element_size);
      break;
    case CREC_COMMAND_WHILE:
    case CREC_COMMAND_IF:
    case CREC_COMMAND_SWITCH:
      json_range(t, p, "predicate", c->predicate);
      if (c->case_values) {
        crec__text_puts(t, ",\"cases\":[");
        for (size_t k = 0; k + 1 < c->num_regions; k++)
          crec__text_printf(t, "%s%" PRId32, k ? "," : "", c->case_values[k]);
        crec__text_puts(t, "]");
      }
      if (c->loop_limit == CREC_LOOP_UNLIMITED) crec__text_puts(t, ",\"max_iterations\":\"unlimited\"");
      else if (c->loop_limit) crec__text_printf(t, ",\"max_iterations\":%" PRIu64, c->loop_limit);
      break;
    case CREC_COMMAND_GEMM:
      json_gemm(t, c->gemm);
      break;
    case CREC_COMMAND_FFT:
      json_fft(t, c->fft);
      break;
    case CREC_COMMAND_CONV:
      json_conv(t, c->conv);
      break;
    case CREC_COMMAND_CHOLESKY:
      crec__text_printf(t, ",\"cholesky\":{\"type\":\"%s\",\"uplo\":\"%s\",\"n\":%" PRIu64 ",\"batch\":%" PRIu64
                        ",\"workspace_bytes\":%" PRIu64 "}", crec_element_name(c->chol->desc.type),
                        c->chol->desc.upper ? "upper" : "lower", c->chol->desc.n, c->chol->desc.batch,
                        c->chol->desc.workspace_bytes);
      break;
    case CREC_COMMAND_COLLECTIVE:
      json_collective(t, p, c);
      break;
    case CREC_COMMAND_CUSTOM:
      crec__text_puts(t, ",\"custom\":{\"target\":");
      crec__text_json_string(t, c->custom->target);
      crec__text_printf(t, ",\"kernels\":%zu,\"attribute_bytes\":%zu}", c->custom->num_kernels,
                        c->custom->attributes_size);
      break;
    case CREC_COMMAND_GRAPH:
      crec__text_printf(t, ",\"graph\":{\"nodes\":%" PRIu64 ",\"relocated\":%" PRIu64 "}", c->graph->nodes,
                        c->graph->relocated);
      break;
    default:
      break;
  }
  if (c->num_ops) { /* custom holes are not operands */
    crec__text_puts(t, ",\"operands\":[");
    for (size_t o = 0; o < c->num_ops; o++) {
      crec__text_puts(t, o ? ",{" : "{");
      json_range_fields(t, p, c->ops[o].range);
      crec__text_printf(t, ",\"access\":\"%s\"}", json_access(c->ops[o].access));
    }
    crec__text_puts(t, "]");
  }
  if (c->num_regions) {
    crec__text_puts(t, ",\"regions\":[");
    for (size_t k = 0; k < c->num_regions; k++) crec__text_printf(t, "%s%u", k ? "," : "", c->regions[k]);
    crec__text_puts(t, "]");
  }
}

static void dump_json(crec__text *t, const crec_program *p, const crec_plan *plan,
                      const uint32_t *order) {
  static const char *const scalar_kinds[] = {"bound", "derived", "size"};
  crec__text_puts(t, "{\"buffers\":[");
  for (size_t i = 0; i < p->num_buffers; i++) {
    const crec__buffer *b = &p->buffers[i];
    crec__text_puts(t, i ? ",{\"name\":" : "{\"name\":");
    crec__text_json_string(t, b->name);
    crec__text_printf(t, ",\"kind\":\"%s\",\"size\":%" PRIu64 ",\"element\":\"%s\",\"dynamic\":%s",
                      crec_buffer_kind_name(b->kind), b->size, crec_element_name(b->element),
                      b->dynamic_size ? "true" : "false");
    if (b->memory == CREC_MEMORY_HOST) crec__text_puts(t, ",\"memory\":\"host\"");
    const crec__plan_temp *tp = &plan->temps[i];
    if (b->kind == CREC_BUFFER_TEMPORARY && tp->first <= tp->last) /* a temporary some command uses */
      crec__text_printf(t, ",\"arena_offset\":%" PRIu64 ",\"live\":[%zu,%zu]", tp->offset, tp->first, tp->last);
    crec__text_puts(t, "}");
  }
  crec__text_puts(t, "],\"scalars\":[");
  for (size_t i = 0; i < p->num_scalars; i++) {
    const crec__scalar *s = &p->scalars[i];
    crec__text_puts(t, i ? ",{\"name\":" : "{\"name\":");
    crec__text_json_string(t, s->name);
    crec__text_printf(t, ",\"type\":\"%s\",\"kind\":\"%s\"}", crec_type_name(s->type),
                      (unsigned)s->kind < 3 ? scalar_kinds[s->kind] : "unknown");
  }
  crec__text_puts(t, "],\"regions\":[");
  for (size_t i = 0; i < p->num_regions; i++) {
    const crec__region *r = &p->regions[i];
    crec__text_printf(t, "%s{\"id\":%zu,\"parent\":", i ? "," : "", i);
    if (r->parent == CREC__NONE) crec__text_puts(t, "null");
    else crec__text_printf(t, "%u", r->parent);
    crec__text_printf(t, ",\"role\":\"%s\",\"index\":%u}", crec_region_role_name(r->role), r->index_in_parent);
  }
  crec__text_puts(t, "],\"commands\":[");
  for (size_t i = 0; i < p->num_commands; i++) {
    uint32_t ci = order[i];
    const crec__command *c = &p->commands[ci];
    crec__text_printf(t, "%s{\"id\":%u,\"kind\":\"%s\",\"name\":", i ? "," : "", ci,
                      crec_command_kind_name(c->kind));
    crec__text_json_string(t, c->name);
    crec__text_printf(t, ",\"region\":%u,\"deps\":[", c->region);
    for (uint32_t k = plan->dep_start[ci]; k < plan->dep_start[ci + 1]; k++)
      crec__text_printf(t, "%s%zu", k > plan->dep_start[ci] ? "," : "", crec__index(plan->deps[k].id));
    crec__text_puts(t, "]");
    json_command_detail(t, p, c);
    crec__text_puts(t, "}");
  }
  crec__text_puts(t, "]}\n");
}

/* DOT colours by command kind (shared with the HTML view through the dump). */
static const char *kind_color(crec_command_kind k) {
  switch (k) {
    case CREC_COMMAND_LAUNCH: return "#cfe2ff";
    case CREC_COMMAND_MEMCPY: return "#d1e7dd";
    case CREC_COMMAND_MEMSET: return "#fff3cd";
    case CREC_COMMAND_BARRIER: return "#e2e3e5";
    case CREC_COMMAND_WHILE:
    case CREC_COMMAND_IF:
    case CREC_COMMAND_SWITCH: return "#f8d7da";
    case CREC_COMMAND_GEMM:
    case CREC_COMMAND_FFT:
    case CREC_COMMAND_CHOLESKY:
    case CREC_COMMAND_CONV: return "#e0cffc";
    case CREC_COMMAND_COLLECTIVE: return "#cff4fc";
    case CREC_COMMAND_CUSTOM: return "#ffe5d0";
    case CREC_COMMAND_HOST: return "#f7d6e6";
    case CREC_COMMAND_GRAPH: return "#d7f0d0";
    default: return "#ffffff";
  }
}

static void dot_region(crec__text *t, const crec_program *p, uint32_t region, int depth);

static void dot_command(crec__text *t, const crec_program *p, uint32_t ci, int depth) {
  const crec__command *c = &p->commands[ci];
  int ind = 2 * depth + 2;
  if (c->num_regions) {
    crec__text_printf(t, "%*ssubgraph cluster_c%u {\n", ind, "", ci);
    crec__text_printf(t, "%*slabel=\"%s '", ind + 2, "", crec_command_kind_name(c->kind));
    crec__text_dot_string(t, c->name);
    crec__text_printf(t, "'\"; style=rounded; color=\"#b02a37\";\n");
  }
  crec__text_printf(t, "%*sc%u [id=\"c%u\", label=\"#%u %s\\n", ind + (c->num_regions ? 2 : 0), "", ci, ci, ci,
                    crec_command_kind_name(c->kind));
  crec__text_dot_string(t, c->name);
  const uint32_t *cl = launch_cluster(p, c);
  if (cl) crec__text_printf(t, "\\ncluster %ux%ux%u", cl[0], cl[1], cl[2]);
  if (c->kind == CREC_COMMAND_LAUNCH && (c->launch_flags & CREC_LAUNCH_EARLY_START)) crec__text_puts(t, "\\nearly start");
  put_library_summary(t, p, c);
  crec__text_printf(t, "\", shape=%s, style=filled, fillcolor=\"%s\"];\n",
                    c->num_regions ? "diamond" : c->kind == CREC_COMMAND_BARRIER ? "box3d" : "box",
                    kind_color(c->kind));
  if (c->num_regions) {
    for (size_t k = 0; k < c->num_regions; k++) dot_region(t, p, c->regions[k], depth + 2);
    crec__text_printf(t, "%*s}\n", ind, "");
  }
}

static void dot_region(crec__text *t, const crec_program *p, uint32_t region, int depth) {
  const crec__region *r = &p->regions[region];
  int ind = 2 * depth;
  crec__text_printf(t, "%*ssubgraph cluster_r%u {\n", ind, "", region);
  crec__text_printf(t, "%*slabel=\"%s", ind + 2, "", crec_region_role_name(r->role));
  if (r->role == CREC_REGION_BRANCH) crec__text_printf(t, " %u", r->index_in_parent);
  crec__text_printf(t, "\"; style=dashed; color=\"#6c757d\";\n");
  /* an empty region still shows up */
  if (r->num_commands == 0)
    crec__text_printf(t, "%*sr%u_empty [label=\"(empty)\", shape=plaintext];\n", ind + 2, "", region);
  for (size_t i = 0; i < r->num_commands; i++) dot_command(t, p, r->commands[i], depth);
  crec__text_printf(t, "%*s}\n", ind, "");
}

static void dump_dot(crec__text *t, const crec_program *p, const crec_plan *plan) {
  crec__text_puts(t, "digraph crec {\n  rankdir=TB;\n  compound=true;\n"
                     "  node [fontname=\"Helvetica\", fontsize=10];\n"
                     "  graph [fontname=\"Helvetica\", fontsize=10];\n");
  const crec__region *body = &p->regions[0];
  for (size_t i = 0; i < body->num_commands; i++) dot_command(t, p, body->commands[i], 0);
  for (size_t ci = 0; ci < p->num_commands; ci++)
    for (uint32_t k = plan->dep_start[ci]; k < plan->dep_start[ci + 1]; k++) {
      size_t from = crec__index(plan->deps[k].id);
      /* dashed: the edge a record makes programmatic on sm_90 and later (CREC_LAUNCH_EARLY_START) */
      bool early = p->commands[ci].kind == CREC_COMMAND_LAUNCH && p->commands[from].kind == CREC_COMMAND_LAUNCH &&
                   (p->commands[ci].launch_flags & CREC_LAUNCH_EARLY_START);
      crec__text_printf(t, "  c%zu -> c%zu%s;\n", from, ci, early ? " [style=dashed, label=\"early\"]" : "");
    }
  crec__text_puts(t, "}\n");
}

crec_status crec_dump(const crec_program *program, const crec_plan *plan, crec_dump_format format,
                      char **out, size_t *length) {
  static const char fn[] = "crec_dump";
  if (out) *out = NULL;
  if (length) *length = 0;
  if (!program) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'program' is NULL");
  if (!out) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'out' is NULL");
  if ((unsigned)format > CREC_DUMP_DOT)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "argument 'format': unknown dump format %d", (int)format);
  if (plan && (plan->program != program || plan->num_commands != program->num_commands ||
               plan->num_buffers != program->num_buffers))
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn,
                       "argument 'plan': it was made for another program, or before commands or buffers were added");
  crec_plan *own = NULL;
  if (!plan) {
    crec_status s = crec_plan_create(program, NULL, &own);
    if (s) return crec__rethrow(s, fn);
    plan = own;
  }
  uint32_t *order = crec__malloc((program->num_commands ? program->num_commands : 1) * sizeof *order);
  if (!order) {
    crec_plan_destroy(own);
    return crec__oom(fn);
  }
  crec__program_order(program, order);
  crec__text t = {0};
  switch (format) {
    case CREC_DUMP_TEXT: dump_text(&t, program, plan); break;
    case CREC_DUMP_JSON: dump_json(&t, program, plan, order); break;
    case CREC_DUMP_DOT: dump_dot(&t, program, plan); break;
  }
  crec__free(order);
  crec_plan_destroy(own);
  if (t.failed || !t.data) {
    crec__free(t.data);
    return crec__oom(fn);
  }
  *out = t.data;
  if (length) *length = t.len;
  return CREC_OK;
}
