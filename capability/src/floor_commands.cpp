// The floor's rules for single commands (floor_rules.hpp): what a command
// is once its prefixes (env, nice, timeout, sudo, xargs, ...) are unwrapped,
// and the rules that look at one command's words: rm -r, git push --force,
// chmod -R, dd of=, redirections into devices, mkfs, shutdown, downloads
// run as code, custom floor rules, git subcommands that write .git/config,
// and the fork bomb.
#include <fnmatch.h>
#include <cctype>

#include <algorithm>

#include "floor_rules.hpp"
#include "util.hpp"

namespace comet::capability::floor_rules {

using detail::path_under;
using detail::quote;

namespace {

// Options of a prefix command that take a value (as a separate word).
bool takes_value(const std::string& prog, const std::string& opt) {
  if (prog == "env") return one_of(opt, {"-u", "-C", "--unset", "--chdir"});
  if (prog == "nice") return one_of(opt, {"-n", "--adjustment"});
  if (prog == "timeout") return one_of(opt, {"-s", "-k", "--signal", "--kill-after"});
  if (prog == "stdbuf") return one_of(opt, {"-i", "-o", "-e"});
  if (prog == "ionice") return one_of(opt, {"-c", "-n", "-p", "-P", "-u"});
  if (prog == "xargs")
    return one_of(opt, {"-I", "-n", "-P", "-d", "-E", "-L", "-s", "-a", "--arg-file", "--delimiter",
                        "--max-args", "--max-procs", "--max-lines", "--replace"});
  if (prog == "sudo" || prog == "doas")
    return one_of(opt, {"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "--user", "--group",
                        "--chdir", "--host", "--prompt"});
  if (prog == "exec") return opt == "-a";
  if (prog == "setsid" || prog == "nohup" || prog == "time" || prog == "command") return false;
  return false;
}

bool inside_workspace(const Word& w, const std::optional<std::string>& cwd,
                      const AutoAllowContext& ctx, std::string* shown) {
  auto p = where(w, cwd, ctx);
  *shown = p ? *p : w.text;
  return p && !ctx.workspace.empty() && path_under(*p, ctx.workspace);
}

// Short options of a cluster like -rf, or a long option.
bool has_short(const std::string& a, char c) {
  return a.size() >= 2 && a[0] == '-' && a[1] != '-' && a.find(c) != std::string::npos;
}

bool harmless_dev(const std::string& p) {
  return one_of(p, {"/dev/null", "/dev/zero", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/full",
                    "/dev/random", "/dev/urandom"}) ||
         p.rfind("/dev/fd/", 0) == 0 || p.rfind("/dev/pts/", 0) == 0 ||
         p.rfind("/dev/shm/", 0) == 0;
}

bool block_dev(const std::string& p) {
  if (p.rfind("/dev/", 0) != 0) return false;
  std::string n = p.substr(5);
  for (const char* pre : {"sd", "hd", "vd", "xvd", "nvme", "mmcblk", "loop", "dm-", "md", "mapper/",
                          "disk/", "sr", "nbd", "zd", "rbd", "mtd", "mem", "kmem", "port"}) {
    if (n.rfind(pre, 0) == 0) return true;
  }
  return false;
}

bool mentions_downloader(const Script& sc);

bool simple_downloads(const Simple& s) {
  Unwrapped u = unwrap(s.words);
  if (!u.argv.empty() && is_downloader(base_name(u.argv[0].text))) return true;
  for (const Word& w : s.words) {
    for (const std::string& sub : w.subs) {
      try {
        if (mentions_downloader(parse_script(sub, 1))) return true;
      } catch (const ParseError&) {
        return true;  // unreadable: assume the worst
      }
    }
  }
  return false;
}

bool mentions_downloader(const Script& sc) {
  for (const Pipeline& p : sc.pipelines) {
    for (const Stage& st : p.stages) {
      if (stage_downloads(st)) return true;
    }
  }
  return false;
}

bool fnmatch_word(const std::string& pattern, const std::string& s) {
  return ::fnmatch(pattern.c_str(), s.c_str(), 0) == 0;
}

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

bool is_name_char(char c) {
  return !is_space(c) && std::string_view("(){};|&").find(c) == std::string_view::npos;
}

}  // namespace

// NAME=VALUE, NAME+=VALUE, NAME[SUBSCRIPT]=VALUE, as the shell sees it
// before a command (red team round 12: `BASH_ALIASES[ls]=...` was read as a
// command named so, and `GIT_DIR+=x` too).
bool is_assignment(const Word& w) {
  if (w.text.empty() || w.tilde) return false;
  std::size_t i = 0;
  for (; i < w.text.size(); ++i) {
    const char c = w.text[i];
    const bool ok = c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                    (i > 0 && c >= '0' && c <= '9');
    if (!ok) break;
  }
  if (i == 0 || i == w.text.size()) return false;
  if (w.text[i] == '[') {
    const std::size_t close = w.text.find(']', i);
    if (close == std::string::npos) return false;
    i = close + 1;
  }
  if (i < w.text.size() && w.text[i] == '+') ++i;
  return i < w.text.size() && w.text[i] == '=';
}

std::string assigned_name(const std::string& text) {
  return text.substr(0, text.find_first_of("[+="));
}

// --- command names ------------------------------------------------------------

std::string base_name(const std::string& p) {
  auto k = p.rfind('/');
  return k == std::string::npos ? p : p.substr(k + 1);
}

bool one_of(const std::string& s, std::initializer_list<const char*> names) {
  return std::any_of(names.begin(), names.end(), [&](const char* n) { return s == n; });
}

bool is_shell(const std::string& n) {
  return one_of(n, {"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "csh", "tcsh",
                    "busybox-sh", "rbash"});
}

bool is_interpreter(const std::string& n) {
  if (is_shell(n)) return true;
  if (one_of(n, {"python", "python2", "python3", "perl", "ruby", "node", "nodejs", "php", "lua",
                 "deno", "bun", "pwsh", "tclsh"}))
    return true;
  return n.rfind("python3.", 0) == 0 || n.rfind("python2.", 0) == 0;
}

bool is_downloader(const std::string& n) {
  return one_of(n,
                {"curl", "wget", "fetch", "aria2c", "http", "https", "xh", "lwp-request", "GET"});
}

// --- prefixes -----------------------------------------------------------------

Unwrapped unwrap(std::vector<Word> argv) {
  Unwrapped u;
  for (int guard = 0; guard < 32; ++guard) {
    std::size_t i = 0;
    for (; i < argv.size() && is_assignment(argv[i]); ++i) {
      u.env_names.push_back(assigned_name(argv[i].text));
      u.env.push_back(argv[i]);
    }
    argv.erase(argv.begin(), argv.begin() + static_cast<long>(i));
    if (argv.empty()) break;
    // A compound command's reserved word before a command (`if git push
    // -f; then`, `then rm -rf /`, `do ...`, `! cmd`, `coproc cmd`): the
    // command after it runs (red team round 8: `if true; then git push -f;
    // fi` was auto-allowed). The reader gives such a list as simple
    // commands whose first word is the reserved word.
    if (!argv[0].quoted && !argv[0].expansion &&
        one_of(argv[0].text,
               {"if", "then", "elif", "else", "do", "while", "until", "!", "coproc"})) {
      argv.erase(argv.begin());
      continue;
    }
    const std::string prog = base_name(argv[0].text);
    if (prog == "busybox" && argv.size() > 1 && argv[1].text[0] != '-') {
      argv.erase(argv.begin());
      continue;
    }
    const bool prefix = one_of(prog, {"env", "nice", "nohup", "time", "timeout", "stdbuf", "ionice",
                                      "command", "exec", "builtin", "nocache", "chronic",
                                      "unbuffer", "setsid", "xargs", "sudo", "doas", "caffeinate"});
    if (!prefix) break;
    if (prog == "command" && argv.size() > 1 && one_of(argv[1].text, {"-v", "-V"})) break;
    if (prog == "sudo" || prog == "doas") u.via_sudo = true;
    if (prog == "xargs") u.args_unknown = true;
    std::size_t k = 1;
    while (k < argv.size()) {
      const std::string& a = argv[k].text;
      if (a == "--") {
        ++k;
        break;
      }
      if (a.size() < 2 || a[0] != '-') break;
      if (prog == "env" && (a == "-S" || a.rfind("--split-string", 0) == 0 ||
                            (a.rfind("-S", 0) == 0 && a.size() > 2))) {
        // env -S "cmd args": the string is split into words.
        std::string str;
        std::size_t next = k + 1;
        if (a == "-S" || a == "--split-string") {
          if (k + 1 < argv.size()) str = argv[k + 1].text;
          next = k + 2;
        } else {
          str = a.substr(a.find('=') != std::string::npos ? a.find('=') + 1 : 2);
        }
        std::vector<Word> split;
        std::string cur;
        for (char c : str + " ") {
          if (c == ' ' || c == '\t') {
            if (!cur.empty()) {
              Word nw;
              nw.text = cur;
              split.push_back(std::move(nw));
            }
            cur.clear();
          } else {
            cur += c;
          }
        }
        split.insert(split.end(), argv.begin() + static_cast<long>(std::min(next, argv.size())),
                     argv.end());
        argv = std::move(split);
        k = 0;
        break;
      }
      if (prog == "env" && (a == "-C" || a.rfind("--chdir", 0) == 0)) u.cwd_unknown = true;
      bool value = takes_value(prog, a) && a.find('=') == std::string::npos;
      k += value ? 2 : 1;
    }
    if (prog == "timeout" && k < argv.size()) ++k;  // the duration
    if (prog == "env") {
      for (; k < argv.size() && is_assignment(argv[k]); ++k) {
        u.env_names.push_back(assigned_name(argv[k].text));
        u.env.push_back(argv[k]);
      }
    }
    if (k == 0) continue;  // env -S rewrote argv
    argv.erase(argv.begin(), argv.begin() + static_cast<long>(std::min(k, argv.size())));
  }
  u.argv = std::move(argv);
  return u;
}

std::optional<std::string> where(const Word& w, const std::optional<std::string>& cwd,
                                 const AutoAllowContext& ctx) {
  if (w.expansion) return std::nullopt;
  std::string t = w.text;
  if (w.tilde) {
    if (ctx.home.empty()) return std::nullopt;
    if (t == "~" || t.rfind("~/", 0) == 0) {
      t = ctx.home + t.substr(1);
    } else {
      return std::nullopt;  // ~user
    }
  }
  if (!t.empty() && t[0] == '/') return detail::normalize_path(t);
  if (!cwd) return std::nullopt;
  return detail::normalize_path(t, *cwd);
}

// --- the rules ----------------------------------------------------------------

void rule_rm(Analysis& an, const Unwrapped& u, const std::optional<std::string>& cwd) {
  const auto& v = u.argv;
  bool recursive = false, no_preserve = false, opts = true;
  std::vector<const Word*> targets;
  for (std::size_t i = 1; i < v.size(); ++i) {
    const std::string& a = v[i].text;
    if (opts && a == "--") {
      opts = false;
      continue;
    }
    if (opts && a.size() > 1 && a[0] == '-' && !v[i].expansion) {
      if (a == "--recursive" || has_short(a, 'r') || has_short(a, 'R')) recursive = true;
      if (a == "--no-preserve-root") no_preserve = true;
      continue;
    }
    targets.push_back(&v[i]);
  }
  if (!recursive) return;
  if (an.recursive_rm.empty()) an.recursive_rm = "rm -r";
  if (no_preserve) {
    an.hit("rm-rf-outside-workspace", "rm --no-preserve-root");
    return;
  }
  if (u.args_unknown) {
    an.hit("rm-rf-outside-workspace", "rm -r of paths read from stdin (xargs)");
    return;
  }
  for (const Word* t : targets) {
    std::string shown;
    if (!inside_workspace(*t, cwd, an.ctx, &shown)) {
      an.hit(
          "rm-rf-outside-workspace",
          "rm -r of " + quote(shown) + ", which is not inside the workspace " + an.ctx.workspace);
      return;
    }
  }
}

void rule_chmod(Analysis& an, const Unwrapped& u, const std::optional<std::string>& cwd) {
  const auto& v = u.argv;
  const std::string prog = base_name(v[0].text);
  bool recursive = false, opts = true, reference = false;
  std::vector<const Word*> pos;
  for (std::size_t i = 1; i < v.size(); ++i) {
    const std::string& a = v[i].text;
    if (opts && a == "--") {
      opts = false;
      continue;
    }
    if (opts && a.rfind("--", 0) == 0) {
      if (a == "--recursive") recursive = true;
      if (a.rfind("--reference", 0) == 0) reference = true;
      continue;
    }
    // chmod's modes may start with '-' (chmod -w f): only clusters of its
    // option letters are options.
    if (opts && a.size() > 1 && a[0] == '-' &&
        a.find_first_not_of("RcfvhHLP", 1) == std::string::npos) {
      if (a.find('R') != std::string::npos) recursive = true;
      continue;
    }
    pos.push_back(&v[i]);
  }
  if (!recursive) return;
  std::size_t first = reference ? 0 : 1;  // the mode / owner
  if (u.args_unknown) {
    an.hit("chmod-recursive-outside-workspace", prog + " -R of paths read from stdin (xargs)");
    return;
  }
  for (std::size_t i = first; i < pos.size(); ++i) {
    std::string shown;
    if (!inside_workspace(*pos[i], cwd, an.ctx, &shown)) {
      an.hit("chmod-recursive-outside-workspace", prog + " -R on " + quote(shown) +
                                                      ", which is not inside the workspace " +
                                                      an.ctx.workspace);
      return;
    }
  }
}

void rule_dd(Analysis& an, const Unwrapped& u) {
  for (std::size_t i = 1; i < u.argv.size(); ++i) {
    const Word& w = u.argv[i];
    if (w.text.rfind("of=", 0) != 0) continue;
    std::string target = w.text.substr(3);
    if (w.expansion) {
      an.hit("dd-to-device", "dd " + w.text + " writes to a path that is not known");
      return;
    }
    std::string norm = detail::normalize_path(target, "/");
    if (!target.empty() && target[0] == '/' && norm.rfind("/dev/", 0) == 0 && !harmless_dev(norm)) {
      an.hit("dd-to-device", "dd of=" + norm + " writes to a device");
      return;
    }
  }
}

void rule_redirects(Analysis& an, const Simple& s) {
  for (const Redirect& r : s.redirects) {
    if (r.op.find('>') == std::string::npos) continue;
    if (r.target.expansion) continue;
    std::string norm = detail::normalize_path(r.target.text, "/");
    if (!r.target.text.empty() && r.target.text[0] == '/' && block_dev(norm)) {
      an.hit("dd-to-device", "a redirection (" + r.op + ") writes to the device " + norm);
      return;
    }
  }
}

bool is_mkfs(const std::string& n) {
  return n == "mkfs" || n.rfind("mkfs.", 0) == 0 ||
         one_of(n, {"mke2fs", "mkswap", "wipefs", "fdisk", "sfdisk", "cfdisk", "parted", "sgdisk",
                    "gdisk", "blkdiscard", "mkntfs", "mkdosfs", "mkexfatfs", "mkfatfs"});
}

namespace {

// The tools remote_destroy() reads, by kind: the cloud, cluster and forge
// command lines (their verbs are read), HTTP clients (their method),
// package managers (unpublish; their uninstall is local), container
// engines (against a remote host) and database clients (their statement).
// (also under their package's or container image's name, a tag or digest
// dropped: `uvx awscli`, `docker run amazon/aws-cli:2 s3 rb`: red team 25)
bool verb_tool(const std::string& name) {
  const std::string n = name.substr(0, name.find_first_of(":@"));
  return one_of(n, {"kubectl",    "oc",        "kubecolor",
                    "helm",       "terraform", "tofu",
                    "terragrunt", "pulumi",    "gh",
                    "glab",       "aws",       "gcloud",
                    "az",         "doctl",     "flyctl",
                    "fly",        "heroku",    "hub",
                    "gsutil",     "rclone",    "s3cmd",
                    "mc",         "firebase",  "awscli",
                    "aws-cli",    "cloud-sdk", "google-cloud-cli",
                    "azure-cli"});
}
bool web_tool(const std::string& n) {
  return one_of(n, {"curl", "wget", "http", "https", "xh", "xhs"});
}
bool package_manager(const std::string& n) {
  return one_of(n, {"npm", "pnpm", "yarn"});
}
bool container_engine(const std::string& n) {
  return one_of(n, {"docker", "podman", "nerdctl"});
}
bool database_client(const std::string& n) {
  return one_of(n, {"psql", "mysql", "mariadb", "redis-cli", "mongosh", "mongo", "cqlsh",
                    "clickhouse-client", "sqlcmd", "mysqladmin"});
}

}  // namespace

bool is_remote_tool(const std::string& n) {
  return verb_tool(n) || web_tool(n) || package_manager(n) || container_engine(n) ||
         database_client(n) || one_of(n, {"rsync", "dropdb", "dropuser"});
}

namespace {

// An HTTP method that deletes or replaces.
bool mutating_method(std::string m) {
  for (char& ch : m) ch = static_cast<char>(ch >= 'a' && ch <= 'z' ? ch - 32 : ch);
  return m == "DELETE" || m == "PUT" || m == "PATCH";
}

// The method a curl, wget, gh/glab api or httpie/xh command line sends, as
// written ("" for none given), or "?" when it is not known (an expansion).
// Short options cluster (`curl -sXDELETE`, `-fsSLX DELETE`, `gh api
// -iX DELETE`); wget takes a long option's unambiguous prefix (`--meth=`);
// httpie and xh take the method as their first operand (red team 24).
std::string http_method(const std::string& n, const std::vector<Word>& v, std::size_t from) {
  const bool httpie = one_of(n, {"http", "https", "xh", "xhs"});
  for (std::size_t i = from; i < v.size(); ++i) {
    const std::string& a = v[i].text;
    auto value = [&](std::string m, const Word& src) {
      return src.expansion || src.glob || src.brace ? std::string("?") : m;
    };
    if (a.rfind("--", 0) == 0) {
      const std::size_t eq = a.find('=');
      const std::string name = a.substr(2, eq == std::string::npos ? eq : eq - 2);
      const bool is_method =
          name == "request" || name == "method" ||
          (n == "wget" && name.size() >= 3 && std::string("method").rfind(name, 0) == 0);
      if (!is_method) continue;
      if (eq != std::string::npos) return value(a.substr(eq + 1), v[i]);
      if (i + 1 < v.size()) return value(v[i + 1].text, v[i + 1]);
      continue;
    }
    if (a.size() > 1 && a[0] == '-' && !httpie) {
      const std::size_t x = a.find('X');
      if (x == std::string::npos) continue;
      if (x + 1 < a.size()) return value(a.substr(x + 1), v[i]);
      if (i + 1 < v.size()) return value(v[i + 1].text, v[i + 1]);
      continue;
    }
    if (httpie && !a.empty() && a[0] != '-') {
      if (v[i].expansion || v[i].glob || v[i].brace) return "?";
      if (a.find_first_of("/:.=@") == std::string::npos) return a;  // METHOD before the URL
      return {};
    }
  }
  return {};
}

}  // namespace

std::string remote_destroy(const Unwrapped& u) {
  const std::string n = base_name(u.argv[0].text);
  if (!is_remote_tool(n)) return {};
  std::vector<std::string> w, opts;  // operands and options, in order
  for (std::size_t i = 1; i < u.argv.size(); ++i) {
    const std::string& a = u.argv[i].text;
    (a.size() > 1 && a[0] == '-' ? opts : w).push_back(a);
  }
  auto word = [&](std::initializer_list<const char*> xs) {
    for (const auto& a : w)
      for (const char* x : xs)
        if (a == x) return true;
    return false;
  };
  auto opt = [&](std::initializer_list<const char*> xs) {
    for (const auto& a : opts)
      for (const char* x : xs)
        if (a == x || a.rfind(std::string(x) + "=", 0) == 0) return true;
    return false;
  };
  // A short option cluster holding LETTER (`gsutil rsync -rd`).
  auto short_opt = [&](char letter) {
    for (const auto& a : opts)
      if (a.size() > 1 && a[1] != '-' && a.find(letter, 1) != std::string::npos) return true;
    return false;
  };
  const bool web = web_tool(n);
  // The verbs of the tools the rule knows (red team round 24: a list of
  // each tool's own spellings is never complete): an operand that is a
  // verb that deletes, or starts as one (delete-asset, delete-batch,
  // remove-iam-policy-binding), or that an expansion, a glob or a brace
  // hides (`kubectl d[e]lete`, `set -- delete; kubectl "$@"`) among the
  // first three; a deleting verb anywhere (red team round 25: `gcloud
  // beta compute instances delete`, option values before the verb).
  if (verb_tool(n)) {
    std::size_t seen = 0;
    for (std::size_t i = 1; i < u.argv.size(); ++i) {
      const Word& a = u.argv[i];
      if (a.text.size() > 1 && a.text[0] == '-') continue;
      ++seen;
      if ((a.expansion || a.glob || a.brace) && seen <= 3)
        return n + " " + a.text + ": a verb the command line does not spell out";
      const std::string& t = a.text;
      for (const char* verb : {"delete", "remove", "destroy", "terminate", "purge", "uninstall",
                               "unpublish", "deprecate", "drain", "wipe", "erase", "drop"})
        if (t.rfind(verb, 0) == 0) return n + " " + t + " deletes what lives elsewhere";
      if (one_of(t, {"rm", "del", "rb", "rmdir", "rmdirs", "deletefile", "cleanup", "prune",
                     "removebucket", "deletebucket"}))
        return n + " " + t + " deletes what lives elsewhere";
      if (n == "doctl" && one_of(t, {"d", "rm"})) return "doctl " + t + " deletes cloud resources";
    }
  }
  // Red team round 25: the same through other tools.
  if (one_of(n, {"dropdb", "dropuser"})) return n + " deletes a database server's data";
  if (n == "rsync" && [&] {
        bool del = false;
        for (const auto& o : opts)
          del = del || o.rfind("--delete", 0) == 0 || o == "--del" ||
                o == "--remove-source-files";  // (the source, when it is remote)
        // the destination (the last operand) on another host: HOST:PATH, rsync://
        auto remote = [](const std::string& p) {
          return p.find("::") != std::string::npos || p.rfind("rsync://", 0) == 0 ||
                 (p.find(':') != std::string::npos && p[0] != '/' && p.find(':') < p.find('/'));
        };
        return del && !w.empty() && std::any_of(w.begin(), w.end(), remote);
      }())
    return "rsync --delete deletes files on another host";
  if (one_of(n, {"kubectl", "oc", "kubecolor"}) && word({"scale"}))
    for (std::size_t i = 1; i < u.argv.size(); ++i)
      if (auto zero =
              [](const std::string& v) {
                return !v.empty() && v.find_first_not_of('0') == std::string::npos;
              };
          (u.argv[i].text.rfind("--replicas=", 0) == 0 && zero(u.argv[i].text.substr(11))) ||
          (u.argv[i].text == "--replicas" && i + 1 < u.argv.size() && zero(u.argv[i + 1].text)))
        return n + " scale --replicas=0 stops a workload";
  if (one_of(n, {"terraform", "tofu", "terragrunt"}) && word({"apply"}) &&
      (opt({"-auto-approve", "--auto-approve"}) ||
       w.size() > static_cast<std::size_t>(std::count(w.begin(), w.end(), "apply"))))
    return n + " apply -auto-approve changes infrastructure without a plan's review";
  if (n == "pulumi" && word({"up", "update"}) && opt({"--yes", "-y", "-f", "--skip-preview"}))
    return "pulumi up --yes changes infrastructure without a preview's review";
  if (n == "curl")
    for (const auto& o : opts)
      if (o == "--upload-file" || o.rfind("--upload-file=", 0) == 0 ||
          (o[1] != '-' && o.find('T') != std::string::npos))
        return "curl -T uploads (a PUT) and replaces what a server holds";
  if (container_engine(n)) {
    bool remote = std::any_of(u.env_names.begin(), u.env_names.end(), [](const std::string& e) {
      return e == "DOCKER_HOST" || e == "DOCKER_CONTEXT" || e == "CONTAINER_HOST" ||
             e == "CONTAINER_CONNECTION";
    });
    for (std::size_t i = 1; i < u.argv.size(); ++i) {
      const std::string& o = u.argv[i].text;
      remote = remote || o == "-H" || o.rfind("-H", 0) == 0 || o.rfind("--host", 0) == 0 ||
               o.rfind("--url", 0) == 0 || o.rfind("--connection", 0) == 0 || o == "--remote" ||
               o == "-c" || o.rfind("--context", 0) == 0 || o == "-r";
    }
    if (remote && word({"rm", "rmi", "kill", "stop", "prune", "down", "remove", "delete"}))
      return n + " on another host deletes or stops what runs there";
  }
  if (database_client(n))
    for (std::size_t i = 1; i < u.argv.size(); ++i) {
      std::string t;
      // lower case, SQL's comments and runs of blanks read as one blank
      // (`drop/**/table`: red team round 27)
      const std::string& raw = u.argv[i].text;
      for (std::size_t k = 0; k < raw.size(); ++k) {
        if (raw.compare(k, 2, "/*") == 0) {
          const std::size_t e = raw.find("*/", k + 2);
          k = e == std::string::npos ? raw.size() : e + 1;
          t += ' ';
          continue;
        }
        const char ch = static_cast<char>(std::tolower(static_cast<unsigned char>(raw[k])));
        const bool blank = ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
        if (!blank)
          t += ch;
        else if (t.empty() || t.back() != ' ')
          t += ' ';
      }
      for (const char* k :
           {"drop ", "drop\t", "truncate", "delete ", "delete\t", "flushall", "flushdb",
            "dropdatabase", "deletemany", "deleteone", ".drop(", ".remove("})
        if (t.find(k) != std::string::npos)
          return n + " runs a statement that deletes data (" + u.argv[i].text.substr(0, 40) + ")";
      if (n == "mysqladmin" && one_of(t, {"drop", "shutdown"}))
        return "mysqladmin " + t + " deletes or stops a database";
      if (n == "redis-cli" && one_of(t, {"del", "unlink", "flushall", "flushdb", "shutdown"}))
        return "redis-cli " + t + " deletes data";
    }
  if (package_manager(n) && word({"unpublish", "deprecate"}))
    return n + " unpublishes a package from the registry";
  if (one_of(n, {"kubectl", "oc", "kubecolor"}) && word({"exec"}))
    return n + " exec runs a command inside the cluster's containers";
  if (web || (one_of(n, {"gh", "glab"}) && word({"api"}))) {
    const std::string m = http_method(n, u.argv, 1);
    if (m == "?" || mutating_method(m))
      return n + " " + (m == "?" ? std::string("with a method not spelled out") : m) +
             " changes or deletes what a server holds";
  }
  if (one_of(n, {"gh", "glab"}) && word({"api"}) && word({"graphql"}))
    return n + " api graphql can change or delete anything the forge holds";
  // storage tools whose move or sync deletes at the source or destination
  if (one_of(n, {"gsutil", "rclone", "s3cmd", "mc"}) &&
      word({"mv", "move", "moveto", "rename", "ren", "sync", "bisync", "mirror"}))
    return n + " moves or syncs, deleting remote files";
  if (n == "gsutil" && word({"rsync"}) && short_opt('d'))
    return "gsutil rsync -d deletes cloud storage";
  if (n == "gcloud" && word({"storage"}) &&
      (word({"mv"}) || opt({"--delete-unmatched-destination-objects"})))
    return "gcloud storage deletes cloud storage";
  if (n == "s3cmd" && opt({"--delete-removed"})) return "s3cmd deletes cloud storage";
  if (one_of(n, {"terraform", "tofu", "terragrunt"}) &&
      (word({"destroy"}) || (word({"apply", "plan"}) && opt({"-destroy", "--destroy"})) ||
       (word({"state"}) && word({"rm"}))))
    return n + " destroys infrastructure";
  if (n == "pulumi" && (word({"down"}) || (word({"stack"}) && word({"rm"}))))
    return "pulumi destroys a stack's resources";
  if (n == "gh" && word({"sync"}) && opt({"--force"}))
    return "gh repo sync --force hard-resets the remote branch";
  if (n == "aws") {
    bool s3 = word({"s3"});
    for (const auto& a : w)
      if (a.find("delete") != std::string::npos || a.rfind("terminate-", 0) == 0 ||
          a == "send-command" || a == "start-session" ||
          (s3 && (a == "rb" || a == "rm" || a == "mv" || (a == "sync" && opt({"--delete"})))))
        return "aws " + a + " deletes cloud resources";
  }
  if (one_of(n, {"kubectl", "oc"}) &&
      ((word({"apply"}) && opt({"--prune"})) || (word({"replace"}) && opt({"--force"}))))
    return n + " --prune / replace --force deletes a cluster's objects";
  if (n == "heroku" || n == "firebase")
    for (const auto& a : w)
      if (a.find(":destroy") != std::string::npos || a.find(":delete") != std::string::npos ||
          a.find(":remove") != std::string::npos || a.find(":reset") != std::string::npos)
        return n + " " + a + " deletes an app or its data";
  return {};
}

bool is_shutdown(const Unwrapped& u) {
  const std::string n = base_name(u.argv[0].text);
  if (one_of(n, {"shutdown", "reboot", "halt", "poweroff", "telinit"})) return true;
  if (n == "init" && u.argv.size() > 1 && one_of(u.argv[1].text, {"0", "6", "1", "s", "S"}))
    return true;
  if (n == "systemctl") {
    for (std::size_t i = 1; i < u.argv.size(); ++i) {
      // `systemctl start poweroff.target`, `isolate reboot.target` too
      // (red team round 10).
      std::string a = u.argv[i].text;
      if (a.size() > 7 && a.compare(a.size() - 7, 7, ".target") == 0) a.resize(a.size() - 7);
      if (one_of(a, {"poweroff", "reboot", "halt", "kexec", "suspend", "hibernate", "hybrid-sleep",
                     "soft-reboot", "rescue", "emergency", "suspend-then-hibernate", "ctrl-alt-del",
                     "shutdown", "sleep"}))
        return true;
    }
  }
  return false;
}

bool runs_stdin(const Unwrapped& u) {
  if (u.argv.empty()) return false;
  const std::string n = base_name(u.argv[0].text);
  if (!is_interpreter(n)) return false;
  for (std::size_t i = 1; i < u.argv.size(); ++i) {
    const std::string& a = u.argv[i].text;
    if (a == "-" || a == "-s") return true;
    if (a == "--") return i + 1 >= u.argv.size() || u.argv[i + 1].text == "-";
    if (a.size() > 1 && a[0] == '-') {
      // Inline code: sh -c, python3 -c / -m, perl -e / -E, node -e / -p.
      if (a[1] != '-' && a.find_first_of("cmeEp", 1) != std::string::npos) return false;
      if (a == "--eval" || a == "--command" || a == "--print") return false;
      continue;
    }
    return false;  // a script file: stdin is its data
  }
  return true;
}

bool stage_downloads(const Stage& st) {
  for (const Simple& s : st.simples) {
    if (simple_downloads(s)) return true;
  }
  for (const Script& g : st.groups) {
    if (mentions_downloader(g)) return true;
  }
  return false;
}

bool words_download(const std::vector<Word>& words, std::size_t from) {
  for (std::size_t i = from; i < words.size(); ++i) {
    for (const std::string& sub : words[i].subs) {
      try {
        if (mentions_downloader(parse_script(sub, 1))) return true;
      } catch (const ParseError&) {
        return true;
      }
    }
  }
  return false;
}

void rule_custom(Analysis& an, const Unwrapped& u) {
  for (const FloorRule& r : an.floor.custom) {
    if (r.command.size() > u.argv.size()) continue;
    const std::string& a0 = u.argv[0].text;
    if (!fnmatch_word(r.command[0], a0) && !fnmatch_word(r.command[0], base_name(a0))) continue;
    bool all = true;
    for (std::size_t i = 1; i < r.command.size() && all; ++i) {
      all = fnmatch_word(r.command[i], u.argv[i].text);
    }
    if (all && !an.match) {
      std::string shown = detail::join(r.command, " ");
      an.match =
          Match{r.id, r.reason.empty() ? "matches the floor rule \"" + shown + "\" (" + r.file + ")"
                                       : r.reason};
      return;
    }
  }
}

// git subcommands that write .git/config (or install hooks).
void rule_git_config(Analysis& an, const Unwrapped& u) {
  const auto& v = u.argv;
  std::size_t i = 1;
  while (i < v.size() && v[i].text.size() > 1 && v[i].text[0] == '-') {
    i += one_of(v[i].text, {"-C", "-c", "--git-dir", "--work-tree", "--namespace"}) ? 2 : 1;
  }
  if (i >= v.size()) return;
  const std::string sub = v[i].text;
  std::vector<std::string> rest;
  for (std::size_t k = i + 1; k < v.size(); ++k) rest.push_back(v[k].text);
  auto any = [&](std::initializer_list<const char*> names) {
    return std::any_of(rest.begin(), rest.end(), [&](const std::string& a) {
      return std::any_of(names.begin(), names.end(), [&](const char* n) {
        const std::string s = n;
        return a == s || (s.rfind("--", 0) == 0 && a.rfind(s + "=", 0) == 0);
      });
    });
  };
  auto first_arg = [&]() -> std::string {
    for (const auto& a : rest)
      if (a.empty() || a[0] != '-') return a;
    return "";
  };
  std::string why;
  if (sub == "config") {
    const std::string verb = first_arg();
    const bool get = any({"--get", "--get-all", "--get-regexp", "--get-urlmatch", "-l", "--list",
                          "--get-color", "--get-colorbool"}) ||
                     one_of(verb, {"get", "list"});
    const bool write = any({"--add", "--replace-all", "--unset", "--unset-all", "--rename-section",
                            "--remove-section", "-e", "--edit"}) ||
                       one_of(verb, {"set", "unset", "rename-section", "remove-section", "edit"});
    // NAME alone reads; NAME VALUE [REGEX] sets. Options with a value.
    std::size_t plain = 0;
    for (std::size_t k = 0; k < rest.size(); ++k) {
      const std::string& a = rest[k];
      if (one_of(a, {"-f", "--file", "--blob", "--type", "--default", "--comment"})) {
        ++k;
        continue;
      }
      if (!a.empty() && a[0] != '-') ++plain;
    }
    if (write || (!get && plain >= 2)) why = "git config sets or edits configuration";
  } else if (sub == "submodule") {
    const std::string verb = first_arg();
    if (one_of(verb, {"add", "init", "update", "set-url", "set-branch", "sync", "deinit",
                      "absorbgitdirs"}))
      why = "git submodule " + verb + " writes .gitmodules and .git/config";
  } else if (sub == "remote") {
    const std::string verb = first_arg();
    if (one_of(verb, {"add", "set-url", "rename", "remove", "rm", "set-branches"}))
      why = "git remote " + verb + " writes .git/config";
  } else if (sub == "branch") {
    if (any({"-u", "--set-upstream-to", "--unset-upstream", "-m", "-M", "--move", "-c", "-C",
             "--copy", "-t", "--track"}))
      why = "git branch with an upstream, a rename or a copy writes .git/config";
  } else if (sub == "checkout" || sub == "switch") {
    if (any({"-t", "--track"})) why = "git " + sub + " --track writes .git/config";
  } else if (sub == "worktree") {
    if (first_arg() == "add") why = "git worktree add writes .git/worktrees";
  } else if (sub == "clone" || sub == "init") {
    // A new repository inside the workspace is a nested one: its config
    // and hooks are the workload's to write, and the host's git obeys them
    // (a gitlink in the outer repository makes `git status` at the root
    // run them). The sandbox cannot protect a repository it did not see.
    why = "git " + sub + " makes a repository whose config and hooks the host's git obeys";
  }
  if (!why.empty()) an.hit("protected-path-write", why);
}

// name(){ name|name& };name  (any function name, any spacing): the regex
//   ([^\s(){};|&]+)\s*\(\)\s*\{\s*\1\s*\|\s*\1\s*&\s*;?\s*\}\s*;\s*\1
// matched by hand. libstdc++'s std::regex recurses once per character
// matched, so a long word (fuzz_auto_allow_shell: 200 KB) overflowed the
// stack, and its back-references made the search quadratic.
bool has_fork_bomb(std::string_view t) {
  for (std::size_t open = t.find("()"); open != std::string_view::npos;
       open = t.find("()", open + 1)) {
    std::size_t run_end = open;  // the name, then spaces, then ()
    while (run_end > 0 && is_space(t[run_end - 1])) --run_end;
    std::size_t i = open + 2;
    auto spaces = [&] {
      while (i < t.size() && is_space(t[i])) ++i;
    };
    auto take = [&](std::string_view lit) {
      if (t.substr(i, lit.size()) != lit) return false;
      i += lit.size();
      return true;
    };
    spaces();
    if (!take("{")) continue;
    spaces();
    // The body's first word is the name (a name is followed by spaces or
    // a |, neither of which a name holds); the definition must end with it.
    std::size_t name_end = i;
    while (name_end < t.size() && is_name_char(t[name_end])) ++name_end;
    const std::string_view name = t.substr(i, name_end - i);
    if (name.empty() || name.size() > run_end ||
        t.substr(run_end - name.size(), name.size()) != name)
      continue;
    i = name_end;
    spaces();
    if (!take("|")) continue;
    spaces();
    if (!take(name)) continue;
    spaces();
    if (!take("&")) continue;
    spaces();
    take(";");
    spaces();
    if (!take("}")) continue;
    spaces();
    if (!take(";")) continue;
    spaces();
    if (take(name)) return true;
  }
  return false;
}

}  // namespace comet::capability::floor_rules
