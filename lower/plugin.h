/* The line between libcrec and its MLIR front end, libcrec-mlir (the plugin).
 *
 * libcrec links no MLIR or LLVM: the first crec_lower_* call opens the plugin
 * (lower/load.c) and calls the one function it exports,
 * crec__mlir_plugin_open(), with a table of the libcrec functions the front
 * end calls (`crec__mlir_host`). The plugin links nothing of libcrec's: every
 * call it makes into crec goes through that table (lower/host_calls.h), so the
 * same plugin serves libcrec.so and a program linked with libcrec.a, and a
 * process holds one copy of crec's state (last errors, fault injection,
 * allocation counts). In return it gives a table of the lowering entry points
 * (`crec__mlir_plugin`).
 *
 * A new crec function called from lower/ goes into CREC__MLIR_HOST_FUNCS and
 * into lower/host_calls.h; the plugin's link (-Wl,--no-undefined) names any
 * that is missing. */
#ifndef CREC_LOWER_PLUGIN_H
#define CREC_LOWER_PLUGIN_H

#include "access.h"
#include "internal.h"
#include "libs.h" /* the runtime's dlopen helpers, which know no CUDA */

/* The plugin's file name, looked for next to libcrec, through CREC_MLIR_PLUGIN
 * and through the loader's path. */
#define CREC__MLIR_PLUGIN_FILE "libcrec-mlir.so"
/* The environment variable that names the plugin (a file, or its folder). */
#define CREC__MLIR_PLUGIN_ENV "CREC_MLIR_PLUGIN"
/* The one symbol the plugin exports. */
#define CREC__MLIR_PLUGIN_ENTRY "crec__mlir_plugin_open"
/* Bumped whenever either table or a struct they pass changes meaning: a plugin
 * and a libcrec of different builds refuse each other. */
#define CREC__MLIR_PLUGIN_ABI 1

/* Every libcrec function the front end calls. */
#define CREC__MLIR_HOST_FUNCS(X)                                                                                       \
  X(crec__calloc)                                                                                                      \
  X(crec__error)                                                                                                       \
  X(crec__free)                                                                                                        \
  X(crec__give_struct)                                                                                                 \
  X(crec__hash)                                                                                                        \
  X(crec__load_symbols)                                                                                                \
  X(crec__malloc)                                                                                                      \
  X(crec__memdup)                                                                                                      \
  X(crec__oom)                                                                                                         \
  X(crec__open_library)                                                                                                \
  X(crec__reserve)                                                                                                     \
  X(crec__rethrow)                                                                                                     \
  X(crec__strdup)                                                                                                      \
  X(crec__take_struct)                                                                                                 \
  X(crec__text_printf)                                                                                                 \
  X(crec__text_putn)                                                                                                   \
  X(crec__text_puts)                                                                                                   \
  X(crec__undefined_message)                                                                                           \
  X(crec__undefined_reads)                                                                                             \
  X(crec__undefined_verb)                                                                                              \
  X(crec__undefined_what)                                                                                              \
  X(crec_buffer_get_info)                                                                                              \
  X(crec_buffer_kind_name)                                                                                             \
  X(crec_command_get_collective)                                                                                       \
  X(crec_conv_output_size)                                                                                             \
  X(crec_device_available)                                                                                             \
  X(crec_device_describe)                                                                                              \
  X(crec_free)                                                                                                         \
  X(crec_image_format_name)                                                                                            \
  X(crec_last_error)                                                                                                   \
  X(crec_program_add_argument)                                                                                         \
  X(crec_program_add_barrier)                                                                                          \
  X(crec_program_add_cholesky)                                                                                         \
  X(crec_program_add_collective)                                                                                       \
  X(crec_program_add_collective_done)                                                                                  \
  X(crec_program_add_communicator)                                                                                     \
  X(crec_program_add_constant)                                                                                         \
  X(crec_program_add_conv)                                                                                             \
  X(crec_program_add_custom)                                                                                           \
  X(crec_program_add_derived_scalar)                                                                                   \
  X(crec_program_add_fft)                                                                                              \
  X(crec_program_add_gemm)                                                                                             \
  X(crec_program_add_host_callback)                                                                                    \
  X(crec_program_add_host_function)                                                                                    \
  X(crec_program_add_host_temporary)                                                                                   \
  X(crec_program_add_if)                                                                                               \
  X(crec_program_add_infeed)                                                                                           \
  X(crec_program_add_kernel)                                                                                           \
  X(crec_program_add_launch)                                                                                           \
  X(crec_program_add_memcpy)                                                                                           \
  X(crec_program_add_memset)                                                                                           \
  X(crec_program_add_module)                                                                                           \
  X(crec_program_add_outfeed)                                                                                          \
  X(crec_program_add_scalar)                                                                                           \
  X(crec_program_add_size_scalar)                                                                                      \
  X(crec_program_add_switch)                                                                                           \
  X(crec_program_add_temporary)                                                                                        \
  X(crec_program_add_while)                                                                                            \
  X(crec_program_body)                                                                                                 \
  X(crec_program_create)                                                                                               \
  X(crec_program_deserialize)                                                                                          \
  X(crec_program_destroy)                                                                                              \
  X(crec_program_find_buffer)                                                                                          \
  X(crec_program_serialize)                                                                                            \
  X(crec_program_set_loop_limit)                                                                                       \
  X(crec_program_validate)                                                                                             \
  X(crec_scalar_get_info)                                                                                              \
  X(crec_type_name)                                                                                                    \
  X(crec_type_size)

/* What libcrec gives the plugin: its version and the functions above, each
 * member named and typed as the function it points to. */
typedef struct crec__mlir_host {
  size_t struct_size;   /* sizeof(crec__mlir_host) */
  int abi;              /* CREC__MLIR_PLUGIN_ABI */
  const char *version;  /* CREC_VERSION_STRING */
#define CREC__MLIR_HOST_MEMBER(f) __typeof__(f) *f;
  CREC__MLIR_HOST_FUNCS(CREC__MLIR_HOST_MEMBER)
#undef CREC__MLIR_HOST_MEMBER
} crec__mlir_host;

/* What the plugin gives libcrec: the front end's entry points, as include/crec/lower.h
 * declares them. */
typedef struct crec__mlir_plugin {
  size_t struct_size; /* sizeof(crec__mlir_plugin) */
  crec_status (*lower_mlir_file)(const char *path, const crec_lower_options *options, crec_program **out);
  crec_status (*lower_mlir_string)(const char *text, size_t length, const crec_lower_options *options,
                                   crec_program **out);
  crec_status (*cache_get_stats)(crec_lower_cache_stats *out);
  void (*cache_clear)(void);
  crec_status (*disk_cache_get_info)(crec_lower_disk_cache_info *out);
  crec_status (*disk_cache_clear)(uint64_t *removed);
} crec__mlir_plugin;

/* The plugin's entry (exported by libcrec-mlir.so; defined in lower/plugin.c).
 * Keeps `host` (which must outlive the process's use of the front end) and
 * returns the front end's table; NULL, with `reason` filled, when `host` is of
 * another build of crec. */
const crec__mlir_plugin *crec__mlir_plugin_open(const crec__mlir_host *host, char *reason, size_t reason_size);

#endif
