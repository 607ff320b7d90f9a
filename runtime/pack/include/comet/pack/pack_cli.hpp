// The `pack` verbs. Each returns the process exit code:
//   validate  0 valid, 1 invalid, 2 unreadable
//   lint      0 clean (warnings allowed), 1 errors (the manifest's too,
//             as validate), 2 unreadable
//   bundle    0 written, 1 the manifest or inputs are refused, 2 usage (a
//             --rootfs or --input that is not a directory)
//   explain   0 allowed, 1 denied, 2 usage
//   annotation 0 printed, 1 invalid, 2 unreadable
//   run       the agent's exit status; 1 when the runtime failed, 2 usage
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "comet/lifecycle/container.hpp"

namespace comet::runtime {

int pack_validate(const std::string& path);
int pack_lint(const std::string& path, bool strict, const std::string& format,
              const std::string& rootfs);
int pack_bundle(const std::string& pack, const std::string& rootfs, const std::string& out,
                const std::string& input, const std::string& output);
int pack_explain(const std::string& pack, const std::string& path, const std::string& host);
// The annotations an engine puts on a container to confine it to the pack's
// capabilities (docs/engines.md): org.soyaos.comet.capabilities (the JSON
// compile() writes) and org.soyaos.comet.pack. FORMAT: podman (one
// `--annotation` argument: podman reads it as CSV, so the JSON goes in one
// quoted field with its quotes doubled), k8s (a YAML `annotations:` block),
// json (the capabilities value alone).
int pack_annotation(const std::string& pack, const std::string& format);

struct PackRunOptions {
  std::string pack;    // pack directory or soyapack.yaml
  std::string rootfs;  // empty: default_rootfs() for runtime.interpreter
  std::string input;   // host dir served read-only at /workdir/inputs
  std::string output;  // host dir that receives /workdir/out after the run
  std::string id;      // container id; empty: pack-<random>
  std::optional<std::vector<std::string>> args;  // replaces runtime.args
  // The deterministic-tier cache (pack_cache.hpp, docs/cache.md).
  bool no_cache = false;        // --no-cache: neither look up nor record
  bool allow_upstream = false;  // --cache=allow-upstream: also read-only packs with egress
  std::string cache_dir;        // --cache-dir DIR ("" = $COMET_CACHE_DIR or the default)
};

// Bundles into <root>/packs/<id>/ (0700), runs the agent with stdio
// inherited, collects /workdir/out into --output, removes the run directory
// and the container on every path out. A cacheable pack (read-only, no
// egress) is first looked up by its key: a hit replays the recorded
// outputs and exit status without starting a container; a miss runs with
// stdout and stderr teed into a new entry (stdin is /dev/null) and records
// it when the run had no violation. Usage errors exit 2: --input/--output
// the pack does not declare, the cache asked for on a side-effect or
// unrestricted pack.
int pack_run(const Globals& g, const PackRunOptions& o);

}  // namespace comet::runtime
