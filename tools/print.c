/* Printing buffers: checksum and first elements by element type. */
#include <inttypes.h>
#include <string.h>

#include "tool.h"

uint64_t crec_tool_checksum(const void *data, uint64_t size) {
  const unsigned char *p = data;
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint64_t i = 0; i < size; i++) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

void crec_tool_format_element(char *out, size_t out_size, crec_element element, const void *p) {
  switch (element) {
    case CREC_ELEMENT_I8: { int8_t v; memcpy(&v, p, 1); snprintf(out, out_size, "%d", v); break; }
    case CREC_ELEMENT_I16: { int16_t v; memcpy(&v, p, 2); snprintf(out, out_size, "%d", v); break; }
    case CREC_ELEMENT_I32: { int32_t v; memcpy(&v, p, 4); snprintf(out, out_size, "%" PRId32, v); break; }
    case CREC_ELEMENT_I64: { int64_t v; memcpy(&v, p, 8); snprintf(out, out_size, "%" PRId64, v); break; }
    case CREC_ELEMENT_F16: {
      uint16_t h;
      memcpy(&h, p, 2);
      snprintf(out, out_size, "%.5g", (double)crec_tool_f16_to_f32(h));
      break;
    }
    case CREC_ELEMENT_BF16: {
      uint16_t h;
      memcpy(&h, p, 2);
      snprintf(out, out_size, "%.4g", (double)crec_tool_bf16_to_f32(h));
      break;
    }
    case CREC_ELEMENT_F32: { float v; memcpy(&v, p, 4); snprintf(out, out_size, "%.7g", (double)v); break; }
    case CREC_ELEMENT_F64: { double v; memcpy(&v, p, 8); snprintf(out, out_size, "%.10g", v); break; }
    default: snprintf(out, out_size, "0x%02x", *(const unsigned char *)p); break;
  }
}

void crec_tool_print_buffer(FILE *out, const char *name, crec_element element, const void *data,
                            uint64_t size, size_t max_elements) {
  size_t es = crec_element_size(element);
  if (!es) es = 1, element = CREC_ELEMENT_BYTES;
  uint64_t count = size / es;
  fprintf(out, "%s: %s[%" PRIu64 "] checksum %016" PRIx64 ":", name, crec_element_name(element), count,
          crec_tool_checksum(data, size));
  const unsigned char *p = data;
  uint64_t shown = count < max_elements ? count : max_elements;
  for (uint64_t i = 0; i < shown; i++) {
    char e[64];
    crec_tool_format_element(e, sizeof e, element, p + i * es);
    fprintf(out, " %s", e);
  }
  if (count > shown) fputs(" ...", out);
  fputc('\n', out);
}
