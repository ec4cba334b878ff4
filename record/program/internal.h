/* Internal declarations shared by the crec library's sources (not installed). */
#ifndef CREC_RECORD_INTERNAL_H
#define CREC_RECORD_INTERNAL_H

#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "crec/crec.h"
#include "crec/debug.h"

/* ---- allocation (fault-injectable) ---- */
void *crec__malloc(size_t size);
void *crec__calloc(size_t count, size_t size);
void *crec__realloc(void *ptr, size_t size);
char *crec__strdup(const char *s);
void *crec__memdup(const void *data, size_t size);
void crec__free(void *ptr);
/* One zeroed allocation for `n` arrays of `sizes[i]` bytes each, each 16-byte
 * aligned at `offsets[i]` from the block's start: fewer allocations where many
 * arrays live and die together. Returns the block (crec__free() frees every
 * array with it), or NULL. */
void *crec__slab(size_t n, const size_t *sizes, size_t *offsets);
#define CREC__FREE(p) \
  do {                \
    crec__free(p);    \
    (p) = NULL;       \
  } while (0)
/* A bump allocator (alloc.c): blocks of 16-byte aligned memory carved from
 * chunks of 64 KiB or more, freed all at once (an exec's node parameter blocks:
 * few large allocations). A zeroed crec__bump is empty. */
typedef struct crec__bump {
  struct crec__chunk *chunks;
  size_t used, cap; /* of the newest chunk */
} crec__bump;
/* `size` bytes (rounded up to 16), or NULL when out of memory. */
void *crec__bump_alloc(crec__bump *b, size_t size);
/* Frees every block, leaving `b` empty. */
void crec__bump_free(crec__bump *b);

/* Returns true when the armed fault of `kind` fires on this event. */
bool crec__fault(crec_fault_kind kind);
/* Counts a created (+1) or destroyed (-1) public object. */
void crec__live(int delta);

/* Grows `*data` (elements of `elem` bytes, capacity `*cap`) to hold `need` elements. */
crec_status crec__reserve(void **data, size_t *cap, size_t need, size_t elem);
#define CREC__RESERVE(vec, capv, need) \
  crec__reserve((void **)&(vec), &(capv), (need), sizeof(*(vec)))

/* The `n`-byte little-endian unsigned integer at `b` (program files, fatbin and
 * ELF headers). */
static inline uint64_t crec__get_le(const unsigned char *b, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; i++) v |= (uint64_t)b[i] << (8 * i);
  return v;
}

/* ---- errors ---- */
/* Formats the thread's last error as "<func>: <message>" and returns `status`. */
crec_status crec__error(crec_status status, const char *func, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
crec_status crec__verror(crec_status status, const char *func, const char *fmt, va_list ap);
/* Adds `what` (a command's label) to the thread's last error on its way up:
 * "<func>: <message>" becomes "<func>: <what>: <message>", unless the message
 * names `what` already or is not `func`'s. Returns `status`; CREC_OK changes nothing. */
crec_status crec__annotate(crec_status status, const char *func, const char *what);
/* Prefixes the thread's last error with "<func>: " (for errors from a callee). */
crec_status crec__rethrow(crec_status status, const char *func);
/* Reports a failed allocation in `func`. */
crec_status crec__oom(const char *func);

/* ---- growable text ---- */
typedef struct crec__text {
  char *data;
  size_t len, cap;
  bool failed; /* an append ran out of memory */
} crec__text;
void crec__text_putn(crec__text *t, const char *s, size_t n);
void crec__text_puts(crec__text *t, const char *s);
void crec__text_printf(crec__text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends `s` as a JSON string literal (quotes included). */
void crec__text_json_string(crec__text *t, const char *s);
/* Appends `s` escaped for a DOT/HTML label inside double quotes. */
void crec__text_dot_string(crec__text *t, const char *s);

/* ---- handles ---- */
#define CREC__INDEX_BITS 21u
#define CREC__INDEX_MASK ((1u << CREC__INDEX_BITS) - 1u)
#define CREC__MAX_ITEMS CREC__INDEX_MASK
#define CREC__NONE UINT32_MAX

/* ---- name → index tables (buffers, scalars) ---- */
typedef struct crec__names {
  uint32_t *slots; /* item index + 1; 0 is empty */
  size_t cap;      /* power of two, or 0 */
  size_t count;
} crec__names;
typedef const char *(*crec__name_at)(const void *owner, uint32_t index);
/* Returns the index of `name`, or CREC__NONE. */
uint32_t crec__names_find(const crec__names *t, const char *name, const void *owner,
                          crec__name_at name_at);
/* Makes room for one more entry (may rehash); the only step that can fail. */
crec_status crec__names_reserve(crec__names *t, const void *owner, crec__name_at name_at);
/* Inserts `index` under `name`; crec__names_reserve() must have succeeded first. */
void crec__names_insert(crec__names *t, const char *name, uint32_t index);
void crec__names_free(crec__names *t);

/* ---- the program ---- */
typedef struct crec__buffer {
  char *name;
  crec_buffer_kind kind;
  crec_memory memory;
  uint64_t size;
  uint32_t alignment;
  bool dynamic_size;
  crec_element element;
  uint32_t arg_index; /* arguments: binding position */
  void *data;         /* constants */
} crec__buffer;

typedef struct crec__scalar {
  char *name;
  crec_type type;
  crec_scalar_kind kind;
  uint32_t binding_index; /* bound scalars */
  uint32_t buffer;        /* size scalars: buffer index */
  uint32_t host_fn;       /* derived scalars: computing function, CREC__NONE until added */
} crec__scalar;

typedef struct crec__host_fn {
  char *name;
  crec_host_fn fn;
  void *user;
  void (*user_free)(void *);
  crec_scalar *inputs;
  size_t num_inputs;
  crec_scalar *outputs;
  size_t num_outputs;
} crec__host_fn;

typedef struct crec__module {
  char *name;
  crec_image_format format;
  void *image; /* PTX gets a NUL appended */
  size_t size;
  uint64_t hash; /* FNV-1a of the image: identifies it across programs */
} crec__module;

typedef struct crec__kernel {
  uint32_t module;
  char *entry;
  uint32_t shared_bytes;
  uint32_t cluster[3];
  bool waits_first; /* its PTX was read once and waits before it touches memory (CREC_LAUNCH_EARLY_START) */
} crec__kernel;

typedef struct crec__region {
  crec_region_role role;
  uint32_t parent;          /* command index, CREC__NONE for the body */
  uint32_t index_in_parent;
  uint32_t *commands;       /* command indices in program order */
  size_t num_commands, cap_commands;
} crec__region;

typedef struct crec__arg {
  crec_arg arg;   /* for immediates larger than 8 bytes, arg.data points at owned bytes */
  uint32_t param_offset; /* offset in the kernel parameter block (natural alignment) */
} crec__arg;

/* ---- library commands (library.h) ---- */

/* A GEMM: the description with resolved ranges, lds and batch strides. */
typedef struct crec__gemm {
  crec_gemm desc;      /* desc.c.range.buffer.id == 0: C is D */
  uint64_t m, n, k;
  uint32_t workspace;  /* buffer index of its workspace temporary */
} crec__gemm;

/* An FFT: the description with resolved ranges and workspace size. */
typedef struct crec__fft {
  crec_fft desc;
  uint64_t elements;    /* per transform: length[0]·…·length[rank-1] (the real side's) */
  uint64_t complex_elements; /* per transform on the complex side */
  uint64_t input_bytes, output_bytes;
  uint64_t copy_offset; /* REAL_INVERSE: where in the workspace the input's copy goes (after cuFFT's area) */
  uint32_t workspace;   /* buffer index of its workspace temporary */
} crec__fft;

/* A Cholesky factorization: the description with resolved ranges and workspace size. */
typedef struct crec__chol {
  crec_cholesky desc;
  uint32_t workspace; /* buffer index of its workspace temporary */
} crec__chol;

/* A convolution: the description with resolved ranges, strides, dilations and groups. */
typedef struct crec__conv {
  crec_conv desc;
  uint64_t out_size[3]; /* the output's spatial sizes */
  uint64_t filter_copy; /* HWIO: where the filter's K-first copy goes in the workspace (after cuDNN's area) */
  uint32_t workspace;   /* buffer index of its workspace temporary */
} crec__conv;

/* A collective start (or a done, which points at its start). */
typedef struct crec__coll {
  crec_collective desc; /* groups and pairs point at the owned arrays below */
  int32_t *groups, *pairs;
  uint32_t comm;        /* communicator slot */
  uint32_t group_size;  /* ranks per group, resolved */
  uint32_t start;       /* done: command index of its start; CREC__NONE for a start */
  bool has_done;        /* async start: its done was added */
  bool degenerate;      /* moves nothing between ranks: memcpy (or memset) nodes, no NCCL */
  uint64_t send_count;  /* elements of send */
} crec__coll;

typedef struct crec__custom {
  char *target;
  crec_operand *operands; /* holes included */
  size_t num_operands;
  crec_kernel *kernels;
  size_t num_kernels;
  void *attributes;
  size_t attributes_size;
} crec__custom;

/* The built-in custom handler that writes a TMA descriptor (a CUtensorMap) for
 * its source operand's address into its destination operand
 * (record/runtime/tensor_map.c; the MLIR front end makes its commands from
 * nvgpu.tma.create.descriptor, lower/tma.c). Its attributes are this struct;
 * its one kernel stores the 128 bytes it takes by value
 * (crec_store_tensor_map(u64 dst, .align 64 b8[128])). */
#define CREC__TENSOR_MAP_TARGET "crec.tensor_map"
/* Its companion without work: operands (the tensor, the descriptor) that order a
 * launch using the descriptor against the tensor's other commands. */
#define CREC__TENSOR_MAP_USE_TARGET "crec.tensor_map_use"
#define CREC__TENSOR_MAP_VERSION 1u
typedef struct crec__tensor_map_attrs {
  uint32_t version;         /* CREC__TENSOR_MAP_VERSION */
  uint32_t data_type;       /* CUtensorMapDataType */
  uint32_t rank;            /* 1 to 5 */
  uint32_t interleave, swizzle, l2_promotion, oob_fill; /* CUDA's enums' values */
  uint32_t box[5];          /* the box, in elements, innermost dimension first */
  uint32_t element_strides[5];
  uint32_t reserved;        /* 0 */
  uint64_t dims[5];         /* the tensor, in elements, innermost first */
  uint64_t strides[4];      /* bytes between elements of dimensions 1 to rank - 1 */
} crec__tensor_map_attrs;
/* Writes "f32, rank 2, dims 32x32, strides 128 B, box 32x32, swizzle none, ..."
 * (innermost dimension first) into `buf`; false when `size` bytes are not a
 * version this build reads. */
bool crec__tensor_map_describe(const void *attributes, size_t size, char *buf, size_t buf_size);

typedef struct crec__hostcb {
  crec_host_callback_fn fn;       /* or: */
  crec_host_buffers_fn fn_buffers; /* given the operands' addresses */
  void *user;
  void (*user_free)(void *);
} crec__hostcb;

/* An imported graph as a command (crec_program_add_graph(), record/capture.c):
 * the program holds `ref`, the record layer's, and knows nothing of it but its
 * counts; its operands (one per argument of the import, in order) are `ops`. */
typedef struct crec__graphcmd {
  void *ref;                 /* the record layer's hold on the imported exec */
  void (*release)(void *);   /* drops `ref` when the command is freed */
  uint64_t nodes, relocated; /* the imported graph's nodes and those rewritten at replays, for dumps */
} crec__graphcmd;

typedef struct crec__comm_slot {
  char *name;
  int size;
} crec__comm_slot;

typedef struct crec__command {
  crec_command_kind kind;
  char *name;
  uint32_t region;
  uint32_t index_in_region;
  /* launch */
  uint32_t kernel;
  crec_dim grid[3], block[3], shared_bytes;
  crec__arg *args;
  size_t num_args;
  uint32_t param_bytes;
  uint32_t launch_flags; /* CREC_LAUNCH_* */
  /* memcpy / memset (and a degenerate collective, recorded as a copy or a zero fill) */
  crec_range dst, src;
  uint64_t bytes; /* CREC_WHOLE when it depends on a dynamic-size binding */
  uint32_t memset_value, memset_element_size;
  /* control flow */
  crec_range predicate;
  uint32_t *regions;
  size_t num_regions;
  int32_t *case_values; /* switch with a table: num_regions-1 values */
  uint64_t loop_limit;  /* while: most body iterations; 0 takes the exec's default, CREC_LOOP_UNLIMITED none */
  /* library commands: the ranges they touch (no holes), and the kind's own part */
  crec_operand *ops;
  size_t num_ops;
  crec__gemm *gemm;
  crec__fft *fft;
  crec__chol *chol;
  crec__conv *conv;
  crec__coll *coll;
  crec__custom *custom;
  crec__hostcb *hostcb;
  crec__graphcmd *graph;
} crec__command;

struct crec_program {
  uint32_t tag; /* high bits of every handle this program makes */
  atomic_int refs;
  crec__buffer *buffers;
  size_t num_buffers, cap_buffers;
  uint32_t *arguments; /* buffer index per binding position */
  size_t num_arguments, cap_arguments;
  crec__scalar *scalars;
  size_t num_scalars, cap_scalars;
  uint32_t *bound_scalars; /* scalar index per binding position */
  size_t num_bound_scalars, cap_bound_scalars;
  crec__host_fn *host_fns;
  size_t num_host_fns, cap_host_fns;
  crec__module *modules;
  size_t num_modules, cap_modules;
  crec__kernel *kernels;
  size_t num_kernels, cap_kernels;
  crec__region *regions;
  size_t num_regions, cap_regions;
  crec__command *commands;
  size_t num_commands, cap_commands;
  crec__comm_slot *comms;
  size_t num_comms, cap_comms;
  crec__names buffer_names, scalar_names;
  bool frozen; /* recorded or run (it has a runtime): builders refuse to change it (crec__frozen) */
  struct crec__warnings *warnings; /* what crec_program_validate() found last (warnings.c) */
  struct crec__runtime *runtime; /* per-context state of the runtime (runtime.c), made on first use */
  void (*runtime_free)(struct crec__runtime *);
};

static inline const char *crec__buffer_name_at(const void *owner, uint32_t i) {
  return ((const crec_program *)owner)->buffers[i].name;
}
static inline const char *crec__scalar_name_at(const void *owner, uint32_t i) {
  return ((const crec_program *)owner)->scalars[i].name;
}

static inline uint32_t crec__handle(const crec_program *p, size_t index) {
  return (p->tag << CREC__INDEX_BITS) | (uint32_t)index;
}
static inline size_t crec__index(uint32_t id) { return id & CREC__INDEX_MASK; }
/* Whether range `r` (valid) lies in page-locked host memory: a host argument or a host temporary. */
static inline bool crec__range_is_host(const crec_program *p, crec_range r) {
  return p->buffers[crec__index(r.buffer.id)].memory == CREC_MEMORY_HOST;
}
/* Returns true when `id` was made by `p` and indexes one of its `count` items. */
static inline bool crec__valid(const crec_program *p, uint32_t id, size_t count) {
  return id != 0 && (id >> CREC__INDEX_BITS) == p->tag && crec__index(id) < count;
}

/* Refuses a change to a program that was already recorded or run: execs and
 * the eager executor keep state derived from it. */
crec_status crec__frozen(const char *fn);

/* Keeps the program alive (execs hold a reference); crec__program_release drops it. */
void crec__program_retain(crec_program *p);
void crec__program_release(crec_program *p);

/* Effective byte range of `r` given the buffer's size (resolves CREC_WHOLE). */
uint64_t crec__range_end(const crec_program *p, crec_range r);
/* Natural alignment and size of an argument in a kernel parameter block. */
uint32_t crec__arg_size(const crec_program *p, const crec_arg *a);
/* Human-readable description of a buffer for messages: "buffer 'x'". */
const char *crec__buffer_name(const crec_program *p, crec_buffer b);

/* True for the library commands of library.h, whose accessed ranges are in `ops`. */
static inline bool crec__is_library(crec_command_kind k) {
  return k == CREC_COMMAND_GEMM || k == CREC_COMMAND_COLLECTIVE || k == CREC_COMMAND_CUSTOM ||
         k == CREC_COMMAND_HOST || k == CREC_COMMAND_FFT || k == CREC_COMMAND_CHOLESKY || k == CREC_COMMAND_CONV ||
         k == CREC_COMMAND_GRAPH;
}

/* Appends a graph command to `region` (the record layer's crec_program_add_graph()
 * checked what it knows of the import): `ops` are checked as a library command's,
 * then copied. On success the program owns `g->ref` (and calls `g->release` when
 * it frees the command); on failure the caller keeps it. */
crec_status crec__program_add_graph_command(crec_program *p, crec_region region, const char *name,
                                            const crec_operand *ops, size_t num_ops, const crec__graphcmd *g,
                                            const char *fn, crec_command *out);

/* Command builders' shared steps (commands.c). Checks program, region and out of a
 * builder (and that the program is not frozen). */
crec_status crec__check_common(crec_program *p, const char *fn, crec_region region, const void *out);
/* Validates a range (`what` names the argument) and resolves CREC_WHOLE for static buffers. */
crec_status crec__check_range(const crec_program *p, const char *fn, const char *what, crec_range *r);
/* Refuses a range of a constant buffer as a destination. */
crec_status crec__check_writable(const crec_program *p, const char *fn, const char *what, crec_range r);
/* Reserves room for one more command in region `r` plus `extra_regions` regions. */
crec_status crec__reserve_command(crec_program *p, uint32_t r, size_t extra_regions);
/* Appends a built command to region `r` (after crec__reserve_command()); returns its index. */
uint32_t crec__commit_command(crec_program *p, uint32_t r, crec__command *c);

/* Frees what a library command owns (library.c). */
void crec__library_free(crec__command *c);

/* Writes every command index in program order (depth first: a control-flow
 * command, then its regions' commands in order). `out` holds num_commands. */
void crec__program_order(const crec_program *p, uint32_t *out);

/* Checks that `id` is a handle of one of the program's `count` things of kind
 * `what` ("buffer", "region"); otherwise CREC_ERR_INVALID_HANDLE from `fn`,
 * naming the argument (`arg`, a printf format: "argument 'inputs[%zu]'"; NULL
 * for none), as Lua's luaL_check* functions do. */
crec_status crec__check_handle(const crec_program *p, uint32_t id, size_t count, const char *fn, const char *what,
                               const char *arg, ...);

/* Structs that grow (structs.c). crec__take_struct copies an input struct
 * `given` (NULL: none) over `defaults` (`size` bytes, struct_size first), as
 * much of it as the caller's struct_size says; crec__give_struct writes output
 * `value` into `out`, as much as out's struct_size holds, and sets out's
 * struct_size to what it wrote. Both refuse a struct_size below `oldest`, the
 * size of the struct's first version: "ARG: struct_size N is smaller than M
 * (use INIT)". */
crec_status crec__take_struct(void *defaults, size_t size, const void *given, size_t oldest, const char *fn,
                              const char *arg, const char *init);
crec_status crec__give_struct(void *out, const void *value, size_t size, size_t oldest, const char *fn,
                              const char *arg, const char *init);

/* Formats "command N ('name')" for messages into `buf`, and returns it. */
const char *crec__command_label(const crec_program *p, size_t ci, char *buf, size_t size);

/* FNV-1a, 64 bit. */
uint64_t crec__hash(const void *data, size_t size, uint64_t seed);

#endif
