/// \file program.h
/// The program: buffers, scalars, kernels and commands in nested regions, and
/// the builder API that makes one.
///
/// Life cycle of a program:
///  1. crec_program_create();
///  2. add argument, temporary and constant buffers, scalars (and host functions
///     that derive scalars from other scalars), module images and kernels;
///  3. add commands to regions: the program's body is crec_program_body(); a
///     control-flow command hands back the regions it owns;
///  4. record it (exec.h), run it eagerly, plan it (plan.h) or dump it (dump.h);
///  5. crec_program_destroy().
///
/// Once a program has been recorded or run eagerly it can no longer change: builder
/// calls then fail with CREC_ERR_INVALID_PROGRAM (execs keep state derived from it).
///
/// Every builder call validates all of its inputs before changing anything: on
/// failure it returns a specific status, sets crec_last_error(), sets its output
/// handle to the invalid handle (id 0), and leaves the program exactly as it was.
///
/// Handles are small typed structs. A handle encodes the program that made it,
/// so a handle from another program is refused (CREC_ERR_INVALID_HANDLE). The
/// handle with id 0 is never valid and means "none".
///
/// Threads: a program may be read (introspection, planning, recording) from
/// several threads at once, but must not be modified while anything else uses it.
#ifndef CREC_PROGRAM_H
#define CREC_PROGRAM_H

#include <stddef.h>
#include <stdint.h>

#include "crec/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/// An opaque program.
typedef struct crec_program crec_program;

/// A buffer of the program (argument, temporary or constant).
typedef struct crec_buffer { uint32_t id; } crec_buffer;
/// A typed scalar of the program.
typedef struct crec_scalar { uint32_t id; } crec_scalar;
/// A module image (PTX, cubin or fatbin).
typedef struct crec_module { uint32_t id; } crec_module;
/// A kernel: an entry point of a module.
typedef struct crec_kernel { uint32_t id; } crec_kernel;
/// A region: an ordered list of commands (the program body, or a body of a control-flow command).
typedef struct crec_region { uint32_t id; } crec_region;
/// A command in a region.
typedef struct crec_command { uint32_t id; } crec_command;

/// A range size meaning "from the offset to the end of the buffer".
#define CREC_WHOLE UINT64_MAX

/// Where a buffer lives.
typedef enum crec_buffer_kind {
  CREC_BUFFER_ARGUMENT = 0,  ///< given by the caller at each execution (a binding)
  CREC_BUFFER_TEMPORARY = 1, ///< owned by the execution, placed in one arena by lifetime
  CREC_BUFFER_CONSTANT = 2   ///< data copied into the program, uploaded once at record
} crec_buffer_kind;

/// The memory a buffer lives in: an argument's binding, or a temporary's arena.
typedef enum crec_memory {
  CREC_MEMORY_DEVICE = 0, ///< device memory of the recording device
  CREC_MEMORY_HOST = 1    ///< page-locked (pinned) host memory, mapped for the device: memcpy
                          ///< commands, host callbacks, and kernels (through unified addressing)
} crec_memory;

/// Scalar types.
typedef enum crec_type {
  CREC_TYPE_NONE = -1, ///< untyped bytes (immediates made by crec_arg_bytes())
  CREC_TYPE_I32 = 0,
  CREC_TYPE_I64 = 1,
  CREC_TYPE_F32 = 2,
  CREC_TYPE_F64 = 3
} crec_type;

/// A scalar value; which member is meaningful depends on the scalar's type.
typedef union crec_value {
  int32_t i32;
  int64_t i64;
  float f32;
  double f64;
  uint64_t u64;
  uint8_t bytes[8];
} crec_value;

/// Element types of buffers: what tools print and fill; crec itself moves bytes.
typedef enum crec_element {
  CREC_ELEMENT_BYTES = 0, ///< unknown or untyped
  CREC_ELEMENT_I8 = 1,
  CREC_ELEMENT_I16 = 2,
  CREC_ELEMENT_I32 = 3,
  CREC_ELEMENT_I64 = 4,
  CREC_ELEMENT_F16 = 5,
  CREC_ELEMENT_BF16 = 6,
  CREC_ELEMENT_F32 = 7,
  CREC_ELEMENT_F64 = 8
} crec_element;

/// Options of an argument buffer.
typedef struct crec_argument_options {
  size_t struct_size;    ///< sizeof(crec_argument_options)
  crec_memory memory;    ///< device (default) or pinned host
  uint32_t alignment;    ///< alignment each bound pointer must have; a power of two, default 16
  int dynamic_size;      ///< nonzero: the buffer's size is the bound size; `size` is then the minimum
  crec_element element;  ///< element type, for tools (default bytes)
} crec_argument_options;
#define CREC_ARGUMENT_OPTIONS_INIT \
  {sizeof(crec_argument_options), CREC_MEMORY_DEVICE, 16, 0, CREC_ELEMENT_BYTES}

/// Creates an empty program. `*out` is owned by the caller (crec_program_destroy()).
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_OUT_OF_MEMORY.
crec_status crec_program_create(crec_program **out);

/// Destroys a program. NULL is a no-op. Execs recorded from it keep it alive: it is
/// freed, and each host function's `user_free` called, when the last of them is destroyed.
/// Executions recorded from the program keep what they need and stay valid.
void crec_program_destroy(crec_program *program);

/// Returns the program's own body region.
crec_region crec_program_body(const crec_program *program);

/// Adds an argument buffer of `size` bytes, bound at each execution in the order
/// arguments were added. `options` may be NULL for defaults.
/// Errors: CREC_ERR_NULL_POINTER (program, name, out), CREC_ERR_DUPLICATE_NAME,
/// CREC_ERR_INVALID_ARGUMENT (size 0 for a static size, alignment not a power of two).
crec_status crec_program_add_argument(crec_program *program, const char *name, uint64_t size,
                                      const crec_argument_options *options, crec_buffer *out);

/// Adds a temporary buffer of `size` bytes, owned by each execution.
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_DUPLICATE_NAME, CREC_ERR_INVALID_ARGUMENT (size 0).
crec_status crec_program_add_temporary(crec_program *program, const char *name, uint64_t size,
                                       crec_buffer *out);

/// Adds a temporary buffer of `size` bytes in page-locked host memory, owned by each
/// execution. Host temporaries are placed by lifetime like device temporaries, in a
/// second arena of page-locked memory mapped for the device (crec_plan_host_arena_bytes()):
/// a recorded exec allocates it once, an eager run once per run (and then waits for its
/// stream before returning, so that the memory outlives the work). Host callbacks reach
/// it through their operands' addresses (crec_host_callback.fn_buffers); kernels and
/// copies reach it through unified addressing, at host-memory speed. Memset commands
/// and conditions, which need device memory, refuse it.
/// Errors: as crec_program_add_temporary().
crec_status crec_program_add_host_temporary(crec_program *program, const char *name, uint64_t size,
                                            crec_buffer *out);

/// Adds a constant buffer holding a copy of `size` bytes at `data`.
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_DUPLICATE_NAME, CREC_ERR_INVALID_ARGUMENT (size 0).
crec_status crec_program_add_constant(crec_program *program, const char *name, const void *data,
                                      uint64_t size, crec_buffer *out);

/// Adds a scalar bound at each execution, in the order bound scalars were added.
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_DUPLICATE_NAME, CREC_ERR_INVALID_ARGUMENT (type).
crec_status crec_program_add_scalar(crec_program *program, const char *name, crec_type type,
                                    crec_scalar *out);

/// Adds a scalar computed by a host function (crec_program_add_host_function())
/// from other scalars before each execution whose scalars changed.
/// Errors: as crec_program_add_scalar().
crec_status crec_program_add_derived_scalar(crec_program *program, const char *name,
                                            crec_type type, crec_scalar *out);

/// Adds an i64 scalar whose value is the bound size in bytes of argument `buffer`
/// (useful for arguments of dynamic size).
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_DUPLICATE_NAME, CREC_ERR_INVALID_HANDLE,
/// CREC_ERR_INVALID_ARGUMENT (not an argument buffer).
crec_status crec_program_add_size_scalar(crec_program *program, const char *name,
                                         crec_buffer buffer, crec_scalar *out);

/// A host function: reads `inputs` (in the order given when it was added), writes
/// `outputs`; returns 0 on success, anything else fails the execution with
/// CREC_ERR_HOST_FUNCTION.
typedef int (*crec_host_fn)(void *user, const crec_value *inputs, crec_value *outputs);

/// Adds a host function that computes the derived scalars `outputs` from `inputs`.
/// Inputs may be bound scalars, size scalars, or derived scalars computed by an
/// earlier host function; each derived scalar is computed by exactly one function.
/// Host functions run in the order they were added. On success the program owns
/// `user` and calls `user_free(user)` (if not NULL) when it is freed; on failure the
/// caller keeps it.
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_HANDLE, CREC_ERR_INVALID_ARGUMENT
/// (an output that is not derived or is already computed, an input not yet computed).
crec_status crec_program_add_host_function(crec_program *program, const char *name,
                                           crec_host_fn fn, void *user, void (*user_free)(void *),
                                           const crec_scalar *inputs, size_t num_inputs,
                                           const crec_scalar *outputs, size_t num_outputs);

/// Formats of module images.
typedef enum crec_image_format {
  CREC_IMAGE_PTX = 0,    ///< PTX text (need not be NUL-terminated)
  CREC_IMAGE_CUBIN = 1,  ///< an ELF cubin
  CREC_IMAGE_FATBIN = 2  ///< a fat binary
} crec_image_format;

/// Adds a module image, copying `size` bytes at `image`. The image is checked
/// for the format's signature (a `.entry` for PTX, ELF magic for cubin, the
/// fatbin magic) and loaded once per CUDA context at record.
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_ARGUMENT (empty image, bad format,
/// image that is not of that format).
crec_status crec_program_add_module(crec_program *program, const char *name,
                                    crec_image_format format, const void *image, size_t size,
                                    crec_module *out);

/// Options of a kernel.
typedef struct crec_kernel_options {
  size_t struct_size;     ///< sizeof(crec_kernel_options)
  uint32_t shared_bytes;  ///< most dynamic shared memory a launch uses; above 48 KiB the opt-in attribute is set
  uint32_t cluster[3];    ///< thread-block cluster dims; all 0 for none
} crec_kernel_options;
#define CREC_KERNEL_OPTIONS_INIT {sizeof(crec_kernel_options), 0, {0, 0, 0}}

/// Adds kernel `entry` of module `module`. `options` may be NULL for defaults.
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_HANDLE, CREC_ERR_INVALID_ARGUMENT
/// (cluster dims partly zero).
crec_status crec_program_add_kernel(crec_program *program, crec_module module, const char *entry,
                                    const crec_kernel_options *options, crec_kernel *out);

/// A byte range of a buffer. `size` may be CREC_WHOLE (to the end of the buffer).
typedef struct crec_range {
  crec_buffer buffer;
  uint64_t offset;
  uint64_t size;
} crec_range;

/// How a command uses a buffer range.
typedef enum crec_access {
  CREC_ACCESS_READ = 1,
  CREC_ACCESS_WRITE = 2,
  CREC_ACCESS_READ_WRITE = 3
} crec_access;

/// Kinds of kernel arguments.
typedef enum crec_arg_kind {
  CREC_ARG_BUFFER = 0,    ///< a device pointer: the bound base address plus the range's offset
  CREC_ARG_SCALAR = 1,    ///< a scalar's value, passed by value with its type's size
  CREC_ARG_IMMEDIATE = 2  ///< bytes fixed at build time, passed by value
} crec_arg_kind;

/// A kernel argument.
typedef struct crec_arg {
  crec_arg_kind kind;
  crec_access access;  ///< CREC_ARG_BUFFER: how the kernel uses the range
  crec_range range;    ///< CREC_ARG_BUFFER
  crec_scalar scalar;  ///< CREC_ARG_SCALAR
  crec_type type;      ///< CREC_ARG_IMMEDIATE: the value's type, for dumps (CREC_TYPE_NONE for bytes)
  uint32_t size;       ///< CREC_ARG_IMMEDIATE: 1 to 4096 bytes
  const void *data;    ///< CREC_ARG_IMMEDIATE: the bytes; NULL means the first `size` bytes of `value`
  crec_value value;    ///< CREC_ARG_IMMEDIATE with data == NULL (size at most 8)
} crec_arg;

/// Makes a buffer argument.
static inline crec_arg crec_arg_buffer(crec_range range, crec_access access) {
  crec_arg a = {CREC_ARG_BUFFER, access, range, {0}, CREC_TYPE_NONE, 0, NULL, {0}};
  return a;
}
/// Makes a scalar argument.
static inline crec_arg crec_arg_scalar(crec_scalar scalar) {
  crec_arg a = {CREC_ARG_SCALAR, CREC_ACCESS_READ, {{0}, 0, 0}, scalar, CREC_TYPE_NONE, 0, NULL, {0}};
  return a;
}
/// Makes a 4-byte integer immediate argument.
static inline crec_arg crec_arg_i32(int32_t v) {
  crec_arg a = {CREC_ARG_IMMEDIATE, CREC_ACCESS_READ, {{0}, 0, 0}, {0}, CREC_TYPE_I32, 4, NULL, {0}};
  a.value.i32 = v;
  return a;
}
/// Makes an 8-byte integer immediate argument.
static inline crec_arg crec_arg_i64(int64_t v) {
  crec_arg a = {CREC_ARG_IMMEDIATE, CREC_ACCESS_READ, {{0}, 0, 0}, {0}, CREC_TYPE_I64, 8, NULL, {0}};
  a.value.i64 = v;
  return a;
}
/// Makes a float immediate argument.
static inline crec_arg crec_arg_f32(float v) {
  crec_arg a = {CREC_ARG_IMMEDIATE, CREC_ACCESS_READ, {{0}, 0, 0}, {0}, CREC_TYPE_F32, 4, NULL, {0}};
  a.value.f32 = v;
  return a;
}
/// Makes a double immediate argument.
static inline crec_arg crec_arg_f64(double v) {
  crec_arg a = {CREC_ARG_IMMEDIATE, CREC_ACCESS_READ, {{0}, 0, 0}, {0}, CREC_TYPE_F64, 8, NULL, {0}};
  a.value.f64 = v;
  return a;
}
/// Makes an immediate argument of `size` bytes copied from `data` when the command is added.
static inline crec_arg crec_arg_bytes(const void *data, uint32_t size) {
  crec_arg a = {CREC_ARG_IMMEDIATE, CREC_ACCESS_READ, {{0}, 0, 0}, {0}, CREC_TYPE_NONE, size, data, {0}};
  return a;
}
/// Makes a range of `size` bytes at `offset` of `buffer`.
static inline crec_range crec_range_of(crec_buffer buffer, uint64_t offset, uint64_t size) {
  crec_range r = {buffer, offset, size};
  return r;
}
/// Makes the range covering all of `buffer`.
static inline crec_range crec_range_whole(crec_buffer buffer) {
  crec_range r = {buffer, 0, CREC_WHOLE};
  return r;
}

/// A launch dimension: a fixed value, or the value of an integer scalar.
typedef struct crec_dim {
  crec_scalar scalar;  ///< id 0: use `value`
  uint32_t value;
} crec_dim;

/// Makes a fixed dimension.
static inline crec_dim crec_dim_of(uint32_t value) {
  crec_dim d = {{0}, value};
  return d;
}
/// Makes a dimension taken from an integer scalar at each execution.
static inline crec_dim crec_dim_from(crec_scalar scalar) {
  crec_dim d = {scalar, 0};
  return d;
}

/// crec_launch.flags: the kernel may start while the kernels it depends on drain
/// (programmatic dependent launch, sm_90 and later). A promise about the kernel's code:
/// every thread block runs griddepcontrol.wait (cudaGridDependencySynchronize()) before
/// it reads or writes memory that an earlier command of the program writes or reads,
/// and before it exits. Record then makes the graph edges into this launch from other
/// launches programmatic (CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC), so that it launches
/// and runs its prologue as they finish, and makes every other edge a plain one; on a
/// device below sm_90 every edge is plain, and the wait returns at once. A kernel
/// without the wait must not have the flag: nothing orders it after its predecessors
/// then, and nothing after it waits for them either. Where the kernel's module is PTX,
/// crec_program_add_launch() reads its code and refuses the flag (CREC_ERR_INVALID_ARGUMENT,
/// naming the kernel) when no wait comes, in the kernel or a function it calls, before its
/// first access to global or generic memory; a cubin or fatbin is taken at its word.
/// crec_exec_stats() counts the programmatic edges; the program's dumps show the flag.
/// crec's own eager runs
/// (crec_run_eager) launch such kernels in order, without it.
#define CREC_LAUNCH_EARLY_START 1u

/// A kernel launch.
typedef struct crec_launch {
  size_t struct_size;     ///< sizeof(crec_launch)
  crec_kernel kernel;
  crec_dim grid[3];
  crec_dim block[3];
  crec_dim shared_bytes;  ///< dynamic shared memory bytes
  const crec_arg *args;   ///< copied when the command is added
  size_t num_args;
  uint32_t flags;         ///< CREC_LAUNCH_* bits (0: none)
} crec_launch;
#define CREC_LAUNCH_INIT                                                                          \
  {sizeof(crec_launch), {0}, {{{0}, 1}, {{0}, 1}, {{0}, 1}}, {{{0}, 1}, {{0}, 1}, {{0}, 1}},     \
   {{0}, 0}, NULL, 0, 0}

/// The most kernel parameter bytes a command may pass (a CUDA kernel node limit).
#define CREC_MAX_PARAM_BYTES 4096

/// Appends a kernel launch to `region`. `name` may be NULL (the kernel's entry is used).
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_HANDLE, CREC_ERR_OUT_OF_RANGE (a range
/// beyond its buffer), CREC_ERR_INVALID_ARGUMENT (zero dims, bad access or argument kind,
/// unknown launch flags, CREC_LAUNCH_EARLY_START on PTX that touches memory before its wait,
/// immediate size), CREC_ERR_TYPE_MISMATCH (a float scalar as a dimension),
/// CREC_ERR_TOO_LARGE (more than CREC_MAX_PARAM_BYTES of parameters, dynamic shared memory
/// above the kernel's).
crec_status crec_program_add_launch(crec_program *program, crec_region region, const char *name,
                                    const crec_launch *launch, crec_command *out);

/// Appends a copy of `src` to `dst` (both ranges the same size; either may be CREC_WHOLE,
/// taking the other's size, or the remaining size of its buffer when both are).
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_HANDLE, CREC_ERR_OUT_OF_RANGE,
/// CREC_ERR_INVALID_ARGUMENT (sizes differ, zero size, a constant destination).
crec_status crec_program_add_memcpy(crec_program *program, crec_region region, const char *name,
                                    crec_range dst, crec_range src, crec_command *out);

/// Appends a fill of `dst` with `value` repeated as `element_size` (1, 2 or 4) byte elements.
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_HANDLE, CREC_ERR_OUT_OF_RANGE,
/// CREC_ERR_INVALID_ARGUMENT (element size, value too wide, size not a multiple of the
/// element size, a constant or host destination), CREC_ERR_MISALIGNED (offset, or the
/// argument's alignment, not a multiple of the element size).
crec_status crec_program_add_memset(crec_program *program, crec_region region, const char *name,
                                    crec_range dst, uint32_t value, uint32_t element_size,
                                    crec_command *out);

/// Appends a barrier: every command before it in `region` completes before any after it starts.
/// (A barrier across the GPUs of a communicator is crec_program_add_comm_barrier() in library.h.)
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_HANDLE.
crec_status crec_program_add_barrier(crec_program *program, crec_region region, const char *name,
                                     crec_command *out);

/// Appends a loop `cond(); while (*pred) { body(); cond(); }`, where `*pred` is the
/// first byte of `predicate` (nonzero is true). Its two regions are returned in
/// `cond_out` and `body_out`.
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_HANDLE, CREC_ERR_OUT_OF_RANGE
/// (predicate range smaller than 1 byte), CREC_ERR_INVALID_ARGUMENT (host predicate).
crec_status crec_program_add_while(crec_program *program, crec_region region, const char *name,
                                   crec_range predicate, crec_command *out, crec_region *cond_out,
                                   crec_region *body_out);

/// No iteration limit for a loop, whatever crec_record_options.max_loop_iterations says.
#define CREC_LOOP_UNLIMITED UINT64_MAX

/// Sets the most times the body of while command `loop` may run in one execution.
/// A loop that would run its body once more stops instead: on the device, its
/// WHILE node exits and the exec records which loop tripped, so the next
/// crec_exec_replay() or crec_exec_check() returns CREC_ERR_LOOP_LIMIT naming it;
/// eagerly (crec_run_eager(), host-driven replays), the run itself stops with
/// that status. `max_iterations` 0 (the default) takes the exec's
/// crec_record_options.max_loop_iterations (under crec_run_eager(), which has no
/// exec: unlimited); CREC_LOOP_UNLIMITED means no limit.
/// A limited loop costs its set-condition kernel one more load and store per
/// iteration (tools/bench/crec_bench_control measures it).
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_HANDLE, CREC_ERR_INVALID_ARGUMENT
/// (not a while command), CREC_ERR_INVALID_PROGRAM (already recorded or run).
crec_status crec_program_set_loop_limit(crec_program *program, crec_command loop, uint64_t max_iterations);

/// Reads the limit crec_program_set_loop_limit() gave while command `loop` into
/// `*out` (0: none of its own; set to 0 on failure).
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_HANDLE, CREC_ERR_INVALID_ARGUMENT (not a while).
crec_status crec_program_get_loop_limit(const crec_program *program, crec_command loop, uint64_t *out);

/// Appends `if (*pred) then(); else else_();` with `*pred` the first byte of `predicate`.
/// Errors: as crec_program_add_while().
crec_status crec_program_add_if(crec_program *program, crec_region region, const char *name,
                                crec_range predicate, crec_command *out, crec_region *then_out,
                                crec_region *else_out);

/// Appends a switch on the 32-bit integer at the start of `index` over `num_branches`
/// branches, whose regions are written to `branches_out[0 .. num_branches-1]`.
/// Without `case_values` (NULL), branch i runs when the index is i for i < n-1, and the
/// last branch is the default. With `case_values` (n-1 distinct values), branch i runs
/// when the index equals case_values[i], and the last branch otherwise.
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_HANDLE, CREC_ERR_INVALID_ARGUMENT
/// (no branch, repeated case value, host index), CREC_ERR_OUT_OF_RANGE (index range
/// smaller than 4 bytes), CREC_ERR_MISALIGNED (index offset not a multiple of 4).
crec_status crec_program_add_switch(crec_program *program, crec_region region, const char *name,
                                    crec_range index, size_t num_branches,
                                    const int32_t *case_values, crec_command *out,
                                    crec_region *branches_out);

/// Checks that the program is complete: every derived scalar has a host function.
/// It also finds the program's warnings, which do not fail it (reads of temporary
/// bytes that nothing wrote before): crec_program_warning_count() and
/// crec_program_get_warning() in inspect.h read them.
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_PROGRAM, CREC_ERR_OUT_OF_MEMORY.
crec_status crec_program_validate(const crec_program *program);

#ifdef __cplusplus
}
#endif
#endif
