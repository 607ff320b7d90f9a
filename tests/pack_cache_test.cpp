// The pack run cache without root: the key's composition (every input
// changes it), tree hashing (contents, modes, symlinks never followed, the
// memo), the cacheability rules, the store (commit, verify, a corrupted,
// partial or padded entry refused, concurrent commits), pruning order and
// size parsing.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>

#include "comet/base/sys.hpp"
#include "comet/pack/pack_cache.hpp"

#include "support/tempdir.hpp"

using namespace comet;
using namespace comet::runtime;
using namespace comet::runtime::cache;
namespace fs = std::filesystem;
namespace cap = comet::capability;

namespace {

using comet::test::TempDir;

void put(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

std::string tree(const std::string& dir) {
  auto h = hash_tree(dir);
  EXPECT_TRUE(h.ok()) << (h.ok() ? "" : h.error().what());
  return h.ok() ? *h : "";
}

KeyInputs base_inputs() {
  KeyInputs k;
  k.manifest = "apiVersion: soyapack/v0\nname: p\n";
  k.pack_tree = std::string(64, 'a');
  k.rootfs = "tree:" + std::string(64, 'b');
  k.inputs = std::string(64, 'c');
  k.args = {"/usr/bin/python3", "agent.py", "x"};
  k.env = {"PATH=/usr/bin", "LANG=C.UTF-8"};
  k.runtime = "0.1.0 build-id:abcd";
  k.policy = "{\"ociVersion\":\"1.2.0\"}";
  return k;
}

cap::Manifest manifest(cap::Tier tier, bool egress) {
  cap::Manifest m;
  m.name = "p";
  m.version = "1.0.0";
  m.capabilities.tier = tier;
  if (egress) m.capabilities.egress.entries.push_back({"api.test", 443, cap::Protocol::https});
  return m;
}

// A committed entry for KEY with stdout/stderr and out/a.txt, out/sub/b.txt.
std::string make_entry(const Store& s, const std::string& key, int exit_status = 0) {
  auto t = s.make_temp(key);
  EXPECT_TRUE(t.ok());
  put(*t + "/stdout", "hello stdout\n");
  put(*t + "/stderr", "hello stderr\n");
  put(*t + "/out/a.txt", "A");
  put(*t + "/out/sub/b.txt", "BB");
  Entry e;
  e.key = key;
  e.pack = "p@1.0.0";
  e.created = "2026-01-01T00:00:00Z";
  e.exit_status = exit_status;
  auto c = s.commit(*t, e);
  EXPECT_TRUE(c.ok() && *c);
  return s.entry_dir(key);
}

std::string key_n(int n) {
  std::string k = sha256_hex(std::to_string(n));
  return k;
}

}  // namespace

// ---- the key -------------------------------------------------------------------

TEST(PackCacheKey, SameInputsSameKey) {
  EXPECT_EQ(compose_key(base_inputs()), compose_key(base_inputs()));
  EXPECT_TRUE(valid_key(compose_key(base_inputs())));
}

TEST(PackCacheKey, EveryInputChangesTheKey) {
  const std::string k0 = compose_key(base_inputs());
  std::vector<std::pair<std::string, std::function<void(KeyInputs&)>>> changes = {
      {"manifest byte", [](KeyInputs& k) { k.manifest[0] = 'A'; }},
      {"pack file", [](KeyInputs& k) { k.pack_tree[0] = 'f'; }},
      {"rootfs", [](KeyInputs& k) { k.rootfs = "default:" + std::string(64, 'b'); }},
      {"inputs", [](KeyInputs& k) { k.inputs = ""; }},
      {"arg value", [](KeyInputs& k) { k.args[2] = "y"; }},
      {"arg added", [](KeyInputs& k) { k.args.push_back(""); }},
      {"env value", [](KeyInputs& k) { k.env[1] = "LANG=C"; }},
      {"env order", [](KeyInputs& k) { std::swap(k.env[0], k.env[1]); }},
      {"runtime", [](KeyInputs& k) { k.runtime = "0.1.0 build-id:abce"; }},
      {"policy", [](KeyInputs& k) { k.policy += " "; }},
  };
  std::set<std::string> seen = {k0};
  for (auto& [what, change] : changes) {
    KeyInputs k = base_inputs();
    change(k);
    std::string key = compose_key(k);
    EXPECT_NE(key, k0) << what;
    EXPECT_TRUE(seen.insert(key).second) << what << " collides with another change";
  }
}

TEST(PackCacheKey, FieldsAreLengthPrefixed) {
  KeyInputs a = base_inputs(), b = base_inputs();
  a.args = {"ab", "c"};
  b.args = {"a", "bc"};
  EXPECT_NE(compose_key(a), compose_key(b));
  a = base_inputs();
  b = base_inputs();
  a.args = {"x"};
  a.env = {};
  b.args = {};
  b.env = {"x"};
  EXPECT_NE(compose_key(a), compose_key(b));
}

TEST(PackCacheKey, RuntimeIdentityNamesVersionAndBuild) {
  std::string id = runtime_identity();
  EXPECT_EQ(id.rfind(COMET_VERSION, 0), 0u) << id;
  EXPECT_TRUE(id.find(" build-id:") != std::string::npos ||
              id.find(" sha256:") != std::string::npos)
      << id;
  EXPECT_EQ(id, runtime_identity());
}

TEST(PackCacheKey, Sha256KnownAnswer) {
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  Sha256 h;
  h.update("a");
  h.update("bc");
  EXPECT_EQ(h.hex(), sha256_hex("abc"));
  h.update("abc");  // reusable after hex()
  EXPECT_EQ(h.hex(), sha256_hex("abc"));
}

// ---- tree hashing --------------------------------------------------------------

TEST(PackCacheTree, ContentNotLocation) {
  TempDir a, b;
  for (const auto* d : {&a, &b}) {
    put(*d / "x.txt", "one");
    put(*d / "sub/y.bin", std::string("\0\1\2", 3));
    ::symlink("x.txt", (*d / "link").c_str());
  }
  EXPECT_EQ(tree(a.path()), tree(b.path()));
}

TEST(PackCacheTree, EveryChangeIsSeen) {
  TempDir d;
  put(d / "x.txt", "one");
  put(d / "sub/y.txt", "two");
  ::symlink("x.txt", (d / "link").c_str());
  std::set<std::string> seen = {tree(d.path())};
  auto expect_new = [&](const std::string& what) {
    EXPECT_TRUE(seen.insert(tree(d.path())).second) << what;
  };
  put(d / "x.txt", "onE");
  expect_new("a content byte");
  put(d / "x.txt", "onE\n");
  expect_new("a size");
  ::chmod((d / "x.txt").c_str(), 0600);
  expect_new("a mode");
  fs::remove(d / "link");
  ::symlink("sub/y.txt", (d / "link").c_str());
  expect_new("a symlink target");
  put(d / "empty", "");
  expect_new("an empty file");
  fs::rename(d / "empty", d / "empty2");
  expect_new("a rename");
  fs::create_directory(d / "emptydir");
  expect_new("an empty directory");
  ::chmod((d / "emptydir").c_str(), 0700);
  expect_new("a directory mode");
}

TEST(PackCacheTree, SymlinksAreNeverFollowed) {
  TempDir d, outside;
  put(outside / "secret", "v1");
  put(d / "a", "a");
  ::symlink((outside / "secret").c_str(), (d / "ln").c_str());
  ::symlink(outside.path().c_str(), (d / "dirln").c_str());
  std::string h1 = tree(d.path());
  put(outside / "secret", "v2 changed");
  put(outside / "more", "x");
  EXPECT_EQ(tree(d.path()), h1) << "the target's content is not part of the tree";
  // the root itself must not be a symlink
  TempDir top;
  ::symlink(d.path().c_str(), (top / "root").c_str());
  auto r = hash_tree(top / "root");
  ASSERT_FALSE(r.ok());
  // O_DIRECTORY | O_NOFOLLOW on a symlink: ENOTDIR
  EXPECT_EQ(r.error().err(), ENOTDIR) << r.error().what();
}

TEST(PackCacheTree, StatsCountFilesAndBytes) {
  TempDir d;
  put(d / "a", std::string(1000, 'x'));
  put(d / "b/c", std::string(24, 'y'));
  TreeStats st;
  ASSERT_TRUE(hash_tree(d.path(), &st).ok());
  EXPECT_EQ(st.files, 2u);
  EXPECT_EQ(st.bytes, 1024u);
  EXPECT_EQ(st.hashed, 1024u);
  EXPECT_EQ(st.entries, 4u);  // ., a, b, b/c
}

TEST(PackCacheTree, MemoIsUsedOnlyWhileTheIdentityHolds) {
  TempDir d;
  put(d / "f", "content");
  std::string real = tree(d.path());
  // A file changed just now is never memoized.
  Memo memo;
  ASSERT_TRUE(hash_tree(d.path(), nullptr, &memo).ok());
  EXPECT_TRUE(memo.empty());
  // A line with the file's identity is trusted: a planted digest shows it.
  struct stat st;
  ASSERT_EQ(::lstat((d / "f").c_str(), &st), 0);
  auto ns = [](const struct timespec& t) { return int64_t(t.tv_sec) * 1000000000 + t.tv_nsec; };
  MemoLine line{uint64_t(st.st_dev), uint64_t(st.st_ino), uint64_t(st.st_size),
                ns(st.st_mtim),      ns(st.st_ctim),      std::string(64, '0')};
  memo = {{"f", line}};
  TreeStats stats;
  auto planted = hash_tree(d.path(), &stats, &memo);
  ASSERT_TRUE(planted.ok());
  EXPECT_NE(*planted, real);
  EXPECT_EQ(stats.hashed, 0u);
  EXPECT_EQ(memo.at("f").sha256, std::string(64, '0'));
  // Any change to the file (here: its mode, so ctime) and the line is ignored.
  ::chmod((d / "f").c_str(), 0600);
  ::chmod((d / "f").c_str(), 0644);
  memo = {{"f", line}};
  auto again = hash_tree(d.path(), &stats, &memo);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, real);
}

TEST(PackCacheTree, MemoRoundTrip) {
  Memo m = {{"a/b c", {1, 2, 3, 4, 5, std::string(64, 'e')}},
            {"x\ty", {6, 7, 8, 9, 10, std::string(64, 'f')}}};
  std::string text = render_memo("/some/root", m);
  Memo back = parse_memo(text, "/some/root");
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back.at("a/b c").ino, 2u);
  EXPECT_EQ(back.at("x\ty").ctime_ns, 10);
  EXPECT_TRUE(parse_memo(text, "/other/root").empty());
  EXPECT_EQ(parse_memo(text.substr(0, text.size() - 3), "/some/root").size(), 1u)
      << "a torn last line is dropped";
}

// ---- cacheability --------------------------------------------------------------

TEST(PackCacheDecide, ReadOnlyWithoutEgressIsCached) {
  EXPECT_TRUE(decide(manifest(cap::Tier::read_only, false), {}).cache);
  Flags cd;
  cd.cache_dir_given = true;
  EXPECT_TRUE(decide(manifest(cap::Tier::read_only, false), cd).cache);
  Flags no;
  no.no_cache = true;
  auto d = decide(manifest(cap::Tier::read_only, false), no);
  EXPECT_FALSE(d.cache);
  EXPECT_TRUE(d.error.empty());
}

TEST(PackCacheDecide, EgressNeedsAllowUpstream) {
  auto d = decide(manifest(cap::Tier::read_only, true), {});
  EXPECT_FALSE(d.cache);
  EXPECT_TRUE(d.error.empty());
  EXPECT_NE(d.why.find("allow-upstream"), std::string::npos);
  Flags up;
  up.upstream = Upstream::allow;
  EXPECT_TRUE(decide(manifest(cap::Tier::read_only, true), up).cache);
  up.no_cache = true;
  EXPECT_FALSE(decide(manifest(cap::Tier::read_only, true), up).cache);
}

TEST(PackCacheDecide, SideEffectAndUnrestrictedAreNeverCached) {
  for (auto tier : {cap::Tier::side_effect, cap::Tier::unrestricted}) {
    for (bool egress : {false, true}) {
      auto d = decide(manifest(tier, egress), {});
      EXPECT_FALSE(d.cache);
      EXPECT_TRUE(d.error.empty()) << "not asked for: no error";
      Flags up;
      up.upstream = Upstream::allow;
      d = decide(manifest(tier, egress), up);
      EXPECT_FALSE(d.cache);
      EXPECT_EQ(d.error, "pack run --cache=allow-upstream: p@1.0.0 is a " +
                             std::string(cap::to_string(tier)) +
                             " pack; only read-only packs are cached");
      Flags cd;
      cd.cache_dir_given = true;
      cd.no_cache = true;
      d = decide(manifest(tier, egress), cd);
      EXPECT_FALSE(d.cache);
      EXPECT_EQ(d.error.rfind("pack run --cache-dir: p@1.0.0 is a ", 0), 0u) << d.error;
    }
  }
}

// ---- the store -----------------------------------------------------------------

TEST(PackCacheStore, CommitThenLookup) {
  TempDir d;
  Store s(d / "store");
  ASSERT_TRUE(s.prepare().ok());
  std::string key = key_n(1);
  EXPECT_FALSE(*s.lookup(key)) << "nothing yet";
  make_entry(s, key, 7);
  auto e = s.lookup(key);
  ASSERT_TRUE(e.ok()) << e.error().what();
  ASSERT_TRUE(*e);
  EXPECT_EQ((*e)->exit_status, 7);
  EXPECT_EQ((*e)->pack, "p@1.0.0");
  std::vector<std::string> paths;
  for (const auto& f : (*e)->files) paths.push_back(f.path);
  EXPECT_EQ(paths, (std::vector<std::string>{"out/a.txt", "out/sub/b.txt", "stderr", "stdout"}));
  EXPECT_EQ((*e)->dirs, (std::vector<std::string>{"out", "out/sub"}));
  EXPECT_EQ((*e)->files[3].sha256, sha256_hex("hello stdout\n"));
  EXPECT_TRUE(fs::is_empty(d / "store/tmp")) << "the temp dir was renamed into place";
  EXPECT_EQ(s.entry_dir(key), d / "store/" + key.substr(0, 2) + "/" + key);
}

TEST(PackCacheStore, CorruptOrPartialEntriesAreRefused) {
  struct Case {
    const char* what;
    std::function<void(const std::string&)> damage;
    const char* needle;
  };
  std::vector<Case> cases = {
      {"a flipped byte", [](const std::string& e) { put(e + "/stdout", "hello stdouT\n"); },
       "stdout: content does not match"},
      {"a truncated file", [](const std::string& e) { put(e + "/out/a.txt", ""); },
       "out/a.txt: 0 bytes, recorded 1"},
      {"a missing file", [](const std::string& e) { fs::remove(e + "/out/sub/b.txt"); },
       "missing out/sub/b.txt"},
      {"a missing directory", [](const std::string& e) { fs::remove_all(e + "/out/sub"); },
       "missing directory out/sub"},
      {"an extra file", [](const std::string& e) { put(e + "/out/c.txt", "C"); },
       "unexpected file out/c.txt"},
      {"a symlink in place of a file",
       [](const std::string& e) {
         fs::remove(e + "/stderr");
         fs::create_symlink("stdout", e + "/stderr");
       },
       "unexpected entry stderr"},
      {"no entry.json", [](const std::string& e) { fs::remove(e + "/entry.json"); },
       "partial entry (no entry.json)"},
      {"a torn entry.json", [](const std::string& e) { put(e + "/entry.json", "{\"format\":"); },
       "entry.json:"},
  };
  int n = 100;
  for (const auto& c : cases) {
    TempDir d;
    Store s(d / "store");
    ASSERT_TRUE(s.prepare().ok());
    std::string key = key_n(n++);
    std::string dir = make_entry(s, key);
    ASSERT_TRUE(s.lookup(key).ok());
    c.damage(dir);
    auto r = s.lookup(key);
    ASSERT_FALSE(r.ok()) << c.what;
    EXPECT_NE(r.error().what().find(c.needle), std::string::npos)
        << c.what << ": " << r.error().what();
    ASSERT_TRUE(s.discard(key).ok());
    EXPECT_FALSE(fs::exists(dir)) << c.what;
    EXPECT_FALSE(*s.lookup(key)) << c.what << ": a miss after the discard";
  }
}

TEST(PackCacheStore, AnEntryUnderAnotherKeyIsRefused) {
  TempDir d;
  Store s(d / "store");
  ASSERT_TRUE(s.prepare().ok());
  std::string k1 = key_n(1), k2 = key_n(2);
  std::string dir = make_entry(s, k1);
  fs::create_directories(fs::path(s.entry_dir(k2)).parent_path());
  fs::rename(dir, s.entry_dir(k2));
  auto r = s.lookup(k2);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().what().find("another key"), std::string::npos);
}

TEST(PackCacheStore, TheFirstCommitWins) {
  TempDir d;
  Store s(d / "store");
  ASSERT_TRUE(s.prepare().ok());
  std::string key = key_n(3);
  make_entry(s, key, 1);
  auto t = s.make_temp(key);
  ASSERT_TRUE(t.ok());
  put(*t + "/stdout", "other");
  put(*t + "/stderr", "");
  Entry e;
  e.key = key;
  e.exit_status = 2;
  auto c = s.commit(*t, e);
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(*c) << "the key was already recorded";
  EXPECT_FALSE(fs::exists(*t)) << "the loser's temp dir is removed";
  EXPECT_EQ((*s.lookup(key))->exit_status, 1);
}

TEST(PackCacheStore, CommitRefusesSpecialFiles) {
  TempDir d;
  Store s(d / "store");
  ASSERT_TRUE(s.prepare().ok());
  auto t = s.make_temp(key_n(4));
  put(*t + "/stdout", "");
  fs::create_symlink("/etc/passwd", *t + "/stderr");
  Entry e;
  e.key = key_n(4);
  EXPECT_FALSE(s.commit(*t, e).ok());
  EXPECT_FALSE(fs::exists(*t));
  EXPECT_FALSE(fs::exists(s.entry_dir(e.key)));
}

TEST(PackCacheStore, EntryJsonRoundTrip) {
  Entry e;
  e.key = key_n(5);
  e.pack = "p@1.0.0";
  e.created = "2026-01-01T00:00:00Z";
  e.exit_status = 4;
  e.allow_upstream = true;
  e.dirs = {"out"};
  e.files = {{"stdout", std::string(64, 'a'), 12, 0600}};
  auto back = entry_from_json(entry_to_json(e));
  ASSERT_TRUE(back.ok()) << back.error().what();
  EXPECT_EQ(back->key, e.key);
  EXPECT_EQ(back->exit_status, 4);
  EXPECT_TRUE(back->allow_upstream);
  EXPECT_EQ(back->files[0].mode, 0600u);
  EXPECT_FALSE(entry_from_json("{\"format\":\"comet-runtime pack-cache 0\"}").ok());
}

// ---- pruning -------------------------------------------------------------------

TEST(PackCachePrune, EvictsLeastRecentlyUsedFirst) {
  std::vector<Listed> v = {
      {"k3", "", 100, 3000, {}}, {"k1", "", 100, 1000, {}}, {"k2", "", 100, 2000, {}}};
  EXPECT_EQ(plan_eviction(v, 300), std::vector<std::string>{});
  EXPECT_EQ(plan_eviction(v, 250), std::vector<std::string>{"k1"});
  EXPECT_EQ(plan_eviction(v, 200), std::vector<std::string>{"k1"});
  EXPECT_EQ(plan_eviction(v, 199), (std::vector<std::string>{"k1", "k2"}));
  EXPECT_EQ(plan_eviction(v, 0), (std::vector<std::string>{"k1", "k2", "k3"}));
}

TEST(PackCachePrune, ParseSize) {
  EXPECT_EQ(parse_size("0"), 0u);
  EXPECT_EQ(parse_size("123"), 123u);
  EXPECT_EQ(parse_size("10k"), 10240u);
  EXPECT_EQ(parse_size("500M"), 500ull << 20);
  EXPECT_EQ(parse_size("2G"), 2ull << 30);
  EXPECT_EQ(parse_size("2GiB"), 2ull << 30);
  EXPECT_EQ(parse_size("7B"), 7u);
  for (const char* bad : {"", "M", "1.5G", "-1", "10X", "1GG", "99999999999999999999"})
    EXPECT_FALSE(parse_size(bad).has_value()) << bad;
  EXPECT_EQ(format_size(824), "824B");
  EXPECT_EQ(format_size(1536), "1.5K");
}

TEST(PackCachePrune, StoreRemovesStaleTempsCorruptEntriesAndOldest) {
  TempDir d;
  Store s(d / "store");
  ASSERT_TRUE(s.prepare().ok());
  std::string old_key = key_n(10), new_key = key_n(11), bad_key = key_n(12);
  make_entry(s, old_key);
  make_entry(s, new_key);
  std::string bad = make_entry(s, bad_key);
  put(bad + "/stdout", "tampered");
  // the older entry was used long ago
  struct timespec ts[2] = {{1000, 0}, {1000, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, s.entry_dir(old_key).c_str(), ts, 0), 0);
  // a temp dir of a dead writer, and one of a live writer (this process)
  fs::create_directories(d / "store/tmp/" + old_key + ".999999999.abc");
  auto live = s.make_temp(new_key);
  ASSERT_TRUE(live.ok());
  std::vector<std::string> removed;
  ASSERT_TRUE(s.prune(std::nullopt, &removed).ok());
  EXPECT_FALSE(fs::exists(d / "store/tmp/" + old_key + ".999999999.abc"));
  EXPECT_TRUE(fs::exists(*live)) << "a live writer's temp dir stays";
  EXPECT_FALSE(fs::exists(bad));
  EXPECT_TRUE(fs::exists(s.entry_dir(old_key)));
  EXPECT_TRUE(fs::exists(s.entry_dir(new_key)));
  ASSERT_EQ(removed.size(), 2u);
  EXPECT_EQ(removed[1].rfind("removed corrupt entry " + bad_key, 0), 0u) << removed[1];
  // with a size: the least recently used goes first
  auto entries = s.list();
  ASSERT_EQ(entries.size(), 2u);
  std::uint64_t one = entries[0].size;
  removed.clear();
  ASSERT_TRUE(s.prune(one, &removed).ok());
  EXPECT_FALSE(fs::exists(s.entry_dir(old_key)));
  EXPECT_TRUE(fs::exists(s.entry_dir(new_key)));
  ASSERT_EQ(removed.size(), 1u);
  EXPECT_EQ(removed[0].rfind("evicted " + old_key, 0), 0u);
  // touch() marks a hit
  s.touch(new_key);
  EXPECT_GT(s.list()[0].used_ns, 1000ll * 1000000000);
}
