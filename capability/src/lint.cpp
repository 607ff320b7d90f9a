// The lint rules (see lint_rules.cpp for their table and explanations).
#include "comet/capability/lint.hpp"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <unordered_map>

#include "comet/capability/match.hpp"
#include "util.hpp"

namespace comet::capability {

using detail::index;
using detail::quote;

namespace {

std::string hostport(std::string_view host, int port) {
  bool v6 = host.find(':') != std::string_view::npos;
  std::string h(host);
  return (v6 ? "[" + h + "]" : h) + ":" + std::to_string(port);
}

// Does the host:port of a cover or tool fall under an entry (any protocol)?
bool entry_takes(const EgressEntry& e, std::string_view host, int port) {
  return e.port == port &&
         (host_matches(e.host, host) || normalize_host(e.host) == normalize_host(host));
}

class Linter {
 public:
  Linter(const Manifest& m, const LintOptions& o) : m_(m), o_(o), caps_(m.capabilities) {
    for (const Tool& t : m.tools) {
      std::optional<Endpoint> ep;
      if (info(t.kind).network) {
        auto r = parse_tool_url(t.kind, t.url);
        if (r.ok()) ep = *r;
      }
      endpoints_.push_back(ep);
    }
    for (const Example& ex : m.examples) {
      std::vector<std::optional<Cover>> cs;
      for (const auto& c : ex.covers) {
        auto r = parse_cover(c);
        cs.push_back(r.ok() ? std::optional<Cover>(*r) : std::nullopt);
      }
      covers_.push_back(std::move(cs));
    }
  }

  std::vector<Finding> run() {
    egress_rules();
    tier_rules();
    coverage_rules();
    fs_rules();
    duplicate_rules();
    interpreter_rule();
    entrypoint_rule();
    std::stable_sort(out_.begin(), out_.end(), [](const Finding& a, const Finding& b) {
      auto key = [](const Finding& f) {
        return std::pair(f.loc.line ? f.loc.line : INT_MAX, f.loc.column);
      };
      return key(a) < key(b);
    });
    return std::move(out_);
  }

 private:
  void add(std::string_view id, const std::string& path, std::string msg) {
    const RuleInfo* r = find_rule(id);
    Finding f;
    f.rule_id = std::string(id);
    f.severity = (o_.strict && r->strict_error) ? Severity::error : r->severity;
    f.path = path;
    f.message = std::move(msg);
    f.explanation = std::string(r->explanation);
    f.loc = m_.loc(path);
    out_.push_back(std::move(f));
  }

  std::string tool_ref(std::size_t i) const { return "tools." + m_.tools[i].name; }
  std::string example_ref(std::size_t i) const { return "examples." + m_.examples[i].name; }

  void egress_rules() {
    const Egress& eg = caps_.egress;
    std::vector<bool> used(eg.entries.size(), false);
    bool any_used = false;
    for (std::size_t i = 0; i < m_.tools.size(); ++i) {
      if (!endpoints_[i]) continue;
      const Endpoint& ep = *endpoints_[i];
      EgressDecision d = egress_allows(eg, ep.host, ep.port, ep.protocol);
      if (d.index) used[*d.index] = true;
      if (d.any) any_used = true;
      if (d.allowed) continue;
      bool clash = std::any_of(eg.entries.begin(), eg.entries.end(), [&](const EgressEntry& e) {
        return entry_takes(e, ep.host, ep.port);
      });
      std::vector<std::string> declared;
      for (const auto& e : eg.entries) {
        std::string s = hostport(e.host, e.port);
        if (clash) s += " (" + std::string(to_string(e.protocol)) + ")";
        if (std::find(declared.begin(), declared.end(), s) == declared.end()) {
          declared.push_back(s);
        }
      }
      std::string uses = hostport(ep.host, ep.port);
      if (clash) uses += " (" + std::string(to_string(ep.protocol)) + ")";
      add("egress-uncovered-tool", index("tools", i) + ".url",
          "capabilities.egress declares " +
              (declared.empty() ? std::string("nothing") : detail::join(declared, ", ")) + " but " +
              tool_ref(i) + " uses " + uses);
    }
    if (eg.any && !any_used) {
      add("egress-unused", "capabilities.egress",
          "capabilities.egress \"*\" is not used by any tool");
    }
    for (std::size_t i = 0; i < eg.entries.size(); ++i) {
      const EgressEntry& e = eg.entries[i];
      const std::string path = index("capabilities.egress", i);
      if (!used[i]) {
        add("egress-unused", path, path + " " + to_string(e) + " is not used by any tool");
      }
      if (detail::is_wildcard(e.host)) {
        add("egress-wildcard-host", path + ".host",
            path + " uses the wildcard host " + e.host +
                "; name each host, or put a proxy in egress");
      } else if (detail::is_ip_literal(e.host)) {
        add("egress-ip-literal", path + ".host",
            path + " uses the IP literal " + e.host + "; name the host instead");
      }
      if (o_.strict && e.protocol == Protocol::tcp && (e.port == 80 || e.port == 443)) {
        add("egress-tcp-on-web-port", path + ".protocol",
            path + " " + to_string(e) + " is checked by address only; use protocol " +
                (e.port == 443 ? "https (or tls)" : "http") +
                " so the name is checked on the wire");
      }
    }
  }

  void tier_rules() {
    const Tier tier = caps_.tier;
    if (caps_.egress.any && tier != Tier::unrestricted) {
      add("egress-any-needs-unrestricted", "capabilities.egress",
          "capabilities.egress is \"*\" but determinism_tier is " + std::string(to_string(tier)) +
              "; \"*\" needs unrestricted");
    }
    bool side_effects = false;
    for (std::size_t i = 0; i < m_.tools.size(); ++i) {
      const ToolKindInfo& k = info(m_.tools[i].kind);
      if (!k.side_effect) continue;
      side_effects = true;
      if (tier == Tier::read_only) {
        add("tier-side-effect-tool", index("tools", i) + ".kind",
            "capabilities.determinism_tier is read-only but " + tool_ref(i) + " uses " +
                std::string(k.name) + ", which has side effects");
      }
    }
    if (!o_.strict) return;
    Tier needed = caps_.egress.any ? Tier::unrestricted
                  : side_effects   ? Tier::side_effect
                                   : Tier::read_only;
    if (static_cast<int>(tier) > static_cast<int>(needed)) {
      add("tier-broader-than-needed", "capabilities.determinism_tier",
          "capabilities.determinism_tier is " + std::string(to_string(tier)) +
              " but the tools need only " + std::string(to_string(needed)));
    }
  }

  void coverage_rules() {
    // Claims that the capabilities do not back.
    for (std::size_t i = 0; i < m_.examples.size(); ++i) {
      for (std::size_t j = 0; j < covers_[i].size(); ++j) {
        if (!covers_[i][j]) continue;
        const Cover& c = *covers_[i][j];
        const std::string path = index(index("examples", i) + ".covers", j);
        const std::string claim = example_ref(i) + " claims " + m_.examples[i].covers[j];
        if (c.kind == Cover::Kind::egress) {
          bool ok = caps_.egress.any ||
                    (!c.any && std::any_of(caps_.egress.entries.begin(), caps_.egress.entries.end(),
                                           [&](const EgressEntry& e) {
                                             return entry_takes(e, c.host, c.port);
                                           }));
          if (!ok) {
            add("example-undeclared-capability", path,
                claim + ", which capabilities.egress does not declare");
          }
        } else {
          Access a = fs_decision(caps_.fs, c.path).access;
          if (c.kind == Cover::Kind::fs_write && a != Access::write) {
            add("example-undeclared-capability", path,
                claim + ", which capabilities.fs.write does not allow");
          } else if (c.kind == Cover::Kind::fs_read && a == Access::denied) {
            add("example-undeclared-capability", path,
                claim + ", which capabilities.fs does not make readable");
          }
        }
      }
    }
    if (!o_.strict) return;
    auto covered = [&](auto pred) {
      for (const auto& cs : covers_) {
        for (const auto& c : cs) {
          if (c && pred(*c)) return true;
        }
      }
      return false;
    };
    const Egress& eg = caps_.egress;
    if (eg.any && !covered([](const Cover& c) { return c.kind == Cover::Kind::egress; })) {
      add("capability-uncovered", "capabilities.egress",
          "capabilities.egress \"*\" is not covered by any example");
    }
    for (std::size_t i = 0; i < eg.entries.size(); ++i) {
      const EgressEntry& e = eg.entries[i];
      bool ok = covered([&](const Cover& c) {
        return c.kind == Cover::Kind::egress && !c.any && entry_takes(e, c.host, c.port);
      });
      const std::string path = index("capabilities.egress", i);
      if (!ok)
        add("capability-uncovered", path,
            path + " " + to_string(e) + " is not covered by any example");
    }
    auto fs_list = [&](const std::vector<std::string>& list, const char* name, Cover::Kind kind) {
      for (std::size_t i = 0; i < list.size(); ++i) {
        if (detail::fs_path_form_problem(list[i])) continue;
        if (kind == Cover::Kind::fs_read && list[i] == kWorkdir) continue;  // implicit
        bool ok = covered([&](const Cover& c) {
          return c.kind == kind && detail::path_under(detail::normalize_path(c.path), list[i]);
        });
        const std::string path = index(std::string("capabilities.fs.") + name, i);
        if (!ok)
          add("capability-uncovered", path,
              path + " " + list[i] + " is not covered by any example");
      }
    };
    fs_list(caps_.fs.read, "read", Cover::Kind::fs_read);
    fs_list(caps_.fs.write, "write", Cover::Kind::fs_write);
  }

  void fs_rules() {
    std::vector<bool> read_ok, write_ok;
    auto form = [&](const std::vector<std::string>& list, const char* name, bool write,
                    std::vector<bool>& ok) {
      for (std::size_t i = 0; i < list.size(); ++i) {
        const std::string path = index(std::string("capabilities.fs.") + name, i);
        if (auto p = detail::fs_path_form_problem(list[i])) {
          add("fs-path-invalid", path, path + " " + *p);
          ok.push_back(false);
        } else if (auto r = detail::fs_path_reserved_problem(list[i], write)) {
          add("fs-path-reserved", path, path + " " + *r);
          ok.push_back(false);
        } else {
          ok.push_back(true);
        }
      }
    };
    form(caps_.fs.read, "read", false, read_ok);
    form(caps_.fs.write, "write", true, write_ok);
    const auto& rd = caps_.fs.read;
    const auto& wr = caps_.fs.write;
    for (std::size_t i = 0; i < rd.size(); ++i) {
      for (std::size_t j = 0; j < wr.size() && read_ok[i]; ++j) {
        if (write_ok[j] && rd[i] != wr[j] && detail::path_under(rd[i], wr[j])) {
          const std::string path = index("capabilities.fs.read", i);
          add("fs-read-inside-write", path,
              path + " " + rd[i] + " lies inside the writable " +
                  index("capabilities.fs.write", j) + " " + wr[j]);
          break;
        }
      }
    }
    for (std::size_t i = 0; i < m_.tools.size(); ++i) {
      const Tool& t = m_.tools[i];
      const ToolKindInfo& k = info(t.kind);
      if (k.network) continue;
      const std::string path = index("tools", i) + ".path";
      if (auto p = detail::fs_path_form_problem(t.path)) {
        add("fs-path-invalid", path, tool_ref(i) + " path " + *p);
        continue;
      }
      Access a = fs_decision(caps_.fs, t.path).access;
      if (k.writes && a != Access::write) {
        add("fs-uncovered-tool", path,
            tool_ref(i) + " writes " + t.path + " but capabilities.fs.write does not allow it");
      } else if (!k.writes && a == Access::denied) {
        add("fs-uncovered-tool", path,
            tool_ref(i) + " reads " + t.path + " but capabilities.fs does not make it readable");
      }
    }
  }

  void duplicate_rules() {
    // Each entry normalised once, and looked up against the first entry
    // with the same key (linear, not pairwise: this runs at every create).
    const auto& en = caps_.egress.entries;
    std::unordered_map<std::string, std::size_t> first_egress;
    for (std::size_t i = 0; i < en.size(); ++i) {
      std::string key = normalize_host(en[i].host) + '\0' + std::to_string(en[i].port) + '\0' +
                        std::string(to_string(en[i].protocol));
      auto [it, fresh] = first_egress.emplace(std::move(key), i);
      if (fresh) continue;
      const std::size_t j = it->second;
      const std::string path = index("capabilities.egress", i);
      add("duplicate-entry", path,
          path + " repeats " + index("capabilities.egress", j) + " (" + to_string(en[j]) + ")");
    }
    auto normalized = [](const std::vector<std::string>& list) {
      std::vector<std::string> out;
      out.reserve(list.size());
      for (const auto& p : list) out.push_back(detail::normalize_path(p));
      return out;
    };
    const std::vector<std::string> reads = normalized(caps_.fs.read);
    const std::vector<std::string> writes = normalized(caps_.fs.write);
    auto paths = [&](const std::vector<std::string>& list, const std::vector<std::string>& norm,
                     const std::string& name) {
      std::unordered_map<std::string_view, std::size_t> first;
      for (std::size_t i = 0; i < list.size(); ++i) {
        auto [it, fresh] = first.emplace(norm[i], i);
        if (fresh) continue;
        const std::size_t j = it->second;
        const std::string path = index(name, i);
        add("duplicate-entry", path, path + " repeats " + index(name, j) + " (" + list[j] + ")");
      }
    };
    paths(caps_.fs.read, reads, "capabilities.fs.read");
    paths(caps_.fs.write, writes, "capabilities.fs.write");
    std::unordered_map<std::string_view, std::size_t> first_write;
    for (std::size_t j = 0; j < writes.size(); ++j) first_write.emplace(writes[j], j);
    for (std::size_t i = 0; i < reads.size(); ++i) {
      auto it = first_write.find(reads[i]);
      if (it == first_write.end()) continue;
      const std::string path = index("capabilities.fs.read", i);
      add("duplicate-entry", path,
          path + " " + caps_.fs.read[i] + " is already readable through " +
              index("capabilities.fs.write", it->second));
    }
    for (std::size_t e = 0; e < m_.examples.size(); ++e) {
      const auto& cs = covers_[e];
      for (std::size_t i = 0; i < cs.size(); ++i) {
        for (std::size_t j = 0; j < i && cs[i]; ++j) {
          if (cs[j] && canonical(*cs[i]) == canonical(*cs[j])) {
            const std::string path = index(index("examples", e) + ".covers", i);
            add("duplicate-entry", path,
                example_ref(e) + " covers " + m_.examples[e].covers[i] + " twice");
            break;
          }
        }
      }
    }
    names(m_.tools, "tools", "tool");
    names(m_.examples, "examples", "example");
  }

  static std::string canonical(Cover c) {
    c.host = normalize_host(c.host);
    if (!c.path.empty()) c.path = detail::normalize_path(c.path);
    return to_string(c);
  }

  template <typename T>
  void names(const std::vector<T>& items, const std::string& list, const std::string& what) {
    for (std::size_t i = 0; i < items.size(); ++i) {
      for (std::size_t j = 0; j < i; ++j) {
        if (items[i].name == items[j].name) {
          add("duplicate-name", index(list, i) + ".name",
              index(list, i) + " repeats the " + what + " name " + quote(items[i].name) + " of " +
                  index(list, j));
          break;
        }
      }
    }
  }

  void interpreter_rule() {
    if (!o_.exists_in_rootfs) return;
    const std::string& interp = m_.runtime.interpreter;
    bool exists = false;
    std::string why;
    try {
      exists = o_.exists_in_rootfs(interp);
    } catch (const std::exception& e) {
      why = std::string(" (could not check: ") + e.what() + ")";
    } catch (...) {
      why = " (could not check)";
    }
    if (!exists) {
      add("interpreter-missing", "runtime.interpreter",
          "runtime.interpreter " + interp + " does not exist in the rootfs" + why);
    }
  }

  void entrypoint_rule() {
    if (!o_.exists_in_pack || m_.runtime.entrypoint.empty()) return;
    const std::string& ep = m_.runtime.entrypoint;
    bool exists = false;
    std::string why;
    try {
      exists = o_.exists_in_pack(ep);
    } catch (const std::exception& e) {
      why = std::string(" (could not check: ") + e.what() + ")";
    } catch (...) {
      why = " (could not check)";
    }
    if (!exists)
      add("entrypoint-missing", "runtime.entrypoint",
          "runtime.entrypoint " + ep + " is not in the pack directory" + why);
  }

  const Manifest& m_;
  const LintOptions& o_;
  const Capabilities& caps_;
  std::vector<std::optional<Endpoint>> endpoints_;
  std::vector<std::vector<std::optional<Cover>>> covers_;
  std::vector<Finding> out_;
};

}  // namespace

std::vector<Finding> lint(const Manifest& m, const LintOptions& opts) {
  try {
    return Linter(m, opts).run();
  } catch (const std::exception& e) {
    Finding f;
    f.rule_id = "lint-failed";
    f.message = std::string("lint failed: ") + e.what();
    return {f};
  }
}

std::size_t count(const std::vector<Finding>& findings, Severity s) {
  return static_cast<std::size_t>(std::count_if(findings.begin(), findings.end(),
                                                [s](const Finding& f) { return f.severity == s; }));
}

bool has_errors(const std::vector<Finding>& findings) {
  return count(findings, Severity::error) > 0;
}

std::string summary_line(std::size_t errors, std::size_t warnings) {
  return std::to_string(errors) + (errors == 1 ? " error" : " errors") + " \u00b7 " +
         std::to_string(warnings) + (warnings == 1 ? " warning" : " warnings");
}

std::string render_text(const std::vector<Finding>& findings) {
  std::string out;
  for (const auto& f : findings) {
    out += f.severity == Severity::error ? "err   " : "warn  ";
    // One finding, one line: control characters from the manifest (a path
    // with a newline) are escaped, so they can never forge another line.
    // C1 controls too (U+0080..U+009F, UTF-8 C2 80..9F: U+009B is CSI),
    // which a manifest's double-quoted "\x9b" can hold.
    const std::string& m = f.message;
    for (std::size_t i = 0; i < m.size(); i++) {
      const auto c = static_cast<unsigned char>(m[i]);
      const bool c1 = c == 0xc2 && i + 1 < m.size() &&
                      static_cast<unsigned char>(m[i + 1]) >= 0x80 &&
                      static_cast<unsigned char>(m[i + 1]) < 0xa0;
      if (c < 0x20 || c == 0x7f || c1) {
        char esc[8];
        std::snprintf(esc, sizeof esc, c == '\n' ? "\\n" : "\\x%02x",
                      c1 ? static_cast<unsigned char>(m[++i]) : c);
        out += esc;
      } else {
        out += static_cast<char>(c);
      }
    }
    out += '\n';
  }
  out += summary_line(count(findings, Severity::error), count(findings, Severity::warning));
  out += '\n';
  return out;
}

std::string render_json(const std::vector<Finding>& findings, std::string_view file, int indent) {
  try {
    nlohmann::ordered_json j;
    if (!file.empty()) j["file"] = std::string(file);
    j["findings"] = nlohmann::ordered_json::array();
    for (const auto& f : findings) {
      nlohmann::ordered_json o;
      o["rule"] = f.rule_id;
      o["severity"] = std::string(to_string(f.severity));
      o["path"] = f.path;
      if (f.loc.line > 0) {
        o["line"] = f.loc.line;
        o["column"] = f.loc.column;
      }
      o["message"] = f.message;
      o["explanation"] = f.explanation;
      j["findings"].push_back(std::move(o));
    }
    j["errors"] = count(findings, Severity::error);
    j["warnings"] = count(findings, Severity::warning);
    // ASCII only (\uXXXX): no C1 control from the manifest reaches a terminal
    return j.dump(indent, ' ', true, nlohmann::json::error_handler_t::replace);
  } catch (const std::exception&) {
    return "{\"findings\":[],\"errors\":1,\"warnings\":0}";
  }
}

}  // namespace comet::capability
