/* The part of XLA's FFI C ABI that crec_xla_ffi_handler (replay/xla.c) reads
 * and writes, declared in crec's words; tests/test_xla.c builds call frames
 * with the same declarations.
 *
 * They follow xla/ffi/api/c_api.h as jaxlib 0.10.2 ships it (API version 0.3),
 * and openxla/xla commit 0ff4b821e3dc (API version 0.1, the first with the
 * metadata extension and the instantiate stage): everything declared here has
 * the same layout in both, since a minor version only appends fields and
 * functions. The static assertions in xla.c pin the sizes and offsets that
 * c_api.h gives on LP64 (x86-64, aarch64).
 *
 * Conventions of the ABI:
 *  - every struct that has a struct_size holds the size its writer knew:
 *    offsetof(last field) + sizeof(last field), the XLA_SIZE below (not sizeof,
 *    which counts tail padding). A reader accepts a larger one (a newer writer)
 *    and must not read past a smaller one;
 *  - an error is an opaque object made by the api's Error_Create; a handler
 *    returns it (XLA then owns it) or NULL for success;
 *  - enums are C enums: int-sized. */
#ifndef CREC_REPLAY_XLA_ABI_H
#define CREC_REPLAY_XLA_ABI_H

#include <stddef.h>
#include <stdint.h>

/* The struct_size of a struct whose last field (as its writer knows it) is `last`. */
#define XLA_SIZE(type, last) (offsetof(type, last) + sizeof(((type *)0)->last))

/* The version whose layout this file follows, which the metadata query reports:
 * XLA accepts a handler of its own major version and of a minor version from 1
 * up to its own. */
#define XLA_API_MAJOR 0
#define XLA_API_MINOR 1

enum {
  XLA_EXTENSION_METADATA = 1, /* XLA_FFI_Extension_Metadata */
};

/* XLA_FFI_Handler_TraitsBits */
enum { XLA_TRAIT_COMMAND_BUFFER_COMPATIBLE = 1u << 0 };

/* XLA_FFI_ExecutionStage */
enum { XLA_STAGE_INSTANTIATE = 0, XLA_STAGE_PREPARE = 1, XLA_STAGE_INITIALIZE = 2, XLA_STAGE_EXECUTE = 3 };

/* XLA_FFI_ArgType, XLA_FFI_RetType, XLA_FFI_AttrType */
enum { XLA_ARG_BUFFER = 1 };
enum { XLA_RET_BUFFER = 1 };
enum { XLA_ATTR_ARRAY = 1, XLA_ATTR_DICTIONARY = 2, XLA_ATTR_SCALAR = 3, XLA_ATTR_STRING = 4 };

/* XLA_FFI_Error_Code (absl's status codes) */
enum {
  XLA_CODE_INVALID_ARGUMENT = 3,
  XLA_CODE_DEADLINE_EXCEEDED = 4,
  XLA_CODE_NOT_FOUND = 5,
  XLA_CODE_RESOURCE_EXHAUSTED = 8,
  XLA_CODE_FAILED_PRECONDITION = 9,
  XLA_CODE_ABORTED = 10,
  XLA_CODE_OUT_OF_RANGE = 11,
  XLA_CODE_UNIMPLEMENTED = 12,
  XLA_CODE_INTERNAL = 13,
  XLA_CODE_UNAVAILABLE = 14,
};

/* XLA_FFI_DataType: xla::PrimitiveType's numbers */
enum {
  XLA_INVALID = 0, XLA_PRED = 1, XLA_S8 = 2, XLA_S16 = 3, XLA_S32 = 4, XLA_S64 = 5, XLA_U8 = 6, XLA_U16 = 7,
  XLA_U32 = 8, XLA_U64 = 9, XLA_F16 = 10, XLA_F32 = 11, XLA_F64 = 12, XLA_C64 = 15, XLA_BF16 = 16, XLA_TOKEN = 17,
  XLA_C128 = 18, XLA_F8E5M2 = 19, XLA_F8E4M3FN = 20, XLA_S4 = 21, XLA_U4 = 22, XLA_F8E4M3B11FNUZ = 23,
  XLA_F8E5M2FNUZ = 24, XLA_F8E4M3FNUZ = 25, XLA_S2 = 26, XLA_U2 = 27, XLA_F8E4M3 = 28, XLA_F8E3M4 = 29,
  XLA_S1 = 30, XLA_U1 = 31, XLA_F4E2M1FN = 32, XLA_F8E8M0FNU = 33,
};

/* XLA_FFI_Extension_Base: the head of every extension, chained through `next`. */
typedef struct xla_extension {
  size_t struct_size;
  int type;
  struct xla_extension *next;
} xla_extension;

/* XLA_FFI_Api_Version */
typedef struct xla_version {
  size_t struct_size;
  xla_extension *extension_start;
  int major;
  int minor;
} xla_version;

typedef struct xla_error xla_error; /* XLA_FFI_Error: opaque */

/* XLA_FFI_Error_Create_Args: XLA copies the message */
typedef struct xla_error_create_args {
  size_t struct_size;
  xla_extension *extension_start;
  const char *message;
  int code;
} xla_error_create_args;

/* XLA_FFI_Error_GetMessage_Args: `message` is the error's, valid while it lives */
typedef struct xla_error_message_args {
  size_t struct_size;
  xla_extension *extension_start;
  xla_error *error;
  const char *message; /* out */
} xla_error_message_args;

/* XLA_FFI_Error_Destroy_Args */
typedef struct xla_error_destroy_args {
  size_t struct_size;
  xla_extension *extension_start;
  xla_error *error;
} xla_error_destroy_args;

/* XLA_FFI_Stream_Get_Args: for CUDA, `stream` is the CUstream */
typedef struct xla_stream_args {
  size_t struct_size;
  xla_extension *extension_start;
  void *ctx; /* XLA_FFI_ExecutionContext*: the call frame's */
  void *stream; /* out */
} xla_stream_args;

/* XLA_FFI_Api: the table XLA hands every call. Its functions are in this order
 * in every version from 0.1 on; later ones (after Stream_Get) are not read. */
typedef struct xla_api {
  size_t struct_size;
  xla_extension *extension_start;
  xla_version version; /* the framework's */
  const void *internal_api;
  xla_error *(*error_create)(xla_error_create_args *args);   /* XLA_FFI_Error_Create */
  void (*error_message)(xla_error_message_args *args);       /* XLA_FFI_Error_GetMessage */
  void (*error_destroy)(xla_error_destroy_args *args);       /* XLA_FFI_Error_Destroy */
  void *handler_register;                                   /* XLA_FFI_Handler_Register: not called */
  xla_error *(*stream_get)(xla_stream_args *args);           /* XLA_FFI_Stream_Get */
} xla_api;

/* XLA_FFI_ByteSpan: a name, not NUL-terminated */
typedef struct xla_span {
  const char *ptr;
  size_t len;
} xla_span;

/* XLA_FFI_Scalar: an attribute of type XLA_ATTR_SCALAR */
typedef struct xla_scalar {
  int dtype;
  void *value;
} xla_scalar;

/* XLA_FFI_Buffer: an argument or result of type BUFFER, dense, row-major */
typedef struct xla_buffer {
  size_t struct_size;
  xla_extension *extension_start;
  int dtype;
  void *data;
  int64_t rank;
  int64_t *dims; /* rank of them */
} xla_buffer;

/* XLA_FFI_Args and XLA_FFI_Rets (the same layout): `items[i]` is an
 * xla_buffer * when types[i] is BUFFER */
typedef struct xla_list {
  size_t struct_size;
  xla_extension *extension_start;
  int64_t size;
  int *types;
  void **items;
} xla_list;

/* XLA_FFI_Attrs: sorted by name; attrs[i] is an xla_scalar * for a scalar */
typedef struct xla_attrs {
  size_t struct_size;
  xla_extension *extension_start;
  int64_t size;
  int *types;
  xla_span **names;
  void **attrs;
} xla_attrs;

/* XLA_FFI_CallFrame */
typedef struct xla_frame {
  size_t struct_size; /* XLA_SIZE(xla_frame, attrs): `future` is not counted */
  xla_extension *extension_start;
  const xla_api *api;
  void *ctx; /* XLA_FFI_ExecutionContext* */
  int stage;
  xla_list args;
  xla_list rets;
  xla_attrs attrs;
  void *future; /* out: an asynchronous handler's; crec's is synchronous and leaves it */
} xla_frame;

/* XLA_FFI_Metadata: what a handler reports when the frame carries the metadata
 * extension (version 0.3 appends a state type id, which crec leaves as XLA set it) */
typedef struct xla_metadata {
  size_t struct_size;
  xla_version version; /* out: the version the handler was built for */
  uint32_t traits;     /* out: XLA_FFI_Handler_Traits */
} xla_metadata;

/* XLA_FFI_Metadata_Extension */
typedef struct xla_metadata_extension {
  xla_extension base;
  xla_metadata *metadata;
} xla_metadata_extension;

#endif
