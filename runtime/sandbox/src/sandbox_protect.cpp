// What the sandbox protects because the host reads it (sandbox_protect.hpp).
#include "sandbox_protect.hpp"

#include "sandbox_parts.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "comet/base/sys.hpp"
#include "comet/capability/git_config.hpp"

namespace comet::runtime::sandbox_parts {

namespace cap = comet::capability;

// The git directory a `.git` entry at `at` names: itself when a directory,
// the "gitdir: X" of a file (X relative to the file's directory); "" else.
std::string git_dir_of(const std::string& at) {
  struct stat st;
  if (::lstat(at.c_str(), &st) < 0) return "";
  if (S_ISDIR(st.st_mode)) return at;
  // a symlink to the git directory (Android's `repo` lays checkouts out
  // so): git follows it, and so does the search (red team round 15)
  if (S_ISLNK(st.st_mode)) {
    char real[PATH_MAX];
    struct stat target;
    if (::stat(at.c_str(), &target) < 0) return "";
    if (S_ISDIR(target.st_mode)) return ::realpath(at.c_str(), real) ? real : "";
    // a symlink to a gitdir: file is read as git reads it, relative to the
    // link's directory (red team round 16); the file itself is protected
    // where the plan follows the link (GitDirs::dot_git_links)
    if (!S_ISREG(target.st_mode)) return "";
  } else if (!S_ISREG(st.st_mode)) {
    return "";
  }
  auto text = read_file(at);
  if (!text.ok() || text->rfind("gitdir: ", 0) != 0) return "";
  std::string d = text->substr(8);
  while (!d.empty() && (d.back() == '\n' || d.back() == '\r' || d.back() == ' ')) d.pop_back();
  if (d.empty()) return "";
  return d[0] == '/' ? d : at.substr(0, at.rfind('/')) + "/" + d;
}

// What the host's git runs or reads because its config says so (a hooks
// directory, a program or an included config file inside the workspace:
// git_config.hpp): protected like the config's own `protect` entries. The
// configs read (2048 files at most, more fail closed; one that cannot be read adds
// nothing): the repository the workspace is in (its own, or a parent's for
// a subdirectory of a monorepo; a linked worktree's and the main one's:
// config, config.worktree, and the commondir's), every repository and
// linked worktree below it (relative to its own top), its modules' (with
// their own worktree), the user's and the system's, and the files they
// include.
// The modules' git directories the built-in `.git/modules/*/...` entries
// do not reach (a module's module, a name with a "/"): their config,
// config.worktree, hooks/, info/, remotes/ and branches/ are protected too (red team round 8: a
// second-level module's config and hooks were writable, and the host's
// plain `git status` recursed into it).
void protect_nested_modules(const std::string& ws, cap::ProfileSet& set) {
  const std::string top = ws + "/.git/modules";
  std::vector<std::string> dirs;
  sandbox_parts::git_dirs_below(top, 1, 256, dirs);
  for (const std::string& m : dirs) {
    if (m.find('/', top.size() + 1) == std::string::npos) continue;  // modules/X: built in
    for (const char* f : {"/config", "/config.worktree"})
      set.protect.push_back(cap::ConfigPath{m + f, "nested module", {}, true});
    for (const char* f : {"/hooks", "/info", "/remotes", "/branches"})
      set.protect.push_back(cap::ConfigPath{m + f, "nested module", {}});
  }
}

// The repositories below the workspace at start: every directory but the
// workspace's own top with a `.git` entry (a nested repository, a gitlink's
// or submodule's checkout, a linked worktree), found by a walk that follows
// no symlink and does not enter a `.git` (32 levels, 65536 directories,
// 256 repositories), and every linked worktree `.git/worktrees/*/gitdir`
// names inside the workspace. Red team round 11: a nested repository's
// config (husky's core.hooksPath, a gitlink's core.fsmonitor) and a linked
// worktree's copy of a configured program were never read or protected.
struct NestedRepo {
  std::string top, git_dir;
  bool bare = false;  // no work tree: its config only
};

// Where the walk stopped short: "" when it saw everything.
struct WalkCut {
  std::string why;
  void set(const char* w, const std::string& at) {
    if (why.empty()) why = std::string(w) + " (at " + at + ")";
  }
};

// A directory the walk cannot list hides what is below it. One the
// runtime's user owns or can write could have been made unreadable by an
// earlier sandboxed command of that user (an ordinary user's runtime; root
// reads every directory): the walk is then cut short, and fails closed.
// Another user's, which the command could not have changed, is passed.
static bool ours_to_hide(const std::string& dir) {
  struct stat st;
  if (::lstat(dir.c_str(), &st) < 0) return errno != ENOENT;
  return st.st_uid == ::geteuid() || ::access(dir.c_str(), W_OK) == 0;
}

// A bare repository: HEAD, objects/ and refs/ (git's own test).
static bool is_bare_repo(const std::string& dir) {
  struct stat st;
  auto is = [&](const char* n, bool want_dir) {
    return ::lstat((dir + n).c_str(), &st) == 0 && (want_dir ? S_ISDIR(st.st_mode) : true);
  };
  return is("/HEAD", false) && is("/objects", true) && is("/refs", true);
}

// SKIP: a tree not to enter (the workspace, searched on its own).
static void find_nested_repos(const std::string& dir, int depth, int& budget,
                              std::vector<NestedRepo>& out, WalkCut& cut,
                              const std::string& skip = "") {
  if (depth > 32) return cut.set("32 levels", dir);
  if (budget <= 0) return cut.set("65536 directories", dir);
  if (out.size() >= 256) return cut.set("256 repositories", dir);
  if (!skip.empty() && dir == skip) return;
  DIR* d = ::opendir(dir.c_str());
  if (!d) {
    const int e = errno;
    if (e != ENOENT && e != ENOTDIR && ((e != EACCES && e != EPERM) || ours_to_hide(dir)))
      cut.set("a directory it cannot read", dir);
    return;
  }
  std::vector<std::string> subs;
  bool has_git = false;
  int bare_names = 0;  // HEAD, objects, refs seen
  errno = 0;
  while (struct dirent* e = ::readdir(d)) {
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    if (std::strcmp(e->d_name, ".git") == 0) {
      has_git = true;
      continue;
    }
    for (const char* n : {"HEAD", "objects", "refs"})
      if (std::strcmp(e->d_name, n) == 0) bare_names++;
    unsigned char t = e->d_type;
    if (t == DT_UNKNOWN) {
      struct stat st;
      const std::string sub = dir + "/" + e->d_name;
      if (::lstat(sub.c_str(), &st) == 0) {
        if (S_ISDIR(st.st_mode)) t = DT_DIR;
      } else if (errno != ENOENT && ours_to_hide(dir)) {
        cut.set("an entry it cannot look at", sub);
      }
    }
    if (t == DT_DIR) subs.push_back(dir + "/" + e->d_name);
    errno = 0;
  }
  const int read_err = errno;
  ::closedir(d);
  if (read_err != 0) cut.set("a directory it could not read to the end", dir);
  if (has_git && depth > 0) {
    const std::string gd = git_dir_of(dir + "/.git");
    if (!gd.empty())
      out.push_back({dir, clean_path(gd)});
    else if (::access((dir + "/.git").c_str(), R_OK) < 0 && errno != ENOENT &&
             ours_to_hide(dir + "/.git"))
      cut.set("a .git it cannot read", dir);  // a gitdir: file made unreadable
  } else if (!has_git && depth > 0 && bare_names == 3 && is_bare_repo(dir)) {
    // its config names what the host's git runs at a push (hooksPath);
    // the git rule keeps the repository itself read-only
    out.push_back({dir, dir, true});
    return;
  }
  for (const std::string& sub : subs) {
    if (--budget <= 0) return cut.set("65536 directories", sub);
    find_nested_repos(sub, depth + 1, budget, out, cut, skip);
  }
}

static std::vector<NestedRepo> nested_repos(const std::string& ws, std::string* walk_cut,
                                            const std::string& skip = "") {
  std::vector<NestedRepo> out;
  int budget = 65536;
  WalkCut cut;
  find_nested_repos(ws, 0, budget, out, cut, skip);
  *walk_cut = cut.why;
  if (DIR* d = ::opendir((ws + "/.git/worktrees").c_str())) {
    while (struct dirent* e = ::readdir(d)) {
      if (e->d_name[0] == '.') continue;
      const std::string g = ws + "/.git/worktrees/" + e->d_name;
      auto text = read_file(g + "/gitdir");
      if (!text.ok()) continue;
      std::string at = *text;
      while (!at.empty() && (at.back() == '\n' || at.back() == '\r' || at.back() == ' '))
        at.pop_back();
      if (at.empty() || at[0] != '/') continue;
      at = clean_path(at);
      if (at.rfind(ws + "/", 0) != 0 || at.size() < 6 || at.substr(at.size() - 5) != "/.git")
        continue;
      const std::string top = at.substr(0, at.size() - 5);
      if (top == ws) continue;
      bool known = false;
      for (const NestedRepo& r : out) known = known || r.top == top;
      if (!known) out.push_back({top, g});
    }
    ::closedir(d);
  }
  return out;
}

// The git directory's control files a nested repository's git obeys, when
// the directory is in the workspace but not below a `.git` (which the git
// rule keeps read-only): a gitdir: file naming a plain directory.
// WS: the tree searched; WORKSPACE: the sandbox's (its own git directory
// is the git rule's, whichever tree found the repository).
static void protect_nested_repo(const std::string& ws, const NestedRepo& r, cap::ProfileSet& set,
                                const std::string& workspace) {
  if (r.bare) return;
  const std::string why = "nested repository " + r.top;
  struct stat st;
  const bool have = ::lstat((r.top + "/.git").c_str(), &st) == 0;
  const bool git_is_dir = have && S_ISDIR(st.st_mode);
  // a gitdir: file (or a missing one) is protected; a symlink to the git directory cannot be
  // bound over in a writable tree, and needs not: no new `.git` can be made
  // in its place (the git rule), and its git directory is protected below
  if (!have || S_ISREG(st.st_mode))
    set.protect.push_back(cap::ConfigPath{r.top + "/.git", why, {}, true});
  for (const std::string& n : cap::protected_workspace_names()) {
    const bool dir = n.back() == '/';
    const std::string name = dir ? n.substr(0, n.size() - 1) : n;
    // below a .git directory: the git rule's, which refuses every write
    // there (and reports it); a gitdir: file's directory: below
    if (name.rfind(".git/", 0) == 0) continue;
    set.protect.push_back(cap::ConfigPath{r.top + "/" + name, why, {}, !dir});
  }
  if (git_is_dir || r.git_dir.rfind(ws + "/", 0) != 0 || r.git_dir.rfind(ws + "/.git/", 0) == 0 ||
      r.git_dir.rfind(workspace + "/.git/", 0) == 0)
    return;
  for (const char* f : {"/config", "/config.worktree", "/commondir", "/HEAD"})
    set.protect.push_back(cap::ConfigPath{r.git_dir + f, why, {}, true});
  for (const char* f : {"/hooks", "/info", "/remotes", "/branches"})
    set.protect.push_back(cap::ConfigPath{r.git_dir + f, why, {}});
}

// The home table's `.config/X` names (git, fish, nvim, systemd, direnv,
// autostart, comet, ...) under $XDG_CONFIG_HOME when it is elsewhere (in
// the workspace, say), and its zsh names under $ZDOTDIR: the host's tools
// read them there (red team round 8 for git/, round 11 for the rest). A
// relative one names a place under the working directory: the
// workspace's, for the host's tools run there (red team round 9).
static void protect_config_homes(const std::string& ws, const cap::ResolveContext& ctx,
                                 cap::ProfileSet& set) {
  std::vector<std::string> config_dirs, zdot_dirs;
  if (!ctx.config_home.empty() && ctx.config_home != ctx.home + "/.config")
    config_dirs.push_back(ctx.config_home);
  if (!ctx.config_home_relative.empty())
    config_dirs.push_back(clean_path(ws + "/" + ctx.config_home_relative));
  if (!ctx.zdotdir.empty() && ctx.zdotdir != ctx.home)
    zdot_dirs.push_back(ctx.zdotdir[0] == '/' ? clean_path(ctx.zdotdir)
                                              : clean_path(ws + "/" + ctx.zdotdir));
  for (const std::string& n : cap::protected_home_names()) {
    const bool dir = n.back() == '/';
    const std::string name = dir ? n.substr(0, n.size() - 1) : n;
    if (name.rfind(".config/", 0) == 0)
      for (const std::string& d : config_dirs)
        set.protect.push_back(cap::ConfigPath{d + name.substr(7), "XDG_CONFIG_HOME", {}, !dir});
    if (name.rfind(".z", 0) == 0)
      for (const std::string& d : zdot_dirs)
        set.protect.push_back(cap::ConfigPath{d + "/" + name, "ZDOTDIR", {}, !dir});
  }
  for (const std::string& d : config_dirs)
    set.protect.push_back(cap::ConfigPath{d + "/comet", "XDG_CONFIG_HOME", {}});
}

namespace {

// A config to read, for the work tree it applies to (its relative program
// paths are relative to that tree's top).
struct ConfigTodo {
  std::string file, worktree;
  const std::string* text = nullptr;  // the environment's entries: no file to read
};

// The directory GD's commondir file names ("" when none): a linked
// worktree's main repository.
std::string common_dir_of(const std::string& gd) {
  auto c = read_file(gd + "/commondir");
  if (!c.ok()) return "";
  std::string cd = *c;
  while (!cd.empty() && (cd.back() == '\n' || cd.back() == ' ')) cd.pop_back();
  return cd.empty() ? "" : clean_path(cd[0] == '/' ? cd : gd + "/" + cd);
}

// The configs of git directory GD (COMMON: its commondir), for a work tree
// at TOP.
void configs_of(const std::string& gd, const std::string& common, const std::string& top,
                std::vector<ConfigTodo>& todo) {
  for (const std::string& d : {gd, common})
    if (!d.empty())
      for (const char* f : {"/config", "/config.worktree"}) todo.push_back({d + f, top});
}

// A repository found at TOP with git directory GD: its configs to read,
// and its git directories (a linked worktree's hooks/ and info/ are its
// main repository's) and its `.git` when that is a symlink, for the plan.
void take_repo(const std::string& top, const std::string& gd, std::vector<ConfigTodo>& todo,
               GitDirs* found) {
  const std::string common = common_dir_of(gd);
  configs_of(gd, common, top, todo);
  found->dirs.push_back(clean_path(gd));
  if (!common.empty()) found->dirs.push_back(common);
  struct stat st;
  const std::string dot = (top == "/" ? "" : top) + "/.git";
  if (::lstat(dot.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) found->dot_git_links.push_back(dot);
}

// The repository holding AT: the nearest .git at or above it. Its top
// ("" when none).
std::string enclosing_repo(const std::string& at, std::vector<ConfigTodo>& todo, GitDirs* found) {
  for (std::string r = at;; r = r.substr(0, r.rfind('/'))) {
    const std::string gd = git_dir_of((r.empty() ? "" : r) + "/.git");
    if (!gd.empty()) {
      const std::string top = r.empty() ? "/" : r;
      take_repo(top, gd, todo, found);
      return top;
    }
    if (r.empty() || r == "/") return "";
  }
}

// The user's and the system's configs, and the environment's: they apply
// in every repository (a relative core.hooksPath there names a directory
// of each work tree).
void global_configs(const cap::ResolveContext& ctx, const GitEnvConfigs& genv,
                    const std::string& top, std::vector<ConfigTodo>& todo) {
  // ~/.config/git/config too when XDG_CONFIG_HOME says otherwise: the
  // host's git may run without it (red team round 7)
  for (const std::string& f : {ctx.home + "/.gitconfig", ctx.config_home + "/git/config",
                               ctx.home + "/.config/git/config", std::string("/etc/gitconfig")})
    todo.push_back({f, top});
  for (const std::string& f : genv.files) todo.push_back({f, top});
  if (!genv.text.empty()) todo.push_back({"$GIT_CONFIG_COUNT", top, &genv.text});
}

// Reads every config of TODO (and the files they include) and protects
// what they name. A config is read once (2048 files at most) and judged
// for each work tree it applies to.
Status protect_what_configs_name(std::vector<ConfigTodo>& todo, const cap::ResolveContext& ctx,
                                 cap::ProfileSet& set) {
  std::vector<std::pair<std::string, std::vector<cap::GitConfigRef>>> read;
  std::vector<std::string> seen;
  for (std::size_t i = 0; i < todo.size(); i++) {
    const ConfigTodo t = todo[i];  // a copy: todo grows below
    const std::string key = t.file + '\0' + t.worktree;
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
    seen.push_back(key);
    auto known =
        std::find_if(read.begin(), read.end(), [&](const auto& r) { return r.first == t.file; });
    if (known == read.end() && t.text) {
      read.emplace_back(t.file, cap::git_config_refs(*t.text));
      known = read.end() - 1;
    } else if (known == read.end()) {
      if (read.size() >= 2048)
        return Error::msg("sandbox: more than 2048 git config files to read (at " + t.file +
                          "): what the host's git runs could not all be protected; narrow "
                          "--workspace or the profile's write paths");
      auto text = read_file(t.file);
      // one made unreadable by an earlier sandboxed command of this user
      // (an ordinary user's runtime) hides what it names: fail closed
      // (red team round 15: `chmod 000 vendor/lib/.git`)
      if (!text.ok() && text.error().err() != ENOENT && text.error().err() != ENOTDIR &&
          (ours_to_hide(t.file) || ours_to_hide(t.file.substr(0, t.file.rfind('/')))))
        return Error::msg("sandbox: " + t.file + " cannot be read (" +
                          std::strerror(text.error().err()) +
                          "), so what the host's git runs by it cannot be protected; restore "
                          "its mode (and its directory's)");
      if (!text.ok() || text->size() > (1 << 20)) continue;
      read.emplace_back(t.file, cap::git_config_refs(*text));
      known = read.end() - 1;
    }
    const std::vector<cap::GitConfigRef>& refs = known->second;
    const std::string dir = t.text ? t.worktree : t.file.substr(0, t.file.rfind('/'));
    for (const cap::GitConfigRef& r : refs) {
      if (r.kind == cap::GitConfigRef::Kind::work_tree) {
        // core.worktree moves the work tree's top (red team round 18:
        // `../src` ran a relative core.fsmonitor from ws/src): every config
        // judged for this top is judged for that one too, and the
        // workspace table's names there are protected.
        if (r.value.empty()) continue;
        // relative to the git directory where it really is (git chdirs there)
        char real[PATH_MAX];
        const std::string base = ::realpath(dir.c_str(), real) ? std::string(real) : dir;
        const std::string wt = clean_path(r.value[0] == '/' ? r.value : base + "/" + r.value);
        if (wt == t.worktree || wt == "/") continue;
        for (std::size_t j = 0, n = todo.size(); j < n; j++)
          if (todo[j].worktree == t.worktree) todo.push_back({todo[j].file, wt, todo[j].text});
        for (const std::string& name : cap::protected_workspace_names()) {
          if (name.rfind(".git/", 0) == 0) continue;
          const bool is_dir = name.back() == '/';
          set.protect.push_back(
              cap::ConfigPath{wt + "/" + (is_dir ? name.substr(0, name.size() - 1) : name),
                              t.file + " (core.worktree)",
                              {},
                              !is_dir});
        }
        continue;
      }
      std::vector<std::string> unresolved;
      const auto paths = cap::git_config_paths({r}, t.worktree, dir, ctx.home, &unresolved);
      if (!unresolved.empty())
        return Error::msg("sandbox: " + t.file + ": " + r.key +
                          " builds a program's path from a shell expansion (or through dir/..), so "
                          "what the host's "
                          "git runs cannot be protected; name the program plainly");
      for (const std::string& p : paths) {
        set.protect.push_back(cap::ConfigPath{
            p, t.file + " (" + r.key + ")", {}, r.kind != cap::GitConfigRef::Kind::hooks_dir});
        if (r.kind == cap::GitConfigRef::Kind::config_file) todo.push_back({p, t.worktree});
      }
    }
  }
  return {};
}

}  // namespace

Result<GitEnvConfigs> git_env_configs(const std::map<std::string, std::string>& env,
                                      const std::string& cwd) {
  GitEnvConfigs g;
  auto get = [&env](const std::string& k) {
    auto it = env.find(k);
    return it == env.end() ? std::string() : it->second;
  };
  // a relative one is taken from the working directory, as git does
  for (const char* k : {"GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM"})
    if (const std::string f = get(k); !f.empty())
      g.files.push_back(clean_path(f[0] == '/' ? f : cwd + "/" + f));
  auto refuse = [](const std::string& what) {
    return Error::msg("sandbox: " + what +
                      ": the git config the host's git takes from the environment cannot be "
                      "read, so what it runs cannot be protected");
  };
  std::vector<std::pair<std::string, std::string>> entries;
  const long n = std::strtol(get("GIT_CONFIG_COUNT").c_str(), nullptr, 10);
  if (n > 1024) return refuse("GIT_CONFIG_COUNT is more than 1024");
  for (long i = 0; i < n; i++)
    entries.emplace_back(get("GIT_CONFIG_KEY_" + std::to_string(i)),
                         get("GIT_CONFIG_VALUE_" + std::to_string(i)));
  // GIT_CONFIG_PARAMETERS: `git -c`'s, handed to every git it starts (red
  // team round 16): words quoted as git's sq_quote writes them ('...',
  // with ' as '\'' and ! as '\!'), 'key'='value' or 'key=value' (a bare
  // 'key' is a boolean). What git cannot parse it refuses; so do we.
  const std::string params = get("GIT_CONFIG_PARAMETERS");
  auto sq_word = [&params](std::size_t& i, std::string& out) {
    if (i >= params.size() || params[i] != '\'') return false;
    for (i++; i < params.size(); i++) {
      if (params[i] != '\'') {
        out += params[i];
        continue;
      }
      if (i + 3 < params.size() && params[i + 1] == '\\' &&
          (params[i + 2] == '\'' || params[i + 2] == '!') && params[i + 3] == '\'') {
        out += params[i + 2];  // '\'' or '\!' : the character inside
        i += 3;
        continue;
      }
      i++;
      return true;
    }
    return false;
  };
  for (std::size_t i = 0; i < params.size();) {
    if (params[i] == ' ') {
      i++;
      continue;
    }
    if (entries.size() >= 2048) return refuse("GIT_CONFIG_PARAMETERS has more than 2048 entries");
    std::string word, value;
    if (!sq_word(i, word)) return refuse("GIT_CONFIG_PARAMETERS is not quoted as git quotes it");
    if (i < params.size() && params[i] == '=') {
      i++;
      if (!sq_word(i, value)) return refuse("GIT_CONFIG_PARAMETERS is not quoted as git quotes it");
    } else if (const std::size_t eq = word.find('='); eq != std::string::npos) {
      value = word.substr(eq + 1);
      word.resize(eq);
    }
    entries.emplace_back(word, value);
  }
  // What else the host's git takes from the environment (git(1),
  // "Environment Variables"), judged as the config key that says the same:
  // a program it runs, or a directory whose programs or hooks it runs.
  static const std::pair<const char*, const char*> kAsKey[] = {
      {"GIT_SSH_COMMAND", "core.sshCommand"},
      {"GIT_SSH", "core.sshCommand"},
      {"GIT_ASKPASS", "core.askPass"},
      {"SSH_ASKPASS", "core.askPass"},
      {"GIT_EDITOR", "core.editor"},
      {"GIT_SEQUENCE_EDITOR", "sequence.editor"},
      {"GIT_PAGER", "core.pager"},
      {"GIT_EXTERNAL_DIFF", "diff.external"},
      {"GIT_PROXY_COMMAND", "core.gitProxy"},
      {"GIT_TEMPLATE_DIR", "init.templateDir"},
      {"GIT_EXEC_PATH", "core.hooksPath"},
  };
  auto from_cwd = [&cwd](const std::string& p) {
    return clean_path(p[0] == '/' ? p : cwd + "/" + p);
  };
  if (const std::string wt = get("GIT_WORK_TREE"); !wt.empty())
    entries.emplace_back("core.worktree", from_cwd(wt));
  for (const auto& [var, key] : kAsKey)
    if (std::string v = get(var); !v.empty()) {
      const bool dir =
          std::strcmp(key, "init.templateDir") == 0 || std::strcmp(key, "core.hooksPath") == 0;
      entries.emplace_back(key, dir ? from_cwd(v) : v);
    }
  // GIT_DIR and GIT_COMMON_DIR name the git directory the host's git uses
  // wherever it runs: protected as a found repository's is.
  for (const char* var : {"GIT_DIR", "GIT_COMMON_DIR"})
    if (const std::string v = get(var); !v.empty()) g.git_dirs.push_back(from_cwd(v));
  auto escaped = [](const std::string& v) {
    std::string out;
    for (char c : v) {
      if (c == '"' || c == '\\') out += '\\';
      if (c == '\n') {
        out += "\\n";
        continue;
      }
      out += c;
    }
    return out;
  };
  for (const auto& [key, value] : entries) {
    const size_t first = key.find('.'), last = key.rfind('.');
    if (first == std::string::npos || first == 0 || last + 1 >= key.size()) continue;
    // section.name, or section.subsection.name
    std::string head = "[" + key.substr(0, first);
    if (last != first) head += " \"" + escaped(key.substr(first + 1, last - first - 1)) + "\"";
    g.text += head + "]\n\t" + key.substr(last + 1) + " = \"" + escaped(value) + "\"\n";
  }
  return g;
}

Status protect_git_config_paths(const std::string& ws, const cap::ResolveContext& ctx,
                                const GitEnvConfigs& genv, cap::ProfileSet& set,
                                std::string* walk_cut, GitDirs* found) {
  protect_nested_modules(ws, set);
  std::vector<ConfigTodo> todo;
  std::vector<std::string> tops = {ws};
  enclosing_repo(ws, todo, found);
  // Every repository and linked worktree below it: its config, relative to
  // its own top, and the workspace's table at that top.
  for (const NestedRepo& r : nested_repos(ws, walk_cut)) {
    protect_nested_repo(ws, r, set, ws);
    take_repo(r.top, r.git_dir, todo, found);
    tops.push_back(r.top);
  }
  // The modules of the workspace's own repository: .git/modules/NAME (a
  // module whose checkout is elsewhere than NAME is found above).
  if (DIR* d = ::opendir((ws + "/.git/modules").c_str())) {
    while (struct dirent* e = ::readdir(d)) {
      const std::string n = e->d_name;
      if (n == "." || n == "..") continue;
      const std::string md = ws + "/.git/modules/" + n;
      todo.push_back({md + "/config", ws + "/" + n});
      todo.push_back({md + "/config.worktree", ws + "/" + n});
    }
    ::closedir(d);
  }
  // The environment's git directories (GIT_DIR, GIT_COMMON_DIR), existing
  // or not: their configs, and their control files where the git rule does
  // not keep them already (in the workspace's own .git).
  for (const std::string& gd : genv.git_dirs) {
    take_repo(ws, gd, todo, found);
    if (gd == ws + "/.git" || gd.rfind(ws + "/.git/", 0) == 0) continue;
    for (const char* f : {"/config", "/config.worktree", "/commondir", "/HEAD"})
      set.protect.push_back(cap::ConfigPath{gd + f, "GIT_DIR", {}, true});
    for (const char* f : {"/hooks", "/info", "/remotes", "/branches"})
      set.protect.push_back(cap::ConfigPath{gd + f, "GIT_DIR", {}});
  }
  for (const std::string& top : tops) global_configs(ctx, genv, top, todo);
  protect_config_homes(ws, ctx, set);
  return protect_what_configs_name(todo, ctx, set);
}

// A write path outside the workspace is searched as the workspace is
// (red team round 14 left it open: `write: ["/srv/other-repo"]` left that
// repository's `.envrc`, `.vscode/` and the program its core.fsmonitor
// names writable, and the host runs them). Each tree gets the workspace's
// table at every repository top in or below it (its own top included), a
// gitdir: file's control files, and what the configs of the repository
// holding it and of those below it name.
Status protect_write_trees(const std::vector<std::string>& trees, const std::string& workspace,
                           const cap::ResolveContext& ctx, const GitEnvConfigs& genv,
                           cap::ProfileSet& set, std::string* walk_cut, GitDirs* found) {
  std::vector<ConfigTodo> todo;
  std::vector<std::string> tops;
  for (const std::string& tree : trees) {
    const std::string top = enclosing_repo(tree, todo, found);
    if (!top.empty()) tops.push_back(top);
    if (top == tree)
      protect_nested_repo(tree, {tree, clean_path(git_dir_of(tree + "/.git"))}, set, workspace);
    if (top.empty() && is_bare_repo(tree)) configs_of(tree, common_dir_of(tree), tree, todo);
    // a tree holding the workspace: not the workspace again (searched on
    // its own; its modules' git directories are the git rule's)
    std::string cut;
    for (const NestedRepo& r : nested_repos(tree, &cut, workspace)) {
      protect_nested_repo(tree, r, set, workspace);
      take_repo(r.top, r.git_dir, todo, found);
      tops.push_back(r.top);
    }
    if (!cut.empty() && walk_cut->empty()) *walk_cut = cut;
  }
  for (const std::string& top : tops) global_configs(ctx, genv, top, todo);
  return protect_what_configs_name(todo, ctx, set);
}

// A symlink inside a protected directory of the workspace leads out of it:
// the link cannot change (it is read-only), but what it names could, in a
// writable tree (red team round 8: `.git/hooks/pre-commit ->
// ../../scripts/pre-commit.sh`, `.claude/settings.json -> ../cfg/x.json`).
// The targets are protected too (4 levels, 512 entries per protected
// directory), and so is the way to them (red team round 9): each further
// link of a chain is pinned (`-> ../hop`, `hop -> cfg/x.json`), and a
// target under a missing directory protects the first missing one (an
// empty placeholder: it cannot be made to hold the target).
void protect_link_targets(const std::string& dir, int depth, int& budget,
                          std::vector<std::string>& out, std::vector<std::string>& pins, bool* cut,
                          std::vector<std::string>* linked) {
  if (depth > 16 || budget <= 0) {
    *cut = true;  // a directory left unread (red team round 15: it failed open)
    return;
  }
  DIR* d = ::opendir(dir.c_str());
  if (!d) {
    if (errno != ENOENT && errno != ENOTDIR && ours_to_hide(dir)) *cut = true;
    return;
  }
  std::vector<std::string> subdirs;
  while (struct dirent* e = ::readdir(d)) {
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    const std::string path = dir + "/" + e->d_name;
    unsigned char t = e->d_type;
    if (t == DT_UNKNOWN) {
      struct stat st;
      if (::lstat(path.c_str(), &st) == 0)
        t = S_ISDIR(st.st_mode) ? DT_DIR : S_ISLNK(st.st_mode) ? DT_LNK : DT_REG;
    }
    if (t == DT_REG && linked) {
      // a file with another name: written through that one (red team
      // round 17: scripts/pre-commit.sh, a hard link of the hook)
      struct stat st;
      if (::fstatat(::dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
          st.st_nlink > 1)
        linked->push_back(path);
    }
    if (t != DT_DIR && t != DT_LNK) continue;  // only these count: files are many, and inert
    if (--budget <= 0) {
      *cut = true;
      break;
    }
    if (t == DT_DIR) {
      subdirs.push_back(path);
      continue;
    }
    // a link through `dir/..` (red team round 18: a hook -> ../../s/sub/../pc.sh,
    // `sub` replaced by a link): reported as a link it cannot follow
    char text[PATH_MAX];
    const ssize_t tn = ::readlinkat(::dirfd(d), e->d_name, text, sizeof text - 1);
    if (tn > 0 && linked && cap::dotdot_after_name(std::string(text, static_cast<size_t>(tn))))
      linked->push_back(path + " -> " + std::string(text, static_cast<size_t>(tn)));
    PathWalk w = walk_path(path);
    for (std::size_t i = 1; i < w.links.size(); i++) pins.push_back(w.links[i]);
    out.push_back(w.first_missing.empty() ? w.real : w.first_missing);
  }
  ::closedir(d);
  for (const std::string& sub : subdirs)
    protect_link_targets(sub, depth + 1, budget, out, pins, cut, linked);
}

}  // namespace comet::runtime::sandbox_parts
