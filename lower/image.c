/* Reading kernel images: which format an image is, whether it holds a kernel,
 * and the byte size of each of the kernel's parameters (its compiled
 * signature). PTX is read from the .entry's parameter list; a cubin from its
 * symbol table and the EIATTR_KPARAM_INFO records of .nv.info.<kernel>; a
 * fatbin through the PTX and ELF entries it embeds uncompressed. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lower_internal.h"

static bool is_ptx(const unsigned char *d, size_t n) {
  static const char needle[] = ".entry";
  size_t printable = 0, limit = n < 4096 ? n : 4096;
  for (size_t i = 0; i < limit; i++) printable += d[i] == '\n' || d[i] == '\t' || d[i] == '\r' || (d[i] >= 0x20 && d[i] < 0x7f) || d[i] == 0;
  if (printable != limit) return false;
  for (size_t i = 0; i + sizeof needle - 1 <= n; i++)
    if (memcmp(d + i, needle, sizeof needle - 1) == 0) return true;
  return false;
}

static bool is_elf(const unsigned char *d, size_t n) {
  return n >= 64 && d[0] == 0x7f && d[1] == 'E' && d[2] == 'L' && d[3] == 'F';
}

static bool is_fatbin(const unsigned char *d, size_t n) {
  return n >= 16 && d[0] == 0x50 && d[1] == 0xED && d[2] == 0x55 && d[3] == 0xBA;
}

bool crec__lw_image_format(const void *data, size_t size, crec_image_format *format) {
  const unsigned char *d = data;
  if (is_elf(d, size)) *format = CREC_IMAGE_CUBIN;
  else if (is_fatbin(d, size)) *format = CREC_IMAGE_FATBIN;
  else if (is_ptx(d, size)) *format = CREC_IMAGE_PTX;
  else return false;
  return true;
}

/* ---- PTX ---- */

static bool ident_char(char c) { return isalnum((unsigned char)c) || c == '_' || c == '$' || c == '.'; }

static uint32_t ptx_type_size(const char *t, size_t n) {
  if (n < 2 || t[0] != '.') return 0;
  char kind = t[1];
  if (kind != 'u' && kind != 's' && kind != 'b' && kind != 'f') return 0;
  unsigned long bits = strtoul(t + 2, NULL, 10);
  return bits == 8 || bits == 16 || bits == 32 || bits == 64 ? (uint32_t)(bits / 8) : 0;
}

static int ptx_kernel(const char *d, size_t n, const char *entry, uint32_t *sizes, uint32_t cap,
                      uint32_t *count) {
  size_t elen = strlen(entry);
  for (size_t i = 0; i + 6 < n; i++) {
    if (memcmp(d + i, ".entry", 6) != 0 || (i > 0 && ident_char(d[i - 1])) || ident_char(d[i + 6])) continue;
    size_t j = i + 6;
    while (j < n && isspace((unsigned char)d[j])) j++;
    size_t start = j;
    while (j < n && ident_char(d[j])) j++;
    if (j - start != elen || memcmp(d + start, entry, elen) != 0) continue;
    while (j < n && isspace((unsigned char)d[j])) j++;
    *count = 0;
    if (j >= n || d[j] != '(') return 1; /* no parameter list */
    j++;
    /* parameters: ".param <qualifiers> .type name[<n>]" separated by commas */
    while (j < n && d[j] != ')') {
      size_t end = j;
      while (end < n && d[end] != ',' && d[end] != ')') end++;
      uint32_t size = 0, elems = 1;
      bool any = false;
      for (size_t k = j; k < end;) {
        while (k < end && isspace((unsigned char)d[k])) k++;
        size_t t = k;
        while (k < end && !isspace((unsigned char)d[k]) && d[k] != '[') k++;
        uint32_t ts = ptx_type_size(d + t, k - t);
        if (ts) size = ts;
        any = any || k > t;
        if (k < end && d[k] == '[') {
          elems = (uint32_t)strtoul(d + k + 1, NULL, 10);
          while (k < end && d[k] != ']') k++;
          if (k < end) k++;
        }
      }
      if (any) {
        if (*count >= cap) return -1;
        sizes[(*count)++] = size * (elems ? elems : 1);
      }
      j = end < n && d[end] == ',' ? end + 1 : end;
    }
    return 1;
  }
  return 0;
}

/* ---- ELF (cubin) ---- */

static uint16_t rd16(const unsigned char *p) { return (uint16_t)crec__get_le(p, 2); }
static uint32_t rd32(const unsigned char *p) { return (uint32_t)crec__get_le(p, 4); }
static uint64_t rd64(const unsigned char *p) { return crec__get_le(p, 8); }

typedef struct elf_sec {
  uint32_t name, type, link;
  uint64_t offset, size, entsize;
} elf_sec;

static bool elf_section(const unsigned char *d, size_t n, uint32_t i, elf_sec *s) {
  uint64_t shoff = rd64(d + 0x28);
  uint16_t shentsize = rd16(d + 0x3a), shnum = rd16(d + 0x3c);
  if (i >= shnum || shentsize < 64 || shoff > n || (uint64_t)shnum * shentsize > n - shoff) return false;
  const unsigned char *h = d + shoff + (uint64_t)i * shentsize;
  s->name = rd32(h);
  s->type = rd32(h + 4);
  s->offset = rd64(h + 0x18);
  s->size = rd64(h + 0x20);
  s->link = rd32(h + 0x28);
  s->entsize = rd64(h + 0x38);
  return s->offset <= n && s->size <= n - s->offset;
}

static const char *elf_string(const unsigned char *d, const elf_sec *strtab, uint32_t off) {
  if (off >= strtab->size) return NULL;
  const char *s = (const char *)d + strtab->offset + off;
  if (!memchr(s, 0, strtab->size - off)) return NULL;
  return s;
}

static int elf_kernel(const unsigned char *d, size_t n, const char *entry, uint32_t *sizes, uint32_t cap,
                      uint32_t *count, bool *known) {
  if (!is_elf(d, n) || d[4] != 2 /* ELFCLASS64 */ || d[5] != 1 /* little endian */) return -1;
  uint16_t shnum = rd16(d + 0x3c), shstrndx = rd16(d + 0x3e);
  elf_sec shstr;
  if (!elf_section(d, n, shstrndx, &shstr)) return -1;
  bool found = false;
  for (uint32_t i = 0; i < shnum && !found; i++) {
    elf_sec s, strtab;
    if (!elf_section(d, n, i, &s) || s.type != 2 /* SHT_SYMTAB */ || s.entsize < 24) continue;
    if (!elf_section(d, n, s.link, &strtab)) continue;
    for (uint64_t k = 0; k + s.entsize <= s.size; k += s.entsize) {
      const unsigned char *sym = d + s.offset + k;
      const char *name = elf_string(d, &strtab, rd32(sym));
      if (name && (sym[4] & 0xf) == 2 /* STT_FUNC */ && strcmp(name, entry) == 0) {
        found = true;
        break;
      }
    }
  }
  if (!found) return 0;
  /* parameters: EIATTR_KPARAM_INFO (0x17) records in .nv.info.<entry> */
  char want[512];
  snprintf(want, sizeof want, ".nv.info.%s", entry);
  *known = false;
  *count = 0;
  for (uint32_t i = 0; i < shnum; i++) {
    elf_sec s;
    if (!elf_section(d, n, i, &s)) continue;
    const char *name = elf_string(d, &shstr, s.name);
    if (!name || strcmp(name, want) != 0) continue;
    *known = true;
    const unsigned char *p = d + s.offset, *end = p + s.size;
    while (p + 2 <= end) {
      uint8_t fmt = p[0], attr = p[1];
      p += 2;
      size_t len = fmt == 1 ? 0 : fmt == 2 ? 1 : fmt == 3 ? 2 : 0;
      if (fmt == 4) {
        if (p + 2 > end) break;
        len = rd16(p);
        p += 2;
      } else if (fmt < 1 || fmt > 4) {
        *known = false; /* an attribute format this reader does not know */
        break;
      }
      if (p + len > end) break;
      if (attr == 0x17 && fmt == 4 && len >= 12) {
        uint16_t ordinal = rd16(p + 4);
        uint32_t size = (rd32(p + 8) >> 18) & 0x3fff;
        if (ordinal >= cap) return -1;
        sizes[ordinal] = size;
        if ((uint32_t)ordinal + 1 > *count) *count = ordinal + 1u;
      }
      p += len;
    }
  }
  return 1;
}

/* ---- fatbin ---- */

static int fatbin_kernel(const unsigned char *d, size_t n, const char *entry, uint32_t *sizes, uint32_t cap,
                         uint32_t *count, bool *known) {
  uint16_t hsize = rd16(d + 6);
  uint64_t fat = rd64(d + 8);
  if (hsize < 16 || hsize > n || fat > n - hsize) return -1;
  size_t pos = hsize, end = hsize + fat;
  bool readable = false;
  while (pos + 16 <= end) {
    uint16_t kind = rd16(d + pos);
    uint32_t ehsize = rd32(d + pos + 4);
    uint64_t payload = rd64(d + pos + 8);
    if (ehsize < 16 || ehsize > end - pos || payload > end - pos - ehsize) break;
    const unsigned char *body = d + pos + ehsize;
    int r = -1;
    if (kind == 2 && is_elf(body, payload)) {
      r = elf_kernel(body, payload, entry, sizes, cap, count, known);
    } else if (kind == 1 && is_ptx(body, payload)) {
      r = ptx_kernel((const char *)body, payload, entry, sizes, cap, count);
      *known = r == 1;
    }
    if (r == 1) return 1;
    readable = readable || r == 0;
    pos += ehsize + payload;
  }
  return readable ? 0 : -1;
}

int crec__lw_image_kernel(const void *data, size_t size, crec_image_format format, const char *entry,
                    uint32_t *sizes, uint32_t cap, uint32_t *count, bool *known) {
  *count = 0;
  *known = false;
  const unsigned char *d = data;
  switch (format) {
    case CREC_IMAGE_PTX: {
      int r = ptx_kernel(data, size, entry, sizes, cap, count);
      *known = r == 1;
      return r;
    }
    case CREC_IMAGE_CUBIN: return elf_kernel(d, size, entry, sizes, cap, count, known);
    case CREC_IMAGE_FATBIN: return is_fatbin(d, size) ? fatbin_kernel(d, size, entry, sizes, cap, count, known) : -1;
  }
  return -1;
}
