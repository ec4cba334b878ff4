/* Input SPECs (fill:V, iota, random:SEED, a file), scalar values, and the
 * half-precision conversions they need. */
#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tool.h"

/* ---- half and bfloat16 --------------------------------------------------- */

static uint32_t f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

static float bits_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

uint16_t crec_tool_f32_to_f16(float f) {
  uint32_t x = f32_bits(f);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
  uint32_t exp = (x >> 23) & 0xffu, man = x & 0x7fffffu;
  if (exp == 0xff) return (uint16_t)(sign | 0x7c00u | (man ? 0x200u | (man >> 13) : 0));
  int e = (int)exp - 127 + 15;
  if (e >= 0x1f) return (uint16_t)(sign | 0x7c00u); /* overflow to infinity */
  if (e <= 0) {
    /* subnormal half (or zero): shift the full mantissa into place, rounding to nearest even */
    if (e < -10) return sign;
    uint32_t m = man | 0x800000u;
    int shift = 14 - e;
    uint32_t h = m >> shift, rest = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rest > half || (rest == half && (h & 1))) h++;
    return (uint16_t)(sign | h);
  }
  uint32_t h = ((uint32_t)e << 10) | (man >> 13), rest = man & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1))) h++; /* may carry into the exponent: fine */
  return (uint16_t)(sign | h);
}

float crec_tool_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  if (exp == 0x1f) return bits_f32(sign | 0x7f800000u | (man << 13));
  if (exp == 0) {
    float v = (float)man * 0x1p-24f;
    return sign ? -v : v;
  }
  return bits_f32(sign | ((exp - 15 + 127) << 23) | (man << 13));
}

uint16_t crec_tool_f32_to_bf16(float f) {
  uint32_t x = f32_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u); /* quiet NaN */
  uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return (uint16_t)((x + rounding) >> 16);
}

float crec_tool_bf16_to_f32(uint16_t h) { return bits_f32((uint32_t)h << 16); }

/* ---- numbers --------------------------------------------------------------- */

/* Parses a whole integer (decimal or 0x hex, optional sign) into a sign and a
 * magnitude. Returns 0, or -1 when it is not an integer, or -2 on overflow. */
static int parse_integer(const char *s, int *negative, uint64_t *magnitude) {
  *negative = 0;
  if (*s == '-' || *s == '+') *negative = *s++ == '-';
  int base = 10;
  if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    s += 2;
  }
  if (!*s) return -1;
  for (const char *p = s; *p; p++) {
    int ok = base == 16 ? (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f') || (*p >= 'A' && *p <= 'F')
                        : (*p >= '0' && *p <= '9');
    if (!ok) return -1;
  }
  errno = 0;
  unsigned long long v = strtoull(s, NULL, base);
  if (errno == ERANGE) return -2;
  *magnitude = v;
  return 0;
}

/* Parses a whole C floating-point number. Returns 0, -1 (not a number) or -2 (overflow). */
static int parse_double(const char *s, double *out) {
  if (!*s || *s == ' ' || *s == '\t' || *s == '\n') return -1;
  errno = 0;
  char *end = NULL;
  double v = strtod(s, &end);
  if (end == s || *end) return -1;
  if (errno == ERANGE && (v == HUGE_VAL || v == -HUGE_VAL)) return -2;
  *out = v;
  return 0;
}

/* Checks that integer (negative, magnitude) fits a signed type of `bits`, and
 * when `allow_unsigned`, also its unsigned range (a bit pattern). */
static int fits(int negative, uint64_t magnitude, unsigned bits, int allow_unsigned, int64_t *out) {
  uint64_t smax = bits == 64 ? (uint64_t)INT64_MAX : (1ull << (bits - 1)) - 1;
  uint64_t umax = bits == 64 ? UINT64_MAX : (1ull << bits) - 1;
  if (negative) {
    if (magnitude > smax + 1) return 0;
    *out = magnitude == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)magnitude;
    return 1;
  }
  if (magnitude > (allow_unsigned ? umax : smax)) return 0;
  *out = (int64_t)magnitude; /* values above INT64_MAX wrap to their bit pattern */
  return 1;
}

int crec_tool_parse_scalar(const char *text, crec_type type, crec_value *out, crec_tool_diag *d) {
  memset(out, 0, sizeof *out);
  switch (type) {
    case CREC_TYPE_I32:
    case CREC_TYPE_I64: {
      int neg;
      uint64_t mag;
      int r = parse_integer(text, &neg, &mag);
      unsigned bits = type == CREC_TYPE_I32 ? 32 : 64;
      int64_t v;
      if (r == -1) return crec_tool_fail(d, NULL, "'%s' is not an integer (the scalar is %s)", text, crec_type_name(type));
      if (r == -2 || !fits(neg, mag, bits, 0, &v))
        return crec_tool_fail(d, NULL, "%s is out of range for %s", text, crec_type_name(type));
      if (type == CREC_TYPE_I32) out->i32 = (int32_t)v;
      else out->i64 = v;
      return 0;
    }
    case CREC_TYPE_F32:
    case CREC_TYPE_F64: {
      double v;
      int r = parse_double(text, &v);
      if (r == -1) return crec_tool_fail(d, NULL, "'%s' is not a number (the scalar is %s)", text, crec_type_name(type));
      if (r == -2 || (type == CREC_TYPE_F32 && isfinite(v) && fabs(v) > FLT_MAX))
        return crec_tool_fail(d, NULL, "%s is out of range for %s", text, crec_type_name(type));
      if (type == CREC_TYPE_F32) out->f32 = (float)v;
      else out->f64 = v;
      return 0;
    }
    default:
      return crec_tool_fail(d, NULL, "scalar type %d is unknown", (int)type);
  }
}

/* ---- specs ----------------------------------------------------------------- */

int crec_tool_spec_parse(const char *text, crec_tool_spec *out, crec_tool_diag *d) {
  memset(out, 0, sizeof *out);
  out->text = text;
  if (!*text) return crec_tool_fail(d, NULL, "empty SPEC (expected fill:V, iota, random:SEED or a file)");
  if (!strncmp(text, "fill:", 5)) {
    out->kind = CREC_TOOL_SPEC_FILL;
    out->value = text + 5;
    int neg;
    uint64_t mag;
    int r = parse_integer(out->value, &neg, &mag);
    if (r == 0) {
      out->value_is_integer = 1;
      out->ivalue = neg ? (int64_t)(0 - mag) : (int64_t)mag;
      out->fvalue = neg ? -(double)mag : (double)mag;
      return 0;
    }
    if (r == -2) return crec_tool_fail(d, NULL, "fill value %s is out of range for every element type", out->value);
    r = parse_double(out->value, &out->fvalue);
    if (r == -1)
      return crec_tool_fail(d, NULL, "fill value '%s' is not a number (expected fill:V, e.g. fill:0 or fill:1.5)",
                            out->value);
    if (r == -2) return crec_tool_fail(d, NULL, "fill value %s is out of range for every element type", out->value);
    return 0;
  }
  if (!strcmp(text, "iota")) {
    out->kind = CREC_TOOL_SPEC_IOTA;
    return 0;
  }
  if (!strncmp(text, "random:", 7)) {
    out->kind = CREC_TOOL_SPEC_RANDOM;
    int neg;
    uint64_t mag;
    if (parse_integer(text + 7, &neg, &mag) != 0 || neg)
      return crec_tool_fail(d, NULL, "random seed '%s' is not an unsigned 64-bit integer (expected random:SEED, e.g. random:7)",
                            text + 7);
    out->seed = mag;
    return 0;
  }
  if (!strcmp(text, "random") || !strcmp(text, "fill"))
    return crec_tool_fail(d, NULL, "'%s' needs a value: %s", text, !strcmp(text, "fill") ? "fill:V" : "random:SEED");
  out->kind = CREC_TOOL_SPEC_FILE;
  out->path = text;
  struct stat st;
  if (stat(text, &st) != 0)
    return crec_tool_fail(d, NULL, "'%s' is neither fill:V, iota, random:SEED nor a readable file (%s)", text,
                          strerror(errno));
  if (!S_ISREG(st.st_mode)) return crec_tool_fail(d, NULL, "'%s' is not a regular file", text);
  return 0;
}

int crec_tool_spec_file_size(const crec_tool_spec *spec, uint64_t *size, crec_tool_diag *d) {
  *size = 0;
  if (spec->kind != CREC_TOOL_SPEC_FILE) return 0;
  struct stat st;
  if (stat(spec->path, &st) != 0) return crec_tool_fail(d, NULL, "cannot read '%s': %s", spec->path, strerror(errno));
  *size = (uint64_t)st.st_size;
  return 0;
}

/* Integer width in bits of an element type (0 for floats). */
static unsigned int_bits(crec_element e) {
  switch (e) {
    case CREC_ELEMENT_BYTES:
    case CREC_ELEMENT_I8: return 8;
    case CREC_ELEMENT_I16: return 16;
    case CREC_ELEMENT_I32: return 32;
    case CREC_ELEMENT_I64: return 64;
    default: return 0;
  }
}

/* Stores `v` (as an integer, or as a float for float elements) into element at `p`. */
static void store_int(crec_element e, unsigned char *p, uint64_t bits) {
  switch (int_bits(e)) {
    case 8: { uint8_t v = (uint8_t)bits; memcpy(p, &v, 1); break; }
    case 16: { uint16_t v = (uint16_t)bits; memcpy(p, &v, 2); break; }
    case 32: { uint32_t v = (uint32_t)bits; memcpy(p, &v, 4); break; }
    default: memcpy(p, &bits, 8); break;
  }
}

static void store_float(crec_element e, unsigned char *p, double v) {
  switch (e) {
    case CREC_ELEMENT_F16: { uint16_t h = crec_tool_f32_to_f16((float)v); memcpy(p, &h, 2); break; }
    case CREC_ELEMENT_BF16: { uint16_t h = crec_tool_f32_to_bf16((float)v); memcpy(p, &h, 2); break; }
    case CREC_ELEMENT_F32: { float f = (float)v; memcpy(p, &f, 4); break; }
    default: memcpy(p, &v, 8); break;
  }
}

static uint64_t splitmix64(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

int crec_tool_spec_generate(const crec_tool_spec *spec, crec_element element, void *dst, uint64_t size,
                            crec_tool_diag *d) {
  size_t es = crec_element_size(element);
  if (!es) return crec_tool_fail(d, NULL, "unknown element type %d", (int)element);
  unsigned char *out = dst;
  uint64_t count = size / es;
  unsigned bits = int_bits(element);
  switch (spec->kind) {
    case CREC_TOOL_SPEC_FILL: {
      unsigned char elem[8];
      if (bits) {
        int64_t v;
        if (!spec->value_is_integer)
          return crec_tool_fail(d, NULL, "fill value %s is not an integer, but the buffer holds %s elements",
                                spec->value, crec_element_name(element));
        int neg = spec->value[0] == '-';
        uint64_t mag = neg ? (uint64_t)0 - (uint64_t)spec->ivalue : (uint64_t)spec->ivalue;
        if (!fits(neg, mag, bits, 1, &v))
          return crec_tool_fail(d, NULL, "fill value %s does not fit in %s elements", spec->value,
                                crec_element_name(element));
        store_int(element, elem, (uint64_t)v);
      } else {
        if ((element == CREC_ELEMENT_F32 || element == CREC_ELEMENT_F16 || element == CREC_ELEMENT_BF16) &&
            isfinite(spec->fvalue) && fabs(spec->fvalue) > FLT_MAX)
          return crec_tool_fail(d, NULL, "fill value %s does not fit in %s elements", spec->value,
                                crec_element_name(element));
        store_float(element, elem, spec->fvalue);
      }
      for (uint64_t i = 0; i < count; i++) memcpy(out + i * es, elem, es);
      break;
    }
    case CREC_TOOL_SPEC_IOTA:
      for (uint64_t i = 0; i < count; i++) {
        if (bits) store_int(element, out + i * es, i);
        else store_float(element, out + i * es, (double)i);
      }
      break;
    case CREC_TOOL_SPEC_RANDOM: {
      uint64_t state = spec->seed;
      for (uint64_t i = 0; i < count; i++) {
        uint64_t r = splitmix64(&state);
        if (bits) store_int(element, out + i * es, r);
        else store_float(element, out + i * es, (double)(r >> 11) * 0x1p-52 - 1.0);
      }
      break;
    }
    case CREC_TOOL_SPEC_FILE: {
      FILE *f = fopen(spec->path, "rb");
      if (!f) return crec_tool_fail(d, NULL, "cannot open '%s': %s", spec->path, strerror(errno));
      struct stat st;
      if (fstat(fileno(f), &st) != 0 || (uint64_t)st.st_size != size) {
        fclose(f);
        return crec_tool_fail(d, NULL, "file '%s' has %lld bytes, but the buffer has %" PRIu64, spec->path,
                              (long long)st.st_size, size);
      }
      size_t got = size ? fread(out, 1, (size_t)size, f) : 0;
      fclose(f);
      if (got != size) return crec_tool_fail(d, NULL, "cannot read all %" PRIu64 " bytes of '%s'", size, spec->path);
      return 0;
    }
  }
  /* bytes past the last whole element */
  memset(out + count * es, 0, (size_t)(size - count * es));
  return 0;
}
