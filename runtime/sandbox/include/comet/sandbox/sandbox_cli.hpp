// `comet-runtime sandbox`: run a command confined by a profile, against the
// host's own filesystem (docs/sandbox.md).
//
//   sandbox [--profile P] [--workspace DIR] -- CMD ARGS...
//       plans the view (capability/profile_compile.hpp) under the
//       workspace's placeholder lock and runs it directly
//       (sandbox_launch.hpp: no state dir, no bundle), as sandbox-<random>,
//       and exits with CMD's status (128+N when killed by signal N). The
//       sandbox itself failing exits 125; CMD not found 127, not
//       executable 126 (as env(1) and chroot(1) do).
//       --profile off runs CMD unconfined (a plain exec, as the invoking
//       user) and says so in one line on stderr.
//   sandbox --explain [--profile P] [--workspace DIR] [--format text|json]
//       the resolved policy: config files, paths, how each is enforced.
//   sandbox --can-auto-allow [--profile P] [--workspace DIR] -- CMD...
//       a JSON verdict for an agent harness (capability/auto_allow.hpp);
//       exit 0 when auto_allow is true, 1 otherwise (also on errors, which
//       still print a verdict with auto_allow false).
#pragma once

#include <string>
#include <vector>

#include "comet/lifecycle/container.hpp"

namespace CLI {
class App;
}

namespace comet::runtime {

struct SandboxOptions {
  std::string profile;
  std::string workspace;
  std::string format = "text";
  bool explain = false;
  bool can_auto_allow = false;
  std::string events;  // --events FILE|unix:PATH: a copy of every violation event
  std::vector<std::string> args;
};

// Registers the subcommand on the CLI; sandbox_main runs it once parsed.
CLI::App* add_sandbox_command(CLI::App& app, SandboxOptions& o);
int sandbox_main(const Globals& g, CLI::App& sub, SandboxOptions& o);

int sandbox_run(const Globals& g, const SandboxOptions& o);
int sandbox_explain(const Globals& g, const SandboxOptions& o);
int sandbox_can_auto_allow(const Globals& g, const SandboxOptions& o);

}  // namespace comet::runtime
