// The `pack` verbs. Each returns the process exit code:
//   validate  0 valid, 1 invalid, 2 unreadable
//   lint      0 clean (warnings allowed), 1 errors, 2 unusable input
//   bundle    0 written, 1 the manifest or inputs are refused, 2 usage
//   explain   0 allowed, 1 denied, 2 usage
#pragma once

#include <string>

namespace comet::runtime {

int pack_validate(const std::string& path);
int pack_lint(const std::string& path, bool strict, const std::string& format,
              const std::string& rootfs);
int pack_bundle(const std::string& pack, const std::string& rootfs, const std::string& out,
                const std::string& input, const std::string& output);
int pack_explain(const std::string& pack, const std::string& path, const std::string& host);

}  // namespace comet::runtime
