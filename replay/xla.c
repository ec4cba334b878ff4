/* crec_xla_ffi_handler (crec/xla.h): an exec replayed as XLA's typed FFI
 * custom call, on XLA's stream, with XLA's buffers (arguments, then results)
 * as the program's arguments. The ABI it speaks is declared in xla_abi.h.
 *
 * Every check runs before the stream is asked for, and none calls CUDA, so
 * that tests/test_xla.c drives each refusal with a fake XLA and a fake exec. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crec/exec.h"
#include "crec/inspect.h"
#include "crec/status.h"
#include "crec/xla.h"
#include "exec_internal.h"
#include "xla_abi.h"

/* The layouts of xla/ffi/api/c_api.h on LP64, as its own header gives them
 * (XLA_FFI_*_STRUCT_SIZE and offsetof, printed by a probe compiled against the
 * header jaxlib 0.10.2 ships): a slip in xla_abi.h fails the build. */
_Static_assert(sizeof(void *) == 8, "the XLA FFI layouts below are LP64's");
_Static_assert(XLA_SIZE(xla_frame, attrs) == 168, "XLA_FFI_CallFrame_STRUCT_SIZE");
_Static_assert(offsetof(xla_frame, stage) == 32 && offsetof(xla_frame, args) == 40 &&
                   offsetof(xla_frame, rets) == 80 && offsetof(xla_frame, attrs) == 120,
               "XLA_FFI_CallFrame's fields");
_Static_assert(XLA_SIZE(xla_list, items) == 40, "XLA_FFI_Args_STRUCT_SIZE, XLA_FFI_Rets_STRUCT_SIZE");
_Static_assert(XLA_SIZE(xla_attrs, attrs) == 48, "XLA_FFI_Attrs_STRUCT_SIZE");
_Static_assert(XLA_SIZE(xla_buffer, dims) == 48 && offsetof(xla_buffer, data) == 24, "XLA_FFI_Buffer");
_Static_assert(XLA_SIZE(xla_stream_args, stream) == 32, "XLA_FFI_Stream_Get_Args_STRUCT_SIZE");
_Static_assert(XLA_SIZE(xla_error_create_args, code) == 28, "XLA_FFI_Error_Create_Args_STRUCT_SIZE");
_Static_assert(XLA_SIZE(xla_error_message_args, message) == 32, "XLA_FFI_Error_GetMessage_Args_STRUCT_SIZE");
_Static_assert(XLA_SIZE(xla_error_destroy_args, error) == 24, "XLA_FFI_Error_Destroy_Args_STRUCT_SIZE");
_Static_assert(offsetof(xla_api, version) == 16 && offsetof(xla_api, error_create) == 48 &&
                   offsetof(xla_api, stream_get) == 80,
               "XLA_FFI_Api's fields");
_Static_assert(XLA_SIZE(xla_version, minor) == 24, "XLA_FFI_Api_Version_STRUCT_SIZE");
_Static_assert(XLA_SIZE(xla_metadata, traits) == 36 && offsetof(xla_metadata, traits) == 32,
               "XLA_FFI_Metadata_STRUCT_SIZE");
_Static_assert(XLA_SIZE(xla_metadata_extension, metadata) == 32, "XLA_FFI_Metadata_Extension_STRUCT_SIZE");
_Static_assert(XLA_SIZE(xla_extension, next) == 24, "XLA_FFI_Extension_Base_STRUCT_SIZE");
_Static_assert(sizeof(xla_scalar) == 16, "XLA_FFI_Scalar");

static const char fn[] = "crec_xla_ffi_handler";

/* The api's Error_Create, given a message formatted here (XLA copies it). */
static xla_error *fail(const xla_api *api, int code, const char *fmt, ...) {
  char msg[1536];
  int n = snprintf(msg, sizeof msg, "%s: ", fn);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, ap);
  va_end(ap);
  xla_error_create_args a = {.struct_size = XLA_SIZE(xla_error_create_args, code), .message = msg, .code = code};
  return api->error_create(&a);
}

/* An element type's name and width in bits (0: not an array element crec binds). */
static const char *dtype_name(int dtype, unsigned *bits) {
  static const struct {
    int dtype;
    unsigned bits;
    const char *name;
  } types[] = {
      {XLA_PRED, 8, "pred"},        {XLA_S8, 8, "s8"},
      {XLA_S16, 16, "s16"},         {XLA_S32, 32, "s32"},
      {XLA_S64, 64, "s64"},         {XLA_U8, 8, "u8"},
      {XLA_U16, 16, "u16"},         {XLA_U32, 32, "u32"},
      {XLA_U64, 64, "u64"},         {XLA_F16, 16, "f16"},
      {XLA_F32, 32, "f32"},         {XLA_F64, 64, "f64"},
      {XLA_C64, 64, "c64"},         {XLA_BF16, 16, "bf16"},
      {XLA_C128, 128, "c128"},      {XLA_F8E5M2, 8, "f8e5m2"},
      {XLA_F8E4M3FN, 8, "f8e4m3fn"}, {XLA_F8E4M3B11FNUZ, 8, "f8e4m3b11fnuz"},
      {XLA_F8E5M2FNUZ, 8, "f8e5m2fnuz"}, {XLA_F8E4M3FNUZ, 8, "f8e4m3fnuz"},
      {XLA_F8E4M3, 8, "f8e4m3"},    {XLA_F8E3M4, 8, "f8e3m4"},
      {XLA_F8E8M0FNU, 8, "f8e8m0fnu"},
      /* sub-byte types: XLA may pack them; the width here is the least a buffer can hold */
      {XLA_S4, 4, "s4"},            {XLA_U4, 4, "u4"},
      {XLA_F4E2M1FN, 4, "f4e2m1fn"}, {XLA_S2, 2, "s2"},
      {XLA_U2, 2, "u2"},            {XLA_S1, 1, "s1"},
      {XLA_U1, 1, "u1"},
  };
  for (size_t i = 0; i < sizeof types / sizeof *types; i++)
    if (types[i].dtype == dtype) return *bits = types[i].bits, types[i].name;
  *bits = 0;
  return dtype == XLA_TOKEN ? "token" : NULL;
}

/* One argument or result as the handler sees it. */
typedef struct slot {
  const xla_buffer *b;
  uint64_t bytes; /* what it holds at least */
  char shape[96]; /* "f32[8,128]" */
} slot;

/* Reads `list`'s item `i` (a buffer) into `s`; `what` is "argument" or "result". */
static xla_error *read_slot(const xla_api *api, const xla_list *list, int64_t i, const char *what, slot *s) {
  if (list->types[i] != XLA_ARG_BUFFER) /* XLA_RET_BUFFER has the same value */
    return fail(api, XLA_CODE_INVALID_ARGUMENT, "%s %" PRId64 " is not a buffer (type %d): crec binds buffers alone",
                what, i, list->types[i]);
  const xla_buffer *b = list->items[i];
  if (!b || b->struct_size < XLA_SIZE(xla_buffer, dims))
    return fail(api, XLA_CODE_INVALID_ARGUMENT, "%s %" PRId64 ": an XLA_FFI_Buffer of %zu bytes, at least %zu expected",
                what, i, b ? b->struct_size : 0, XLA_SIZE(xla_buffer, dims));
  unsigned bits;
  const char *name = dtype_name(b->dtype, &bits);
  if (!bits && name)
    return fail(api, XLA_CODE_INVALID_ARGUMENT, "%s %" PRId64 " is a %s, which crec cannot bind", what, i, name);
  if (!bits)
    return fail(api, XLA_CODE_INVALID_ARGUMENT, "%s %" PRId64 " has element type %d, which crec does not know", what,
                i, b->dtype);
  if (b->rank < 0 || (b->rank && !b->dims))
    return fail(api, XLA_CODE_INVALID_ARGUMENT, "%s %" PRId64 " has rank %" PRId64 " and %s dims", what, i, b->rank,
                b->dims ? "some" : "no");
  s->b = b;
  uint64_t elements = 1;
  int n = snprintf(s->shape, sizeof s->shape, "%s[", name);
  for (int64_t d = 0; d < b->rank; d++) {
    if (b->dims[d] < 0 || (b->dims[d] && elements > UINT64_MAX / 8 / (uint64_t)b->dims[d]))
      return fail(api, XLA_CODE_INVALID_ARGUMENT, "%s %" PRId64 ": dimension %" PRId64 " is %" PRId64, what, i, d,
                  b->dims[d]);
    elements *= (uint64_t)b->dims[d];
    if (n < (int)sizeof s->shape)
      n += snprintf(s->shape + n, sizeof s->shape - (size_t)n, "%s%" PRId64, d ? "," : "", b->dims[d]);
  }
  if (n < (int)sizeof s->shape) snprintf(s->shape + n, sizeof s->shape - (size_t)n, "]");
  s->bytes = (elements * bits + 7) / 8;
  return NULL;
}

/* The metadata query (XLA makes it at registration): the version this handler
 * was built for, and `traits`. NULL when `ext` is no such query. */
static xla_error *answer_metadata(const xla_api *api, xla_extension *ext, uint32_t traits, bool *answered) {
  *answered = false;
  for (; ext; ext = ext->next) {
    if (ext->struct_size < XLA_SIZE(xla_extension, next))
      return fail(api, XLA_CODE_INVALID_ARGUMENT, "an XLA_FFI_Extension_Base of %zu bytes, at least %zu expected",
                  ext->struct_size, XLA_SIZE(xla_extension, next));
    if (ext->type != XLA_EXTENSION_METADATA) continue;
    xla_metadata_extension *m = (xla_metadata_extension *)ext;
    if (ext->struct_size < XLA_SIZE(xla_metadata_extension, metadata) || !m->metadata ||
        m->metadata->struct_size < XLA_SIZE(xla_metadata, traits))
      return fail(api, XLA_CODE_INVALID_ARGUMENT,
                  "the metadata query's structs are smaller than XLA FFI API %d.%d's (extension %zu bytes, "
                  "metadata %zu)",
                  XLA_API_MAJOR, XLA_API_MINOR, ext->struct_size, m->metadata ? m->metadata->struct_size : 0);
    m->metadata->version = (xla_version){.struct_size = XLA_SIZE(xla_version, minor), .major = XLA_API_MAJOR,
                                         .minor = XLA_API_MINOR};
    m->metadata->traits = traits;
    *answered = true;
    return NULL;
  }
  return NULL;
}

/* The `exec` attribute: NULL and *e set, or an error. */
static xla_error *find_exec(const xla_api *api, const xla_attrs *attrs, crec_exec **e) {
  *e = NULL;
  char seen[256] = "";
  size_t n = 0;
  for (int64_t i = 0; i < attrs->size; i++) {
    const xla_span *name = attrs->names[i];
    if (!name) continue;
    if (name->len == 4 && !memcmp(name->ptr, "exec", 4)) {
      const xla_scalar *s = attrs->attrs[i];
      if (attrs->types[i] != XLA_ATTR_SCALAR || !s || !s->value || (s->dtype != XLA_S64 && s->dtype != XLA_U64)) {
        unsigned bits;
        const char *dt = attrs->types[i] == XLA_ATTR_SCALAR && s ? dtype_name(s->dtype, &bits) : NULL;
        static const char *const kinds[] = {"?", "an array", "a dictionary", "a scalar", "a string"};
        int t = attrs->types[i];
        return fail(api, XLA_CODE_INVALID_ARGUMENT,
                    "attribute 'exec' is %s%s%s, not an int64 or uint64 scalar (the address of a crec_exec: "
                    "exec=np.uint64(address))",
                    t >= 1 && t <= 4 ? kinds[t] : "of an unknown kind", dt ? " of " : "", dt ? dt : "");
      }
      uint64_t address;
      memcpy(&address, s->value, sizeof address);
      if (!address) return NULL; /* the caller names the buffers it was given */
      *e = (crec_exec *)(uintptr_t)address;
      return NULL;
    }
    if (n < sizeof seen)
      n += (size_t)snprintf(seen + n, sizeof seen - n, "%s'%.*s'", n ? ", " : "", (int)name->len, name->ptr);
  }
  return fail(api, XLA_CODE_INVALID_ARGUMENT,
              "no attribute 'exec' (the address of a crec_exec, as an int64 or uint64 scalar: "
              "exec=np.uint64(address)); the call's attributes: %s",
              n ? seen : "none");
}

/* "2 arguments (f32[4096], f32[4096]) and 1 result (f32[4096])", for messages. */
static void describe_call(const slot *slots, int64_t nargs, int64_t nrets, char *out, size_t size) {
  size_t n = 0;
  for (int part = 0; part < 2 && n < size; part++) {
    int64_t count = part ? nrets : nargs, first = part ? nargs : 0;
    n += (size_t)snprintf(out + n, size - n, "%s%" PRId64 " %s%s%s", part ? " and " : "", count,
                          part ? "result" : "argument", count == 1 ? "" : "s", count ? " (" : "");
    for (int64_t i = 0; i < count && n < size; i++)
      n += (size_t)snprintf(out + n, size - n, "%s%s", i ? ", " : "", slots[first + i].shape);
    if (count && n < size) n += (size_t)snprintf(out + n, size - n, ")");
  }
}

/* The XLA code for a crec status. */
static int code_of(crec_status s) {
  switch (s) {
  case CREC_ERR_INVALID_ARGUMENT:
  case CREC_ERR_NULL_POINTER:
  case CREC_ERR_INVALID_HANDLE:
  case CREC_ERR_MISALIGNED:
  case CREC_ERR_TYPE_MISMATCH:
  case CREC_ERR_BINDING:
    return XLA_CODE_INVALID_ARGUMENT;
  case CREC_ERR_OUT_OF_RANGE:
  case CREC_ERR_TOO_LARGE:
    return XLA_CODE_OUT_OF_RANGE;
  case CREC_ERR_OUT_OF_MEMORY:
  case CREC_ERR_DEVICE_OUT_OF_MEMORY:
    return XLA_CODE_RESOURCE_EXHAUSTED;
  case CREC_ERR_NO_DEVICE:
    return XLA_CODE_UNAVAILABLE;
  case CREC_ERR_UNSUPPORTED:
    return XLA_CODE_UNIMPLEMENTED;
  case CREC_ERR_NOT_FOUND:
    return XLA_CODE_NOT_FOUND;
  case CREC_ERR_TIMEOUT:
    return XLA_CODE_DEADLINE_EXCEEDED;
  case CREC_ERR_LOOP_LIMIT:
    return XLA_CODE_ABORTED;
  default:
    return XLA_CODE_INTERNAL;
  }
}

/* The execute stage: checks, the stream, the replay. */
static xla_error *execute(const xla_frame *f) {
  const xla_api *api = f->api;
  if (f->args.struct_size < XLA_SIZE(xla_list, items) || f->rets.struct_size < XLA_SIZE(xla_list, items) ||
      f->attrs.struct_size < XLA_SIZE(xla_attrs, attrs))
    return fail(api, XLA_CODE_INVALID_ARGUMENT,
                "XLA_FFI_Args, XLA_FFI_Rets and XLA_FFI_Attrs of %zu, %zu and %zu bytes; at least %zu, %zu and %zu "
                "expected",
                f->args.struct_size, f->rets.struct_size, f->attrs.struct_size, XLA_SIZE(xla_list, items),
                XLA_SIZE(xla_list, items), XLA_SIZE(xla_attrs, attrs));
  int64_t nargs = f->args.size, nrets = f->rets.size;
  if (nargs < 0 || nrets < 0 || nargs > (1 << 20) || nrets > (1 << 20))
    return fail(api, XLA_CODE_INVALID_ARGUMENT, "%" PRId64 " arguments and %" PRId64 " results", nargs, nrets);
  size_t count = (size_t)(nargs + nrets);
  enum { FEW = 16 }; /* most calls: no allocation */
  slot few[FEW];
  void *few_ptrs[FEW];
  slot *slots = count <= FEW ? few : malloc(count * sizeof *slots);
  void **ptrs = count <= FEW ? few_ptrs : malloc(count * sizeof *ptrs);
  xla_error *err = NULL;
  if (!slots || !ptrs) {
    err = fail(api, XLA_CODE_RESOURCE_EXHAUSTED, "no memory for %zu buffers", count);
    goto done;
  }
  for (size_t i = 0; i < count && !err; i++) {
    bool ret = i >= (size_t)nargs;
    err = read_slot(api, ret ? &f->rets : &f->args, ret ? (int64_t)i - nargs : (int64_t)i, ret ? "result" : "argument",
                    &slots[i]);
    if (!err) ptrs[i] = slots[i].b->data;
  }
  if (err) goto done;

  crec_exec *e;
  if ((err = find_exec(api, &f->attrs, &e))) goto done;
  char call[640];
  if (!e) {
    describe_call(slots, nargs, nrets, call, sizeof call);
    err = fail(api, XLA_CODE_INVALID_ARGUMENT,
               "attribute 'exec' is 0 (NULL), not the address of a crec_exec; the call has %s", call);
    goto done;
  }
  const crec_program *p = e->program;
  size_t want = crec_program_argument_count(p);
  if (count != want) {
    describe_call(slots, nargs, nrets, call, sizeof call);
    err = fail(api, XLA_CODE_INVALID_ARGUMENT,
               "the call has %s: %zu buffers, but the exec's program has %zu arguments (bound in order: the call's "
               "arguments, then its results)",
               call, count, want);
    goto done;
  }
  for (size_t i = 0; i < count; i++) {
    uint64_t need = e->last[i].size; /* what crec_exec_replay_buffers binds it with */
    if (slots[i].bytes >= need) continue;
    crec_buffer_info info = {0};
    crec_buffer_get_info(p, crec_program_argument(p, i), &info);
    bool ret = i >= (size_t)nargs;
    err = fail(api, XLA_CODE_INVALID_ARGUMENT,
               "%s %zu (%s) binds program argument %zu ('%s'): %" PRIu64 " bytes given, %" PRIu64 " needed",
               ret ? "result" : "argument", ret ? i - (size_t)nargs : i, slots[i].shape, i,
               info.name ? info.name : "?", slots[i].bytes, need);
    goto done;
  }

  xla_stream_args sa = {.struct_size = XLA_SIZE(xla_stream_args, stream), .ctx = f->ctx};
  xla_error *serr = api->stream_get(&sa);
  if (serr) {
    xla_error_message_args ma = {.struct_size = XLA_SIZE(xla_error_message_args, message), .error = serr};
    api->error_message(&ma);
    err = fail(api, XLA_CODE_INTERNAL, "XLA_FFI_Stream_Get failed: %s", ma.message ? ma.message : "(no message)");
    xla_error_destroy_args da = {.struct_size = XLA_SIZE(xla_error_destroy_args, error), .error = serr};
    api->error_destroy(&da);
    goto done;
  }
  crec_status s = crec_exec_replay_buffers(e, ptrs, count, (crec_stream)sa.stream);
  if (s)
    err = fail(api, code_of(s), "crec_exec_replay_buffers failed (CREC_%s): %s", crec_status_name(s),
               crec_last_error());
done:
  if (slots != few) free(slots);
  if (ptrs != few_ptrs) free(ptrs);
  return err;
}

static void *handle(void *call_frame, uint32_t traits) {
  xla_frame *f = call_frame;
  /* without the api there is no way to make an error: XLA always passes both */
  if (!f || !f->api) return NULL;
  const xla_api *api = f->api;
  if (api->struct_size < XLA_SIZE(xla_api, error_create)) return NULL;
  if (api->struct_size < XLA_SIZE(xla_api, stream_get))
    return fail(api, XLA_CODE_FAILED_PRECONDITION,
                "an XLA_FFI_Api of %zu bytes, at least %zu expected (XLA FFI API %d.%d)", api->struct_size,
                XLA_SIZE(xla_api, stream_get), XLA_API_MAJOR, XLA_API_MINOR);
  /* another major version may lay out everything else differently: only
   * Error_Create, at the same place in every version so far, is called */
  if (api->version.major != XLA_API_MAJOR)
    return fail(api, XLA_CODE_FAILED_PRECONDITION,
                "XLA's FFI API is version %d.%d, crec speaks version %d.%d: the major versions differ",
                api->version.major, api->version.minor, XLA_API_MAJOR, XLA_API_MINOR);
  if (f->struct_size < XLA_SIZE(xla_frame, attrs))
    return fail(api, XLA_CODE_INVALID_ARGUMENT, "an XLA_FFI_CallFrame of %zu bytes, at least %zu expected",
                f->struct_size, XLA_SIZE(xla_frame, attrs));
  bool answered;
  xla_error *err = answer_metadata(api, f->extension_start, traits, &answered);
  if (err || answered) return err;
  /* instantiate, prepare, initialize: nothing to set up (the exec is recorded) */
  if (f->stage != XLA_STAGE_EXECUTE) return NULL;
  return execute(f);
}

/* plain: XLA calls it at each run, even with command buffers on */
void *crec_xla_ffi_handler(void *call_frame) { return handle(call_frame, 0); }

/* command-buffer compatible: with command buffers on, XLA captures the call into
 * its own graph, and the replay joins that capture (crec_exec_replay()) */
void *crec_xla_ffi_handler_graphable(void *call_frame) {
  return handle(call_frame, XLA_TRAIT_COMMAND_BUFFER_COMPATIBLE);
}
