/// \file serialize.h
/// Program files: a program written to bytes and read back, so that a process
/// can run a program without lowering it again (and without MLIR or LLVM).
///
/// Life cycle of a program file:
///  1. build or lower a program (program.h, lower.h);
///  2. crec_program_serialize() writes it into bytes the caller saves (a
///     `.crecb` file); crec_free() frees them;
///  3. later, perhaps in another process or on another machine,
///     crec_program_file_get_info() reads what the file says about itself
///     (format, the crec that wrote it, the chips its modules target) and
///     crec_program_deserialize() rebuilds the program, which is used and
///     destroyed like any other (crec_program_destroy()).
///
/// What a file holds: every buffer (arguments with their options, temporaries,
/// constants with their data), every scalar, the module images (PTX, cubin and
/// fatbin bytes as given), the kernels with their options, the communicator
/// slots, and every command in creation order with its region: launches with
/// their arguments and immediates, copies, fills, barriers (within the rank and
/// across ranks), while loops with their loop limits, if and switch with their
/// predicates and case tables, GEMMs, collectives (starts and dones) and custom
/// commands with their attributes. The program read back has the same handles
/// in the same order, so crec_dump() of both is byte for byte the same, and
/// serializing it again gives the same bytes.
///
/// What a file does not hold:
///  - **host functions and host callbacks** (crec_program_add_host_function(),
///    crec_program_add_host_callback()): their code is a function pointer of the
///    writing process (for programs from MLIR, host code JIT-compiled by ORC),
///    which means nothing in another process. crec_program_serialize() refuses a
///    program that has one (CREC_ERR_UNSUPPORTED, naming it). A later format
///    version may keep such code as a relinkable object or as its MLIR source;
///    until then, lower such programs from MLIR in each process.
///  - **warnings** (crec_program_get_warning()): they follow from the commands,
///    and crec_program_validate() (which record, plan, dump and eager runs call)
///    finds the same ones in the program read back.
///  - what recording or running made (a recorded program reads back unrecorded).
///
/// Why deserialization goes through the builders: crec_program_deserialize()
/// rebuilds the program with the public builder calls of program.h and
/// library.h, in the order the original was built, rather than filling crec's
/// tables directly. Every check a builder makes (ranges inside their buffers,
/// writable destinations, shapes of GEMMs and collectives, parameter sizes)
/// is made again on the file's contents, so a file that passes its checksum but
/// was written by a faulty or hostile writer still cannot make a program that
/// the builders would have refused.
///
/// The format (little-endian throughout; sizes are explicit, nothing is a copy
/// of an in-memory struct):
///
///     offset  size  field
///          0     8  magic: 0x89 'C' 'R' 'E' 'C' 'B' '\r' '\n'
///          8     4  format version (CREC_PROGRAM_FILE_VERSION)
///         12     4  header size in bytes (32 in version 1)
///         16     8  body size in bytes (the file is header + body, nothing after)
///         24     8  checksum: FNV-1a (64 bit) of the body
///         32     …  body: sections, each a 4-byte ASCII tag, an 8-byte size and
///                   its contents; version 1 has META (the crec version and the
///                   target, as strings), MODS, KERN, COMM, BUFS, SCAL, CMDS, in
///                   that order. Strings are a 4-byte length and their bytes.
///
/// A change of the format that an older reader could misread gets a new format
/// version; a reader refuses versions it does not know.
#ifndef CREC_SERIALIZE_H
#define CREC_SERIALIZE_H

#include <stddef.h>
#include <stdint.h>

#include "crec/program.h"

#ifdef __cplusplus
extern "C" {
#endif

/// The format version crec_program_serialize() writes, the newest crec_program_deserialize()
/// reads (it reads every version from 1: version 2 added launches' flags, CREC_LAUNCH_*).
#define CREC_PROGRAM_FILE_VERSION 2

/// Writes `program` into a new byte array `*bytes` of `*size` bytes, owned by the
/// caller (free it with crec_free()). The same program gives the same bytes.
/// The program may have been recorded or run; it is not changed.
/// On failure `*bytes` is set to NULL and `*size` to 0 (when they are not NULL).
/// Errors: CREC_ERR_NULL_POINTER (program, bytes, size), CREC_ERR_UNSUPPORTED (a
/// host function or a host callback: the message names it and says what a file
/// would need instead), CREC_ERR_OUT_OF_MEMORY.
crec_status crec_program_serialize(const crec_program *program, void **bytes, size_t *size);

/// Rebuilds the program that `size` bytes at `bytes` hold (as crec_program_serialize()
/// wrote them) into a new program `*out`, owned by the caller (crec_program_destroy()).
/// The bytes are only read, and may be freed once the call returns. On failure
/// `*out` is set to NULL and nothing is left allocated.
/// Errors, each with a message that says what is wrong and at which byte:
///  - CREC_ERR_NULL_POINTER: `out`, or `bytes` with a nonzero size;
///  - CREC_ERR_INVALID_ARGUMENT: not a program file (wrong magic), truncated or
///    followed by more bytes than the header says, a checksum that does not match,
///    or contents that are malformed or that a builder refuses (the builder's
///    message follows, e.g. "... at byte 812: command 3: crec_program_add_memcpy: ...");
///  - CREC_ERR_UNSUPPORTED: a format version or header size this crec does not read;
///  - CREC_ERR_OUT_OF_MEMORY.
/// The target chips in the file are not compared with any device here (the program
/// knows no device): recording is where the driver refuses a module that does not
/// fit the chip. crec_program_file_get_info() reads them for callers that check first.
crec_status crec_program_deserialize(const void *bytes, size_t size, crec_program **out);

/// What a program file says about itself.
typedef struct crec_program_file_info {
  size_t struct_size;          ///< sizeof(crec_program_file_info)
  uint32_t format_version;     ///< CREC_PROGRAM_FILE_VERSION
  char crec_version[32];       ///< the crec that wrote it ("0.1.0"), NUL-terminated
  /// The chips its modules are built for, in module order without repeats and
  /// separated by commas: "sm_90" for a cubin of sm_90, "compute_90" for PTX whose
  /// `.target` is sm_90 (the driver compiles it for sm_90 and later chips); "any"
  /// when no module says (no modules, or only fatbins). NUL-terminated.
  char target[256];
} crec_program_file_info;
#define CREC_PROGRAM_FILE_INFO_INIT {sizeof(crec_program_file_info), 0, {0}, {0}}

/// Reads the header and the META section of a program file into `*out` (whose
/// struct_size must be set), after the same checks of magic, version, size and
/// checksum as crec_program_deserialize(); the program itself is not rebuilt.
/// Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_ARGUMENT (as crec_program_deserialize(),
/// or a struct_size too small), CREC_ERR_UNSUPPORTED (format version).
crec_status crec_program_file_get_info(const void *bytes, size_t size, crec_program_file_info *out);

#ifdef __cplusplus
}
#endif
#endif
