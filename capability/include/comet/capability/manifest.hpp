// The SoyaPack v0 manifest (soyapack.yaml): typed model, parser, validator.
//
// Pure functions: nothing here makes a syscall except load_pack() and
// read_manifest_file(), which only read a pack's soyapack.yaml (loader.cpp).
// The JSON Schema of the same format is docs/soyapack.schema.json; tests
// keep the two in agreement.
//
// Errors have the form
//   soyapack.yaml:14:7: capabilities.egress[1].port: expected an integer 1..65535, got "https"
// (file:line:column, 1-based, then the field path, then the problem). No
// exception escapes a public function.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "comet/base/result.hpp"

namespace comet::capability {

inline constexpr std::string_view kApiVersion = "soyapack/v0";
inline constexpr std::string_view kManifestFile = "soyapack.yaml";

// Patterns (ECMAScript, as std::regex and JSON Schema both read them).
inline constexpr std::string_view kNamePattern = "^[a-z0-9-]{1,63}$";
inline constexpr std::string_view kIdentPattern = "^[a-z0-9][a-z0-9_-]{0,62}$";  // tool/example
inline constexpr std::string_view kEnvKeyPattern = "^[A-Za-z_][A-Za-z0-9_]*$";
inline constexpr std::string_view kSemverPattern =
    "^(0|[1-9][0-9]*)\\.(0|[1-9][0-9]*)\\.(0|[1-9][0-9]*)"
    "(-(0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)(\\.(0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)"
    ")*)?"
    "(\\+[0-9a-zA-Z-]+(\\.[0-9a-zA-Z-]+)*)?$";

// Sandbox paths with a fixed meaning.
inline constexpr std::string_view kWorkdir = "/workdir";           // pack files, read-only
inline constexpr std::string_view kInputsDir = "/workdir/inputs";  // pack run --input DIR
inline constexpr std::string_view kOutputDir = "/workdir/out";     // pack run --output DIR

// tls: any TLS stream, its ClientHello's SNI judged as for https (no tool
// URL names it: it is for clients the pack brings, on any port).
enum class Protocol { https, http, tcp, udp, dns, tls };
enum class Tier { read_only, side_effect, unrestricted };
enum class ToolKind {
  http_get,     // builtin.http_get     url http(s)://   no side effect
  http_head,    // builtin.http_head    url http(s)://   no side effect
  http_post,    // builtin.http_post    url http(s)://   side effect
  http_put,     // builtin.http_put     url http(s)://   side effect
  http_patch,   // builtin.http_patch   url http(s)://   side effect
  http_delete,  // builtin.http_delete  url http(s)://   side effect
  tcp_connect,  // builtin.tcp_connect  url tcp://host:port  side effect (opaque stream)
  udp_send,     // builtin.udp_send     url udp://host:port  side effect (opaque datagrams)
  dns_query,    // builtin.dns_query    url dns://host[:53]  no side effect
  fs_read,      // builtin.fs_read      path             no side effect
  fs_write,     // builtin.fs_write     path             no side effect (outputs are results)
};

struct ToolKindInfo {
  ToolKind kind;
  std::string_view name;  // "builtin.http_get"
  bool network;           // needs url (else needs path)
  bool side_effect;       // observable change outside the sandbox
  bool writes;            // fs_write: path must be writable
};

// All kinds, in declaration order.
const std::vector<ToolKindInfo>& tool_kinds();
const ToolKindInfo& info(ToolKind kind);
std::optional<ToolKind> parse_tool_kind(std::string_view name);

std::string_view to_string(Protocol p);  // "https"
std::string_view to_string(Tier t);      // "read-only"
std::string_view to_string(ToolKind k);  // "builtin.http_get"
std::optional<Protocol> parse_protocol(std::string_view s);
std::optional<Tier> parse_tier(std::string_view s);
const std::vector<std::string_view>& protocol_names();  // https http tcp udp dns tls
const std::vector<std::string_view>& tier_names();      // read-only side-effect unrestricted

// A position in the source, 1-based; line 0 = unknown (built in code).
struct Loc {
  int line = 0;
  int column = 0;
};

struct EgressEntry {
  std::string host;  // DNS name, "*.suffix" wildcard, IPv4 or IPv6 literal
  int port = 0;      // 1..65535
  Protocol protocol = Protocol::https;
  bool operator==(const EgressEntry&) const = default;
};

struct Egress {
  bool any = false;                  // egress: ["*"] (or "*"): every host
  std::vector<EgressEntry> entries;  // empty and !any: no network at all
};

struct FsPolicy {
  std::vector<std::string> read;   // absolute sandbox paths, prefix match
  std::vector<std::string> write;  // writable implies readable
};

struct Capabilities {
  Egress egress;
  FsPolicy fs;
  Tier tier = Tier::read_only;  // determinism_tier
};

struct Runtime {
  std::string interpreter;  // absolute path in the rootfs; the only executable
  std::string entrypoint;   // relative to /workdir
  std::vector<std::string> args;
  std::map<std::string, std::string> env;
};

struct Tool {
  std::string name;
  ToolKind kind = ToolKind::http_get;
  std::string url;   // network kinds
  std::string path;  // fs kinds
  std::string description;
};

struct Example {
  std::string name;
  std::vector<std::string> args;
  std::vector<std::string> covers;  // "egress:HOST:PORT", "egress:*", "fs.read:P", "fs.write:P"
  std::string description;
};

// resources: what one run of the pack may take from the host (issue 21,
// item 11). Every pack has them: these defaults, or the manifest's
// `resources:` block (sizes as bytes or with a K/M/G or Ki/Mi/Gi suffix).
// Enforced by the pack's cgroup (pids, memory; tmpfs pages are charged to
// it too) and by tmpfs size= (every fs.write place, /workdir/out), checked
// again when the output is collected and when a run is cached.
struct Resources {
  long long pids = 128;                // processes and threads (pids.max)
  long long memory = 1024LL << 20;     // memory.max, no swap on top
  long long tmp = 64LL << 20;          // each writable tmpfs but /workdir/out
  long long output = 256LL << 20;      // /workdir/out (its tmpfs, and --output)
  long long cache_entry = 64LL << 20;  // one cache entry (output + stdout + stderr)
};
inline constexpr long long kMinPids = 8, kMaxPids = 32768;
inline constexpr long long kMinMemory = 16LL << 20;

struct Manifest {
  std::string api_version{kApiVersion};
  std::string name;
  std::string version;
  std::string description;
  Runtime runtime;
  std::vector<Tool> tools;
  std::vector<Example> examples;
  Capabilities capabilities;
  std::string profile;  // optional sandbox profile name (profile.hpp)
  Resources resources;

  // Where the manifest came from, for messages. locations maps a field path
  // ("capabilities.egress[1].port", "tools[0]") to the position of its value.
  std::string file{kManifestFile};
  std::map<std::string, Loc> locations;

  // Position of path, or of its nearest located parent; line 0 if none.
  Loc loc(const std::string& path) const;
  // "soyapack.yaml:14:7: path: " prefix for messages ("path: " alone when the
  // position is unknown; no "path: " when path is empty).
  std::string where(const std::string& path) const;
};

// A tool URL, resolved: protocol from the scheme, port defaulted by scheme
// (https 443, http 80, dns 53; tcp and udp need an explicit port).
struct Endpoint {
  Protocol protocol = Protocol::https;
  std::string host;  // as written (lower-cased), no brackets for IPv6
  int port = 0;
  std::string path;  // "/v1/chat" ("" when none)
};
Result<Endpoint> parse_tool_url(ToolKind kind, std::string_view url);

// One example's claim, parsed from its string form.
struct Cover {
  enum class Kind { egress, fs_read, fs_write };
  Kind kind = Kind::egress;
  bool any = false;  // "egress:*"
  std::string host;  // egress
  int port = 0;      // egress
  std::string path;  // fs
};
Result<Cover> parse_cover(std::string_view text);
std::string to_string(const Cover& c);

// A manifest is at most this long (it is a manifest, not a data file):
// parse_manifest refuses longer text, and read_manifest_file reads no more.
inline constexpr std::size_t kMaxManifestBytes = 1 << 20;  // 1 MiB

// Parse soyapack.yaml text: YAML syntax, types, required and unknown fields
// (an unknown key is an error: a typo must not silently change a policy),
// enums and per-value formats. Cross-field consistency is validate()'s.
// Text longer than kMaxManifestBytes is refused before it is parsed.
Result<Manifest> parse_manifest(std::string_view yaml_text,
                                std::string_view filename = kManifestFile);

// Shape (every per-value format, again, so that a manifest built in code is
// held to the parser's rules) plus the consistency rules a pack cannot run
// without: determinism tier against tool behaviour and against egress "*",
// fs path form, duplicate tool/example names. Returns the first problem.
Status validate(const Manifest& m);

// parse_manifest + validate: what `pack validate` runs.
Result<Manifest> load_manifest(std::string_view yaml_text,
                               std::string_view filename = kManifestFile);

// The bytes of a pack's manifest, read by read_manifest_file.
struct ManifestFile {
  std::string file;  // the path read: PATH, or PATH/soyapack.yaml
  std::string text;
};

// Reads PATH, a pack directory (its soyapack.yaml) or the manifest itself,
// reading no more than kMaxManifestBytes + 1 bytes: a longer file is an
// error ("FILE: larger than 1 MiB; not a manifest"), as is an unreadable
// one ("open FILE: ..."). With load_pack the only functions in capability/
// that touch the filesystem (loader.cpp).
Result<ManifestFile> read_manifest_file(const std::string& path);

// Reads <pack_dir>/soyapack.yaml (at most kMaxManifestBytes) and runs
// load_manifest.
Result<Manifest> load_pack(const std::string& pack_dir);

// The capabilities block as canonical JSON (annotation
// org.soyaos.comet.capabilities), and back. from_json is as strict as the
// YAML parser (unknown keys, types, formats) and names `source` in errors.
std::string capabilities_to_json(const Capabilities& caps);
Result<Capabilities> capabilities_from_json(
    std::string_view json_text,
    std::string_view source = "annotation org.soyaos.comet.capabilities");

}  // namespace comet::capability
