// The permission layer (SPEC.md section 2, issue 7): may an agent harness
// auto-allow a command because it will run confined, or must it ask?
//
//   comet-runtime sandbox --can-auto-allow [--profile P] -- CMD ARGS...
//
// prints the Verdict as JSON. A command may be auto-allowed only when the
// profile confines it (not off, not devbox) and nothing in it is on the
// floor: dangerous commands that always ask, whatever the sandbox. The
// analysis is a pure function of argv (no syscalls, no environment): it
// unwraps env/nice/timeout/xargs/busybox/... prefixes and looks inside
// `sh -c SCRIPT` (and bash, dash, zsh, ...; `eval`), parsing SCRIPT into
// pipelines and simple commands, command substitutions included. A script
// it cannot analyse (a heredoc, an unbalanced quote) asks: fail-closed.
//
// The built-in floor (ids stable; docs/sandbox.md lists them):
//   rm-rf-outside-workspace   rm -r/-R/--recursive (with or without -f) of a
//                             path outside the workspace, or whose path is
//                             not known (a $VAR, ~, xargs, after a cd), or
//                             --no-preserve-root
//   git-push-force            git push --force / -f / --force-with-lease /
//                             --force-if-includes / --mirror / +refspec
//   pipe-to-shell             curl|sh, wget|bash, ... (a downloader piped
//                             into a shell or interpreter), sh -c "$(curl
//                             ...)", bash <(curl ...), eval "$(wget ...)"
//   chmod-recursive-outside-workspace
//                             chmod/chown/chgrp -R outside the workspace
//                             (chmod -R 777 / is one)
//   dd-to-device              dd of=/dev/... (but null, zero, stdout,
//                             stderr, tty, fd/N), or a shell redirection
//                             into /dev/sd*, /dev/nvme*, /dev/vd*, ...
//   mkfs                      mkfs, mkfs.*, mke2fs, mkswap, wipefs, fdisk,
//                             sfdisk, cfdisk, parted, sgdisk, gdisk,
//                             blkdiscard
//   sudo                      sudo, su, doas, pkexec, run0
//   shutdown                  shutdown, reboot, halt, poweroff, telinit,
//                             init 0/6, systemctl poweroff/reboot/halt/...
//   fork-bomb                 :(){ :|:& };: and its renamings
//   remote-destroy            deletes what lives elsewhere: kubectl delete,
//                             helm uninstall, terraform destroy, pulumi
//                             destroy, gh/glab ... delete, aws s3 rb,
//                             aws ... delete-*/terminate-*, gcloud/az ...
//                             delete
//   protected-path-write      a write to a protected path (the profile's
//                             protect list and profile.hpp's built-in names
//                             under the workspace and home; any .git/config,
//                             hooks or info): a redirection into one, a
//                             writing command (cp, mv, tee, sed -i, dd of=,
//                             ...) naming one or a path it cannot know; git
//                             config that sets, git submodule add/init/
//                             update, git remote add/set-url, git branch
//                             -u/-m, git worktree add, git clone -c
// sandbox.yaml's `floor.add` adds rules (word globs, ProfileSet::floor);
// `floor.disable` (global files only) turns built-in ones off.
#pragma once

#include <string>
#include <vector>

#include "comet/base/result.hpp"
#include "comet/capability/profile.hpp"

namespace comet::capability {

// The ids of the built-in floor, in the order they are checked.
const std::vector<std::string>& builtin_floor_ids();

struct Floor {
  std::vector<std::string> builtin;  // enabled built-in rule ids
  std::vector<FloorRule> custom;
};

// The effective floor of a merged config: built-ins minus floor.disable,
// plus floor.add. An unknown id in disable, or an added rule that reuses a
// built-in id, is an error naming the file.
Result<Floor> make_floor(const ProfileSet& set);

struct AutoAllowContext {
  std::string workspace;  // absolute; the command's cwd
  std::string home;       // absolute; "~" (may be empty: "~" is then unknown)
};

struct Verdict {
  std::vector<std::string> command;
  std::string profile;
  bool confined = false;    // runs inside a sandbox (every profile but off)
  bool auto_allow = false;  // confined, not devbox, nothing on the floor
  std::string reason;
  std::string matched_rule;  // the floor rule that matched, "" for none
};

Verdict can_auto_allow(const std::vector<std::string>& argv, const ResolvedProfile& profile,
                       const Floor& floor, const AutoAllowContext& ctx);

// {"command":[...],"profile":..,"confined":..,"auto_allow":..,"reason":..,
//  "matched_rule":.. or null}
std::string verdict_to_json(const Verdict& v);

}  // namespace comet::capability
