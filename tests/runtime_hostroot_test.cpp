// rootfs --from-host: the ELF reader on real host binaries and on crafted,
// truncated and garbage buffers (errors, never a crash or an out-of-bounds
// read: every buffer is an exactly sized heap block, so ASan sees a read
// past it); ld.so's search order; ld.so.conf; the Python skip list; the plan
// checks and key; and, without root, building a small rootfs on disk.
#include <elf.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <random>
#include <set>
#include <thread>

#include "comet/base/sys.hpp"
#include "comet/pack/hostroot.hpp"

using namespace comet;
using namespace comet::runtime;
namespace fs = std::filesystem;

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

  Elf64_Ehdr eh = {};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_type = ET_DYN;
  eh.e_machine = EM_X86_64;
  eh.e_version = EV_CURRENT;
  eh.e_phoff = sizeof(Elf64_Ehdr);
  eh.e_ehsize = sizeof(Elf64_Ehdr);
  eh.e_phentsize = sizeof(Elf64_Phdr);
  eh.e_phnum = static_cast<uint16_t>(nph);
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

class HostrootDisk : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/comet-hostroot-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  // Entries of dir_ (to see that a failure leaves nothing).
  std::set<std::string> listing() const {
    std::set<std::string> out;
    for (auto& e : fs::directory_iterator(dir_)) out.insert(e.path().filename().string());
    return out;
  }
  std::string dir_;
};

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

// ---- search order -------------------------------------------------------------------

TEST(HostrootSearch, RpathThenLoaderThenConfThenDefaults) {
  ElfInfo o;
  o.rpath = {"$ORIGIN/../lib", "/r", "relative/dir"};
  auto dirs = library_search_dirs(o, "/opt/app/bin", {"/loader"}, {"/c1", "/c2/"});
  std::vector<std::string> want = {"/opt/app/lib", "/r", "/loader", "/c1", "/c2"};
  for (const auto& d : default_library_dirs()) want.push_back(d);
  EXPECT_EQ(dirs, want);
  EXPECT_EQ(default_library_dirs(),
            (std::vector<std::string>{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
                                      "/lib64", "/lib", "/usr/lib"}));
}

TEST(HostrootSearch, RunpathDisablesRpath) {
  ElfInfo o;
  o.rpath = {"/r"};
  o.runpath = {"${ORIGIN}/x", "/lib"};
  auto dirs = library_search_dirs(o, "/o", {"/loader"}, {"/usr/lib/x86_64-linux-gnu"});
  // "/lib" and the conf dir are not repeated where the defaults list them again.
  std::vector<std::string> want = {
      "/o/x", "/lib", "/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu", "/lib64", "/usr/lib"};
  EXPECT_EQ(dirs, want);
}

TEST(HostrootSearch, FindLibraryTakesTheFirstUsable) {
  std::vector<std::string> dirs = {"/a", "/b", "/c"};
  std::set<std::string> usable = {"/b/libx.so.1", "/c/libx.so.1"};
  auto pred = [&usable](const std::string& p) { return usable.count(p) > 0; };
  EXPECT_EQ(find_library("libx.so.1", dirs, pred), "/b/libx.so.1");
  usable.erase("/b/libx.so.1");  // e.g. a 32-bit file there: skipped, as ld.so does
  EXPECT_EQ(find_library("libx.so.1", dirs, pred), "/c/libx.so.1");
  EXPECT_EQ(find_library("liby.so", dirs, pred), "");
}

TEST(HostrootSearch, DynamicStringTokens) {
  EXPECT_EQ(expand_dst("$ORIGIN/../lib", "/opt/a/bin"), "/opt/a/bin/../lib");
  EXPECT_EQ(expand_dst("${ORIGIN}/x:", "/o"), "/o/x:");
  EXPECT_EQ(expand_dst("$ORIGIN", "/o"), "/o");
  EXPECT_EQ(expand_dst("/usr/$LIB/x", "/o"), "/usr/lib/x86_64-linux-gnu/x");
  EXPECT_EQ(expand_dst("/p/${PLATFORM}", "/o"), "/p/x86_64");
  EXPECT_EQ(expand_dst("$ORIGINAL/x", "/o"), "$ORIGINAL/x");  // not a token
  EXPECT_EQ(expand_dst("$", "/o"), "$");
}

TEST(HostrootSearch, ParseLdSoConf) {
  auto items = parse_ld_so_conf(
      "# comment\n"
      "include /etc/ld.so.conf.d/*.conf  other/*.conf\n"
      "\n"
      "  /usr/local/lib/  # trailing comment\n"
      "hwcap 0 nosegneg\n"
      "/opt/lib\t\n"
      "includex\n");
  ASSERT_EQ(items.size(), 5u);
  EXPECT_TRUE(items[0].include);
  EXPECT_EQ(items[0].value, "/etc/ld.so.conf.d/*.conf");
  EXPECT_TRUE(items[1].include);
  EXPECT_EQ(items[1].value, "other/*.conf");
  EXPECT_FALSE(items[2].include);
  EXPECT_EQ(items[2].value, "/usr/local/lib");
  EXPECT_EQ(items[3].value, "/opt/lib");
  EXPECT_EQ(items[4].value, "includex");  // a directory name, as ldconfig reads it
}

TEST_F(HostrootDisk, LdSoConfIncludesAreGlobbedSortedAndRelative) {
  fs::create_directories(path("d"));
  ASSERT_TRUE(write_file(path("main.conf"), "/first\ninclude d/*.conf\ninclude main.conf\n/last\n",
                         O_CREAT | O_TRUNC)
                  .ok());
  ASSERT_TRUE(write_file(path("d/b.conf"), "/b\n", O_CREAT | O_TRUNC).ok());
  ASSERT_TRUE(write_file(path("d/a.conf"), "/a1\n/a2\n", O_CREAT | O_TRUNC).ok());
  ASSERT_TRUE(write_file(path("d/skip.txt"), "/no\n", O_CREAT | O_TRUNC).ok());
  auto dirs = ld_so_conf_dirs(path("main.conf"));
  // The self-include recurses a bounded number of times; keep the first pass.
  ASSERT_GE(dirs.size(), 6u);
  EXPECT_EQ(std::vector<std::string>(dirs.begin(), dirs.begin() + 4),
            (std::vector<std::string>{"/first", "/a1", "/a2", "/b"}));
  EXPECT_EQ(dirs.back(), "/last");
  EXPECT_TRUE(ld_so_conf_dirs(path("missing.conf")).empty());
}

// ---- Python -------------------------------------------------------------------------

TEST(HostrootPython, InterpreterNames) {
  EXPECT_TRUE(is_python_name("python3.11"));
  EXPECT_TRUE(is_python_name("python3.9"));
  EXPECT_TRUE(is_python_name("python10.12"));
  EXPECT_FALSE(is_python_name("python3"));
  EXPECT_FALSE(is_python_name("python3."));
  EXPECT_FALSE(is_python_name("python3.11-config"));
  EXPECT_FALSE(is_python_name("python3.11m"));
  EXPECT_FALSE(is_python_name("ipython3.11"));
  EXPECT_FALSE(is_python_name("python.11"));
}

TEST(HostrootPython, SkipList) {
  for (const char* p :
       {"test", "test/support/__init__.py", "idlelib", "idlelib/idle.py", "tkinter",
        "tkinter/__init__.py", "turtledemo", "ensurepip", "ensurepip/__init__.py", "lib2to3/tests",
        "lib2to3/tests/data/x.py", "dist-packages", "dist-packages/a/b.py", "site-packages",
        "config-3.11-x86_64-linux-gnu", "config-3.11-x86_64-linux-gnu/Makefile"})
    EXPECT_TRUE(python_stdlib_skipped(p)) << p;
  for (const char* p :
       {"os.py", "__pycache__", "__pycache__/os.cpython-311.pyc", "json",
        "json/__pycache__/decoder.cpython-311.pyc", "lib2to3", "lib2to3/fixes", "lib2to3/tests.py",
        "testing", "test.py", "configparser.py", "config-x", "lib-dynload",
        "lib-dynload/_hashlib.cpython-311-x86_64-linux-gnu.so", "unittest/test", "encodings/test"})
    EXPECT_FALSE(python_stdlib_skipped(p)) << p;
}

// ---- plans ----------------------------------------------------------------------------

TEST(HostrootPlan, CheckPlanWantsDirectoryParents) {
  RootfsPlan p;
  RootfsEntry dir, link, file;
  link.kind = RootfsEntry::Kind::symlink;
  link.target = "usr/lib";
  file.kind = RootfsEntry::Kind::file;
  file.content = "x";
  p["/usr"] = dir;
  p["/usr/lib"] = dir;
  p["/usr/lib/f"] = file;
  p["/lib"] = link;
  EXPECT_TRUE(check_plan(p).ok());
  p["/lib/f"] = file;  // through a symlink
  auto st = check_plan(p);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().what(), "rootfs plan: the parent of /lib/f is not a directory of the plan");
  p.erase("/lib/f");
  p["/etc/passwd"] = file;  // no /etc
  EXPECT_FALSE(check_plan(p).ok());
  p.erase("/etc/passwd");
  for (const char* bad : {"/usr/../x", "/usr/./x", "/usr//x", "/usr/", "usr", "/"}) {
    RootfsPlan q = p;
    q[bad] = file;
    EXPECT_FALSE(check_plan(q).ok()) << bad;
  }
}

TEST(HostrootPlan, KeyFollowsSizeMtimeInode) {
  RootfsPlan p;
  RootfsEntry d, f;
  f.kind = RootfsEntry::Kind::file;
  f.source = "/usr/bin/x";
  f.size = 10;
  f.mtime_ns = 1000;
  f.ino = 5;
  p["/usr"] = d;
  p["/usr/x"] = f;
  auto k1 = plan_key(p);
  ASSERT_TRUE(k1.ok());
  EXPECT_EQ(k1->size(), 64u);
  EXPECT_EQ(k1->find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(*plan_key(p), *k1);  // deterministic
  for (int field = 0; field < 3; field++) {
    RootfsPlan q = p;
    auto& e = q["/usr/x"];
    if (field == 0) e.size++;
    if (field == 1) e.mtime_ns++;
    if (field == 2) e.ino++;
    EXPECT_NE(*plan_key(q), *k1) << field;
  }
  RootfsPlan q = p;
  q["/usr/y"] = f;  // one more file
  EXPECT_NE(*plan_key(q), *k1);
}

// ---- on disk, without root ----------------------------------------------------------------

TEST_F(HostrootDisk, RootfsFromTrue) {
  ::setenv("PATH", "/usr/bin:/bin", 1);
  HostRootfsOptions o;
  o.binaries = {"true"};
  o.output = path("r");
  auto r = rootfs_from_host(o);
  ASSERT_TRUE(r.ok()) << r.error().what();
  std::string root = path("r");
  EXPECT_TRUE(fs::is_regular_file(root + "/usr/bin/true"));
  EXPECT_TRUE(fs::is_regular_file(root + "/usr/lib/x86_64-linux-gnu/libc.so.6"));
  // The interpreter through /lib64 -> usr/lib64 and its absolute symlink.
  EXPECT_EQ(fs::read_symlink(root + "/lib64").string(), "usr/lib64");
  EXPECT_EQ(fs::read_symlink(root + "/usr/lib64/ld-linux-x86-64.so.2").string(),
            "/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2");
  EXPECT_EQ(fs::read_symlink(root + "/bin").string(), "usr/bin");
  EXPECT_TRUE(fs::is_directory(root + "/usr/sbin"));  // /sbin resolves too
  EXPECT_FALSE(fs::exists(fs::symlink_status(root + "/usr/bin/sh")));
  for (const char* d : {"proc", "dev", "sys", "tmp", "workdir", "etc"}) {
    struct stat st;
    ASSERT_EQ(::lstat((root + "/" + d).c_str(), &st), 0) << d;
    EXPECT_TRUE(S_ISDIR(st.st_mode));
    EXPECT_EQ(st.st_mode & 07777, 0755u) << d;
  }
  EXPECT_EQ(*read_file(root + "/etc/passwd"),
            "root:x:0:0:root:/root:/usr/sbin/nologin\n"
            "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n");
  EXPECT_EQ(*read_file(root + "/etc/group"), "root:x:0:\nnogroup:x:65534:\n");
  EXPECT_EQ(*read_file(root + "/etc/resolv.conf"), "");
  EXPECT_NE(read_file(root + "/etc/hosts")->find("127.0.0.1\tlocalhost\n"), std::string::npos);
  if (fs::exists("/etc/ld.so.cache")) {
    EXPECT_EQ(fs::file_size(root + "/etc/ld.so.cache"), fs::file_size("/etc/ld.so.cache"));
  }
  // What --verbose prints.
  std::set<std::string> lines(r->begin(), r->end());
  EXPECT_TRUE(lines.count("file /usr/bin/true"));
  EXPECT_TRUE(lines.count("link /lib64 -> usr/lib64"));
  EXPECT_TRUE(lines.count("dir /workdir"));
  // The copy keeps the mtime and mode (a hard link is the same inode).
  struct stat a, b;
  ASSERT_EQ(::stat("/usr/bin/true", &a), 0);
  ASSERT_EQ(::stat((root + "/usr/bin/true").c_str(), &b), 0);
  EXPECT_EQ(a.st_mtim.tv_sec, b.st_mtim.tv_sec);
  EXPECT_EQ(a.st_mtim.tv_nsec, b.st_mtim.tv_nsec);
  EXPECT_EQ(a.st_mode, b.st_mode);
  EXPECT_EQ(listing(), std::set<std::string>{"r"});  // no temp dir beside it
}

TEST_F(HostrootDisk, CopyFlagNeverLinks) {
  HostRootfsOptions o;
  o.binaries = {"/bin/true"};
  o.output = path("r");
  o.copy = true;
  ASSERT_TRUE(rootfs_from_host(o).ok());
  struct stat a, b;
  ASSERT_EQ(::stat("/usr/bin/true", &a), 0);
  ASSERT_EQ(::stat(path("r/usr/bin/true").c_str(), &b), 0);
  EXPECT_NE(a.st_ino, b.st_ino);
  EXPECT_EQ(a.st_size, b.st_size);
  EXPECT_EQ(a.st_mtim.tv_nsec, b.st_mtim.tv_nsec);
  EXPECT_EQ(*read_file("/usr/bin/true"), *read_file(path("r/usr/bin/true")));
}

TEST_F(HostrootDisk, OutputDirRules) {
  HostRootfsOptions o;
  o.binaries = {"/bin/true"};
  o.output = path("r");
  fs::create_directories(path("r"));  // empty: accepted
  ASSERT_TRUE(rootfs_from_host(o).ok());
  auto again = rootfs_from_host(o);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().what(),
            "rootfs: " + path("r") + " exists and is not empty (--force replaces it)");
  ASSERT_TRUE(write_file(path("r/marker"), "x", O_CREAT).ok());
  o.force = true;
  ASSERT_TRUE(rootfs_from_host(o).ok());
  EXPECT_FALSE(fs::exists(path("r/marker")));
  EXPECT_TRUE(fs::exists(path("r/usr/bin/true")));
  EXPECT_EQ(listing(), std::set<std::string>{"r"});
  // A file, a symlink, a missing parent.
  ASSERT_TRUE(write_file(path("f"), "x", O_CREAT).ok());
  o.output = path("f");
  EXPECT_NE(rootfs_from_host(o).error().what().find("exists and is not a directory"),
            std::string::npos);
  fs::create_directory_symlink(path("r"), path("l"));
  o.output = path("l");
  EXPECT_NE(rootfs_from_host(o).error().what().find("is a symlink"), std::string::npos);
  o.output = path("no/such/r");
  EXPECT_NE(rootfs_from_host(o).error().what().find("parent directory"), std::string::npos);
  // Never over /, and --force never replaces a directory the rootfs is built
  // from (tried on a directory of our own, never on /usr).
  o.output = "/";
  o.force = false;
  EXPECT_EQ(rootfs_from_host(o).error().what(), "rootfs: refusing to write a rootfs over /");
  fs::create_directories(path("src/bin"));
  fs::copy_file("/usr/bin/true", path("src/bin/mytrue"));
  o.binaries = {path("src/bin/mytrue")};
  o.output = path("src");
  o.force = true;
  auto st = rootfs_from_host(o);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().what(), "rootfs: refusing to replace " + path("src") + ": it holds " +
                                   path("src/bin/mytrue") + ", which the rootfs is made from");
  EXPECT_TRUE(fs::is_regular_file(path("src/bin/mytrue")));
}

TEST_F(HostrootDisk, FailuresLeaveNothing) {
  ::setenv("PATH", "/usr/bin:/bin", 1);
  HostRootfsOptions o;
  o.output = path("r");
  o.binaries = {"true", "comet-no-such-binary"};
  auto r = rootfs_from_host(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().what(), "rootfs: comet-no-such-binary: not found in PATH");
  ASSERT_TRUE(write_file(path("script"), "#!/bin/sh\necho hi\n", O_CREAT).ok());
  ASSERT_TRUE(write_file(path("text"), "hello\n", O_CREAT).ok());
  o.binaries = {path("script")};
  EXPECT_EQ(
      rootfs_from_host(o).error().what(),
      "rootfs: " + path("script") + ": a script, not an ELF file (add its interpreter instead)");
  o.binaries = {path("text")};
  EXPECT_EQ(rootfs_from_host(o).error().what(), "rootfs: " + path("text") + ": not an ELF file");
  o.binaries = {path("missing")};
  EXPECT_EQ(rootfs_from_host(o).error().what(),
            "rootfs: " + path("missing") + ": ENOENT (No such file or directory)");
  o.binaries = {"true"};
  o.trees = {path("nope")};
  EXPECT_NE(rootfs_from_host(o).error().what().find("rootfs: --tree " + path("nope")),
            std::string::npos);
  EXPECT_EQ(listing(), (std::set<std::string>{"script", "text"}));
}

TEST_F(HostrootDisk, MissingLibraryNamesItAndWhoNeedsIt) {
  // A copy of /bin/true whose DT_NEEDED says libcometmissing.so.6 (same length
  // as libc.so.6 would not fit; patch the string in place instead).
  auto b = file_bytes("/bin/true");
  std::string s(b.begin(), b.end());
  auto at = s.find(std::string("libc.so.6\0", 10));
  ASSERT_NE(at, std::string::npos);
  std::memcpy(b.data() + at, "libq.so.6", 9);
  std::string bin = path("needsq");
  {
    std::ofstream f(bin, std::ios::binary);
    f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  }
  ::chmod(bin.c_str(), 0755);
  HostRootfsOptions o;
  o.binaries = {bin};
  o.output = path("r");
  auto r = rootfs_from_host(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().what(), "rootfs: libq.so.6, needed by " + bin +
                                  ", not found (searched its RPATH/RUNPATH, /etc/ld.so.conf and "
                                  "the default library directories)");
  EXPECT_EQ(listing(), std::set<std::string>{"needsq"});
}

TEST_F(HostrootDisk, TreeIsAddedVerbatim) {
  fs::create_directories(path("t/sub/deeper"));
  ASSERT_TRUE(write_file(path("t/sub/a.txt"), "A", O_CREAT).ok());
  ::chmod(path("t/sub/a.txt").c_str(), 0640);
  ::chmod(path("t/sub/deeper").c_str(), 0700);
  fs::create_symlink("sub/a.txt", path("t/rel"));
  fs::create_symlink("/nonexistent/comet", path("t/dangling"));
  HostRootfsOptions o;
  o.binaries = {"/bin/true"};
  o.trees = {path("t")};
  o.output = path("r");
  auto r = rootfs_from_host(o);
  ASSERT_TRUE(r.ok()) << r.error().what();
  std::string in = path("r") + path("t");
  EXPECT_EQ(*read_file(in + "/sub/a.txt"), "A");
  EXPECT_EQ(fs::status(in + "/sub/a.txt").permissions(), fs::perms(0640));
  EXPECT_EQ(fs::status(in + "/sub/deeper").permissions(), fs::perms(0700));
  EXPECT_EQ(fs::read_symlink(in + "/rel").string(), "sub/a.txt");
  EXPECT_EQ(fs::read_symlink(in + "/dangling").string(), "/nonexistent/comet");
}

TEST_F(HostrootDisk, DefaultRootfsIsCachedAndFollowsTheHostFiles) {
  // An interpreter of our own, so that the test can "upgrade" it.
  std::string interp = path("bin/mytrue");
  fs::create_directories(path("bin"));
  fs::copy_file("/usr/bin/true", interp);
  ::chmod(interp.c_str(), 0755);
  std::string cache = path("cache");
  auto d1 = default_rootfs(interp, cache);
  ASSERT_TRUE(d1.ok()) << d1.error().what();
  EXPECT_EQ(fs::path(*d1).parent_path().string(), cache);
  EXPECT_EQ(fs::path(*d1).filename().string().size(), 64u);
  EXPECT_TRUE(fs::is_regular_file(*d1 + interp));
  EXPECT_FALSE(fs::exists(*d1 + "/usr/bin/true"));  // only what was asked for
  EXPECT_FALSE(fs::exists(fs::symlink_status(*d1 + "/bin/busybox")));
  auto d2 = default_rootfs(interp, cache);
  ASSERT_TRUE(d2.ok());
  EXPECT_EQ(*d2, *d1);
  // A new mtime (a package upgrade): a new key and a new rootfs.
  struct timespec ts[2] = {{1000000, 0}, {1000000, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, interp.c_str(), ts, 0), 0);
  auto d3 = default_rootfs(interp, cache);
  ASSERT_TRUE(d3.ok());
  EXPECT_NE(*d3, *d1);
  auto miss = default_rootfs("/usr/bin/comet-no-such-interpreter", cache);
  ASSERT_FALSE(miss.ok());
  EXPECT_EQ(miss.error().what(),
            "default rootfs: the interpreter /usr/bin/comet-no-such-interpreter does not exist "
            "on the host");
  EXPECT_FALSE(default_rootfs("python3", cache).ok());
}

TEST_F(HostrootDisk, DefaultRootfsConcurrentCallers) {
  std::string cache = path("cache");
  std::vector<std::string> got(6);
  std::vector<std::thread> ts;
  for (size_t i = 0; i < got.size(); i++)
    ts.emplace_back([&, i] {
      auto r = default_rootfs("/usr/bin/true", cache);
      got[i] = r.ok() ? *r : "error: " + r.error().what();
    });
  for (auto& t : ts) t.join();
  for (const auto& g : got) EXPECT_EQ(g, got[0]);
  ASSERT_EQ(got[0].rfind(cache, 0), 0u) << got[0];
  std::set<std::string> entries;
  for (auto& e : fs::directory_iterator(cache)) entries.insert(e.path().filename().string());
  EXPECT_EQ(entries,
            (std::set<std::string>{".lock", "index", fs::path(got[0]).filename().string()}));
}

TEST_F(HostrootDisk, ManifestHoldsUntilTheHostChanges) {
  fs::create_directories(path("t/sub"));
  ASSERT_TRUE(write_file(path("t/sub/a"), "A", O_CREAT).ok());
  HostRootfsOptions o;
  o.binaries = {"/bin/true"};
  o.trees = {path("t")};
  auto remake = [&o]() {
    HostFacts facts;
    auto plan = plan_host_rootfs(o, &facts);
    EXPECT_TRUE(plan.ok());
    // the library search looked at the ld.so.conf directories before the hit
    EXPECT_TRUE(facts.count("/etc/ld.so.conf") || !fs::exists("/etc/ld.so.conf"));
    return plan_manifest(*plan, facts);
  };
  std::string full = remake();
  ASSERT_NE(full.find(" /usr/bin/true\n"), std::string::npos);
  ASSERT_NE(full.find(" " + path("t/sub/a") + "\n"), std::string::npos);
  // Only the lines below our dir: /tmp itself is in the manifest, and tests
  // running beside this one change it.
  auto ours = [this](const std::string& m) {
    std::string out;
    for (const auto& line : split(m, '\n'))
      if (line.find(" " + dir_ + "/") != std::string::npos) out += line + "\n";
    return out;
  };
  std::string m = ours(full);
  ASSERT_NE(m.find(" " + path("t/sub") + "\n"), std::string::npos);
  EXPECT_TRUE(manifest_holds(m));
  ASSERT_TRUE(write_file(path("t/sub/b"), "B", O_CREAT).ok());  // a new file in a tree dir
  EXPECT_FALSE(manifest_holds(m));
  m = ours(remake());
  EXPECT_TRUE(manifest_holds(m));
  ASSERT_TRUE(write_file(path("t/sub/a"), "AA", O_TRUNC).ok());  // new content
  EXPECT_FALSE(manifest_holds(m));
  m = ours(remake());
  EXPECT_TRUE(manifest_holds(m));
  fs::remove(path("t/sub/b"));
  EXPECT_FALSE(manifest_holds(m));
  // An absent path (a library directory searched before the hit) appearing.
  std::string absent = "- 0 0 0 " + path("later") + "\n";
  EXPECT_TRUE(manifest_holds(absent));
  fs::create_directory(path("later"));
  EXPECT_FALSE(manifest_holds(absent));
  EXPECT_FALSE(manifest_holds(""));
  EXPECT_FALSE(manifest_holds("garbage\n"));
  EXPECT_FALSE(manifest_holds("f 1 2 3 /usr/bin/true"));  // no final newline
}

// The index lets a warm call skip planning and the lock; a changed host file
// sends it back to the locked path, which builds a new rootfs.
TEST_F(HostrootDisk, DefaultRootfsWarmPathSkipsTheLock) {
  // The warm check compares every directory on the interpreter's path too, and
  // tests running beside this one change /tmp's: use a host binary for it.
  std::string cache = path("cache");
  auto h1 = default_rootfs("/usr/bin/true", cache);
  ASSERT_TRUE(h1.ok()) << h1.error().what();
  std::string interp = path("bin/mytrue");
  fs::create_directories(path("bin"));
  fs::copy_file("/usr/bin/true", interp);
  ::chmod(interp.c_str(), 0755);
  auto d1 = default_rootfs(interp, cache);
  ASSERT_TRUE(d1.ok()) << d1.error().what();
  // Declared before the lock so that they are destroyed after it is released:
  // a call stuck on the lock must not hang the test.
  std::future<Result<std::string>> warm, cold;
  struct Lock {
    int fd = -1;
    ~Lock() { release(); }
    void release() {
      if (fd >= 0) ::close(fd);
      fd = -1;
    }
  } lock;
  lock.fd = ::open((cache + "/.lock").c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(lock.fd, 0);
  ASSERT_EQ(::flock(lock.fd, LOCK_EX), 0);  // held by "another builder"
  warm = std::async(std::launch::async, [&] { return default_rootfs("/usr/bin/true", cache); });
  ASSERT_EQ(warm.wait_for(std::chrono::seconds(5)), std::future_status::ready)
      << "the warm call waited for the lock";
  auto h2 = warm.get();
  ASSERT_TRUE(h2.ok());
  EXPECT_EQ(*h2, *h1);
  struct timespec ts[2] = {{2000000, 0}, {2000000, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, interp.c_str(), ts, 0), 0);
  cold = std::async(std::launch::async, [&] { return default_rootfs(interp, cache); });
  EXPECT_EQ(cold.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout);
  lock.release();  // the other builder is done
  ASSERT_EQ(cold.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  auto d3 = cold.get();
  ASSERT_TRUE(d3.ok()) << d3.error().what();
  EXPECT_NE(*d3, *d1);
  auto d4 = default_rootfs(interp, cache);  // and the index now names the new one
  ASSERT_TRUE(d4.ok());
  EXPECT_EQ(*d4, *d3);
}

// The figures the brief asks for: building the python rootfs into an empty
// cache, then finding it there. The warm call must not rebuild.
TEST_F(HostrootDisk, DefaultRootfsPythonColdThenWarm) {
  if (!fs::exists("/usr/bin/python3.11")) GTEST_SKIP() << "python3.11 is not installed";
  std::string cache = path("cache");
  auto ms_since = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
  };
  auto t0 = std::chrono::steady_clock::now();
  auto cold = default_rootfs("/usr/bin/python3", cache);
  double cold_ms = ms_since(t0);
  ASSERT_TRUE(cold.ok()) << cold.error().what();
  EXPECT_TRUE(fs::is_regular_file(*cold + "/usr/lib/python3.11/json/__init__.py"));
  struct stat before, after;
  ASSERT_EQ(::stat(cold->c_str(), &before), 0);
  std::vector<double> warm_ms;
  for (int i = 0; i < 5; i++) {
    auto t1 = std::chrono::steady_clock::now();
    auto warm = default_rootfs("/usr/bin/python3", cache);
    warm_ms.push_back(ms_since(t1));
    ASSERT_TRUE(warm.ok());
    EXPECT_EQ(*warm, *cold);
  }
  ASSERT_EQ(::stat(cold->c_str(), &after), 0);
  EXPECT_EQ(before.st_ino, after.st_ino);  // not rebuilt
  std::sort(warm_ms.begin(), warm_ms.end());
  std::printf("[ figures  ] default_rootfs(/usr/bin/python3): cold %.1f ms, warm median %.1f ms\n",
              cold_ms, warm_ms[2]);
  RecordProperty("cold_ms", std::to_string(cold_ms));
  RecordProperty("warm_ms", std::to_string(warm_ms[2]));
}
