/// \file inspect.h
/// Reading a program back: its buffers, scalars, modules, kernels, regions,
/// commands and their arguments. Tools, tests and the lowering use this.
///
/// Every `*_count` function returns 0 for a NULL program. Every `crec_program_<thing>(p, i)`
/// returns the handle with id 0 when `i` is out of range. Strings and arrays in the
/// info structs are owned by the program and live as long as it is not modified or
/// destroyed.
#ifndef CREC_INSPECT_H
#define CREC_INSPECT_H

#include "crec/program.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Kinds of commands (their dump names are in crec_command_kind_name()).
typedef enum crec_command_kind {
  CREC_COMMAND_LAUNCH = 0,
  CREC_COMMAND_MEMCPY = 1,
  CREC_COMMAND_MEMSET = 2,
  CREC_COMMAND_BARRIER = 3,
  CREC_COMMAND_WHILE = 4,
  CREC_COMMAND_IF = 5,
  CREC_COMMAND_SWITCH = 6,
  CREC_COMMAND_GEMM = 7,
  CREC_COMMAND_COLLECTIVE = 8,
  CREC_COMMAND_CUSTOM = 9,
  CREC_COMMAND_HOST = 10,
  CREC_COMMAND_FFT = 11,
  CREC_COMMAND_CHOLESKY = 12,
  CREC_COMMAND_CONV = 13,
  CREC_COMMAND_GRAPH = 14  ///< an imported graph (crec_program_add_graph() in capture.h)
} crec_command_kind;

/// Roles of regions.
typedef enum crec_region_role {
  CREC_REGION_PROGRAM = 0, ///< the program's own body
  CREC_REGION_BODY = 1,    ///< while body
  CREC_REGION_COND = 2,    ///< while condition
  CREC_REGION_THEN = 3,
  CREC_REGION_ELSE = 4,
  CREC_REGION_BRANCH = 5   ///< a switch branch
} crec_region_role;

/// Kinds of scalars.
typedef enum crec_scalar_kind {
  CREC_SCALAR_BOUND = 0,   ///< given by the caller at each execution
  CREC_SCALAR_DERIVED = 1, ///< computed by a host function
  CREC_SCALAR_SIZE = 2     ///< the bound size of an argument buffer
} crec_scalar_kind;

/// Returns "launch", "memcpy", "memset", "barrier", "while", "if", "switch", "gemm",
/// "collective", "custom", "host", or "unknown".
const char *crec_command_kind_name(crec_command_kind kind);
/// Returns "program", "body", "cond", "then", "else", "branch", or "unknown".
const char *crec_region_role_name(crec_region_role role);
/// Returns "argument", "temporary", "constant", or "unknown".
const char *crec_buffer_kind_name(crec_buffer_kind kind);
/// Returns "i32", "i64", "f32", "f64", or "unknown".
const char *crec_type_name(crec_type type);
/// Returns "bytes", "i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64", or "unknown".
const char *crec_element_name(crec_element element);
/// Returns the size in bytes of an element type (1 for bytes, 0 when unknown).
size_t crec_element_size(crec_element element);
/// Returns the size in bytes of a scalar type (0 for an unknown type).
size_t crec_type_size(crec_type type);
/// Returns "ptx", "cubin", "fatbin", or "unknown".
const char *crec_image_format_name(crec_image_format format);
/// Says whether loading `image` (`size` bytes of `format`) on a device of compute
/// capability `major`.`minor` makes the CUDA driver compile PTX (a JIT at module load,
/// which its disk cache may serve): 1 for PTX; 0 for a cubin; for a fatbin, 0 when it
/// holds a cubin that chip runs (the same major version and a minor at most the
/// device's; an arch-specific cubin such as sm_90a only on that chip), else 1 (its
/// PTX is compiled, or the load fails). Also 1 when it cannot tell: a fatbin wrapper
/// (which points at its data) or a fatbin it cannot parse. -1 for a NULL image or an
/// unknown format. No CUDA call: it reads the image.
int crec_image_needs_jit(crec_image_format format, const void *image, size_t size, int major, int minor);

/// What a buffer is.
typedef struct crec_buffer_info {
  const char *name;
  crec_buffer_kind kind;
  crec_memory memory;      ///< arguments and temporaries (host temporaries); constants are device memory
  uint64_t size;           ///< bytes (the minimum, for a dynamic-size argument)
  uint32_t alignment;      ///< required alignment of the bound pointer (arguments)
  int dynamic_size;        ///< nonzero for a dynamic-size argument
  crec_element element;    ///< element type (arguments; bytes otherwise)
  size_t argument_index;   ///< position among the arguments (the binding index), arguments only
  const void *data;        ///< constants only: the data
} crec_buffer_info;

/// Returns the number of buffers.
size_t crec_program_buffer_count(const crec_program *program);
/// Returns buffer `index` (in the order added).
crec_buffer crec_program_buffer(const crec_program *program, size_t index);
/// Returns the number of argument buffers (the number of buffer bindings).
size_t crec_program_argument_count(const crec_program *program);
/// Returns the argument buffer bound at binding `index`.
crec_buffer crec_program_argument(const crec_program *program, size_t index);
/// Describes `buffer`. Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_HANDLE.
crec_status crec_buffer_get_info(const crec_program *program, crec_buffer buffer,
                                 crec_buffer_info *out);
/// Finds a buffer by name. Errors: CREC_ERR_NULL_POINTER, CREC_ERR_NOT_FOUND.
crec_status crec_program_find_buffer(const crec_program *program, const char *name,
                                     crec_buffer *out);

/// What a scalar is.
typedef struct crec_scalar_info {
  const char *name;
  crec_type type;
  crec_scalar_kind kind;
  size_t binding_index;  ///< bound scalars: position among the bound scalars
  crec_buffer buffer;    ///< size scalars: the argument measured
} crec_scalar_info;

/// Returns the number of scalars of every kind.
size_t crec_program_scalar_count(const crec_program *program);
/// Returns scalar `index` (in the order added).
crec_scalar crec_program_scalar(const crec_program *program, size_t index);
/// Returns the number of bound scalars (the number of scalar bindings).
size_t crec_program_bound_scalar_count(const crec_program *program);
/// Returns the bound scalar at binding `index`.
crec_scalar crec_program_bound_scalar(const crec_program *program, size_t index);
/// Describes `scalar`. Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_HANDLE.
crec_status crec_scalar_get_info(const crec_program *program, crec_scalar scalar,
                                 crec_scalar_info *out);
/// Finds a scalar by name. Errors: CREC_ERR_NULL_POINTER, CREC_ERR_NOT_FOUND.
crec_status crec_program_find_scalar(const crec_program *program, const char *name,
                                     crec_scalar *out);

/// What a host function is.
typedef struct crec_host_function_info {
  const char *name;
  crec_host_fn fn;
  void *user;
  const crec_scalar *inputs;
  size_t num_inputs;
  const crec_scalar *outputs;
  size_t num_outputs;
} crec_host_function_info;

/// Returns the number of host functions.
size_t crec_program_host_function_count(const crec_program *program);
/// Describes host function `index`. Errors: CREC_ERR_NULL_POINTER, CREC_ERR_OUT_OF_RANGE.
crec_status crec_program_get_host_function(const crec_program *program, size_t index,
                                       crec_host_function_info *out);

/// What a module is.
typedef struct crec_module_info {
  const char *name;
  crec_image_format format;
  const void *image;  ///< for PTX, NUL-terminated
  size_t size;        ///< bytes, without the added NUL
} crec_module_info;

/// Returns the number of modules.
size_t crec_program_module_count(const crec_program *program);
/// Returns module `index`.
crec_module crec_program_module(const crec_program *program, size_t index);
/// Describes `module`. Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_HANDLE.
crec_status crec_module_get_info(const crec_program *program, crec_module module,
                                 crec_module_info *out);

/// What a kernel is.
typedef struct crec_kernel_info {
  crec_module module;
  const char *entry;
  uint32_t shared_bytes;
  uint32_t cluster[3];
} crec_kernel_info;

/// Returns the number of kernels.
size_t crec_program_kernel_count(const crec_program *program);
/// Returns kernel `index`.
crec_kernel crec_program_kernel(const crec_program *program, size_t index);
/// Describes `kernel`. Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_HANDLE.
crec_status crec_kernel_get_info(const crec_program *program, crec_kernel kernel,
                                 crec_kernel_info *out);

/// What a region is.
typedef struct crec_region_info {
  crec_region_role role;
  crec_command parent;    ///< the control-flow command owning it; id 0 for the program body
  size_t index_in_parent; ///< which of the parent's regions (0 for the body)
  size_t num_commands;
} crec_region_info;

/// Returns the number of regions (the program body included).
size_t crec_program_region_count(const crec_program *program);
/// Returns region `index` (0 is the program body).
crec_region crec_program_region(const crec_program *program, size_t index);
/// Describes `region`. Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_HANDLE.
crec_status crec_region_get_info(const crec_program *program, crec_region region,
                                 crec_region_info *out);
/// Returns command `index` of `region` in program order (id 0 when out of range).
crec_command crec_region_command(const crec_program *program, crec_region region, size_t index);

/// What a command is. Fields not used by its kind are zero. The info grows, NCCL's way:
/// it starts with its struct_size, which the caller sets (CREC_COMMAND_INFO_INIT does).
/// A caller built against an older header passes its own, smaller struct_size: it gets the
/// fields that size holds, the bytes after them are not written, and struct_size is set to
/// the bytes written. The oldest size taken is offsetof(crec_command_info, num_operands)
/// (the fields of the first version: kind through case_values).
typedef struct crec_command_info {
  size_t struct_size;        ///< sizeof(crec_command_info); set by the caller
  crec_command_kind kind;
  const char *name;
  crec_region region;        ///< the region it is in
  size_t index_in_region;
  /* launch */
  crec_kernel kernel;
  crec_dim grid[3];
  crec_dim block[3];
  crec_dim shared_bytes;
  size_t num_args;
  /* memcpy (dst, src) and memset (dst) */
  crec_range dst;
  crec_range src;
  uint64_t bytes;            ///< memcpy and memset: bytes written (resolved from CREC_WHOLE)
  uint32_t memset_value;
  uint32_t memset_element_size;
  /* while, if (predicate) and switch (index) */
  crec_range predicate;
  size_t num_regions;        ///< while: 2 (cond, body); if: 2 (then, else); switch: branches
  const int32_t *case_values; ///< switch with a case table: num_regions-1 values, else NULL
  /* library commands (library.h; their details through crec_command_get_gemm() and co.) */
  size_t num_operands;       ///< gemm, collective, custom, host: buffer ranges it touches (no holes);
                             ///< a barrier across ranks: 1, its scratch
  crec_command start;        ///< collective done: the async start it finishes
  crec_buffer workspace;     ///< gemm, fft, cholesky, conv: its workspace temporary; a barrier across ranks: its scratch
  uint32_t launch_flags;     ///< launch: its CREC_LAUNCH_* flags (crec_launch.flags)
} crec_command_info;
#define CREC_COMMAND_INFO_INIT                                                                       \
  {sizeof(crec_command_info), CREC_COMMAND_LAUNCH, NULL, {0}, 0, {0}, {{{0}, 0}, {{0}, 0}, {{0}, 0}}, \
   {{{0}, 0}, {{0}, 0}, {{0}, 0}}, {{0}, 0}, 0, {{0}, 0, 0}, {{0}, 0, 0}, 0, 0, 0, {{0}, 0, 0}, 0,   \
   NULL, 0, {0}, {0}, 0}

/// Returns the number of commands in all regions.
size_t crec_program_command_count(const crec_program *program);
/// Returns command `index` in creation order.
crec_command crec_program_command(const crec_program *program, size_t index);
/// Describes `command` into `*out`, the caller's, whose struct_size must be set
/// (CREC_COMMAND_INFO_INIT). Its name and case values are the program's (see the top of
/// this file). Errors: CREC_ERR_NULL_POINTER; CREC_ERR_INVALID_ARGUMENT when struct_size is
/// below the oldest size ("argument 'out': struct_size 0 is smaller than N (use
/// CREC_COMMAND_INFO_INIT)"), `*out` left as it was; CREC_ERR_INVALID_HANDLE, the fields
/// `*out` holds zeroed.
crec_status crec_command_get_info(const crec_program *program, crec_command command,
                                  crec_command_info *out);
/// Reads operand `index` of a library command (gemm, collective, custom, host) or of
/// a barrier across ranks (its scratch): a range it touches and how (custom holes
/// are not listed).
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_HANDLE, CREC_ERR_INVALID_ARGUMENT (not a
/// library command), CREC_ERR_OUT_OF_RANGE.
crec_status crec_command_get_operand(const crec_program *program, crec_command command, size_t index,
                                     crec_range *range, crec_access *access);
/// Reads argument `index` of a launch. Errors: CREC_ERR_NULL_POINTER,
/// CREC_ERR_INVALID_HANDLE, CREC_ERR_INVALID_ARGUMENT (not a launch), CREC_ERR_OUT_OF_RANGE.
crec_status crec_command_get_arg(const crec_program *program, crec_command command, size_t index,
                                 crec_arg *out);
/// Returns region `index` owned by a control-flow command (id 0 when none).
crec_region crec_command_region(const crec_program *program, crec_command command, size_t index);

/// Returns the position of a handle in its table (creation order); SIZE_MAX for id 0.
/// The position is the id used in dumps.
size_t crec_handle_index(uint32_t id);

/// A warning: something a program does that is allowed but probably a mistake.
/// There is one kind so far: a command reads, or accumulates into, bytes of a
/// temporary buffer that no command before it wrote, so it sees undefined bytes
/// (the arena is shared and never cleared), and replays then differ from eager
/// runs. Arguments (the caller's) and constants (they hold their data) are never
/// flagged. A write counts when it comes earlier in program order, in any region
/// of an earlier control-flow command too, or, for a read that an iteration of a
/// loop may skip, later in that loop; a range written in part is not flagged.
typedef struct crec_warning_info {
  crec_command command; ///< the command that reads
  crec_range range;     ///< the bytes it reads (the command's range, size resolved)
  crec_access access;   ///< CREC_ACCESS_READ, or CREC_ACCESS_READ_WRITE when it accumulates into them
  const char *message;  ///< one line naming the command, the buffer and the fix, e.g. "command 2 ('mm')
                        ///< accumulates into 'acc', which nothing wrote before: its bytes are undefined
                        ///< (zero it first with crec_program_add_memset)"
} crec_warning_info;

/// Returns the number of warnings crec_program_validate() found for `program` as it is
/// now: 0 for NULL, and 0 when the program was changed after it was last validated
/// (recording, planning, dumping, running it eagerly and the MLIR front end all validate).
size_t crec_program_warning_count(const crec_program *program);
/// Describes warning `index` (warnings are in program order). The message is owned by
/// the program and lives until it is destroyed, or changed and validated again.
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_OUT_OF_RANGE (`index` >= the count).
crec_status crec_program_get_warning(const crec_program *program, size_t index, crec_warning_info *out);

#ifdef __cplusplus
}
#endif
#endif
