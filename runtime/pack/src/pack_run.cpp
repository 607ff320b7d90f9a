// `comet-runtime pack run` (pack_cli.hpp): a checklist of phases, each a
// function below: usage, the cache decision, the rootfs, the cache lookup
// (a hit replays and stops), the run directory and the bundle, the guarded
// stdio, the run, the output collected, the result recorded.
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <optional>

#include "comet/base/random.hpp"
#include "comet/base/switches.hpp"
#include "comet/base/sys.hpp"
#include "comet/capability/compile.hpp"
#include "comet/host/log.hpp"
#include "comet/host/user_dirs.hpp"
#include "comet/host/user_ns.hpp"
#include "comet/lifecycle/rootless.hpp"
#include "comet/oci/spec.hpp"
#include "comet/pack/hostroot.hpp"
#include "comet/pack/pack_cache.hpp"
#include "comet/pack/pack_cli.hpp"
#include "comet/reporting/violations.hpp"
#include "pack_parts.hpp"

namespace comet::runtime {
namespace cap = comet::capability;
using namespace pack_detail;

namespace {

// Who the agent runs as: nobody, unless an ordinary user's namespace maps
// only the user's own id (no subordinate range), where the agent runs as
// that id (uid 0 of the namespace, with no capability: the compiled
// process has empty sets and no_new_privileges).
struct Identity {
  uint32_t uid = cap::kNobody;
  uint32_t gid = cap::kNobody;
  // An ordinary user without a cgroup that can hold them: the default
  // memory limit is not enforced, the default pids limit is RLIMIT_NPROC
  // (counted per user in the user namespace). A limit the manifest sets
  // itself is refused instead (rootless_limits()).
  bool drop_memory = false;
  bool pids_as_rlimit = false;
};

// ---- the deterministic-tier cache (pack_cache.hpp, docs/cache.md) ------------

// The compiled policy as the key sees it: every per-run host path replaced
// by a fixed placeholder, so that the run directory's random name is not
// part of the key, but which per-run directories exist is.
Result<oci::Spec> placeholder_spec(const Loaded& l, const PackRunOptions& o, const Identity& who) {
  cap::CompileInputs in;
  in.uid = who.uid;
  in.gid = who.gid;
  in.rootfs = "/comet-cache/rootfs";
  in.pack_dir = "/comet-cache/workdir";
  if (o.args) in.args = *o.args;
  int n = 0;
  for (const std::string& w : l.man.capabilities.fs.write)
    if (w != "/tmp") in.host_dirs[w] = "/comet-cache/w" + std::to_string(n++);
  if (!o.input.empty()) in.host_dirs["/workdir/inputs"] = "/comet-cache/inputs";
  return cap::compile(l.man, in);
}

// hash_tree() with the store's memo of ROOT's per-file digests.
Result<std::string> tree_digest(const cache::Store& store, const std::string& root) {
  std::string abs = abs_path(root);
  cache::Memo memo = store.load_memo(abs);
  cache::Memo before = memo;
  TRY(std::string digest, cache::hash_tree(abs, nullptr, &memo));
  bool same =
      memo.size() == before.size() &&
      std::equal(memo.begin(), memo.end(), before.begin(), [](const auto& a, const auto& b) {
        return a.first == b.first && a.second.sha256 == b.second.sha256 &&
               a.second.ino == b.second.ino && a.second.ctime_ns == b.second.ctime_ns &&
               a.second.mtime_ns == b.second.mtime_ns && a.second.size == b.second.size &&
               a.second.dev == b.second.dev;
      });
  if (!same) store.save_memo(abs, memo);
  return digest;
}

Result<std::string> run_key(const cache::Store& store, const Loaded& l, const PackRunOptions& o,
                            const std::string& rootfs, const oci::Spec& spec) {
  cache::KeyInputs k;
  k.manifest = l.text;
  TRY(k.pack_tree, tree_digest(store, l.dir));
  if (o.rootfs.empty()) {
    // default_rootfs(): the directory's name is its plan key already.
    k.rootfs = "default:" + std::filesystem::path(rootfs).filename().string();
  } else {
    TRY(std::string t, tree_digest(store, rootfs));
    k.rootfs = "tree:" + t;
  }
  if (!o.input.empty()) {
    TRY(k.inputs, tree_digest(store, o.input));
  }
  if (spec.process) {
    k.args = spec.process->args;
    k.env = spec.process->env;
  }
  k.runtime = cache::runtime_identity();
  k.policy = oci::to_json(spec, -1);
  return cache::compose_key(k);
}

// A hit: the out/ tree into --output, the recorded stdout and stderr, the
// recorded exit status. No container, no run directory.
int replay(const cache::Store& store, const cache::Entry& e, const PackRunOptions& o) {
  std::string dir = store.entry_dir(e.key);
  say("cache hit " + e.key);
  if (!o.output.empty() && std::find(e.dirs.begin(), e.dirs.end(), "out") != e.dirs.end()) {
    Status c = collect_output(join_path(dir, "out"), o.output);
    if (!c.ok()) {
      log::error("pack run: restore the cached output: " + c.error().what());
      return 1;
    }
  }
  for (auto [name, fd] : {std::pair{"stdout", STDOUT_FILENO}, std::pair{"stderr", STDERR_FILENO}}) {
    auto text = read_file(join_path(dir, name));
    if (!text.ok()) {
      log::error("pack run: read the cached " + std::string(name) + ": " + text.error().what());
      return 1;
    }
    // a terminal gets the text shown, not obeyed (shown())
    if (!write_fully(fd, ::isatty(fd) == 1 ? shown(text->data(), text->size()) : *text)) break;
  }
  store.touch(e.key);
  return e.exit_status;
}
// The store's temp dir of one miss, removed unless committed.
struct PendingEntry {
  const cache::Store* store = nullptr;
  std::string key, temp;
  ~PendingEntry() {
    if (!temp.empty()) (void)remove_tree(temp);
  }
};

// A failure of the runtime itself: logged, exit 1.
int report(const std::string& msg) {
  log::error(msg);
  return 1;
}
int fail(const Error& e) {
  return report("pack run: " + e.what());
}

// ---- the phases ----------------------------------------------------------------

// --input and --output the pack does not declare (exit 2, or 0).
int check_usage(const Loaded& l, const PackRunOptions& o) {
  const auto& rd = l.man.capabilities.fs.read;
  const auto& wr = l.man.capabilities.fs.write;
  if (!o.input.empty() && std::find(rd.begin(), rd.end(), "/workdir/inputs") == rd.end()) {
    log::error("pack run --input: the pack does not declare fs.read /workdir/inputs");
    return 2;
  }
  if (!o.output.empty() && std::find(wr.begin(), wr.end(), "/workdir/out") == wr.end()) {
    log::error("pack run --output: the pack does not declare fs.write /workdir/out");
    return 2;
  }
  // Named by their flag, before anything is mounted (the mount's own error,
  // `bind mount source ...: ENOENT`, did not say which flag was wrong).
  for (auto [flag, dir] : {std::pair{"--input", &o.input}, std::pair{"--rootfs", &o.rootfs}})
    if (Status st = check_dir_flag("pack run", flag, *dir); !st.ok()) {
      log::error(st.error().what());
      return 2;
    }
  return 0;
}

// Whether the cache is used; the cache asked for on a pack it cannot serve
// is a usage error (exit 2).
OrExit<cache::Decision> decide_cache(const Loaded& l, const PackRunOptions& o) {
  cache::Flags cf;
  cf.no_cache = o.no_cache;
  cf.upstream = o.allow_upstream ? cache::Upstream::allow : cache::Upstream::refuse;
  cf.cache_dir_given = !o.cache_dir.empty();
  cache::Decision decision = cache::decide(l.man, cf);
  if (!decision.error.empty()) {
    log::error(decision.error);
    return 2;
  }
  // Without the reporter a violation goes unseen (no exit 3): such a run
  // could be recorded as clean, so the cache is not used at all.
  if (decision.cache && switches::violation_reporting_off())
    decision = {false, "COMET_VIOLATION_REPORTING=off: violations would go unseen", ""};
  return decision;
}

// The cache lookup: a hit is replayed (its exit status returned); a miss
// gets a temp dir in the store (PENDING) that the run's streams and output
// go to. A store that cannot be used only means no caching.
std::optional<int> look_up(const Globals& g, cache::Store& store, const Loaded& l,
                           const PackRunOptions& o, const Identity& who, const std::string& rootfs,
                           PendingEntry& pending) {
  auto spec = placeholder_spec(l, o, who);
  if (!spec.ok()) return std::nullopt;  // the real compile reports it
  Status prep = store.prepare();
  auto key = prep.ok() ? run_key(store, l, o, rootfs, *spec) : Result<std::string>(prep.error());
  if (!key.ok()) {
    log::warn("pack run: not cached (cache " + store.dir() + "): " + key.error().what());
    return std::nullopt;
  }
  auto hit = store.lookup(*key);
  if (hit.ok() && *hit) {
    if (std::string w = violations::flag_warning(g.root, spec->annotations); !w.empty())
      log::warn(w);
    return replay(store, **hit, o);
  }
  if (!hit.ok()) {
    log::warn("cache: discarded the corrupt entry " + *key + ": " + hit.error().what());
    Status d = store.discard(*key);
    if (!d.ok()) log::warn("cache: " + d.error().what());
  }
  auto temp = store.make_temp(*key);
  if (!temp.ok()) {
    log::warn("pack run: not cached: " + temp.error().what());
    return std::nullopt;
  }
  say("cache miss " + *key);
  pending.store = &store;
  pending.key = *key;
  pending.temp = *temp;
  return std::nullopt;
}

// One run's directory under <root>/packs and what is mounted in it; the
// mounts go first, then the directory (member order).
struct Run {
  std::string id;
  RunDir dir;
  RunMounts mounts;
  std::string out_dir;  // the /workdir/out tmpfs, "" when the pack has none
  std::string bundle;
};

// <root>/packs/<id>, 0700; an existing one is an error (another run's id).
Status make_run_dir(const Globals& g, Run& run) {
  TRYV(mkdir_p(join_path(g.root, "packs"), 0700));
  std::string base = join_path(join_path(g.root, "packs"), run.id);
  if (::mkdir(base.c_str(), 0700) < 0) return Error::sys(errno, "create the run directory " + base);
  run.dir.path = base;
  return {};
}

// Nothing the pack sees is a bind of a host directory (RunMounts): the
// rootfs, the pack's files and --input are overlay views, every fs.write
// place a tmpfs of the pack's size. Returns the compiler's inputs.
Result<cap::CompileInputs> mount_views(const Loaded& l, const PackRunOptions& o,
                                       const Identity& who, const std::string& rootfs, Run& run) {
  const std::string& base = run.dir.path;
  const cap::Resources& lim = l.man.resources;
  cap::CompileInputs in;
  in.uid = who.uid;
  in.gid = who.gid;
  in.rootfs = join_path(base, "rootfs");
  TRYV(run.mounts.view(in.rootfs, abs_path(rootfs), join_path(base, "rootfs-rw"), true));
  in.pack_dir = join_path(base, "workdir");
  if (o.args) in.args = *o.args;
  // Every fs.write entry is fed from a fresh per-run tmpfs the agent's user
  // owns (/workdir/out: the output limit; the others: tmp); /workdir/inputs
  // from --input (read-only) when given.
  int n = 0;
  for (const std::string& w : l.man.capabilities.fs.write) {
    if (w == "/tmp") continue;
    std::string d = join_path(base, "w" + std::to_string(n++));
    TRYV(run.mounts.tmpfs(d, static_cast<std::uint64_t>(w == "/workdir/out" ? lim.output : lim.tmp),
                          in.uid, in.gid));
    in.host_dirs[w] = d;
    if (w == "/workdir/out") run.out_dir = d;
  }
  if (!o.input.empty()) {
    std::string v = join_path(base, "inputs");
    TRYV(run.mounts.view(v, abs_path(o.input), join_path(base, "empty"), false));
    in.host_dirs["/workdir/inputs"] = v;
  }
  return in;
}

// The run directory, its mounts, the staged /workdir and the bundle's
// config.json.
Status prepare_run(const Globals& g, const Loaded& l, const PackRunOptions& o, const Identity& who,
                   const std::string& rootfs, Run& run) {
  TRYV(make_run_dir(g, run));
  TRY(cap::CompileInputs in, mount_views(l, o, who, rootfs, run));
  TRY(oci::Spec spec, cap::compile(l.man, in));
  if (who.uid == 0 && rootless()) {
    // Only the user's own id is mapped: no uid=/gid= mount option may name
    // another (devpts's gid=5), as `spec --rootless` writes them.
    for (oci::Mount& m : spec.mounts)
      std::erase_if(m.options, [](const std::string& x) {
        return x.starts_with("uid=") || x.starts_with("gid=");
      });
  }
  if (spec.linux_ && spec.linux_->resources && spec.process) {
    oci::Resources& res = *spec.linux_->resources;
    if (who.drop_memory) res.memory.reset();
    if (who.pids_as_rlimit && res.pids) {
      const auto n = static_cast<uint64_t>(res.pids->limit);
      spec.process->rlimits.push_back(oci::Rlimit{"RLIMIT_NPROC", n, n});
      res.pids.reset();
    }
  }
  run.bundle = join_path(run.dir.path, "bundle");
  TRYV(mkdir_p(run.bundle, 0700));
  const std::string staged = join_path(run.dir.path, "workdir-src");
  TRYV(stage_workdir(l.dir, staged, in.host_dirs));
  TRYV(run.mounts.view(in.pack_dir, staged, join_path(run.dir.path, "empty"), false));
  return write_file_atomic(join_path(run.bundle, "config.json"), oci::to_json(spec, 2) + "\n", 0600,
                           Sync::none);
}

// A miss: stdout and stderr teed into the entry's temp dir (a capture that
// cannot start only means no caching). Always: the caller's stdio is never
// the agent's (issue 21, red teams): the agent gets /dev/null as stdin and
// pipes for its output, which the tee passes on (to a terminal with control
// characters made visible). So it cannot read what the user types, change a
// terminal's modes, send it escape sequences, or reopen /proc/self/fd/1 to
// read the caller's log file and learn its host path.
Status guard_stdio(const Globals& g, StdioCapture& capture, PendingEntry& pending) {
  if (!pending.temp.empty()) {
    Status c = capture.start(pending.temp, g);
    if (!c.ok()) {
      (void)capture.finish();
      log::warn("pack run: not cached: " + c.error().what());
      (void)remove_tree(pending.temp);
      pending.temp.clear();
    }
  }
  if (!capture.active()) {
    Status c = capture.start("", g);
    if (!c.ok()) {
      (void)capture.finish();
      return Error(c.error().err(), "guard the terminal: " + c.error().message());
    }
  }
  return {};
}

// The output limit reached: a resource violation, reported as one (event,
// flag, log line).
void report_output_limit(const Globals& g, const Loaded& l, const Run& run, bool full,
                         bool collected) {
  const cap::Resources& lim = l.man.resources;
  violations::Event e;
  e.container = run.id;
  e.pack = violations::PackId{l.man.name, l.man.version};
  e.surface = "resource";
  e.requested =
      "/workdir/out over its limit (resources.output " + std::to_string(lim.output) + " bytes)";
  e.syscall = "write";
  e.pid = 1;
  e.err = ENOSPC;
  violations::deliver_line(violations::delivery(), violations::to_json_line(e));
  (void)violations::record_flag(g.root, *e.pack, 1, rfc3339_now(true), rfc3339_now(true));
  log::error("pack run: /workdir/out reached its limit of " + std::to_string(lim.output) +
             " bytes (resources.output)" +
             (full ? "; the agent's writes past it failed with ENOSPC" : "") +
             (collected ? "" : "; --output holds what fitted"));
}

// /workdir/out into --output. The output limit reached: its tmpfs is full
// (the agent's last writes failed: ENOSPC), or collecting it would pass the
// limit. A resource violation, reported, exit 3. Returns the run's result.
Result<int> collect_run_output(const Globals& g, const Loaded& l, const PackRunOptions& o,
                               const Run& run, int status) {
  const cap::Resources& lim = l.man.resources;
  int result = status;
  Status collected;
  if (!o.output.empty())
    collected = collect_output(run.out_dir, o.output, static_cast<std::uint64_t>(lim.output));
  if (!run.out_dir.empty()) {
    struct statvfs sv;
    const bool full = ::statvfs(run.out_dir.c_str(), &sv) == 0 &&
                      (static_cast<std::uint64_t>(sv.f_bavail) * sv.f_frsize < 64 * 1024 ||
                       (sv.f_files > 0 && sv.f_favail == 0));
    if (full || (!collected.ok() && collected.error().err() == EFBIG)) {
      report_output_limit(g, l, run, full, collected.ok());
      result = violations::kViolationExit;
    }
  }
  if (!collected.ok() && collected.error().err() != EFBIG) return collected.error();
  return result;
}

// Why a run is not recorded, "" when it is: only a run whose result is the
// pack's: no violation (exit 3), not killed by a signal (a ^C or the OOM
// killer is not a result), the whole of both streams, an out/ tree that
// replays exactly and fits resources.cache_entry (copied into the entry).
std::string not_recorded(const Loaded& l, const PendingEntry& pending, const Run& run, int status,
                         bool captured) {
  const cap::Resources& lim = l.man.resources;
  if (status == violations::kViolationExit)
    return "exit 3 (a capability violation, or the agent's own 3)";
  if (status >= 128)
    return "the agent was killed by a signal (exit " + std::to_string(status) + ")";
  if (!captured)
    return "stdout or stderr was not captured whole (over " +
           cache::format_size(cache::kMaxStreamBytes) + "?)";
  if (run.out_dir.empty()) return "";
  if (!plain_tree(run.out_dir))
    return "/workdir/out holds something other than files and directories";
  // resources.cache_entry: what one entry may hold (its output here; the
  // streams are capped on their own)
  Status c = collect_output(run.out_dir, join_path(pending.temp, "out"),
                            static_cast<std::uint64_t>(lim.cache_entry));
  if (!c.ok())
    return "the output is over resources.cache_entry (" + std::to_string(lim.cache_entry) +
           " bytes)";
  return "";
}

// A miss's entry committed to the store, or why not; returns STATUS.
int record(cache::Store& store, PendingEntry& pending, const Loaded& l, const PackRunOptions& o,
           const Run& run, int status, bool captured) {
  if (std::string why = not_recorded(l, pending, run, status, captured); !why.empty()) {
    say("cache not stored " + pending.key + ": " + why);
    return status;
  }
  cache::Entry e;
  e.key = pending.key;
  e.pack = l.man.name + "@" + l.man.version;
  e.created = rfc3339_now();
  e.exit_status = status;
  e.allow_upstream = o.allow_upstream;
  auto committed = store.commit(pending.temp, e);
  pending.temp.clear();  // committed, or removed by commit()
  if (!committed.ok())
    say("cache not stored " + pending.key + ": " + committed.error().what());
  else if (*committed)
    say("cache stored " + pending.key);
  else
    say("cache stored " + pending.key + " (by a concurrent run first)");
  return status;
}

// An ordinary user: this process moves into a user and mount namespace of
// its own (user_ns.hpp) before anything is built or mounted, so the run's
// views, the container's network namespace, its nft table and the network
// helper are all the user's. user_dirs() is fixed first (it depends on the
// ids seen). Exit 125 when the namespace cannot be had.
OrExit<Identity> enter_user_namespace_if_rootless() {
  Identity who;
  if (!rootless()) return who;
  if (!in_user_namespace()) {
    (void)user_dirs();
    auto e = enter_user_namespace();
    if (!e.ok()) {
      log::error("pack run: rootless: " + e.error().what());
      return kExitRefused;
    }
    if (!e->subordinate)
      log::debug("pack run: rootless without subordinate ids (" + e->why_not +
                 "): the agent runs as this user's own id");
    Status st = reexec_in_user_namespace();
    log::error("pack run: rootless: " + st.error().what());
    return kExitRefused;
  }
  // In a user namespace (ours after the re-exec, or an engine's): nobody
  // unless only one id is mapped.
  if (own_ids_only()) who.uid = who.gid = 0;
  return who;
}

// As an ordinary user, the limits the cgroup create will have (a delegated
// one, or none) cannot hold: a default one is dropped or made an rlimit
// (Identity), one the manifest sets is an error naming it: returns 125,
// else 0.
int rootless_limits(const Loaded& l, const std::string& id, Identity& who) {
  if (!rootless()) return 0;
  RootlessCgroup rc = plan_rootless_cgroups("", id);
  struct Limit {
    const char* field;
    oci::Resources res;
    bool* fallback;
  };
  oci::Resources mem, pids;
  mem.memory = oci::Memory{};
  mem.memory->limit = l.man.resources.memory;
  pids.pids = oci::Pids{l.man.resources.pids};
  for (Limit x : {Limit{"resources.memory", mem, &who.drop_memory},
                  Limit{"resources.pids", pids, &who.pids_as_rlimit}}) {
    Status st = check_rootless_limits(rc.plan, rc.note, &x.res);
    if (st.ok()) continue;
    if (l.man.locations.count(x.field)) {
      log::error("pack run: " + std::string(x.field) + " is set in " + l.file +
                 ", and as this user it cannot be enforced: " + st.error().what());
      return kExitRefused;
    }
    *x.fallback = true;
  }
  if (who.drop_memory)
    log::debug("pack run: rootless without a cgroup for memory (" + rc.note +
               "): the default resources.memory is not enforced");
  return 0;
}

}  // namespace

int pack_run(const Globals& g, const PackRunOptions& o_in) {
  PackRunOptions o = o_in;
  // Absolute now: the output is collected after the run, wherever this
  // process's working directory is by then.
  if (!o.output.empty()) o.output = abs_path(o.output);
  TRY_EXIT(Loaded l, load(o.pack, /*validate=*/true, 2, 1));
  // Usage first: nothing is built, looked up or run for a refused command.
  if (int rc = check_usage(l, o); rc != 0) return rc;
  TRY_EXIT(cache::Decision decision, decide_cache(l, o));
  TRY_EXIT(Identity who, enter_user_namespace_if_rootless());
  TRY_EXIT(std::string rootfs, pack_rootfs(l, o.rootfs, "pack run"));

  // The cache: look up; on a hit, replay and stop here.
  cache::Store store(cache::store_dir(o.cache_dir));
  PendingEntry pending;
  if (decision.cache) {
    if (auto replayed = look_up(g, store, l, o, who, rootfs, pending)) return *replayed;
  } else {
    log::debug("pack run: not cached: " + decision.why);
  }

  Run run;
  run.id = o.id.empty() ? "pack-" + random_hex(6) : o.id;
  if (int rc = rootless_limits(l, run.id, who); rc != 0) return rc;
  if (Status st = prepare_run(g, l, o, who, rootfs, run); !st.ok()) return fail(st.error());
  StdioCapture capture;
  if (Status st = guard_stdio(g, capture, pending); !st.ok()) return fail(st.error());
  CreateOptions co;
  co.id = run.id;
  co.bundle = run.bundle;
  co.net_helper = true;  // a bundle this runtime made: connectivity for its egress list
  auto status = run_container(g, co, /*detach=*/false);
  bool captured = capture.finish();
  if (!status.ok()) {
    // a layer this user cannot have (rootless.hpp): exit 125, as `run`
    if (is_refusal(status.error())) {
      log::error(status.error().what());
      return kExitRefused;
    }
    return report(status.error().what());
  }
  auto result = collect_run_output(g, l, o, run, *status);
  if (!result.ok()) return fail(result.error());
  if (pending.temp.empty()) return *result;
  if (*result != *status) {
    say("cache not stored " + pending.key + ": /workdir/out reached its limit");
    return *result;
  }
  return record(store, pending, l, o, run, *status, captured);
}

}  // namespace comet::runtime
