/*
 * macho - read thin and fat (universal) Mach-O files: slices, arch, UUID, segments, sections,
 * the symbol table.
 *
 * Layouts follow Apple's <mach-o/loader.h>, <mach-o/fat.h> and <mach-o/nlist.h>
 * (mach_header[_64], fat_header/fat_arch[_64], load_command, segment_command[_64],
 * section[_64], uuid_command, symtab_command, nlist[_64]). Fat headers are big-endian, the
 * Mach-O itself little-endian (every arch we read is); a byte-swapped MH_CIGAM file is rejected.
 *
 * Every offset, size and count is checked against the bytes given before it is used: a
 * truncated, bit-flipped or hostile file yields ERR_INVALID with a message naming the field,
 * never an out-of-bounds read and never an allocation proportional to a count in the file.
 * Nothing here allocates: views point into the caller's bytes, which must outlive them.
 */
#ifndef STACKSIFT_MACHO_MACHO_H
#define STACKSIFT_MACHO_MACHO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

#define MACHO_MAX_SLICES 16   /* fat files with more slices are rejected */
#define MACHO_MAX_SECTIONS 255 /* per image, as the n_sect field of nlist allows */

/* CPU types from <mach/machine.h>. */
#define MACHO_CPU_ARCH_ABI64 0x01000000u
#define MACHO_CPU_ARCH_ABI64_32 0x02000000u
#define MACHO_CPU_TYPE_X86 7u
#define MACHO_CPU_TYPE_X86_64 (7u | MACHO_CPU_ARCH_ABI64)
#define MACHO_CPU_TYPE_ARM 12u
#define MACHO_CPU_TYPE_ARM64 (12u | MACHO_CPU_ARCH_ABI64)
#define MACHO_CPU_TYPE_ARM64_32 (12u | MACHO_CPU_ARCH_ABI64_32)

/* One architecture slice of a (possibly fat) file. */
typedef struct {
    uint32_t cputype;    /* CPU_TYPE_* */
    uint32_t cpusubtype; /* CPU_SUBTYPE_*, capability bits masked off */
    uint64_t offset;     /* byte offset of the slice in the file (0 for a thin file) */
    uint64_t size;       /* byte size of the slice */
} macho_slice;

typedef struct {
    char segname[17];  /* e.g. "__DWARF", NUL-terminated */
    char sectname[17]; /* e.g. "__debug_info", NUL-terminated */
    uint64_t addr;     /* vm address */
    uint64_t size;     /* bytes */
    uint32_t offset;   /* file offset inside the slice; 0 for zero-fill sections */
    uint32_t flags;    /* section type and attributes */
    const uint8_t *data; /* `size` bytes inside the slice, or NULL (zero-fill / not in file) */
} macho_section;

/* A symbol-table entry, as in struct nlist_64. */
typedef struct {
    const char *name;   /* NUL-terminated inside the string table (validated) */
    uint64_t value;     /* address for N_SECT symbols */
    uint8_t type;       /* n_type */
    uint8_t sect;       /* n_sect, 1-based; 0 = NO_SECT */
    uint16_t desc;      /* n_desc */
} macho_symbol;

/* A parsed thin Mach-O image (one slice). Views borrow the caller's bytes. */
typedef struct {
    const uint8_t *data;    /* the slice */
    size_t len;             /* slice length in bytes */
    uint32_t cputype, cpusubtype;
    uint32_t filetype;      /* MH_EXECUTE=2, MH_DYLIB=6, MH_DSYM=10, ... */
    bool is64;              /* mach_header_64 */
    bool has_uuid;
    uint8_t uuid[16];       /* LC_UUID */
    bool has_text;
    uint64_t text_vmaddr;   /* __TEXT segment vmaddr */
    uint64_t text_vmsize;   /* __TEXT segment vmsize */
    size_t nsections;
    macho_section sections[MACHO_MAX_SECTIONS];
    /* LC_SYMTAB, validated: symoff+nsyms*entry and stroff+strsize lie inside the slice */
    uint32_t nsyms;
    const uint8_t *symtab;  /* nsyms entries of 12 (32-bit) or 16 (64-bit) bytes */
    const char *strtab;
    uint32_t strsize;
} macho_image;

/* macho_slices - list the slices of `data` (`len` bytes): one for a thin file, one per
 * fat_arch for FAT_MAGIC / FAT_MAGIC_64. Writes at most MACHO_MAX_SLICES to out.
 * Errors  ERR_INVALID (not Mach-O, truncated, slice outside the file, too many slices). */
err_code macho_slices(macho_slice out[MACHO_MAX_SLICES], size_t *n, const uint8_t *data,
                      size_t len, err_info *err);

/* macho_parse - parse the thin Mach-O at `data` (`len` bytes, e.g. one slice) into *out.
 * Errors  ERR_INVALID (bad magic, truncated header or commands, sizes out of range),
 *         ERR_UNSUPPORTED (big-endian file). */
err_code macho_parse(macho_image *out, const uint8_t *data, size_t len, err_info *err);

/* macho_section_find - the section named segname,sectname, or NULL. */
const macho_section *macho_section_find(const macho_image *img, const char *segname,
                                        const char *sectname);

/* macho_symbol_get - decode entry `i` (< img->nsyms) of the symbol table; false if its name
 * offset lies outside the string table (the entry should then be skipped). */
bool macho_symbol_get(macho_symbol *out, const macho_image *img, uint32_t i);

/* macho_arch_name - "arm64", "arm64e", "arm64_32", "armv7", "armv7s", "armv7k", "x86_64",
 * "x86_64h", "i386", ...; "unknown" for anything else. Static string. */
const char *macho_arch_name(uint32_t cputype, uint32_t cpusubtype);

/* macho_arch_parse - inverse of macho_arch_name; false for an unknown name. */
bool macho_arch_parse(const char *name, uint32_t *cputype, uint32_t *cpusubtype);

/* macho_uuid_format - "XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX" upper-case into out (37 bytes). */
void macho_uuid_format(char out[37], const uint8_t uuid[16]);

/* macho_uuid_parse - accept 32 hex digits with or without dashes, any case, optionally in
 * <angle brackets>; false otherwise. */
bool macho_uuid_parse(uint8_t out[16], const char *s, size_t len);

#endif
