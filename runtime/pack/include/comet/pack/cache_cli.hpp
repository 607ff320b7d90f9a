// `comet-runtime cache ls|show KEY|prune [--max-size SIZE]`: the store of
// `pack run`'s deterministic-tier cache (pack_cache.hpp, docs/cache.md).
// Each returns the process exit code:
//   ls     0 (an absent store lists nothing)
//   show   0 a valid entry, 1 no such entry / ambiguous prefix / corrupt
//   prune  0 done, 1 a removal failed, 2 a bad --max-size
//   hash   0 printed, 1 the tree cannot be read (a diagnostic: the digest a
//          key would use for DIR, hashed without the memo, and the speed)
#pragma once

#include <string>

namespace comet::runtime {

// DIR: --cache-dir as given ("" = $COMET_CACHE_DIR or the default).
int cache_ls(const std::string& dir, const std::string& format);
int cache_show(const std::string& dir, const std::string& key);
int cache_prune(const std::string& dir, const std::string& max_size);
int cache_hash(const std::string& tree);

}  // namespace comet::runtime
