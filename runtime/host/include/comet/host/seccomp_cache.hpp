// seccomp::compile() with an on-disk cache of the finished BPF
// (/run/comet-runtime/cache/seccomp, root-only), for the built-in filters:
// the child's base filter and lock-down (lifecycle) and the reporter's copy
// of the lock-down it judges against (reporting).
#pragma once

#include "comet/base/result.hpp"
#include "comet/oci/spec.hpp"
#include "comet/seccomp/seccomp.hpp"

namespace comet::runtime {

Result<seccomp::Program> compile_cached(const oci::Seccomp& profile,
                                        const seccomp::CompileOptions& o);

}  // namespace comet::runtime
