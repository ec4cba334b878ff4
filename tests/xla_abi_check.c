/* crec's declarations of XLA's FFI ABI (replay/xla_abi.h) against XLA's own
 * header, xla/ffi/api/c_api.h as jaxlib ships it (jax.ffi.include_dir()):
 * every offset, size and constant the handler reads or writes. Built only where
 * CMake found that header (CREC_XLA_INCLUDE_DIR); a difference fails the build. */
#include <stddef.h>

#include "xla/ffi/api/c_api.h"
#include "xla_abi.h"

#include "common.h"

#define SAME_OFFSET(ours, o, theirs, t) _Static_assert(offsetof(ours, o) == offsetof(theirs, t), #theirs "." #t)
/* XLA_SIZE is generic: what a struct_size counts, ours or XLA's */
#define SAME_SIZE(ours, o, theirs, t) \
  _Static_assert(XLA_SIZE(ours, o) == XLA_SIZE(theirs, t), #theirs "'s struct_size")

SAME_OFFSET(xla_extension, type, XLA_FFI_Extension_Base, type);
SAME_OFFSET(xla_extension, next, XLA_FFI_Extension_Base, next);
SAME_OFFSET(xla_version, major, XLA_FFI_Api_Version, major_version);
SAME_SIZE(xla_version, minor, XLA_FFI_Api_Version, minor_version);
SAME_OFFSET(xla_error_create_args, message, XLA_FFI_Error_Create_Args, message);
SAME_SIZE(xla_error_create_args, code, XLA_FFI_Error_Create_Args, errc);
SAME_OFFSET(xla_error_message_args, error, XLA_FFI_Error_GetMessage_Args, error);
SAME_SIZE(xla_error_message_args, message, XLA_FFI_Error_GetMessage_Args, message);
SAME_SIZE(xla_error_destroy_args, error, XLA_FFI_Error_Destroy_Args, error);
SAME_OFFSET(xla_stream_args, ctx, XLA_FFI_Stream_Get_Args, ctx);
SAME_SIZE(xla_stream_args, stream, XLA_FFI_Stream_Get_Args, stream);
SAME_OFFSET(xla_api, version, XLA_FFI_Api, api_version);
SAME_OFFSET(xla_api, internal_api, XLA_FFI_Api, internal_api);
SAME_OFFSET(xla_api, error_create, XLA_FFI_Api, XLA_FFI_Error_Create);
SAME_OFFSET(xla_api, error_message, XLA_FFI_Api, XLA_FFI_Error_GetMessage);
SAME_OFFSET(xla_api, error_destroy, XLA_FFI_Api, XLA_FFI_Error_Destroy);
SAME_OFFSET(xla_api, stream_get, XLA_FFI_Api, XLA_FFI_Stream_Get);
SAME_OFFSET(xla_span, len, XLA_FFI_ByteSpan, len);
SAME_OFFSET(xla_scalar, value, XLA_FFI_Scalar, value);
SAME_OFFSET(xla_buffer, dtype, XLA_FFI_Buffer, dtype);
SAME_OFFSET(xla_buffer, data, XLA_FFI_Buffer, data);
SAME_OFFSET(xla_buffer, rank, XLA_FFI_Buffer, rank);
SAME_SIZE(xla_buffer, dims, XLA_FFI_Buffer, dims);
SAME_OFFSET(xla_list, size, XLA_FFI_Args, size);
SAME_OFFSET(xla_list, types, XLA_FFI_Args, types);
SAME_SIZE(xla_list, items, XLA_FFI_Args, args);
SAME_OFFSET(xla_list, types, XLA_FFI_Rets, types);
SAME_SIZE(xla_list, items, XLA_FFI_Rets, rets);
SAME_OFFSET(xla_attrs, types, XLA_FFI_Attrs, types);
SAME_OFFSET(xla_attrs, names, XLA_FFI_Attrs, names);
SAME_SIZE(xla_attrs, attrs, XLA_FFI_Attrs, attrs);
SAME_OFFSET(xla_frame, api, XLA_FFI_CallFrame, api);
SAME_OFFSET(xla_frame, ctx, XLA_FFI_CallFrame, ctx);
SAME_OFFSET(xla_frame, stage, XLA_FFI_CallFrame, stage);
SAME_OFFSET(xla_frame, args, XLA_FFI_CallFrame, args);
SAME_OFFSET(xla_frame, rets, XLA_FFI_CallFrame, rets);
SAME_OFFSET(xla_frame, attrs, XLA_FFI_CallFrame, attrs);
SAME_OFFSET(xla_frame, future, XLA_FFI_CallFrame, future);
SAME_OFFSET(xla_metadata, version, XLA_FFI_Metadata, api_version);
SAME_SIZE(xla_metadata, traits, XLA_FFI_Metadata, traits);
SAME_SIZE(xla_metadata_extension, metadata, XLA_FFI_Metadata_Extension, metadata);

/* (as ints: the two sides are different enums) */
#define SAME_VALUE(ours, theirs) _Static_assert((int)(ours) == (int)(theirs), #theirs)
SAME_VALUE(XLA_API_MAJOR, XLA_FFI_API_MAJOR);
_Static_assert(XLA_API_MINOR <= XLA_FFI_API_MINOR, "a minor version this header knows");
SAME_VALUE(XLA_EXTENSION_METADATA, XLA_FFI_Extension_Metadata);
SAME_VALUE(XLA_TRAIT_COMMAND_BUFFER_COMPATIBLE, XLA_FFI_HANDLER_TRAITS_COMMAND_BUFFER_COMPATIBLE);
SAME_VALUE(XLA_STAGE_INSTANTIATE, XLA_FFI_ExecutionStage_INSTANTIATE);
SAME_VALUE(XLA_STAGE_EXECUTE, XLA_FFI_ExecutionStage_EXECUTE);
SAME_VALUE(XLA_ARG_BUFFER, XLA_FFI_ArgType_BUFFER);
SAME_VALUE(XLA_RET_BUFFER, XLA_FFI_RetType_BUFFER);
SAME_VALUE(XLA_ATTR_SCALAR, XLA_FFI_AttrType_SCALAR);
SAME_VALUE(XLA_ATTR_STRING, XLA_FFI_AttrType_STRING);
SAME_VALUE(XLA_CODE_INVALID_ARGUMENT, XLA_FFI_Error_Code_INVALID_ARGUMENT);
SAME_VALUE(XLA_CODE_DEADLINE_EXCEEDED, XLA_FFI_Error_Code_DEADLINE_EXCEEDED);
SAME_VALUE(XLA_CODE_NOT_FOUND, XLA_FFI_Error_Code_NOT_FOUND);
SAME_VALUE(XLA_CODE_RESOURCE_EXHAUSTED, XLA_FFI_Error_Code_RESOURCE_EXHAUSTED);
SAME_VALUE(XLA_CODE_FAILED_PRECONDITION, XLA_FFI_Error_Code_FAILED_PRECONDITION);
SAME_VALUE(XLA_CODE_ABORTED, XLA_FFI_Error_Code_ABORTED);
SAME_VALUE(XLA_CODE_OUT_OF_RANGE, XLA_FFI_Error_Code_OUT_OF_RANGE);
SAME_VALUE(XLA_CODE_UNIMPLEMENTED, XLA_FFI_Error_Code_UNIMPLEMENTED);
SAME_VALUE(XLA_CODE_INTERNAL, XLA_FFI_Error_Code_INTERNAL);
SAME_VALUE(XLA_CODE_UNAVAILABLE, XLA_FFI_Error_Code_UNAVAILABLE);
SAME_VALUE(XLA_PRED, XLA_FFI_DataType_PRED);
SAME_VALUE(XLA_S8, XLA_FFI_DataType_S8);
SAME_VALUE(XLA_S64, XLA_FFI_DataType_S64);
SAME_VALUE(XLA_U64, XLA_FFI_DataType_U64);
SAME_VALUE(XLA_F16, XLA_FFI_DataType_F16);
SAME_VALUE(XLA_F32, XLA_FFI_DataType_F32);
SAME_VALUE(XLA_F64, XLA_FFI_DataType_F64);
SAME_VALUE(XLA_C64, XLA_FFI_DataType_C64);
SAME_VALUE(XLA_BF16, XLA_FFI_DataType_BF16);
SAME_VALUE(XLA_TOKEN, XLA_FFI_DataType_TOKEN);
SAME_VALUE(XLA_C128, XLA_FFI_DataType_C128);
SAME_VALUE(XLA_F8E5M2, XLA_FFI_DataType_F8E5M2);
SAME_VALUE(XLA_F8E4M3FN, XLA_FFI_DataType_F8E4M3FN);
SAME_VALUE(XLA_S4, XLA_FFI_DataType_S4);
SAME_VALUE(XLA_U4, XLA_FFI_DataType_U4);
SAME_VALUE(XLA_S1, XLA_FFI_DataType_S1);
SAME_VALUE(XLA_F4E2M1FN, XLA_FFI_DataType_F4E2M1FN);
SAME_VALUE(XLA_F8E8M0FNU, XLA_FFI_DataType_F8E8M0FNU);

/* Says which header the build checked crec's layouts against (the checks are above). */
Test(xla_abi, crec_s_layouts_are_xla_s) {
  cr_log_info("replay/xla_abi.h checked against %s/xla/ffi/api/c_api.h (FFI API %d.%d)", CREC_XLA_INCLUDE_DIR,
              XLA_FFI_API_MAJOR, XLA_FFI_API_MINOR);
  cr_expect_eq(XLA_FFI_API_MAJOR, XLA_API_MAJOR);
}
