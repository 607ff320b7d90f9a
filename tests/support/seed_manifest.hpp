// A full soyapack.yaml (a weather agent with a tool, an example and every
// capability kind), for the manifest and compile tests.
#pragma once

namespace comet::test {

inline constexpr const char* kSeed = R"(apiVersion: soyapack/v0
name: weather-agent
version: 1.4.2
runtime:
  interpreter: /usr/bin/python3
  entrypoint: agent.py
  args: ["--city", "Oslo"]
  env: {LANG: C.UTF-8}
tools:
  - name: fetch
    kind: builtin.http_get
    url: https://api.openai.com/v1/chat/completions
examples:
  - name: basic
    args: ["--city", "Bergen"]
    covers: ["egress:api.openai.com:443", "fs.write:/workdir/out"]
capabilities:
  egress:
    - {host: api.openai.com, port: 443, protocol: https}
  fs:
    read: [/workdir, /workdir/inputs]
    write: [/workdir/out]
  determinism_tier: read-only
)";

}  // namespace comet::test
