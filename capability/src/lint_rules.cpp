// The lint rule table: ids, severities and explanations. Keep in step with
// docs/lint-rules.md (a test checks that every id has a section there).
#include "comet/capability/lint.hpp"

namespace comet::capability {

namespace {

constexpr Severity E = Severity::error;
constexpr Severity W = Severity::warning;

const std::vector<RuleInfo> kRules = {
    {"egress-uncovered-tool", E, false, false, false,
     "a tool's URL is not allowed by any egress entry",
     "Every network tool's URL resolves to host, port (the scheme's default when the URL has "
     "none: https 443, http 80, dns 53) and protocol (the scheme). An egress entry allows it only "
     "when all three match. At run time the connection would be refused with ECONNREFUSED and "
     "the run would end with a capability violation, so add the entry or fix the URL."},
    {"egress-unused", W, false, false, false, "an egress entry no tool uses",
     "Each egress entry is a hole in the sandbox. An entry that no declared tool needs is either "
     "dead (remove it) or used by code that does not declare its tool (declare it, so reviewers "
     "see what the hole is for)."},
    {"egress-wildcard-host", W, false, true, false, "a wildcard host such as *.cdn.test",
     "A wildcard allows every current and future subdomain, which no reviewer can audit. It is "
     "accepted, and fails under --strict. Name each host, or put a proxy in egress and let the "
     "proxy hold its own allowlist (the production pattern for unbounded hosts)."},
    {"egress-ip-literal", W, false, false, false, "an IP address instead of a host name",
     "IP literals are accepted but discouraged: the pack breaks when the service moves, and an "
     "address says nothing to a reviewer about who is on the other end. Name the host."},
    {"egress-tcp-on-web-port", E, true, false, false,
     "a tcp entry on port 80 or 443 (--strict only)",
     "A tcp entry allows any bytes to the address and port, checked by address only. Behind a "
     "CDN or a cloud load balancer that address serves many names, and the agent can reach any "
     "of them by naming it in the TLS SNI or the HTTP Host (domain fronting). An https or http "
     "entry is judged on the wire: the SNI or every request's Host must name the entry's host "
     "(docs/egress.md). Use protocol https or tls (443), or http (80)."},
    {"egress-any-needs-unrestricted", E, false, false, true,
     "egress \"*\" without the unrestricted tier",
     "egress: [\"*\"] makes the pack a black box, and only the unrestricted tier says so honestly "
     "(its results are never cached). Declare determinism_tier: unrestricted, or list the hosts."},
    {"tier-side-effect-tool", E, false, false, true,
     "a read-only pack with a tool that has side effects",
     "The tier is checked against behaviour, not just the declaration: a read-only pack promises "
     "the same outputs for the same inputs and is cached by input hash, so it may not use a tool "
     "that changes the world (builtin.http_post/put/patch/delete, builtin.tcp_connect, "
     "builtin.udp_send). Declare side-effect, or drop the tool."},
    {"tier-broader-than-needed", W, true, false, false,
     "a tier broader than the tools need (--strict only)",
     "side-effect and unrestricted packs are never cached. When no tool has side effects and "
     "egress is not \"*\", read-only would let results be cached; when egress is not \"*\", "
     "unrestricted is more than side-effect needs."},
    {"capability-uncovered", E, true, false, false,
     "a capability no example covers (--strict only)",
     "Under --strict, every egress entry and every fs.read / fs.write entry must be exercised by "
     "an example that lists it in covers (egress:HOST:PORT, egress:*, fs.read:PATH, "
     "fs.write:PATH; a path under an entry covers it). The always-readable /workdir needs no "
     "example. Unexercised capabilities are the ones nobody notices are unneeded."},
    {"example-undeclared-capability", E, false, false, false,
     "an example claims a capability the manifest does not declare",
     "An example's covers list says what the example exercises. Claiming something that "
     "capabilities does not grant means the example will fail in the sandbox, or that the "
     "declaration is missing an entry."},
    {"fs-path-invalid", E, false, false, true,
     "an fs path that is relative, not normalised, or contains ..",
     "Paths in capabilities.fs and in fs tools are sandbox paths, matched by prefix on whole "
     "components. They must be absolute and in normal form (no //, ., .. or trailing /) so that "
     "what a reviewer reads is exactly what is matched."},
    {"fs-path-reserved", E, false, false, true, "an fs path the runtime owns",
     "/proc, /sys and /dev are set up by the runtime and cannot be granted; / would grant "
     "everything; /workdir holds the pack's own files and is never writable (list a sub-path "
     "such as /workdir/out)."},
    {"fs-read-inside-write", E, false, false, true, "an fs.read entry inside an fs.write entry",
     "Writable implies readable, and the runtime cannot make a sub-tree of a writable bind "
     "read-only without a directory of its own. Drop the read entry, or move it out of the "
     "writable tree."},
    {"fs-uncovered-tool", E, false, false, false,
     "an fs tool's path is not allowed by capabilities.fs",
     "A builtin.fs_read tool needs its path readable (under /workdir or an fs.read / fs.write "
     "entry), a builtin.fs_write tool needs it under an fs.write entry. Otherwise the call fails "
     "in the sandbox (ENOENT / EROFS)."},
    {"duplicate-entry", W, false, false, false, "the same capability listed twice",
     "A repeated egress triple, fs path or example cover, or an fs.read entry that an fs.write "
     "entry already makes readable. Harmless to the sandbox, but noise in the one block "
     "reviewers read."},
    {"duplicate-name", E, false, false, true, "two tools or two examples with the same name",
     "Tools and examples are referred to by name (tools.fetch, examples.basic) in findings, "
     "events and the CLI, so names must be unique."},
    {"interpreter-missing", E, false, false, false,
     "runtime.interpreter does not exist in the rootfs",
     "The interpreter is the only program the sandbox may execute. Checked when lint is given "
     "the rootfs the pack will run on."},
    {"entrypoint-missing", E, false, false, false, "runtime.entrypoint is not in the pack",
     "The entrypoint is the file the interpreter runs, from the pack directory (/workdir in "
     "the sandbox): without it every run fails at once. Checked by pack lint, which knows the "
     "pack directory."},
};

}  // namespace

const std::vector<RuleInfo>& lint_rules() {
  return kRules;
}

const RuleInfo* find_rule(std::string_view id) {
  for (const auto& r : kRules) {
    if (r.id == id) return &r;
  }
  return nullptr;
}

std::string_view to_string(Severity s) {
  return s == Severity::error ? "error" : "warning";
}

}  // namespace comet::capability
