// The OCI lifecycle verbs. Each takes the global options and returns a
// Status whose message is what the CLI prints (runc's strings where engines
// match on them: "container X does not exist", "container not running",
// "cannot delete container X that is not stopped: running").
#pragma once

#include <string>
#include <vector>

#include "comet/base/result.hpp"
#include "comet/oci/state.hpp"

namespace comet::runtime {

struct Globals {
  std::string root = "/run/comet-runtime";
  std::string log;
  std::string log_format = "text";
  bool debug = false;
  bool systemd_cgroup = false;
  // crun's --cgroup-manager: cgroupfs (the default), systemd (refused: no
  // systemd here), disabled (no cgroup at all: podman --cgroups=disabled).
  std::string cgroup_manager = "cgroupfs";
};

struct CreateOptions {
  std::string id;
  std::string bundle = ".";
  std::string pid_file;
  std::string console_socket;
  bool no_pivot = false;
  bool no_new_keyring = false;
  int preserve_fds = 0;
  // Attach the user-mode connectivity helper (slirp4netns) to a network namespace
  // this runtime makes for a pack with an egress list. Only for bundles the
  // runtime made itself (`pack run`, `sandbox`) or when its caller asks
  // (`run`/`create --net-helper`): a config alone never widens the network
  // an engine chose (podman --network none makes no path, and gets none).
  bool net_helper = false;
};

struct ExecOptions {
  std::string id;
  std::string process_file;  // --process FILE (or -)
  std::vector<std::string> args;
  bool detach = false;
  bool tty = false;
  std::string pid_file, console_socket, cwd, user;
  std::vector<std::string> env, caps;
  std::vector<uint32_t> additional_gids;
  bool no_new_privs = false;
  int preserve_fds = 0;
};

// Builds the container and leaves its init blocked on exec.fifo.
// When keep_child is set (run), the init stays this process's child and
// its pid is returned for waiting.
Result<int> create_container(const Globals& g, const CreateOptions& o, bool keep_child = false);
Status start_container(const Globals& g, const std::string& id);
// create + start, wait, delete: returns the container's exit status
// (128+signal when killed), as runc does.
Result<int> run_container(const Globals& g, const CreateOptions& o, bool detach);
// Returns the exit status of the exec'd process (0 with detach).
Result<int> exec_container(const Globals& g, const ExecOptions& o);
Status kill_container(const Globals& g, const std::string& id, int sig, bool all);
Status delete_container(const Globals& g, const std::string& id, bool force);
// `delete --force ID` of a `pack run` that was killed: its run directory
// (<root>/packs/ID) and the mounts under it. Never called by a live run.
void remove_pack_run_dir(const Globals& g, const std::string& id);
Result<oci::State> container_state(const Globals& g, const std::string& id);
Status pause_container(const Globals& g, const std::string& id, bool pause);

struct ListEntry {
  oci::State state;
  std::string created, owner;
};
std::vector<ListEntry> list_containers(const Globals& g);

// ps: --format json prints the pids; table runs the host's ps(1) with
// PS_ARGS (default -ef) and keeps the container's lines, as runc does.
Status ps_container(const Globals& g, const std::string& id, const std::string& format,
                    const std::vector<std::string>& ps_args);
// update --resources: merge into the saved config, join newly needed v1
// controllers, apply. RESOURCES_JSON is a runtime-spec LinuxResources object.
Status update_container(const Globals& g, const std::string& id, const std::string& resources_json);
// events: {"type":"stats","id":..,"data":{cpu,memory,pids,...}} lines, once
// (--stats) or every interval until the container stops.
Status events_container(const Globals& g, const std::string& id, bool once, int interval_ms);

// SIGKILL, "KILL", "9" -> signal number; error for anything else.
Result<int> parse_signal(const std::string& s);

std::string oci_version();  // the runtime-spec version this runtime implements
std::string features_json();

}  // namespace comet::runtime
