// The sandbox planner (see profile_compile.hpp for the view it builds).
#include "comet/capability/profile_compile.hpp"

#include <algorithm>

#include "comet/capability/compile.hpp"
#include "comet/capability/policy.hpp"
#include "util.hpp"

namespace comet::capability {

using detail::path_depth;
using detail::path_under;
using detail::quote;

namespace {

// What one path gets. Higher wins when two lists name the same path.
// unix_socket (an allowlisted socket bound back over a hiding mount) is
// placed by add_unix_sockets() alone, never over an entry at its own path.
enum class Op {
  read = 0,
  write = 1,
  pin = 2,
  protect = 3,
  socket_file = 4,
  hide = 5,
  deny = 6,
  unix_socket = 7,
  pin_link = 8  // a symlink bound onto itself: it cannot be removed or replaced
};

struct Entry {
  std::string path;  // real host path, also the destination inside
  Op op;
  HostKind kind;
  std::string why;  // for notes: "deny", "runtime socket", ...
};

bool special(const std::string& p) {
  return path_under(p, "/proc") || path_under(p, "/dev") || path_under(p, "/sys");
}

bool contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

using detail::mount;

class Planner {
 public:
  Planner(const ResolvedProfile& p, const SandboxInputs& in) : p_(p), in_(in) {}

  Result<SandboxPlan> run() {
    TRYV(check_inputs());
    read_all_ = contains(p_.read, "/");
    write_all_ = contains(p_.write, "/");
    tmp_private_ = !write_all_;
    devbox_ = p_.base == "devbox";
    add_roots();
    add_hidden();
    TRYV(add_protected());
    add_pins();
    add_unix_sockets();
    drop_shadowed();
    build_spec();
    return std::move(plan_);
  }

 private:
  Status check_inputs() const {
    if (!p_.sandboxed)
      return Error::msg("sandbox: profile " + quote(p_.name) + " is no sandbox (off)");
    for (const auto& [what, v] :
         {std::pair<const char*, const std::string*>{"root dir", &in_.root_dir},
          {"workspace", &in_.workspace},
          {"deny file", &in_.deny_file},
          {"socket file", &in_.socket_file}}) {
      if (v->empty() || (*v)[0] != '/' || !detail::is_normal_absolute(*v))
        return Error::msg("sandbox: the " + std::string(what) +
                          " must be an absolute normalised path, got " + quote(*v));
    }
    if (in_.workspace == "/")
      return Error::msg(
          "sandbox: the workspace cannot be / (it would make everything writable); "
          "pass --workspace DIR");
    if (in_.args.empty()) return Error::msg("sandbox: no command to run");
    return {};
  }

  HostPath fact(const std::string& p) const {
    auto it = in_.host.find(p);
    if (it != in_.host.end()) {
      HostPath h = it->second;
      if (h.real.empty()) h.real = p;
      return h;
    }
    return HostPath{HostKind::missing, p, false, {}};
  }

  // A list with each `*` entry replaced by its expansion (in_.globbed).
  std::vector<std::string> expanded(const std::vector<std::string>& list) const {
    std::vector<std::string> out;
    for (const auto& p : list) {
      if (p.find('*') == std::string::npos) {
        if (!contains(out, p)) out.push_back(p);
        continue;
      }
      auto it = in_.globbed.find(p);
      if (it == in_.globbed.end()) continue;
      for (const auto& m : it->second)
        if (!contains(out, m)) out.push_back(m);
    }
    return out;
  }

  void note(std::string s) {
    if (!contains(plan_.notes, s)) plan_.notes.push_back(std::move(s));
  }

  void put(const std::string& path, Op op, HostKind kind, const std::string& why) {
    auto it = std::find_if(entries_.begin(), entries_.end(),
                           [&](const Entry& e) { return e.path == path; });
    if (it == entries_.end()) {
      entries_.push_back({path, op, kind, why});
    } else if (static_cast<int>(op) > static_cast<int>(it->op)) {
      *it = Entry{path, op, kind, why};
    }
  }

  // Readable and writable trees.
  void add_roots() {
    for (const TopEntry& t : in_.top_level) {
      std::string p = "/" + t.name;
      if (!t.link.empty()) {
        plan_.symlinks.push_back({t.name, t.link});
        continue;
      }
      if (special(p) || (p == in_.tmp && tmp_private_)) continue;
      if (!read_all_ && !write_all_) continue;
      if (t.kind != HostKind::dir && t.kind != HostKind::file) {
        note(p + ": a " + std::string(to_string(t.kind)) + " at the top level, not shown");
        continue;
      }
      put(p, write_all_ ? Op::write : Op::read, t.kind, write_all_ ? "write" : "read");
    }
    if (!write_all_) {
      for (const auto& w : p_.write) add_listed(w, Op::write, "write");
    }
    if (!read_all_) {
      for (const auto& r : p_.read) add_listed(r, Op::read, "read");
    }
    // The workspace is the cwd: it must be there, at least readable, even
    // when it lives under the private /tmp.
    if (!visible(in_.workspace)) put(in_.workspace, Op::read, HostKind::dir, "workspace");
  }

  void add_listed(const std::string& path, Op op, const char* what) {
    HostPath h = fact(path);
    if (h.real == in_.tmp && tmp_private_) return;  // the private tmpfs
    if (special(h.real)) {
      if (h.real != "/proc" && h.real != "/dev" && h.real != "/sys")
        note(std::string(what) + " " + path + ": under /proc, /dev or /sys, which the sandbox " +
             "makes itself; not bound");
      return;
    }
    if (h.kind == HostKind::missing) {
      note(std::string(what) + " " + path + ": does not exist on the host; not mounted");
      return;
    }
    if (h.kind != HostKind::dir && h.kind != HostKind::file) {
      note(std::string(what) + " " + path + ": a " + std::string(to_string(h.kind)) +
           ", not bound");
      return;
    }
    put(h.real, op, h.kind, what);
  }

  // The read/write root covering p (the deepest), or nullptr.
  const Entry* root_of(const std::string& p, bool writable_only = false) const {
    const Entry* best = nullptr;
    for (const Entry& e : entries_) {
      if (e.op != Op::read && e.op != Op::write) continue;
      if (writable_only && e.op != Op::write) continue;
      if (!path_under(p, e.path)) continue;
      if (!best || path_depth(e.path) > path_depth(best->path)) best = &e;
    }
    return best;
  }

  bool visible(const std::string& p) const { return !special(p) && root_of(p) != nullptr; }

  // Nearest entry of any kind at or above p (for "is p under a deny").
  const Entry* covering(const std::string& p, std::initializer_list<Op> ops) const {
    const Entry* best = nullptr;
    for (const Entry& e : entries_) {
      if (std::find(ops.begin(), ops.end(), e.op) == ops.end()) continue;
      if (!path_under(p, e.path)) continue;
      if (!best || path_depth(e.path) > path_depth(best->path)) best = &e;
    }
    return best;
  }

  void add_hidden() {
    for (const auto& d : expanded(p_.deny)) {
      HostPath h = fact(d);
      if (h.kind == HostKind::missing) {
        note("deny " + d + ": does not exist on the host; nothing to hide");
      } else if (!visible(h.real)) {
        note("deny " + d + ": not visible inside; nothing to hide");
      } else {
        put(h.real, Op::deny, h.kind, "deny");
      }
    }
    if (p_.block_runtime_sockets) {
      std::vector<std::string> dirs;
      for (const auto& d : p_.runtime_socket_dirs) {
        HostPath h = fact(d);
        if (h.kind != HostKind::dir || !visible(h.real)) continue;
        put(h.real, Op::hide, HostKind::dir, "runtime socket dir");
        dirs.push_back(h.real);
      }
      for (const auto& s : p_.runtime_sockets) {
        HostPath h = fact(s);
        if (h.kind == HostKind::missing || !visible(h.real)) continue;
        if (std::any_of(dirs.begin(), dirs.end(),
                        [&](const std::string& d) { return path_under(h.real, d); }))
          continue;
        if (h.kind == HostKind::dir)
          put(h.real, Op::hide, HostKind::dir, "runtime socket dir");
        else
          put(h.real, Op::socket_file, h.kind, "runtime socket");
      }
    }
    if (devbox_) return;
    for (const auto& s : in_.hide) {
      HostPath h = fact(s);
      if (h.kind == HostKind::missing || !visible(h.real)) continue;
      if (h.kind == HostKind::dir)
        put(h.real, Op::hide, HostKind::dir, "runtime state");
      else
        put(h.real, Op::deny, h.kind, "runtime state");
    }
  }

  // The git rule (runtime/reporting/include/comet/reporting/create_rule.hpp):
  // wanted wherever the workspace's git files are protected and something
  // on the host is writable; on for the workspace's own .git when that is
  // a directory.
  bool git_rule_wanted() const {
    const bool writes_host = std::any_of(p_.write.begin(), p_.write.end(), [&](const auto& w) {
      return !(w == in_.tmp && tmp_private_);
    });
    return writes_host && contains(p_.protect_unless_dir, in_.workspace + "/.git");
  }
  bool git_rule_on() const {
    const HostPath g = fact(in_.workspace + "/.git");
    return git_rule_wanted() && g.kind == HostKind::dir && !g.symlink;
  }
  // OWN/rebase-merge, OWN/rebase-apply, OWN/sequencer of the own .git.
  bool is_git_state_dir(const std::string& real) const {
    const std::string own = fact(in_.workspace + "/.git").real;
    for (const char* n : {"/rebase-merge", "/rebase-apply", "/sequencer"})
      if (real == own + n) return true;
    return false;
  }

  // A symlink in a writable tree, on the way to a protected path: bound
  // onto itself (a mount point cannot be unlinked or renamed over), with
  // the directories between the writable root and it pinned.
  void pin_link(const std::string& link) {
    const Entry* w = root_of(link, /*writable_only=*/true);
    if (!w || link == w->path || special(link)) return;
    if (covering(link, {Op::deny, Op::hide, Op::socket_file})) return;
    const Entry* pr = covering(link, {Op::protect});
    if (pr && path_depth(pr->path) >= path_depth(w->path)) return;  // read-only already
    for (std::string a = link;;) {
      auto k = a.rfind('/');
      a = k == 0 ? "/" : a.substr(0, k);
      if (a == w->path || !path_under(a, w->path)) break;
      put(a, Op::pin, HostKind::dir, "pin");
    }
    put(link, Op::pin_link, HostKind::other, "pin link");
  }

  Status add_protected() {
    plan_.placeholders_shared = !git_rule_wanted();
    struct Item {
      std::string path;
      HostPath h;
      bool file = false;        // missing: a file placeholder
      bool unless_dir = false;  // {workspace}/.git
      std::string content;      // the file placeholder's
    };
    std::vector<Item> items;
    auto add = [&](const std::string& x, bool file, bool unless_dir, const std::string& content) {
      if (std::none_of(items.begin(), items.end(), [&](const Item& i) { return i.path == x; }))
        items.push_back({x, fact(x), file, unless_dir, content});
    };
    for (const auto& x : p_.protect) {
      // Only while another path is missing ({workspace}/HEAD without .git).
      if (auto c = p_.protect_if_missing.find(x); c != p_.protect_if_missing.end()) {
        const HostPath cond = fact(c->second);
        if (cond.kind != HostKind::missing || cond.symlink) continue;
      }
      const bool file = contains(p_.protect_files, x);
      std::string content;
      if (auto c = p_.placeholder_content.find(x); c != p_.placeholder_content.end())
        content = c->second;
      if (x.find('*') == std::string::npos) {
        add(x, file, contains(p_.protect_unless_dir, x), content);
      } else if (auto g = in_.globbed.find(x); g != in_.globbed.end()) {
        for (const auto& m : g->second) add(m, file, false, content);
      }
    }
    if (!devbox_) {
      for (const auto& x : in_.protect) add(x, false, false, "");
    }
    // Shallow first, so that a deeper path sees a protected parent.
    std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
      return path_depth(a.h.real) < path_depth(b.h.real);
    });
    for (const Item& it : items) {
      const std::string& real = it.h.real;
      // A symlink in a writable tree could be replaced by the workload,
      // wherever it points now. {workspace}/.git too (checked before the
      // directory rule below): `rm .git && git init` would replace it.
      if (it.h.symlink) {
        if (const Entry* lw = root_of(it.path, /*writable_only=*/true)) {
          return Error::msg("sandbox: cannot protect " + it.path + ": it is a symlink inside the " +
                            "writable " + lw->path + " (the workload could replace it)");
        }
      }
      // A symlinked parent or a hop of a chain (tools -> scripts, with
      // tools/fsmon.sh protected): protecting what it leads to now is not
      // enough when the link itself can be replaced.
      for (const auto& link : it.h.links)
        if (link != it.path) pin_link(link);
      // A .git directory stays writable (objects, refs, index); what in it
      // the host's git obeys is protected entry by entry.
      if (it.unless_dir && it.h.kind == HostKind::dir) continue;
      if (special(real)) continue;
      if (covering(real, {Op::deny, Op::hide, Op::socket_file})) continue;  // hidden already
      const Entry* w = root_of(real, /*writable_only=*/true);
      const Entry* pr = covering(real, {Op::protect});
      if (!w || (pr && path_depth(pr->path) >= path_depth(w->path))) continue;  // read-only already
      HostKind kind = it.h.kind;
      // A missing rebase or sequencer state directory in the workspace's
      // own .git: the git rule refuses making it (an empty placeholder
      // would tell git a rebase or cherry-pick is in progress).
      if (kind == HostKind::missing && git_rule_on() && is_git_state_dir(real)) continue;
      // Missing: the workload must not be able to create it. Where the git
      // rule runs, its init makes every new name and refuses this one (and
      // a symlink, file or rename on the way to it); else an empty
      // placeholder is made first and bound read-only.
      const bool refused = kind == HostKind::missing && git_rule_wanted();
      if (refused && std::any_of(plan_.refused_names.begin(), plan_.refused_names.end(),
                                 [&](const std::string& r) { return path_under(real, r); }))
        continue;  // below one already refused: nothing can be made there
      if (refused) {
        // nothing pinned either: the init refuses moving a directory on the
        // way to it, and making anything there but a new directory
        plan_.refused_names.push_back(real);
        continue;
      }
      if (kind == HostKind::missing) {
        plan_.placeholders.push_back({real, /*dir=*/!it.file, it.file ? it.content : ""});
        kind = it.file ? HostKind::file : HostKind::dir;
      }
      // Pin every directory between the writable root and the path: a
      // mount point cannot be renamed, so the path cannot be moved away and
      // replaced.
      std::string a = real;
      std::vector<std::string> pins;
      while (true) {
        auto k = a.rfind('/');
        a = k == 0 ? "/" : a.substr(0, k);
        if (a == w->path || !path_under(a, w->path)) break;
        pins.push_back(a);
      }
      for (const auto& pin : pins) put(pin, Op::pin, HostKind::dir, "pin");
      put(real, Op::protect, kind, "protect");
    }
    for (const auto& link : in_.pin_links) pin_link(link);
    return {};
  }

  // ResolvedProfile::pin: an existing directory inside a writable tree (not
  // a symlink, not already read-only or hidden) is bound onto itself.
  void add_pins() {
    for (const auto& x : p_.pin) {
      const HostPath h = fact(x);
      if (h.kind != HostKind::dir || h.symlink || special(h.real)) continue;
      if (covering(h.real, {Op::deny, Op::hide, Op::socket_file})) continue;
      const Entry* w = root_of(h.real, /*writable_only=*/true);
      const Entry* pr = covering(h.real, {Op::protect});
      if (!w || w->path == h.real || (pr && path_depth(pr->path) >= path_depth(w->path))) continue;
      put(h.real, Op::pin, HostKind::dir, "pin");
    }
  }

  // The unix-socket allowlist: a socket the view hides (under the private
  // /tmp, or below a hidden or denied directory) is bound back at its own
  // path, so that the rule's allowlist can be reached. A deny or hiding
  // mount of the socket's own path wins.
  void add_unix_sockets() {
    if (!p_.unix_socket_rule) return;
    for (const auto& s : p_.unix_sockets) {
      HostPath h = fact(s);
      if (h.kind != HostKind::socket) {
        note("unix_sockets " + s + ": " +
             (h.kind == HostKind::missing ? std::string("does not exist on the host")
                                          : "a " + std::string(to_string(h.kind))) +
             "; not bound");
        continue;
      }
      const Entry* hider = covering(h.real, {Op::deny, Op::hide, Op::socket_file});
      if (hider && hider->path == h.real) {
        note("unix_sockets " + s + ": hidden by " + hider->why + "; not bound");
        continue;
      }
      // Not visible: under the private /tmp, /dev, or outside strict's list.
      if (!hider && visible(h.real)) continue;
      put(h.real, Op::unix_socket, HostKind::socket, "unix socket");
    }
  }

  bool holds_unix_socket(const std::string& dir) const {
    return std::any_of(entries_.begin(), entries_.end(), [&](const Entry& e) {
      return e.op == Op::unix_socket && path_under(e.path, dir) && e.path != dir;
    });
  }

  // Writes and reads inside a protected or hidden tree, and reads inside a
  // writable one, add nothing: drop them.
  void drop_shadowed() {
    std::vector<Entry> kept;
    for (const Entry& e : entries_) {
      bool drop = false;
      for (const Entry& o : entries_) {
        if (&o == &e || !path_under(e.path, o.path) || o.path == e.path) continue;
        bool hides = o.op == Op::deny || o.op == Op::hide || o.op == Op::socket_file;
        if (hides && e.op != Op::unix_socket) drop = true;  // nothing shows through a hiding mount
        if (o.op == Op::protect &&
            (e.op == Op::write || e.op == Op::read || e.op == Op::pin || e.op == Op::pin_link))
          drop = true;
        if (o.op == Op::write && e.op == Op::read) drop = true;
        if (o.op == Op::read && e.op == Op::read) drop = true;
        if (o.op == Op::write && e.op == Op::write) drop = true;
      }
      if (drop && (e.op == Op::write || e.op == Op::protect || e.op == Op::deny))
        note(std::string(e.why) + " " + e.path + ": inside a tree that already decides it");
      if (!drop) kept.push_back(e);
    }
    entries_ = std::move(kept);
    std::sort(plan_.placeholders.begin(), plan_.placeholders.end(),
              [](const Placeholder& a, const Placeholder& b) {
                return path_depth(a.path) != path_depth(b.path)
                           ? path_depth(a.path) < path_depth(b.path)
                           : a.path < b.path;
              });
  }

  void build_spec() {
    oci::Spec& s = plan_.spec;
    s.oci_version = "1.2.0";
    oci::Root root;
    root.path = in_.root_dir;
    root.readonly = true;
    s.root = root;
    s.process = make_process();
    const std::vector<Entry> order = parents_first();
    s.mounts = make_mounts(order);
    s.linux_ = make_linux();
    s.annotations[std::string(kAnnotationPolicy)] = policy_to_json(make_policy(order));
    s.annotations[std::string(kAnnotationProfile)] = p_.name;
  }

  oci::Process make_process() const {
    oci::Process proc;
    proc.terminal = false;
    proc.user.uid = in_.uid;
    proc.user.gid = in_.gid;
    proc.args = in_.args;
    proc.env = sandbox_env(in_.env);
    proc.cwd = in_.workspace;
    proc.capabilities = oci::Capabilities{};  // every set present and empty
    proc.no_new_privileges = true;
    return proc;
  }

  // /proc, /dev, /dev/pts, /dev/shm, maybe /sys and a private /tmp.
  std::vector<oci::Mount> base_mounts() const {
    std::vector<oci::Mount> base;
    base.push_back(mount("/proc", "proc", "proc", {"nosuid", "noexec", "nodev"}));
    base.push_back(mount("/dev", "tmpfs", "tmpfs",
                         {"nosuid", "noexec", "strictatime", "mode=755", "size=65536k"}));
    base.push_back(mount("/dev/pts", "devpts", "devpts",
                         {"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"}));
    base.push_back(mount("/dev/shm", "tmpfs", "shm",
                         {"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}));
    if (read_all_ || contains(p_.read, "/sys"))
      base.push_back(mount("/sys", "sysfs", "sysfs", {"nosuid", "noexec", "nodev", "ro"}));
    if (tmp_private_) {
      std::vector<std::string> opts = {"nosuid", "nodev", "mode=1777", "size=50%"};
      if (p_.limits.tmp > 0) {
        // A size alone leaves inodes at half the RAM's pages: bound both.
        opts[3] = "size=" + std::to_string(p_.limits.tmp);
        opts.push_back("nr_inodes=" + std::to_string(std::max(1024LL, p_.limits.tmp / 4096)));
      }
      base.push_back(mount(in_.tmp, "tmpfs", "tmpfs", opts));
    }
    return base;
  }

  std::vector<Entry> parents_first() const {
    // Parents first; at one depth, by path (a stable config).
    std::vector<Entry> order = entries_;
    std::stable_sort(order.begin(), order.end(), [](const Entry& a, const Entry& b) {
      std::size_t da = path_depth(a.path), db = path_depth(b.path);
      return da != db ? da < db : a.path < b.path;
    });
    return order;
  }

  // The mount that makes an entry what its op says. An engine's runtime
  // socket or directory can go away between the plan and the mounts (its
  // daemon stopped): then there is nothing to hide ("x-comet.if-exists").
  oci::Mount entry_mount(const Entry& e) const {
    oci::Mount m = entry_mount_of(e);
    if (e.why == "runtime socket dir" || e.why == "runtime socket")
      m.options.push_back("x-comet.if-exists");
    return m;
  }

  oci::Mount entry_mount_of(const Entry& e) const {
    const std::vector<std::string> ro = {"rbind", "rro", "rnosuid", "rnodev"};
    switch (e.op) {
      case Op::read:
        if (overlay_view(e)) {
          std::vector<std::string> o = {"ro", "nosuid", "nodev",
                                        "lowerdir=" + overlay_top(e) + ":" + e.path,
                                        "x-comet.or-rbind"};
          for (const std::string& w : whiteouts(e)) o.push_back("x-comet.whiteout=" + w);
          return mount(e.path, "overlay", "overlay", o);
        }
        return mount(e.path, "bind", e.path, ro);
      case Op::protect:
        return mount(e.path, "bind", e.path, ro);
      // Writable binds: the source is opened following no symlink and bound
      // through that fd (x-comet.nofollow, child_mounts.cpp), so a path
      // swapped for a symlink after the plan fails the run (red team 12).
      case Op::write:
        return mount(e.path, "bind", e.path,
                     {"rbind", "rw", "rnosuid", "rnodev", "x-comet.nofollow"});
      case Op::pin:
        return mount(e.path, "bind", e.path, {"rbind", "rnosuid", "rnodev", "x-comet.nofollow"});
      case Op::pin_link:
        return mount(e.path, "bind", e.path, {"bind", "x-comet.link"});
      case Op::deny:
      case Op::hide:
        if (e.kind != HostKind::dir) {
          return mount(e.path, "bind", in_.deny_file, {"bind", "ro", "nosuid", "nodev", "noexec"});
        }
        if (holds_unix_socket(e.path)) {
          // The runtime creates the socket's mount point in it, so it
          // cannot be ro: no write bit instead (the workload holds no
          // capability), and search only where it was closed, so the
          // socket can be reached but nothing listed.
          return mount(
              e.path, "tmpfs", "tmpfs",
              {"nosuid", "nodev", "noexec", closed(e) ? "mode=111" : "mode=555", "size=4k"});
        }
        return mount(
            e.path, "tmpfs", "tmpfs",
            {"ro", "nosuid", "nodev", "noexec", closed(e) ? "mode=000" : "mode=755", "size=4k"});
      case Op::socket_file:
        return mount(e.path, "bind", in_.socket_file, {"bind", "ro", "nosuid", "nodev", "noexec"});
      case Op::unix_socket:
        // connect() needs write permission on the inode, not a rw mount.
        return mount(e.path, "bind", e.path, {"bind", "ro", "nosuid", "nodev", "noexec"});
    }
    return {};  // not reached: every op is handled above
  }

  // A read-only directory that holds a denied or hidden path is
  // shown through a read-only overlay of its own (an empty top layer over
  // the host's directory) instead of a bind. The masks are then mounted on
  // the overlay's dentries, which the host cannot rename over: bound on the
  // host's own dentries, a mask is detached by the kernel when the host
  // renames a file over its mount point (useradd replaces /etc/shadow so),
  // and the new file was readable inside for the rest of the run. Files the
  // host replaces later keep their content as of the run's first look;
  // files it adds appear. Only where the host has no mount beneath the
  // directory (an overlay does not show submounts) and the paths need no
  // escaping in the overlay's options.
  bool overlay_view(const Entry& e) const {
    if (e.kind != HostKind::dir || in_.empty_dir.empty() || e.path == "/") return false;
    for (const std::string* s : {&in_.empty_dir, &e.path})
      if (s->find_first_of(",:\\") != std::string::npos) return false;
    for (const std::string& m : in_.mount_points)
      if (m != e.path && path_under(m, e.path)) return false;
    return std::any_of(entries_.begin(), entries_.end(), [&](const Entry& x) {
      return (x.op == Op::deny || x.op == Op::hide || x.op == Op::socket_file) &&
             x.path != e.path && path_under(x.path, e.path);
    });
  }

  // An overlay view's top layer: a directory of its own in the skeleton
  // (its whiteouts are its own), numbered in the order of the entries.
  std::string overlay_top(const Entry& e) const {
    std::size_t k = 0;
    for (const Entry& x : entries_) {
      if (&x == &e || x.path == e.path) break;
      if (x.op == Op::read && overlay_view(x)) k++;
    }
    return in_.empty_dir + "/" + std::to_string(k);
  }

  // The names an overlay view hides whenever the host makes them: the
  // temporary and backup copies tools write beside a denied file (NAME+ by
  // shadow-utils' useradd, chage, passwd; nNAME by PAM's pam_unix; NAME-,
  // NAME~, NAME.new, NAME.tmp; NAME.edit by vipw -s, red team round 15;
  // NAME.bak, .old, .orig, .save; vim's .NAME.swp, .swx, .swo and the
  // .NAME.edit.swp of vipw's copy, emacs's #NAME#, NAME.~1~, and the
  // package managers' NAME.dpkg-old/-new/-dist, .rpmsave, .rpmnew: red team
  // round 16), so that the copy of /etc/shadow the host writes while the
  // sandbox runs is not readable there (red team round 14). Not a name
  // that is an entry itself (shadow- is denied by its own mask, on the name
  // the overlay must then show). A copy of a random name (mkstemp's) is not
  // covered.
  std::vector<std::string> whiteouts(const Entry& e) const {
    std::vector<std::string> out;
    for (const Entry& x : entries_) {
      if ((x.op != Op::deny && x.op != Op::hide) || x.kind == HostKind::dir) continue;
      if (x.path == e.path || !path_under(x.path, e.path)) continue;
      const std::size_t cut = x.path.rfind('/');
      const std::string base = x.path.substr(cut + 1);
      // relative to the overlay: its subdirectories are the top layer's too
      const std::string dir = x.path.substr(0, cut + 1).substr(e.path.size() + 1);
      for (const std::string& w :
           {base + "+",          "n" + base,          base + "-",
            base + "~",          base + ".new",       base + ".tmp",
            base + ".edit",      base + ".bak",       base + ".old",
            base + ".orig",      base + ".save",      "." + base + ".swp",
            "." + base + ".swx", "." + base + ".swo", "." + base + ".edit.swp",
            "#" + base + "#",    base + ".~1~",       base + ".dpkg-old",
            base + ".dpkg-new",  base + ".dpkg-dist", base + ".rpmsave",
            base + ".rpmnew"}) {
        const std::string at = e.path + "/" + dir + w;
        if (w.size() > 255 || std::any_of(entries_.begin(), entries_.end(),
                                          [&](const Entry& y) { return y.path == at; }))
          continue;
        if (std::find(out.begin(), out.end(), dir + w) == out.end()) out.push_back(dir + w);
      }
    }
    return out;
  }

  // A denied or hidden directory that nothing may search or list.
  static bool closed(const Entry& e) { return e.op == Op::deny || e.why == "runtime state"; }

  // The base mounts sit at depth 1 (and /dev/* at 2): merge by depth.
  std::vector<oci::Mount> make_mounts(const std::vector<Entry>& order) const {
    std::vector<oci::Mount> binds;
    for (const Entry& e : order) binds.push_back(entry_mount(e));
    std::vector<oci::Mount> all = base_mounts();
    all.insert(all.end(), binds.begin(), binds.end());
    std::stable_sort(all.begin(), all.end(), [](const oci::Mount& a, const oci::Mount& b) {
      return path_depth(a.destination) < path_depth(b.destination);
    });
    return all;
  }

  oci::Linux make_linux() const {
    oci::Linux l;
    for (const char* ns : {"pid", "ipc", "uts", "mount", "cgroup"}) {
      l.namespaces.push_back(oci::Namespace{ns, ""});
    }
    if (p_.network_restricted) {
      l.namespaces.push_back(oci::Namespace{"network", ""});
    } else if (!in_.host_netns.empty()) {
      l.namespaces.push_back(oci::Namespace{"network", in_.host_netns});
    }
    l.masked_paths = default_masked_paths();
    l.readonly_paths = default_readonly_paths();
    oci::Resources res;
    oci::DeviceCgroup deny_all;
    deny_all.allow = false;
    deny_all.access = "rwm";
    res.devices.push_back(deny_all);
    if (p_.limits.pids > 0) res.pids = oci::Pids{p_.limits.pids};
    if (p_.limits.memory > 0) {
      oci::Memory mem;
      mem.limit = p_.limits.memory;
      mem.swap = p_.limits.memory;  // memory+swap: no swap beyond the limit
      res.memory = mem;
    }
    l.resources = std::move(res);
    return l;
  }

  Policy make_policy(const std::vector<Entry>& order) const {
    Policy pol;
    pol.lockdown = !devbox_;
    pol.network = p_.network_restricted ? NetworkPolicy::none : NetworkPolicy::open;
    pol.profile = p_.name;

    // verified unreadable from inside before CMD runs (read-deny verification)
    // (not a denied directory an allowlisted socket is reached through: it
    // holds that socket's mount point)
    for (const Entry& e : order)
      if (e.op == Op::deny && !holds_unix_socket(e.path)) pol.deny.push_back(e.path);
    if (p_.unix_socket_rule) {
      std::vector<std::string> allow;
      for (const auto& u : p_.unix_sockets) {
        std::string real = fact(u).real;
        if (!contains(allow, real)) allow.push_back(real);
      }
      std::sort(allow.begin(), allow.end());
      pol.unix_allow = std::move(allow);
    }
    // The git rule: wherever the workspace's git files are protected, no
    // other repository may be made or written in (runtime/create_rule.hpp);
    // its own .git, a directory, keeps what the mounts leave writable.
    // Only where something on the host is writable (not read-only).
    const std::string git = in_.workspace + "/.git";
    if (git_rule_wanted()) {
      std::vector<std::string> own;
      if (fact(git).kind == HostKind::dir && !fact(git).symlink) own.push_back(fact(git).real);
      pol.git_own = std::move(own);
    }
    return pol;
  }

  const ResolvedProfile& p_;
  const SandboxInputs& in_;
  SandboxPlan plan_;
  std::vector<Entry> entries_;
  bool read_all_ = false, write_all_ = false, tmp_private_ = true, devbox_ = false;
};

const std::vector<std::string_view> kDangerousEnv = {
    // glibc's "unsecure" variables (what ld.so drops for setuid programs)
    "GCONV_PATH", "GETCONF_DIR", "HOSTALIASES", "LOCALDOMAIN", "LOCPATH", "MALLOC_TRACE",
    "NIS_PATH", "NLSPATH", "RESOLV_HOST_CONF", "RES_OPTIONS", "TZDIR",
    // shell start-up hooks
    "BASH_ENV", "ENV", "PROMPT_COMMAND", "SHELLOPTS", "BASHOPTS", "PS4",
    // sockets that reach the user's agents and container engines
    "SSH_AUTH_SOCK", "SSH_AGENT_PID", "GPG_AGENT_INFO", "DOCKER_HOST", "CONTAINER_HOST",
    "CONTAINERD_ADDRESS", "BUILDKIT_HOST",
    // ours
    "COMET_FAULT"};

}  // namespace

std::string_view to_string(HostKind k) {
  switch (k) {
    case HostKind::missing:
      return "missing";
    case HostKind::dir:
      return "directory";
    case HostKind::file:
      return "file";
    case HostKind::socket:
      return "socket";
    case HostKind::other:
      return "special file";
  }
  return "?";
}

bool dangerous_env(std::string_view key) {
  if (key.rfind("LD_", 0) == 0 || key.rfind("MALLOC_", 0) == 0 || key.rfind("BASH_FUNC_", 0) == 0 ||
      key.rfind("GLIBC_TUNABLES", 0) == 0)
    return true;
  return std::find(kDangerousEnv.begin(), kDangerousEnv.end(), key) != kDangerousEnv.end();
}

std::vector<std::string> sandbox_env(const std::vector<std::string>& env) {
  std::vector<std::string> out;
  for (auto it = env.rbegin(); it != env.rend(); ++it) {
    auto eq = it->find('=');
    if (eq == std::string::npos || eq == 0) continue;
    std::string key = it->substr(0, eq);
    if (dangerous_env(key)) continue;
    if (std::none_of(out.begin(), out.end(),
                     [&](const std::string& e) { return e.compare(0, eq + 1, key + "=") == 0; }))
      out.push_back(*it);
  }
  std::reverse(out.begin(), out.end());
  if (std::none_of(out.begin(), out.end(),
                   [](const std::string& e) { return e.rfind("PATH=", 0) == 0; }))
    out.insert(out.begin(), "PATH=" + std::string(kDefaultPath));
  return out;
}

Result<SandboxPlan> compile_profile(const ResolvedProfile& p, const SandboxInputs& in) {
  try {
    Planner planner(p, in);
    return planner.run();
  } catch (const std::exception& e) {
    return Error::msg(std::string("sandbox plan: ") + e.what());
  }
}

}  // namespace comet::capability
