// The command line: runc-compatible verbs over runtime/. Thin on purpose:
// parse, call one function, print, map the result to an exit code.
#include "comet/cli/cli.hpp"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "comet/base/sys.hpp"
#include "comet/egress/egress.hpp"
#include "comet/host/log.hpp"
#include "comet/host/selfexe.hpp"
#include "comet/host/state_store.hpp"
#include "comet/lifecycle/container.hpp"
#include "comet/oci/spec.hpp"
#include "comet/pack/cache_cli.hpp"
#include "comet/pack/hostroot.hpp"
#include "comet/pack/pack_cli.hpp"
#include "comet/reporting/reporter.hpp"
#include "comet/reporting/violations.hpp"
#include "comet/sandbox/sandbox_cli.hpp"

namespace comet::runtime {
namespace {

int fail(const Error& e) {
  log::error(e.what());
  return 1;
}

int print_state(const Globals& g, const std::string& id) {
  auto st = container_state(g, id);
  if (!st.ok()) return fail(st.error());
  ContainerDir dir(g.root, id);
  auto rec = dir.load();
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(oci::to_json(*st, -1));
  if (rec.ok()) {
    j["rootfs"] = rec->rootfs;
    j["created"] = rec->created;
    j["owner"] = rec->owner;
    if (!rec->layers.empty()) j["org.soyaos.comet.layers"] = rec->layers;
  }
  std::cout << j.dump(2) << "\n";
  return 0;
}

int print_list(const Globals& g, const std::string& format, bool quiet) {
  auto entries = list_containers(g);
  if (quiet) {
    for (auto& e : entries) std::cout << e.state.id << "\n";
    return 0;
  }
  if (format == "json") {
    if (entries.empty()) {
      std::cout << "null\n";  // as runc prints
      return 0;
    }
    nlohmann::ordered_json arr = nlohmann::ordered_json::array();
    for (auto& e : entries) {
      nlohmann::ordered_json j;
      j["ociVersion"] = e.state.oci_version;
      j["id"] = e.state.id;
      j["pid"] = e.state.pid;
      j["status"] = oci::status_name(e.state.status);
      j["bundle"] = e.state.bundle;
      j["rootfs"] = "";
      j["created"] = e.created;
      j["owner"] = e.owner;
      if (!e.state.annotations.empty()) j["annotations"] = e.state.annotations;
      arr.push_back(j);
    }
    std::cout << arr.dump() << "\n";
    return 0;
  }
  auto pad = [](std::string s, size_t w) {
    if (s.size() < w)
      s.append(w - s.size(), ' ');
    else
      s += ' ';
    return s;
  };
  std::vector<std::vector<std::string>> rows = {
      {"ID", "PID", "STATUS", "BUNDLE", "CREATED", "OWNER"}};
  for (auto& e : entries)
    rows.push_back({e.state.id, std::to_string(e.state.pid), oci::status_name(e.state.status),
                    e.state.bundle, e.created, e.owner.empty() ? "root" : e.owner});
  std::vector<size_t> w(6, 12);
  for (auto& r : rows)
    for (size_t i = 0; i < 6; i++) w[i] = std::max(w[i], r[i].size() + 1);
  for (auto& r : rows) {
    std::string line;
    for (size_t i = 0; i < 6; i++) line += i == 5 ? r[i] : pad(r[i], w[i]);
    std::cout << line << "\n";
  }
  return 0;
}

int write_spec(const std::string& bundle, bool rootless) {
  if (rootless) return fail(Error::msg("spec --rootless: rootless containers are not supported"));
  std::string path = bundle.empty() ? "config.json" : join_path(bundle, "config.json");
  if (path_exists(path)) return fail(Error::msg("File " + path + " exists. Remove it first"));
  Status st = write_file_atomic(path, oci::to_json(oci::default_spec(), 2) + "\n", 0644);
  if (!st.ok()) return fail(st.error());
  return 0;
}

}  // namespace

int cli_main(int argc, char** argv) {
  Globals g;
  CLI::App app{
      "comet-runtime: a runc-compatible OCI runtime that turns declared capabilities "
      "into kernel-enforced policy",
      "comet-runtime"};
  app.set_version_flag("--version,-v", version_text());
  app.add_option("--root", g.root, "root directory for container state")->capture_default_str();
  app.add_option("--log", g.log, "log file (default: stderr)");
  app.add_option("--log-format", g.log_format, "log format: text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  app.add_flag("--debug", g.debug, "enable debug logging");
  app.add_flag("--systemd-cgroup", g.systemd_cgroup,
               "use the systemd cgroup driver (not available on hosts without systemd)");
  app.require_subcommand(1);

  CreateOptions co;
  std::string events_target;
  std::string dns_upstream;  // egress.hpp: the packs' resolver's upstreams
  auto add_create_opts = [&](CLI::App* c) {
    c->add_option("container-id", co.id, "container id")->required();
    c->add_option("--bundle,-b", co.bundle, "path to the bundle directory")->capture_default_str();
    c->add_option("--pid-file", co.pid_file, "write the container init's pid to this file");
    c->add_option("--console-socket", co.console_socket,
                  "unix socket that receives the pty master (process.terminal)");
    c->add_flag("--no-pivot", co.no_pivot,
                "use MS_MOVE + chroot instead of pivot_root (for a host running from an initramfs, "
                "where pivot_root fails)");
    c->add_flag("--no-new-keyring", co.no_new_keyring, "do not create a new session keyring");
    c->add_option("--preserve-fds", co.preserve_fds, "pass N fds after stdio to the container")
        ->check(CLI::NonNegativeNumber);
    // violations.hpp: a copy of every capability_violation event.
    c->add_option("--events", events_target, "deliver violation events to FILE or unix:PATH");
    c->add_flag("--net-helper", co.net_helper,
                "a pack with an egress list in a network namespace this runtime makes: attach "
                "the connectivity helper (slirp4netns) so that the allowed hosts are reachable "
                "(pack run and sandbox do; a "
                "config alone never gets it, so an engine's --network none stays none)");
    c->add_option("--dns-upstream", dns_upstream,
                  "DNS servers the egress resolver forwards allowed names to (IP, IP:PORT, "
                  "[IPv6]:PORT, comma-separated; default $COMET_DNS_UPSTREAM, else the host's "
                  "/etc/resolv.conf)");
  };
  auto* create =
      app.add_subcommand("create", "create a container (stopped before the user process)");
  add_create_opts(create);
  bool detach = false;
  auto* run = app.add_subcommand("run", "create and start a container, wait for it, delete it");
  add_create_opts(run);
  run->add_flag("--detach,-d", detach, "start and return, leaving the container running");

  std::string id;
  auto* start = app.add_subcommand("start", "start a created container");
  start->add_option("container-id", id)->required();
  auto* state = app.add_subcommand("state", "print the container's state as JSON");
  state->add_option("container-id", id)->required();

  std::string sig = "SIGTERM";
  bool all = false;
  auto* kill =
      app.add_subcommand("kill", "send a signal (name or number, default SIGTERM) to the init");
  kill->add_option("container-id", id)->required();
  kill->add_option("signal", sig, "signal name or number")->capture_default_str();
  kill->add_flag("--all,-a", all, "signal every process in the container");

  bool force = false;
  auto* del = app.add_subcommand("delete", "delete a stopped container and all its resources");
  del->add_option("container-id", id)->required();
  del->add_flag("--force,-f", force, "kill a running container first");

  std::string format = "table";
  bool quiet = false;
  auto* list = app.add_subcommand("list", "list containers under --root");
  list->alias("ls");
  list->add_option("--format,-f", format, "table or json")->check(CLI::IsMember({"table", "json"}));
  list->add_flag("--quiet,-q", quiet, "print ids only");

  auto* pause = app.add_subcommand("pause", "freeze every process of the container");
  pause->add_option("container-id", id)->required();
  auto* resume = app.add_subcommand("resume", "thaw a paused container");
  resume->add_option("container-id", id)->required();

  std::string spec_bundle;
  bool rootless = false;
  auto* spec = app.add_subcommand("spec", "write a default config.json (as runc spec does)");
  spec->add_option("--bundle,-b", spec_bundle, "directory to write config.json into");
  spec->add_flag("--rootless", rootless, "rootless spec (not supported)");

  auto* features = app.add_subcommand("features", "print the implemented features as JSON");

  std::string ps_format = "table";
  auto* ps = app.add_subcommand("ps", "list the processes of a container");
  ps->add_option("--format,-f", ps_format, "table or json")
      ->check(CLI::IsMember({"table", "json"}));
  ps->prefix_command();

  std::string resources_file;
  std::string up_memory, up_pids;
  auto* update = app.add_subcommand("update", "change a running container's resource limits");
  update->add_option("--resources,-r", resources_file, "LinuxResources JSON file, - for stdin");
  update->add_option("--memory", up_memory, "memory limit in bytes");
  update->add_option("--pids-limit", up_pids, "maximum number of pids");
  update->add_option("container-id", id)->required();

  bool ev_stats = false;
  std::string ev_interval = "5s";
  auto* events = app.add_subcommand("events", "print container stats as JSON lines");
  events->add_flag("--stats", ev_stats, "print the stats once and exit");
  events->add_option("--interval", ev_interval, "interval between stats (e.g. 5s, 500ms)")
      ->capture_default_str();
  events->add_option("container-id", id)->required();
  // Default: runc's stats; --violations: the events file (docs/events.md).
  bool ev_violations = false, ev_follow = false;
  events->add_flag("--violations", ev_violations, "print the capability_violation events");
  events->add_flag("--follow", ev_follow, "with --violations: keep printing until deleted");

  auto* pack = app.add_subcommand("pack", "SoyaPack tooling: validate, lint, bundle, explain, run");
  pack->require_subcommand(1);
  std::string pack_path, pack_format = "text", pack_rootfs, pack_out, pack_input, pack_output,
                         explain_path, explain_host;
  bool pack_strict = false;
  auto* pvalidate = pack->add_subcommand("validate", "check the manifest's shape");
  pvalidate->add_option("pack", pack_path, "pack directory or soyapack.yaml")->required();
  auto* plint = pack->add_subcommand("lint", "check capabilities, tools and examples agree");
  plint->add_option("pack", pack_path, "pack directory or soyapack.yaml")->required();
  plint->add_flag("--strict", pack_strict, "also fail wildcards, uncovered capabilities");
  plint->add_option("--format", pack_format, "text or json")
      ->check(CLI::IsMember({"text", "json"}));
  plint->add_option("--rootfs", pack_rootfs, "check runtime.interpreter exists in this rootfs");
  auto* pbundle = pack->add_subcommand("bundle", "compile the capabilities into an OCI bundle");
  pbundle->add_option("pack", pack_path, "pack directory")->required();
  pbundle->add_option("--rootfs", pack_rootfs, "the rootfs the pack runs on")->required();
  pbundle->add_option("-o,--output-bundle", pack_out, "bundle directory to write")->required();
  pbundle->add_option("--input", pack_input, "host dir for /workdir/inputs");
  pbundle->add_option("--output", pack_output, "host dir for /workdir/out");
  auto* pexplain =
      pack->add_subcommand("explain", "say whether a path or host is allowed, and why");
  pexplain->add_option("pack", pack_path, "pack directory or soyapack.yaml")->required();
  pexplain->add_option("--path", explain_path, "a sandbox path");
  pexplain->add_option("--host", explain_host, "HOST:PORT[:PROTO]");
  PackRunOptions pro;
  std::vector<std::string> prun_args;
  auto* prun = pack->add_subcommand(
      "run", "bundle the pack, run the agent confined, collect /workdir/out, clean up");
  prun->add_option("pack", pro.pack, "pack directory or soyapack.yaml")->required();
  prun->add_option("--rootfs", pro.rootfs,
                   "the rootfs to run on (default: the interpreter and its libraries from the "
                   "host, cached under /var/lib/comet-runtime/rootfs)");
  prun->add_option("--input", pro.input, "host dir served read-only at /workdir/inputs");
  prun->add_option("--output", pro.output, "host dir that receives /workdir/out after the run");
  prun->add_option("--id", pro.id, "container id (default: pack-<random>)");
  prun->add_option("--events", events_target, "deliver violation events to FILE or unix:PATH");
  prun->add_option("--dns-upstream", dns_upstream,
                   "DNS servers the egress resolver forwards allowed names to (IP, IP:PORT, "
                   "[IPv6]:PORT, comma-separated; default $COMET_DNS_UPSTREAM, else the host's "
                   "/etc/resolv.conf)");
  // The deterministic-tier cache (docs/cache.md).
  std::string prun_cache = "auto";
  prun->add_flag("--no-cache", pro.no_cache,
                 "run the pack even if a cached result exists; record nothing");
  prun->add_option("--cache", prun_cache,
                   "auto (read-only packs without egress) or allow-upstream (also read-only packs "
                   "with egress: their recorded LLM/API answers are replayed, not asked again)")
      ->check(CLI::IsMember({"auto", "allow-upstream"}))
      ->capture_default_str();
  prun->add_option(
      "--cache-dir", pro.cache_dir,
      "the cache store (default: $COMET_CACHE_DIR, else /var/cache/comet-runtime/packs)");
  // `pack flags [list|clear NAME@VERSION]` (violations.hpp).
  std::string flags_action = "list", flags_arg;
  auto* pflags =
      pack->add_subcommand("flags", "list or clear pack versions flagged for violations");
  pflags->add_option("action", flags_action, "list or clear")
      ->check(CLI::IsMember({"list", "clear"}));
  pflags->add_option("pack-version", flags_arg, "NAME@VERSION (for clear)");
  prun->add_option("args", prun_args, "arguments for the agent (after --), replacing runtime.args");

  // `cache ls|show KEY|prune [--max-size SIZE]` (cache_cli.hpp).
  std::string cache_dir, cache_key, cache_max, cache_format = "text";
  auto* cache = app.add_subcommand("cache", "list, show and prune the pack run cache");
  cache->require_subcommand(1);
  auto* cls = cache->add_subcommand("ls", "list the cached pack runs");
  cls->add_option("--format", cache_format, "text or json")->check(CLI::IsMember({"text", "json"}));
  auto* cshow = cache->add_subcommand("show", "verify one entry and print its record");
  cshow->add_option("key", cache_key, "the key, or a unique prefix of at least 4 digits")
      ->required();
  auto* cprune = cache->add_subcommand(
      "prune",
      "remove stale temp dirs, corrupt entries, and with --max-size the least recently "
      "used entries until the store is at most that size");
  cprune->add_option("--max-size", cache_max, "e.g. 500M, 2G");
  std::string cache_tree;
  auto* chash = cache->add_subcommand(
      "hash", "print the digest the key uses for a directory tree, and the hashing speed");
  chash->add_option("dir", cache_tree, "the tree")->required();
  for (auto* c : {cls, cshow, cprune})
    c->add_option("--cache-dir", cache_dir,
                  "the store (default: $COMET_CACHE_DIR, else /var/cache/comet-runtime/packs)");

  HostRootfsOptions ro;
  bool ro_verbose = false;
  auto* rootfs = app.add_subcommand(
      "rootfs", "build a minimal rootfs from host programs and the shared libraries they load");
  rootfs
      ->add_option("--from-host", ro.binaries,
                   "host programs (a name looked up in PATH, or a path), each with its ELF "
                   "interpreter and libraries; a pythonX.Y also brings /usr/lib/pythonX.Y "
                   "without its tests, IDLE, tkinter and dist-packages")
      ->type_name("BIN")
      ->required();
  rootfs->add_option("-o,--output", ro.output, "rootfs directory to create (absent or empty)")
      ->type_name("DIR")
      ->required();
  rootfs
      ->add_option("--tree", ro.trees,
                   "also add this host directory tree verbatim, on one filesystem (repeatable)")
      ->type_name("PATH")
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  rootfs->add_flag("--copy", ro.copy,
                   "copy every file (default: hard links where DIR is on the same filesystem, "
                   "so a container that can write its rootfs writes the host's files)");
  rootfs->add_flag("--force", ro.force, "replace DIR when it exists and is not empty");
  rootfs->add_flag("--verbose", ro_verbose, "print every path added");

  SandboxOptions sandbox_opts;
  auto* sandbox = add_sandbox_command(app, sandbox_opts);

  ExecOptions eo;
  auto* exec = app.add_subcommand("exec", "run a new process inside a running container");
  exec->add_option("--process,-p", eo.process_file, "process.json to run (- for stdin)");
  exec->add_flag("--detach,-d", eo.detach, "start the process and return");
  exec->add_flag("--tty,-t", eo.tty, "allocate a pty (needs --console-socket)");
  exec->add_option("--pid-file", eo.pid_file, "write the process's pid to this file");
  exec->add_option("--console-socket", eo.console_socket,
                   "unix socket that receives the pty master");
  exec->add_option("--cwd", eo.cwd, "working directory inside the container");
  exec->add_option("--env,-e", eo.env, "KEY=VALUE to add to the environment")
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  exec->add_option("--user,-u", eo.user, "UID[:GID]");
  exec->add_option("--additional-gids,-g", eo.additional_gids, "additional gids")
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  exec->add_option("--cap,-c", eo.caps, "add a capability")
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  exec->add_flag("--no-new-privs", eo.no_new_privs, "set no_new_privs");
  exec->add_option("--preserve-fds", eo.preserve_fds, "pass N fds after stdio")
      ->check(CLI::NonNegativeNumber);
  // Everything from the container id on is ours, even words that look like flags.
  exec->prefix_command();

  // An unknown verb or none at all: say so plainly (CLI11 would report a
  // missing subcommand for both).
  {
    std::string verb;
    for (int i = 1; i < argc; i++) {
      std::string a = argv[i];
      if (a.empty() || a[0] != '-') {
        verb = a;
        break;
      }
      if (a == "--help" || a == "-h" || a == "--version" || a == "-v") break;
      if (a.find('=') == std::string::npos &&
          (a == "--root" || a == "--log" || a == "--log-format"))
        i++;
    }
    bool help_or_version = false;
    for (int i = 1; i < argc; i++) {
      std::string a = argv[i];
      if (a == "--help" || a == "-h" || a == "--version" || a == "-v") help_or_version = true;
    }
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
  }
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
  if (!log::init(g.log, g.log_format == "json", g.debug)) {
    std::fprintf(stderr, "comet-runtime: cannot open log file %s\n", g.log.c_str());
    return 1;
  }
  if (!events_target.empty()) {
    if (events_target.rfind("unix:", 0) != 0 && events_target[0] != '/') {
      char cwd[4096];
      if (::getcwd(cwd, sizeof cwd)) events_target = join_path(cwd, events_target);
    }
    violations::set_delivery(events_target);
  }
  if (!dns_upstream.empty()) {
    Status st = egress::set_dns_upstream(dns_upstream);
    if (!st.ok()) {
      fail(st.error());
      return *prun ? 2 : 1;  // pack verbs: 2 for a usage error
    }
  }

  if (*create) {
    auto r = create_container(g, co);
    return r.ok() ? 0 : fail(r.error());
  }
  if (*run) {
    auto r = run_container(g, co, detach);
    if (!r.ok()) return fail(r.error());
    return *r;
  }
  if (*start) {
    Status st = start_container(g, id);
    return st.ok() ? 0 : fail(st.error());
  }
  if (*state) return print_state(g, id);
  if (*kill) {
    auto s = parse_signal(sig);
    if (!s.ok()) return fail(s.error());
    Status st = kill_container(g, id, *s, all);
    return st.ok() ? 0 : fail(st.error());
  }
  if (*del) {
    Status st = delete_container(g, id, force);
    // What a killed `pack run` left (pack_cli.cpp RunMounts): its run
    // directory and the tmpfs and overlay views mounted under it.
    if (force) remove_pack_run_dir(g, id);
    return st.ok() ? 0 : fail(st.error());
  }
  if (*list) return print_list(g, format, quiet);
  if (*pause || *resume) {
    Status st = pause_container(g, id, pause->parsed());
    return st.ok() ? 0 : fail(st.error());
  }
  if (*spec) return write_spec(spec_bundle, rootless);
  if (*pack) {
    if (*pvalidate) return pack_validate(pack_path);
    if (*plint) return pack_lint(pack_path, pack_strict, pack_format, pack_rootfs);
    if (*pbundle) return pack_bundle(pack_path, pack_rootfs, pack_out, pack_input, pack_output);
    if (*pexplain) return pack_explain(pack_path, explain_path, explain_host);
    if (*pflags) return violations::flags_cli(flags_action, flags_arg);
    if (*prun) {
      if (prun->count("args")) pro.args = prun_args;
      pro.allow_upstream = prun_cache == "allow-upstream";
      return pack_run(g, pro);
    }
  }
  if (*cache) {
    if (*cls) return cache_ls(cache_dir, cache_format);
    if (*cshow) return cache_show(cache_dir, cache_key);
    if (*cprune) return cache_prune(cache_dir, cache_max);
    if (*chash) return cache_hash(cache_tree);
  }
  if (*rootfs) {
    auto r = rootfs_from_host(ro);
    if (!r.ok()) return fail(r.error());
    if (ro_verbose)
      for (const auto& line : *r) std::cout << line << "\n";
    return 0;
  }
  if (*sandbox) return sandbox_main(g, *sandbox, sandbox_opts);
  if (*ps) {
    auto rest = ps->remaining();
    if (rest.empty()) return fail(Error::msg("ps: a container id is required"));
    std::vector<std::string> ps_args(rest.begin() + 1, rest.end());
    Status st = ps_container(g, rest[0], ps_format, ps_args);
    return st.ok() ? 0 : fail(st.error());
  }
  if (*update) {
    std::string body;
    if (!resources_file.empty()) {
      auto t = read_file(resources_file == "-" ? "/dev/stdin" : resources_file);
      if (!t.ok()) return fail(t.error());
      body = *t;
    } else {
      nlohmann::json r = nlohmann::json::object();
      try {
        if (!up_memory.empty()) r["memory"]["limit"] = std::stoll(up_memory);
        if (!up_pids.empty()) r["pids"]["limit"] = std::stoll(up_pids);
      } catch (const std::exception&) {
        return fail(Error::msg("update: --memory and --pids-limit take a number"));
      }
      body = r.dump();
    }
    Status st = update_container(g, id, body);
    return st.ok() ? 0 : fail(st.error());
  }
  if (*events && ev_violations) return violations::events_cli(g.root, id, ev_follow);
  if (*events) {
    int ms = 5000;
    try {
      size_t pos = 0;
      double v = std::stod(ev_interval, &pos);
      std::string unit = ev_interval.substr(pos);
      ms = static_cast<int>(unit == "ms" ? v : unit == "m" ? v * 60000 : v * 1000);
    } catch (const std::exception&) {
      return fail(Error::msg("events: invalid --interval \"" + ev_interval + "\""));
    }
    if (ms <= 0) return fail(Error::msg("events: --interval must be positive"));
    Status st = events_container(g, id, ev_stats, ms);
    return st.ok() ? 0 : fail(st.error());
  }
  if (*exec) {
    auto rest = exec->remaining();
    if (rest.empty()) return fail(Error::msg("exec: a container id is required"));
    eo.id = rest[0];
    eo.args.assign(rest.begin() + 1, rest.end());
    auto r = exec_container(g, eo);
    if (!r.ok()) return fail(r.error());
    return *r;
  }
  if (*features) {
    std::cout << features_json() << "\n";
    return 0;
  }
  return 1;
}

}  // namespace comet::runtime
