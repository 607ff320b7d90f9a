// The deterministic-tier cache of `pack run` (issue 9, docs/cache.md): a
// read-only pack with no egress is run once per distinct input; later runs
// replay the recorded stdout, stderr, /workdir/out tree and exit status
// without starting a container.
//
// Three layers, each testable alone:
//   decide(), compose_key()   pure: is this run cacheable, and its key
//   hash_tree(), Sha256       content hashing (SHA-256, sha256.hpp), never
//                             following a symlink, with an optional memo of
//                             per-file digests keyed by stat identity
//   Store                     the content-addressed store on disk:
//                               <dir>/<key[0:2]>/<key>/entry.json
//                                                     /stdout /stderr /out/...
//                               <dir>/tmp/<key>.<pid>.<random>/  (being written)
//                               <dir>/memo/<sha256 of a tree's path>
//                             entries are written in tmp/ (same filesystem as
//                             the store) and renamed into place; a reader
//                             verifies every recorded file's SHA-256 and
//                             discards an entry that does not match.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "comet/base/result.hpp"
#include "comet/capability/manifest.hpp"
#include "comet/host/sha256.hpp"

namespace comet::runtime::cache {

// The store when neither --cache-dir nor $COMET_CACHE_DIR says otherwise.
inline constexpr const char* kDefaultDir = "/var/cache/comet-runtime/packs";
// Bumped when the key's composition or the entry layout changes: old
// entries then simply stop matching.
inline constexpr const char* kKeyFormat = "comet-runtime pack-cache 1";
// A stream (stdout or stderr) larger than this is passed through but not
// recorded: the run is not stored.
inline constexpr std::uint64_t kMaxStreamBytes = 64ull << 20;

// --cache-dir DIR, else $COMET_CACHE_DIR, else kDefaultDir.
std::string store_dir(const std::string& flag);

// ---- hashing ----------------------------------------------------------------

// Streaming SHA-256 (runtime/sha256.hpp: libcrypto, without EVP's
// start-up cost).
using comet::runtime::Sha256;
using comet::runtime::sha256_hex;
// The digest of a regular file's content, read through an fd opened with
// O_NOFOLLOW. SIZE, when set, receives the number of bytes hashed.
Result<std::string> hash_file(const std::string& path, std::uint64_t* size = nullptr);

struct TreeStats {
  std::uint64_t files = 0;   // regular files
  std::uint64_t bytes = 0;   // their content
  std::uint64_t hashed = 0;  // bytes actually read (the rest came from the memo)
  std::uint64_t entries = 0;
};

// Per-file digests of one tree from an earlier hash_tree(), keyed by the
// relative path with the file's stat identity; a line is trusted only while
// dev, inode, size, mtime and ctime are all unchanged. Files whose ctime
// was within kMemoSettle of the hashing are never memoized (a write in the
// same timestamp tick could otherwise go unseen).
struct MemoLine {
  std::uint64_t dev = 0, ino = 0, size = 0;
  std::int64_t mtime_ns = 0, ctime_ns = 0;
  std::string sha256;
};
using Memo = std::map<std::string, MemoLine>;
inline constexpr std::int64_t kMemoSettleNs = 2'000'000'000;
std::string render_memo(const std::string& root, const Memo& m);
// Empty when TEXT is not a memo of ROOT (another format, another tree).
Memo parse_memo(std::string_view text, const std::string& root);

// SHA-256 over the tree at ROOT: every entry in a fixed order (children
// sorted by name, depth first), each as its type, permission bits, owner,
// relative path and then, for a regular file, its size and content digest;
// for a symlink its target text (never followed); for a device its rdev.
// ROOT itself must be a directory (a symlink to one is refused). MEMO, when
// set, is consulted and replaced by the digests of this walk (MemoLine).
Result<std::string> hash_tree(const std::string& root, TreeStats* stats = nullptr,
                              Memo* memo = nullptr);

// ---- cacheability and the key (pure) ---------------------------------------

enum class Upstream { refuse, allow };  // --cache=auto | --cache=allow-upstream

struct Flags {
  bool no_cache = false;  // --no-cache
  Upstream upstream = Upstream::refuse;
  bool cache_dir_given = false;  // --cache-dir DIR (the env var does not count)
};

struct Decision {
  bool cache = false;
  std::string why;    // why not (for --debug), or "" when cached
  std::string error;  // non-empty: a usage error (exit 2), the message
};
// Read-only and no egress: cached. Read-only with egress: only with
// allow-upstream. Side-effect or unrestricted: never, and asking for the
// cache explicitly (--cache=allow-upstream, --cache-dir) is an error.
// --no-cache: not cached (nothing read or written).
Decision decide(const capability::Manifest& m, const Flags& f);

// Everything the agent can observe, as the key sees it.
struct KeyInputs {
  std::string manifest;           // soyapack.yaml, the bytes
  std::string pack_tree;          // hash_tree() of the pack directory
  std::string rootfs;             // "default:<plan key>" or "tree:<hash_tree>"
  std::string inputs;             // "" without --input, else hash_tree() of it
  std::vector<std::string> args;  // the agent's argv (process.args)
  std::vector<std::string> env;   // its environment (process.env)
  std::string runtime;            // runtime_identity()
  std::string policy;             // the compiled config with placeholder host paths
};
std::string compose_key(const KeyInputs& in);

// COMET_VERSION plus the binary's GNU build id (read from its own program
// headers, no file I/O), so that every rebuild of the runtime is a new
// identity; "COMET_VERSION sha256:<digest of /proc/self/exe>" when the
// binary has no build id.
std::string runtime_identity();

bool valid_key(std::string_view key);  // 64 lowercase hex digits

// ---- the store ---------------------------------------------------------------

struct FileRecord {
  std::string path;  // "stdout", "stderr", "out/<rel>"
  std::string sha256;
  std::uint64_t size = 0;
  mode_t mode = 0644;
};

struct Entry {
  std::string key;
  std::string pack;     // name@version
  std::string created;  // RFC 3339
  int exit_status = 0;
  bool allow_upstream = false;
  std::vector<std::string> dirs;  // "out", "out/sub", ...
  std::vector<FileRecord> files;
};
std::string entry_to_json(const Entry& e);
Result<Entry> entry_from_json(std::string_view text);

// What a listing shows of one entry.
struct Listed {
  std::string key;
  std::string dir;
  std::uint64_t size = 0;      // bytes of its files
  std::int64_t used_ns = 0;    // last hit or creation (the entry dir's mtime)
  std::optional<Entry> entry;  // unset: entry.json missing or unreadable
};

// Least recently used first, until the total is at most MAX_BYTES: the
// keys to remove. Pure.
std::vector<std::string> plan_eviction(std::vector<Listed> entries, std::uint64_t max_bytes);
// "500M", "2G", "10k", "123" (bytes); K/M/G/T are powers of 1024.
std::optional<std::uint64_t> parse_size(std::string_view s);
std::string format_size(std::uint64_t bytes);

class Store {
 public:
  explicit Store(std::string dir) : dir_(std::move(dir)) {}
  const std::string& dir() const { return dir_; }
  std::string entry_dir(const std::string& key) const;

  // Creates the store (0700) and its tmp/ and memo/.
  Status prepare() const;

  // A verified entry: every recorded file present with its size and
  // SHA-256, nothing else in the entry. std::nullopt when there is none.
  // A corrupt or partial entry is an error (the caller discards it).
  Result<std::optional<Entry>> lookup(const std::string& key) const;
  // Checks ENTRY_DIR against E; the problem, or "" when it holds.
  static std::string verify(const std::string& entry_dir, const Entry& e);

  // Removes an entry (renamed into tmp/ first, so a reader never sees a
  // half-removed one).
  Status discard(const std::string& key) const;
  // Marks a hit (the entry dir's mtime), for least-recently-used pruning.
  void touch(const std::string& key) const;

  // A new temp dir in tmp/ for KEY.
  Result<std::string> make_temp(const std::string& key) const;
  // Fills in the file records of E from TEMP (stdout, stderr, out/...),
  // writes entry.json and renames TEMP into place. Returns false (and
  // removes TEMP) when another run recorded the key first.
  Result<bool> commit(const std::string& temp, Entry e) const;

  std::vector<Listed> list() const;

  // Memo files of trees hashed for keys.
  Memo load_memo(const std::string& root) const;
  void save_memo(const std::string& root, const Memo& m) const;

  // Removes temp dirs of runs that are gone, entries that do not verify and
  // memos of trees that no longer exist; with MAX_BYTES also the least
  // recently used entries until the total is at most that. Lines saying
  // what was removed go to REMOVED.
  Status prune(std::optional<std::uint64_t> max_bytes, std::vector<std::string>* removed) const;

 private:
  std::string dir_;
};

}  // namespace comet::runtime::cache
