/// \file dump.h
/// Human- and machine-readable dumps of a program and its plan.
#ifndef CREC_DUMP_H
#define CREC_DUMP_H

#include "crec/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Dump formats.
typedef enum crec_dump_format {
  CREC_DUMP_TEXT = 0, ///< a summary: buffers, scalars, kernels, the command tree with dependencies
  CREC_DUMP_JSON = 1, ///< one JSON object, the schema below ("crec dump --format json", and the data
                      ///< of "crec dump --format html")
  CREC_DUMP_DOT = 2   ///< Graphviz DOT: control-flow bodies as nested clusters
} crec_dump_format;

/// The JSON dump, one object on one line, then a newline. Ids are positions in creation
/// order (crec_handle_index()); commands are listed in program order (depth first); a
/// range is {"buffer":name,"offset":N,"end":N}, "end" null where it runs to the end of a
/// dynamic-size buffer; an access is "read", "write" or "read-write"; a dim is a number,
/// or the name of the scalar it comes from. Keys marked ? appear only where they apply.
///
///     {"buffers":  [{"name","kind","size","element","dynamic":bool,
///                    "memory"?:"host",                          (host arguments and temporaries)
///                    "arena_offset"?,"live"?:[first,last]}],     (temporaries some command uses; a
///                                                                 host temporary's offset is in the host arena)
///      "scalars":  [{"name","type","kind":"bound"|"derived"|"size"}],
///      "regions":  [{"id","parent":command id|null,"role","index"}],  (index among the parent's regions)
///      "commands": [{"id","kind","name","region","deps":[ids],
///        launch:      "kernel":{"entry","module","format"},"grid":[3 dims],"block":[3 dims],
///                     "shared":dim,"cluster"?:[x,y,z],"args":[{"kind":"buffer",range...,"access"} |
///                     {"kind":"scalar","name","type"} | {"kind":"immediate","type","value":string}]
///        memcpy:      "dst":range,"src":range,"bytes":N|null (null: to the end of a dynamic-size buffer)
///        memset:      "dst":range,"bytes":N|null,"value":"0x..","element_size"
///        while, if, switch: "predicate":range,"cases"?:[values],"regions":[region ids],
///                     "max_iterations"?:N|"unlimited"   (a while with a limit of its own,
///                                                       crec_program_set_loop_limit)
///        gemm:        "gemm":{"type","output_type","m","n","k","batch","transpose_a","transpose_b","alpha","beta",
///                     "accumulate","epilogue","workspace_bytes"}
///        collective:  "collective":{"op","type","reduction"?,"communicator","ranks",
///                     "async":"no"|"start"|"done"}
///        custom:      "custom":{"target","kernels":count,"attribute_bytes"}
///        graph:       "graph":{"nodes","relocated"}   (an imported graph: its nodes, those rewritten at replays)
///        gemm, collective, custom, host, graph, a barrier across ranks:
///                     "operands"?:[{range...,"access"}]   (custom holes are not listed)
///      }]}
///
/// Writes a dump of `program` into a NUL-terminated string `*out` (free with crec_free()).
/// Dependencies come from `plan`; NULL plans the program with default options.
/// `length` may be NULL. Errors: CREC_ERR_NULL_POINTER, CREC_ERR_INVALID_ARGUMENT
/// (format, or a plan of another program), CREC_ERR_INVALID_PROGRAM, CREC_ERR_OUT_OF_MEMORY.
crec_status crec_dump(const crec_program *program, const crec_plan *plan, crec_dump_format format,
                      char **out, size_t *length);

#ifdef __cplusplus
}
#endif
#endif
