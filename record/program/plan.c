/* Plans: the dependency DAG and the arena placement of one program. */
#include <string.h>

#include "plan_internal.h"

crec_status crec__plan_deps(const crec_program *p, const crec__plan_temp *temps,
                            crec_schedule schedule, uint32_t **start_out, crec_command **deps_out);

crec_status crec_plan_create(const crec_program *program, const crec_plan_options *options,
                             crec_plan **out) {
  static const char fn[] = "crec_plan_create";
  if (!out) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'out' is NULL");
  *out = NULL;
  if (!program) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'program' is NULL");
  crec_plan_options opts = CREC_PLAN_OPTIONS_INIT;
  crec_status st = crec__take_struct(&opts, sizeof opts, options, sizeof(crec_plan_options), fn, "argument 'options'",
                                     "CREC_PLAN_OPTIONS_INIT");
  if (st) return st;
  const crec_plan_options *o = &opts;
  if (o->schedule != CREC_SCHEDULE_CONCURRENT && o->schedule != CREC_SCHEDULE_SEQUENTIAL)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "argument 'options': unknown schedule %d",
                       (int)o->schedule);
  if (o->arena_alignment == 0 || (o->arena_alignment & (o->arena_alignment - 1)))
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn,
                       "argument 'options': arena_alignment %u is not a power of two", o->arena_alignment);
  /* temporaries promise 256-byte alignment, which memset and index checks rely on */
  if (o->arena_alignment < 256)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn,
                       "argument 'options': arena_alignment %u is below the 256 bytes temporaries guarantee",
                       o->arena_alignment);
  crec_status s = crec_program_validate(program);
  if (s) return crec__rethrow(s, fn);
  crec_plan *plan = crec__calloc(1, sizeof *plan);
  if (!plan) return crec__oom(fn);
  plan->program = program;
  plan->num_commands = program->num_commands;
  plan->num_buffers = program->num_buffers;
  plan->options = *o;
  plan->options.struct_size = sizeof plan->options;
  plan->temps = crec__calloc(program->num_buffers ? program->num_buffers : 1, sizeof *plan->temps);
  if (!plan->temps ||
      crec__plan_arena(program, o->arena_alignment, plan->temps, &plan->arena_bytes, &plan->host_arena_bytes) != CREC_OK ||
      crec__plan_deps(program, plan->temps, o->schedule, &plan->dep_start, &plan->deps) != CREC_OK) {
    crec__free(plan->temps);
    crec__free(plan);
    return crec__oom(fn);
  }
  crec__live(1);
  *out = plan;
  return CREC_OK;
}

void crec_plan_destroy(crec_plan *plan) {
  if (!plan) return;
  crec__free(plan->dep_start);
  crec__free(plan->deps);
  crec__free(plan->temps);
  crec__free(plan);
  crec__live(-1);
}

crec_status crec_plan_get_deps(const crec_plan *plan, crec_command command,
                               const crec_command **deps, size_t *num_deps) {
  static const char fn[] = "crec_plan_get_deps";
  if (!plan) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'plan' is NULL");
  if (!deps || !num_deps)
    return crec__error(CREC_ERR_NULL_POINTER, fn, "argument '%s' is NULL", deps ? "num_deps" : "deps");
  *deps = NULL;
  *num_deps = 0;
  if (!crec__valid(plan->program, command.id, plan->num_commands))
    return crec__error(CREC_ERR_INVALID_HANDLE, fn,
                       "argument 'command': handle 0x%08x is not a command of the planned program", command.id);
  size_t c = crec__index(command.id);
  *deps = plan->deps + plan->dep_start[c];
  *num_deps = plan->dep_start[c + 1] - plan->dep_start[c];
  return CREC_OK;
}

uint64_t crec_plan_arena_bytes(const crec_plan *plan) { return plan ? plan->arena_bytes : 0; }

uint64_t crec_plan_host_arena_bytes(const crec_plan *plan) { return plan ? plan->host_arena_bytes : 0; }

static crec_status temp_of(const crec_plan *plan, const char *fn, crec_buffer buffer,
                           const crec__plan_temp **out) {
  *out = NULL; /* set on failure too: GCC's -O3 cannot see that crec__error() never returns CREC_OK */
  if (!plan) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'plan' is NULL");
  if (!crec__valid(plan->program, buffer.id, plan->num_buffers)) /* temps[] has no room for later ones */
    return crec__error(CREC_ERR_INVALID_HANDLE, fn,
                       "argument 'buffer': handle 0x%08x is not a buffer of the planned program", buffer.id);
  const crec__buffer *b = &plan->program->buffers[crec__index(buffer.id)];
  if (b->kind != CREC_BUFFER_TEMPORARY)
    return crec__error(CREC_ERR_INVALID_ARGUMENT, fn, "argument 'buffer': '%s' is a %s, not a temporary",
                       b->name, crec_buffer_kind_name(b->kind));
  *out = &plan->temps[crec__index(buffer.id)];
  return CREC_OK;
}

crec_status crec_plan_get_temporary(const crec_plan *plan, crec_buffer buffer, uint64_t *offset) {
  static const char fn[] = "crec_plan_get_temporary";
  if (!offset) return crec__error(CREC_ERR_NULL_POINTER, fn, "argument 'offset' is NULL");
  *offset = 0;
  const crec__plan_temp *t;
  crec_status s = temp_of(plan, fn, buffer, &t);
  if (s) return s;
  *offset = t->offset;
  return CREC_OK;
}

crec_status crec_plan_get_lifetime(const crec_plan *plan, crec_buffer buffer, size_t *first,
                                   size_t *last) {
  static const char fn[] = "crec_plan_get_lifetime";
  if (!first || !last)
    return crec__error(CREC_ERR_NULL_POINTER, fn, "argument '%s' is NULL", first ? "last" : "first");
  const crec__plan_temp *t;
  crec_status s = temp_of(plan, fn, buffer, &t);
  if (s) return s;
  *first = t->first;
  *last = t->last;
  return CREC_OK;
}
