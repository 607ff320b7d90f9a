// The command table's rows (cli.cpp): one Verb per command, its flags and
// its handler in the file of its family:
//   lifecycle_verbs.cpp  create run start state kill delete list pause resume
//                        spec features
//   process_verbs.cpp    ps update events exec
//   pack_verbs.cpp       pack (validate lint bundle explain annotation run flags), rootfs
//   cache_verbs.cpp      cache (ls show prune hash)
//   sandbox_verb.cpp     sandbox (its flags are sandbox_cli.cpp's)
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "comet/base/result.hpp"
#include "comet/lifecycle/container.hpp"
#include "comet/pack/hostroot.hpp"
#include "comet/pack/pack_cli.hpp"
#include "comet/sandbox/sandbox_cli.hpp"

namespace comet::runtime::cli {

// What the command line fills in: the global flags and every verb's. CLI11
// writes into these while it parses, so they live as long as the App.
struct Options {
  Globals g;
  // create, run and pack run: applied before the verb runs (cli.cpp).
  std::string events_target;  // violations.hpp: a copy of every capability_violation event
  std::string dns_upstream;   // egress.hpp: the packs' resolver's upstreams

  // lifecycle_verbs.cpp
  CreateOptions create;
  bool detach = false;  // run
  std::string id;       // start state kill delete pause resume update events
  std::string sig = "SIGTERM";
  bool all = false;    // kill
  bool force = false;  // delete
  std::string list_format = "table";
  bool quiet = false;  // list
  std::string spec_bundle;
  bool rootless = false;  // spec

  // process_verbs.cpp
  std::string ps_format = "table";
  std::string resources_file, up_memory, up_pids;  // update
  bool ev_stats = false, ev_violations = false, ev_follow = false;
  std::string ev_interval = "5s";  // events
  ExecOptions exec;

  // pack_verbs.cpp
  std::string pack_path, pack_format = "text", annotation_format = "podman", pack_rootfs, pack_out,
                         pack_out_o, pack_input, pack_output, explain_path, explain_host;
  bool pack_strict = false;
  PackRunOptions pack_run;
  std::vector<std::string> pack_run_args;
  bool pack_run_args_verbatim = false;  // taken after "--" by cli.cpp
  std::string pack_run_cache = "auto";
  std::string flags_action = "list", flags_arg;
  HostRootfsOptions rootfs;
  bool rootfs_verbose = false;

  // cache_verbs.cpp
  std::string cache_dir, cache_key, cache_max, cache_format = "text", cache_tree;

  // sandbox_verb.cpp
  SandboxOptions sandbox;

  // The subcommands whose handlers look at which of their own was parsed,
  // and `pack run` (its usage errors exit 2).
  CLI::App *pack = nullptr, *pvalidate = nullptr, *plint = nullptr, *pbundle = nullptr,
           *pexplain = nullptr, *pflags = nullptr, *prun = nullptr, *pannotation = nullptr;
  CLI::App *cls = nullptr, *cshow = nullptr, *cprune = nullptr, *chash = nullptr;
};

// One row of the command table: the name and one-line help that
// `comet-runtime --help` lists; add() makes the subcommand on APP (help
// nullptr: the verb's library names it) and declares its flags; run() runs
// it, once parsed and the log is set up, and returns the exit code.
struct Verb {
  const char* name;
  const char* help;
  CLI::App* (*add)(CLI::App& app, const Verb& v, Options& o);
  int (*run)(CLI::App& cmd, Options& o);
};

// An error logged, exit 1.
int fail(const Error& e);

// lifecycle_verbs.cpp
CLI::App* add_create(CLI::App& app, const Verb& v, Options& o);
int run_create(CLI::App& cmd, Options& o);
CLI::App* add_run(CLI::App& app, const Verb& v, Options& o);
int run_run(CLI::App& cmd, Options& o);
// start, state, pause, resume: a container id and nothing else.
CLI::App* add_id_verb(CLI::App& app, const Verb& v, Options& o);
int run_start(CLI::App& cmd, Options& o);
int run_state(CLI::App& cmd, Options& o);
CLI::App* add_kill(CLI::App& app, const Verb& v, Options& o);
int run_kill(CLI::App& cmd, Options& o);
CLI::App* add_delete(CLI::App& app, const Verb& v, Options& o);
int run_delete(CLI::App& cmd, Options& o);
CLI::App* add_list(CLI::App& app, const Verb& v, Options& o);
int run_list(CLI::App& cmd, Options& o);
int run_pause(CLI::App& cmd, Options& o);
int run_resume(CLI::App& cmd, Options& o);
CLI::App* add_spec(CLI::App& app, const Verb& v, Options& o);
int run_spec(CLI::App& cmd, Options& o);
CLI::App* add_features(CLI::App& app, const Verb& v, Options& o);
int run_features(CLI::App& cmd, Options& o);

// process_verbs.cpp
CLI::App* add_ps(CLI::App& app, const Verb& v, Options& o);
int run_ps(CLI::App& cmd, Options& o);
CLI::App* add_update(CLI::App& app, const Verb& v, Options& o);
int run_update(CLI::App& cmd, Options& o);
CLI::App* add_events(CLI::App& app, const Verb& v, Options& o);
int run_events(CLI::App& cmd, Options& o);
CLI::App* add_exec(CLI::App& app, const Verb& v, Options& o);
int run_exec(CLI::App& cmd, Options& o);

// pack_verbs.cpp
CLI::App* add_pack(CLI::App& app, const Verb& v, Options& o);
int run_pack(CLI::App& cmd, Options& o);
CLI::App* add_rootfs(CLI::App& app, const Verb& v, Options& o);
int run_rootfs(CLI::App& cmd, Options& o);

// cache_verbs.cpp
CLI::App* add_cache(CLI::App& app, const Verb& v, Options& o);
int run_cache(CLI::App& cmd, Options& o);

// sandbox_verb.cpp
CLI::App* add_sandbox(CLI::App& app, const Verb& v, Options& o);
int run_sandbox(CLI::App& cmd, Options& o);

}  // namespace comet::runtime::cli
