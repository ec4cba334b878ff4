/// \file lower.h
/// The MLIR front end: turns an MLIR module (upstream func, gpu, scf, memref,
/// arith, index and linalg ops, plus a few crec.* ops in generic form) into a
/// crec_program. docs/mlir.md lists every accepted construct with an example.
///
/// Every error message carries the MLIR location as "file:line:col", the op
/// name and the reason. Lowering the same module twice gives identical programs;
/// kernels compiled from gpu.module bodies are cached in memory by module hash.
///
/// The front end is a library of its own, libcrec-mlir.so (libcrec links no MLIR
/// or LLVM). The first call below that needs it opens it, once per process, from:
///  1. the program itself, when it links libcrec-mlir.a (CMake: crec::crec_mlir_static);
///  2. $CREC_MLIR_PLUGIN, the file or its folder (when set, the only place tried);
///  3. the folder of the loaded libcrec.so (or of the program linked with libcrec.a);
///  4. the dynamic loader's path (LD_LIBRARY_PATH, libcrec's RUNPATH, ldconfig).
/// When none opens, every call that needs it fails with CREC_ERR_UNSUPPORTED, and the
/// message names libcrec-mlir.so and each place tried with why it failed. Only those
/// calls need it: programs built through the builders or read from program files
/// record and replay without it.
#ifndef CREC_LOWER_H
#define CREC_LOWER_H

#include "crec/program.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Receives each MLIR diagnostic: severity ("error", "warning", "note", "remark"),
/// location ("file:line:col", or "" when unknown) and message.
typedef void (*crec_diagnostic_fn)(void *user, const char *severity, const char *location,
                                   const char *message);

/// Options of the lowering.
typedef struct crec_lower_options {
  size_t struct_size;              ///< sizeof(crec_lower_options)
  const char *entry;               ///< entry function; NULL means "main"
  const char *chip;                ///< target chip ("sm_90"); NULL: the device's, else "sm_90"
  crec_diagnostic_fn diagnostic;   ///< optional diagnostics callback
  void *diagnostic_user;
  const char *filename;            ///< crec_lower_mlir_string(): name used in locations (NULL: "<string>")
  const char *base_dir;            ///< crec_lower_mlir_string(): where relative crec.image paths
                                   ///< are found (NULL: the current directory)
  int cubin;                       ///< nonzero: kernels compiled from gpu.module bodies are cubins for
                                   ///< `chip` (ahead of time, through nvJitLink, libnvJitLink.so.13,
                                   ///< opened at run time), so a record does no PTX JIT; such a program
                                   ///< runs only on that chip (and later ones of its major version).
                                   ///< 0 (default): PTX, which the driver compiles at record
  int early_start;                 ///< nonzero: every kernel compiled from a gpu.module body waits for
                                   ///< the kernels before it at its entry (griddepcontrol.wait), and
                                   ///< its launches are CREC_LAUNCH_EARLY_START (programmatic dependent
                                   ///< launch), where `chip` is sm_90 or later; as {crec.early_start}
                                   ///< on each gpu.module. 0 (default): only those modules
} crec_lower_options;
#define CREC_LOWER_OPTIONS_INIT {sizeof(crec_lower_options), NULL, NULL, NULL, NULL, NULL, NULL, 0, 0}

/// Lowers the MLIR file at `path` into a new program `*out` (owned by the caller).
/// `options` may be NULL for defaults (a caller built against an older header passes
/// its smaller struct_size: the fields it does not know take their defaults).
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_IO (unreadable file), CREC_ERR_MLIR (parse,
/// verify, unsupported op, bad operands), CREC_ERR_NOT_FOUND (entry or kernel),
/// CREC_ERR_UNSUPPORTED (also: `cubin` without nvJitLink; the front end, libcrec-mlir.so,
/// not found: see the top of this file), CREC_ERR_CUDA (nvJitLink
/// refused the PTX: the message names the call and carries its log),
/// CREC_ERR_OUT_OF_MEMORY, and any builder error (program.h).
crec_status crec_lower_mlir_file(const char *path, const crec_lower_options *options,
                                 crec_program **out);

/// Lowers `length` bytes of MLIR text into a new program `*out`. Errors: as crec_lower_mlir_file().
crec_status crec_lower_mlir_string(const char *text, size_t length,
                                   const crec_lower_options *options, crec_program **out);

/// Counters of the process-wide cache of PTX compiled from gpu.module bodies
/// (keyed by a hash of the module's text, the chip and the calling convention).
typedef struct crec_lower_cache_stats {
  size_t struct_size;     ///< sizeof(crec_lower_cache_stats)
  uint64_t compilations;  ///< gpu.module compilations run (cache misses) since the process started
  uint64_t hits;          ///< gpu.module compilations answered from the cache
  uint64_t entries;       ///< modules cached now
  uint64_t bytes;         ///< PTX bytes cached now
  /* the persistent cache of lowered programs (below), since the process started */
  uint64_t disk_hits;     ///< lowerings read back from it (no MLIR pass, no kernel compiled)
  uint64_t disk_misses;   ///< lowerings it had no usable entry for
  uint64_t disk_writes;   ///< entries written
  uint64_t disk_evictions; ///< entries removed to keep it under its cap
  uint64_t disk_rejected; ///< entries found damaged, of another format or not this user's: made again
  uint64_t disk_uncacheable; ///< lowerings whose program cannot be written to a file (host functions)
} crec_lower_cache_stats;
#define CREC_LOWER_CACHE_STATS_INIT {sizeof(crec_lower_cache_stats), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}

/// Reads the cache counters into `*out` (whose struct_size must be set; a caller built
/// against an older header, without the disk counters, passes its smaller size). Never
/// opens the front end: until a lowering has opened it, every counter is 0.
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_ARGUMENT (struct_size),
/// CREC_ERR_UNSUPPORTED (crec built without MLIR).
crec_status crec_lower_cache_get_stats(crec_lower_cache_stats *out);

/// Empties the in-memory PTX cache (the counters of compilations and hits keep counting);
/// does nothing before the front end is opened.
void crec_lower_cache_clear(void);

/// The persistent cache of lowered programs. A lowering first looks for the program
/// it would make in a directory on disk, written by an earlier lowering of the same
/// text (any process): a hit rebuilds the program from its program file
/// (serialize.h), runs no MLIR pass, compiles no kernel, and replays the diagnostics
/// the first lowering emitted through the diagnostic callback. A miss lowers and
/// writes the entry.
///  - Where: $CREC_CACHE_DIR, else $XDG_CACHE_HOME/crec, else $HOME/.cache/crec;
///    CREC_CACHE=0 turns it off.
///  - Key: a 128-bit hash of the text, the entry name, the file name (locations name
///    it), the chip, PTX or cubin, the crec and LLVM versions, and crec's build id.
///  - Not cached: text that mentions crec.image (it reads a file the key does not
///    cover), and programs with host functions (which a program file cannot hold;
///    counted as uncacheable).
///  - Safety: the directory is made 0700 and used only while it is this user's and
///    nobody else can write it; an entry is used only when it is this user's regular
///    file, and after its magic, key and checksum and every check of deserialization
///    pass. A bad entry is removed and made again (counted as rejected).
///  - Entries are written to a temporary file and renamed into place, so concurrent
///    processes are safe; past $CREC_CACHE_MAX_BYTES (default 256 MiB) the least
///    recently used entries are removed.
typedef struct crec_lower_disk_cache_info {
  size_t struct_size;  ///< sizeof(crec_lower_disk_cache_info)
  char dir[4096];      ///< the directory ("" when none is known)
  int enabled;         ///< 1: lowerings use it (CREC_CACHE is not 0, and the directory is usable)
  uint64_t entries;    ///< entries in it now
  uint64_t bytes;      ///< their bytes
  uint64_t max_bytes;  ///< the cap
} crec_lower_disk_cache_info;
#define CREC_LOWER_DISK_CACHE_INFO_INIT {sizeof(crec_lower_disk_cache_info), {0}, 0, 0, 0, 0}

/// Describes the persistent cache into `*out` (whose struct_size must be set); makes
/// its directory if missing. Opens the front end. Errors: CREC_ERR_NULL_POINTER,
/// CREC_ERR_INVALID_ARGUMENT (struct_size), CREC_ERR_UNSUPPORTED (crec built without
/// MLIR, or the front end not found).
crec_status crec_lower_disk_cache_get_info(crec_lower_disk_cache_info *out);

/// Removes every entry of the persistent cache (this user's files only); `removed`
/// (may be NULL) gets how many. Opens the front end. Errors: CREC_ERR_IO (the directory
/// is not this user's, or cannot be read), CREC_ERR_UNSUPPORTED (crec built without MLIR,
/// or the front end not found).
crec_status crec_lower_disk_cache_clear(uint64_t *removed);

#ifdef __cplusplus
}
#endif
#endif
