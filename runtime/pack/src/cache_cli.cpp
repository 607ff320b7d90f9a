// `comet-runtime cache ls|show|prune` over cache::Store (pack_cache.hpp).
#include "comet/pack/cache_cli.hpp"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>

#include "comet/base/sys.hpp"
#include "comet/host/log.hpp"
#include "comet/pack/pack_cache.hpp"

namespace comet::runtime {
namespace {

std::string utc(std::int64_t ns) {
  std::time_t t = static_cast<std::time_t>(ns / 1'000'000'000);
  struct tm tm;
  gmtime_r(&t, &tm);
  char b[32];
  std::strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return b;
}

}  // namespace

int cache_ls(const std::string& dir, const std::string& format) {
  cache::Store store(cache::store_dir(dir));
  auto entries = store.list();
  if (format == "json") {
    nlohmann::ordered_json arr = nlohmann::ordered_json::array();
    for (const auto& l : entries) {
      nlohmann::ordered_json j;
      j["key"] = l.key;
      j["size"] = l.size;
      j["last_used"] = utc(l.used_ns);
      j["pack"] = l.entry ? l.entry->pack : "";
      j["exit"] = l.entry ? nlohmann::ordered_json(l.entry->exit_status) : nullptr;
      j["created"] = l.entry ? l.entry->created : "";
      arr.push_back(j);
    }
    std::printf("%s\n", arr.dump(-1, ' ', true).c_str());
    return 0;
  }
  for (const auto& l : entries) {
    std::printf("%s  %8s  %s  %s  exit %s\n", l.key.c_str(), cache::format_size(l.size).c_str(),
                utc(l.used_ns).c_str(), l.entry ? l.entry->pack.c_str() : "(partial)",
                l.entry ? std::to_string(l.entry->exit_status).c_str() : "-");
  }
  return 0;
}

int cache_show(const std::string& dir, const std::string& key) {
  cache::Store store(cache::store_dir(dir));
  std::string full;
  int matches = 0;
  if (key.size() >= 4)
    for (const auto& l : store.list())
      if (l.key.rfind(key, 0) == 0) {
        full = l.key;
        matches++;
      }
  if (matches == 0) {
    log::error("cache show: no entry " + key + " in " + store.dir());
    return 1;
  }
  if (matches > 1) {
    log::error("cache show: " + key + " is ambiguous (" + std::to_string(matches) + " entries)");
    return 1;
  }
  auto e = store.lookup(full);
  if (!e.ok() || !*e) {
    log::error("cache show " + full +
               ": corrupt entry: " + (e.ok() ? std::string("gone") : e.error().what()));
    return 1;
  }
  std::fputs(cache::entry_to_json(**e).c_str(), stdout);
  return 0;
}

int cache_prune(const std::string& dir, const std::string& max_size) {
  std::optional<std::uint64_t> max;
  if (!max_size.empty()) {
    max = cache::parse_size(max_size);
    if (!max) {
      log::error("cache prune --max-size \"" + max_size + "\": expected a size such as 500M or 2G");
      return 2;
    }
  }
  cache::Store store(cache::store_dir(dir));
  if (!path_exists(store.dir())) return 0;
  std::vector<std::string> removed;
  Status st = store.prune(max, &removed);
  for (const auto& line : removed) std::printf("%s\n", line.c_str());
  if (!st.ok()) {
    log::error("cache prune: " + st.error().what());
    return 1;
  }
  return 0;
}

int cache_hash(const std::string& tree) {
  cache::TreeStats st;
  auto t0 = std::chrono::steady_clock::now();
  auto digest = cache::hash_tree(tree, &st);
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!digest.ok()) {
    log::error("cache hash: " + digest.error().what());
    return 1;
  }
  nlohmann::ordered_json j;
  j["sha256"] = *digest;
  j["files"] = st.files;
  j["entries"] = st.entries;
  j["bytes"] = st.bytes;
  j["ms"] = ms;
  j["mb_per_s"] = ms > 0 ? static_cast<double>(st.bytes) / 1e6 / (ms / 1e3) : 0.0;
  std::printf("%s\n", j.dump(-1, ' ', true).c_str());  // ASCII: agent-chosen names
  return 0;
}

}  // namespace comet::runtime
