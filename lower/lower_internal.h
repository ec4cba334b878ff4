/* Internal declarations of the MLIR front end (lower/). One lowering is one
 * `lw` state: the MLIR context and module, the program being built, and the
 * tables that map MLIR values to buffers, byte ranges and host scalars. */
#ifndef CREC_LOWER_INTERNAL_H
#define CREC_LOWER_INTERNAL_H

#include <mlir-c/AffineMap.h>
#include <mlir-c/BuiltinAttributes.h>
#include <mlir-c/BuiltinTypes.h>
#include <mlir-c/Diagnostics.h>
#include <mlir-c/IR.h>

#include "internal.h"

/* The most memref rank the front end follows. */
#define LW_MAX_RANK 8
/* "none" for table indices. */
#define LW_NONE UINT32_MAX

/* ---- maps: byte-string keys to uint32 values (open addressing) ---- */
typedef struct lw_map_slot {
  char *key; /* owned; NULL is empty */
  size_t len;
  uint64_t hash;
  uint32_t value;
} lw_map_slot;
typedef struct lw_map {
  lw_map_slot *slots;
  size_t cap, count;
} lw_map;
/* Returns the value stored under the key, or LW_NONE. */
uint32_t crec__lw_map_get(const lw_map *m, const void *key, size_t len);
/* Stores `value` under the key (replacing). Errors: CREC_ERR_OUT_OF_MEMORY. */
crec_status crec__lw_map_put(lw_map *m, const void *key, size_t len, uint32_t value);
void crec__lw_map_free(lw_map *m);

/* ---- host scalar expressions (host.c) ---- */
typedef enum lw_node_kind {
  LW_NODE_CONST = 0, /* an integer or float constant */
  LW_NODE_INPUT = 1, /* a bound or size scalar of the program */
  LW_NODE_OP = 2     /* an arith/index op (or a synthetic one) over other nodes */
} lw_node_kind;

typedef struct lw_node {
  lw_node_kind kind;
  char *type;       /* MLIR type as printed: "index", "i32", "f32", ... */
  uint32_t bits;    /* integer width (64 for index); float width */
  bool is_float, is_index;
  int64_t ival;     /* integer constants, sign-extended from `bits` */
  double fval;      /* float constants (for labels only) */
  char *fbits;      /* float constants: the bits as a hex literal, for exact emission */
  crec_scalar input;
  crec_type input_type;
  char *opname;     /* LW_NODE_OP: "arith.ceildivsi" */
  char *attrs;      /* LW_NODE_OP: "{predicate = 2 : i64}" or "" */
  uint32_t operands[3];
  uint32_t num_operands;
  char *label;      /* readable expression for scalar names, NULL when too long */
  crec_scalar derived; /* id 0 until the node is used by a command */
} lw_node;

/* ---- memref views of buffers (memref.c) ---- */
/* A size, stride: a constant or a host node. */
typedef struct lw_sval {
  bool is_const;
  int64_t value;
  uint32_t node;
} lw_sval;

typedef struct lw_memref {
  uint32_t buffer;   /* index into lw.bufs */
  uint64_t base;     /* byte offset of the aligned pointer within the buffer */
  int64_t offset;    /* layout offset, in elements */
  uint32_t rank;
  lw_sval sizes[LW_MAX_RANK];
  lw_sval strides[LW_MAX_RANK];
  uint32_t esz;      /* element bytes */
  bool dense;        /* row-major and gap-free, whatever its sizes are */
} lw_memref;

/* What the front end knows about one buffer of the program. */
typedef struct lw_buf {
  crec_buffer handle;
  crec_buffer_kind kind;
  bool dynamic;         /* dynamic-size argument */
  uint64_t size;        /* bytes (static buffers) */
  bool host;            /* pinned host argument */
  MlirOperation dealloc; /* the memref.dealloc / gpu.dealloc that ended it, or null */
  crec_scalar size_scalar; /* dynamic arguments: "<name>.bytes", made on first use */
  char *name;
} lw_buf;

/* ---- device loads: predicates and switch indices (scf.c) ---- */
typedef enum lw_load_form {
  LW_LOAD_RAW = 0,   /* the loaded value itself */
  LW_LOAD_NE0 = 1,   /* arith.cmpi ne, load, 0 */
  LW_LOAD_TRUNC = 2, /* arith.trunci load to i1 */
  LW_LOAD_INDEX = 3  /* arith.index_cast(ui) load */
} lw_load_form;

typedef struct lw_load {
  MlirOperation load_op;
  uint32_t buffer;
  uint64_t offset;   /* byte offset of the loaded element */
  uint32_t esz;
  uint32_t bits;     /* element bit width (64 for index) */
  bool is_float, is_index;
  lw_load_form form;
  uint32_t root;     /* the raw load this value derives from (itself for a raw load) */
  uint32_t seq;      /* raw loads: commands made before the load */
} lw_load;

/* A write of a command, for the predicate hazard check. */
typedef struct lw_write {
  uint32_t seq;      /* the command's number in creation order */
  uint32_t buffer;
  uint64_t begin, end; /* end UINT64_MAX: to the end of the buffer */
  MlirOperation op;
  bool zero;         /* a fill with zero bytes (linalg.fill, gpu.memset): what a linalg convolution may follow */
} lw_write;

/* A launch argument whose read the front end assumed (a kernel whose accesses it
 * cannot see), so a read of undefined bytes through it is not reported. */
typedef struct lw_unsure {
  uint32_t command; /* command index */
  uint32_t arg;     /* argument index */
} lw_unsure;

/* ---- kernels (kernels.c) ---- */
typedef enum lw_source {
  LW_SRC_BODY = 0,   /* gpu.module with gpu.func bodies, compiled here */
  LW_SRC_BINARY = 1, /* gpu.binary */
  LW_SRC_IMAGE = 2   /* gpu.module {crec.image = "path"} */
} lw_source;

typedef enum lw_abi {
  LW_ABI_UNKNOWN = 0,
  LW_ABI_BARE = 1,       /* MLIR bare pointers: the aligned pointer; the kernel adds the layout offset */
  LW_ABI_DESCRIPTOR = 2, /* MLIR expanded descriptor: allocated, aligned, offset, sizes, strides */
  LW_ABI_C = 3           /* C: a pointer to element 0 */
} lw_abi;

typedef struct lw_module {
  char *sym;
  MlirOperation op;
  lw_source source;
  lw_abi abi;             /* BODY: the calling convention compiled; IMAGE: C; BINARY: crec.abi or unknown */
  crec_image_format format;
  void *image;            /* owned */
  size_t size;
  bool waits;             /* BODY: its kernels wait at entry (griddepcontrol.wait), so their launches start early */
  crec_module handle;
} lw_module;

typedef struct lw_kernel {
  char *key;              /* "module::kernel" plus the cluster dims */
  uint32_t module;
  char *entry;            /* the symbol in the image */
  MlirOperation func;     /* gpu.func / func.func declaration; null for gpu.binary */
  uint32_t num_args;      /* MLIR arguments (-1 unknown for binaries: LW_NONE) */
  crec_access *access;    /* per MLIR argument (memrefs) */
  bool *read_known;       /* per MLIR argument: a read is seen in the body or declared, not assumed */
  bool params_known;
  uint32_t num_params;
  uint32_t *param_sizes;  /* bytes of each parameter in the image */
  uint32_t shared_bytes;  /* most constant dynamic shared memory of its launches */
  uint32_t cluster[3];
  crec_kernel handle;
} lw_kernel;

/* ---- library commands (library.c) ---- */
/* A communicator slot, made where an op first names it. */
typedef struct lw_comm {
  char *name;
  int size;
  MlirOperation first;      /* the op that made it (for messages) */
  crec_comm_slot handle;
} lw_comm;

/* An async collective start, by its async_id. */
typedef struct lw_async {
  char *id;
  MlirOperation start_op;
  crec_command start;
  bool done;
} lw_async;

/* ---- value table entries ---- */
typedef enum lw_vkind { LW_V_NODE = 1, LW_V_MEMREF = 2, LW_V_LOAD = 3, LW_V_TOKEN = 4 } lw_vkind;
#define LW_V_PACK(kind, index) (((uint32_t)(kind) << 28) | (uint32_t)(index))
#define LW_V_KIND(v) ((lw_vkind)((v) >> 28))
#define LW_V_INDEX(v) ((v) & 0x0fffffffu)

/* ---- the lowering state ---- */
/* A TMA descriptor the entry made (tma.c): the buffer it is in, and its tensor. */
typedef struct lw_tensor_map {
  uint32_t buffer;
  crec_range tensor;
} lw_tensor_map;

typedef struct lw {
  const char *fn;           /* the public function, prefix of errors */
  crec_program *p;
  char *filename;           /* used for locations of the parsed text */
  char *base_dir;           /* where relative crec.image paths are found */
  char chip[32];
  crec_diagnostic_fn diagnostic;
  void *diagnostic_user;
  const char *entry_name;

  MlirContext ctx;
  MlirModule module;
  MlirOperation entry;
  char *first_error;        /* first MLIR error diagnostic: "file:L:C: message" */
  bool internal;            /* compiling generated code: do not forward diagnostics */
  bool recording;           /* the persistent cache keeps what is emitted (diag_log) */
  bool cubin;               /* crec_lower_options.cubin: compiled modules become cubins (cubin.c) */
  bool early_start;         /* crec_lower_options.early_start: compiled kernels wait at entry (compile.c) */
  crec__text diag_log;      /* severity, location, message: NUL-terminated each */

  lw_map values;            /* MlirValue -> LW_V_PACK(kind, index) */
  lw_node *nodes;
  size_t num_nodes, cap_nodes;
  lw_map node_keys;         /* CSE of host nodes */
  lw_map scalar_names;      /* derived scalar names in use */
  lw_memref *memrefs;
  size_t num_memrefs, cap_memrefs;
  lw_buf *bufs;
  size_t num_bufs, cap_bufs;
  lw_map globals;           /* memref.global symbol -> buffer index */
  lw_map host_allocs;       /* memref.alloc ops host code touches (segment.c): host temporaries */
  lw_map arg_staging;       /* argument buffer index -> index of its host temporary "<arg>.host" in `bufs`
                               (segment.c: host code on an entry argument works on a copy) */
  lw_load *loads;
  size_t num_loads, cap_loads;
  lw_write *writes;
  size_t num_writes, cap_writes;
  uint32_t seq;             /* commands made so far */
  MlirOperation *cmd_ops;   /* per program command: the op that made it (for warnings' locations) */
  size_t num_cmd_ops, cap_cmd_ops;
  lw_unsure *unsure;        /* launch arguments whose read is assumed */
  size_t num_unsure, cap_unsure;
  uint32_t num_temps;
  uint32_t num_fors;        /* scf.for loops made into while commands */
  crec_kernel for_step;     /* their counter kernel (scf.c), compiled on first use */
  uint64_t unroll;          /* copies of the body being lowered that unrolled scf.for loops make (0: none) */
  bool has_tma_store;       /* tma_store was added (tma.c) */
  lw_tensor_map *tmaps;     /* per TMA descriptor: its temporary and its tensor (tma.c) */
  size_t num_tmaps, cap_tmaps;
  crec_kernel tma_store;    /* the kernel that stores TMA descriptors, added with the first one */

  lw_module *modules;
  size_t num_modules, cap_modules;
  lw_map module_keys;
  lw_kernel *kernels;
  size_t num_kernels, cap_kernels;
  lw_map kernel_keys;

  lw_comm *comms;
  size_t num_comms, cap_comms;
  lw_map comm_keys;         /* communicator name -> index into comms */
  lw_async *asyncs;
  size_t num_asyncs, cap_asyncs;
  lw_map async_keys;        /* async_id -> index into asyncs */
} lw;

/* PTX of a compiled module into a cubin for `chip` through nvJitLink (cubin.c);
 * `*cubin` is the caller's (crec__free). Errors name `at`. */
crec_status crec__lw_ptx_to_cubin(lw *L, MlirOperation at, const char *chip, const char *ptx, size_t size,
                                  char **cubin, size_t *cubin_size);

/* The persistent cache of lowered programs (cache.c). */
/* Whether this text may be cached (it reads no crec.image file) and the cache is on. */
bool crec__lw_disk_cacheable(const char *text, size_t length);
/* The entry's key: a hash of the text and of what the lowering depends on (32 hex digits). */
void crec__lw_disk_key(const lw *L, const char *text, size_t length, char key[33]);
/* The program cached under `key` into *out, its diagnostics replayed through
 * L's callback; false (counted as a miss) when there is none or it is bad. */
bool crec__lw_disk_get(const lw *L, const char *key, crec_program **out);
/* Writes `p` and the diagnostics its lowering emitted under `key` (a program
 * that cannot be written to a file is counted and skipped). */
void crec__lw_disk_put(const char *key, const crec_program *p, const crec__text *diags);
/* hits, misses, writes, evictions, rejected, uncacheable */
void crec__lw_disk_stats(uint64_t out[6]);

/* ---- assert.c ---- */
/* Rewrites each cf.assert in `gpu_module` (crec's copy of one, before MLIR's
 * pipeline) into a call of the PTX system call __assertfail when its condition
 * is false, as CUDA's assert() compiles; failures are reported at `at`. */
crec_status crec__lw_lower_asserts(lw *L, MlirOperation gpu_module, MlirOperation at);

/* ---- tma.c ---- */
/* Whether `t` is an !nvgpu.tensormap.descriptor (a launch passes it as one pointer). */
bool crec__lw_is_tensormap(MlirType t);
/* nvgpu.tma.create.descriptor in the entry: a temporary of 128 bytes, and a
 * command of the built-in "crec.tensor_map" handler that writes the descriptor
 * there for the tensor's address at record and replay; the op's result is that
 * temporary. */
crec_status crec__lw_tma_descriptor(lw *L, MlirOperation op, crec_region region);
/* In crec's copy of a gpu.module: kernel parameters that are TMA descriptors become
 * the pointers they are lowered to, their uses reading them through a cast, and
 * each kernel that takes one first acquires it through the tensor-map proxy
 * (crec rewrites a descriptor in place when its tensor moves; PTX 8.3). */
crec_status crec__lw_tensormap_params(lw *L, MlirOperation gpu_module, MlirOperation at);
/* Whether a kernel of `gpu_module` takes a TMA descriptor. */
bool crec__lw_takes_tensormap(MlirOperation gpu_module);
/* Around a launch that takes the descriptor in `desc` (a range of its temporary): a
 * command of the built-in "crec.tensor_map_use" handler, without work, whose
 * operands (the descriptor's tensor and the descriptor) order the launch against
 * the tensor's other commands and keep the tensor's bytes until it is done. */
crec_status crec__lw_tensormap_use(lw *L, MlirOperation op, crec_region region, crec_range desc);

/* ---- diag.c: locations and errors ---- */
/* Writes "file:line:col" of `op` (of its nearest located ancestor when its own is unknown). */
void crec__lw_op_location(const lw *L, MlirOperation op, char *buf, size_t size);
/* Where a location says it is, as a device assertion reports it: the first
 * "file":line of the printed location (a call-site chain prints its innermost
 * callee first; "-" and a location without one give the file being lowered,
 * line 0), and the name of the first named location ("name"(...)), else "". */
void crec__lw_loc_place(const lw *L, MlirLocation loc, char *file, size_t file_size, unsigned long *line,
                        char *name, size_t name_size);
/* Fails with "<loc>: '<op>': <message>" (op may be null: then the module's location). */
crec_status crec__lw_fail(lw *L, MlirOperation op, crec_status status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Wraps the thread's last error (from a builder call) with the op's location. */
crec_status crec__lw_fail_builder(lw *L, MlirOperation op, crec_status status);
/* Fails with the first MLIR error diagnostic seen, or `fallback` when there was none. */
crec_status crec__lw_fail_mlir(lw *L, MlirOperation op, const char *fallback);
/* The MLIR diagnostic handler (user data: the lw). */
MlirLogicalResult crec__lw_diagnostic(MlirDiagnostic d, void *user);
/* Forwards one of crec's own errors to the diagnostics callback. */
void crec__lw_emit(lw *L, const char *severity, const char *location, const char *message);
/* Notes `op` as the op that made the program's commands from `first` on that have none
 * yet (an op's nested regions note their own ops first). */
crec_status crec__lw_note_ops(lw *L, size_t first, MlirOperation op);
/* Notes that the read of argument `arg` of launch `command` (or operand `arg`
 * of a host callback or a custom command) is assumed, not sure: no undefined
 * read to warn about. */
crec_status crec__lw_note_unsure(lw *L, crec_command command, uint32_t arg);
/* Warns, at each op's location, of the reads of temporary bytes nothing wrote before
 * (crec__undefined_reads()), leaving out reads the front end assumed. */
crec_status crec__lw_warn_undefined(lw *L);

/* ---- mlir helpers (lower.c) ---- */
bool crec__lw_is(MlirOperation op, const char *name);
/* Whether the op's name starts with `prefix` ("crec."). */
bool crec__lw_op_in(MlirOperation op, const char *prefix);
/* Returns the op's name as a NUL-terminated string in `buf`. */
const char *crec__lw_op_name(MlirOperation op, char *buf, size_t size);
/* The ops named `name` under `root` (itself included), in pre-order: `*ops`
 * (the caller frees it with crec__free) and `*n`. Errors: out of memory. */
crec_status crec__lw_collect(lw *L, MlirOperation root, const char *name, MlirOperation **ops, size_t *n);
/* Returns an inherent or discardable attribute, or the null attribute. */
MlirAttribute crec__lw_attr(MlirOperation op, const char *name);
/* Puts an llvm.inline_asm with side effects, `text` with `constraints` over `operands`
 * (no result), before the first op of `block`; false when MLIR refuses to make it. */
bool crec__lw_prepend_asm(MlirContext ctx, MlirBlock block, MlirLocation loc, const char *text,
                          const char *constraints, intptr_t num_operands, const MlirValue *operands);
/* Returns a string attribute's value copied into `buf` ("" when absent). false when not a string. */
bool crec__lw_string_attr(MlirOperation op, const char *name, char *buf, size_t size, bool *present);
/* Appends printed MLIR to a text (the MlirStringCallback for crec__text). */
void crec__lw_print_text(MlirStringRef s, void *user);
/* Prints a type / attribute into an owned string (NULL on OOM). */
char *crec__lw_type_string(MlirType t);
char *crec__lw_attr_string(MlirAttribute a);
/* Returns the top-level op of the module with this symbol name, or null. */
MlirOperation crec__lw_lookup_symbol(MlirBlock block, const char *name, size_t len);
/* Byte size of a scalar element type (int, index, float, vector of them); 0 when not one. */
uint32_t crec__lw_element_bytes(MlirType t, uint32_t *bits, bool *is_float, bool *is_index);
/* Byte size of a memref's element type: a scalar one, or complex<f16|bf16|f32|f64>
 * (two of its floats); 0 when neither. Not for scalars: no host value is complex. */
uint32_t crec__lw_memref_element_bytes(MlirType t);

/* ---- values (lower.c) ---- */
uint32_t crec__lw_value_get(const lw *L, MlirValue v);
crec_status crec__lw_value_set(lw *L, MlirValue v, uint32_t packed);

/* ---- host.c ---- */
/* Interns a constant / input / op node; *out is the node index. */
crec_status crec__lw_node_const_int(lw *L, MlirType type, int64_t value, uint32_t *out);
crec_status crec__lw_node_const_float(lw *L, MlirType type, MlirAttribute attr, uint32_t *out);
crec_status crec__lw_node_input(lw *L, MlirType type, crec_scalar scalar, crec_type stype, const char *label,
                          uint32_t *out);
/* A synthetic op over nodes: `opname`, `attrs` ("" or "{...}"), result type text. */
crec_status crec__lw_node_synth(lw *L, const char *opname, const char *attrs, const char *type,
                          const uint32_t *operands, uint32_t n, uint32_t *out);
/* Handles an arith/index host op of the entry (folding constants); false when `op` is not one. */
bool crec__lw_is_host_op(MlirOperation op);
crec_status crec__lw_host_op(lw *L, MlirOperation op);
/* Returns the derived (or bound) scalar that carries node `n`'s value, making it on first use. */
crec_status crec__lw_node_scalar(lw *L, MlirOperation user, uint32_t n, crec_scalar *out);
/* Compiles every derived scalar into one host function and adds it to the program. */
crec_status crec__lw_host_finish(lw *L);
/* Integer value of a constant node; false when not a constant integer. */
bool crec__lw_node_int(const lw *L, uint32_t n, int64_t *value);

/* ---- memref.c ---- */
crec_status crec__lw_memref_new(lw *L, const lw_memref *m, uint32_t *out);
/* Makes the memref of a whole buffer of type `t`. */
crec_status crec__lw_memref_of_buffer(lw *L, MlirOperation op, uint32_t buffer, MlirType t, uint32_t *out);
bool crec__lw_is_memref_op(MlirOperation op);
/* Rewrites each allocation of the entry whose dynamic sizes the text fixes
 * (constants, memref.dim of static dims) into a static one and a memref.cast
 * to the type the program uses: such a temporary has the static size crec
 * places at record. */
crec_status crec__lw_static_allocs(lw *L);
/* A memref type the front end follows: ranked, int/index/float elements, identity or strided layout. */
bool crec__lw_memref_type_ok(MlirType t);
crec_status crec__lw_memref_op(lw *L, MlirOperation op);
/* The memref behind `v`, with an error at `user` when it is not a known memref. */
crec_status crec__lw_memref_get(lw *L, MlirOperation user, MlirValue v, lw_memref **out);
/* The byte range a memref spans (exact). `contiguous` tells whether it is dense. */
crec_status crec__lw_memref_range(lw *L, MlirOperation user, const lw_memref *m, crec_range *out,
                            bool *contiguous);
/* Checks the buffer was not deallocated before `user`. */
crec_status crec__lw_memref_live(lw *L, MlirOperation user, const lw_memref *m);
/* The size scalar of a dynamic argument buffer, made on first use. */
crec_status crec__lw_buf_size_scalar(lw *L, MlirOperation user, uint32_t buffer, crec_scalar *out);
/* Adds a buffer record; *out is its index. */
crec_status crec__lw_buf_add(lw *L, crec_buffer handle, crec_buffer_kind kind, bool dynamic, uint64_t size,
                       bool host, const char *name, uint32_t *out);

/* ---- kernels.c ---- */
/* Resolves the kernel of a gpu.launch_func (loading or compiling its module) and
 * records the launch's constant shared memory and cluster dims. */
crec_status crec__lw_kernel_for_launch(lw *L, MlirOperation launch, uint32_t *out);
/* Resolves the kernel a @module::@kernel reference names (crec.custom_call's kernels),
 * reporting errors at `at`. */
crec_status crec__lw_kernel_for_ref(lw *L, MlirOperation at, MlirAttribute ref, uint32_t *out);
/* Adds every resolved module and kernel to the program. */
crec_status crec__lw_kernels_commit(lw *L);
/* Reads gpu.launch_func's 13 operand segments: deps, grid xyz, block xyz, cluster xyz,
 * dynamic shared memory, kernel operands, async object. */
bool crec__lw_launch_segments(MlirOperation launch, int32_t *sizes, intptr_t *start);
/* How the kernel uses each of its `n` operands (memrefs), given their types;
 * read_known[i] tells whether a read of operand i is certain (seen in the body,
 * or declared with crec.access) rather than assumed. */
crec_status crec__lw_kernel_access(lw *L, MlirOperation launch, const lw_kernel *k, const MlirType *types, uint32_t n,
                             crec_access *acc, bool *read_known);

/* ---- async.c ---- */
/* Moves each async.execute region of the entry in place, in program order: its
 * body arguments become the values the regions that made them yielded, awaits
 * of values those values; the executes and awaits go. Other async ops, and
 * results used by anything else, are refused at them. */
crec_status crec__lw_async_flatten(lw *L);

/* ---- compile.c ---- */
/* Compiles a gpu.module (cloned into its own module) to PTX for L->chip; the
 * result comes from the process-wide cache when this module was compiled before.
 * `*ptx` is owned by the caller. */
/* `wait`: every kernel waits for the kernels before it at its entry (griddepcontrol.wait;
 * the chip must be sm_90 or later: crec__lw_chip_has_pdl). */
crec_status crec__lw_compile_module(lw *L, MlirOperation gpu_module, bool bare, bool wait, char **ptx, size_t *size);
/* Whether the lowering's chip has programmatic dependent launch (sm_90 and later). */
bool crec__lw_chip_has_pdl(const lw *L);
/* The chip a gpu.module compiles for: L->chip, or sm_90a for one whose ops need
 * it (wgmma) when L->chip is sm_90; an error naming the op for an older chip. */
crec_status crec__lw_module_chip(lw *L, MlirOperation gpu_module, char chip[32]);
/* Parses and runs a pass pipeline on `op`, reporting failures at `at`. */
crec_status crec__lw_run_pipeline(lw *L, MlirOperation op, const char *pipeline, MlirOperation at);

/* ---- image.c ---- */
/* Detects the format of an image; false when it is none of PTX, cubin, fatbin. */
bool crec__lw_image_format(const void *data, size_t size, crec_image_format *format);
/* The most parameters read from an image's kernel signature. */
#define LW_MAX_PARAMS 4096
/* Looks up kernel `entry` in an image. Returns 1 found (the byte size of each
 * parameter in sizes[0 .. *count-1] when *known; the image may not say), 0 not
 * found, -1 cannot tell (a compressed fatbin, or more than `cap` parameters). */
int crec__lw_image_kernel(const void *data, size_t size, crec_image_format format, const char *entry,
                    uint32_t *sizes, uint32_t cap, uint32_t *count, bool *known);

/* ---- gpu.c ---- */
crec_status crec__lw_launch(lw *L, MlirOperation op, crec_region region);
crec_status crec__lw_memcpy(lw *L, MlirOperation op, crec_region region);
crec_status crec__lw_memset(lw *L, MlirOperation op, crec_region region);
/* linalg.fill of a memref with a constant: a memset (linalg.copy is crec__lw_memcpy). */
crec_status crec__lw_fill(lw *L, MlirOperation op, crec_region region);
/* Records the writes of a command just made (for the predicate hazard check). */
crec_status crec__lw_note_write(lw *L, MlirOperation op, crec_range r);
/* Counts one command made. */
void crec__lw_note_command(lw *L);

/* ---- scf.c ---- */
bool crec__lw_is_predicate_op(lw *L, MlirOperation op);
crec_status crec__lw_predicate_op(lw *L, MlirOperation op);
crec_status crec__lw_load_op(lw *L, MlirOperation op);
crec_status crec__lw_if(lw *L, MlirOperation op, crec_region region);
crec_status crec__lw_while(lw *L, MlirOperation op, crec_region region);
crec_status crec__lw_switch(lw *L, MlirOperation op, crec_region region);
/* scf.for with constant bounds: a while command counting on the device, or
 * unrolled when its body uses the induction variable (at most LW_MAX_UNROLL copies). */
#define LW_MAX_UNROLL 1024
crec_status crec__lw_for(lw *L, MlirOperation op, crec_region region);
/* Reports an op that consumes a value loaded from device memory outside a predicate. */
crec_status crec__lw_device_read_error(lw *L, MlirOperation user, uint32_t load);

/* ---- segment.c: host code ---- */
/* Moves each maximal run of host ops at the top of the entry into a function
 * of its own and calls it there; marks the allocations it touches as host memory. */
crec_status crec__lw_segments_extract(lw *L);
/* Whether `op` calls one of those functions. */
bool crec__lw_is_segment_call(MlirOperation op);
/* Compiles the called function (ORC) and appends it as a host callback. */
crec_status crec__lw_segment_call(lw *L, MlirOperation op, crec_region region);

/* ---- library.c ---- */
/* Whether `op` is one of the library ops: linalg.matmul, linalg.batch_matmul,
 * the linalg convolutions that map onto cuDNN's (conv_*d_*, depthwise_conv_*d_*),
 * crec.gemm, crec.fft, crec.cholesky, crec.conv, the crec.* collectives,
 * crec.collective_done, crec.custom_call, crec.infeed, crec.outfeed. */
bool crec__lw_is_library_op(MlirOperation op);
crec_status crec__lw_library_op(lw *L, MlirOperation op, crec_region region);
/* Resolves the kernels a crec.custom_call lists (ahead of the walk). */
crec_status crec__lw_custom_call_kernels(lw *L, MlirOperation op);
/* Checks, after the walk, that every async collective start has its done. */
crec_status crec__lw_library_finish(lw *L);
/* Frees the library tables. */
void crec__lw_library_free(lw *L);

/* ---- entry.c ---- */
/* The crec element type of an MLIR element type (bytes for vectors and others). */
crec_element crec__lw_element_of(MlirType et);
crec_status crec__lw_entry_args(lw *L);
/* Resolves every kernel the entry launches (compiling or loading modules) and adds them. */
crec_status crec__lw_collect_kernels(lw *L, MlirBlock block);
crec_status crec__lw_block(lw *L, MlirBlock block, crec_region region);
/* Evaluates the pure ops (constants, views, host arithmetic, loads) that define `v`
 * ahead of the walk (used for a while predicate, which is needed before its region). */
crec_status crec__lw_eval_early(lw *L, MlirValue v);
/* Command name: the op's crec.name attribute, else NULL (the builder's default). */
const char *crec__lw_command_name(MlirOperation op, char *buf, size_t size);

/* ---- the PTX cache (compile.c) ---- */
void crec__lw_cache_stats(uint64_t *compilations, uint64_t *hits, uint64_t *entries, uint64_t *bytes);

/* ---- the entry points (lower.c, compile.c, cache.c): what crec_lower_* of
 * include/crec/lower.h do, called through the plugin's table (plugin.c) ---- */
crec_status crec__lw_lower_mlir_file(const char *path, const crec_lower_options *options, crec_program **out);
crec_status crec__lw_lower_mlir_string(const char *text, size_t length, const crec_lower_options *options,
                                       crec_program **out);
crec_status crec__lw_lower_cache_get_stats(crec_lower_cache_stats *out);
void crec__lw_lower_cache_clear(void);
crec_status crec__lw_lower_disk_cache_get_info(crec_lower_disk_cache_info *out);
crec_status crec__lw_lower_disk_cache_clear(uint64_t *removed);

/* Last: every call into libcrec goes through the plugin's table. */
#include "host_calls.h"

#endif
