// Write paths resolved without following a symlink anyone but root could
// have made (sandbox_cli.cpp's prepare; docs/sandbox.md "Write paths and
// symlinks"). The mount itself goes through a fd opened following no
// symlink at all ("x-comet.nofollow", child_mounts.cpp), so nothing can be
// swapped between this check and the bind.
#pragma once

#include <string>
#include <vector>

#include "comet/base/result.hpp"

namespace comet::runtime::sandbox_parts {

// Walks each of WRITES from "/" one component at a time (O_PATH|O_NOFOLLOW).
// A symlink met is followed only when root owns it and the directory that
// holds it, that directory is writable by nobody else (mode & 022 == 0),
// and it lies outside every tree of KEEP_OUT (the workspace, the home
// directory, the write paths themselves: where a sandboxed command of this
// or an earlier run writes). Any other symlink refuses the run: an error
// naming the write path, the link and where it leads. A missing component
// ends the walk (a missing write path is not mounted).
Status write_paths_follow_no_links(const std::vector<std::string>& writes,
                                   const std::vector<std::string>& keep_out);

}  // namespace comet::runtime::sandbox_parts
