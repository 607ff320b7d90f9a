// The command line: runc-compatible verbs over runtime/, dispatched from one
// table (kVerbs). Thin on purpose: parse, call one function, print, map the
// result to an exit code. Each verb's flags and handler are in the file of
// its family (verbs.hpp).
#include "comet/cli/cli.hpp"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <optional>
#include <string_view>
#include <vector>

#include "comet/base/sys.hpp"
#include "comet/egress/egress.hpp"
#include "comet/host/log.hpp"
#include "comet/host/selfexe.hpp"
#include "comet/host/user_dirs.hpp"
#include "comet/reporting/violations.hpp"
#include "verbs.hpp"

namespace comet::runtime {
namespace cli {

// Every command, in the order `comet-runtime --help` lists them.
const Verb kVerbs[] = {
    {"create", "create a container (stopped before the user process)", add_create, run_create},
    {"run", "create and start a container, wait for it, delete it", add_run, run_run},
    {"start", "start a created container", add_id_verb, run_start},
    {"state", "print the container's state as JSON", add_id_verb, run_state},
    {"kill", "send a signal (name or number, default SIGTERM) to the init", add_kill, run_kill},
    {"delete", "delete a stopped container and all its resources", add_delete, run_delete},
    {"list", "list containers under --root", add_list, run_list},
    {"pause", "freeze every process of the container", add_id_verb, run_pause},
    {"resume", "thaw a paused container", add_id_verb, run_resume},
    {"spec", "write a default config.json (as runc spec does)", add_spec, run_spec},
    {"features", "print the implemented features as JSON", add_features, run_features},
    {"ps", "list the processes of a container", add_ps, run_ps},
    {"update", "change a running container's resource limits", add_update, run_update},
    {"events", "print container stats as JSON lines, or its capability violations (--violations)",
     add_events, run_events},
    {"pack", "SoyaPack tooling: validate, lint, run, explain, annotation, bundle, flags", add_pack,
     run_pack},
    {"cache", "list, show and prune the pack run cache", add_cache, run_cache},
    {"rootfs", "build a minimal rootfs from host programs and the shared libraries they load",
     add_rootfs, run_rootfs},
    {"sandbox", nullptr, add_sandbox, run_sandbox},
    {"exec", "run a new process inside a running container", add_exec, run_exec},
};

int fail(const Error& e) {
  log::error(e.what());
  return 1;
}

namespace {

void add_global_flags(CLI::App& app, Globals& g) {
  app.set_version_flag("--version,-v", version_text());
  // An ordinary user's containers live in its own runtime dir (user_dirs.hpp),
  // as runc's in $XDG_RUNTIME_DIR/runc.
  if (rootless()) g.root = user_dirs().runtime;
  app.add_option("--root", g.root, "root directory for container state")->capture_default_str();
  app.add_option("--log", g.log, "log file (default: stderr)");
  app.add_option("--log-format", g.log_format, "log format: text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  app.add_flag("--debug", g.debug, "enable debug logging");
  app.add_option("--cgroup-manager", g.cgroup_manager,
                 "cgroupfs, or disabled: no cgroup (podman --cgroups=disabled; docs/rootless.md)")
      ->check(CLI::IsMember({"cgroupfs", "systemd", "disabled"}))
      ->capture_default_str();
  app.add_flag("--systemd-cgroup", g.systemd_cgroup,
               "use the systemd cgroup driver (not available on hosts without systemd)");
  app.require_subcommand(1);
}

bool is_help_or_version(const std::string& a) {
  return a == "--help" || a == "-h" || a == "--version" || a == "-v";
}

// The first word that is not a global flag (or its value): the verb, or ""
// when a help or version flag comes first or there is none.
std::string verb_word(int argc, char** argv) {
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if (a.empty() || a[0] != '-') return a;
    if (is_help_or_version(a)) break;
    if (a.find('=') == std::string::npos &&
        (a == "--root" || a == "--log" || a == "--log-format" || a == "--cgroup-manager"))
      i++;
  }
  return "";
}

bool any_help_or_version(int argc, char** argv) {
  for (int i = 1; i < argc; i++)
    if (is_help_or_version(argv[i])) return true;
  return false;
}

// An unknown verb or none at all: say so plainly (CLI11 would report a
// missing subcommand for both). An exit code, or nullopt to go on.
std::optional<int> check_verb(CLI::App& app, int argc, char** argv, const Globals& g) {
  const std::string verb = verb_word(argc, argv);
  const bool help_or_version = any_help_or_version(argc, argv);
  if (verb.empty() && !help_or_version) {
    std::fprintf(stderr, "%s", app.help().c_str());
    std::fprintf(stderr, "comet-runtime: a command is required\n");
    return 1;
  }
  if (!verb.empty()) {
    bool known = false;
    for (auto* sc : app.get_subcommands([](CLI::App*) { return true; }))
      if (sc->check_name(verb)) known = true;
    if (!known) {
      log::init(g.log, g.log_format == "json", g.debug);
      log::error("unknown command \"" + verb + "\" (see comet-runtime --help)");
      return 1;
    }
  }
  return std::nullopt;
}

// CLI11's parse; help, version and usage errors end here.
std::optional<int> parse(CLI::App& app, int argc, char** argv, const Globals& g) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    log::init(g.log, g.log_format == "json", g.debug);
    std::string msg = e.what();
    if (e.get_name() == "RequiredError" && msg.find("subcommand") != std::string::npos)
      msg = "a command is required; see comet-runtime --help";
    if (e.get_name() == "ExtrasError" && app.get_subcommands().empty())
      msg = "unknown command: " + msg.substr(msg.find(':') + 1);
    log::error(msg);
    return 1;
  }
  return std::nullopt;
}

// What the global and shared flags set up before any verb runs: the log,
// the violation events' delivery, the egress resolver's upstreams.
std::optional<int> set_up(Options& o) {
  if (!log::init(o.g.log, o.g.log_format == "json", o.g.debug)) {
    std::fprintf(stderr, "comet-runtime: cannot open log file %s\n", o.g.log.c_str());
    return 1;
  }
  // The default per-user root: made 0700 and checked to be this user's.
  if (rootless() && o.g.root == user_dirs().runtime) {
    Status st = ensure_private_dir(o.g.root);
    if (!st.ok()) return fail(st.error());
  }
  if (!o.events_target.empty()) {
    if (o.events_target.rfind("unix:", 0) != 0 && o.events_target[0] != '/') {
      char cwd[4096];
      if (::getcwd(cwd, sizeof cwd)) o.events_target = join_path(cwd, o.events_target);
    }
    violations::set_delivery(o.events_target);
  }
  if (!o.dns_upstream.empty()) {
    Status st = egress::set_dns_upstream(o.dns_upstream);
    if (!st.ok()) {
      fail(st.error());
      return o.prun && *o.prun ? 2 : 1;  // pack verbs: 2 for a usage error
    }
  }
  return std::nullopt;
}

}  // namespace
}  // namespace cli

int cli_main(int argc, char** argv) {
  cli::Options o;
  CLI::App app{
      "comet-runtime: a runc-compatible OCI runtime that turns declared capabilities "
      "into kernel-enforced policy",
      "comet-runtime"};
  cli::add_global_flags(app, o.g);
  // A verb named as itself, no help or version asked for: only that verb's
  // options are built (all twenty verbs' were ~0.5 ms of each `sandbox`
  // call, one per agent shell command). Anything else (help, an unknown
  // word) builds them all, as --help lists them.
  constexpr size_t kCount = std::size(cli::kVerbs);
  const std::string verb = cli::verb_word(argc, argv);
  bool only = !verb.empty() && !cli::any_help_or_version(argc, argv) &&
              std::any_of(std::begin(cli::kVerbs), std::end(cli::kVerbs),
                          [&](const cli::Verb& v) { return verb == v.name; });
  CLI::App* cmds[kCount] = {};
  for (size_t i = 0; i < kCount; i++)
    if (!only || verb == cli::kVerbs[i].name) cmds[i] = cli::kVerbs[i].add(app, cli::kVerbs[i], o);

  // `sandbox ... -- CMD ARGS`: CMD's words are taken as they are, not by
  // CLI11, which reads a word "[a,b]" as a list and splits it (`bash -c
  // '[[ x ]]'` lost its brackets, and `--can-auto-allow` judged another
  // script than the harness then ran: red team round 12).
  // The same for `pack run PACK -- ARGS` (the agent got "a", "b" for "[a,b]").
  std::optional<std::vector<std::string>> after_dashes;
  const bool pack_run = verb == "pack" && [&] {
    int i = 1;
    while (i < argc && std::string_view(argv[i]) != "pack") i++;
    for (i++; i < argc; i++)
      if (argv[i][0] != '-') return std::string_view(argv[i]) == "run";
    return false;
  }();
  if (verb == "sandbox" || pack_run) {
    for (int i = 1; i < argc; ++i) {
      if (std::string_view(argv[i]) != "--") continue;
      after_dashes.emplace(argv + i + 1, argv + argc);
      argc = i + 1;
      break;
    }
  }
  if (auto rc = cli::check_verb(app, argc, argv, o.g)) return *rc;
  if (auto rc = cli::parse(app, argc, argv, o.g)) return *rc;
  if (after_dashes && verb == "sandbox") o.sandbox.args = std::move(*after_dashes);
  if (after_dashes && pack_run && !after_dashes->empty()) {
    o.pack_run.args = std::move(*after_dashes);
    o.pack_run_args_verbatim = true;
  }
  if (auto rc = cli::set_up(o)) return *rc;
  for (size_t i = 0; i < kCount; i++)
    if (cmds[i] && *cmds[i]) return cli::kVerbs[i].run(*cmds[i], o);
  return 1;
}

}  // namespace comet::runtime
