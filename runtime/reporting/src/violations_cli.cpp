// `comet-runtime pack flags` and `comet-runtime events --violations`
// (violations.hpp).
#include <fcntl.h>
#include <unistd.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "comet/base/fd.hpp"
#include "comet/base/sys.hpp"
#include "comet/host/log.hpp"
#include "comet/host/state_store.hpp"
#include "comet/reporting/violations.hpp"

namespace comet::runtime::violations {
int flags_cli(const std::string& root, const std::string& action, const std::string& arg) {
  if (action.empty() || action == "list") {
    for (const Flag& f : list_flags(root))
      std::cout << nlohmann::json(
                       {{"pack", f.pack}, {"first", f.first}, {"last", f.last}, {"count", f.count}})
                       .dump()
                << "\n";
    return 0;
  }
  if (action == "clear") {
    Status st = clear_flag(root, arg);
    if (!st.ok()) {
      log::error(st.error().what());
      return 1;
    }
    return 0;
  }
  log::error("pack flags: unknown action " + action + " (list or clear NAME@VERSION)");
  return 2;
}

int events_cli(const std::string& root, const std::string& id, bool follow) {
  ContainerDir dir(root, id);
  if (!dir.exists()) {
    // Gone: the events kept from its run (keep_events), if any.
    if (validate_id(id).ok()) {
      if (auto t = read_file(kept_events_file(root, id)); t.ok()) {
        std::cout << *t << std::flush;
        return 0;
      }
    }
    log::error("container does not exist: " + id + " (and no events of it are kept under " +
               join_path(root, kKeptEventsDir) + ")");
    return 1;
  }
  std::string path = dir.file(kEventsFile);
  UniqueFd fd;
  off_t off = 0;
  for (;;) {
    if (!fd) fd.reset(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd) {
      char buf[8192];
      ssize_t n;
      while ((n = ::pread(fd.get(), buf, sizeof buf, off)) > 0) {
        std::cout.write(buf, n);
        off += n;
      }
      std::cout.flush();
    }
    if (!follow || !dir.exists()) return 0;
    ::usleep(200000);
  }
}

}  // namespace comet::runtime::violations
