// The ELF reader (comet/host/elf.hpp), on real host binaries and on
// crafted, truncated and garbage buffers (errors, never a crash or an
// out-of-bounds read: every buffer is an exactly sized heap block, so ASan
// sees a read past it). parse_elf() is what `rootfs --from-host` reads;
// elf_interpreter() what the Landlock exec lock reads (confine.cpp).
#include "comet/host/elf.hpp"

#include <elf.h>
#include <gtest/gtest.h>

#include "support/elf.hpp"
#include "support/slurp.hpp"

#include <cstddef>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using namespace comet;
using namespace comet::runtime;
namespace rt = comet::runtime;
namespace fs = std::filesystem;
using comet::test::slurp;

namespace {

std::vector<unsigned char> file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<unsigned char>((std::istreambuf_iterator<char>(f)),
                                    std::istreambuf_iterator<char>());
}

Result<ElfInfo> parse(const std::vector<unsigned char>& b) {
  return parse_elf(std::span<const unsigned char>(b.data(), b.size()), "x");
}

std::string parse_error(const std::vector<unsigned char>& b) {
  auto r = parse(b);
  return r.ok() ? std::string("(parsed)") : r.error().what();
}

template <typename T>
void put(std::vector<unsigned char>& b, size_t off, T v) {
  ASSERT_LE(off + sizeof(T), b.size());
  std::memcpy(b.data() + off, &v, sizeof(T));
}

// A small, valid x86_64 ET_DYN image:
//   [Elf64_Ehdr][Phdr LOAD][Phdr INTERP][Phdr DYNAMIC][interp\0][strtab][dynamic]
struct Crafted {
  std::vector<unsigned char> b;
  size_t ph_load = 0, ph_interp = 0, ph_dynamic = 0;  // offsets of the program headers
  size_t interp = 0, strtab = 0, dynamic = 0;         // offsets of the contents
  size_t strsz = 0;
  size_t dyn_needed0 = 0;  // offset of the first DT_NEEDED entry
  static constexpr uint64_t kBase = 0x400000;
};

Crafted craft(const std::vector<std::string>& needed = {"liba.so.1", "libb.so.2"},
              const std::string& rpath = "", const std::string& runpath = "",
              const std::string& soname = "", bool interp = true, bool dynamic = true) {
  Crafted c;
  const size_t nph = 1 + (interp ? 1 : 0) + (dynamic ? 1 : 0);
  size_t off = sizeof(Elf64_Ehdr) + nph * sizeof(Elf64_Phdr);
  std::string interp_s = "/lib64/ld-linux-x86-64.so.2";
  c.interp = off;
  if (interp) off += interp_s.size() + 1;
  c.strtab = off;
  std::string strtab(1, '\0');
  auto add_str = [&strtab](const std::string& s) {
    uint64_t at = strtab.size();
    strtab += s;
    strtab += '\0';
    return at;
  };
  std::vector<std::pair<int64_t, uint64_t>> dyn;
  for (const auto& n : needed) dyn.push_back({DT_NEEDED, add_str(n)});
  if (!rpath.empty()) dyn.push_back({DT_RPATH, add_str(rpath)});
  if (!runpath.empty()) dyn.push_back({DT_RUNPATH, add_str(runpath)});
  if (!soname.empty()) dyn.push_back({DT_SONAME, add_str(soname)});
  c.strsz = strtab.size();
  dyn.push_back({DT_STRTAB, Crafted::kBase + c.strtab});
  dyn.push_back({DT_STRSZ, c.strsz});
  dyn.push_back({DT_NULL, 0});
  off += strtab.size();
  off = (off + 7) & ~size_t{7};
  c.dynamic = off;
  c.dyn_needed0 = off;
  off += dyn.size() * sizeof(Elf64_Dyn);
  c.b.assign(off, 0);

  const Elf64_Ehdr eh = comet::test::x86_64_ehdr(ET_DYN, static_cast<uint16_t>(nph));
  std::memcpy(c.b.data(), &eh, sizeof eh);

  size_t ph = sizeof(Elf64_Ehdr);
  Elf64_Phdr load = {};
  load.p_type = PT_LOAD;
  load.p_vaddr = Crafted::kBase;
  load.p_filesz = load.p_memsz = c.b.size();
  c.ph_load = ph;
  std::memcpy(c.b.data() + ph, &load, sizeof load);
  ph += sizeof(Elf64_Phdr);
  if (interp) {
    Elf64_Phdr p = {};
    p.p_type = PT_INTERP;
    p.p_offset = c.interp;
    p.p_filesz = interp_s.size() + 1;
    c.ph_interp = ph;
    std::memcpy(c.b.data() + ph, &p, sizeof p);
    std::memcpy(c.b.data() + c.interp, interp_s.c_str(), interp_s.size() + 1);
    ph += sizeof(Elf64_Phdr);
  }
  if (dynamic) {
    Elf64_Phdr p = {};
    p.p_type = PT_DYNAMIC;
    p.p_offset = c.dynamic;
    p.p_filesz = dyn.size() * sizeof(Elf64_Dyn);
    c.ph_dynamic = ph;
    std::memcpy(c.b.data() + ph, &p, sizeof p);
  }
  std::memcpy(c.b.data() + c.strtab, strtab.data(), strtab.size());
  for (size_t i = 0; i < dyn.size(); i++) {
    Elf64_Dyn d = {};
    d.d_tag = dyn[i].first;
    d.d_un.d_val = dyn[i].second;
    std::memcpy(c.b.data() + c.dynamic + i * sizeof(Elf64_Dyn), &d, sizeof d);
  }
  return c;
}

bool same(const ElfInfo& a, const ElfInfo& b) {
  return a.type == b.type && a.machine == b.machine && a.interp == b.interp &&
         a.soname == b.soname && a.needed == b.needed && a.rpath == b.rpath &&
         a.runpath == b.runpath;
}

// elf_interpreter() over a string's bytes (the exec lock reads a file's
// first 64 KiB into one).
Result<std::string> interp(std::string_view b) {
  return rt::elf_interpreter({reinterpret_cast<const unsigned char*>(b.data()), b.size()}, "x");
}

}  // namespace

// ---- the ELF reader on real host binaries --------------------------------------

TEST(HostrootElf, Python311) {
  const char* p = "/usr/bin/python3.11";
  if (!fs::exists(p)) GTEST_SKIP() << p << " is not installed";
  auto b = file_bytes(p);
  auto r = parse(b);
  ASSERT_TRUE(r.ok()) << r.error().what();
  EXPECT_EQ(r->type, ET_EXEC);  // Debian builds python3.11 without PIE
  EXPECT_EQ(r->machine, EM_X86_64);
  EXPECT_EQ(r->interp, "/lib64/ld-linux-x86-64.so.2");
  // Debian 12's python3.11 (readelf -d).
  EXPECT_EQ(r->needed,
            (std::vector<std::string>{"libm.so.6", "libz.so.1", "libexpat.so.1", "libc.so.6"}));
  EXPECT_TRUE(r->rpath.empty());
  EXPECT_TRUE(r->runpath.empty());
}

TEST(HostrootElf, TrueAndLibc) {
  auto b = file_bytes("/bin/true");
  ASSERT_FALSE(b.empty());
  auto r = parse(b);
  ASSERT_TRUE(r.ok()) << r.error().what();
  EXPECT_EQ(r->type, ET_DYN);  // PIE
  EXPECT_EQ(r->interp, "/lib64/ld-linux-x86-64.so.2");
  EXPECT_EQ(r->needed, std::vector<std::string>{"libc.so.6"});

  auto libc = file_bytes("/lib/x86_64-linux-gnu/libc.so.6");
  ASSERT_FALSE(libc.empty());
  auto l = parse(libc);
  ASSERT_TRUE(l.ok()) << l.error().what();
  EXPECT_EQ(l->soname, "libc.so.6");
  EXPECT_EQ(l->needed, std::vector<std::string>{"ld-linux-x86-64.so.2"});
}

// Every prefix of a real binary gives an error or exactly the full answer.
TEST(HostrootElf, TruncatedRealBinaryNeverMisreads) {
  auto full = file_bytes("/bin/true");
  ASSERT_FALSE(full.empty());
  auto want = parse(full);
  ASSERT_TRUE(want.ok());
  size_t errors = 0;
  for (size_t len = 0; len < full.size(); len += (len < 8192 ? 1 : 509)) {
    std::vector<unsigned char> cut(full.begin(), full.begin() + static_cast<ptrdiff_t>(len));
    auto r = parse(cut);
    if (r.ok()) {
      EXPECT_TRUE(same(*r, *want)) << "prefix of " << len << " bytes parsed differently";
    } else {
      errors++;
    }
    if (len < sizeof(Elf64_Ehdr)) {
      EXPECT_FALSE(r.ok()) << len;
    }
  }
  EXPECT_GT(errors, sizeof(Elf64_Ehdr));
}

// ---- crafted buffers --------------------------------------------------------------

TEST(HostrootElf, CraftedImage) {
  auto c = craft({"liba.so.1", "libb.so.2"}, "$ORIGIN/../lib:/opt/r", "", "libself.so.3");
  auto r = parse(c.b);
  ASSERT_TRUE(r.ok()) << r.error().what();
  EXPECT_EQ(r->interp, "/lib64/ld-linux-x86-64.so.2");
  EXPECT_EQ(r->needed, (std::vector<std::string>{"liba.so.1", "libb.so.2"}));
  EXPECT_EQ(r->rpath, (std::vector<std::string>{"$ORIGIN/../lib", "/opt/r"}));
  EXPECT_TRUE(r->runpath.empty());
  EXPECT_EQ(r->soname, "libself.so.3");

  auto rp = parse(craft({"x.so"}, "", "/a::/b").b);  // empty entries dropped
  ASSERT_TRUE(rp.ok());
  EXPECT_EQ(rp->runpath, (std::vector<std::string>{"/a", "/b"}));

  auto st = parse(craft({}, "", "", "", false, false).b);  // static
  ASSERT_TRUE(st.ok()) << st.error().what();
  EXPECT_TRUE(st->interp.empty());
  EXPECT_TRUE(st->needed.empty());
}

TEST(HostrootElf, GarbageIsNotElf) {
  std::mt19937 rng(42);
  for (size_t n : {0, 1, 3, 4, 15, 16, 63, 64, 200, 4096}) {
    std::vector<unsigned char> g(n);
    for (auto& x : g) x = static_cast<unsigned char>(rng());
    EXPECT_NE(parse_error(g).find("x: not an ELF file"), std::string::npos) << n;
  }
  std::vector<unsigned char> magic = {0x7f, 'E', 'L', 'F'};
  EXPECT_EQ(parse_error(magic), "x: not an ELF file");  // shorter than e_ident
  std::vector<unsigned char> text(100, 'a');
  std::memcpy(text.data(), "#!/bin/sh\n", 10);
  EXPECT_EQ(parse_error(text), "x: not an ELF file");
}

TEST(HostrootElf, RefusesOtherClassesAndTypes) {
  auto c = craft();
  auto b = c.b;
  b[EI_CLASS] = ELFCLASS32;
  EXPECT_EQ(parse_error(b), "x: 32-bit ELF is not supported (only 64-bit little-endian)");
  b = c.b;
  b[EI_DATA] = ELFDATA2MSB;
  EXPECT_EQ(parse_error(b), "x: big-endian ELF is not supported (only 64-bit little-endian)");
  b = c.b;
  b[EI_CLASS] = 7;
  EXPECT_EQ(parse_error(b), "x: unknown ELF class 7");
  b = c.b;
  put<uint16_t>(b, offsetof(Elf64_Ehdr, e_type), ET_REL);
  EXPECT_EQ(parse_error(b), "x: not an executable or shared object (e_type 1)");
  b = c.b;
  b.resize(40);  // e_ident fine, header cut
  EXPECT_EQ(parse_error(b), "x: truncated ELF header");
  // Another machine parses (the planner refuses it against the host's).
  b = c.b;
  put<uint16_t>(b, offsetof(Elf64_Ehdr, e_machine), EM_AARCH64);
  auto r = parse(b);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->machine, EM_AARCH64);
  EXPECT_NE(r->machine, host_elf_machine());
}

TEST(HostrootElf, ProgramHeadersOutOfBounds) {
  auto c = craft();
  auto b = c.b;
  put<uint64_t>(b, offsetof(Elf64_Ehdr, e_phoff), b.size() - 10);
  EXPECT_EQ(parse_error(b), "x: program headers lie outside the file");
  b = c.b;
  put<uint64_t>(b, offsetof(Elf64_Ehdr, e_phoff), UINT64_MAX - 8);
  EXPECT_EQ(parse_error(b), "x: program headers lie outside the file");
  b = c.b;
  put<uint16_t>(b, offsetof(Elf64_Ehdr, e_phnum), 0xfffe);
  EXPECT_EQ(parse_error(b), "x: program headers lie outside the file");
  b = c.b;
  put<uint16_t>(b, offsetof(Elf64_Ehdr, e_phentsize), 8);
  EXPECT_EQ(parse_error(b), "x: program header entries are too small");
  b = c.b;
  put<uint16_t>(b, offsetof(Elf64_Ehdr, e_phnum), PN_XNUM);  // count in shdr 0: none
  EXPECT_EQ(parse_error(b), "x: e_phnum is PN_XNUM but section header 0 is missing");
  b = c.b;
  put<uint16_t>(b, offsetof(Elf64_Ehdr, e_phentsize), 0xffff);  // stride past the end
  EXPECT_EQ(parse_error(b), "x: program headers lie outside the file");
}

TEST(HostrootElf, InterpAndDynamicOutOfBounds) {
  auto c = craft();
  auto b = c.b;
  put<uint64_t>(b, c.ph_interp + offsetof(Elf64_Phdr, p_offset), b.size() + 1);
  EXPECT_EQ(parse_error(b), "x: PT_INTERP lies outside the file");
  b = c.b;
  put<uint64_t>(b, c.ph_interp + offsetof(Elf64_Phdr, p_filesz), UINT64_MAX);
  EXPECT_EQ(parse_error(b), "x: PT_INTERP lies outside the file");
  b = c.b;
  b[c.interp + 27] = 'X';  // overwrite the NUL
  EXPECT_EQ(parse_error(b), "x: PT_INTERP is not NUL-terminated");
  b = c.b;
  b[c.interp] = 0;
  EXPECT_EQ(parse_error(b), "x: PT_INTERP is empty");
  b = c.b;
  put<uint32_t>(b, c.ph_load + offsetof(Elf64_Phdr, p_type), PT_INTERP);  // a second one
  EXPECT_EQ(parse_error(b), "x: more than one PT_INTERP");
  b = c.b;
  put<uint64_t>(b, c.ph_dynamic + offsetof(Elf64_Phdr, p_offset), b.size() - 8);
  EXPECT_EQ(parse_error(b), "x: PT_DYNAMIC lies outside the file");
  b = c.b;
  put<uint64_t>(b, c.ph_dynamic + offsetof(Elf64_Phdr, p_filesz), UINT64_MAX - 3);
  EXPECT_EQ(parse_error(b), "x: PT_DYNAMIC lies outside the file");
}

TEST(HostrootElf, StringTableOutOfBounds) {
  auto c = craft({"liba.so.1"});
  // DT_NEEDED's string offset past DT_STRSZ.
  auto b = c.b;
  put<uint64_t>(b, c.dyn_needed0 + offsetof(Elf64_Dyn, d_un), 1000);
  EXPECT_EQ(parse_error(b), "x: DT_NEEDED string offset 1000 is outside the table");
  // DT_STRSZ cutting the last string's NUL.
  b = c.b;
  // dynamic: NEEDED, STRTAB, STRSZ, NULL
  put<uint64_t>(b, c.dynamic + 2 * sizeof(Elf64_Dyn) + offsetof(Elf64_Dyn, d_un), c.strsz - 1);
  EXPECT_EQ(parse_error(b), "x: DT_NEEDED string is not NUL-terminated");
  // DT_STRTAB outside every PT_LOAD.
  b = c.b;
  put<uint64_t>(b, c.dynamic + sizeof(Elf64_Dyn) + offsetof(Elf64_Dyn, d_un), 0x10);
  EXPECT_EQ(parse_error(b), "x: DT_STRTAB lies outside every PT_LOAD segment");
  // A PT_LOAD whose file offset would overflow.
  b = c.b;
  put<uint64_t>(b, c.ph_load + offsetof(Elf64_Phdr, p_offset), UINT64_MAX - 4);
  EXPECT_EQ(parse_error(b), "x: DT_STRTAB offset overflows");
  // A PT_LOAD claiming bytes the file does not have.
  b = c.b;
  put<uint64_t>(b, c.ph_load + offsetof(Elf64_Phdr, p_offset), b.size() - 4);
  EXPECT_EQ(parse_error(b), "x: the dynamic string table lies outside the file");
  // No DT_STRTAB at all: turn it into DT_NULL... after NEEDED.
  b = c.b;
  put<int64_t>(b, c.dynamic + sizeof(Elf64_Dyn), DT_NULL);
  EXPECT_EQ(parse_error(b), "x: DT_NEEDED without DT_STRTAB");
  // An empty name.
  b = c.b;
  put<uint64_t>(b, c.dyn_needed0 + offsetof(Elf64_Dyn, d_un), 0);
  EXPECT_EQ(parse_error(b), "x: empty DT_NEEDED name");
  // No DT_NULL: the table simply ends with PT_DYNAMIC.
  b = c.b;
  put<uint64_t>(b, c.ph_dynamic + offsetof(Elf64_Phdr, p_filesz), 3 * sizeof(Elf64_Dyn));
  auto r = parse(b);
  ASSERT_TRUE(r.ok()) << r.error().what();
  EXPECT_EQ(r->needed, std::vector<std::string>{"liba.so.1"});
}

// Every prefix and thousands of random byte flips of the crafted image: an
// error or a parse, never a crash (run under ASan by scripts/sanitize.sh).
TEST(HostrootElf, TruncatedAndMutatedCraftedImages) {
  auto c = craft({"liba.so.1", "libb.so.2"}, "/r", "/rp", "libs.so");
  auto want = parse(c.b);
  ASSERT_TRUE(want.ok());
  for (size_t len = 0; len < c.b.size(); len++) {
    std::vector<unsigned char> cut(c.b.begin(), c.b.begin() + static_cast<ptrdiff_t>(len));
    auto r = parse(cut);
    if (r.ok()) {
      EXPECT_TRUE(same(*r, *want)) << len;
    }
  }
  std::mt19937 rng(7);
  size_t parsed = 0;
  for (int i = 0; i < 20000; i++) {
    auto b = c.b;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; f++) b[rng() % b.size()] = static_cast<unsigned char>(rng());
    auto r = parse(b);
    if (r.ok()) {
      parsed++;
      for (const auto& n : r->needed) EXPECT_FALSE(n.empty());
    }
  }
  EXPECT_GT(parsed, 0u);
}

// ---- elf_interpreter(): the headers and PT_INTERP only -------------------------

TEST(ElfInterpreter, DynamicHostBinary) {
  std::string b = slurp("/bin/true");
  ASSERT_FALSE(b.empty());
  auto r = interp(b);
  ASSERT_TRUE(r.ok()) << r.error().what();
  EXPECT_EQ(*r, "/lib64/ld-linux-x86-64.so.2");
}

TEST(ElfInterpreter, StaticBinaryHasNone) {
  std::string b = slurp("/bin/busybox");
  ASSERT_FALSE(b.empty());
  auto r = interp(b);
  ASSERT_TRUE(r.ok()) << r.error().what();
  EXPECT_EQ(*r, "");
}

TEST(ElfInterpreter, GarbageAndTruncationAreErrors) {
  EXPECT_FALSE(interp("").ok());
  EXPECT_FALSE(interp("#!/bin/sh\n").ok());
  std::string b = slurp("/bin/true");
  // every prefix either fails cleanly or (once the headers are whole) agrees
  for (size_t n = 0; n < 4096 && n < b.size(); n += 7) {
    auto r = interp(std::string_view(b).substr(0, n));
    if (r.ok()) {
      EXPECT_TRUE(*r == "" || *r == "/lib64/ld-linux-x86-64.so.2") << n;
    }
  }
  // program headers pointing past the end
  std::string c = b.substr(0, sizeof(Elf64_Ehdr));
  Elf64_Ehdr eh;
  std::memcpy(&eh, c.data(), sizeof eh);
  eh.e_phoff = 1ULL << 62;
  eh.e_phnum = 3;
  std::memcpy(c.data(), &eh, sizeof eh);
  EXPECT_FALSE(interp(c).ok());
}

// The exec lock reads a file's first 64 KiB: PT_DYNAMIC past them is not
// read, where parse_elf() refuses it.
TEST(ElfInterpreter, DynamicSectionBeyondTheBufferIsNotRead) {
  auto c = craft();
  auto b = c.b;
  put<uint64_t>(b, c.ph_dynamic + offsetof(Elf64_Phdr, p_offset), b.size() - 8);
  EXPECT_EQ(parse_error(b), "x: PT_DYNAMIC lies outside the file");
  auto r = interp(std::string_view(reinterpret_cast<const char*>(b.data()), b.size()));
  ASSERT_TRUE(r.ok()) << r.error().what();
  EXPECT_EQ(*r, "/lib64/ld-linux-x86-64.so.2");
}
