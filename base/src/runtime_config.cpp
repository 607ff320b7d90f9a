// Runtime-wide settings in a file: base/include/comet/base/runtime_config.hpp.
#include "comet/base/runtime_config.hpp"

#include <cerrno>
#include <cstdlib>

#include "comet/base/sys.hpp"

namespace comet {

namespace {

std::string trim(std::string s) {
  const char* ws = " \t\r";
  s.erase(0, s.find_first_not_of(ws));
  s.erase(s.find_last_not_of(ws) + 1);
  return s;
}

}  // namespace

Result<RuntimeConfig> parse_runtime_config(const std::string& text, const std::string& path) {
  RuntimeConfig c;
  c.path = path;
  int n = 0;
  for (const std::string& raw : split(text, '\n')) {
    ++n;
    std::string line = raw;
    // A comment: '#' at the start or after a space, outside quotes.
    bool quoted = false;
    for (std::size_t i = 0; i < line.size(); ++i) {
      if (line[i] == '"') quoted = !quoted;
      if (line[i] == '#' && !quoted && (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t')) {
        line.resize(i);
        break;
      }
    }
    line = trim(line);
    if (line.empty()) continue;
    const std::string where = path + ":" + std::to_string(n);
    auto colon = line.find(':');
    if (colon == std::string::npos || raw.find_first_not_of(" \t") != 0)
      return Error::msg(where + ": expected `key: value` (a flat list of settings)");
    const std::string key = trim(line.substr(0, colon));
    std::string value = trim(line.substr(colon + 1));
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"')
      value = value.substr(1, value.size() - 2);
    if (key == "dns_upstream") {
      if (value.empty()) return Error::msg(where + ": dns_upstream: no value");
      c.dns_upstream = value;
    } else {
      return Error::msg(where + ": unknown setting \"" + key + "\" (known: dns_upstream)");
    }
  }
  return c;
}

Result<RuntimeConfig> runtime_config() {
  const char* env = std::getenv("COMET_RUNTIME_CONFIG");
  const std::string path = env && *env ? env : "/etc/comet/runtime.yaml";
  auto text = read_file(path);
  if (!text.ok()) {
    if (text.error().err() == ENOENT) return RuntimeConfig{};
    return std::move(text).error().wrap("runtime config " + path);
  }
  return parse_runtime_config(*text, path);
}

}  // namespace comet
