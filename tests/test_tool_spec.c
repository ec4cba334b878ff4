/* Input SPECs, scalar values, element conversions, and the printed checksum
 * and first elements of a buffer. */
#include <math.h>
#include <string.h>

#include "test_tool.h"

/* Generates `count` elements of `element` from `text` into `dst`; asserts success. */
static void generate(const char *text, crec_element element, void *dst, size_t count) {
  crec_tool_spec s;
  crec_tool_diag d = {{0}, {0}, false, false};
  cr_assert_eq(crec_tool_spec_parse(text, &s, &d), 0, "'%s': %s", text, d.message);
  cr_assert_eq(crec_tool_spec_generate(&s, element, dst, count * crec_element_size(element), &d), 0, "'%s': %s",
               text, d.message);
}

/* Asserts that `text` fails (at parse or generate time) with a message containing `needle`. */
static void expect_bad(const char *text, crec_element element, const char *needle) {
  crec_tool_spec s;
  crec_tool_diag d = {{0}, {0}, false, false};
  unsigned char buf[64];
  int rc = crec_tool_spec_parse(text, &s, &d);
  if (rc == 0) rc = crec_tool_spec_generate(&s, element, buf, 4 * crec_element_size(element), &d);
  cr_assert_eq(rc, -1, "'%s' was accepted for %s", text, crec_element_name(element));
  cr_assert(strstr(d.message, needle), "'%s': message '%s' does not mention '%s'", text, d.message, needle);
}

Test(tool_spec, fill_writes_every_element_in_its_type) {
  int8_t i8[4];
  generate("fill:-5", CREC_ELEMENT_I8, i8, 4);
  for (int i = 0; i < 4; i++) cr_assert_eq(i8[i], -5);
  generate("fill:255", CREC_ELEMENT_I8, i8, 4); /* the unsigned range is a bit pattern */
  cr_assert_eq((uint8_t)i8[3], 255);
  int16_t i16[4];
  generate("fill:0x7fff", CREC_ELEMENT_I16, i16, 4);
  cr_assert_eq(i16[2], 32767);
  int32_t i32[4];
  generate("fill:-2147483648", CREC_ELEMENT_I32, i32, 4);
  cr_assert_eq(i32[0], INT32_MIN);
  int64_t i64[4];
  generate("fill:9223372036854775807", CREC_ELEMENT_I64, i64, 4);
  cr_assert_eq(i64[1], INT64_MAX);
  generate("fill:0xffffffffffffffff", CREC_ELEMENT_I64, i64, 4);
  cr_assert_eq(i64[1], -1);
  float f32[4];
  generate("fill:1.5", CREC_ELEMENT_F32, f32, 4);
  for (int i = 0; i < 4; i++) cr_assert_eq(f32[i], 1.5f);
  generate("fill:7", CREC_ELEMENT_F32, f32, 4); /* an integer is fine for floats */
  cr_assert_eq(f32[3], 7.0f);
  generate("fill:-inf", CREC_ELEMENT_F32, f32, 4);
  cr_assert(isinf(f32[0]) && f32[0] < 0);
  double f64[4];
  generate("fill:1e-300", CREC_ELEMENT_F64, f64, 4);
  cr_assert_eq(f64[2], 1e-300);
  uint16_t h[4];
  generate("fill:0.5", CREC_ELEMENT_F16, h, 4);
  cr_assert_eq(h[0], 0x3800);
  generate("fill:0.5", CREC_ELEMENT_BF16, h, 4);
  cr_assert_eq(h[3], 0x3f00);
  unsigned char bytes[4];
  generate("fill:0xab", CREC_ELEMENT_BYTES, bytes, 4);
  cr_assert_eq(bytes[1], 0xab);
}

Test(tool_spec, iota_counts_from_zero_and_integers_wrap) {
  int8_t i8[300];
  generate("iota", CREC_ELEMENT_I8, i8, 300);
  cr_assert_eq(i8[5], 5);
  cr_assert_eq(i8[200], (int8_t)200);
  cr_assert_eq(i8[299], 299 - 256);
  int64_t i64[10];
  generate("iota", CREC_ELEMENT_I64, i64, 10);
  cr_assert_eq(i64[9], 9);
  float f32[1000];
  generate("iota", CREC_ELEMENT_F32, f32, 1000);
  cr_assert_eq(f32[0], 0.0f);
  cr_assert_eq(f32[999], 999.0f);
  uint16_t h[3000];
  generate("iota", CREC_ELEMENT_F16, h, 3000);
  cr_assert_eq(crec_tool_f16_to_f32(h[1000]), 1000.0f);
  cr_assert_eq(crec_tool_f16_to_f32(h[2049]), 2048.0f); /* 2049 is not a half: rounds to even */
  double f64[4];
  generate("iota", CREC_ELEMENT_F64, f64, 4);
  cr_assert_eq(f64[3], 3.0);
}

Test(tool_spec, random_is_reproducible_and_in_range) {
  float a[4096], b[4096], c[4096];
  generate("random:7", CREC_ELEMENT_F32, a, 4096);
  generate("random:7", CREC_ELEMENT_F32, b, 4096);
  generate("random:8", CREC_ELEMENT_F32, c, 4096);
  cr_assert_arr_eq(a, b, sizeof a, "the same seed gave different data");
  cr_assert(memcmp(a, c, sizeof a) != 0, "different seeds gave the same data");
  float lo = 1, hi = -1;
  double sum = 0;
  for (int i = 0; i < 4096; i++) {
    cr_assert(a[i] >= -1.0f && a[i] < 1.0f, "element %d is %g", i, (double)a[i]);
    lo = a[i] < lo ? a[i] : lo;
    hi = a[i] > hi ? a[i] : hi;
    sum += a[i];
  }
  cr_assert(lo < -0.9f && hi > 0.9f, "range [%g, %g] does not cover [-1, 1)", (double)lo, (double)hi);
  cr_assert(fabs(sum / 4096) < 0.1, "mean %g is not near 0", sum / 4096);
  uint32_t u[1024];
  generate("random:0x10", CREC_ELEMENT_I32, u, 1024);
  uint32_t any_high = 0;
  for (int i = 0; i < 1024; i++) any_high |= u[i];
  cr_assert_eq(any_high, 0xffffffffu, "integers do not use every bit");
}

Test(tool_spec, a_file_gives_its_bytes_exactly) {
  float data[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  const char *path = tool_temp_file("in.bin", data, sizeof data);
  float got[8];
  generate(path, CREC_ELEMENT_F32, got, 8);
  cr_assert_arr_eq(got, data, sizeof data);
  crec_tool_spec s;
  crec_tool_diag d;
  cr_assert_eq(crec_tool_spec_parse(path, &s, &d), 0);
  uint64_t size;
  cr_assert_eq(crec_tool_spec_file_size(&s, &size, &d), 0);
  cr_assert_eq(size, sizeof data);
  /* a buffer of another size */
  float bigger[16];
  cr_assert_eq(crec_tool_spec_generate(&s, CREC_ELEMENT_F32, bigger, sizeof bigger, &d), -1);
  cr_assert(strstr(d.message, "has 32 bytes, but the buffer has 64"), "%s", d.message);
}

Test(tool_spec, bad_specs_say_why) {
  expect_bad("", CREC_ELEMENT_F32, "empty SPEC");
  expect_bad("fill:abc", CREC_ELEMENT_F32, "fill value 'abc' is not a number");
  expect_bad("fill:", CREC_ELEMENT_F32, "fill value '' is not a number");
  expect_bad("fill:1.5x", CREC_ELEMENT_F32, "is not a number");
  expect_bad("fill:1.5", CREC_ELEMENT_I32, "fill value 1.5 is not an integer, but the buffer holds i32 elements");
  expect_bad("fill:256", CREC_ELEMENT_I8, "fill value 256 does not fit in i8 elements");
  expect_bad("fill:-129", CREC_ELEMENT_I8, "does not fit in i8");
  expect_bad("fill:70000", CREC_ELEMENT_I16, "does not fit in i16");
  expect_bad("fill:0x100000000", CREC_ELEMENT_I32, "does not fit in i32");
  expect_bad("fill:1e39", CREC_ELEMENT_F32, "does not fit in f32");
  expect_bad("fill:1e39", CREC_ELEMENT_F16, "does not fit in f16");
  expect_bad("fill:1e999", CREC_ELEMENT_F64, "out of range");
  expect_bad("fill:99999999999999999999", CREC_ELEMENT_I64, "out of range");
  expect_bad("fill", CREC_ELEMENT_F32, "'fill' needs a value: fill:V");
  expect_bad("random", CREC_ELEMENT_F32, "'random' needs a value: random:SEED");
  expect_bad("random:", CREC_ELEMENT_F32, "random seed '' is not an unsigned 64-bit integer");
  expect_bad("random:-1", CREC_ELEMENT_F32, "random seed '-1'");
  expect_bad("random:x", CREC_ELEMENT_F32, "random seed 'x'");
  expect_bad("iota:3", CREC_ELEMENT_F32, "neither fill:V, iota, random:SEED nor a readable file");
  expect_bad("/no/such/file.bin", CREC_ELEMENT_F32, "'/no/such/file.bin' is neither");
  expect_bad(tool_temp_dir(), CREC_ELEMENT_F32, "is not a regular file");
}

Test(tool_spec, half_precision_conversions_round_to_nearest_even) {
  cr_assert_eq(crec_tool_f32_to_f16(1.0f), 0x3c00);
  cr_assert_eq(crec_tool_f32_to_f16(-2.0f), 0xc000);
  cr_assert_eq(crec_tool_f32_to_f16(65504.0f), 0x7bff);
  cr_assert_eq(crec_tool_f32_to_f16(65520.0f), 0x7c00); /* rounds up to infinity */
  cr_assert_eq(crec_tool_f32_to_f16(0x1p-24f), 0x0001); /* the smallest subnormal */
  cr_assert_eq(crec_tool_f32_to_f16(0x1p-26f), 0x0000);
  cr_assert_eq(crec_tool_f32_to_f16(2049.0f), 0x6800);  /* tie: to even (2048) */
  cr_assert_eq(crec_tool_f32_to_f16(2051.0f), 0x6802);  /* tie: to even (2052) */
  cr_assert_eq(crec_tool_f32_to_f16(INFINITY), 0x7c00);
  cr_assert((crec_tool_f32_to_f16(NAN) & 0x7c00) == 0x7c00 && (crec_tool_f32_to_f16(NAN) & 0x3ff));
  for (uint32_t h = 0; h < 0x7c00; h++)
    cr_assert_eq(crec_tool_f32_to_f16(crec_tool_f16_to_f32((uint16_t)h)), h, "half 0x%04x does not round-trip", h);
  cr_assert_eq(crec_tool_f32_to_bf16(1.0f), 0x3f80);
  cr_assert_eq(crec_tool_f32_to_bf16(-0.5f), 0xbf00);
  cr_assert_eq(crec_tool_f32_to_bf16(1.00390625f), 0x3f80); /* tie: to even */
  cr_assert_eq(crec_tool_f32_to_bf16(1.01171875f), 0x3f82); /* tie: to even */
  cr_assert_eq(crec_tool_bf16_to_f32(0x4049), 3.140625f);
  cr_assert(isnan(crec_tool_bf16_to_f32(crec_tool_f32_to_bf16(NAN))));
}

static crec_value scalar_ok(const char *text, crec_type type) {
  crec_value v;
  crec_tool_diag d = {{0}, {0}, false, false};
  cr_assert_eq(crec_tool_parse_scalar(text, type, &v, &d), 0, "'%s' as %s: %s", text, crec_type_name(type), d.message);
  return v;
}

static void scalar_bad(const char *text, crec_type type, const char *needle) {
  crec_value v;
  crec_tool_diag d = {{0}, {0}, false, false};
  cr_assert_eq(crec_tool_parse_scalar(text, type, &v, &d), -1, "'%s' was accepted as %s", text, crec_type_name(type));
  cr_assert(strstr(d.message, needle), "'%s': message '%s' does not mention '%s'", text, d.message, needle);
}

Test(tool_spec, scalars_parse_per_type) {
  cr_assert_eq(scalar_ok("42", CREC_TYPE_I32).i32, 42);
  cr_assert_eq(scalar_ok("-2147483648", CREC_TYPE_I32).i32, INT32_MIN);
  cr_assert_eq(scalar_ok("0x7fffffff", CREC_TYPE_I32).i32, INT32_MAX);
  cr_assert_eq(scalar_ok("+7", CREC_TYPE_I32).i32, 7);
  cr_assert_eq(scalar_ok("010", CREC_TYPE_I32).i32, 10); /* decimal, not octal */
  cr_assert_eq(scalar_ok("9223372036854775807", CREC_TYPE_I64).i64, INT64_MAX);
  cr_assert_eq(scalar_ok("-9223372036854775808", CREC_TYPE_I64).i64, INT64_MIN);
  cr_assert_eq(scalar_ok("1e-6", CREC_TYPE_F32).f32, 1e-6f);
  cr_assert_eq(scalar_ok("3", CREC_TYPE_F32).f32, 3.0f);
  cr_assert(isinf(scalar_ok("inf", CREC_TYPE_F32).f32));
  cr_assert_eq(scalar_ok("0.1", CREC_TYPE_F64).f64, 0.1);
  cr_assert_eq(scalar_ok("-1.5e300", CREC_TYPE_F64).f64, -1.5e300);
}

Test(tool_spec, bad_scalars_say_why) {
  scalar_bad("1.5", CREC_TYPE_I32, "'1.5' is not an integer (the scalar is i32)");
  scalar_bad("", CREC_TYPE_I32, "is not an integer");
  scalar_bad("12abc", CREC_TYPE_I64, "'12abc' is not an integer (the scalar is i64)");
  scalar_bad(" 5", CREC_TYPE_I32, "is not an integer");
  scalar_bad("2147483648", CREC_TYPE_I32, "2147483648 is out of range for i32");
  scalar_bad("-2147483649", CREC_TYPE_I32, "out of range for i32");
  scalar_bad("0xffffffff", CREC_TYPE_I32, "out of range for i32");
  scalar_bad("9223372036854775808", CREC_TYPE_I64, "out of range for i64");
  scalar_bad("abc", CREC_TYPE_F32, "'abc' is not a number (the scalar is f32)");
  scalar_bad("1.0f", CREC_TYPE_F32, "is not a number");
  scalar_bad("", CREC_TYPE_F64, "is not a number");
  scalar_bad("1e39", CREC_TYPE_F32, "1e39 is out of range for f32");
  scalar_bad("1e309", CREC_TYPE_F64, "out of range for f64");
}

Test(tool_spec, checksum_is_fnv1a_64) {
  cr_assert_eq(crec_tool_checksum("", 0), 0xcbf29ce484222325ull);
  cr_assert_eq(crec_tool_checksum("a", 1), 0xaf63dc4c8601ec8cull);
  cr_assert_eq(crec_tool_checksum("foobar", 6), 0x85944171f73967e8ull);
}

/* What `crec run` prints for an output buffer. */
static char *printed(const char *name, crec_element e, const void *data, uint64_t size, size_t max) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  crec_tool_print_buffer(f, name, e, data, size, max);
  fclose(f);
  return text;
}

Test(tool_spec, printed_buffers_show_type_count_checksum_and_first_elements) {
  float f[10];
  for (int i = 0; i < 10; i++) f[i] = (float)i * 1.5f;
  char want[256];
  snprintf(want, sizeof want, "y: f32[10] checksum %016llx: 0 1.5 3 4.5 ...\n",
           (unsigned long long)crec_tool_checksum(f, sizeof f));
  char *s = printed("y", CREC_ELEMENT_F32, f, sizeof f, 4);
  cr_assert_str_eq(s, want);
  free(s);
  int16_t i16[3] = {-1, 0, 32767};
  s = printed("k", CREC_ELEMENT_I16, i16, sizeof i16, 8);
  cr_assert(strstr(s, "k: i16[3] checksum ") && strstr(s, ": -1 0 32767\n"), "%s", s);
  free(s);
  uint16_t h[2] = {0x3c00, 0xc100};
  s = printed("h", CREC_ELEMENT_F16, h, sizeof h, 8);
  cr_assert(strstr(s, ": 1 -2.5\n"), "%s", s);
  free(s);
  uint16_t bf[1] = {0x4049};
  s = printed("b", CREC_ELEMENT_BF16, bf, sizeof bf, 8);
  cr_assert(strstr(s, "bf16[1]") && strstr(s, ": 3.141\n"), "%s", s);
  free(s);
  unsigned char raw[3] = {0x00, 0x7f, 0xff};
  s = printed("r", CREC_ELEMENT_BYTES, raw, sizeof raw, 8);
  cr_assert(strstr(s, "bytes[3]") && strstr(s, ": 0x00 0x7f 0xff\n"), "%s", s);
  free(s);
  int64_t big[1] = {INT64_MIN};
  s = printed("g", CREC_ELEMENT_I64, big, sizeof big, 8);
  cr_assert(strstr(s, ": -9223372036854775808\n"), "%s", s);
  free(s);
  double d[1] = {0.1};
  s = printed("d", CREC_ELEMENT_F64, d, sizeof d, 8);
  cr_assert(strstr(s, ": 0.1\n"), "%s", s);
  free(s);
}
