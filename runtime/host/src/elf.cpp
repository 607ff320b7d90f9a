// The ELF reader (elf.hpp).
//
// A reader of our own rather than libelf (which comet_reporting links for
// libbpf): the runtime reads five things (the ELF header, the program
// headers, PT_INTERP, PT_DYNAMIC's tags, the dynamic string table), from a
// buffer that may be only the first 64 KiB of a file (the exec lock). Here
// that is a pure function over a std::span with every bound checked in
// plain sight, no global state (libelf wants elf_version() first), no
// allocation beyond the strings returned, and errors that name the field
// at fault, which the unit tests pin down (tests/host_elf_test.cpp, with
// truncated, mutated and garbage buffers under ASan). Reading the dynamic
// string table through libelf would also need the section headers, which a
// stripped or hostile file need not have; ld.so itself goes through the
// program headers, as this does.
#include "comet/host/elf.hpp"

#include <elf.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <optional>

#include "comet/base/sys.hpp"

namespace comet::runtime {

// The reader copies header structs out of the buffer with memcpy, which is
// only right on a little-endian host (the files it accepts are little-endian).
static_assert(std::endian::native == std::endian::little);

namespace {

// Copies a T out of B at OFF when the whole T lies inside B.
template <typename T>
bool load(std::span<const unsigned char> b, uint64_t off, T* out) {
  if (off > b.size() || b.size() - off < sizeof(T)) return false;
  std::memcpy(out, b.data() + off, sizeof(T));
  return true;
}

bool in_bounds(size_t size, uint64_t off, uint64_t len) {
  return off <= size && len <= size - off;
}

std::vector<std::string> split_list(std::string_view s) {
  std::vector<std::string> out;
  for (auto& p : split(s, ':'))
    if (!p.empty()) out.push_back(p);
  return out;
}

// One file being read: its bytes and the name its errors carry.
struct Reader {
  std::span<const unsigned char> b;
  std::string name;
  Error bad(const std::string& why) const { return Error::msg(name + ": " + why); }
};

// What the program headers say.
struct Segments {
  Elf64_Ehdr eh;
  struct Load {
    uint64_t vaddr, filesz, offset;
  };
  std::vector<Load> loads;
  std::optional<Elf64_Phdr> interp, dynamic;
};

// The dynamic section's tags the reader uses; strings as offsets into
// the (not yet located) string table.
struct DynamicTags {
  std::optional<uint64_t> strtab, strsz, soname, rpath, runpath;
  std::vector<uint64_t> needed;
};

Result<Elf64_Ehdr> read_header(const Reader& r) {
  const auto& b = r.b;
  if (b.size() < EI_NIDENT || std::memcmp(b.data(), ELFMAG, SELFMAG) != 0)
    return r.bad("not an ELF file");
  if (b[EI_CLASS] != ELFCLASS64)
    return r.bad(b[EI_CLASS] == ELFCLASS32
                     ? "32-bit ELF is not supported (only 64-bit little-endian)"
                     : "unknown ELF class " + std::to_string(b[EI_CLASS]));
  if (b[EI_DATA] != ELFDATA2LSB)
    return r.bad("big-endian ELF is not supported (only 64-bit little-endian)");
  if (b[EI_VERSION] != EV_CURRENT)
    return r.bad("unknown ELF version " + std::to_string(b[EI_VERSION]));
  Elf64_Ehdr eh;
  if (!load(b, 0, &eh)) return r.bad("truncated ELF header");
  if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN)
    return r.bad("not an executable or shared object (e_type " + std::to_string(eh.e_type) + ")");
  return eh;
}

// e_phnum, or with PN_XNUM the real count from section header 0; checked
// to fit in the buffer at e_phoff with e_phentsize strides.
Result<uint64_t> program_header_count(const Reader& r, const Elf64_Ehdr& eh) {
  uint64_t phnum = eh.e_phnum;
  if (phnum == PN_XNUM) {  // the real count is in section header 0's sh_info
    Elf64_Shdr sh0;
    if (eh.e_shoff == 0 || eh.e_shentsize < sizeof(Elf64_Shdr) || !load(r.b, eh.e_shoff, &sh0))
      return r.bad("e_phnum is PN_XNUM but section header 0 is missing");
    phnum = sh0.sh_info;
  }
  if (phnum > 0) {
    if (eh.e_phentsize < sizeof(Elf64_Phdr)) return r.bad("program header entries are too small");
    if (eh.e_phoff > r.b.size() || (r.b.size() - eh.e_phoff) / eh.e_phentsize < phnum)
      return r.bad("program headers lie outside the file");
  }
  return phnum;
}

Result<Segments> read_segments(const Reader& r) {
  Segments s;
  TRY(s.eh, read_header(r));
  TRY(uint64_t phnum, program_header_count(r, s.eh));
  for (uint64_t i = 0; i < phnum; i++) {
    Elf64_Phdr ph;
    if (!load(r.b, s.eh.e_phoff + i * s.eh.e_phentsize, &ph))
      return r.bad("truncated program header");
    if (ph.p_type == PT_LOAD) {
      s.loads.push_back({ph.p_vaddr, ph.p_filesz, ph.p_offset});
    } else if (ph.p_type == PT_INTERP) {
      if (s.interp) return r.bad("more than one PT_INTERP");
      s.interp = ph;
    } else if (ph.p_type == PT_DYNAMIC) {
      if (s.dynamic) return r.bad("more than one PT_DYNAMIC");
      s.dynamic = ph;
    }
  }
  return s;
}

// PT_INTERP's path, up to its first NUL; "" without PT_INTERP.
Result<std::string> read_interp(const Reader& r, const Segments& s) {
  if (!s.interp) return std::string();
  if (!in_bounds(r.b.size(), s.interp->p_offset, s.interp->p_filesz))
    return r.bad("PT_INTERP lies outside the file");
  std::string_view text(reinterpret_cast<const char*>(r.b.data()) + s.interp->p_offset,
                        s.interp->p_filesz);
  auto nul = text.find('\0');
  if (nul == std::string_view::npos) return r.bad("PT_INTERP is not NUL-terminated");
  if (nul == 0) return r.bad("PT_INTERP is empty");
  return std::string(text.substr(0, nul));
}

Result<DynamicTags> read_dynamic(const Reader& r, const Elf64_Phdr& dynamic) {
  if (!in_bounds(r.b.size(), dynamic.p_offset, dynamic.p_filesz))
    return r.bad("PT_DYNAMIC lies outside the file");
  DynamicTags t;
  const uint64_t count = dynamic.p_filesz / sizeof(Elf64_Dyn);
  for (uint64_t i = 0; i < count; i++) {
    Elf64_Dyn d;
    if (!load(r.b, dynamic.p_offset + i * sizeof(Elf64_Dyn), &d))
      return r.bad("truncated PT_DYNAMIC");
    if (d.d_tag == DT_NULL) break;
    uint64_t v = d.d_un.d_val;
    switch (d.d_tag) {
      case DT_NEEDED:
        t.needed.push_back(v);
        break;
      case DT_STRTAB:
        t.strtab = v;
        break;
      case DT_STRSZ:
        t.strsz = v;
        break;
      case DT_SONAME:
        t.soname = v;
        break;
      case DT_RPATH:
        t.rpath = v;
        break;
      case DT_RUNPATH:
        t.runpath = v;
        break;
      default:
        break;
    }
  }
  return t;
}

// The dynamic string table's bytes. DT_STRTAB is a virtual address: the
// PT_LOAD whose file bytes hold it gives its file offset.
Result<std::string_view> string_table(const Reader& r, const Segments& s, const DynamicTags& t) {
  uint64_t str_off = 0, str_len = 0;
  bool mapped = false;
  for (const auto& l : s.loads) {
    if (*t.strtab < l.vaddr || *t.strtab - l.vaddr >= l.filesz) continue;
    uint64_t delta = *t.strtab - l.vaddr;
    if (delta > UINT64_MAX - l.offset) return r.bad("DT_STRTAB offset overflows");
    str_off = l.offset + delta;
    str_len = l.filesz - delta;
    mapped = true;
    break;
  }
  if (!mapped) return r.bad("DT_STRTAB lies outside every PT_LOAD segment");
  if (t.strsz) str_len = std::min(str_len, *t.strsz);
  if (!in_bounds(r.b.size(), str_off, str_len))
    return r.bad("the dynamic string table lies outside the file");
  return std::string_view(reinterpret_cast<const char*>(r.b.data()) + str_off, str_len);
}

// The NUL-terminated string at offset K of TABLE; WHAT names the tag.
Result<std::string> string_at(const Reader& r, std::string_view table, uint64_t k,
                              const char* what) {
  if (k >= table.size())
    return r.bad(std::string(what) + " string offset " + std::to_string(k) +
                 " is outside the table");
  auto rest = table.substr(k);
  auto nul = rest.find('\0');
  if (nul == std::string_view::npos)
    return r.bad(std::string(what) + " string is not NUL-terminated");
  return std::string(rest.substr(0, nul));
}

// DT_NEEDED, DT_SONAME, DT_RPATH and DT_RUNPATH into INFO.
Status read_dynamic_strings(const Reader& r, const Segments& s, const DynamicTags& t,
                            ElfInfo& info) {
  if (t.needed.empty() && !t.soname && !t.rpath && !t.runpath) return ok();
  if (!t.strtab) return r.bad("DT_NEEDED without DT_STRTAB");
  TRY(std::string_view table, string_table(r, s, t));
  for (uint64_t k : t.needed) {
    TRY(std::string name, string_at(r, table, k, "DT_NEEDED"));
    if (name.empty()) return r.bad("empty DT_NEEDED name");
    info.needed.push_back(std::move(name));
  }
  if (t.soname) {
    TRY(info.soname, string_at(r, table, *t.soname, "DT_SONAME"));
  }
  if (t.rpath) {
    TRY(std::string list, string_at(r, table, *t.rpath, "DT_RPATH"));
    info.rpath = split_list(list);
  }
  if (t.runpath) {
    TRY(std::string list, string_at(r, table, *t.runpath, "DT_RUNPATH"));
    info.runpath = split_list(list);
  }
  return ok();
}

}  // namespace

uint16_t host_elf_machine() {
  return EM_X86_64;
}

Result<std::string> elf_interpreter(std::span<const unsigned char> bytes, std::string_view name) {
  const Reader r{bytes, std::string(name)};
  TRY(Segments s, read_segments(r));
  return read_interp(r, s);
}

Result<ElfInfo> parse_elf(std::span<const unsigned char> bytes, std::string_view name) {
  const Reader r{bytes, std::string(name)};
  TRY(Segments s, read_segments(r));
  ElfInfo info;
  info.type = s.eh.e_type;
  info.machine = s.eh.e_machine;
  TRY(info.interp, read_interp(r, s));
  if (!s.dynamic) return info;  // static
  TRY(DynamicTags t, read_dynamic(r, *s.dynamic));
  TRYV(read_dynamic_strings(r, s, t, info));
  return info;
}

}  // namespace comet::runtime
