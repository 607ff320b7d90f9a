// `sandbox` (verbs.hpp): its name, help and flags are the sandbox
// library's (sandbox_cli.hpp).
#include "comet/sandbox/sandbox_cli.hpp"
#include "verbs.hpp"

namespace comet::runtime::cli {

CLI::App* add_sandbox(CLI::App& app, const Verb&, Options& o) {
  return add_sandbox_command(app, o.sandbox);
}

int run_sandbox(CLI::App& cmd, Options& o) {
  return sandbox_main(o.g, cmd, o.sandbox);
}

}  // namespace comet::runtime::cli
