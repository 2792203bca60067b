/*
 * Mach-O reader. Field layouts: Apple <mach-o/loader.h>, <mach-o/fat.h>, <mach-o/nlist.h>.
 * Every read goes through rd32/rd64 with an explicit bounds check by the caller.
 */
#include "macho/macho.h"

#include <ctype.h>
#include <string.h>

#include "base/hex.h"

#define MH_MAGIC 0xfeedfaceu
#define MH_MAGIC_64 0xfeedfacfu
#define MH_CIGAM 0xcefaedfeu
#define MH_CIGAM_64 0xcffaedfeu
#define FAT_MAGIC 0xcafebabeu
#define FAT_MAGIC_64 0xcafebabfu

#define LC_SEGMENT 0x1u
#define LC_SYMTAB 0x2u
#define LC_SEGMENT_64 0x19u
#define LC_UUID 0x1bu

#define CPU_SUBTYPE_MASK 0xff000000u

static uint32_t rd32le(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64le(const uint8_t *p)
{
    return (uint64_t)rd32le(p) | (uint64_t)rd32le(p + 4) << 32;
}

static uint32_t rd32be(const uint8_t *p)
{
    return (uint32_t)p[3] | (uint32_t)p[2] << 8 | (uint32_t)p[1] << 16 | (uint32_t)p[0] << 24;
}

static uint64_t rd64be(const uint8_t *p)
{
    return (uint64_t)rd32be(p) << 32 | (uint64_t)rd32be(p + 4);
}

/* true if [off, off+size) lies within len, without overflow */
static bool in_bounds(uint64_t off, uint64_t size, uint64_t len)
{
    return off <= len && size <= len - off;
}

err_code macho_slices(macho_slice out[MACHO_MAX_SLICES], size_t *n, const uint8_t *data,
                      size_t len, err_info *err)
{
    *n = 0;
    if (len < 4)
        return err_set(err, ERR_INVALID, "not a Mach-O file: %zu bytes is too short", len);
    uint32_t magic_be = rd32be(data), magic_le = rd32le(data);
    if (magic_le == MH_MAGIC || magic_le == MH_MAGIC_64) {
        if (len < 28)
            return err_set(err, ERR_INVALID, "truncated Mach-O header: %zu bytes", len);
        out[0].cputype = rd32le(data + 4);
        out[0].cpusubtype = rd32le(data + 8) & ~CPU_SUBTYPE_MASK;
        out[0].offset = 0;
        out[0].size = len;
        *n = 1;
        return ERR_OK;
    }
    if (magic_le == MH_CIGAM || magic_le == MH_CIGAM_64)
        return err_set(err, ERR_UNSUPPORTED, "big-endian Mach-O files are not supported");
    if (magic_be != FAT_MAGIC && magic_be != FAT_MAGIC_64)
        return err_set(err, ERR_INVALID, "not a Mach-O file: magic 0x%08x", magic_be);
    bool fat64 = magic_be == FAT_MAGIC_64;
    if (len < 8)
        return err_set(err, ERR_INVALID, "truncated fat header: %zu bytes", len);
    uint32_t nfat = rd32be(data + 4);
    /* Java class files share 0xcafebabe; their "count" (version) is >= 45 */
    if (nfat == 0 || nfat > MACHO_MAX_SLICES)
        return err_set(err, ERR_INVALID, "fat header declares %u slices (1-%d allowed)", nfat,
                       MACHO_MAX_SLICES);
    size_t entry = fat64 ? 32 : 20;
    if (!in_bounds(8, (uint64_t)nfat * entry, len))
        return err_set(err, ERR_INVALID, "truncated fat header: %u slices need %zu bytes, file has %zu",
                       nfat, 8 + nfat * entry, len);
    for (uint32_t i = 0; i < nfat; i++) {
        const uint8_t *fa = data + 8 + i * entry;
        macho_slice *s = &out[i];
        s->cputype = rd32be(fa);
        s->cpusubtype = rd32be(fa + 4) & ~CPU_SUBTYPE_MASK;
        s->offset = fat64 ? rd64be(fa + 8) : rd32be(fa + 8);
        s->size = fat64 ? rd64be(fa + 16) : rd32be(fa + 12);
        if (!in_bounds(s->offset, s->size, len) || s->size < 28)
            return err_set(err, ERR_INVALID,
                           "fat slice %u (offset %llu, size %llu) lies outside the %zu-byte file", i,
                           (unsigned long long)s->offset, (unsigned long long)s->size, len);
        for (uint32_t j = 0; j < i; j++)
            if (out[j].cputype == s->cputype && out[j].cpusubtype == s->cpusubtype)
                return err_set(err, ERR_INVALID, "fat file has two %s slices",
                               macho_arch_name(s->cputype, s->cpusubtype));
    }
    *n = nfat;
    return ERR_OK;
}

static void copy_name(char out[17], const uint8_t *p)
{
    memcpy(out, p, 16);
    out[16] = '\0';
}

static err_code parse_segment(macho_image *img, const uint8_t *cmd, uint32_t cmdsize, bool is64,
                              uint32_t cmd_index, err_info *err)
{
    size_t hdr = is64 ? 72 : 56, sect_size = is64 ? 80 : 68;
    if (cmdsize < hdr)
        return err_set(err, ERR_INVALID, "load command %u: segment command of %u bytes is too short",
                       cmd_index, cmdsize);
    char segname[17];
    copy_name(segname, cmd + 8);
    uint64_t vmaddr = is64 ? rd64le(cmd + 24) : rd32le(cmd + 24);
    uint64_t vmsize = is64 ? rd64le(cmd + 32) : rd32le(cmd + 28);
    uint32_t nsects = rd32le(cmd + (is64 ? 64 : 48));
    if (nsects > (cmdsize - hdr) / sect_size)
        return err_set(err, ERR_INVALID, "load command %u: segment %s declares %u sections, room for %zu",
                       cmd_index, segname, nsects, (cmdsize - hdr) / sect_size);
    if (strcmp(segname, "__TEXT") == 0 && !img->has_text) {
        img->has_text = true;
        img->text_vmaddr = vmaddr;
        img->text_vmsize = vmsize;
    }
    for (uint32_t i = 0; i < nsects; i++) {
        const uint8_t *s = cmd + hdr + i * sect_size;
        if (img->nsections == MACHO_MAX_SECTIONS)
            return err_set(err, ERR_INVALID, "more than %d sections", MACHO_MAX_SECTIONS);
        macho_section *sec = &img->sections[img->nsections++];
        copy_name(sec->sectname, s);
        copy_name(sec->segname, s + 16);
        sec->addr = is64 ? rd64le(s + 32) : rd32le(s + 32);
        sec->size = is64 ? rd64le(s + 40) : rd32le(s + 36);
        sec->offset = rd32le(s + (is64 ? 48 : 40));
        sec->flags = rd32le(s + (is64 ? 64 : 56));
        uint32_t type = sec->flags & 0xff;
        bool zerofill = type == 0x1 || type == 0xc || type == 0x12; /* S_ZEROFILL, GB, TLV */
        sec->data = NULL;
        if (!zerofill && sec->offset != 0 && sec->size != 0) {
            if (!in_bounds(sec->offset, sec->size, img->len))
                return err_set(err, ERR_INVALID,
                               "section %s,%s (offset %u, size %llu) lies outside the %zu-byte image",
                               sec->segname, sec->sectname, sec->offset,
                               (unsigned long long)sec->size, img->len);
            sec->data = img->data + sec->offset;
        }
    }
    return ERR_OK;
}

err_code macho_parse(macho_image *out, const uint8_t *data, size_t len, err_info *err)
{
    memset(out, 0, offsetof(macho_image, sections));
    out->nsections = 0;
    out->nsyms = 0;
    out->symtab = NULL;
    out->strtab = NULL;
    out->strsize = 0;
    if (len < 28)
        return err_set(err, ERR_INVALID, "truncated Mach-O header: %zu bytes", len);
    uint32_t magic = rd32le(data);
    if (magic == MH_CIGAM || magic == MH_CIGAM_64)
        return err_set(err, ERR_UNSUPPORTED, "big-endian Mach-O files are not supported");
    if (magic != MH_MAGIC && magic != MH_MAGIC_64)
        return err_set(err, ERR_INVALID, "not a thin Mach-O: magic 0x%08x", magic);
    out->data = data;
    out->len = len;
    out->is64 = magic == MH_MAGIC_64;
    out->cputype = rd32le(data + 4);
    out->cpusubtype = rd32le(data + 8) & ~CPU_SUBTYPE_MASK;
    out->filetype = rd32le(data + 12);
    uint32_t ncmds = rd32le(data + 16), sizeofcmds = rd32le(data + 20);
    size_t hdr = out->is64 ? 32 : 28;
    if (!in_bounds(hdr, sizeofcmds, len))
        return err_set(err, ERR_INVALID, "load commands (%u bytes) extend past the %zu-byte image",
                       sizeofcmds, len);
    if (ncmds > sizeofcmds / 8)
        return err_set(err, ERR_INVALID, "%u load commands cannot fit in %u bytes", ncmds, sizeofcmds);
    const uint8_t *cmds = data + hdr;
    uint64_t pos = 0;
    for (uint32_t i = 0; i < ncmds; i++) {
        if (!in_bounds(pos, 8, sizeofcmds))
            return err_set(err, ERR_INVALID, "load command %u starts past the end of the commands", i);
        const uint8_t *cmd = cmds + pos;
        uint32_t type = rd32le(cmd) & 0x7fffffffu, cmdsize = rd32le(cmd + 4);
        if (cmdsize < 8 || !in_bounds(pos, cmdsize, sizeofcmds))
            return err_set(err, ERR_INVALID, "load command %u has a bad size %u", i, cmdsize);
        err_code rc = ERR_OK;
        if (type == LC_SEGMENT || type == LC_SEGMENT_64) {
            rc = parse_segment(out, cmd, cmdsize, type == LC_SEGMENT_64, i, err);
        } else if (type == LC_UUID) {
            if (cmdsize < 24)
                return err_set(err, ERR_INVALID, "load command %u: LC_UUID of %u bytes", i, cmdsize);
            memcpy(out->uuid, cmd + 8, 16);
            out->has_uuid = true;
        } else if (type == LC_SYMTAB) {
            if (cmdsize < 24)
                return err_set(err, ERR_INVALID, "load command %u: LC_SYMTAB of %u bytes", i, cmdsize);
            uint32_t symoff = rd32le(cmd + 8), nsyms = rd32le(cmd + 12);
            uint32_t stroff = rd32le(cmd + 16), strsize = rd32le(cmd + 20);
            uint64_t entry = out->is64 ? 16 : 12;
            if (!in_bounds(symoff, (uint64_t)nsyms * entry, len))
                return err_set(err, ERR_INVALID, "symbol table (%u entries at offset %u) lies outside the %zu-byte image",
                               nsyms, symoff, len);
            if (!in_bounds(stroff, strsize, len))
                return err_set(err, ERR_INVALID, "string table (%u bytes at offset %u) lies outside the %zu-byte image",
                               strsize, stroff, len);
            out->nsyms = nsyms;
            out->symtab = nsyms ? data + symoff : NULL;
            out->strtab = strsize ? (const char *)data + stroff : NULL;
            out->strsize = strsize;
        }
        if (rc != ERR_OK)
            return rc;
        pos += cmdsize;
    }
    return ERR_OK;
}

const macho_section *macho_section_find(const macho_image *img, const char *segname,
                                        const char *sectname)
{
    for (size_t i = 0; i < img->nsections; i++)
        if (strcmp(img->sections[i].sectname, sectname) == 0 &&
            (segname == NULL || strcmp(img->sections[i].segname, segname) == 0))
            return &img->sections[i];
    return NULL;
}

bool macho_symbol_get(macho_symbol *out, const macho_image *img, uint32_t i)
{
    if (i >= img->nsyms)
        return false;
    const uint8_t *e = img->symtab + (size_t)i * (img->is64 ? 16 : 12);
    uint32_t strx = rd32le(e);
    out->type = e[4];
    out->sect = e[5];
    out->desc = (uint16_t)(e[6] | e[7] << 8);
    out->value = img->is64 ? rd64le(e + 8) : rd32le(e + 8);
    if (img->strtab == NULL || strx >= img->strsize)
        return false;
    /* the name must end inside the string table */
    if (memchr(img->strtab + strx, '\0', img->strsize - strx) == NULL)
        return false;
    out->name = img->strtab + strx;
    return true;
}

typedef struct {
    uint32_t cputype, cpusubtype;
    const char *name;
} arch_entry;

/* <mach/machine.h>: CPU_SUBTYPE_ARM_V7=9, V7F=10, V7S=11, V7K=12, ARM64_ALL=0, ARM64_V8=1,
 * ARM64E=2, ARM64_32_V8=1, X86_ALL=3, X86_64_H=8 */
static const arch_entry ARCHES[] = {
    {MACHO_CPU_TYPE_ARM64, 0, "arm64"},     {MACHO_CPU_TYPE_ARM64, 1, "arm64v8"},
    {MACHO_CPU_TYPE_ARM64, 2, "arm64e"},    {MACHO_CPU_TYPE_ARM64_32, 1, "arm64_32"},
    {MACHO_CPU_TYPE_ARM64_32, 0, "arm64_32"}, {MACHO_CPU_TYPE_ARM, 9, "armv7"},
    {MACHO_CPU_TYPE_ARM, 11, "armv7s"},     {MACHO_CPU_TYPE_ARM, 12, "armv7k"},
    {MACHO_CPU_TYPE_ARM, 10, "armv7f"},     {MACHO_CPU_TYPE_ARM, 6, "armv6"},
    {MACHO_CPU_TYPE_ARM, 0, "arm"},         {MACHO_CPU_TYPE_X86_64, 3, "x86_64"},
    {MACHO_CPU_TYPE_X86_64, 8, "x86_64h"},  {MACHO_CPU_TYPE_X86, 3, "i386"},
};

const char *macho_arch_name(uint32_t cputype, uint32_t cpusubtype)
{
    cpusubtype &= ~CPU_SUBTYPE_MASK;
    for (size_t i = 0; i < sizeof ARCHES / sizeof ARCHES[0]; i++)
        if (ARCHES[i].cputype == cputype && ARCHES[i].cpusubtype == cpusubtype)
            return ARCHES[i].name;
    /* unknown subtype of a known family: name the family */
    switch (cputype) {
    case MACHO_CPU_TYPE_ARM64:
        return "arm64";
    case MACHO_CPU_TYPE_X86_64:
        return "x86_64";
    case MACHO_CPU_TYPE_X86:
        return "i386";
    case MACHO_CPU_TYPE_ARM:
        return "arm";
    }
    return "unknown";
}

bool macho_arch_parse(const char *name, uint32_t *cputype, uint32_t *cpusubtype)
{
    for (size_t i = 0; i < sizeof ARCHES / sizeof ARCHES[0]; i++)
        if (strcmp(ARCHES[i].name, name) == 0) {
            *cputype = ARCHES[i].cputype;
            *cpusubtype = ARCHES[i].cpusubtype;
            return true;
        }
    return false;
}

void macho_uuid_format(char out[37], const uint8_t u[16])
{
    /* not snprintf: the minidump walk's JSON formats one per frame, where a 16-argument
     * snprintf was a third of the frame's cost */
    hex_uuid_format(out, u, true);
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = tolower(c);
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

bool macho_uuid_parse(uint8_t out[16], const char *s, size_t len)
{
    if (len >= 2 && s[0] == '<' && s[len - 1] == '>')
        s++, len -= 2;
    size_t nd = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '-')
            continue;
        int v = hexval((unsigned char)s[i]);
        if (v < 0 || nd == 32)
            return false;
        if (nd % 2 == 0)
            out[nd / 2] = (uint8_t)(v << 4);
        else
            out[nd / 2] |= (uint8_t)v;
        nd++;
    }
    return nd == 32;
}
