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
#include <fnmatch.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "comet/base/random.hpp"
#include "comet/base/sys.hpp"
#include "comet/host/log.hpp"
#include "comet/reporting/violations.hpp"
#include "sandbox_parts.hpp"
#include "sandbox_placeholders.hpp"

#include <openssl/sha.h>

namespace comet::runtime::sandbox_parts {

namespace {

bool all_hex(const std::string& s) {
  if (s.size() != 40 && s.size() != 64) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

// S in lower case when it is an object id git would read in any case (its
// get_oid_hex takes A-F: red team round 24's upper-case ORIG_HEAD and
// stash reflog line); else S.
std::string as_id(std::string s) {
  if (s.size() != 40 && s.size() != 64) return s;
  for (char c : s)
    if (!std::isxdigit(static_cast<unsigned char>(c))) return s;
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
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

constexpr int kGitSeconds = 30;

// opendir, and for a directory of ours the command made unreadable (an
// ordinary user's run may `chmod 000 .git/objects/ab`: the check would
// skip what it holds, red team round 23) its owner's rights back first.
DIR* open_dir(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (!d && errno == EACCES && regain_own_dir(dir)) d = ::opendir(dir.c_str());
  return d;
}

// Whether ST changed since the run started (its ctime).
bool since_start(const struct stat& st, const struct timespec& started) {
  return st.st_ctim.tv_sec > started.tv_sec ||
         (st.st_ctim.tv_sec == started.tv_sec && st.st_ctim.tv_nsec >= started.tv_nsec);
}

// read_file, and the same for a file of ours made unreadable.
Result<std::string> read_own_file(const std::string& path) {
  auto t = read_file(path);
  struct stat st;
  if (t.ok() || t.error().err() != EACCES || ::lstat(path.c_str(), &st) < 0 ||
      !S_ISREG(st.st_mode) || st.st_uid != ::geteuid() ||
      ::chmod(path.c_str(), (st.st_mode & 07777) | 0600) < 0)
    return t;
  return read_file(path);
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
               const std::string& input = {}, const std::string& index_file = {}) {
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
  const std::string index_env = "GIT_INDEX_FILE=" + index_file;
  const char* envp[] = {"PATH=/usr/local/bin:/usr/bin:/bin",
                        "HOME=/nonexistent",
                        "GIT_CONFIG_NOSYSTEM=1",
                        "GIT_CONFIG_GLOBAL=/dev/null",
                        "GIT_OPTIONAL_LOCKS=0",
                        "GIT_TERMINAL_PROMPT=0",
                        "GIT_NO_REPLACE_OBJECTS=1",
                        "LC_ALL=C",
                        index_file.empty() ? nullptr : index_env.c_str(),
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
  // At most kGitSeconds for one git (red team round 22 made one block for
  // good on a FIFO an alternate object store named): then it is killed and
  // counts as failed, which the callers refuse.
  struct timespec t0;
  ::clock_gettime(CLOCK_MONOTONIC, &t0);
  bool killed = false;
  for (;;) {
    struct timespec t;
    ::clock_gettime(CLOCK_MONOTONIC, &t);
    const long long left = kGitSeconds * 1000LL -
                           ((t.tv_sec - t0.tv_sec) * 1000LL + (t.tv_nsec - t0.tv_nsec) / 1000000);
    if (left <= 0) {
      ::kill(pid, SIGKILL);
      killed = true;
      break;
    }
    struct pollfd pf[2] = {{out[0], POLLIN, 0}, {wfd, POLLOUT, 0}};
    if (::poll(pf, wfd >= 0 ? 2 : 1, static_cast<int>(left)) < 0) {
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
  r.ran = !killed && WIFEXITED(st) && WEXITSTATUS(st) == 0;
  if (killed)
    log::warn("sandbox: git " + args.front() + " in " + top + " took over " +
              std::to_string(kGitSeconds) + " s; killed");
  return r;
}

// The names `diff-tree --stdin -z` prints for tree pairs: each pair is
// echoed ("T1 T2\n") before its NUL-separated names.
std::vector<std::string> changed_names(const std::string& out);

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

// "T BASE_TREE" lines for `diff-tree --stdin`, one per tree id among the
// lines of TREES (what `rev-list --format=%T` and `cat-file` print).
std::string tree_pairs(const std::string& trees, const std::string& base_tree) {
  std::string pairs;
  for (std::size_t at = 0; at < trees.size();) {
    const std::size_t e = trees.find('\n', at);
    const std::string t = trees.substr(at, e == std::string::npos ? e : e - at);
    if (all_hex(t)) pairs += t + " " + base_tree + "\n";
    at = e == std::string::npos ? trees.size() : e + 1;
  }
  return pairs;
}

// The words of TEXT that may be object ids, full or abbreviated (7 to 64
// hex digits between non-alphanumerics), at most 256 of them, each once.
std::vector<std::string> hex_words(const std::string& text) {
  std::vector<std::string> words;
  auto alnum = [](char ch) {
    return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
  };
  for (std::size_t at = 0; at < text.size() && words.size() < 256;) {
    if (!alnum(text[at])) {
      ++at;
      continue;
    }
    std::size_t e = at;
    while (e < text.size() && alnum(text[e])) ++e;
    const std::string w = text.substr(at, e - at);
    at = e;
    if (w.size() < 7 || w.size() > 64 || w.find_first_not_of("0123456789abcdef") != w.npos ||
        w.find_first_not_of('0') == w.npos)
      continue;
    if (std::find(words.begin(), words.end(), w) == words.end()) words.push_back(w);
  }
  return words;
}

// The commits some text names (commits_named in check_git_history): their
// ids and "ID^{tree}" lines, one per line; unsure when git found a word
// ambiguous (the host's git might take it for another commit).
struct Named {
  std::string ids, trees;
  bool unsure = false;
};

std::vector<std::string> changed_names(const std::string& out) {
  std::vector<std::string> names;
  for (std::string n : names_of(out)) {
    for (std::size_t nl; (nl = n.find('\n')) != std::string::npos && nl >= 81;) n.erase(0, nl + 1);
    if (!n.empty()) names.push_back(n);
  }
  return names;
}

}  // namespace

// The refs packed-refs lists (not its peeled "^" lines) and their ids.
RefSnapshot packed_refs(const std::string& git_dir) {
  RefSnapshot m;
  auto pr = read_own_file(git_dir + "/packed-refs");
  if (!pr.ok()) return m;
  std::size_t at = 0;
  while (at < pr->size()) {
    const std::size_t end = pr->find('\n', at);
    const std::string line =
        pr->substr(at, end == std::string::npos ? std::string::npos : end - at);
    const std::size_t sp = line.find(' ');
    if (sp != std::string::npos && all_hex(as_id(line.substr(0, sp))))
      m[line.substr(sp + 1)] = as_id(line.substr(0, sp));
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return m;
}

std::string head_commit(const std::string& git_dir) {
  auto h = read_file(git_dir + "/HEAD");
  if (!h.ok()) return {};
  const std::string t = as_id(first_line(*h));
  if (t.rfind("ref: ", 0) != 0) return all_hex(t) ? t : std::string();
  const std::string ref = t.substr(5);
  if (ref.rfind("refs/", 0) != 0 || ref.find("..") != std::string::npos) return {};
  if (auto r = read_own_file(git_dir + "/" + ref); r.ok()) {
    const std::string id = as_id(first_line(*r));
    return all_hex(id) ? id : std::string();
  }
  const RefSnapshot packed = packed_refs(git_dir);
  auto it = packed.find(ref);
  return it == packed.end() ? std::string() : it->second;
}

namespace {

void loose_refs(const std::string& dir, const std::string& name, int depth, RefSnapshot& out) {
  if (depth > 16 || out.size() >= 4096) return;
  DIR* d = open_dir(dir);
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
    } else if (auto t = read_own_file(dir + "/" + n); t.ok()) {
      const std::string id = as_id(first_line(*t));
      // an id, or a symbolic ref as its text ("ref: refs/...")
      if (all_hex(id) || id.rfind("ref: ", 0) == 0) out[name + "/" + n] = id;
    }
  }
}

// The reflogs' sizes, as "#N" under "logs/..." (the entries a run
// appends are looked at: red team round 21, `git reset --hard HEAD@{1}`).
void reflog_sizes(const std::string& dir, const std::string& name, int depth, RefSnapshot& out) {
  if (depth > 16 || out.size() >= 8192) return;
  DIR* d = open_dir(dir);
  if (!d) return;
  std::vector<std::string> subs;
  while (struct dirent* e = ::readdir(d))
    if (e->d_name[0] != '.') subs.emplace_back(e->d_name);
  ::closedir(d);
  for (const auto& n : subs) {
    struct stat st;
    if (::lstat((dir + "/" + n).c_str(), &st) < 0) continue;
    if (S_ISDIR(st.st_mode))
      reflog_sizes(dir + "/" + n, name + "/" + n, depth + 1, out);
    else if (S_ISREG(st.st_mode))
      out[name + "/" + n] = "#" + std::to_string(st.st_size) + ":" + std::to_string(st.st_ino);
  }
}

}  // namespace

RefSnapshot ref_snapshot(const std::string& git_dir) {
  RefSnapshot m = packed_refs(git_dir);
  loose_refs(git_dir + "/refs", "refs", 0, m);
  reflog_sizes(git_dir + "/logs", "logs", 0, m);
  // HEAD when detached, and the pseudo-refs a later `git reset --hard
  // ORIG_HEAD`, `git merge FETCH_HEAD` or `git commit` in a merge takes.
  for (const char* n : {"HEAD", "ORIG_HEAD", "FETCH_HEAD", "MERGE_HEAD", "CHERRY_PICK_HEAD",
                        "REVERT_HEAD", "REBASE_HEAD", "AUTO_MERGE"})
    if (auto h = read_own_file(git_dir + "/" + n); h.ok()) {
      const std::string l = first_line(*h);
      const std::string id = as_id(l.substr(0, l.find_first_of(" \t")));
      if (all_hex(id)) m[n] = id;
    }
  return m;
}

namespace {

// REF set to VALUE ("" for gone) in GIT_DIR's files themselves: its loose
// file removed, and packed-refs rewritten (its owner and mode kept, without
// the "sorted" trait, whose binary search missed an entry out of order).
bool rewrite_ref_files(const std::string& g, const std::string& ref, const std::string& value) {
  (void)::unlink((g + "/" + ref).c_str());
  const std::string pr = g + "/packed-refs";
  struct stat st;
  auto text = read_file(pr);
  if (!text.ok() || ::lstat(pr.c_str(), &st) < 0) return value.empty();
  std::string out;
  bool skip_peel = false;
  std::size_t at = 0;
  while (at < text->size()) {
    const std::size_t e = text->find('\n', at);
    std::string line = text->substr(at, e == std::string::npos ? e : e - at);
    at = e == std::string::npos ? text->size() : e + 1;
    if (line.rfind("# pack-refs with:", 0) == 0) {
      if (auto k = line.find(" sorted"); k != std::string::npos) line.erase(k, 7);
    } else if (!line.empty() && line[0] == '^') {
      if (skip_peel) continue;
    } else {
      const std::size_t sp = line.find(' ');
      skip_peel = sp != std::string::npos && line.compare(sp + 1, std::string::npos, ref) == 0;
      if (skip_peel) continue;
    }
    out += line + "\n";
  }
  if (!value.empty() && all_hex(value)) out += value + " " + ref + "\n";
  const std::string tmp = pr + ".comet-" + random_hex(4);
  if (!write_file_atomic(tmp, out, st.st_mode & 07777, Sync::none).ok()) return false;
  if (::chown(tmp.c_str(), st.st_uid, st.st_gid) < 0 || ::rename(tmp.c_str(), pr.c_str()) < 0) {
    (void)::unlink(tmp.c_str());
    return false;
  }
  return true;
}

}  // namespace

namespace {

// What the run appended to each reflog (after the refs were put back):
// entries naming commits no ref had that change a protected path are cut
// off again, so `git reset --hard HEAD@{1}` cannot bring one back.
template <typename Git, typename TreeOf, typename CommitsNamed>
void check_reflogs(const GitHistoryCheck& c, const RefSnapshot& refs_before, const std::string& g,
                   const std::string& base, const std::string& not_before, Git&& git,
                   TreeOf&& tree_of, CommitsNamed&& commits_named) {
  const RefSnapshot now_refs = ref_snapshot(g);
  // A branch's name as `git checkout -` takes it: refs/heads/NAME exists.
  auto branch_name = [&](const std::string& x) {
    return !x.empty() && x.find_first_of(":~^@*?[\\ ") == std::string::npos &&
           x.find("..") == std::string::npos && now_refs.count("refs/heads/" + x) > 0;
  };
  for (const auto& [key, size] : now_refs) {
    if (key.rfind("logs/", 0) != 0) continue;
    auto was = refs_before.find(key);
    long long before = was == refs_before.end() ? 0 : std::atoll(was->second.c_str() + 1);
    const long long now = std::atoll(size.c_str() + 1);
    const bool same_file = was == refs_before.end() ||
                           was->second.substr(was->second.find(':')) == size.substr(size.find(':'));
    if (same_file && now <= before) continue;
    // rewritten (another file renamed over it, or made shorter): all of it
    if (!same_file || now < before) before = 0;
    auto text = read_own_file(g + "/" + key);
    if (!text.ok() || static_cast<long long>(text->size()) < before) continue;
    std::string ids, message;
    bool unsure = false;
    for (std::size_t at = static_cast<std::size_t>(before); at < text->size();) {
      const std::size_t e = text->find('\n', at);
      const std::string line = text->substr(at, e == std::string::npos ? e : e - at);
      at = e == std::string::npos ? text->size() : e + 1;
      const std::size_t sp = line.find(' ');
      if (sp == std::string::npos) continue;
      const std::size_t sp2 = line.find(' ', sp + 1);
      for (const std::string& id :
           {as_id(line.substr(0, sp)), as_id(line.substr(sp + 1, sp2 - sp - 1))}) {
        if (!all_hex(id))
          unsure = true;  // not an entry git wrote
        else if (id.find_first_not_of('0') != std::string::npos)
          ids += id + "\n";
      }
      // `git checkout -` goes to the X of the last "checkout: moving from
      // X to Y": a full id (judged) or a branch's name, nothing else (red
      // team round 24: a refused commit's keeping ref, `:/message`).
      static const std::string kMoving = "checkout: moving from ";
      if (const std::size_t tab = line.find('\t');
          tab != std::string::npos && line.compare(tab + 1, kMoving.size(), kMoving) == 0) {
        const std::size_t from = tab + 1 + kMoving.size();
        const std::size_t to = line.find(" to ", from);
        const std::string x = as_id(line.substr(from, to == std::string::npos ? to : to - from));
        if (all_hex(x))
          ids += x + "\n";
        else if (!branch_name(x))
          unsure = true;
      }
      // The message too: `git checkout -` goes where the last "checkout:
      // moving from X to Y" says, not where the entry's ids do (red team
      // round 23).
      if (const std::size_t tab = line.find('\t'); tab != std::string::npos)
        message += line.substr(tab + 1) + "\n";
    }
    const Named named = commits_named(message);
    ids += named.ids;
    if (ids.empty() && !named.unsure && !unsure) continue;
    GitRun revs =
        git({"rev-list", "--stdin", "--no-commit-header", "--format=%T"}, ids + not_before, false);
    const std::string from_tree = tree_of(base);
    const std::string pairs = tree_pairs(revs.out, from_tree);
    bool bad = !revs.ran || !all_hex(from_tree) || named.unsure || unsure;
    if (!bad && !pairs.empty()) {
      GitRun d = git({"diff-tree", "--stdin", "-r", "--no-renames", "--name-only", "-z", "--"},
                     pairs, true);
      bad = !d.ran || !changed_names(d.out).empty();
    }
    if (!bad) continue;
    const std::string file = g + "/" + key;
    const bool cut = before == 0 ? ::unlink(file.c_str()) == 0
                                 : ::truncate(file.c_str(), static_cast<off_t>(before)) == 0;
    // (a rewritten reflog is removed whole: what it said before is gone)
    log::warn("sandbox: the reflog " + file + " names commits that change protected paths; " +
              (cut ? "the run's entries removed" : "could not remove the run's entries"));
    report_git_refusal(c.id, c.events_dir, c.deliver, file);
  }
}

}  // namespace

namespace {

// The object store's caches that say what an object holds without it: a
// commit-graph maps a commit to its tree, and the host's git believes it
// (red team round 22's brief). Made or changed during the run: removed
// (git rebuilds them).
void drop_object_caches(const GitHistoryCheck& c, const std::string& g) {
  auto changed = [&](const struct stat& st) { return since_start(st, c.started); };
  std::vector<std::string> gone;
  auto drop_if = [&](const std::string& p) {
    struct stat st;
    if (::lstat(p.c_str(), &st) == 0 && changed(st) && ::unlink(p.c_str()) == 0) gone.push_back(p);
  };
  drop_if(g + "/objects/info/commit-graph");
  for (const std::string& dir : {g + "/objects/info/commit-graphs", g + "/objects/pack"}) {
    DIR* d = open_dir(dir);
    if (!d) continue;
    std::vector<std::string> names;
    while (struct dirent* e = ::readdir(d)) {
      const std::string n = e->d_name;
      if (dir.back() == 's' ? n[0] != '.' : n.rfind("multi-pack-index", 0) == 0)
        names.push_back(dir + "/" + n);
    }
    ::closedir(d);
    for (const auto& p : names) drop_if(p);
  }
  if (!gone.empty())
    log::warn("sandbox: removed " + gone.front() +
              (gone.size() > 1 ? " (and " + std::to_string(gone.size() - 1) + " more)" : "") +
              ", a cache of what objects hold that the run made; git rebuilds it");
}

}  // namespace

namespace {

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
// Whether the loose object file PATH holds what its id ID says: git does
// not check when it reads one (the host's `git reset --hard` wrote a
// rewritten tree's lefthook.yml, then said `hash mismatch`: red team 21).
bool loose_object_sound(const std::string& path, const std::string& id) {
  auto data = read_file(path);
  if (!data.ok()) return false;
  z_stream zs{};
  if (inflateInit(&zs) != Z_OK) return false;
  zs.next_in = reinterpret_cast<Bytef*>(data->data());
  zs.avail_in = static_cast<uInt>(data->size());
  SHA_CTX s1;
  SHA256_CTX s2;
  SHA1_Init(&s1);
  SHA256_Init(&s2);
  const bool wide = id.size() == 64;
  std::vector<unsigned char> buf(1 << 16);
  int rc = Z_OK;
  while (rc == Z_OK) {
    zs.next_out = buf.data();
    zs.avail_out = static_cast<uInt>(buf.size());
    rc = inflate(&zs, Z_NO_FLUSH);
    const std::size_t n = buf.size() - zs.avail_out;
    if (wide)
      SHA256_Update(&s2, buf.data(), n);
    else
      SHA1_Update(&s1, buf.data(), n);
    if (rc == Z_BUF_ERROR && n > 0) rc = Z_OK;
  }
  inflateEnd(&zs);
  if (rc != Z_STREAM_END) return false;
  unsigned char md[32];
  if (wide)
    SHA256_Final(md, &s2);
  else
    SHA1_Final(md, &s1);
  static const char* digits = "0123456789abcdef";
  std::string hex;
  for (std::size_t i = 0; i < (wide ? 32u : 20u); ++i) {
    hex += digits[md[i] >> 4];
    hex += digits[md[i] & 15];
  }
  return hex == id;
}
#pragma GCC diagnostic pop

// Every loose object file the run made (its directory changed, its own
// ctime since the start) is checked against its id; one that is not what
// its name says is moved aside (the host's git then finds no such object,
// and fails instead of writing what it holds). An object rewritten in place
// is refused by the init (a file git never reopens).
void check_loose_objects(const GitHistoryCheck& c, const std::string& g) {
  auto since = [&](const struct stat& st) { return since_start(st, c.started); };
  static const char* digits = "0123456789abcdef";
  std::vector<std::string> bad;
  for (int i = 0; i < 256; ++i) {
    const std::string sub = std::string(1, digits[i >> 4]) + digits[i & 15];
    const std::string dir = g + "/objects/" + sub;
    struct stat st;
    if (::lstat(dir.c_str(), &st) < 0 || !S_ISDIR(st.st_mode) || !since(st)) continue;
    DIR* d = open_dir(dir);
    if (!d) continue;
    std::vector<std::string> names;
    while (struct dirent* e = ::readdir(d)) {
      const std::string n = e->d_name;
      if ((n.size() == 38 || n.size() == 62) && all_hex(sub + n)) names.push_back(n);
    }
    ::closedir(d);
    for (const std::string& n : names) {
      const std::string f = dir + "/" + n;
      if (::lstat(f.c_str(), &st) < 0 || !since(st)) continue;
      if (S_ISREG(st.st_mode) && loose_object_sound(f, sub + n)) continue;
      if (::renameat2(AT_FDCWD, f.c_str(), AT_FDCWD, (f + ".comet-refused").c_str(),
                      RENAME_NOREPLACE) == 0 ||
          ::unlink(f.c_str()) == 0)
        bad.push_back(sub + n);
    }
  }
  if (bad.empty()) return;
  log::warn("sandbox: the object " + bad.front() +
            (bad.size() > 1 ? " (and " + std::to_string(bad.size() - 1) + " more)" : "") + " in " +
            g + " does not hold what its id says; moved aside (the host's git would have read " +
            "it as that object)");
  report_git_refusal(c.id, c.events_dir, c.deliver,
                     g + "/objects/" + bad.front().substr(0, 2) + "/" + bad.front().substr(2));
}

// Every pack the run made is verified by git (`verify-pack`: each
// object's hash against the index); one that fails, with its index and
// companions, is moved aside: an index that names another object's id at
// an offset would have the host's git read what it holds as that object.
void check_new_packs(const GitHistoryCheck& c, const std::string& g, const std::string& top) {
  const std::string dir = g + "/objects/pack";
  DIR* d = open_dir(dir);
  if (!d) return;
  std::vector<std::string> idx;
  while (struct dirent* e = ::readdir(d)) {
    const std::string n = e->d_name;
    if (n.size() > 4 && n.compare(n.size() - 4, 4, ".idx") == 0) idx.push_back(n);
  }
  ::closedir(d);
  for (const std::string& n : idx) {
    struct stat st;
    const std::string f = dir + "/" + n;
    if (::lstat(f.c_str(), &st) < 0) continue;
    if (!since_start(st, c.started)) continue;
    if (run_git(top, c.uid, c.gid, {"verify-pack", f}).ran || git_binary().empty()) continue;
    const std::string stem = f.substr(0, f.size() - 4);
    for (const char* ext : {".idx", ".pack", ".rev", ".bitmap", ".keep", ".promisor", ".mtimes"})
      (void)::rename((stem + ext).c_str(), (stem + ext + ".comet-refused").c_str());
    log::warn("sandbox: the pack " + stem + ".pack does not hold what its index says; moved " +
              "aside (the host's git would have read its objects as others)");
    report_git_refusal(c.id, c.events_dir, c.deliver, stem + ".pack");
  }
}

// git's own files at the top of its directory that the run made or
// changed, other than those the check reads otherwise (refs, the index):
// BISECT_START (`git bisect reset` checks it out), MERGE_AUTOSTASH (`git
// merge --abort` applies it), FETCH_HEAD past its first line (`git merge
// FETCH_HEAD` merges every line), MERGE_HEAD's other parents, ... (red
// team round 23). Not one is a ref, so none moved one.
std::vector<std::string> state_files(const GitHistoryCheck& c, const std::string& g) {
  std::vector<std::string> out;
  DIR* d = open_dir(g);
  if (!d) return out;
  while (struct dirent* e = ::readdir(d)) {
    const std::string n = e->d_name;
    // (every name git could take for a ref: `git checkout description`
    // reads .git/description as one; red team round 27. Not a name git
    // refuses as a ref, one starting with '.')
    if (n[0] == '.' || n == "HEAD") continue;
    struct stat st;
    if (::lstat((g + "/" + n).c_str(), &st) < 0 || !S_ISREG(st.st_mode)) continue;
    if (since_start(st, c.started)) out.push_back(n);
  }
  ::closedir(d);
  return out;
}

// Whether git reads the file N at the top of its directory as revisions:
// the pseudo-refs (ORIG_HEAD, FETCH_HEAD, MERGE_HEAD, ..., any NAME_HEAD),
// BISECT_START (`git bisect reset` checks it out), BISECT_EXPECTED_REV,
// MERGE_AUTOSTASH (`git merge --abort` applies it) and AUTO_MERGE. Messages
// (MERGE_MSG, SQUASH_MSG, BISECT_LOG, ...) are not read so.
bool revision_file(const std::string& n) {
  if (n == "BISECT_START" || n == "BISECT_EXPECTED_REV" || n == "MERGE_AUTOSTASH" ||
      n == "AUTO_MERGE")
    return true;
  return n.size() > 5 && n.compare(n.size() - 5, 5, "_HEAD") == 0 &&
         n.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ_") == std::string::npos;
}

// Each of FILES (state_files) that git reads as revisions is read as git
// does: every line's first word must be a full object id (any case), or
// for BISECT_START a branch's name (red team round 24: an abbreviation, a
// refused commit's keeping ref, `:/message`, a `ref:` line were all taken
// by the host's git); the ids are then judged (JUDGE, given them one per
// line: the first protected path a commit of them brings, or ""). A file
// that fails either, or is over 4 MiB, is moved aside and reported.
template <typename Judge>
void check_state_files(const GitHistoryCheck& c, const std::string& g,
                       const std::vector<std::string>& files, Judge&& judge) {
  const RefSnapshot refs = ref_snapshot(g);
  for (const std::string& n : files) {
    const std::string f = g + "/" + n;
    struct stat st;
    if (::lstat(f.c_str(), &st) < 0 || !S_ISREG(st.st_mode)) continue;  // put back already
    if (!revision_file(n)) {
      // Any other file is a ref to git when its first line parses as one
      // (`git checkout FEATURE`, `merge index.v2`, `checkout description`
      // take $GIT_DIR/NAME before any ref: red team round 27): a `ref:`
      // line is moved aside, a full id judged; else git cannot read it so.
      char head[128] = {};
      UniqueFd fd(::open(f.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
      const ssize_t got = fd ? ::read(fd.get(), head, sizeof head - 1) : -1;
      if (got <= 0) continue;
      std::string first(head, static_cast<std::size_t>(got));
      first = first.substr(0, first.find('\n'));
      std::string name;
      if (first.rfind("ref:", 0) == 0) {
        name = "(a symbolic ref git would take for `git checkout " + n + "`)";
      } else {
        const std::string w = as_id(first.substr(0, first.find_first_of(" \t\r")));
        if (!all_hex(w)) continue;
        name = judge(w + "\n");
      }
      if (name.empty()) continue;
      const std::string to = move_aside(f);
      log::warn("sandbox: " + f + " names a commit that changes the protected " + name +
                ", which `git checkout " + n + "` would take before any ref; " +
                (to.empty() ? "could not move it: remove it" : "moved to " + to));
      report_git_refusal(c.id, c.events_dir, c.deliver, f + ": " + name);
      continue;
    }
    std::string name = "(a file too large to read)";
    if (st.st_size <= (4 << 20)) {
      auto text = read_own_file(f);
      std::string ids;
      name.clear();
      for (std::size_t at = 0; text.ok() && at < text->size() && name.empty();) {
        const std::size_t e = text->find('\n', at);
        std::string line = text->substr(at, e == std::string::npos ? e : e - at);
        at = e == std::string::npos ? text->size() : e + 1;
        while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
        if (line.empty()) continue;
        const std::string w = as_id(line.substr(0, line.find_first_of(" \t")));
        if (all_hex(w))
          ids += w + "\n";
        else if (!(n == "BISECT_START" && w == line &&
                   w.find_first_of(":~^@*?[\\") == std::string::npos &&
                   w.find("..") == std::string::npos && refs.count("refs/heads/" + w)))
          name = "(a revision that is not a full object id: " + w.substr(0, 64) + ")";
      }
      if (!text.ok()) name = "(a file it could not read)";
      if (name.empty() && !ids.empty()) name = judge(ids);
    }
    if (name.empty()) continue;
    const std::string to = move_aside(f);
    log::warn("sandbox: " + f + " names a commit that changes the protected " + name +
              ", which the host's git would write (a bisect reset, merge --abort, merge " +
              "FETCH_HEAD, ...); " +
              (to.empty() ? "could not move it: do not use it" : "moved to " + to));
    report_git_refusal(c.id, c.events_dir, c.deliver, f + ": " + name);
  }
}

}  // namespace

namespace {

// The values of KEY's `KEY = VALUE` lines in a git config file's TEXT
// (any section; blanks and quotes around the value dropped), in order.
std::vector<std::string> config_values(const std::string& text, const std::string& key) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t e = text.find('\n', at);
    std::string line = text.substr(at, e == std::string::npos ? e : e - at);
    at = e == std::string::npos ? text.size() : e + 1;
    line.erase(0, line.find_first_not_of(" \t"));
    if (line.rfind(key, 0) != 0) continue;
    const std::size_t eq = line.find('=');
    if (eq == std::string::npos || line.find_first_not_of(" \t", key.size()) != eq) continue;
    std::string v = line.substr(eq + 1);
    v.erase(0, v.find_first_not_of(" \t\""));
    while (!v.empty() && (v.back() == ' ' || v.back() == '"' || v.back() == '\r')) v.pop_back();
    out.push_back(v);
  }
  return out;
}

// A module's work tree: its config's core.worktree (a protected file; the
// last one), relative to its git directory; "" when it has none or it is
// not there.
std::string module_work_tree(const std::string& g) {
  auto text = read_file(g + "/config");
  if (!text.ok()) return {};
  const std::vector<std::string> values = config_values(*text, "worktree");
  const std::string wt = values.empty() ? std::string() : values.back();
  if (wt.empty()) return {};
  char real[PATH_MAX];
  if (!::realpath((wt[0] == '/' ? wt : g + "/" + wt).c_str(), real)) return {};
  return real;
}

void check_git_dir(const GitHistoryCheck& c, const GitDirBefore& before, bool own);

}  // namespace

// The names at the top of a git directory.
std::set<std::string> top_names(const std::string& g) {
  std::set<std::string> out;
  DIR* d = open_dir(g);
  if (!d) return out;
  while (struct dirent* e = ::readdir(d))
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0 && out.size() < 4096)
      out.insert(e->d_name);
  ::closedir(d);
  return out;
}

std::vector<GitDirBefore> history_snapshot(const std::vector<std::string>& own) {
  std::vector<GitDirBefore> out;
  if (own.empty()) return out;
  std::vector<std::string> dirs = {own.front()};
  git_dirs_below(own.front() + "/modules", 1, 64, dirs);
  for (const std::string& g : dirs)
    out.push_back({g, head_commit(g), ref_snapshot(g), top_names(g)});
  return out;
}

void check_git_history(const GitHistoryCheck& c) {
  for (std::size_t i = 0; i < c.dirs.size(); ++i) {
    // A module's git directory (or one on the way to it) the command made
    // unreadable gets its owner's rights back first (red team round 26:
    // `chmod 000 .git/modules/sub` hid its index from the check).
    (void)regain_own_dirs(c.dirs[i].git_dir + "/HEAD", {c.dirs[0].git_dir});
    check_git_dir(c, c.dirs[i], i == 0);
  }
}

namespace {

// What an index holds besides its entries: the valid nodes of its cached
// trees (the TREE extension) as (path, hex id) pairs, the root's path "";
// and the paths its resolve-undo data (REUC) names, whose stages the
// host's `git checkout -m` or `restore --merge` puts back (red team round
// 26). nullopt when DATA is not an index this can read (versions 2 to 4;
// HASH_LEN 20 or 32).
struct IndexExtras {
  std::vector<std::pair<std::string, std::string>> trees;
  std::vector<std::string> reuc;
};
std::optional<IndexExtras> index_extras(const std::string& data, std::size_t hash_len) {
  auto be32 = [&](std::size_t at) {
    return (static_cast<std::uint32_t>(static_cast<unsigned char>(data[at])) << 24) |
           (static_cast<std::uint32_t>(static_cast<unsigned char>(data[at + 1])) << 16) |
           (static_cast<std::uint32_t>(static_cast<unsigned char>(data[at + 2])) << 8) |
           static_cast<std::uint32_t>(static_cast<unsigned char>(data[at + 3]));
  };
  if (data.size() < 12 + hash_len || data.compare(0, 4, "DIRC") != 0) return std::nullopt;
  const std::uint32_t version = be32(4), count = be32(8);
  if (version < 2 || version > 4) return std::nullopt;
  const std::size_t end = data.size() - hash_len, fixed = 40 + hash_len + 2;
  std::size_t at = 12;
  for (std::uint32_t i = 0; i < count; ++i) {
    if (at + fixed > end) return std::nullopt;
    const unsigned flags = (static_cast<unsigned char>(data[at + fixed - 2]) << 8) |
                           static_cast<unsigned char>(data[at + fixed - 1]);
    const std::size_t head = fixed + (version >= 3 && (flags & 0x4000) ? 2 : 0);
    std::size_t p = at + head;
    if (version == 4) {
      while (p < end && (static_cast<unsigned char>(data[p]) & 0x80)) ++p;  // the varint
      ++p;
    }
    const std::size_t nul = data.find('\0', p);
    if (nul == std::string::npos || nul >= end) return std::nullopt;
    at = version == 4 ? nul + 1 : at + ((head + (nul - (at + head)) + 8) & ~std::size_t{7});
  }
  IndexExtras out;
  auto& nodes = out.trees;
  static const char* digits = "0123456789abcdef";
  while (at + 8 <= end) {
    const std::size_t size = be32(at + 4);
    if (at + 8 + size > end) return std::nullopt;
    if (data.compare(at, 4, "TREE") == 0) {
      std::size_t t = at + 8;
      const std::size_t stop = t + size;
      // pre-order: each node's children follow it; a stack of (path, children left)
      std::vector<std::pair<std::string, long>> stack;
      while (t < stop) {
        const std::size_t z = data.find('\0', t);
        const std::size_t nl = z == std::string::npos ? z : data.find('\n', z);
        if (nl == std::string::npos || nl >= stop) return std::nullopt;
        const std::string name = data.substr(t, z - t);
        long entries = 0, subtrees = 0;
        if (std::sscanf(data.substr(z + 1, nl - z - 1).c_str(), "%ld %ld", &entries, &subtrees) !=
                2 ||
            subtrees < 0)
          return std::nullopt;
        while (!stack.empty() && stack.back().second == 0) stack.pop_back();
        std::string path = stack.empty() ? std::string() : stack.back().first;
        if (!stack.empty()) {
          --stack.back().second;
          path += (path.empty() ? "" : "/") + name;
        }
        t = nl + 1;
        if (entries >= 0) {
          if (t + hash_len > stop) return std::nullopt;
          std::string hex;
          for (std::size_t k = 0; k < hash_len; ++k) {
            const auto ch = static_cast<unsigned char>(data[t + k]);
            hex += digits[ch >> 4];
            hex += digits[ch & 15];
          }
          nodes.emplace_back(path, hex);
          t += hash_len;
        }
        stack.emplace_back(path, subtrees);
      }
    } else if (data.compare(at, 4, "REUC") == 0) {
      for (std::size_t t = at + 8, stop = at + 8 + size; t < stop;) {
        const std::size_t z = data.find('\0', t);
        if (z == std::string::npos || z >= stop) return std::nullopt;
        out.reuc.push_back(data.substr(t, z - t));
        t = z + 1;
        int present = 0;
        for (int k = 0; k < 3; ++k) {  // three octal modes, 0 for a stage not there
          const std::size_t e = data.find('\0', t);
          if (e == std::string::npos || e >= stop) return std::nullopt;
          if (std::strtol(data.substr(t, e - t).c_str(), nullptr, 8) != 0) ++present;
          t = e + 1;
        }
        t += static_cast<std::size_t>(present) * hash_len;
      }
    }
    at += 8 + size;
  }
  return out;
}

// Whether PATH (relative to the work tree) is one a pathspec of
// check_git_dir's specs names: ":(glob)P" (`*` one component),
// ":(glob)P/**" (below P), ":(literal)P".
bool spec_matches(const std::string& spec, const std::string& path) {
  if (spec.rfind(":(literal)", 0) == 0) {
    const std::string l = spec.substr(10);
    return path == l || path.rfind(l + "/", 0) == 0;
  }
  if (spec.rfind(":(glob)", 0) != 0) return false;
  std::string g = spec.substr(7);
  if (g.size() > 3 && g.compare(g.size() - 3, 3, "/**") == 0) {
    g.resize(g.size() - 3);
    const std::size_t slash = path.find('/', 0);
    for (std::size_t at = slash; at != std::string::npos; at = path.find('/', at + 1))
      if (::fnmatch(g.c_str(), path.substr(0, at).c_str(), FNM_PATHNAME) == 0) return true;
    return false;
  }
  return ::fnmatch(g.c_str(), path.c_str(), FNM_PATHNAME) == 0;
}

// Whether the index IDX's cached trees (its TREE extension) say other
// than its entries do: git trusts a valid node, so the host's next commit
// would take a tree the command made for a directory whose entries equal
// HEAD's (red team round 25: .vscode/tasks.json, with diff-index clean and
// `git status` silent). Each valid node against the tree `write-tree`
// makes from the entries alone, in a new index (fail closed: an index this
// cannot read counts as lying).
bool cache_tree_lies(const GitHistoryCheck& c, const std::string& g, const std::string& top,
                     const std::vector<std::pair<std::string, std::string>>& nodes) {
  if (nodes.empty()) return false;
  const std::string fresh = g + "/index.comet-check-" + random_hex(4);
  struct Remove {
    std::string path;
    ~Remove() {
      (void)::unlink(path.c_str());
      (void)::unlink((path + ".lock").c_str());
    }
  } remove{fresh};
  GitRun entries = run_git(top, c.uid, c.gid, {"ls-files", "-s", "-z"});
  if (!entries.ran || entries.cut) return true;
  GitRun made =
      entries.out.empty()
          ? GitRun{true, false, {}}
          : run_git(top, c.uid, c.gid, {"update-index", "-z", "--index-info"}, entries.out, fresh);
  GitRun root = made.ran ? run_git(top, c.uid, c.gid, {"write-tree"}, {}, fresh) : GitRun{};
  if (!root.ran) return false;  // unmerged entries: git makes no tree of them either
  const std::string root_id = first_line(root.out);
  GitRun trees = run_git(top, c.uid, c.gid, {"ls-tree", "-r", "-d", "-z", "--full-tree", root_id});
  if (!trees.ran || trees.cut) return true;
  std::map<std::string, std::string> honest = {{"", root_id}};
  for (const std::string& l : names_of(trees.out)) {
    const std::size_t tab = l.find('\t'), sp = l.find(' ');
    if (tab == std::string::npos || sp == std::string::npos) continue;
    honest[l.substr(tab + 1)] = l.substr(sp + 6, tab - sp - 6);  // "040000 tree ID\tPATH"
  }
  for (const auto& [path, id] : nodes) {
    auto it = honest.find(path);
    if (it == honest.end() || it->second != id) return true;
  }
  return false;
}

// Names git itself keeps at the top of its directory (git 2.39, and the
// tools of its ecosystem); a new one outside them, or in a new directory,
// is what `git checkout NAME` or `reset --hard origin/main` takes before
// any ref: git tries $GIT_DIR/NAME first (red team round 26: `.git/v1.0`,
// `.git/origin/main` naming a commit the command made).
bool git_own_name(const std::string& n) {
  static const char* const kNames[] = {"HEAD",          "config",       "config.worktree",
                                       "description",   "index",        "packed-refs",
                                       "hooks",         "info",         "logs",
                                       "objects",       "refs",         "modules",
                                       "worktrees",     "rr-cache",     "branches",
                                       "remotes",       "shallow",      "commondir",
                                       "sequencer",     "rebase-merge", "rebase-apply",
                                       "lfs",           "annex",        "gitk.cache",
                                       "gc.log",        "gc.pid",       "FETCH_HEAD",
                                       "COMMIT_EDITMSG"};
  for (const char* k : kNames)
    if (n == k) return true;
  // pseudo-refs and git's messages (upper case: MERGE_MSG, ORIG_HEAD, ...;
  // the *_HEAD ones are read by check_state_files), locks, the split
  // index's shared files, what this check moved aside
  if (n.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ_") == std::string::npos) return true;
  auto ends = [&](const char* x) {
    const std::size_t k = std::strlen(x);
    return n.size() > k && n.compare(n.size() - k, k, x) == 0;
  };
  return ends(".lock") || n.rfind("sharedindex.", 0) == 0 || n.rfind("index.", 0) == 0 ||
         n.find(".comet-refused") != std::string::npos || n.rfind("packed-refs.", 0) == 0;
}

// What the run added at the top of G that git does not keep there is
// moved aside (into G/comet-refused/), reported.
void check_new_names(const GitHistoryCheck& c, const GitDirBefore& before, const std::string& g) {
  for (const std::string& n : top_names(g)) {
    // (a new regular file is read as a ref by check_state_files; a name
    // starting with '.' git refuses as a ref: red team round 27's
    // .graphite_repo_config was moved aside for nothing)
    struct stat st;
    if (before.top.count(n) || git_own_name(n) || n[0] == '.' ||
        (::lstat((g + "/" + n).c_str(), &st) == 0 && S_ISREG(st.st_mode)))
      continue;
    const std::string to = move_aside(g + "/" + n);
    log::warn("sandbox: " + g + "/" + n + " is new and not one of git's own names; " +
              "`git checkout " + n + "` would take it before any ref: " +
              (to.empty() ? "could not move it: remove it" : "moved to " + to));
    report_git_refusal(c.id, c.events_dir, c.deliver, g + "/" + n);
  }
}

void check_git_dir(const GitHistoryCheck& c, const GitDirBefore& before, bool own) {
  const std::string& g = before.git_dir;
  check_new_names(c, before, g);
  drop_object_caches(c, g);
  check_loose_objects(c, g);
  const bool dot_git = g.size() > 5 && g.compare(g.size() - 5, 5, "/.git") == 0;
  const std::string top = own ? (dot_git ? g.substr(0, g.size() - 5) : "") : module_work_tree(g);
  if (top.empty()) return;  // bare, a gitfile's, or a module not checked out
  check_new_packs(c, g, top);
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
  const std::vector<std::string> state = state_files(c, g);
  // A shared index rewritten in place is the index's content as much
  // (core.splitIndex; red team round 27)
  for (const std::string& n : state)
    if (n.rfind("sharedindex.", 0) == 0)
      index_changed = index_changed || ::access(idx.c_str(), F_OK) == 0;
  const RefSnapshot after = ref_snapshot(g);
  if (!index_changed && state.empty() && after == before.refs) return;
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
  // A submodule's gitlink (.gitmodules' `path =`, a protected file): a
  // commit that moves one has the host's `git submodule update` check out
  // a commit of the module's that the command made (red team round 22), so
  // it counts as a protected path too.
  if (auto gm = read_file(top + "/.gitmodules"); gm.ok()) {
    for (std::string path : config_values(*gm, "path")) {
      while (!path.empty() && path.back() == '/') path.pop_back();
      if (!path.empty()) specs.push_back(":(literal)" + path);
    }
  }
  if (specs.empty()) return;
  const bool sha256 = before.head.size() == 64 || head_commit(g).size() == 64;
  const std::string base =
      !before.head.empty()
          ? before.head
          : (sha256 ? "6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321"
                    : "4b825dc642cb6eb9a060e54bf8d69288fbee4904");  // the empty tree
  // git ARGS, INPUT on its stdin, the protected pathspecs after ARGS when WITH_SPECS
  auto git = [&](std::vector<std::string> args, const std::string& input, bool with_specs) {
    if (with_specs) args.insert(args.end(), specs.begin(), specs.end());
    return run_git(top, c.uid, c.gid, std::move(args), input);
  };
  const std::vector<std::string> diff_pairs = {"diff-tree",   "--stdin", "-r", "--no-renames",
                                               "--name-only", "-z",      "--"};
  // The tree of X ("" when git cannot tell); the empty tree is itself.
  auto tree_of = [&](const std::string& x) {
    if (x == base && before.head.empty()) return x;
    return first_line(git({"rev-parse", "--verify", "-q", x + "^{tree}"}, {}, false).out);
  };
  // The commits TEXT names (hex_words, looked up by git).
  auto commits_named = [&](const std::string& text) {
    Named named;
    std::string in;
    for (const std::string& w : hex_words(text)) in += w + "^{commit}\n";
    if (in.empty()) return named;
    GitRun r = git({"cat-file", "--batch-check=%(objectname)"}, in, false);
    named.unsure = !r.ran;
    for (std::size_t at = 0; at < r.out.size();) {
      const std::size_t e = r.out.find('\n', at);
      const std::string l = r.out.substr(at, e == std::string::npos ? e : e - at);
      at = e == std::string::npos ? r.out.size() : e + 1;
      if (all_hex(l)) {
        named.ids += l + "\n";
        named.trees += l + "^{tree}\n";
      } else if (l.size() > 10 && l.compare(l.size() - 10, 10, " ambiguous") == 0) {
        named.unsure = true;
      }
    }
    return named;
  };
  // What no ref had before: rev-list's exclusions, once for every ref.
  // Not the refused commits the check kept (refs/comet-refused/): a ref
  // moved to one, or to a clean child of one, brings them back (red team
  // round 23: the kept commit's parent held .envrc, `reset --hard HEAD~1`).
  std::string not_before;
  for (const auto& [r, id] : before.refs)
    if (all_hex(id) && r.rfind("refs/comet-refused/", 0) != 0) not_before += "^" + id + "\n";
  // Many refs changed (a fetch of tags): first all of them at once against
  // HEAD as it was; only when that finds something, one by one.
  std::vector<std::pair<std::string, std::string>> changed;
  for (const auto& [ref, now] : after) {
    auto was = before.refs.find(ref);
    if (ref.rfind("logs/", 0) == 0 || ref.rfind("refs/comet-refused/" + c.id + "/", 0) == 0 ||
        (was != before.refs.end() && was->second == now))
      continue;
    changed.emplace_back(ref, now);
  }
  if (changed.size() > 8) {
    std::string revs_in, tips_in;
    bool plain = true;
    for (const auto& entry : changed) {
      const std::string& ref = entry.first;
      const std::string& now = entry.second;
      plain = plain && all_hex(now) && ref.rfind("refs/replace/", 0) != 0;
      revs_in += now + "\n";
      tips_in += now + "^{tree}\n";
    }
    GitRun revs = plain ? git({"rev-list", "--stdin", "--no-commit-header", "--format=%T"},
                              revs_in + not_before, false)
                        : GitRun{};
    GitRun tips =
        plain ? git({"cat-file", "--batch-check=%(objectname)"}, tips_in, false) : GitRun{};
    const std::string base_tree = tree_of(base);
    const std::string pairs = tree_pairs(revs.out, base_tree) + tree_pairs(tips.out, base_tree);
    const bool clean = plain && revs.ran && tips.ran && !revs.cut && all_hex(base_tree) &&
                       tips.out.find("missing") == std::string::npos && [&] {
                         GitRun d = git(diff_pairs, pairs, true);
                         return d.ran && !d.cut && changed_names(d.out).empty();
                       }();
    if (clean) changed.clear();
  }
  for (const auto& entry : changed) {
    const std::string& ref = entry.first;  // (not a structured binding: a lambda takes it)
    const std::string& now = entry.second;
    auto was = before.refs.find(ref);
    const bool symbolic = now.rfind("ref: ", 0) == 0;
    const std::string from = was != before.refs.end() && all_hex(was->second) ? was->second : base;
    // Every commit the ref brings that no ref had, its tree against FROM's:
    // a commit in the middle, or a stash's untracked-files parent, is what
    // a later checkout of it (or `git stash pop`) writes, as much as the tip.
    GitRun revs = git({"rev-list", "--stdin", "--no-commit-header", "--format=%T"},
                      now + "\n" + not_before, false);
    const std::string from_tree = tree_of(from);
    std::string pairs = revs.ran ? tree_pairs(revs.out, from_tree) : std::string();
    // The tip's own tree too (a ref moved to a commit some ref had: git
    // branch x, reset --hard HEAD~1, or one the check refused before); a
    // tree or blob the ref names is itself.
    GitRun tip = git({"rev-parse", "--verify", "-q", now + "^{tree}"}, {}, false);
    const std::string tip_tree = tip.ran ? first_line(tip.out) : now;
    if (all_hex(tip_tree)) pairs += tip_tree + " " + from_tree + "\n";
    GitRun d = all_hex(from_tree) && !pairs.empty() && !revs.cut ? git(diff_pairs, pairs, true)
                                                                 : GitRun{false, revs.cut, {}};
    std::vector<std::string> names = changed_names(d.out);
    if (d.cut) names.insert(names.begin(), "(too many commits to look at)");
    // A symbolic ref made or moved (to a refused commit's keeping ref, or
    // anywhere: red team round 21): never the command's to add.
    if (symbolic) names = {"(a symbolic " + now + ")"};
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
    const bool kept = symbolic || run_git(top, c.uid, c.gid, {"update-ref", keep, now}).ran;
    const bool pseudo = ref.rfind("refs/", 0) != 0 && ref != "HEAD";
    const bool existed = was != before.refs.end();
    auto is_back = [&] {
      const RefSnapshot again = ref_snapshot(g);
      auto it = again.find(ref);
      return existed ? it != again.end() && it->second == was->second : it == again.end();
    };
    bool back = false;
    if (pseudo) {
      // ORIG_HEAD, FETCH_HEAD, ...: a file of git's, removed
      back = ::unlink((g + "/" + ref).c_str()) == 0;
    } else {
      std::vector<std::string> undo;
      if (existed && was->second.rfind("ref: ", 0) == 0)
        undo = {"symbolic-ref", ref, was->second.substr(5)};
      else if (existed)
        undo = {"update-ref", "--no-deref", ref, was->second};
      else if (symbolic)
        undo = {"symbolic-ref", "--delete", ref};
      else
        undo = {"update-ref", "--no-deref", "-d", ref};
      for (int attempt = 0; attempt < 2 && !back; ++attempt) {
        back = run_git(top, c.uid, c.gid, undo).ran && is_back();
        // a lock the command left (red team round 21) is no git's at work
        if (!back && attempt == 0) {
          (void)::unlink((g + "/" + ref + ".lock").c_str());
          (void)::unlink((g + "/packed-refs.lock").c_str());
        }
      }
      // git cannot find it (packed-refs out of its "sorted" order): the
      // files themselves, the loose one gone and packed-refs rewritten
      if (!back) back = rewrite_ref_files(g, ref, existed ? was->second : "") && is_back();
    }
    log::warn("sandbox: " + ref + " in " + top + " now changes the protected " + names.front() +
              (names.size() > 1 ? " (and " + std::to_string(names.size() - 1) + " more)" : "") +
              ", which the host's git would write at a checkout; " +
              (!back ? "could not put it back: do not check it out"
               : !existed || pseudo
                   ? "removed" + (symbolic ? std::string()
                                  : kept   ? ", its commits kept as " + keep
                                           : ", its tip was " + now)
                   : "put back to " + was->second.substr(0, 12) +
                         (kept ? ", its commits kept as " + keep : ", its tip was " + now)));
    report_git_refusal(c.id, c.events_dir, c.deliver,
                       top + "/" + names.front() + " (" + ref + " " + now + ")");
  }
  check_reflogs(c, before.refs, g, base, not_before, git, tree_of, commits_named);
  check_state_files(c, g, state, [&](const std::string& text) {
    // Every commit TEXT names that no ref had, and each one's own tree,
    // against HEAD as it was.
    const Named named = commits_named(text);
    if (named.unsure) return std::string("(an object id git finds ambiguous)");
    if (named.ids.empty()) return std::string();
    GitRun revs = git({"rev-list", "--stdin", "--no-commit-header", "--format=%T"},
                      named.ids + not_before, false);
    GitRun tips = git({"cat-file", "--batch-check=%(objectname)"}, named.trees, false);
    const std::string base_tree = tree_of(base);
    if (!revs.ran || revs.cut || !tips.ran || !all_hex(base_tree))
      return std::string("(what git could not read)");
    GitRun d =
        git(diff_pairs, tree_pairs(revs.out, base_tree) + tree_pairs(tips.out, base_tree), true);
    if (!d.ran || d.cut) return std::string("(what git could not read)");
    const auto names = changed_names(d.out);
    return names.empty() ? std::string() : names.front();
  });
  struct stat st;
  if (!index_changed || ::lstat(idx.c_str(), &st) < 0) return;  // moved aside already
  const std::string head = head_commit(g);
  GitRun d = git({"diff-index", "--cached", "--no-renames", "--name-only", "-z",
                  head.empty() ? base : head, "--"},
                 {}, true);
  auto names = names_of(d.out);
  if (!d.ran) return;
  // The index's resolve-undo and cached trees, read once (an index this
  // cannot parse counts as one whose cached trees lie: fail closed).
  if (auto data = read_file(idx); names.empty() && data.ok()) {
    const auto extras = index_extras(*data, head.size() == 64 ? 32 : 20);
    for (const std::string& p : extras ? extras->reuc : std::vector<std::string>{})
      if (std::any_of(specs.begin(), specs.end(),
                      [&](const std::string& sp) { return spec_matches(sp, p); })) {
        names.push_back(p + " (its resolve-undo stages)");
        break;
      }
    if (names.empty() && (!extras || cache_tree_lies(c, g, top, extras->trees)))
      names.push_back("(a directory whose cached tree its entries do not make)");
  }
  if (names.empty()) return;
  const std::string to = move_aside(idx);
  const bool moved = !to.empty();
  log::warn("sandbox: " + idx + " stages the protected " + names.front() +
            (names.size() > 1 ? " (and " + std::to_string(names.size() - 1) + " more)" : "") +
            ", which the host's `git restore` or `stash` would write; " +
            (moved ? "moved to " + to : "could not move it: do not run `git restore` there"));
  report_git_refusal(c.id, c.events_dir, c.deliver, idx + ": " + names.front());
}

}  // namespace

}  // namespace comet::runtime::sandbox_parts
