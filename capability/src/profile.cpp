// Built-in sandbox profiles and resolution to concrete host paths.
#include <algorithm>

#include "comet/capability/profile.hpp"
#include "util.hpp"

namespace comet::capability {

using detail::quote;

namespace {

const std::vector<std::string_view> kBuiltins = {"workspace", "devbox", "read-only", "strict",
                                                 "off"};

struct Builtin {
  std::string_view name;
  std::vector<std::string> read, write, protect;
  bool restricted;
  bool protect_hooks;
  bool sandboxed;
};

// The system directories strict lets a command read (beside its writable
// areas): enough to run programs, nothing of anyone's data.
const std::vector<std::string> kStrictRead = {"/usr",   "/bin",   "/sbin",   "/lib",
                                              "/lib32", "/lib64", "/libx32", "/etc",
                                              "/opt",   "/dev",   "/proc"};

const std::vector<Builtin>& builtins() {
  static const std::vector<Builtin> b = [] {
    std::vector<Builtin> v;
    v.push_back({"workspace", {"/"}, {"{workspace}", "~/.comet", "{tmp}"}, {}, false, true, true});
    v.push_back({"devbox", {"/"}, {"/"}, {"/data"}, false, false, true});
    v.push_back({"read-only", {"/"}, {"~/.comet", "{tmp}"}, {}, true, true, true});
    std::vector<std::string> strict_read = kStrictRead;
    for (const char* p : {"{workspace}", "~/.comet/sessions", "{tmp}"}) strict_read.push_back(p);
    v.push_back({"strict",
                 strict_read,
                 {"{workspace}", "~/.comet/sessions", "{tmp}"},
                 {},
                 true,
                 true,
                 true});
    v.push_back({"off", {"/"}, {"/"}, {}, false, false, false});
    return v;
  }();
  return b;
}

const Builtin* find_builtin(std::string_view name) {
  for (const auto& b : builtins()) {
    if (b.name == name) return &b;
  }
  return nullptr;
}

// The runtime's own hook and config sources: never writable from inside
// (except in devbox).
const std::vector<std::string> kHookSources = {"~/.comet/hooks", "{config}/comet", "/etc/comet",
                                               "{workspace}/.comet"};

// Protected by every sandboxed profile but devbox (issue 22): what the
// host's own tools read and obey later, outside any sandbox. A command that
// could write .git/hooks/pre-commit or `core.fsmonitor` in .git/config would
// have the user's next `git status` run it unconfined; the same for a
// filter driver (.gitattributes + config), a shell rc file, direnv's .envrc,
// and an editor's or agent's settings (tasks, hooks, MCP servers). A
// trailing "/" marks a directory: the placeholder made when the name is
// missing is a directory, else an empty file. `*` is one path component
// (expanded by the runtime). .git itself is special (see resolve()).
//
// .git/HEAD keeps the repository valid: with an invalid HEAD (or no
// objects/ or refs/, which are pinned: ResolvedProfile::pin) git would take
// the workspace itself for a bare repository, whose HEAD, config, objects/
// and refs/ the workload could write. .git/commondir names where git finds
// its config; the rebase and sequencer state holds `exec` lines the host's
// `git rebase --continue` runs.
const std::vector<std::string> kProtectedWorkspace = {
    ".git/config",
    ".git/config.worktree",
    ".git/HEAD",
    ".git/commondir",
    ".git/hooks/",
    ".git/info/",
    ".git/rebase-merge/",
    ".git/rebase-apply/",
    ".git/sequencer/",
    // legacy remotes (a file per name: URL, Push, Pull lines); git still
    // obeys them where .git/config does not name the remote (red team 5)
    ".git/remotes/",
    ".git/branches/",
    // other object stores git reads objects from, unchecked (red team
    // round 21's object forgery, by a side door)
    ".git/objects/info/alternates",
    ".git/objects/info/http-alternates",
    // the commits git takes for roots: the after-run check's git obeys it
    // too, and a commit behind one is never looked at (red team round 23:
    // written in one run, removed in the next, `reset --hard HEAD~1`)
    ".git/shallow",
    // recorded conflict resolutions: git turns rerere on when the
    // directory exists, and the host's next conflicting merge writes the
    // recorded postimage (red team round 25: a .envrc of the command's)
    ".git/rr-cache/",
    ".git/modules/*/rr-cache/",
    ".git/modules/*/config",
    ".git/modules/*/config.worktree",
    ".git/modules/*/commondir",
    ".git/modules/*/hooks/",
    ".git/modules/*/info/",
    ".git/modules/*/remotes/",  // red team round 9: a module's fetch or push redirected
    ".git/modules/*/branches/",
    ".git/worktrees/*/gitdir",
    ".git/worktrees/*/commondir",
    ".git/worktrees/*/config.worktree",
    ".gitmodules",
    ".gitattributes",
    ".envrc",
    ".vscode/",
    ".idea/",
    ".claude/",
    ".cursor/",
    ".mcp.json",
    ".devcontainer/",
    // red team round 5: a dev container's root file (initializeCommand runs
    // on the host), and what hook managers installed in .git/hooks read
    // from the working tree at every host commit
    ".devcontainer.json",
    ".pre-commit-config.yaml",
    "lefthook.yml",
    ".lefthook.yml",
    // red team round 27: lefthook's local overrides and its .config file,
    // and the agents whose settings start MCP servers' commands
    "lefthook-local.yml",
    ".lefthook-local.yml",
    ".config/lefthook.yml",
    ".gemini/",
    ".amazonq/",
    ".kiro/",
    ".roo/",
    ".opencode/",
    "opencode.json",
};
// The home directory's: only ever complete enough for a home that is no
// workspace (resolve() refuses a workspace at or above the home directory;
// a custom profile's explicit `write: [~]` gets these).
const std::vector<std::string> kProtectedHome = {
    ".gitconfig",
    ".config/git/",
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".bash_aliases",
    ".profile",
    ".inputrc",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".zlogout",
    ".config/fish/",
    ".ssh/",
    ".local/bin/",
    ".local/lib/",
    ".pythonrc",
    ".config/autostart/",
    ".config/systemd/",
    ".config/nvim/",
    ".vimrc",
    ".config/direnv/",
    ".cargo/config.toml",
    ".cargo/config",
    ".npmrc",
    ".vscode/",
    ".idea/",
    ".claude/",
    ".claude.json",
    ".cursor/",
    ".gemini/",
    ".amazonq/",
    ".kiro/",
    ".roo/",
    ".config/opencode/",
    ".envrc",
    // red team round 12: what a custom `write: [~]` left writable that the
    // host runs: ~/bin (Debian's .profile puts it on PATH), editor plugin
    // and start-up directories, shell completion and rc.d directories,
    // language toolchains' PATH and env files, debugger and REPL start-up
    ".bashrc.d/",
    ".bash_completion",
    ".bash_completion.d/",
    "bin/",
    ".vim/",
    ".emacs",
    ".emacs.d/",
    ".config/emacs/",
    ".local/share/nvim/",
    ".local/share/bash-completion/",
    ".local/share/applications/",
    ".cargo/bin/",
    ".cargo/env",
    ".pyenv/",
    ".rbenv/",
    ".nvm/",
    ".oh-my-zsh/",
    ".zsh/",
    ".gdbinit",
    ".config/gdb/",
    ".ipython/",
    ".jupyter/",
    ".yarnrc",
    ".yarnrc.yml",
    ".gnupg/",
    ".tmux.conf",
    ".config/tmux/",
    ".xinitrc",
    ".xprofile",
    ".xsessionrc",
    ".pam_environment",
    ".config/environment.d/",
    ".config/containers/",
    ".docker/",
    ".kube/",
    ".aws/",
    ".pypirc",
    ".netrc",
    ".gitconfig.local",
};

// Without {workspace}/.git, git looks for a bare repository in the
// workspace itself (HEAD, config, objects/, refs/): protected only then
// (ResolvedProfile::protect_if_missing), as a project's own config/ must
// stay writable beside a real .git.
const std::vector<std::string> kBareRepoNames = {"HEAD", "config", "objects/", "refs/"};
// Directories of .git that must stay in place (pinned, still writable).
const std::vector<std::string> kPinnedGit = {".git/objects", ".git/refs"};

// Denied by every sandboxed profile but devbox: the host's secrets, which no
// command run for an agent needs to read. /root too, unless the invoking
// user is root (resolve()).
const std::vector<std::string> kSecrets = {
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/ssh/ssh_host_*_key",
    "/etc/ssl/private",
    "/etc/security/opasswd",
    // Debian's daily copies (cron's `dpkg` job): the same hashes, readable
    // to root (red team round 15)
    "/var/backups/shadow.bak",
    "/var/backups/gshadow.bak",
};

// Container-runtime API sockets: through them a workload could start an
// unconfined container (issue 7). Hidden in every sandboxed profile but
// devbox.
const std::vector<std::string> kRuntimeSockets = {
    "/run/docker.sock",
    "/var/run/docker.sock",
    "/run/containerd/containerd.sock",
    "/var/run/containerd/containerd.sock",
    "/run/podman/podman.sock",
    "/var/run/podman/podman.sock",
    "/run/crio/crio.sock",
    "/var/run/crio/crio.sock",
    "/run/buildkit/buildkitd.sock",
    "/var/run/buildkit/buildkitd.sock",
    "~/.docker/run/docker.sock",
    "{runtime}/docker.sock",
    "{runtime}/podman/podman.sock",
};

// Directories that belong to one container runtime as a whole (its API
// sockets and nothing of anyone else's): hidden entirely, so that no socket
// in them (containerd.sock.ttrpc, a later one) exists inside.
const std::vector<std::string> kRuntimeSocketDirs = {
    "/run/containerd", "/var/run/containerd", "/run/podman",      "/var/run/podman",
    "/run/crio",       "/var/run/crio",       "/run/buildkit",    "/var/run/buildkit",
    "/run/docker",     "/var/run/docker",     "{runtime}/podman",
};

// Refused as (or above) a workspace that a profile writes.
// Red team round 12: /run (systemd units, udev rules, modprobe.d and
// tmpfiles.d are read from /run too), /opt and /srv (installed software and
// services the host runs), /snap.
const char* const kSystemDirs[] = {"/etc",   "/usr",    "/bin",  "/sbin", "/lib",  "/lib32",
                                   "/lib64", "/libx32", "/boot", "/var",  "/proc", "/sys",
                                   "/dev",   "/run",    "/opt",  "/srv",  "/snap"};

class Expander {
 public:
  explicit Expander(const ResolveContext& ctx) : ctx_(ctx) {
    config_ =
        ctx.config_home.empty() && !ctx.home.empty() ? ctx.home + "/.config" : ctx.config_home;
  }

  // Expanded, normalised path; nullopt with `skip_missing` when the token's
  // context is optional and absent.
  Result<std::optional<std::string>> expand(const std::string& p, const std::string& what,
                                            bool skip_missing = false) const {
    struct Tok {
      std::string_view tok;
      const std::string* value;
      const char* name;
    };
    const Tok toks[] = {{"~", &ctx_.home, "home"},
                        {"{workspace}", &ctx_.workspace, "workspace"},
                        {"{tmp}", &ctx_.tmp, "tmp"},
                        {"{config}", &config_, "config_home"},
                        {"{runtime}", &ctx_.runtime_dir, "runtime_dir"}};
    for (const Tok& t : toks) {
      if (p != t.tok && (p.size() <= t.tok.size() || p.compare(0, t.tok.size(), t.tok) != 0 ||
                         p[t.tok.size()] != '/')) {
        continue;
      }
      if (t.value->empty()) {
        if (skip_missing) return std::optional<std::string>{};
        return Error::msg(what + ": " + quote(p) + " needs the " + t.name +
                          " directory, which is not known");
      }
      if ((*t.value)[0] != '/') {
        return Error::msg(what + ": the " + std::string(t.name) +
                          " directory must be absolute, got " + quote(*t.value));
      }
      return std::optional<std::string>(
          detail::normalize_path(*t.value + "/" + p.substr(t.tok.size())));
    }
    if (p.empty() || p[0] != '/') {
      return Error::msg(what + ": expected an absolute path, got " + quote(p));
    }
    return std::optional<std::string>(detail::normalize_path(p));
  }

 private:
  const ResolveContext& ctx_;
  std::string config_;
};

bool contains_str(const std::vector<std::string>& list, const std::string& p) {
  return std::find(list.begin(), list.end(), p) != list.end();
}

void add_unique(std::vector<std::string>& list, std::string p) {
  if (std::find(list.begin(), list.end(), p) == list.end()) list.push_back(std::move(p));
}

Status add_all(const Expander& x, std::vector<std::string>& out, const std::vector<std::string>& in,
               const std::string& what, bool skip_missing = false) {
  for (const auto& p : in) {
    TRY(auto e, x.expand(p, what, skip_missing));
    if (e) add_unique(out, *e);
  }
  return {};
}

// The built-in protected names under `dir_tok` ("{workspace}" or "~"):
// into r.protect, and the file ones into r.protect_files.
Status add_protected(const Expander& x, ResolvedProfile& r, const std::string& dir_tok,
                     const std::vector<std::string>& names, const std::string& what) {
  for (const std::string& n : names) {
    const bool dir = n.back() == '/';
    TRY(auto e, x.expand(dir_tok + "/" + (dir ? n.substr(0, n.size() - 1) : n), what, true));
    if (!e) continue;
    add_unique(r.protect, *e);
    if (!dir) add_unique(r.protect_files, *e);
  }
  return {};
}

}  // namespace

const std::vector<std::string>& protected_workspace_names() {
  return kProtectedWorkspace;
}
const std::vector<std::string>& protected_home_names() {
  return kProtectedHome;
}

ResolvedProfile::Limits builtin_limits(std::string_view builtin) {
  ResolvedProfile::Limits l;
  if (builtin == "workspace" || builtin == "read-only" || builtin == "strict") {
    l.pids = 2048;
    l.memory = 4LL << 30;
    l.tmp = 1LL << 30;
  } else if (builtin == "devbox") {
    l.pids = 8192;
    l.memory = 8LL << 30;
    l.tmp = 0;  // the host's /tmp
  }
  return l;
}

const std::vector<std::string_view>& builtin_profile_names() {
  return kBuiltins;
}

bool is_builtin_profile(std::string_view name) {
  return std::find(kBuiltins.begin(), kBuiltins.end(), name) != kBuiltins.end();
}

Result<ResolvedProfile> resolve(const ProfileSet& set, std::string_view name,
                                const ResolveContext& ctx) {
  try {
    ResolvedProfile r;
    r.name = name.empty() ? set.default_profile : std::string(name);
    const CustomProfile* custom = nullptr;
    if (auto it = set.custom.find(r.name); it != set.custom.end()) custom = &it->second;
    const Builtin* base = find_builtin(custom ? std::string_view(custom->extends) : r.name);
    if (!base || (custom && base->name == "off")) {
      std::vector<std::string_view> known(kBuiltins.begin(), kBuiltins.end());
      for (const auto& [n, p] : set.custom) known.push_back(n);
      return Error::msg("unknown sandbox profile " + quote(r.name) + " " +
                        detail::suggest(r.name, known));
    }
    r.base = std::string(base->name);
    if (!base->sandboxed) {
      r.sandboxed = false;
      r.read = {"/"};
      r.write = {"/"};
      return r;
    }
    const Expander x(ctx);
    const std::string what = "profile " + r.name;
    const bool writes_ws = contains_str(base->write, "{workspace}") ||
                           (custom && contains_str(custom->write, "{workspace}"));
    // A system directory as the workspace (red team round 11: `--workspace
    // /etc` was auto-allowed): what it holds is what the host runs and
    // obeys (cron, systemd units, profile.d, sudoers.d, binaries) and no
    // list of names could cover it. /var/tmp stays a place for projects.
    if (writes_ws && !ctx.workspace.empty() && ctx.workspace[0] == '/') {
      const std::string ws = detail::normalize_path(ctx.workspace);
      for (const char* sys : kSystemDirs) {
        if (!detail::path_under(ws, sys) || detail::path_under(ws, "/var/tmp")) continue;
        return Error::msg("sandbox: the workspace " + ws + (ws == sys ? " is" : " is under") +
                          " the system directory " + sys +
                          ": what the host runs lives there; use a project directory");
      }
      // The shared temporary directories themselves (red team round 15:
      // `--workspace /tmp` showed every user's files there); a directory of
      // one's own inside them is fine.
      if (ws == "/tmp" || ws == "/var/tmp")
        return Error::msg("sandbox: the workspace " + ws +
                          " is the shared temporary directory, which holds every user's files; "
                          "use a directory of your own inside it");
    }
    // A workspace at or above the home directory would make the home
    // writable: no list of the names in it that shells and tools run
    // (rc files, ~/.local/bin, python's user site, autostart, systemd
    // units, editor and agent config, ...) is ever complete.
    // (The base's `{workspace}`, or a custom profile's; an explicit `~` or
    // parent directory in `write:` stays the user's choice.)
    if (writes_ws && !ctx.home.empty() && !ctx.workspace.empty() && ctx.home[0] == '/' &&
        ctx.workspace[0] == '/') {
      const std::string home = detail::normalize_path(ctx.home);
      const std::string ws = detail::normalize_path(ctx.workspace);
      if (ws != "/" && detail::path_under(home, ws)) {
        return Error::msg(
            "sandbox: the workspace " + ws +
            (ws == home ? " is the home directory" : " holds the home directory " + home) +
            ": too much of what your shell and tools run lives there; use a "
            "project directory");
      }
      // The home's configuration and data trees are the same (red team round
      // 19: `~/.config` or `~/.local` as the workspace let the command write
      // systemd user units, D-Bus services, user-tmpfiles.d and window
      // manager config that the user's session runs).
      std::vector<std::string> trees = {home + "/.config", home + "/.local"};
      if (!ctx.config_home.empty() && ctx.config_home[0] == '/')
        trees.push_back(detail::normalize_path(ctx.config_home));
      // ... or held by the workspace (red team round 20: XDG_CONFIG_HOME
      // inside a project)
      for (const std::string& t : trees)
        if (detail::path_under(ws, t) || detail::path_under(t, ws))
          return Error::msg("sandbox: the workspace " + ws +
                            (ws == t                     ? " is "
                             : detail::path_under(ws, t) ? " is under "
                                                         : " holds ") +
                            t +
                            ", where the host's session and tools read their configuration "
                            "and services; use a project directory");
      // Any hidden directory of the home (red team round 20: ~/.rustup, whose
      // toolchains the host's cargo runs; ~/.cache, where pre-commit keeps
      // its hooks' code; ~/.npm): each is a tool's state or configuration,
      // and no list of them is complete.
      if (ws != home && detail::path_under(ws, home)) {
        const std::string first = ws.substr(home == "/" ? 1 : home.size() + 1);
        const std::string hidden =
            (home == "/" ? "" : home) + "/" + first.substr(0, first.find('/'));
        if (!first.empty() && first[0] == '.')
          return Error::msg("sandbox: the workspace " + ws + (ws == hidden ? " is " : " is in ") +
                            hidden +
                            ", a hidden directory of the home, where tools keep what they run "
                            "and obey; use a project directory");
      }
      // Another account's home (red team round 12 follow-up: root with
      // `--workspace /home` made every user's rc files writable).
      for (const std::string& h : ctx.homes) {
        if (h.empty() || h[0] != '/') continue;
        const std::string other = detail::normalize_path(h);
        if (other == "/" || other == home || !detail::path_under(other, ws)) continue;
        return Error::msg("sandbox: the workspace " + ws +
                          (ws == other ? " is the home directory" : " holds the home directory") +
                          " " + other +
                          " of another account: what its shells and tools run "
                          "lives there; use a project directory");
      }
    }
    TRYV(add_all(x, r.read, base->read, what));
    TRYV(add_all(x, r.write, base->write, what));
    TRYV(add_all(x, r.protect, base->protect, what));
    if (base->protect_hooks) {
      TRYV(add_all(x, r.protect, kHookSources, what, true));
      for (const ConfigPath& h : set.hooks) {
        TRY(auto e, x.expand(h.path, what + " (hooks from " + h.file + ")"));
        if (e) add_unique(r.protect, *e);
      }
      // {workspace}/.git: a directory keeps objects/, refs/, index, HEAD
      // writable (the entries below it are protected one by one); a
      // "gitdir:" file is protected; a missing one gets a directory
      // placeholder, so that no repository can be created whose config
      // the host's git would obey.
      TRY(auto git, x.expand("{workspace}/.git", what, true));
      if (git) {
        add_unique(r.protect, *git);
        add_unique(r.protect_unless_dir, *git);
        for (const std::string& n : kBareRepoNames) {
          const std::string bare = n.back() == '/' ? n.substr(0, n.size() - 1) : n;
          TRY(auto e, x.expand("{workspace}/" + bare, what, true));
          if (!e || contains_str(r.protect, *e)) continue;
          TRYV(add_protected(x, r, "{workspace}", {n}, what));
          r.protect_if_missing[*e] = *git;
        }
        for (const std::string& n : kPinnedGit) {
          TRY(auto e, x.expand("{workspace}/" + n, what, true));
          if (e) add_unique(r.pin, *e);
        }
      }
      TRYV(add_protected(x, r, "{workspace}", kProtectedWorkspace, what));
      // An empty commondir makes git die ("failed to read"): the
      // placeholder names the repository itself.
      for (const char* n : {"{workspace}/.git/commondir", "{workspace}/.git/modules/*/commondir"}) {
        TRY(auto e, x.expand(n, what, true));
        if (e) r.placeholder_content[*e] = ".\n";
      }
      TRYV(add_protected(x, r, "~", kProtectedHome, what));
      for (const ConfigPath& h : set.protect) {
        TRY(auto e, x.expand(h.path, what + " (protect from " + h.file + ")"));
        if (!e) continue;
        add_unique(r.protect, *e);
        if (h.missing_is_file) add_unique(r.protect_files, *e);
      }
    }
    r.network_restricted = base->restricted;
    r.limits = builtin_limits(base->name);
    if (custom) {
      TRYV(add_all(x, r.read, custom->read, what));
      TRYV(add_all(x, r.write, custom->write, what));
      TRYV(add_all(x, r.deny, custom->deny, what));
      TRYV(add_all(x, r.protect, custom->protect, what));
      if (custom->network) r.network_restricted = *custom->network == Network::restricted;
      if (custom->pids) r.limits.pids = *custom->pids;
      if (custom->memory) r.limits.memory = *custom->memory;
      if (custom->tmp) r.limits.tmp = *custom->tmp;
    }
    for (const DenyPath& d : set.deny) {
      TRY(auto e, x.expand(d.path, what + " (deny from " + d.file + ")"));
      if (e) add_unique(r.deny, *e);
    }
    if (base->name != "devbox") {
      r.block_runtime_sockets = true;
      TRYV(add_all(x, r.runtime_sockets, kRuntimeSockets, what, true));
      for (const ConfigPath& p : set.runtime_sockets) {
        // {runtime} unknown: there is no user runtime dir, so no socket in it.
        TRY(auto e, x.expand(p.path, what + " (runtime_sockets from " + p.file + ")", true));
        if (e) add_unique(r.runtime_sockets, *e);
      }
      TRYV(add_all(x, r.runtime_socket_dirs, kRuntimeSocketDirs, what, true));
      TRYV(add_all(x, r.deny, kSecrets, what));
      // /root: unless the command runs as root, or works (or lives) there.
      const bool in_root =
          detail::path_under(ctx.workspace, "/root") || detail::path_under(ctx.home, "/root");
      if (ctx.uid != 0 && !in_root) add_unique(r.deny, "/root");
      r.unix_socket_rule = true;
      auto add_socket = [&](const std::string& path, const std::string& from) -> Status {
        TRY(auto e, x.expand(path, what + " (unix_sockets from " + from + ")", true));
        if (!e) return {};
        if (is_runtime_socket(*e))
          return Error::msg(from + ": unix_sockets: " + *e +
                            " is a container-runtime socket: root on the host");
        add_unique(r.unix_sockets, *e);
        return {};
      };
      for (const ConfigPath& p : set.unix_sockets) TRYV(add_socket(p.path, p.file));
      if (custom) {
        for (const std::string& p : custom->unix_sockets) TRYV(add_socket(p, custom->file));
      }
    }
    return r;
  } catch (const std::exception& e) {
    return Error::msg(std::string("resolve profile: ") + e.what());
  }
}

Result<ResolvedProfile> resolve(std::string_view name, const ResolveContext& ctx) {
  return resolve(ProfileSet{}, name, ctx);
}

bool is_runtime_socket(std::string_view path) {
  static const char* const kAlsoNames[] = {"containerd.sock.ttrpc", "cri-dockerd.sock",
                                           "dockershim.sock"};
  auto base_of = [](std::string_view p) {
    const std::size_t slash = p.rfind('/');
    return slash == std::string_view::npos ? p : p.substr(slash + 1);
  };
  const std::string_view base = base_of(path);
  for (const std::string& s : kRuntimeSockets)
    if (base == base_of(s)) return true;
  for (const char* n : kAlsoNames)
    if (base == n) return true;
  // The directories as "/run/<runtime>/", matched anywhere in the path.
  for (const std::string& d : kRuntimeSocketDirs) {
    if (d.rfind("/run/", 0) != 0) continue;  // /var/run/... and {runtime}/... are covered by these
    if (path.find(d + "/") != std::string_view::npos) return true;
  }
  return false;
}

}  // namespace comet::capability
