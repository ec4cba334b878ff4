/* Dumps: the JSON of crec/dump.h (checked by a strict parser and the exact
 * schema), DOT accepted by Graphviz with control flow as nested clusters,
 * and the text summary. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

TestSuite(dump, .fini = crec_test_leak_check);

/* ---- a strict JSON parser (RFC 8259: no trailing commas, no duplicate keys,
 *      valid UTF-8, escapes only as the grammar allows) ---- */

typedef enum jkind { J_NULL, J_BOOL, J_NUMBER, J_STRING, J_ARRAY, J_OBJECT } jkind;

typedef struct jval {
  jkind kind;
  bool boolean;
  bool integer;       /* a number without fraction or exponent */
  long long number;   /* integers only */
  char *str;          /* strings (NUL-terminated; may hold NULs only via \u0000, refused here) */
  struct jval *items; /* array elements or object values */
  char **keys;        /* object keys */
  size_t n;
} jval;

typedef struct jparser {
  const char *s;
  size_t pos, len;
  char error[160];
} jparser;

static bool jfail(jparser *p, const char *what) {
  if (!p->error[0]) snprintf(p->error, sizeof p->error, "%s at byte %zu", what, p->pos);
  return false;
}

static void jskip(jparser *p) {
  while (p->pos < p->len && strchr(" \t\n\r", p->s[p->pos]) && p->s[p->pos]) p->pos++;
}

static void jfree(jval *v) {
  for (size_t i = 0; i < v->n && (v->kind == J_ARRAY || v->kind == J_OBJECT); i++) {
    jfree(&v->items[i]);
    if (v->keys) free(v->keys[i]);
  }
  free(v->items);
  free(v->keys);
  free(v->str);
  memset(v, 0, sizeof *v);
}

static void put_utf8(char *out, size_t *n, unsigned cp) {
  if (cp < 0x80) out[(*n)++] = (char)cp;
  else if (cp < 0x800) {
    out[(*n)++] = (char)(0xC0 | cp >> 6);
    out[(*n)++] = (char)(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out[(*n)++] = (char)(0xE0 | cp >> 12);
    out[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[(*n)++] = (char)(0x80 | (cp & 0x3F));
  } else {
    out[(*n)++] = (char)(0xF0 | cp >> 18);
    out[(*n)++] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[(*n)++] = (char)(0x80 | (cp & 0x3F));
  }
}

static bool jhex4(jparser *p, unsigned *out) {
  if (p->pos + 4 > p->len) return jfail(p, "short \\u escape");
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    char c = p->s[p->pos++];
    v <<= 4;
    if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
    else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
    else return jfail(p, "bad hex digit in \\u escape");
  }
  *out = v;
  return true;
}

/* Length of a valid UTF-8 sequence at `s` (0 when invalid). */
static size_t utf8_len(const unsigned char *s, size_t avail) {
  unsigned c = s[0];
  size_t n;
  unsigned min;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) n = 2, min = 0x80;
  else if (c >= 0xE0 && c <= 0xEF) n = 3, min = 0x800;
  else if (c >= 0xF0 && c <= 0xF4) n = 4, min = 0x10000;
  else return 0;
  if (n > avail) return 0;
  unsigned cp = c & (0x7F >> n);
  for (size_t i = 1; i < n; i++) {
    if ((s[i] & 0xC0) != 0x80) return 0;
    cp = cp << 6 | (s[i] & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

static bool jstring(jparser *p, char **out) {
  if (p->pos >= p->len || p->s[p->pos] != '"') return jfail(p, "expected a string");
  p->pos++;
  char *buf = malloc(p->len - p->pos + 1);
  cr_assert_not_null(buf);
  size_t n = 0;
  for (;;) {
    if (p->pos >= p->len) {
      free(buf);
      return jfail(p, "unterminated string");
    }
    unsigned char c = (unsigned char)p->s[p->pos];
    if (c == '"') {
      p->pos++;
      break;
    }
    if (c < 0x20) {
      free(buf);
      return jfail(p, "unescaped control character in a string");
    }
    if (c == '\\') {
      p->pos++;
      if (p->pos >= p->len) {
        free(buf);
        return jfail(p, "unterminated escape");
      }
      char e = p->s[p->pos++];
      const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
      const char *hit = e ? strchr(from, e) : NULL;
      if (hit) {
        buf[n++] = to[hit - from];
      } else if (e == 'u') {
        unsigned cp;
        if (!jhex4(p, &cp)) {
          free(buf);
          return false;
        }
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          unsigned lo;
          if (p->pos + 2 > p->len || p->s[p->pos] != '\\' || p->s[p->pos + 1] != 'u') {
            free(buf);
            return jfail(p, "lone high surrogate");
          }
          p->pos += 2;
          if (!jhex4(p, &lo) || lo < 0xDC00 || lo > 0xDFFF) {
            free(buf);
            return jfail(p, "bad low surrogate");
          }
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
          free(buf);
          return jfail(p, "lone low surrogate");
        }
        if (cp == 0) {
          free(buf);
          return jfail(p, "\\u0000 cannot be a C name");
        }
        put_utf8(buf, &n, cp);
      } else {
        free(buf);
        return jfail(p, "invalid escape");
      }
      continue;
    }
    size_t k = utf8_len((const unsigned char *)p->s + p->pos, p->len - p->pos);
    if (!k) {
      free(buf);
      return jfail(p, "invalid UTF-8");
    }
    memcpy(buf + n, p->s + p->pos, k);
    n += k;
    p->pos += k;
  }
  buf[n] = '\0';
  *out = buf;
  return true;
}

static bool jvalue(jparser *p, jval *v, int depth);

static bool jnumber(jparser *p, jval *v) {
  size_t start = p->pos;
  bool integer = true;
  if (p->s[p->pos] == '-') p->pos++;
  if (p->pos >= p->len) return jfail(p, "bad number");
  if (p->s[p->pos] == '0') p->pos++;
  else if (p->s[p->pos] >= '1' && p->s[p->pos] <= '9')
    while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') p->pos++;
  else return jfail(p, "bad number");
  if (p->pos < p->len && p->s[p->pos] == '.') {
    integer = false;
    p->pos++;
    if (p->pos >= p->len || p->s[p->pos] < '0' || p->s[p->pos] > '9') return jfail(p, "bad fraction");
    while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') p->pos++;
  }
  if (p->pos < p->len && (p->s[p->pos] == 'e' || p->s[p->pos] == 'E')) {
    integer = false;
    p->pos++;
    if (p->pos < p->len && (p->s[p->pos] == '+' || p->s[p->pos] == '-')) p->pos++;
    if (p->pos >= p->len || p->s[p->pos] < '0' || p->s[p->pos] > '9') return jfail(p, "bad exponent");
    while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') p->pos++;
  }
  v->kind = J_NUMBER;
  v->integer = integer && p->pos - start < 19;
  if (v->integer) v->number = strtoll(p->s + start, NULL, 10);
  return true;
}

static bool jvalue(jparser *p, jval *v, int depth) {
  memset(v, 0, sizeof *v);
  if (depth > 64) return jfail(p, "nested too deep");
  jskip(p);
  if (p->pos >= p->len) return jfail(p, "expected a value");
  char c = p->s[p->pos];
  if (c == '{' || c == '[') {
    bool object = c == '{';
    v->kind = object ? J_OBJECT : J_ARRAY;
    p->pos++;
    jskip(p);
    if (p->pos < p->len && p->s[p->pos] == (object ? '}' : ']')) {
      p->pos++;
      return true;
    }
    size_t cap = 0;
    for (;;) {
      if (v->n == cap) {
        cap = cap ? 2 * cap : 8;
        v->items = realloc(v->items, cap * sizeof *v->items);
        if (object) v->keys = realloc(v->keys, cap * sizeof *v->keys);
        cr_assert(v->items && (!object || v->keys));
      }
      if (object) {
        jskip(p);
        char *key;
        if (!jstring(p, &key)) return false;
        for (size_t i = 0; i < v->n; i++)
          if (strcmp(v->keys[i], key) == 0) {
            free(key);
            return jfail(p, "duplicate key");
          }
        v->keys[v->n] = key;
        jskip(p);
        if (p->pos >= p->len || p->s[p->pos] != ':') {
          memset(&v->items[v->n++], 0, sizeof *v->items);
          return jfail(p, "expected ':'");
        }
        p->pos++;
      }
      bool ok = jvalue(p, &v->items[v->n], depth + 1);
      v->n++;
      if (!ok) return false;
      jskip(p);
      if (p->pos < p->len && p->s[p->pos] == ',') {
        p->pos++;
        continue;
      }
      if (p->pos < p->len && p->s[p->pos] == (object ? '}' : ']')) {
        p->pos++;
        return true;
      }
      return jfail(p, object ? "expected ',' or '}'" : "expected ',' or ']'");
    }
  }
  if (c == '"') {
    v->kind = J_STRING;
    return jstring(p, &v->str);
  }
  static const struct { const char *word; jkind kind; bool value; } words[] = {
      {"true", J_BOOL, true}, {"false", J_BOOL, false}, {"null", J_NULL, false}};
  for (size_t i = 0; i < 3; i++) {
    size_t n = strlen(words[i].word);
    if (p->len - p->pos >= n && memcmp(p->s + p->pos, words[i].word, n) == 0) {
      p->pos += n;
      v->kind = words[i].kind;
      v->boolean = words[i].value;
      return true;
    }
  }
  if (c == '-' || (c >= '0' && c <= '9')) return jnumber(p, v);
  return jfail(p, "unexpected character");
}

/* Parses all of `text` as one JSON value, failing the test on any error. */
static jval parse_json(const char *text, size_t len) {
  jparser p = {text, 0, len, ""};
  jval v;
  bool ok = jvalue(&p, &v, 0);
  if (ok) {
    jskip(&p);
    if (p.pos != p.len) ok = jfail(&p, "trailing characters after the value");
  }
  if (!ok) {
    jfree(&v);
    size_t from = p.pos > 40 ? p.pos - 40 : 0;
    cr_assert_fail("invalid JSON: %s; near: %.80s", p.error, text + from);
  }
  return v;
}

/* The parser itself must refuse what is not JSON, or the dump checks prove nothing. */
static bool json_ok(const char *text) {
  jparser p = {text, 0, strlen(text), ""};
  jval v;
  bool ok = jvalue(&p, &v, 0);
  if (ok) {
    jskip(&p);
    ok = p.pos == p.len;
  }
  jfree(&v);
  return ok;
}

Test(dump, the_json_checker_is_strict) {
  const char *good[] = {"{}", "[]", "{\"a\":[1,-2,3.5e1,null,true,false,\"x\\u00e9\\n\"]}", " [ 0 ] ",
                        "\"\\ud83d\\ude00\"", "\"caf\xc3\xa9\""};
  const char *bad[] = {"", "{", "[1,]", "{\"a\":1,}", "{\"a\":1,\"a\":2}", "[01]", "[1.]", "[.5]",
                       "[+1]", "\"a\nb\"", "\"\\x\"", "\"\\ud800\"", "{a:1}", "[1] [2]", "['a']",
                       "\"\xff\"", "\"\xc0\xaf\"", "[nul]", "[1 2]", "{\"a\" 1}", "[\"\\u12\"]"};
  for (size_t i = 0; i < sizeof good / sizeof *good; i++) cr_assert(json_ok(good[i]), "refused %s", good[i]);
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) cr_assert(!json_ok(bad[i]), "accepted %s", bad[i]);
}

/* ---- schema ---- */

static const jval *jget(const jval *obj, const char *key) {
  for (size_t i = 0; i < obj->n; i++)
    if (strcmp(obj->keys[i], key) == 0) return &obj->items[i];
  return NULL;
}

/* Asserts that `obj` is an object with exactly the keys in `keys` (NULL-terminated). */
static void expect_keys(const jval *obj, const char *where, const char *const *keys) {
  cr_assert_eq(obj->kind, J_OBJECT, "%s is not an object", where);
  size_t n = 0;
  for (; keys[n]; n++) cr_assert_not_null(jget(obj, keys[n]), "%s has no \"%s\"", where, keys[n]);
  cr_assert_eq(obj->n, n, "%s has %zu keys, the schema %zu (first: \"%s\")", where, obj->n, n,
               obj->n ? obj->keys[0] : "");
}

static const char *jstr(const jval *obj, const char *key, const char *where) {
  const jval *v = jget(obj, key);
  cr_assert(v && v->kind == J_STRING, "%s.%s is not a string", where, key);
  return v->str;
}

static long long jint(const jval *obj, const char *key, const char *where) {
  const jval *v = jget(obj, key);
  cr_assert(v && v->kind == J_NUMBER && v->integer && v->number >= 0, "%s.%s is not a non-negative integer",
            where, key);
  return v->number;
}

static const jval *jarr(const jval *obj, const char *key, const char *where) {
  const jval *v = jget(obj, key);
  cr_assert(v && v->kind == J_ARRAY, "%s.%s is not an array", where, key);
  return v;
}

static bool one_of(const char *s, const char *const *list) {
  for (; *list; list++)
    if (strcmp(s, *list) == 0) return true;
  return false;
}

static size_t idx(uint32_t id) { return crec_handle_index(id); }

/* The keys of a command of the schema in crec/dump.h: the common ones, its kind's, its
 * operands where it has some and its regions where it is control flow. */
/* `limited`: a while loop with an iteration limit of its own, which the dump states */
static const char *const *command_keys(const crec_command_info *info, bool cluster, bool limited, const char **keys) {
  static const char *const common[] = {"id", "kind", "name", "region", "deps"};
  size_t n = 0;
  for (size_t i = 0; i < 5; i++) keys[n++] = common[i];
  switch (info->kind) {
    case CREC_COMMAND_LAUNCH:
      keys[n++] = "kernel", keys[n++] = "grid", keys[n++] = "block", keys[n++] = "shared", keys[n++] = "args";
      /* a launch whose kernel has thread-block cluster dims, and only such a launch, says them */
      if (cluster) keys[n++] = "cluster";
      break;
    case CREC_COMMAND_MEMCPY: keys[n++] = "dst", keys[n++] = "src", keys[n++] = "bytes"; break;
    case CREC_COMMAND_MEMSET:
      keys[n++] = "dst", keys[n++] = "bytes", keys[n++] = "value", keys[n++] = "element_size";
      break;
    case CREC_COMMAND_WHILE:
    case CREC_COMMAND_IF:
    case CREC_COMMAND_SWITCH:
      keys[n++] = "predicate", keys[n++] = "regions";
      if (info->case_values) keys[n++] = "cases";
      if (limited) keys[n++] = "max_iterations";
      break;
    case CREC_COMMAND_GEMM: keys[n++] = "gemm"; break;
    case CREC_COMMAND_COLLECTIVE: keys[n++] = "collective"; break;
    case CREC_COMMAND_CUSTOM: keys[n++] = "custom"; break;
    default: break;
  }
  if (info->num_operands) keys[n++] = "operands";
  keys[n] = NULL;
  return keys;
}

/* A range of the dump: {"buffer","offset","end"} (with "access" for operands and arguments). */
static void check_range(const crec_program *p, const jval *r, crec_range want, const char *where) {
  crec_buffer_info bi;
  EXPECT_OK(crec_buffer_get_info(p, want.buffer, &bi));
  cr_assert_str_eq(jstr(r, "buffer", where), bi.name);
  cr_assert_eq((uint64_t)jint(r, "offset", where), want.offset);
  const jval *end = jget(r, "end");
  cr_assert_not_null(end, "%s has no end", where);
  if (want.size == CREC_WHOLE && bi.dynamic_size) cr_assert_eq(end->kind, J_NULL, "%s.end", where);
  else cr_assert_eq((uint64_t)jint(r, "end", where), want.size == CREC_WHOLE ? bi.size : want.offset + want.size);
}

static const char *access_word(crec_access a) {
  return a == CREC_ACCESS_READ ? "read" : a == CREC_ACCESS_WRITE ? "write" : "read-write";
}

/* The fields of a command's kind against the inspection API. */
static void check_command_detail(const crec_program *p, crec_command cmd, const crec_command_info *info,
                                 const jval *c, const char *where) {
  char at[96];
  if (info->kind == CREC_COMMAND_LAUNCH) {
    crec_kernel_info ki;
    EXPECT_OK(crec_kernel_get_info(p, info->kernel, &ki));
    cr_assert_str_eq(jstr(jget(c, "kernel"), "entry", where), ki.entry);
    const crec_dim *dims[2] = {info->grid, info->block};
    const char *names[2] = {"grid", "block"};
    for (size_t g = 0; g < 2; g++) {
      const jval *d = jarr(c, names[g], where);
      cr_assert_eq(d->n, 3);
      for (size_t k = 0; k < 3; k++) {
        if (dims[g][k].scalar.id) {
          crec_scalar_info si;
          EXPECT_OK(crec_scalar_get_info(p, dims[g][k].scalar, &si));
          cr_assert(d->items[k].kind == J_STRING && !strcmp(d->items[k].str, si.name), "%s.%s[%zu]", where, names[g],
                    k);
        } else {
          cr_assert(d->items[k].kind == J_NUMBER && d->items[k].number == dims[g][k].value, "%s.%s[%zu]", where,
                    names[g], k);
        }
      }
    }
    const jval *args = jarr(c, "args", where);
    cr_assert_eq(args->n, info->num_args, "%s has %zu args, the launch %zu", where, args->n, info->num_args);
    for (size_t a = 0; a < args->n; a++) {
      crec_arg arg;
      EXPECT_OK(crec_command_get_arg(p, cmd, a, &arg));
      snprintf(at, sizeof at, "%s.args[%zu]", where, a);
      const char *kind = jstr(&args->items[a], "kind", at);
      if (arg.kind == CREC_ARG_BUFFER) {
        cr_assert_str_eq(kind, "buffer");
        check_range(p, &args->items[a], arg.range, at);
        cr_assert_str_eq(jstr(&args->items[a], "access", at), access_word(arg.access));
      } else {
        cr_assert_str_eq(kind, arg.kind == CREC_ARG_SCALAR ? "scalar" : "immediate");
      }
    }
  }
  if (info->kind == CREC_COMMAND_MEMCPY || info->kind == CREC_COMMAND_MEMSET) {
    check_range(p, jget(c, "dst"), info->dst, where);
    if (info->kind == CREC_COMMAND_MEMCPY) check_range(p, jget(c, "src"), info->src, where);
    if (info->bytes == CREC_WHOLE) cr_assert_eq(jget(c, "bytes")->kind, J_NULL, "%s.bytes", where);
    else cr_assert_eq((uint64_t)jint(c, "bytes", where), info->bytes);
  }
  if (info->num_regions) {
    check_range(p, jget(c, "predicate"), info->predicate, where);
    const jval *regions = jarr(c, "regions", where);
    cr_assert_eq(regions->n, info->num_regions);
    for (size_t k = 0; k < regions->n; k++)
      cr_assert_eq((size_t)regions->items[k].number, idx(crec_command_region(p, cmd, k).id), "%s.regions[%zu]", where,
                   k);
  }
  if (info->num_operands) {
    const jval *ops = jarr(c, "operands", where);
    cr_assert_eq(ops->n, info->num_operands);
    for (size_t o = 0; o < ops->n; o++) {
      crec_range r;
      crec_access a;
      EXPECT_OK(crec_command_get_operand(p, cmd, o, &r, &a));
      snprintf(at, sizeof at, "%s.operands[%zu]", where, o);
      check_range(p, &ops->items[o], r, at);
      cr_assert_str_eq(jstr(&ops->items[o], "access", at), access_word(a));
    }
  }
}

/* check_json(): each buffer, its arena place and lifetime too. */
static void check_json_buffers(const crec_program *p, const crec_plan *plan, const jval *doc) {
  static const char *const buffer_keys[] = {"name", "kind", "size", "element", "dynamic", NULL};
  /* a temporary that some command uses also has its place in the arena */
  static const char *const placed_keys[] = {"name", "kind", "size", "element", "dynamic", "arena_offset", "live", NULL};
  static const char *const buffer_kinds[] = {"argument", "temporary", "constant", NULL};
  char where[64];
  const jval *buffers = jarr(doc, "buffers", "the dump");
  cr_assert_eq(buffers->n, crec_program_buffer_count(p));
  for (size_t i = 0; i < buffers->n; i++) {
    snprintf(where, sizeof where, "buffers[%zu]", i);
    const jval *b = &buffers->items[i];
    crec_buffer_info info;
    EXPECT_OK(crec_buffer_get_info(p, crec_program_buffer(p, i), &info));
    size_t first = 1, last = 0;
    uint64_t offset = 0;
    if (info.kind == CREC_BUFFER_TEMPORARY) {
      EXPECT_OK(crec_plan_get_lifetime(plan, crec_program_buffer(p, i), &first, &last));
      EXPECT_OK(crec_plan_get_temporary(plan, crec_program_buffer(p, i), &offset));
    }
    expect_keys(b, where, first <= last ? placed_keys : buffer_keys);
    if (first <= last) {
      cr_assert_eq((uint64_t)jint(b, "arena_offset", where), offset);
      const jval *live = jarr(b, "live", where);
      cr_assert(live->n == 2 && live->items[0].number == (long long)first && live->items[1].number == (long long)last,
                "%s.live is not [%zu,%zu]", where, first, last);
    }
    cr_assert_str_eq(jstr(b, "element", where), crec_element_name(info.element));
    cr_assert_eq(jget(b, "dynamic")->kind, J_BOOL, "%s.dynamic", where);
    cr_assert_eq(jget(b, "dynamic")->boolean, info.dynamic_size != 0, "%s.dynamic", where);
    cr_assert_str_eq(jstr(b, "name", where), info.name);
    cr_assert(one_of(jstr(b, "kind", where), buffer_kinds), "%s.kind", where);
    cr_assert_str_eq(jstr(b, "kind", where), crec_buffer_kind_name(info.kind));
    cr_assert_eq((uint64_t)jint(b, "size", where), info.size);
  }
}

/* check_json(): each scalar. */
static void check_json_scalars(const crec_program *p, const jval *doc) {
  static const char *const scalar_keys[] = {"name", "type", "kind", NULL};
  static const char *const types[] = {"i32", "i64", "f32", "f64", NULL};
  char where[64];
  const jval *scalars = jarr(doc, "scalars", "the dump");
  cr_assert_eq(scalars->n, crec_program_scalar_count(p));
  for (size_t i = 0; i < scalars->n; i++) {
    snprintf(where, sizeof where, "scalars[%zu]", i);
    const jval *s = &scalars->items[i];
    expect_keys(s, where, scalar_keys);
    crec_scalar_info info;
    EXPECT_OK(crec_scalar_get_info(p, crec_program_scalar(p, i), &info));
    cr_assert_str_eq(jstr(s, "name", where), info.name);
    cr_assert(one_of(jstr(s, "type", where), types), "%s.type", where);
    cr_assert_str_eq(jstr(s, "type", where), crec_type_name(info.type));
    static const char *const scalar_kinds[] = {"bound", "derived", "size"};
    cr_assert_str_eq(jstr(s, "kind", where), scalar_kinds[info.kind]);
  }
}

/* check_json(): each region, its role fitting its parent's kind. */
static void check_json_regions(const crec_program *p, const jval *doc) {
  static const char *const region_keys[] = {"id", "parent", "role", "index", NULL};
  static const char *const roles[] = {"program", "body", "cond", "then", "else", "branch", NULL};
  char where[64];
  const jval *regions = jarr(doc, "regions", "the dump");
  size_t nregions = crec_program_region_count(p), ncommands = crec_program_command_count(p);
  cr_assert_eq(regions->n, nregions);
  for (size_t i = 0; i < regions->n; i++) {
    snprintf(where, sizeof where, "regions[%zu]", i);
    const jval *r = &regions->items[i];
    expect_keys(r, where, region_keys);
    cr_assert_eq(jint(r, "id", where), (long long)i);
    crec_region_info info;
    EXPECT_OK(crec_region_get_info(p, crec_program_region(p, i), &info));
    const char *role = jstr(r, "role", where);
    cr_assert(one_of(role, roles), "%s.role '%s'", where, role);
    cr_assert_eq((size_t)jint(r, "index", where), info.index_in_parent);
    cr_assert_str_eq(role, crec_region_role_name(info.role));
    const jval *parent = jget(r, "parent");
    if (info.parent.id == 0) {
      cr_assert_eq(parent->kind, J_NULL, "%s (the program body) has a parent", where);
      cr_assert_str_eq(role, "program");
      cr_assert_eq(i, 0, "only region 0 is the program body");
      continue;
    }
    cr_assert_str_neq(role, "program");
    long long pc = jint(r, "parent", where);
    cr_assert_eq((size_t)pc, idx(info.parent.id));
    cr_assert_lt((size_t)pc, ncommands);
    /* the role fits the parent's kind and the region's place in it */
    crec_command_info ci = CREC_COMMAND_INFO_INIT;
    EXPECT_OK(crec_command_get_info(p, info.parent, &ci));
    cr_assert_eq(crec_command_region(p, info.parent, info.index_in_parent).id, crec_program_region(p, i).id);
    const char *want = ci.kind == CREC_COMMAND_WHILE ? (info.index_in_parent == 0 ? "cond" : "body")
                       : ci.kind == CREC_COMMAND_IF  ? (info.index_in_parent == 0 ? "then" : "else")
                       : ci.kind == CREC_COMMAND_SWITCH ? "branch" : "?";
    cr_assert_str_eq(role, want, "%s: region %zu of a %s is a '%s'", where, info.index_in_parent,
                     crec_command_kind_name(ci.kind), role);
  }
}

/* check_json(): each command, in program order, with its details and dependencies. */
static void check_json_commands(const crec_program *p, const crec_plan *plan, const jval *doc) {
  static const char *const kinds[] = {"launch", "memcpy", "memset", "barrier", "while", "if", "switch",
                                      "gemm", "collective", "custom", "host", NULL};
  char where[64];
  size_t ncommands = crec_program_command_count(p);
  const jval *commands = jarr(doc, "commands", "the dump");
  cr_assert_eq(commands->n, ncommands);
  crec_command *order = calloc(ncommands ? ncommands : 1, sizeof *order);
  cr_assert_not_null(order);
  cr_assert_eq(crec_test_program_order(p, order), ncommands);
  size_t *position = calloc(ncommands ? ncommands : 1, sizeof *position); /* program order of each id */
  cr_assert_not_null(position);
  for (size_t i = 0; i < ncommands; i++) position[idx(order[i].id)] = i;
  const char *keys[16];
  for (size_t i = 0; i < commands->n; i++) {
    snprintf(where, sizeof where, "commands[%zu]", i);
    const jval *c = &commands->items[i];
    crec_command_info info = CREC_COMMAND_INFO_INIT;
    EXPECT_OK(crec_command_get_info(p, order[i], &info));
    crec_kernel_info ki = {0};
    if (info.kind == CREC_COMMAND_LAUNCH) EXPECT_OK(crec_kernel_get_info(p, info.kernel, &ki));
    uint64_t limit = 0;
    if (info.kind == CREC_COMMAND_WHILE) EXPECT_OK(crec_program_get_loop_limit(p, order[i], &limit));
    expect_keys(c, where, command_keys(&info, ki.cluster[0] != 0, limit != 0, keys));
    if (limit == CREC_LOOP_UNLIMITED) cr_assert_str_eq(jstr(c, "max_iterations", where), "unlimited");
    else if (limit) cr_assert_eq((uint64_t)jint(c, "max_iterations", where), limit, "%s.max_iterations", where);
    check_command_detail(p, order[i], &info, c, where);
    if (ki.cluster[0]) {
      const jval *cl = jarr(c, "cluster", where);
      cr_assert_eq(cl->n, 3, "%s.cluster has %zu dims", where, cl->n);
      for (size_t k = 0; k < 3; k++)
        cr_assert(cl->items[k].kind == J_NUMBER && cl->items[k].integer && cl->items[k].number == ki.cluster[k],
                  "%s.cluster[%zu] is not %u", where, k, ki.cluster[k]);
    }
    /* program order, depth first */
    cr_assert_eq((size_t)jint(c, "id", where), idx(order[i].id), "%s is #%lld, program order has #%zu", where,
                 jint(c, "id", where), idx(order[i].id));
    cr_assert(one_of(jstr(c, "kind", where), kinds), "%s.kind", where);
    cr_assert_str_eq(jstr(c, "kind", where), crec_command_kind_name(info.kind));
    cr_assert_str_eq(jstr(c, "name", where), info.name);
    cr_assert_eq((size_t)jint(c, "region", where), idx(info.region.id));
    const jval *deps = jarr(c, "deps", where);
    const crec_command *want;
    size_t n;
    EXPECT_OK(crec_plan_get_deps(plan, order[i], &want, &n));
    cr_assert_eq(deps->n, n, "%s has %zu deps, the plan %zu", where, deps->n, n);
    for (size_t k = 0; k < n; k++) {
      const jval *d = &deps->items[k];
      cr_assert(d->kind == J_NUMBER && d->integer, "%s.deps[%zu] is not an integer", where, k);
      cr_assert_eq((size_t)d->number, idx(want[k].id), "%s.deps[%zu]", where, k);
      /* a dependency is an earlier command of the same region */
      crec_command_info di = CREC_COMMAND_INFO_INIT;
      EXPECT_OK(crec_command_get_info(p, want[k], &di));
      cr_assert_eq(di.region.id, info.region.id);
      cr_assert_lt(position[d->number], i);
    }
  }
  free(order);
  free(position);
}

/* Checks `json` against the schema of crec/dump.h and against `p` and `plan` exactly. */
static void check_json(const crec_program *p, const crec_plan *plan, const char *json, size_t len) {
  static const char *const top_keys[] = {"buffers", "scalars", "regions", "commands", NULL};
  jval doc = parse_json(json, len);
  expect_keys(&doc, "the dump", top_keys);
  check_json_buffers(p, plan, &doc);
  check_json_scalars(p, &doc);
  check_json_regions(p, &doc);
  check_json_commands(p, plan, &doc);
  jfree(&doc);
}

/* ---- programs to dump ---- */

static int host_noop(void *user, const crec_value *in, crec_value *out) {
  (void)user;
  (void)in;
  (void)out;
  return 0;
}

/* A program with every kind of buffer, scalar and command, nested control flow,
 * and names that need escaping. */
static crec_program *rich_program(void) {
  crec_kernel k;
  crec_program *p = crec_test_program(&k);
  crec_region body = crec_program_body(p);
  crec_buffer x, y, flag, t1, t2, c;
  static const int32_t table[4] = {1, 2, 3, 4};
  EXPECT_OK(crec_program_add_argument(p, "x", 1024, NULL, &x));
  EXPECT_OK(crec_program_add_argument(p, "y \"quoted\" \\ back", 1024, NULL, &y));
  EXPECT_OK(crec_program_add_argument(p, "flag", 16, NULL, &flag));
  EXPECT_OK(crec_program_add_temporary(p, "t1", 512, &t1));
  EXPECT_OK(crec_program_add_temporary(p, "t2\ttab\nnewline\x01", 512, &t2));
  EXPECT_OK(crec_program_add_constant(p, "caf\xc3\xa9 \xe2\x86\x92", table, sizeof table, &c));
  crec_scalar n, d, sz;
  EXPECT_OK(crec_program_add_scalar(p, "n", CREC_TYPE_I32, &n));
  EXPECT_OK(crec_program_add_derived_scalar(p, "half", CREC_TYPE_I64, &d));
  EXPECT_OK(crec_program_add_size_scalar(p, "x_bytes", x, &sz));
  crec_scalar in[1] = {n}, out[1] = {d};
  EXPECT_OK(crec_program_add_host_function(p, "halve", host_noop, NULL, NULL, in, 1, out, 1));

  crec_command cmd, w, i, s;
  crec_arg a1[] = {crec_arg_buffer(crec_range_of(x, 0, 512), CREC_ACCESS_READ),
                   crec_arg_buffer(crec_range_whole(t1), CREC_ACCESS_WRITE), crec_arg_scalar(n),
                   crec_arg_f32(1.5f)};
  crec_launch l = CREC_LAUNCH_INIT;
  l.kernel = k;
  l.args = a1;
  l.num_args = 4;
  l.grid[0] = crec_dim_from(d);
  EXPECT_OK(crec_program_add_launch(p, body, "scale \"in\" place", &l, &cmd));
  EXPECT_OK(crec_program_add_memset(p, body, NULL, crec_range_of(flag, 0, 4), 1, 4, &cmd));
  crec_region cond, loop, then_r, else_r, br[3];
  EXPECT_OK(crec_program_add_while(p, body, "loop {}", crec_range_of(flag, 0, 1), &w, &cond, &loop));
  crec_arg a2[] = {crec_arg_buffer(crec_range_of(flag, 0, 1), CREC_ACCESS_WRITE),
                   crec_arg_buffer(crec_range_of(x, 512, 512), CREC_ACCESS_READ)};
  l.args = a2;
  l.num_args = 2;
  l.grid[0] = crec_dim_of(1);
  EXPECT_OK(crec_program_add_launch(p, cond, "check", &l, &cmd));
  EXPECT_OK(crec_program_add_memcpy(p, loop, NULL, crec_range_whole(t2), crec_range_whole(t1), &cmd));
  EXPECT_OK(crec_program_add_if(p, loop, NULL, crec_range_of(flag, 8, 1), &i, &then_r, &else_r));
  EXPECT_OK(crec_program_add_memcpy(p, then_r, "then copy", crec_range_of(x, 0, 512), crec_range_whole(t2), &cmd));
  EXPECT_OK(crec_program_add_barrier(p, else_r, NULL, &cmd));
  EXPECT_OK(crec_program_add_memcpy(p, loop, "copy back", crec_range_of(t1, 0, 256), crec_range_of(x, 0, 256), &cmd));
  const int32_t cases[2] = {10, 20};
  EXPECT_OK(crec_program_add_switch(p, body, "sw", crec_range_of(flag, 4, 4), 3, cases, &s, br));
  EXPECT_OK(crec_program_add_memset(p, br[0], NULL, crec_range_of(y, 0, 16), 0, 1, &cmd));
  /* branch 1 stays empty */
  EXPECT_OK(crec_program_add_memcpy(p, br[2], NULL, crec_range_of(y, 16, 16), crec_range_of(c, 0, 16), &cmd));
  EXPECT_OK(crec_program_add_barrier(p, body, "sync", &cmd));
  EXPECT_OK(crec_program_add_memcpy(p, body, NULL, crec_range_of(y, 0, 1024), crec_range_whole(x), &cmd));
  return p;
}

static char *dump(const crec_program *p, const crec_plan *plan, crec_dump_format f, size_t *len) {
  char *out = NULL;
  size_t n = 0;
  EXPECT_OK(crec_dump(p, plan, f, &out, &n));
  cr_assert_not_null(out);
  cr_assert_eq(n, strlen(out), "length %zu, but the string has %zu bytes", n, strlen(out));
  if (len) *len = n;
  return out;
}

/* ---- JSON ---- */

Test(dump, json_matches_the_schema_and_the_program) {
  crec_program *p = rich_program();
  crec_plan *plan = NULL;
  EXPECT_OK(crec_plan_create(p, NULL, &plan));
  size_t n;
  char *json = dump(p, NULL, CREC_DUMP_JSON, &n); /* NULL: planned with defaults */
  check_json(p, plan, json, n);
  crec_free(json);
  json = dump(p, plan, CREC_DUMP_JSON, &n);
  check_json(p, plan, json, n);
  crec_free(json);
  crec_plan_destroy(plan);
  crec_program_destroy(p);
}

Test(dump, json_deps_come_from_the_given_plan) {
  crec_program *p = rich_program();
  crec_plan_options o = CREC_PLAN_OPTIONS_INIT;
  o.schedule = CREC_SCHEDULE_SEQUENTIAL;
  crec_plan *plan = NULL;
  EXPECT_OK(crec_plan_create(p, &o, &plan));
  size_t n;
  char *json = dump(p, plan, CREC_DUMP_JSON, &n);
  check_json(p, plan, json, n);
  /* and a sequential plan's deps are not the default plan's */
  char *dflt = dump(p, NULL, CREC_DUMP_JSON, NULL);
  cr_assert_str_neq(json, dflt);
  crec_free(dflt);
  crec_free(json);
  crec_plan_destroy(plan);
  crec_program_destroy(p);
}

Test(dump, json_names_round_trip) {
  crec_program *p = NULL;
  EXPECT_OK(crec_program_create(&p));
  const char *names[] = {"plain", "quote\"", "back\\slash", "new\nline\r\ttab", "ctl\x01\x1f\x7f",
                         "\xe2\x82\xac uro", "</script>", "{\"json\":1}"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    crec_buffer b;
    crec_scalar s;
    crec_command c;
    EXPECT_OK(crec_program_add_temporary(p, names[i], 8, &b));
    EXPECT_OK(crec_program_add_scalar(p, names[i], CREC_TYPE_F64, &s));
    EXPECT_OK(crec_program_add_barrier(p, crec_program_body(p), names[i], &c));
  }
  crec_plan *plan = NULL;
  EXPECT_OK(crec_plan_create(p, NULL, &plan));
  size_t n;
  char *json = dump(p, plan, CREC_DUMP_JSON, &n);
  check_json(p, plan, json, n); /* compares every name with the program's */
  crec_free(json);
  crec_plan_destroy(plan);
  crec_program_destroy(p);
}

Test(dump, json_of_names_that_are_not_utf8_is_still_valid) {
  crec_program *p = NULL;
  EXPECT_OK(crec_program_create(&p));
  /* a lone continuation byte, a truncated sequence, and a byte that never starts one */
  const char *names[] = {"bad\x80tail", "cut\xe2\x82", "\xff\xfe", "ok \xc3\xa9"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    crec_buffer b;
    EXPECT_OK(crec_program_add_temporary(p, names[i], 8, &b));
  }
  size_t n;
  char *json = dump(p, NULL, CREC_DUMP_JSON, &n);
  jval doc = parse_json(json, n); /* the strict parser rejects invalid UTF-8 */
  const jval *buffers = jget(&doc, "buffers");
  cr_assert_eq(buffers->n, 4);
  cr_assert(strstr(json, "bad\\ufffdtail") != NULL, "a lone continuation byte is not U+FFFD: %s", json);
  cr_assert(strstr(json, "ok \xc3\xa9") != NULL, "a valid sequence was not kept");
  jfree(&doc);
  crec_free(json);
  crec_program_destroy(p);
}

Test(dump, json_of_an_empty_program) {
  crec_program *p = NULL;
  EXPECT_OK(crec_program_create(&p));
  crec_plan *plan = NULL;
  EXPECT_OK(crec_plan_create(p, NULL, &plan));
  size_t n;
  char *json = dump(p, plan, CREC_DUMP_JSON, &n);
  check_json(p, plan, json, n);
  jval doc = parse_json(json, n);
  const jval *regions = jget(&doc, "regions");
  cr_assert_eq(regions->n, 1);
  cr_assert_eq(jget(&regions->items[0], "parent")->kind, J_NULL);
  jfree(&doc);
  crec_free(json);
  crec_plan_destroy(plan);
  crec_program_destroy(p);
}

Test(dump, json_of_random_programs, .timeout = 120) {
  crec_test_shape shape = {8, 2000, 40, true, true};
  for (uint64_t seed = 300; seed < 600; seed++) {
    crec_program *p = crec_test_random_program(seed, &shape);
    crec_plan *plan = NULL;
    EXPECT_OK(crec_plan_create(p, NULL, &plan));
    size_t n;
    char *json = dump(p, plan, CREC_DUMP_JSON, &n);
    check_json(p, plan, json, n);
    crec_free(json);
    crec_plan_destroy(plan);
    crec_program_destroy(p);
  }
}

/* ---- DOT ---- */

/* Runs Graphviz on `dot_text`; fails the test with dot's complaint. */
static void expect_dot_accepts(const char *dot_text, const char *what) {
  cr_assert_eq(system("command -v dot > /dev/null 2>&1"), 0,
               "Graphviz 'dot' is not on PATH: install graphviz (apt-get install graphviz) to check DOT dumps");
  char in_path[] = "/tmp/crec-dot-XXXXXX", err_path[] = "/tmp/crec-dot-err-XXXXXX";
  int fd = mkstemp(in_path), efd = mkstemp(err_path);
  cr_assert(fd >= 0 && efd >= 0);
  size_t len = strlen(dot_text);
  cr_assert_eq(write(fd, dot_text, len), (ssize_t)len);
  close(fd);
  close(efd);
  char cmd[256];
  snprintf(cmd, sizeof cmd, "dot -Tsvg -o /dev/null %s 2> %s", in_path, err_path);
  int rc = system(cmd);
  char err[1024] = "";
  FILE *f = fopen(err_path, "r");
  if (f) {
    size_t k = fread(err, 1, sizeof err - 1, f);
    err[k] = '\0';
    fclose(f);
  }
  unlink(in_path);
  unlink(err_path);
  cr_assert(rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 0, "dot refused the %s dump (status %d): %s",
            what, rc, err);
  cr_assert_eq(err[0], '\0', "dot complained about the %s dump: %s", what, err);
}

/* What a scan of the DOT text finds: for each cluster and node, its enclosing cluster. */
#define MAX_DOT 512
typedef struct dot_scan {
  char cluster[MAX_DOT][32], cluster_parent[MAX_DOT][32];
  size_t num_clusters;
  long node_cluster[MAX_DOT]; /* per command id: index of the enclosing cluster, -1 top level, -2 unseen */
  char node_label[MAX_DOT][160];
  int node_count[MAX_DOT];
  bool edge[64][64];
  size_t num_edges;
} dot_scan;

static void scan_dot(const char *text, dot_scan *s, size_t ncommands) {
  memset(s, 0, sizeof *s);
  for (size_t i = 0; i < MAX_DOT; i++) s->node_cluster[i] = -2;
  long stack[64];
  int depth = 0;
  bool closed = false;
  stack[0] = -1;
  const char *line = text;
  cr_assert(strncmp(text, "digraph", 7) == 0, "the DOT dump does not start with 'digraph'");
  while (*line) {
    const char *end = strchr(line, '\n');
    if (!end) end = line + strlen(line);
    while (line < end && *line == ' ') line++;
    char name[32];
    unsigned a, b, id;
    int used = 0;
    if (sscanf(line, "subgraph %31s {%n", name, &used) == 1 && used > 0) {
      cr_assert_lt(s->num_clusters, MAX_DOT);
      snprintf(s->cluster[s->num_clusters], 32, "%s", name);
      snprintf(s->cluster_parent[s->num_clusters], 32, "%s", stack[depth] < 0 ? "" : s->cluster[stack[depth]]);
      cr_assert_lt(depth, 63);
      stack[++depth] = (long)s->num_clusters++;
    } else if (line[0] == '}') {
      if (depth == 0) { /* the graph's own brace: nothing may follow */
        cr_assert_eq(end[0] ? end[1] : '\0', '\0', "text after the graph's closing brace");
        closed = true;
      } else {
        depth--;
      }
    } else if (sscanf(line, "c%u -> c%u;", &a, &b) == 2) {
      cr_assert(a < 64 && b < 64);
      cr_assert(!s->edge[a][b], "edge c%u -> c%u twice", a, b);
      s->edge[a][b] = true;
      s->num_edges++;
    } else if (sscanf(line, "c%u [%n", &id, &used) == 1 && used > 0) {
      cr_assert_lt(id, ncommands, "a node for command #%u, which does not exist", id);
      s->node_cluster[id] = stack[depth];
      s->node_count[id]++;
      const char *label = strstr(line, "label=\"");
      cr_assert_not_null(label, "node c%u has no label", id);
      size_t n = (size_t)(end - label - 7);
      snprintf(s->node_label[id], sizeof s->node_label[id], "%.*s", (int)(n < 159 ? n : 159), label + 7);
    }
    line = *end ? end + 1 : end;
  }
  cr_assert(depth == 0 && closed, "unbalanced braces in the DOT dump");
}

static long find_cluster(const dot_scan *s, const char *name) {
  for (size_t i = 0; i < s->num_clusters; i++)
    if (strcmp(s->cluster[i], name) == 0) return (long)i;
  return -1;
}

/* Checks nesting, labels and edges of a DOT dump against `p` and `plan`. */
static void check_dot(const crec_program *p, const crec_plan *plan, const char *text) {
  size_t nc = crec_program_command_count(p);
  cr_assert_lt(nc, 64);
  dot_scan *s = malloc(sizeof *s);
  cr_assert_not_null(s);
  scan_dot(text, s, nc);
  char name[32];
  /* every region but the body is a cluster inside its control-flow command's cluster */
  for (size_t r = 1; r < crec_program_region_count(p); r++) {
    crec_region_info ri;
    EXPECT_OK(crec_region_get_info(p, crec_program_region(p, r), &ri));
    snprintf(name, sizeof name, "cluster_r%zu", r);
    long k = find_cluster(s, name);
    cr_assert_geq(k, 0, "region %zu has no cluster", r);
    snprintf(name, sizeof name, "cluster_c%zu", idx(ri.parent.id));
    cr_assert_str_eq(s->cluster_parent[k], name, "cluster of region %zu is inside '%s', not '%s'", r,
                     s->cluster_parent[k], name);
  }
  size_t edges = 0;
  for (size_t c = 0; c < nc; c++) {
    crec_command cmd = crec_program_command(p, c);
    crec_command_info ci = CREC_COMMAND_INFO_INIT;
    EXPECT_OK(crec_command_get_info(p, cmd, &ci));
    cr_assert_eq(s->node_count[c], 1, "command #%zu has %d nodes", c, s->node_count[c]);
    /* labelled by kind and name (names without characters DOT escapes) */
    cr_assert(strstr(s->node_label[c], crec_command_kind_name(ci.kind)) != NULL, "node c%zu label '%s'", c,
              s->node_label[c]);
    if (!strpbrk(ci.name, "\"\\\n\t"))
      cr_assert(strstr(s->node_label[c], ci.name) != NULL, "node c%zu label '%s' lacks '%s'", c,
                s->node_label[c], ci.name);
    /* where the node sits: a control-flow command inside its own cluster, which sits
     * in its region's cluster; any other command directly in its region's cluster */
    size_t region = idx(ci.region.id);
    const char *region_cluster = "";
    if (region != 0) {
      snprintf(name, sizeof name, "cluster_r%zu", region);
      region_cluster = name;
    }
    long at = s->node_cluster[c];
    if (ci.num_regions) {
      char own[32];
      snprintf(own, sizeof own, "cluster_c%zu", c);
      cr_assert(at >= 0 && strcmp(s->cluster[at], own) == 0, "node c%zu is not inside %s", c, own);
      cr_assert_str_eq(s->cluster_parent[at], region_cluster, "%s sits in '%s', not '%s'", own,
                       s->cluster_parent[at], region_cluster);
    } else {
      cr_assert_str_eq(at >= 0 ? s->cluster[at] : "", region_cluster, "node c%zu sits in the wrong cluster", c);
    }
    const crec_command *deps;
    size_t n;
    EXPECT_OK(crec_plan_get_deps(plan, cmd, &deps, &n));
    for (size_t k = 0; k < n; k++)
      cr_assert(s->edge[idx(deps[k].id)][c], "no edge c%zu -> c%zu", idx(deps[k].id), c);
    edges += n;
  }
  cr_assert_eq(s->num_edges, edges, "the DOT dump has %zu edges, the plan %zu", s->num_edges, edges);
  free(s);
}

Test(dump, dot_is_accepted_by_graphviz_and_nests_control_flow) {
  crec_program *p = rich_program();
  crec_plan *plan = NULL;
  EXPECT_OK(crec_plan_create(p, NULL, &plan));
  char *dot = dump(p, plan, CREC_DUMP_DOT, NULL);
  expect_dot_accepts(dot, "rich program's");
  check_dot(p, plan, dot);
  crec_free(dot);
  crec_plan_destroy(plan);
  crec_program_destroy(p);
}

Test(dump, dot_of_empty_and_random_programs, .timeout = 120) {
  crec_program *p = NULL;
  EXPECT_OK(crec_program_create(&p));
  char *dot = dump(p, NULL, CREC_DUMP_DOT, NULL);
  expect_dot_accepts(dot, "empty program's");
  crec_free(dot);
  crec_program_destroy(p);
  crec_test_shape shape = {6, 1000, 30, true, true};
  for (uint64_t seed = 900; seed < 920; seed++) {
    p = crec_test_random_program(seed, &shape);
    crec_plan *plan = NULL;
    EXPECT_OK(crec_plan_create(p, NULL, &plan));
    dot = dump(p, plan, CREC_DUMP_DOT, NULL);
    char what[32];
    snprintf(what, sizeof what, "seed %llu", (unsigned long long)seed);
    expect_dot_accepts(dot, what);
    check_dot(p, plan, dot);
    crec_free(dot);
    crec_plan_destroy(plan);
    crec_program_destroy(p);
  }
}

Test(dump, dot_escapes_names) {
  crec_program *p = NULL;
  EXPECT_OK(crec_program_create(&p));
  const char *names[] = {"quote\"", "back\\", "brace}{", "new\nline", "ctl\x01", "<html>&amp;"};
  crec_command c, w;
  crec_region r1, r2;
  crec_buffer flag;
  EXPECT_OK(crec_program_add_argument(p, "flag", 16, NULL, &flag));
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    EXPECT_OK(crec_program_add_barrier(p, crec_program_body(p), names[i], &c));
    EXPECT_OK(crec_program_add_if(p, crec_program_body(p), names[i], crec_range_of(flag, 0, 1), &w, &r1, &r2));
  }
  char *dot = dump(p, NULL, CREC_DUMP_DOT, NULL);
  expect_dot_accepts(dot, "escaped names'");
  crec_free(dot);
  crec_program_destroy(p);
}

/* ---- text ---- */

Test(dump, text_mentions_every_command_and_buffer) {
  crec_program *p = rich_program();
  crec_plan *plan = NULL;
  EXPECT_OK(crec_plan_create(p, NULL, &plan));
  char *text = dump(p, plan, CREC_DUMP_TEXT, NULL);
  for (size_t i = 0; i < crec_program_buffer_count(p); i++) {
    crec_buffer_info bi;
    EXPECT_OK(crec_buffer_get_info(p, crec_program_buffer(p, i), &bi));
    cr_assert(strstr(text, bi.name) != NULL, "the text dump lacks buffer '%s'", bi.name);
  }
  for (size_t i = 0; i < crec_program_scalar_count(p); i++) {
    crec_scalar_info si;
    EXPECT_OK(crec_scalar_get_info(p, crec_program_scalar(p, i), &si));
    cr_assert(strstr(text, si.name) != NULL, "the text dump lacks scalar '%s'", si.name);
  }
  for (size_t c = 0; c < crec_program_command_count(p); c++) {
    crec_command cmd = crec_program_command(p, c);
    crec_command_info ci = CREC_COMMAND_INFO_INIT;
    EXPECT_OK(crec_command_get_info(p, cmd, &ci));
    char head[160];
    snprintf(head, sizeof head, "#%zu %s '%s'", c, crec_command_kind_name(ci.kind), ci.name);
    const char *line = strstr(text, head);
    cr_assert_not_null(line, "the text dump lacks \"%s\"", head);
    const char *eol = strchr(line, '\n');
    cr_assert_not_null(eol);
    /* the line ends with the command's dependencies */
    const crec_command *deps;
    size_t n;
    EXPECT_OK(crec_plan_get_deps(plan, cmd, &deps, &n));
    char tail[160] = "";
    if (n) {
      snprintf(tail, sizeof tail, " after");
      for (size_t k = 0; k < n; k++)
        snprintf(tail + strlen(tail), sizeof tail - strlen(tail), " #%zu", idx(deps[k].id));
    }
    size_t tl = strlen(tail);
    cr_assert((size_t)(eol - line) >= tl && strncmp(eol - tl, tail, tl) == 0,
              "the line of #%zu, \"%.*s\", does not end with \"%s\"", c, (int)(eol - line), line, tail);
    const char *after = strstr(line, " after #");
    if (!n) cr_assert(after == NULL || after > eol, "#%zu has no deps but its line has some", c);
  }
  char arena[64];
  snprintf(arena, sizeof arena, "arena %llu bytes", (unsigned long long)crec_plan_arena_bytes(plan));
  cr_assert(strstr(text, arena) != NULL, "the text dump does not say '%s'", arena);
  crec_free(text);
  crec_plan_destroy(plan);
  crec_program_destroy(p);
}

/* ---- loop limits ---- */

/* Three loops: one with a limit of its own, one unlimited, one without (the exec's). */
static crec_program *limited_loops_program(void) {
  crec_kernel k;
  crec_program *p = crec_test_program(&k);
  crec_buffer flag = crec_test_argument(p, "flag", 4);
  static const char *const names[] = {"limited", "unlimited", "default"};
  static const uint64_t limits[] = {1000, CREC_LOOP_UNLIMITED, 0};
  for (size_t i = 0; i < 3; i++) {
    crec_command w;
    crec_region cond, body;
    EXPECT_OK(crec_program_add_while(p, crec_program_body(p), names[i], crec_range_of(flag, 0, 1), &w, &cond, &body));
    if (limits[i]) EXPECT_OK(crec_program_set_loop_limit(p, w, limits[i]));
  }
  return p;
}

/* A loop's own limit (crec.max_iterations, crec_program_set_loop_limit) is in
 * every dump: text, JSON and DOT; a loop without one shows none. */
Test(dump, a_loop_limit_is_in_every_format) {
  crec_program *p = limited_loops_program();
  crec_plan *plan = NULL;
  EXPECT_OK(crec_plan_create(p, NULL, &plan));
  char *text = dump(p, plan, CREC_DUMP_TEXT, NULL);
  cr_assert(strstr(text, "  #0 while 'limited' predicate flag[0..1) max_iterations 1000\n"), "%s", text);
  cr_assert(strstr(text, "  #1 while 'unlimited' predicate flag[0..1) max_iterations unlimited"), "%s", text);
  cr_assert(strstr(text, "  #2 while 'default' predicate flag[0..1)"), "%s", text);
  cr_assert_null(strstr(strstr(text, "'default'"), "max_iterations"), "a loop without its own limit shows one: %s", text);
  crec_free(text);
  size_t len = 0;
  char *json = dump(p, plan, CREC_DUMP_JSON, &len);
  check_json(p, plan, json, len); /* the exact keys: max_iterations where a loop has its own */
  cr_assert(strstr(json, "\"name\":\"limited\"") && strstr(json, "\"max_iterations\":1000,\"regions\""), "%s", json);
  cr_assert(strstr(json, "\"max_iterations\":\"unlimited\",\"regions\""), "%s", json);
  crec_free(json);
  char *dot = dump(p, plan, CREC_DUMP_DOT, NULL);
  cr_assert(strstr(dot, "label=\"#0 while\\nlimited\\nat most 1000 iterations\""), "%s", dot);
  cr_assert(strstr(dot, "label=\"#1 while\\nunlimited\\nno iteration limit\""), "%s", dot);
  cr_assert(strstr(dot, "label=\"#2 while\\ndefault\""), "%s", dot);
  crec_free(dot);
  crec_plan_destroy(plan);
  crec_program_destroy(p);
}

/* The summary counts in the singular for one. */
Test(dump, the_summary_says_one_in_the_singular) {
  crec_program *p = limited_loops_program();
  char *text = dump(p, NULL, CREC_DUMP_TEXT, NULL);
  static const char want[] = "program: 3 commands in 7 regions, 1 buffer (1 argument, 0 temporaries, 0 constants), "
                             "0 scalars, 1 kernel; arena 0 bytes\n";
  cr_assert_eq(strncmp(text, want, sizeof want - 1), 0, "%.200s", text);
  cr_assert(strstr(text, "\n  flag             argument  4 bytes, binding 0\n"), "%s", text);
  crec_free(text);
  crec_program_destroy(p);
}

/* ---- thread-block clusters ---- */

/* A launch of a kernel with cluster dims 2x1x1, inside a loop, and one of a kernel without. */
static crec_program *cluster_program(void) {
  crec_kernel k;
  crec_program *p = crec_test_program(&k);
  crec_kernel tiled = crec_test_cluster_kernel(p);
  crec_buffer x = crec_test_argument(p, "x", 1024), flag = crec_test_argument(p, "flag", 4);
  crec_arg a = crec_arg_buffer(crec_range_whole(x), CREC_ACCESS_WRITE);
  crec_launch l = CREC_LAUNCH_INIT;
  l.kernel = tiled;
  l.grid[0] = crec_dim_of(4);
  l.block[0] = crec_dim_of(128);
  l.args = &a;
  l.num_args = 1;
  crec_command c, w;
  crec_region cond, body;
  EXPECT_OK(crec_program_add_launch(p, crec_program_body(p), "tiled", &l, &c));
  EXPECT_OK(crec_program_add_while(p, crec_program_body(p), "loop", crec_range_of(flag, 0, 1), &w, &cond, &body));
  EXPECT_OK(crec_program_add_launch(p, body, "tiled again", &l, &c));
  l.kernel = k;
  EXPECT_OK(crec_program_add_launch(p, crec_program_body(p), "plain", &l, &c));
  return p;
}

Test(dump, launches_show_their_cluster_dims_in_every_format) {
  crec_program *p = cluster_program();
  crec_plan *plan = NULL;
  EXPECT_OK(crec_plan_create(p, NULL, &plan));
  char *text = dump(p, plan, CREC_DUMP_TEXT, NULL);
  cr_assert(strstr(text, "  #0 launch 'tiled' k<<<4x1x1, 128x1x1, cluster 2x1x1>>>(w x[0..1024))\n"), "%s", text);
  cr_assert(strstr(text, "      #2 launch 'tiled again' k<<<4x1x1, 128x1x1, cluster 2x1x1>>>(w x[0..1024))"), "%s", text);
  cr_assert(strstr(text, "  #3 launch 'plain' k<<<4x1x1, 128x1x1>>>(w x[0..1024)) after #1\n"), "%s", text);
  crec_free(text);
  size_t n;
  char *json = dump(p, plan, CREC_DUMP_JSON, &n);
  check_json(p, plan, json, n);
  cr_assert(strstr(json, "{\"id\":0,\"kind\":\"launch\",\"name\":\"tiled\",\"region\":0,\"deps\":[],\"kernel\":"), "%s",
            json);
  cr_assert(strstr(json, "\"shared\":0,\"cluster\":[2,1,1],\"args\":"), "%s", json);
  cr_assert(strstr(json, "{\"id\":3,\"kind\":\"launch\",\"name\":\"plain\",\"region\":0,\"deps\":[1],"), "%s", json);
  /* check_json requires "cluster" on exactly the launches whose kernel has cluster dims */
  crec_free(json);
  char *dot = dump(p, plan, CREC_DUMP_DOT, NULL);
  cr_assert(strstr(dot, "c0 [id=\"c0\", label=\"#0 launch\\ntiled\\ncluster 2x1x1\", shape=box"), "%s", dot);
  cr_assert(strstr(dot, "c2 [id=\"c2\", label=\"#2 launch\\ntiled again\\ncluster 2x1x1\", shape=box"), "%s", dot);
  cr_assert(strstr(dot, "c3 [id=\"c3\", label=\"#3 launch\\nplain\", shape=box"), "%s", dot);
  crec_free(dot);
  crec_plan_destroy(plan);
  crec_program_destroy(p);
}

/* ---- threads ---- */

typedef struct reader_job {
  const crec_program *p;
  const char *want;
  int mismatches;
} reader_job;

static void *plan_and_dump_repeatedly(void *arg) {
  reader_job *job = arg;
  for (int i = 0; i < 50; i++) {
    crec_plan *plan = NULL;
    char *json = NULL;
    if (crec_plan_create(job->p, NULL, &plan) != CREC_OK ||
        crec_dump(job->p, i % 2 ? plan : NULL, CREC_DUMP_JSON, &json, NULL) != CREC_OK ||
        strcmp(json, job->want) != 0)
      job->mismatches++;
    crec_free(json);
    crec_plan_destroy(plan);
  }
  return NULL;
}

Test(dump, one_program_planned_and_dumped_from_several_threads) {
  /* program.h: a program may be read (planned, dumped) from several threads at once */
  crec_program *p = rich_program();
  char *want = dump(p, NULL, CREC_DUMP_JSON, NULL);
  reader_job jobs[4];
  pthread_t threads[4];
  for (int i = 0; i < 4; i++) {
    jobs[i] = (reader_job){p, want, 0};
    cr_assert_eq(pthread_create(&threads[i], NULL, plan_and_dump_repeatedly, &jobs[i]), 0);
  }
  for (int i = 0; i < 4; i++) pthread_join(threads[i], NULL);
  for (int i = 0; i < 4; i++) cr_assert_eq(jobs[i].mismatches, 0, "thread %d saw %d different dumps", i, jobs[i].mismatches);
  crec_free(want);
  crec_program_destroy(p);
  cr_assert_eq(crec_debug_live_objects(), 0);
}

/* ---- errors ---- */

Test(dump, errors) {
  crec_program *p = rich_program(), *q = rich_program();
  crec_plan *plan_q = NULL, *plan_p = NULL;
  EXPECT_OK(crec_plan_create(q, NULL, &plan_q));
  EXPECT_OK(crec_plan_create(p, NULL, &plan_p));
  char *out = (char *)"untouched";
  size_t len = 99;
  EXPECT_STATUS(crec_dump(NULL, NULL, CREC_DUMP_JSON, &out, &len), CREC_ERR_NULL_POINTER);
  EXPECT_ERROR_MENTIONS("'program'");
  cr_assert(out == NULL && len == 0);
  EXPECT_STATUS(crec_dump(p, NULL, CREC_DUMP_JSON, NULL, &len), CREC_ERR_NULL_POINTER);
  EXPECT_ERROR_MENTIONS("'out'");
  EXPECT_STATUS(crec_dump(p, NULL, (crec_dump_format)3, &out, &len), CREC_ERR_INVALID_ARGUMENT);
  EXPECT_ERROR_MENTIONS("'format'");
  EXPECT_STATUS(crec_dump(p, plan_q, CREC_DUMP_TEXT, &out, &len), CREC_ERR_INVALID_ARGUMENT);
  EXPECT_ERROR_MENTIONS("'plan'");
  cr_assert_null(out);
  /* a plan made before more commands were added is stale */
  crec_command c;
  EXPECT_OK(crec_program_add_barrier(p, crec_program_body(p), NULL, &c));
  EXPECT_STATUS(crec_dump(p, plan_p, CREC_DUMP_DOT, &out, &len), CREC_ERR_INVALID_ARGUMENT);
  EXPECT_ERROR_MENTIONS("'plan'");
  /* an incomplete program cannot be planned, so not dumped either */
  crec_scalar d;
  EXPECT_OK(crec_program_add_derived_scalar(p, "orphan", CREC_TYPE_I32, &d));
  EXPECT_STATUS(crec_dump(p, NULL, CREC_DUMP_JSON, &out, &len), CREC_ERR_INVALID_PROGRAM);
  EXPECT_ERROR_MENTIONS("crec_dump: ");
  EXPECT_ERROR_MENTIONS("'orphan'");
  cr_assert_null(out);
  /* the length is optional */
  EXPECT_OK(crec_dump(q, plan_q, CREC_DUMP_TEXT, &out, NULL));
  cr_assert_not_null(out);
  crec_free(out);
  crec_plan_destroy(plan_p);
  crec_plan_destroy(plan_q);
  crec_program_destroy(p);
  crec_program_destroy(q);
  cr_assert_eq(crec_debug_live_objects(), 0);
}
