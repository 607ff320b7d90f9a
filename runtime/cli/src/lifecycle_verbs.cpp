// The OCI lifecycle verbs (verbs.hpp): create run start state kill delete
// list pause resume spec features.
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>

#include "comet/base/sys.hpp"
#include "comet/host/state_store.hpp"
#include "comet/lifecycle/container.hpp"
#include "comet/lifecycle/rootless.hpp"
#include "comet/oci/spec.hpp"
#include "verbs.hpp"

namespace comet::runtime::cli {
namespace {

void add_create_opts(CLI::App* c, Options& o) {
  CreateOptions& co = o.create;
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
  c->add_option("--events", o.events_target, "deliver violation events to FILE or unix:PATH");
  c->add_flag("--net-helper", co.net_helper,
              "a pack with an egress list in a network namespace this runtime makes: attach "
              "the connectivity helper (slirp4netns) so that the allowed hosts are reachable "
              "(pack run and sandbox do; a "
              "config alone never gets it, so an engine's --network none stays none)");
  c->add_option("--dns-upstream", o.dns_upstream,
                "DNS servers the egress resolver forwards allowed names to (IP, IP:PORT, "
                "[IPv6]:PORT, comma-separated; default $COMET_DNS_UPSTREAM, else the host's "
                "/etc/resolv.conf)");
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
    // docs/rootless.md: what this user's container runs without.
    if (!rec->rootless.empty()) j["org.soyaos.comet.rootless"] = rec->rootless;
  }
  std::cout << j.dump(2) << "\n";
  return 0;
}

void print_list_json(const std::vector<ListEntry>& entries) {
  if (entries.empty()) {
    std::cout << "null\n";  // as runc prints
    return;
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
}

void print_list_table(const std::vector<ListEntry>& entries) {
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
}

int status_exit(const Status& st) {
  return st.ok() ? 0 : fail(st.error());
}

}  // namespace

CLI::App* add_create(CLI::App& app, const Verb& v, Options& o) {
  auto* c = app.add_subcommand(v.name, v.help);
  add_create_opts(c, o);
  return c;
}

// A layer this user cannot have (rootless.hpp) exits 125, other errors 1.
static int create_failed(const Error& e) {
  fail(e);
  return is_refusal(e) ? kExitRefused : 1;
}

int run_create(CLI::App&, Options& o) {
  auto r = create_container(o.g, o.create);
  return r.ok() ? 0 : create_failed(r.error());
}

CLI::App* add_run(CLI::App& app, const Verb& v, Options& o) {
  auto* c = app.add_subcommand(v.name, v.help);
  add_create_opts(c, o);
  c->add_flag("--detach,-d", o.detach, "start and return, leaving the container running");
  return c;
}

int run_run(CLI::App&, Options& o) {
  auto r = run_container(o.g, o.create, o.detach);
  if (!r.ok()) return create_failed(r.error());
  return *r;
}

CLI::App* add_id_verb(CLI::App& app, const Verb& v, Options& o) {
  auto* c = app.add_subcommand(v.name, v.help);
  c->add_option("container-id", o.id)->required();
  return c;
}

int run_start(CLI::App&, Options& o) {
  return status_exit(start_container(o.g, o.id));
}

int run_state(CLI::App&, Options& o) {
  return print_state(o.g, o.id);
}

CLI::App* add_kill(CLI::App& app, const Verb& v, Options& o) {
  auto* c = app.add_subcommand(v.name, v.help);
  c->add_option("container-id", o.id)->required();
  c->add_option("signal", o.sig, "signal name or number")->capture_default_str();
  c->add_flag("--all,-a", o.all, "signal every process in the container");
  return c;
}

int run_kill(CLI::App&, Options& o) {
  auto s = parse_signal(o.sig);
  if (!s.ok()) return fail(s.error());
  return status_exit(kill_container(o.g, o.id, *s, o.all));
}

CLI::App* add_delete(CLI::App& app, const Verb& v, Options& o) {
  auto* c = app.add_subcommand(v.name, v.help);
  c->add_option("container-id", o.id)->required();
  c->add_flag("--force,-f", o.force, "kill a running container first");
  return c;
}

int run_delete(CLI::App&, Options& o) {
  Status st = delete_container(o.g, o.id, o.force);
  // What a killed `pack run` left (pack_run.cpp Run): its run directory
  // and the tmpfs and overlay views mounted under it.
  if (o.force) remove_pack_run_dir(o.g, o.id);
  return status_exit(st);
}

CLI::App* add_list(CLI::App& app, const Verb& v, Options& o) {
  auto* c = app.add_subcommand(v.name, v.help);
  c->alias("ls");
  c->add_option("--format,-f", o.list_format, "table or json")
      ->check(CLI::IsMember({"table", "json"}));
  c->add_flag("--quiet,-q", o.quiet, "print ids only");
  return c;
}

int run_list(CLI::App&, Options& o) {
  auto entries = list_containers(o.g);
  if (o.quiet) {
    for (auto& e : entries) std::cout << e.state.id << "\n";
  } else if (o.list_format == "json") {
    print_list_json(entries);
  } else {
    print_list_table(entries);
  }
  return 0;
}

int run_pause(CLI::App&, Options& o) {
  return status_exit(pause_container(o.g, o.id, true));
}

int run_resume(CLI::App&, Options& o) {
  return status_exit(pause_container(o.g, o.id, false));
}

CLI::App* add_spec(CLI::App& app, const Verb& v, Options& o) {
  auto* c = app.add_subcommand(v.name, v.help);
  c->add_option("--bundle,-b", o.spec_bundle, "directory to write config.json into");
  c->add_flag("--rootless", o.rootless,
              "a spec for an ordinary user, as runc spec --rootless (docs/rootless.md)");
  return c;
}

int run_spec(CLI::App&, Options& o) {
  std::string path =
      o.spec_bundle.empty() ? "config.json" : join_path(o.spec_bundle, "config.json");
  if (path_exists(path)) return fail(Error::msg("File " + path + " exists. Remove it first"));
  oci::Spec spec = oci::default_spec();
  if (o.rootless) oci::to_rootless(spec, ::geteuid(), ::getegid());
  return status_exit(write_file_atomic(path, oci::to_json(spec, 2) + "\n", 0644));
}

CLI::App* add_features(CLI::App& app, const Verb& v, Options&) {
  return app.add_subcommand(v.name, v.help);
}

int run_features(CLI::App&, Options&) {
  std::cout << features_json() << "\n";
  return 0;
}

}  // namespace comet::runtime::cli
