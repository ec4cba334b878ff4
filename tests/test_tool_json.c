/* The small JSON parser the tool's schema checks rely on (test_tool_util.c). */
#include <stdlib.h>
#include <string.h>

#include "test_tool.h"

Test(tool_json, parses_what_the_schema_checks_need) {
  json v;
  cr_assert_eq(json_parse(" {\"a\": [1, -2.5e3, true, null], \"b\\u003c\": {\"c\": \"x\\\"y\"}} ", &v), 0);
  cr_assert_eq(v.kind, JSON_OBJECT);
  const json *a = json_get(&v, "a");
  cr_assert_eq(a->kind, JSON_ARRAY);
  cr_assert_eq(a->count, 4);
  cr_assert_float_eq(a->items[1].number, -2500.0, 1e-9);
  cr_assert_eq(a->items[2].kind, JSON_BOOL);
  cr_assert_eq(a->items[3].kind, JSON_NULL);
  cr_assert_str_eq(json_get(json_get(&v, "b<"), "c")->string, "x\"y");
  static const char *const keys[] = {"a", "b<", NULL};
  json_expect_keys(&v, "the object", keys);
  json_free(&v);
}

Test(tool_json, rejects_what_is_not_json) {
  static const char *const bad[] = {"", "{", "{\"a\" 1}", "[1,]", "{\"a\":1,}", "01", "1.", "nan", "\"a",
                                    "{\"a\":1} {}", "[1 2]", "'a'", "-", "{\"a\":inf}"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    json v;
    cr_expect_neq(json_parse(bad[i], &v), 0, "accepted '%s'", bad[i]);
  }
}
