// The user the sandbox profile tests resolve for: ada, working in
// /home/ada/src/app.
#pragma once

#include "comet/capability/profile.hpp"

namespace comet::test {

inline capability::ResolveContext ada_context() {
  capability::ResolveContext c;
  c.workspace = "/home/ada/src/app";
  c.home = "/home/ada";
  c.tmp = "/tmp";
  return c;
}

}  // namespace comet::test
