/* crec_xla_ffi_handler (crec/xla.h) against call frames built here per XLA's
 * FFI ABI (replay/xla_abi.h), with a fake XLA: its Error_Create records the
 * message, its Stream_Get counts its calls and hands back a fake stream or an
 * error. An exec whose program and last bindings are real, and whose graph is
 * absent, stands in for a recorded one: every refusal comes before the stream
 * is asked for, and none needs a GPU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h" /* Criterion, or tests/stress/inproc.h */
#include "crec/xla.h"
#include "exec_internal.h"
#include "xla_abi.h"

TestSuite(xla, .fini = crec_test_leak_check);

/* ---- the fake XLA ---- */

static struct {
  char message[2048];
  int code;
  int errors;          /* errors made */
  int stream_calls;    /* Stream_Get calls */
  int destroyed;       /* errors destroyed by the handler */
  bool stream_fails;   /* Stream_Get returns an error */
} fake;

static xla_error *const made = (xla_error *)&fake; /* what Error_Create returns: any non-NULL address */
static xla_error *const stream_error = (xla_error *)&fake.code;

static xla_error *fake_error_create(xla_error_create_args *a) {
  cr_assert_geq(a->struct_size, XLA_SIZE(xla_error_create_args, code));
  snprintf(fake.message, sizeof fake.message, "%s", a->message);
  fake.code = a->code;
  fake.errors++;
  return made;
}

static void fake_error_message(xla_error_message_args *a) {
  cr_assert_eq(a->error, stream_error);
  a->message = "no GPU stream in this test";
}

static void fake_error_destroy(xla_error_destroy_args *a) {
  cr_assert_eq(a->error, stream_error);
  fake.destroyed++;
}

static xla_error *fake_stream_get(xla_stream_args *a) {
  cr_assert_eq(a->struct_size, XLA_SIZE(xla_stream_args, stream));
  cr_assert_eq(a->ctx, (void *)&fake.stream_calls, "the handler passes the frame's context");
  fake.stream_calls++;
  if (fake.stream_fails) return stream_error;
  a->stream = (void *)0x5eed;
  return NULL;
}

static xla_api api = {
    .struct_size = XLA_SIZE(xla_api, stream_get) + 13 * sizeof(void *), /* version 0.3 has 13 more functions */
    .version = {.struct_size = XLA_SIZE(xla_version, minor), .major = 0, .minor = 3},
    .error_create = fake_error_create,
    .error_message = fake_error_message,
    .error_destroy = fake_error_destroy,
    .stream_get = fake_stream_get,
};

/* ---- call frames ---- */

#define MAX_BUFFERS 20
#define MAX_ATTRS 4

/* A call frame and everything it points to. */
typedef struct call {
  xla_frame frame;
  xla_buffer buffers[MAX_BUFFERS];
  int64_t dims[MAX_BUFFERS][4];
  void *arg_items[MAX_BUFFERS], *ret_items[MAX_BUFFERS];
  int arg_types[MAX_BUFFERS], ret_types[MAX_BUFFERS];
  size_t num_buffers;
  xla_span names[MAX_ATTRS], *name_ptrs[MAX_ATTRS];
  xla_scalar scalars[MAX_ATTRS];
  uint64_t values[MAX_ATTRS];
  int attr_types[MAX_ATTRS];
  void *attr_items[MAX_ATTRS];
} call;

/* A frame of the execute stage with no arguments, results or attributes. */
static void call_init(call *c) {
  memset(c, 0, sizeof *c);
  c->frame = (xla_frame){
      .struct_size = XLA_SIZE(xla_frame, attrs),
      .api = &api,
      .ctx = &fake.stream_calls, /* any address: Stream_Get checks it comes back */
      .stage = XLA_STAGE_EXECUTE,
      .args = {.struct_size = XLA_SIZE(xla_list, items), .types = c->arg_types, .items = c->arg_items},
      .rets = {.struct_size = XLA_SIZE(xla_list, items), .types = c->ret_types, .items = c->ret_items},
      .attrs = {.struct_size = XLA_SIZE(xla_attrs, attrs), .types = c->attr_types, .names = c->name_ptrs,
                .attrs = c->attr_items},
  };
}

/* Adds an argument (or a result) buffer of `dtype` with `rank` dims at `data`. */
static void add_buffer(call *c, bool result, int dtype, void *data, int rank, const int64_t *dims) {
  cr_assert_lt(c->num_buffers, MAX_BUFFERS);
  xla_buffer *b = &c->buffers[c->num_buffers];
  if (rank) memcpy(c->dims[c->num_buffers], dims, (size_t)rank * sizeof *dims); /* a scalar passes no dims */
  *b = (xla_buffer){.struct_size = XLA_SIZE(xla_buffer, dims), .dtype = dtype, .data = data, .rank = rank,
                    .dims = c->dims[c->num_buffers]};
  c->num_buffers++;
  xla_list *l = result ? &c->frame.rets : &c->frame.args;
  l->types[l->size] = XLA_ARG_BUFFER;
  l->items[l->size++] = b;
}

/* Adds a scalar attribute (attributes must be added in name order, as XLA sorts them). */
static void add_scalar_attr(call *c, const char *name, int dtype, uint64_t value) {
  xla_attrs *a = &c->frame.attrs;
  int64_t i = a->size++;
  cr_assert_lt(i, MAX_ATTRS);
  c->names[i] = (xla_span){name, strlen(name)};
  c->name_ptrs[i] = &c->names[i];
  c->values[i] = value;
  c->scalars[i] = (xla_scalar){dtype, &c->values[i]};
  c->attr_types[i] = XLA_ATTR_SCALAR;
  c->attr_items[i] = &c->scalars[i];
}

/* Calls the handler; returns its error (NULL or the fake's). */
static xla_error *handle(call *c) { return crec_xla_ffi_handler(&c->frame); }

/* Asserts the call failed with `code` and a message that holds each of the NULL-terminated `needles`. */
static void expect_error(xla_error *err, int code, const char *const *needles) {
  cr_assert_eq(err, made, "the handler returned %p, not the error it made", (void *)err);
  cr_assert_eq(fake.errors, 1, "%d errors made", fake.errors);
  cr_assert_eq(fake.code, code, "code %d, expected %d: %s", fake.code, code, fake.message);
  cr_assert(strncmp(fake.message, "crec_xla_ffi_handler: ", 22) == 0, "'%s' does not name the handler", fake.message);
  for (; *needles; needles++)
    cr_assert(strstr(fake.message, *needles), "'%s' does not mention '%s'", fake.message, *needles);
}
#define EXPECT_ERROR(err, code, ...) expect_error((err), (code), (const char *const[]){__VA_ARGS__, NULL})

/* ---- an exec without a graph ---- */

/* A program of `n` arguments of `size` bytes each (named a, b, c...), and an
 * exec of it last bound at those sizes: what the handler reads of a recorded
 * one. Never replayed. */
static crec_exec *fake_exec(size_t n, uint64_t size) {
  crec_exec *e = calloc(1, sizeof *e);
  cr_assert_not_null(e);
  crec_program *p;
  EXPECT_OK(crec_program_create(&p));
  e->program = p;
  e->last = calloc(n ? n : 1, sizeof *e->last);
  for (size_t i = 0; i < n; i++) {
    char name[2] = {(char)('a' + i), 0};
    crec_buffer b;
    EXPECT_OK(crec_program_add_argument(p, name, size, NULL, &b));
    e->last[i] = (crec_binding){(void *)(uintptr_t)(0x10000 * (i + 1)), size};
  }
  return e;
}

static void fake_exec_free(crec_exec *e) {
  crec_program_destroy(e->program);
  free(e->last);
  free(e);
}

static float x[16], y[16];
static const int64_t n16[] = {16}, two_by_eight[] = {2, 8};

/* ---- the metadata query and the stages ---- */

Test(xla, answers_the_metadata_query_with_its_version_and_no_traits) {
  xla_metadata md = {.struct_size = XLA_SIZE(xla_metadata, traits), .traits = 0xdead};
  xla_metadata_extension ext = {
      .base = {.struct_size = XLA_SIZE(xla_metadata_extension, metadata), .type = XLA_EXTENSION_METADATA},
      .metadata = &md};
  call c;
  call_init(&c);
  c.frame.extension_start = &ext.base; /* as XLA asks at registration: the execute stage, no buffers */
  cr_assert_null(handle(&c), "%s", fake.message);
  cr_assert_eq(md.version.major, 0);
  cr_assert_eq(md.version.minor, 1);
  cr_assert_eq(md.version.struct_size, XLA_SIZE(xla_version, minor));
  cr_assert_eq(md.traits, 0, "declares no trait (command buffers): %#x", md.traits);
  cr_assert_eq(fake.stream_calls, 0);
  cr_assert_eq(fake.errors, 0);
}

Test(xla, the_graphable_handler_declares_itself_command_buffer_compatible) {
  xla_metadata md = {.struct_size = XLA_SIZE(xla_metadata, traits), .traits = 0xdead};
  xla_metadata_extension ext = {
      .base = {.struct_size = XLA_SIZE(xla_metadata_extension, metadata), .type = XLA_EXTENSION_METADATA},
      .metadata = &md};
  call c;
  call_init(&c);
  c.frame.extension_start = &ext.base;
  cr_assert_null(crec_xla_ffi_handler_graphable(&c.frame), "%s", fake.message);
  cr_assert_eq(md.version.minor, 1);
  cr_assert_eq(md.traits, XLA_TRAIT_COMMAND_BUFFER_COMPATIBLE, "traits %#x", md.traits);
  cr_assert_eq(fake.stream_calls, 0);
}

/* What crec.jax reads to choose the graphable handler: the refusals a replay
 * into a capture would meet, named, with no CUDA call. */
Test(xla, capturable_says_which_execs_can_join_a_capture_and_why_not) {
  cr_assert_eq(crec_exec_capturable(NULL), CREC_ERR_NULL_POINTER);
  crec_exec *e = fake_exec(2, sizeof x);
  EXPECT_OK(crec_exec_capturable(e));
  e->num_conds = 1;
  cr_assert_eq(crec_exec_capturable(e), CREC_ERR_UNSUPPORTED);
  cr_assert(strstr(crec_last_error(), "crec_exec_capturable: cannot replay into a capturing stream that is traced "
                                      "into a child graph (XLA's command buffers): the exec's graph has conditional "
                                      "nodes"),
            "%s", crec_last_error());
  e->num_conds = 0;
  e->eager_only = true;
  cr_assert_eq(crec_exec_capturable(e), CREC_ERR_UNSUPPORTED);
  cr_assert(strstr(crec_last_error(), "runs eagerly"), "%s", crec_last_error());
  fake_exec_free(e);
}

Test(xla, finds_the_metadata_extension_down_the_chain_and_refuses_a_short_one) {
  xla_metadata md = {.struct_size = XLA_SIZE(xla_metadata, traits)};
  xla_metadata_extension ext = {
      .base = {.struct_size = XLA_SIZE(xla_metadata_extension, metadata), .type = XLA_EXTENSION_METADATA},
      .metadata = &md};
  xla_extension other = {.struct_size = XLA_SIZE(xla_extension, next), .type = 99, .next = &ext.base};
  call c;
  call_init(&c);
  c.frame.extension_start = &other;
  cr_assert_null(handle(&c), "%s", fake.message);
  cr_assert_eq(md.version.minor, 1);

  md.struct_size = offsetof(xla_metadata, traits); /* a metadata struct without traits */
  EXPECT_ERROR(handle(&c), XLA_CODE_INVALID_ARGUMENT, "metadata");
}

Test(xla, refuses_an_api_of_another_major_version_naming_both) {
  xla_api other = api;
  other.version.major = 1, other.version.minor = 4;
  call c;
  call_init(&c);
  c.frame.api = &other;
  EXPECT_ERROR(handle(&c), XLA_CODE_FAILED_PRECONDITION, "version 1.4", "version 0.1", "major");
  cr_assert_eq(fake.stream_calls, 0);
}

Test(xla, refuses_a_metadata_query_from_another_major_version) {
  xla_api other = api;
  other.version.major = 2;
  xla_metadata md = {.struct_size = XLA_SIZE(xla_metadata, traits)};
  xla_metadata_extension ext = {
      .base = {.struct_size = XLA_SIZE(xla_metadata_extension, metadata), .type = XLA_EXTENSION_METADATA},
      .metadata = &md};
  call c;
  call_init(&c);
  c.frame.api = &other;
  c.frame.extension_start = &ext.base;
  EXPECT_ERROR(handle(&c), XLA_CODE_FAILED_PRECONDITION, "version 2.3", "version 0.1");
  cr_assert_eq(md.version.struct_size, 0, "the metadata was written");
}

Test(xla, refuses_structs_smaller_than_the_abi_s) {
  call c;
  call_init(&c);
  c.frame.struct_size = offsetof(xla_frame, attrs); /* a frame without attributes */
  EXPECT_ERROR(handle(&c), XLA_CODE_INVALID_ARGUMENT, "XLA_FFI_CallFrame of 120 bytes", "168");

  fake.errors = 0;
  xla_api small = api;
  small.struct_size = offsetof(xla_api, stream_get); /* no Stream_Get */
  call_init(&c);
  c.frame.api = &small;
  EXPECT_ERROR(handle(&c), XLA_CODE_FAILED_PRECONDITION, "XLA_FFI_Api of 80 bytes", "88");

  fake.errors = 0;
  call_init(&c);
  add_buffer(&c, false, XLA_F32, x, 1, n16);
  c.buffers[0].struct_size = offsetof(xla_buffer, dims);
  EXPECT_ERROR(handle(&c), XLA_CODE_INVALID_ARGUMENT, "argument 0", "XLA_FFI_Buffer of 40 bytes");
  cr_assert_eq(fake.stream_calls, 0);
}

Test(xla, does_nothing_at_the_stages_before_execute) {
  const int stages[] = {XLA_STAGE_INSTANTIATE, XLA_STAGE_PREPARE, XLA_STAGE_INITIALIZE};
  for (size_t i = 0; i < 3; i++) {
    call c;
    call_init(&c);
    c.frame.stage = stages[i];
    add_buffer(&c, false, XLA_F32, x, 1, n16); /* and no exec: not read before execute */
    cr_assert_null(handle(&c), "stage %d: %s", stages[i], fake.message);
  }
  cr_assert_eq(fake.stream_calls, 0);
  cr_assert_eq(fake.errors, 0);
}

/* ---- the exec attribute ---- */

Test(xla, refuses_a_call_without_the_exec_attribute_naming_those_it_has) {
  call c;
  call_init(&c);
  add_buffer(&c, false, XLA_F32, x, 1, n16);
  EXPECT_ERROR(handle(&c), XLA_CODE_INVALID_ARGUMENT, "no attribute 'exec'", "np.uint64", "attributes: none");

  fake.errors = 0;
  add_scalar_attr(&c, "address", XLA_U64, 0x1000);
  add_scalar_attr(&c, "execs", XLA_U64, 0x1000);
  EXPECT_ERROR(handle(&c), XLA_CODE_INVALID_ARGUMENT, "no attribute 'exec'", "'address', 'execs'");
  cr_assert_eq(fake.stream_calls, 0);
}

Test(xla, refuses_a_null_exec_naming_the_buffers_it_was_given) {
  call c;
  call_init(&c);
  add_buffer(&c, false, XLA_F32, x, 1, n16);
  add_buffer(&c, false, XLA_S8, x, 0, NULL);
  add_buffer(&c, true, XLA_BF16, y, 2, two_by_eight);
  add_scalar_attr(&c, "exec", XLA_U64, 0);
  EXPECT_ERROR(handle(&c), XLA_CODE_INVALID_ARGUMENT, "'exec' is 0 (NULL)",
               "2 arguments (f32[16], s8[]) and 1 result (bf16[2,8])");
  cr_assert_eq(fake.stream_calls, 0);
}

Test(xla, refuses_an_exec_attribute_of_another_type) {
  call c;
  call_init(&c);
  add_scalar_attr(&c, "exec", XLA_F32, 0x3f800000);
  EXPECT_ERROR(handle(&c), XLA_CODE_INVALID_ARGUMENT, "'exec' is a scalar of f32", "int64 or uint64");

  fake.errors = 0;
  c.attr_types[0] = XLA_ATTR_STRING;
  EXPECT_ERROR(handle(&c), XLA_CODE_INVALID_ARGUMENT, "'exec' is a string");
  cr_assert_eq(fake.stream_calls, 0);
}

/* ---- the buffers against the exec ---- */

Test(xla, refuses_a_count_that_differs_from_the_program_s) {
  crec_exec *e = fake_exec(3, sizeof x);
  call c;
  call_init(&c);
  add_buffer(&c, false, XLA_F32, x, 1, n16);
  add_buffer(&c, true, XLA_F32, y, 1, n16);
  add_scalar_attr(&c, "exec", XLA_S64, (uint64_t)(uintptr_t)e); /* int64 works as well as uint64 */
  EXPECT_ERROR(handle(&c), XLA_CODE_INVALID_ARGUMENT, "1 argument (f32[16]) and 1 result (f32[16])", "2 buffers",
               "program has 3 arguments");
  cr_assert_eq(fake.stream_calls, 0);
  fake_exec_free(e);
}

Test(xla, refuses_a_buffer_smaller_than_its_binding_naming_it) {
  crec_exec *e = fake_exec(2, sizeof x);
  call c;
  call_init(&c);
  add_buffer(&c, false, XLA_F32, x, 1, n16);
  add_buffer(&c, true, XLA_F16, y, 1, n16); /* 32 bytes, where the exec was bound with 64 */
  add_scalar_attr(&c, "exec", XLA_U64, (uint64_t)(uintptr_t)e);
  EXPECT_ERROR(handle(&c), XLA_CODE_INVALID_ARGUMENT, "result 0 (f16[16]) binds program argument 1 ('b')",
               "32 bytes given, 64 needed");
  cr_assert_eq(fake.stream_calls, 0);

  /* sub-byte elements count what they hold at least: 16 u4 are 8 bytes */
  fake.errors = 0;
  c.buffers[1].dtype = XLA_U4;
  EXPECT_ERROR(handle(&c), XLA_CODE_INVALID_ARGUMENT, "result 0 (u4[16])", "8 bytes given, 64 needed");
  fake_exec_free(e);
}

Test(xla, refuses_what_is_not_a_buffer_of_a_known_type) {
  crec_exec *e = fake_exec(1, sizeof x);
  call c;
  call_init(&c);
  add_buffer(&c, false, XLA_TOKEN, x, 0, NULL);
  add_scalar_attr(&c, "exec", XLA_U64, (uint64_t)(uintptr_t)e);
  EXPECT_ERROR(handle(&c), XLA_CODE_INVALID_ARGUMENT, "argument 0 is a token");

  fake.errors = 0;
  c.buffers[0].dtype = 77;
  EXPECT_ERROR(handle(&c), XLA_CODE_INVALID_ARGUMENT, "argument 0 has element type 77");

  fake.errors = 0;
  c.buffers[0].dtype = XLA_F32;
  c.arg_types[0] = 2;
  EXPECT_ERROR(handle(&c), XLA_CODE_INVALID_ARGUMENT, "argument 0 is not a buffer");
  cr_assert_eq(fake.stream_calls, 0);
  fake_exec_free(e);
}

Test(xla, asks_for_the_stream_once_every_check_passed_and_passes_its_error_on) {
  crec_exec *e = fake_exec(2, sizeof x);
  call c;
  call_init(&c);
  add_buffer(&c, false, XLA_F32, x, 1, n16);
  add_buffer(&c, true, XLA_F32, y, 2, two_by_eight); /* a larger or differently shaped buffer is fine */
  add_scalar_attr(&c, "exec", XLA_U64, (uint64_t)(uintptr_t)e);
  fake.stream_fails = true; /* so that the exec without a graph is never replayed */
  EXPECT_ERROR(handle(&c), XLA_CODE_INTERNAL, "XLA_FFI_Stream_Get failed: no GPU stream in this test");
  cr_assert_eq(fake.stream_calls, 1);
  cr_assert_eq(fake.destroyed, 1, "XLA's error was not destroyed");
  fake_exec_free(e);
}

Test(xla, many_buffers_are_checked_as_a_few) {
  enum { N = 18 }; /* more than the handler keeps on its stack (16) */
  static float bufs[N][16];
  crec_exec *e = fake_exec(N + 1, sizeof x);
  call c;
  call_init(&c);
  for (int i = 0; i < N; i++) add_buffer(&c, i >= N / 2, XLA_F32, bufs[i], 1, n16);
  add_scalar_attr(&c, "exec", XLA_U64, (uint64_t)(uintptr_t)e);
  EXPECT_ERROR(handle(&c), XLA_CODE_INVALID_ARGUMENT, "9 arguments (f32[16]", "9 results", "18 buffers",
               "program has 19 arguments");
  fake_exec_free(e);
}
