// The OCI verbs on a running container's processes (verbs.hpp): ps update
// events exec. `events --violations` prints the capability_violation events
// (docs/events.md).
#include <nlohmann/json.hpp>

#include "comet/base/sys.hpp"
#include "comet/lifecycle/container.hpp"
#include "comet/reporting/violations.hpp"
#include "verbs.hpp"

namespace comet::runtime::cli {

CLI::App* add_ps(CLI::App& app, const Verb& v, Options& o) {
  auto* c = app.add_subcommand(v.name, v.help);
  c->add_option("--format,-f", o.ps_format, "table or json")
      ->check(CLI::IsMember({"table", "json"}));
  c->prefix_command();
  return c;
}

int run_ps(CLI::App& cmd, Options& o) {
  auto rest = cmd.remaining();
  if (rest.empty()) return fail(Error::msg("ps: a container id is required"));
  std::vector<std::string> ps_args(rest.begin() + 1, rest.end());
  Status st = ps_container(o.g, rest[0], o.ps_format, ps_args);
  return st.ok() ? 0 : fail(st.error());
}

CLI::App* add_update(CLI::App& app, const Verb& v, Options& o) {
  auto* c = app.add_subcommand(v.name, v.help);
  c->add_option("--resources,-r", o.resources_file, "LinuxResources JSON file, - for stdin");
  c->add_option("--memory", o.up_memory, "memory limit in bytes");
  c->add_option("--pids-limit", o.up_pids, "maximum number of pids");
  c->add_option("container-id", o.id)->required();
  return c;
}

int run_update(CLI::App&, Options& o) {
  std::string body;
  if (!o.resources_file.empty()) {
    auto t = read_file(o.resources_file == "-" ? "/dev/stdin" : o.resources_file);
    if (!t.ok()) return fail(t.error());
    body = *t;
  } else {
    nlohmann::json r = nlohmann::json::object();
    try {
      if (!o.up_memory.empty()) r["memory"]["limit"] = std::stoll(o.up_memory);
      if (!o.up_pids.empty()) r["pids"]["limit"] = std::stoll(o.up_pids);
    } catch (const std::exception&) {
      return fail(Error::msg("update: --memory and --pids-limit take a number"));
    }
    body = r.dump();
  }
  Status st = update_container(o.g, o.id, body);
  return st.ok() ? 0 : fail(st.error());
}

CLI::App* add_events(CLI::App& app, const Verb& v, Options& o) {
  auto* c = app.add_subcommand(v.name, v.help);
  c->add_flag("--stats", o.ev_stats, "print the stats once and exit");
  c->add_option("--interval", o.ev_interval, "interval between stats (e.g. 5s, 500ms)")
      ->capture_default_str();
  c->add_option("container-id", o.id)->required();
  // Default: runc's stats; --violations: the events file (docs/events.md).
  c->add_flag("--violations", o.ev_violations, "print the capability_violation events");
  c->add_flag("--follow", o.ev_follow, "with --violations: keep printing until deleted");
  return c;
}

int run_events(CLI::App&, Options& o) {
  if (o.ev_violations) return violations::events_cli(o.g.root, o.id, o.ev_follow);
  int ms = 5000;
  try {
    size_t pos = 0;
    double v = std::stod(o.ev_interval, &pos);
    std::string unit = o.ev_interval.substr(pos);
    ms = static_cast<int>(unit == "ms" ? v : unit == "m" ? v * 60000 : v * 1000);
  } catch (const std::exception&) {
    return fail(Error::msg("events: invalid --interval \"" + o.ev_interval + "\""));
  }
  if (ms <= 0) return fail(Error::msg("events: --interval must be positive"));
  Status st = events_container(o.g, o.id, o.ev_stats, ms);
  return st.ok() ? 0 : fail(st.error());
}

CLI::App* add_exec(CLI::App& app, const Verb& v, Options& o) {
  ExecOptions& eo = o.exec;
  auto* c = app.add_subcommand(v.name, v.help);
  c->add_option("--process,-p", eo.process_file, "process.json to run (- for stdin)");
  c->add_flag("--detach,-d", eo.detach, "start the process and return");
  c->add_flag("--tty,-t", eo.tty, "allocate a pty (needs --console-socket)");
  c->add_option("--pid-file", eo.pid_file, "write the process's pid to this file");
  c->add_option("--console-socket", eo.console_socket, "unix socket that receives the pty master");
  c->add_option("--cwd", eo.cwd, "working directory inside the container");
  c->add_option("--env,-e", eo.env, "KEY=VALUE to add to the environment")
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  c->add_option("--user,-u", eo.user, "UID[:GID]");
  c->add_option("--additional-gids,-g", eo.additional_gids, "additional gids")
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  c->add_option("--cap,-c", eo.caps, "add a capability")
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  c->add_flag("--no-new-privs", eo.no_new_privs, "set no_new_privs");
  c->add_option("--preserve-fds", eo.preserve_fds, "pass N fds after stdio")
      ->check(CLI::NonNegativeNumber);
  // Everything from the container id on is ours, even words that look like flags.
  c->prefix_command();
  return c;
}

int run_exec(CLI::App& cmd, Options& o) {
  auto rest = cmd.remaining();
  if (rest.empty()) return fail(Error::msg("exec: a container id is required"));
  o.exec.id = rest[0];
  o.exec.args.assign(rest.begin() + 1, rest.end());
  auto r = exec_container(o.g, o.exec);
  if (!r.ok()) return fail(r.error());
  return *r;
}

}  // namespace comet::runtime::cli
