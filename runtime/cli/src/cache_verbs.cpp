// `cache ls|show KEY|prune [--max-size SIZE]|hash DIR` (verbs.hpp): the
// store of `pack run`'s deterministic-tier cache (cache_cli.hpp).
#include "comet/pack/cache_cli.hpp"
#include "verbs.hpp"

namespace comet::runtime::cli {

CLI::App* add_cache(CLI::App& app, const Verb& v, Options& o) {
  auto* cache = app.add_subcommand(v.name, v.help);
  cache->require_subcommand(1);
  o.cls = cache->add_subcommand("ls", "list the cached pack runs");
  o.cls->add_option("--format", o.cache_format, "text or json")
      ->check(CLI::IsMember({"text", "json"}));
  o.cshow = cache->add_subcommand("show", "verify one entry and print its record");
  o.cshow->add_option("key", o.cache_key, "the key, or a unique prefix of at least 4 digits")
      ->required();
  o.cprune = cache->add_subcommand(
      "prune",
      "remove stale temp dirs, corrupt entries, and with --max-size the least recently "
      "used entries until the store is at most that size");
  o.cprune->add_option("--max-size", o.cache_max, "e.g. 500M, 2G");
  o.chash = cache->add_subcommand(
      "hash", "print the digest the key uses for a directory tree, and the hashing speed");
  o.chash->add_option("dir", o.cache_tree, "the tree")->required();
  for (auto* c : {o.cls, o.cshow, o.cprune})
    c->add_option("--cache-dir", o.cache_dir,
                  "the store (default: $COMET_CACHE_DIR, else /var/cache/comet-runtime/packs)");
  return cache;
}

int run_cache(CLI::App&, Options& o) {
  if (*o.cls) return cache_ls(o.cache_dir, o.cache_format);
  if (*o.cshow) return cache_show(o.cache_dir, o.cache_key);
  if (*o.cprune) return cache_prune(o.cache_dir, o.cache_max);
  if (*o.chash) return cache_hash(o.cache_tree);
  return 1;
}

}  // namespace comet::runtime::cli
