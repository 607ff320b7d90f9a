// The git rule's look at what the command left in git's own data (red team
// round 20): the object store and the index stay writable (`git add`,
// `git commit`), so a command can stage or commit a protected name it
// could never make in the work tree (`git update-index --add --cacheinfo
// ...,lefthook.yml`, then `git commit`), and the host's `git restore .`,
// `git stash` or `git reset --hard` then writes it. When the run moved
// HEAD or changed the index, the host's git is asked which protected paths
// the new commits or the index change, against HEAD as it was; the index
// that changes one is moved aside (as check_git_index does), and a HEAD
// whose new commits change one is put back, the commits kept under
// refs/comet-refused/. See docs/sandbox.md, "Nested repositories".
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

#include "comet/base/random.hpp"
#include "comet/base/sys.hpp"
#include "comet/host/log.hpp"
#include "comet/reporting/violations.hpp"
#include "sandbox_parts.hpp"

namespace comet::runtime::sandbox_parts {

namespace {

bool all_hex(const std::string& s) {
  if (s.size() != 40 && s.size() != 64) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

std::string first_line(const std::string& t) {
  std::string l = t.substr(0, t.find('\n'));
  while (!l.empty() && (l.back() == '\r' || l.back() == ' ')) l.pop_back();
  return l;
}

// The host's git, from where a package puts it (not from PATH).
std::string git_binary() {
  for (const char* g : {"/usr/bin/git", "/usr/local/bin/git", "/bin/git"})
    if (::access(g, X_OK) == 0) return g;
  return {};
}

struct GitRun {
  bool ran = false;  // git exists and exited 0
  bool cut = false;  // more output than kept
  std::string out;
};

// git ARGS in TOP as the caller (UID, GID), INPUT on its stdin, with no
// system or global config, no hooks, no fsmonitor, no pager, no optional
// locks and no replace objects.
GitRun run_git(const std::string& top, uid_t uid, gid_t gid, std::vector<std::string> args,
               const std::string& input = {}) {
  GitRun r;
  const std::string git = git_binary();
  if (git.empty()) return r;
  std::vector<std::string> full = {git,          "--no-replace-objects",
                                   "-c",         "safe.directory=*",
                                   "-c",         "core.fsmonitor=false",
                                   "-c",         "core.hooksPath=/dev/null",
                                   "--no-pager", "-C",
                                   top};
  full.insert(full.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : full) argv.push_back(a.data());
  argv.push_back(nullptr);
  const char* envp[] = {"PATH=/usr/local/bin:/usr/bin:/bin",
                        "HOME=/nonexistent",
                        "GIT_CONFIG_NOSYSTEM=1",
                        "GIT_CONFIG_GLOBAL=/dev/null",
                        "GIT_OPTIONAL_LOCKS=0",
                        "GIT_TERMINAL_PROMPT=0",
                        "GIT_NO_REPLACE_OBJECTS=1",
                        "LC_ALL=C",
                        nullptr};
  int out[2], in[2];
  if (::pipe2(out, O_CLOEXEC) < 0) return r;
  if (::pipe2(in, O_CLOEXEC) < 0) {
    ::close(out[0]);
    ::close(out[1]);
    return r;
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    for (int fd : {out[0], out[1], in[0], in[1]}) ::close(fd);
    return r;
  }
  if (pid == 0) {
    const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null < 0 || ::dup2(in[0], 0) < 0 || ::dup2(out[1], 1) < 0 || ::dup2(null, 2) < 0)
      _exit(127);
    if (::geteuid() == 0 && uid != 0 &&
        (::setgroups(0, nullptr) < 0 || ::setresgid(gid, gid, gid) < 0 ||
         ::setresuid(uid, uid, uid) < 0))
      _exit(127);
    ::execve(argv[0], argv.data(), const_cast<char* const*>(envp));
    _exit(127);
  }
  ::close(out[1]);
  ::close(in[0]);
  int wfd = in[1];
  if (input.empty()) {
    ::close(wfd);
    wfd = -1;
  } else {
    ::fcntl(wfd, F_SETFL, O_NONBLOCK);
  }
  std::size_t sent = 0;
  char buf[16384];
  for (;;) {
    struct pollfd pf[2] = {{out[0], POLLIN, 0}, {wfd, POLLOUT, 0}};
    if (::poll(pf, wfd >= 0 ? 2 : 1, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (wfd >= 0 && (pf[1].revents & (POLLOUT | POLLERR | POLLHUP))) {
      const ssize_t n = ::write(wfd, input.data() + sent, input.size() - sent);
      if (n > 0) sent += static_cast<std::size_t>(n);
      if ((n < 0 && errno != EAGAIN && errno != EINTR) || sent == input.size()) {
        ::close(wfd);
        wfd = -1;
      }
    }
    if (pf[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      const ssize_t n = ::read(out[0], buf, sizeof buf);
      if (n > 0) {
        if (r.out.size() < (64u << 20))
          r.out.append(buf, static_cast<std::size_t>(n));
        else
          r.cut = true;
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      break;
    }
  }
  if (wfd >= 0) ::close(wfd);
  ::close(out[0]);
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  r.ran = WIFEXITED(st) && WEXITSTATUS(st) == 0;
  return r;
}

// NUL-separated names, as -z prints them.
std::vector<std::string> names_of(const std::string& out) {
  std::vector<std::string> v;
  for (std::size_t at = 0; at < out.size();) {
    const std::size_t end = out.find('\0', at);
    std::string n = out.substr(at, end == std::string::npos ? std::string::npos : end - at);
    if (!n.empty()) v.push_back(n);
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return v;
}

void report(const std::string& id, const std::string& events_dir, const std::string& deliver,
            const std::string& requested) {
  if (events_dir.empty()) return;
  violations::Event e;
  e.container = id;
  e.surface = "fs.write";
  e.requested = requested;
  e.matched_entry = "git repository";
  e.syscall = "";
  e.pid = 1;
  e.err = EACCES;
  (void)violations::append_event(events_dir, e);
  if (!deliver.empty()) violations::deliver_line(deliver, violations::to_json_line(e));
}

}  // namespace

std::string head_commit(const std::string& git_dir) {
  auto h = read_file(git_dir + "/HEAD");
  if (!h.ok()) return {};
  const std::string t = first_line(*h);
  if (t.rfind("ref: ", 0) != 0) return all_hex(t) ? t : std::string();
  const std::string ref = t.substr(5);
  if (ref.rfind("refs/", 0) != 0 || ref.find("..") != std::string::npos) return {};
  if (auto r = read_file(git_dir + "/" + ref); r.ok()) {
    const std::string id = first_line(*r);
    return all_hex(id) ? id : std::string();
  }
  if (auto pr = read_file(git_dir + "/packed-refs"); pr.ok()) {
    std::size_t at = 0;
    while (at < pr->size()) {
      const std::size_t end = pr->find('\n', at);
      const std::string line =
          pr->substr(at, end == std::string::npos ? std::string::npos : end - at);
      const std::size_t sp = line.find(' ');
      if (sp != std::string::npos && line.compare(sp + 1, std::string::npos, ref) == 0 &&
          all_hex(line.substr(0, sp)))
        return line.substr(0, sp);
      if (end == std::string::npos) break;
      at = end + 1;
    }
  }
  return {};
}

namespace {

void loose_refs(const std::string& dir, const std::string& name, int depth, RefSnapshot& out) {
  if (depth > 16 || out.size() >= 4096) return;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;
  std::vector<std::pair<std::string, bool>> subs;
  while (struct dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    subs.emplace_back(e->d_name, e->d_type == DT_DIR);
  }
  ::closedir(d);
  for (const auto& [n, is_dir] : subs) {
    if (is_dir) {
      loose_refs(dir + "/" + n, name + "/" + n, depth + 1, out);
    } else if (auto t = read_file(dir + "/" + n); t.ok()) {
      const std::string id = first_line(*t);
      if (all_hex(id)) out[name + "/" + n] = id;
    }
  }
}

}  // namespace

RefSnapshot ref_snapshot(const std::string& git_dir) {
  RefSnapshot m;
  if (auto pr = read_file(git_dir + "/packed-refs"); pr.ok()) {
    std::size_t at = 0;
    while (at < pr->size()) {
      const std::size_t end = pr->find('\n', at);
      const std::string line =
          pr->substr(at, end == std::string::npos ? std::string::npos : end - at);
      const std::size_t sp = line.find(' ');
      if (sp != std::string::npos && all_hex(line.substr(0, sp)))
        m[line.substr(sp + 1)] = line.substr(0, sp);
      if (end == std::string::npos) break;
      at = end + 1;
    }
  }
  loose_refs(git_dir + "/refs", "refs", 0, m);
  // HEAD when detached, and the pseudo-refs a later `git reset --hard
  // ORIG_HEAD`, `git merge FETCH_HEAD` or `git commit` in a merge takes.
  for (const char* n : {"HEAD", "ORIG_HEAD", "FETCH_HEAD", "MERGE_HEAD", "CHERRY_PICK_HEAD",
                        "REVERT_HEAD", "REBASE_HEAD", "AUTO_MERGE"})
    if (auto h = read_file(git_dir + "/" + n); h.ok()) {
      const std::string l = first_line(*h);
      const std::string id = l.substr(0, l.find_first_of(" \t"));
      if (all_hex(id)) m[n] = id;
    }
  return m;
}

void check_git_history(const GitHistoryCheck& c) {
  if (c.own.empty()) return;
  const std::string g = c.own.front();
  if (g.size() <= 5 || g.compare(g.size() - 5, 5, "/.git") != 0) return;  // bare, or a gitfile's
  const std::string top = g.substr(0, g.size() - 5);
  const std::string idx = g + "/index";
  bool index_changed = false;
  if (auto b = c.index_before.find(idx); b != c.index_before.end()) {
    struct stat st;
    IndexStamp now;
    if (::lstat(idx.c_str(), &st) == 0) {
      now.there = true;
      now.dev = st.st_dev, now.ino = st.st_ino, now.size = st.st_size;
      now.mtime = st.st_mtim, now.ctime = st.st_ctim;
    }
    index_changed = now.there && !(now == b->second);
  }
  if (!index_changed && ref_snapshot(g) == c.refs_before) return;
  // The protected paths in the work tree, as pathspecs (a `*` is one
  // component, as :(glob) reads it; a directory's files below it).
  std::vector<std::string> specs;
  for (const std::string& p : c.protect) {
    if (p.size() <= top.size() + 1 || p.compare(0, top.size() + 1, top + "/") != 0) continue;
    std::string rel = p.substr(top.size() + 1);
    while (!rel.empty() && rel.back() == '/') rel.pop_back();
    if (rel.empty() || rel == ".git" || rel.rfind(".git/", 0) == 0) continue;
    specs.push_back(":(glob)" + rel);
    specs.push_back(":(glob)" + rel + "/**");
  }
  if (specs.empty()) return;
  const bool sha256 = c.head_before.size() == 64 || head_commit(g).size() == 64;
  const std::string base =
      !c.head_before.empty()
          ? c.head_before
          : (sha256 ? "6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321"
                    : "4b825dc642cb6eb9a060e54bf8d69288fbee4904");  // the empty tree
  auto ask = [&](std::vector<std::string> args) {
    args.push_back("--");
    args.insert(args.end(), specs.begin(), specs.end());
    return run_git(top, c.uid, c.gid, std::move(args));
  };
  for (const auto& [ref, now] : ref_snapshot(g)) {
    auto was = c.refs_before.find(ref);
    if (ref.rfind("refs/comet-refused/", 0) == 0 ||
        (was != c.refs_before.end() && was->second == now))
      continue;
    const std::string from = was != c.refs_before.end() ? was->second : base;
    // Every commit the ref brings that no ref had, its tree against FROM's:
    // a commit in the middle, or a stash's untracked-files parent, is what
    // a later checkout of it (or `git stash pop`) writes, as much as the tip.
    std::string not_before = now + "\n";
    for (const auto& [r, id] : c.refs_before)
      if (all_hex(id)) not_before += "^" + id + "\n";
    GitRun revs = run_git(top, c.uid, c.gid,
                          {"rev-list", "--stdin", "--no-commit-header", "--format=%T"}, not_before);
    GitRun ft = from == base && c.head_before.empty()
                    ? GitRun{true, false, from + "\n"}
                    : run_git(top, c.uid, c.gid, {"rev-parse", "--verify", "-q", from + "^{tree}"});
    const std::string from_tree = first_line(ft.out);
    std::string pairs;
    for (std::size_t at = 0; revs.ran && at < revs.out.size();) {
      const std::size_t e = revs.out.find('\n', at);
      const std::string t = revs.out.substr(at, e == std::string::npos ? e : e - at);
      if (all_hex(t)) pairs += t + " " + from_tree + "\n";
      if (e == std::string::npos) break;
      at = e + 1;
    }
    // (not a commit: a tree or a blob the ref names, itself against FROM)
    if (!revs.ran) pairs = now + " " + from_tree + "\n";
    std::vector<std::string> dt = {"diff-tree",   "--stdin", "-r", "--no-renames",
                                   "--name-only", "-z",      "--"};
    dt.insert(dt.end(), specs.begin(), specs.end());
    GitRun d = all_hex(from_tree) && !pairs.empty() && !revs.cut
                   ? run_git(top, c.uid, c.gid, dt, pairs)
                   : GitRun{!pairs.empty() || !revs.ran, revs.cut, {}};
    // each pair is echoed ("T1 T2\n") before its names
    std::vector<std::string> names;
    for (std::string n : names_of(d.out)) {
      for (std::size_t nl; (nl = n.find('\n')) != std::string::npos && nl >= 81;)
        n.erase(0, nl + 1);
      if (!n.empty()) names.push_back(n);
    }
    if (d.cut) names.insert(names.begin(), "(too many commits to look at)");
    // A replace ref changes what an object (a commit, a tree: HEAD's own)
    // means to the host's git: never the command's to add (red team 21).
    if (ref.rfind("refs/replace/", 0) == 0)
      names.insert(names.begin(), "(a replace ref, which changes what " + ref.substr(13, 12) +
                                      " means to the host's git)");
    // What git could not read is refused too (fail closed).
    if (!d.ran && names.empty() && !git_binary().empty())
      names.push_back("(what git could not read: " + now.substr(0, 12) + ")");
    if (names.empty()) continue;
    const std::string keep = "refs/comet-refused/" + c.id + "/" + ref;
    const bool kept = run_git(top, c.uid, c.gid, {"update-ref", keep, now}).ran;
    const bool pseudo = ref.rfind("refs/", 0) != 0 && ref != "HEAD";
    bool back = false;
    if (kept && pseudo) {
      // ORIG_HEAD, FETCH_HEAD, ...: a file of git's, removed
      back = ::unlink((g + "/" + ref).c_str()) == 0;
    } else if (kept) {
      std::vector<std::string> undo = {"update-ref", "-m", "comet-runtime sandbox: refused"};
      if (ref == "HEAD") undo.push_back("--no-deref");
      if (was == c.refs_before.end())
        undo = {"update-ref", "-d", ref, now};
      else
        undo.insert(undo.end(), {ref, was->second, now});
      back = run_git(top, c.uid, c.gid, undo).ran;
    }
    log::warn("sandbox: " + ref + " in " + top + " now changes the protected " + names.front() +
              (names.size() > 1 ? " (and " + std::to_string(names.size() - 1) + " more)" : "") +
              ", which the host's git would write at a checkout; " +
              (!back ? "could not put it back: do not check it out"
               : was == c.refs_before.end() || pseudo
                   ? "removed, its commits kept as " + keep
                   : "put back to " + was->second.substr(0, 12) + ", its commits kept as " + keep));
    report(c.id, c.events_dir, c.deliver, top + "/" + names.front() + " (" + ref + " " + now + ")");
  }
  struct stat st;
  if (!index_changed || ::lstat(idx.c_str(), &st) < 0) return;  // moved aside already
  const std::string head = head_commit(g);
  GitRun d = ask(
      {"diff-index", "--cached", "--no-renames", "--name-only", "-z", head.empty() ? base : head});
  const auto names = names_of(d.out);
  if (!d.ran || names.empty()) return;
  std::string to = idx + ".comet-refused";
  bool moved = ::renameat2(AT_FDCWD, idx.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0;
  if (!moved) {
    to = idx + ".comet-refused-" + random_hex(4);
    moved = ::renameat2(AT_FDCWD, idx.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0;
  }
  log::warn("sandbox: " + idx + " stages the protected " + names.front() +
            (names.size() > 1 ? " (and " + std::to_string(names.size() - 1) + " more)" : "") +
            ", which the host's `git restore` or `stash` would write; " +
            (moved ? "moved to " + to : "could not move it: do not run `git restore` there"));
  report(c.id, c.events_dir, c.deliver, idx + ": " + names.front());
}

}  // namespace comet::runtime::sandbox_parts
