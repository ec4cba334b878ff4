/* The GPU half of the tool (gpu.c): needs crec_record, crec_exec_replay and
 * crec_run_eager from replay/, so it is linked only into the crec executable. */
#ifndef CREC_TOOL_GPU_H
#define CREC_TOOL_GPU_H

#include "tool.h"

/* `crec run` on device 0: records once with jobs[0], replays --iters times taking
 * the `count` jobs' sizes in turn, prints the outputs; with --check compares every
 * execution with the eager executor. */
int crec_tool_device_run(const crec_tool_job *jobs, size_t count, FILE *out, FILE *err, crec_tool_diag *d);
/* `crec bench` on device 0: eager, replay unchanged, replay rotated. */
int crec_tool_device_bench(const crec_tool_job *job, FILE *out, FILE *err, crec_tool_diag *d);
/* `crec profile` on device 0: records with the job's bindings, then profiles
 * --iters replays with crec_exec_profile(), giving the profile in `*out`. */
int crec_tool_device_profile(const crec_tool_job *job, crec_profile **out, crec_tool_diag *d);
/* Records the program and writes the CUDA driver's DOT of the graph to `path`. */
int crec_tool_device_cuda_dot(const crec_tool_job *job, const char *path, crec_tool_diag *d);

#endif
