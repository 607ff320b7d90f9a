// The `pack` verbs. Each returns the process exit code:
//   validate  0 valid, 1 invalid, 2 unreadable
//   lint      0 clean (warnings allowed), 1 errors (the manifest's too,
//             as validate), 2 unreadable
//   bundle    0 written, 1 the manifest or inputs are refused, 2 usage (a
//             --rootfs or --input that is not a directory)
//   explain   --path: 0 the agent can read or write it, 1 neither; --host:
//             0 allowed, 1 denied; 2 usage
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
struct BundleOptions {
  std::string pack;    // pack directory
  std::string rootfs;  // the rootfs the pack runs on
  std::string bundle;  // --bundle DIR: the OCI bundle to write
  std::string input;   // host dir for /workdir/inputs (read-only)
  std::string output;  // host dir for /workdir/out ("": BUNDLE/out)
};
// Compiles the pack into BUNDLE/config.json with a copy of the pack at
// BUNDLE/workdir. Every fs.write place (but /tmp, a tmpfs) is a host
// directory the agent (uid 65534) can write: --output DIR for /workdir/out,
// else BUNDLE/out; BUNDLE/write/<path> for the others. A directory that does
// not exist is made and given to the agent; one that exists must be
// writable by the agent already (refused otherwise: nothing is changed).
int pack_bundle(const BundleOptions& o);

struct ExplainOptions {
  std::string pack;             // pack directory or soyapack.yaml
  std::string path;             // --path: a sandbox path
  std::string host;             // --host HOST:PORT[:PROTO]
  std::string rootfs;           // --rootfs: "" is the default rootfs of `pack run`
  std::string input;            // --input: the dir `pack run --input` would get
  std::string format = "text";  // text or json
};
// --path: what the agent of `pack run` sees at the path: the layer that
// serves it (image, pack, input, a writable place, /dev, procfs, masked),
// and what a read and a write there would answer, with why (pack_view.hpp).
// --host: whether capabilities.egress allows the connection, by which entry.
int pack_explain(const ExplainOptions& o);
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
