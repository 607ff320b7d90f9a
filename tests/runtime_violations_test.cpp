// violations.hpp (envelope, classification, counting, flags) and the
// notifying lock-down (seccomp::LockdownOptions::notify): pure, no root.
#include <gtest/gtest.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "comet/capability/profile.hpp"
#include "comet/reporting/violations.hpp"
#include "comet/seccomp/bpf_eval.hpp"
#include "comet/seccomp/seccomp.hpp"

namespace v = comet::runtime::violations;
namespace sc = comet::seccomp;

namespace {

v::Classified classify(int nr, std::array<std::uint64_t, 6> a = {}) {
  return v::classify(nr, a.data());
}

sc::Program compile(const sc::LockdownOptions& o) {
  sc::CompileOptions co;
  co.enosys_stub = false;
  auto p = sc::compile(sc::lockdown_profile(o), co);
  EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().what());
  return p.ok() ? *p : sc::Program{};
}

}  // namespace

TEST(Violations, PackOfTheAnnotation) {
  auto p = v::pack_of({{"org.soyaos.comet.pack", "weather-agent@1.4.2"}});
  ASSERT_TRUE(p);
  EXPECT_EQ(p->name, "weather-agent");
  EXPECT_EQ(p->version, "1.4.2");
  EXPECT_FALSE(v::pack_of({{"org.soyaos.comet.pack", "noversion"}}));
  EXPECT_FALSE(v::pack_of({{"org.soyaos.comet.pack", "x@"}}));
  EXPECT_FALSE(v::pack_of({}));
}

TEST(Violations, EnvelopeHasEveryField) {
  v::Event e;
  e.container = "c1";
  e.pack = v::PackId{"p", "1.0"};
  e.surface = "namespace";
  e.requested = "unshare(CLONE_NEWUSER)";
  e.syscall = "unshare";
  e.pid = 42;
  e.err = EPERM;
  auto j = nlohmann::json::parse(v::to_json_line(e));
  EXPECT_EQ(j["type"], "capability_violation");
  EXPECT_EQ(j["container"], "c1");
  EXPECT_EQ(j["pack"]["name"], "p");
  EXPECT_EQ(j["pack"]["version"], "1.0");
  EXPECT_TRUE(j["matched_entry"].is_null());
  EXPECT_EQ(j["errno"], "EPERM");
  EXPECT_EQ(j["pid"], 42);
  EXPECT_EQ(j["time"].get<std::string>().size(), 30u);  // 2026-12-02T04:36:09.189269154Z
  EXPECT_EQ(j["id"].get<std::string>().size(), 36u);
  EXPECT_FALSE(j.contains("repeated"));
  EXPECT_NE(j["id"], nlohmann::json::parse(v::to_json_line(e))["id"]);  // unique
  e.repeated = 7;
  e.pack.reset();
  j = nlohmann::json::parse(v::to_json_line(e));
  EXPECT_EQ(j["repeated"], 7);
  EXPECT_TRUE(j["pack"].is_null());
}

TEST(Violations, TerminalInjectionIsTheTerminalSurface) {
  auto c = classify(SYS_ioctl, {0, 0x5412});
  EXPECT_EQ(c.surface, "terminal");
  EXPECT_EQ(c.requested, "ioctl(TIOCSTI)");
  EXPECT_EQ(c.syscall, "ioctl");
  EXPECT_EQ(classify(SYS_ioctl, {3, (1ULL << 32) | 0x541C}).requested, "ioctl(TIOCLINUX)");
}

TEST(Violations, Classify) {
  EXPECT_EQ(classify(SYS_fork).surface, "process");
  auto c = classify(SYS_clone, {SIGCHLD});
  EXPECT_EQ(c.surface, "process");
  EXPECT_EQ(c.requested, "clone");
  c = classify(SYS_clone, {CLONE_NEWUSER | CLONE_NEWNET | SIGCHLD});
  EXPECT_EQ(c.surface, "namespace");
  EXPECT_EQ(c.requested, "clone(CLONE_NEWUSER|CLONE_NEWNET)");
  c = classify(SYS_unshare, {CLONE_NEWNS});
  EXPECT_EQ(c.requested, "unshare(CLONE_NEWNS)");
  EXPECT_EQ(c.syscall, "unshare");
  c = classify(SYS_clock_settime, {0});
  EXPECT_EQ(c.surface, "clock");
  EXPECT_EQ(c.requested, "clock_settime(clock 0)");
  c = classify(SYS_socket, {17, 3});
  EXPECT_EQ(c.surface, "egress");
  EXPECT_EQ(c.requested, "socket(family 17, type 3)");
  EXPECT_EQ(classify(SYS_bpf).surface, "namespace");
  EXPECT_EQ(classify(SYS_memfd_create).surface, "process");
  c = classify(SYS_mknodat, {0, 0, S_IFCHR | 0666, 0x103});
  EXPECT_EQ(c.surface, "device");
  EXPECT_EQ(c.requested, "char 1:3");
  c = classify(SYS_mknod,
               {0, S_IFBLK | 0600, (259u << 8) | (300u & 0xff) | ((300u & ~0xffu) << 12)});
  EXPECT_EQ(c.requested, "block 259:300") << "new_encode_dev: the minor's high bits at 20+";
}

TEST(Violations, RuntimeSockets) {
  for (const char* p : {"/run/docker.sock", "/var/run/docker.sock", "docker.sock",
                        "/run/containerd/containerd.sock", "/run/containerd/s/abc",
                        "/var/run/containerd/containerd.sock.ttrpc", "/run/podman/podman.sock",
                        "/run/user/1000/podman/podman.sock", "/var/run/crio/crio.sock",
                        "/run/buildkit/buildkitd.sock", "/home/ada/.docker/run/docker.sock"})
    EXPECT_TRUE(comet::capability::is_runtime_socket(p)) << p;
  for (const char* p : {"", "/tmp/app.sock", "/run/dbus/system_bus_socket", "/run/docker.sockx",
                        "/workdir/out/docker.sock.bak", "/run/dockerd", "/srv/containerd"})
    EXPECT_FALSE(comet::capability::is_runtime_socket(p)) << p;
  std::array<std::uint64_t, 6> a = {};
  EXPECT_EQ(v::classify(SYS_connect, a.data()).surface, "runtime-socket");
}

TEST(Violations, CountIncludesRepeatsAndSkipsGarbage) {
  std::string first, last;
  std::string text =
      "{\"type\":\"capability_violation\",\"time\":\"2026-01-01T00:00:02.000000000Z\"}\n"
      "not json\n"
      "{\"type\":\"capability_violation\",\"time\":\"2026-01-01T00:00:01.000000000Z\","
      "\"repeated\":999}\n"
      "{\"type\":\"events_truncated\",\"dropped\":5}\n";
  EXPECT_EQ(v::count_violations(text, &first, &last), 1000);
  EXPECT_EQ(first, "2026-01-01T00:00:01.000000000Z");
  EXPECT_EQ(last, "2026-01-01T00:00:02.000000000Z");
  EXPECT_EQ(v::count_violations(""), 0);
}

TEST(Violations, FlagsRegistry) {
  auto dir = std::filesystem::temp_directory_path() / ("cmtflags" + std::to_string(::getpid()));
  ::setenv("COMET_FLAGS_DIR", dir.c_str(), 1);
  std::map<std::string, std::string> ann = {{"org.soyaos.comet.pack", "p@1"}};
  EXPECT_EQ(v::flag_warning("", ann), "");
  ASSERT_TRUE(v::record_flag("", {"p", "1"}, 2, "T1", "T2").ok());
  ASSERT_TRUE(v::record_flag("", {"p", "1"}, 3, "T3", "T4").ok());
  auto flags = v::list_flags("");
  ASSERT_EQ(flags.size(), 1u);
  EXPECT_EQ(flags[0].pack, "p@1");
  EXPECT_EQ(flags[0].count, 5);
  EXPECT_EQ(flags[0].first, "T1");
  EXPECT_EQ(flags[0].last, "T4");
  EXPECT_NE(v::flag_warning("", ann).find("pack p@1 is flagged: 5"), std::string::npos);
  EXPECT_EQ(v::flag_warning("", {{"org.soyaos.comet.pack", "p@2"}}), "");  // a new version is clean
  EXPECT_FALSE(v::clear_flag("", "../etc@x").ok());
  ASSERT_TRUE(v::clear_flag("", "p@1").ok());
  EXPECT_EQ(v::flag_warning("", ann), "");
  EXPECT_FALSE(v::clear_flag("", "p@1").ok());
  std::filesystem::remove_all(dir);
  ::unsetenv("COMET_FLAGS_DIR");
}

// Issue 26: one --root's flags are not another's; the default root's are
// the user's own (COMET_FLAGS_DIR unset).
TEST(Violations, FlagsAreScopedWithTheStateRoot) {
  ::unsetenv("COMET_FLAGS_DIR");
  auto base = std::filesystem::temp_directory_path() / ("cmtroots" + std::to_string(::getpid()));
  const std::string a = (base / "a").string(), b = (base / "b").string();
  EXPECT_EQ(v::flags_dir(a), a + "/.flags@");
  EXPECT_NE(v::flags_dir(a), v::flags_dir(b));
  ASSERT_TRUE(v::record_flag(a, {"p", "1"}, 1, "T1", "T1").ok());
  EXPECT_EQ(v::list_flags(a).size(), 1u);
  EXPECT_TRUE(v::list_flags(b).empty());
  EXPECT_EQ(v::flag_warning(b, {{"org.soyaos.comet.pack", "p@1"}}), "");
  std::filesystem::remove_all(base);
}

// Issue 26: the end of a run with violations says what and where.
TEST(Violations, SummaryNamesEachSurfaceItsCountAndFirstRequest) {
  const std::string text =
      "{\"type\":\"capability_violation\",\"surface\":\"exec\",\"requested\":\"/bin/ls\"}\n"
      "{\"type\":\"capability_violation\",\"surface\":\"fs.write\",\"requested\":\"/etc/x\"}\n"
      "{\"type\":\"capability_violation\",\"surface\":\"exec\",\"requested\":\"/bin/cat\","
      "\"repeated\":2}\n"
      "{\"type\":\"events_truncated\",\"dropped\":5}\n";
  EXPECT_EQ(v::violation_summary(text, "/r/.events@/x.jsonl"),
            "comet: 4 capability violations: exec \u00d73 (/bin/ls), fs.write \u00d71 (/etc/x); "
            "events: /r/.events@/x.jsonl");
  EXPECT_EQ(v::violation_summary("{\"type\":\"events_truncated\"}\n", "F"), "");
}

// One reading for every count: the pack's summary line, the flags' count
// and the sandbox's lines (they drifted: the sandbox counted a repeat line
// as one more than it stands for, the pack's summary and the flags left
// out what the events cap dropped).
TEST(Violations, OneTallyCountsRepeatsOnceAndWhatTheCapDropped) {
  const std::string text =
      "{\"type\":\"capability_violation\",\"surface\":\"proc\",\"requested\":\"fork\","
      "\"syscall\":\"clone\",\"time\":\"2026-12-07T01:00:00Z\"}\n"
      "{\"type\":\"capability_violation\",\"surface\":\"proc\",\"requested\":\"fork\","
      "\"syscall\":\"clone\",\"repeated\":999,\"time\":\"2026-12-07T01:00:02Z\"}\n"
      "{\"type\":\"capability_violation\",\"surface\":\"fs.write\",\"requested\":\"/usr/x\","
      "\"time\":\"2026-12-07T01:00:01Z\"}\n"
      "{\"type\":\"events_truncated\",\"dropped\":7,\"dropped_by_surface\":{\"fs.write\":7}}\n";
  const v::ViolationTally t = v::tally_violations(text);
  ASSERT_EQ(t.surfaces.size(), 2u);
  EXPECT_EQ(t.surfaces[0].surface, "proc");
  EXPECT_EQ(t.surfaces[0].all(), 1000);  // 1000 denied forks: the first line and 999 more
  EXPECT_EQ(t.surfaces[0].first_syscall, "clone");
  EXPECT_EQ(t.surfaces[1].recorded, 1);
  EXPECT_EQ(t.surfaces[1].dropped, 7);
  EXPECT_EQ(t.total(), 1008);
  EXPECT_EQ(t.first_time, "2026-12-07T01:00:00Z");
  EXPECT_EQ(t.last_time, "2026-12-07T01:00:02Z");
  EXPECT_EQ(v::count_violations(text), 1008);
  EXPECT_EQ(v::violation_summary(text, ""),
            "comet: 1008 capability violations: proc \u00d71000 (fork), fs.write \u00d78 (/usr/x) "
            "(7 past the events cap)");
}

TEST(Violations, KeptEventsAreBoundedOldestFirst) {
  auto root = std::filesystem::temp_directory_path() / ("cmtkeep" + std::to_string(::getpid()));
  auto state = root / "c";
  std::filesystem::create_directories(state);
  { std::ofstream(state / "events.jsonl") << "{\"type\":\"capability_violation\"}\n"; }
  for (int i = 0; i < v::kKeptRuns + 3; i++) {
    std::string id = "run" + std::to_string(i);
    EXPECT_EQ(v::keep_events(root.string(), id, state.string()),
              v::kept_events_file(root.string(), id));
    auto t = std::filesystem::file_time_type::clock::now() - std::chrono::hours(100 - i);
    std::filesystem::last_write_time(v::kept_events_file(root.string(), id), t);
  }
  size_t n = 0;
  for (auto& e : std::filesystem::directory_iterator(root / v::kKeptEventsDir)) n += e.exists();
  EXPECT_EQ(n, static_cast<size_t>(v::kKeptRuns));
  EXPECT_FALSE(std::filesystem::exists(v::kept_events_file(root.string(), "run0")));
  EXPECT_TRUE(std::filesystem::exists(
      v::kept_events_file(root.string(), "run" + std::to_string(v::kKeptRuns + 2))));
  std::filesystem::remove(state / "events.jsonl");  // nothing to keep: nothing kept
  EXPECT_EQ(v::keep_events(root.string(), "empty", state.string()), "");
  std::filesystem::remove_all(root);
}

TEST(Violations, RateLimitedWritesTheFirstAtOnceAndCountsRepeats) {
  auto dir = std::filesystem::temp_directory_path() / ("cmtrl" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto lines = [&] {
    std::vector<nlohmann::json> out;
    std::ifstream in(dir / v::kEventsFile);
    for (std::string l; std::getline(in, l);) out.push_back(nlohmann::json::parse(l));
    return out;
  };
  v::RateLimited rl(dir.string());
  v::Event e;
  e.container = "c";
  e.surface = "dns";
  e.requested = "other.test";
  e.syscall = "udp";
  e.pid = 42;
  e.err_name = "REFUSED";
  rl.report(e);
  ASSERT_EQ(lines().size(), 1u);  // at once
  EXPECT_EQ(lines()[0]["errno"], "REFUSED");
  EXPECT_FALSE(lines()[0].contains("repeated"));
  for (int i = 0; i < 9; i++) rl.report(e);
  v::Event other = e;
  other.requested = "evil.test";
  rl.report(other);  // a new key: at once
  auto mid = lines();
  ASSERT_EQ(mid.size(), 2u);
  EXPECT_EQ(mid[1]["requested"], "evil.test");
  rl.flush();
  auto all = lines();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[2]["requested"], "other.test");
  EXPECT_EQ(all[2]["repeated"], 9);
  rl.flush();  // nothing pending: nothing written
  EXPECT_EQ(lines().size(), 3u);
  EXPECT_EQ(v::count_violations([&] {
              std::ifstream in(dir / v::kEventsFile);
              return std::string(std::istreambuf_iterator<char>(in), {});
            }()),
            11);
  std::filesystem::remove_all(dir);
}

// The notifying lock-down notifies exactly where the ERRNO one refuses, and
// the ERRNO one gives the errno the reporter answers with.
TEST(ViolationsLockdown, NotifyWhereErrnoRefuses) {
  sc::LockdownOptions o;
  o.exec_lock = true;
  o.network_none = true;
  sc::Program err = compile(o);
  o.notify = true;
  sc::Program note = compile(o);
  EXPECT_FALSE(err.needs_listener);
  EXPECT_TRUE(note.needs_listener);
  struct Case {
    int nr;
    std::array<uint64_t, 6> args;
  } cases[] = {{SYS_unshare, {CLONE_NEWUSER}},
               {SYS_mount, {}},
               {SYS_clock_settime, {0}},
               {SYS_clone, {SIGCHLD}},
               {SYS_clone, {CLONE_THREAD | CLONE_VM | CLONE_SIGHAND}},
               {SYS_socket, {2, 1}},
               {SYS_socket, {1, 1}},
               {SYS_getpid, {}},
               {SYS_clone3, {}}};
  for (auto& c : cases) {
    auto d = sc::make_seccomp_data(c.nr, c.args);
    uint32_t e = sc::evaluate(err.filter, d) & SECCOMP_RET_ACTION_FULL;
    uint32_t n = sc::evaluate(note.filter, d) & SECCOMP_RET_ACTION_FULL;
    if (c.nr == SYS_clone3) {
      EXPECT_EQ(n, SECCOMP_RET_ERRNO) << "clone3 stays ENOSYS, unreported";
    } else if (e == SECCOMP_RET_ERRNO) {
      EXPECT_EQ(n, SECCOMP_RET_USER_NOTIF) << c.nr;
    } else {
      EXPECT_EQ(n, SECCOMP_RET_ALLOW) << c.nr;
    }
  }
  // exec lock: execve notifies (reporting only), the ERRNO program allows it
  auto ex = sc::make_seccomp_data(SYS_execve);
  EXPECT_EQ(sc::evaluate(note.filter, ex) & SECCOMP_RET_ACTION_FULL, SECCOMP_RET_USER_NOTIF);
  EXPECT_EQ(sc::evaluate(err.filter, ex) & SECCOMP_RET_ACTION_FULL, SECCOMP_RET_ALLOW);
}

TEST(ViolationsLockdown, ReportableListExcludesClone3) {
  sc::LockdownOptions o;
  o.exec_lock = true;
  auto names = sc::lockdown_reportable(o);
  auto has = [&](const char* n) { return std::find(names.begin(), names.end(), n) != names.end(); };
  EXPECT_TRUE(has("unshare"));
  EXPECT_TRUE(has("fork"));
  EXPECT_TRUE(has("clock_settime"));
  EXPECT_FALSE(has("clone3"));
  EXPECT_FALSE(has("execve"));
}

// Issue 21, item 10: a flood of one surface cannot push another's first
// events out of the record; what is dropped is counted per surface.
TEST(Violations, EventBudgetKeepsEverySurfacesFirstEvents) {
  v::EventBudget b;
  std::uint64_t size = 0;
  long written = 0;
  for (int i = 0; i < 20000; i++) {
    if (b.admit("namespace", true, size, 400)) {
      size += 400;
      written++;
    }
  }
  // free up to 1 MiB, then first-of-key lines up to the hard cap
  EXPECT_LE(size, v::kMaxEventsBytesHard);
  EXPECT_GT(size, v::kMaxEventsBytesHard - 400);
  EXPECT_EQ(b.dropped(), 20000 - written);
  // repeats past the soft cap: dropped
  EXPECT_FALSE(b.admit("namespace", false, size, 400));
  // another surface: its first v::kKeepPerSurface events are written, past any cap
  for (long i = 0; i < v::kKeepPerSurface; i++)
    EXPECT_TRUE(b.admit("exec", true, size + 10000000, 400));
  EXPECT_FALSE(b.admit("exec", true, size + 10000000, 400));
  EXPECT_EQ(b.dropped_by_surface().at("namespace"), 20000 - written + 1);
  EXPECT_EQ(b.dropped_by_surface().at("exec"), 1);
  auto j = nlohmann::json::parse(b.truncated_line("T", "c"));
  EXPECT_EQ(j["type"], "events_truncated");
  EXPECT_EQ(j["dropped"], b.dropped());
  EXPECT_EQ(j["dropped_by_surface"]["exec"], 1);
  // under the soft cap everything goes in, repeats too
  v::EventBudget fresh;
  EXPECT_TRUE(fresh.admit("fs.read", false, 0, 100));
  EXPECT_EQ(fresh.dropped(), 0);
}
