// git config values that name what the host's git runs (git_config.hpp).
#include <algorithm>
#include "comet/capability/git_config.hpp"

#include <gtest/gtest.h>

namespace cap = comet::capability;

namespace {

std::vector<std::string> paths(const char* text) {
  return cap::git_config_paths(cap::git_config_refs(text), "/ws", "/ws/.git", "/home/ada");
}

}  // namespace

TEST(GitConfig, HooksPathAndItsTopDirectory) {
  // husky: hooksPath .husky/_ runs the scripts in .husky
  EXPECT_EQ(paths("[core]\n\thooksPath = .husky/_\n"),
            (std::vector<std::string>{"/ws/.husky/_", "/ws/.husky"}));
  EXPECT_EQ(paths("[Core]\n  HooksPath=\"hooks dir\" # comment\n"),
            (std::vector<std::string>{"/ws/hooks dir"}));
  EXPECT_EQ(paths("[core] hookspath = ~/hooks\n"), (std::vector<std::string>{"/home/ada/hooks"}));
  EXPECT_EQ(paths("[core]\n\thooksPath = /etc/git-hooks\n"),
            (std::vector<std::string>{"/etc/git-hooks"}));
}

TEST(GitConfig, ProgramsWithAPath) {
  EXPECT_EQ(paths("[core]\n\tfsmonitor = ./x.sh\n\tpager = less\n\teditor = \"scripts/ed\" -w\n"),
            (std::vector<std::string>{"/ws/x.sh", "/ws/scripts/ed"}));
  EXPECT_EQ(paths("[core]\n\tfsmonitor = true\n"), std::vector<std::string>{});
  // every path word, not only the first (red team round 6)
  EXPECT_EQ(paths("[filter \"nb\"]\n\tclean = python3 tools/clean.py --cfg=conf/x.ini\n"),
            (std::vector<std::string>{"/ws/tools/clean.py", "/ws/conf/x.ini"}));
  EXPECT_EQ(paths("[core]\n\tpager = env X=1 sh ./p.sh | less\n"),
            (std::vector<std::string>{"/ws/p.sh"}));
  EXPECT_EQ(paths("[filter \"lfs\"]\n\tclean = tools/clean %f\n\tsmudge = git-lfs smudge\n"),
            (std::vector<std::string>{"/ws/tools/clean"}));
  EXPECT_EQ(paths("[diff \"Bin\"]\n\ttextconv = ./conv\n[merge \"m\"]\n\tdriver = ../m %O\n"),
            (std::vector<std::string>{"/ws/conv", "/m"}));
  EXPECT_EQ(paths("[alias]\n\tst = !./bin/st --x\n\tco = checkout\n"),
            (std::vector<std::string>{"/ws/bin/st"}));
  EXPECT_EQ(paths("[credential \"https://x\"]\n\thelper = ./cred\n[gpg \"ssh\"]\n\tprogram = "
                  "./sign\n"),
            (std::vector<std::string>{"/ws/cred", "/ws/sign"}));
  // red team round 7: more keys whose value git runs
  EXPECT_EQ(paths("[remote \"origin\"]\n\tuploadpack = t/p7.sh\n\treceivepack = t/r.sh\n"
                  "[difftool \"x\"]\n\tcmd = t/d.sh\n[submodule \"s\"]\n\tupdate = !t/u.sh\n"
                  "[core]\n\tgitProxy = t/g.sh\n"),
            (std::vector<std::string>{"/ws/t/p7.sh", "/ws/t/r.sh", "/ws/t/d.sh", "/ws/t/u.sh",
                                      "/ws/t/g.sh"}));
  EXPECT_EQ(paths("[core]\n\tsshCommand = ./ssh.sh -i k\n[sequence]\n\teditor = ./seq\n"),
            (std::vector<std::string>{"/ws/ssh.sh", "/ws/seq"}));
}

// Red team round 17: the words sh reads, not the literal text. A
// backslash-escaped blank, a glob (protected as a `*` pattern), a
// backslash inside a name, and a script sh -c runs were protected as one
// literal word, and the file sh really ran stayed writable.
TEST(GitConfig, ProgramWordsAreReadAsShReadsThem) {
  auto has = [](const std::vector<std::string>& v, const std::string& x) {
    return std::find(v.begin(), v.end(), x) != v.end();
  };
  auto p = paths(
      "[alias]\n\ta1 = \"!tools/my\\\\ tool.sh\"\n\ta2 = !tools/p.s?\n"
      "\ta3 = !tools/[q].sh\n\ta4 = \"!tools/j.s\\\\h\"\n");
  for (const char* x :
       {"/ws/tools/my tool.sh", "/ws/tools/p.s*", "/ws/tools/*.sh", "/ws/tools/j.sh"})
    EXPECT_TRUE(has(p, x)) << x;
  p = paths(
      "[alias]\n\tc1 = \"!sh -c 'exec tools/ex.sh'\"\n[core]\n\teditor = sh -c "
      "'tools/ed.sh \\\"$1\\\"; echo msg > \\\"$1\\\"' -\n");
  EXPECT_TRUE(has(p, "/ws/tools/ex.sh"));
  EXPECT_TRUE(has(p, "/ws/tools/ed.sh"));
  // double quotes keep a backslash before an ordinary character
  p = paths("[core]\n\tpager = \"sh -c \\\"tools/a\\\\b.sh\\\"\"\n");
  EXPECT_TRUE(has(p, "/ws/tools/a\\b.sh")) << ::testing::PrintToString(p);
  // a bracket with no end in its component is a plain character
  EXPECT_TRUE(has(paths("[core]\n\tpager = tools/[x/y.sh\n"), "/ws/tools/[x/y.sh"));
}

// Red team round 18: a path sh builds at run time names nothing.
TEST(GitConfig, PathsBuiltAtRunTimeAreUnresolved) {
  EXPECT_TRUE(cap::dotdot_after_name("bin/../tools/x.sh"));
  EXPECT_TRUE(cap::dotdot_after_name("../../scripts/sub/../pc.sh"));
  EXPECT_FALSE(cap::dotdot_after_name("../../scripts/pc.sh"));
  EXPECT_FALSE(cap::dotdot_after_name("./tools/./x.sh"));
  for (const char* v : {"tools/fsm-$(uname -s).sh", "tools/m-${X}.sh", "\"tools/$X.sh\"",
                        "tools/`hostname`.sh", "bin/../fsm.sh"}) {
    std::vector<std::string> bad;
    cap::git_config_paths(cap::git_config_refs(std::string("[core]\n\tfsmonitor = ") + v + "\n"),
                          "/ws", "/ws/.git", "/home/ada", &bad);
    EXPECT_EQ(bad.size(), 1u) << v;
  }
  // an expansion in a word without a '/' (an argument) is no path
  std::vector<std::string> bad;
  auto p = cap::git_config_paths(
      cap::git_config_refs("[core]\n\teditor = sh -c 'tools/ed.sh \\\"$1\\\"' -\n"), "/ws",
      "/ws/.git", "/home/ada", &bad);
  EXPECT_TRUE(bad.empty());
  EXPECT_NE(std::find(p.begin(), p.end(), "/ws/tools/ed.sh"), p.end());
  // a short option's attached value
  p = paths("[core]\n\tsshCommand = ssh -vFtools/cfg\n");
  EXPECT_NE(std::find(p.begin(), p.end(), "/ws/tools/cfg"), p.end());
}

TEST(GitConfig, IncludedFilesRelativeToTheirConfig) {
  EXPECT_EQ(paths("[include]\n\tpath = ../cfg/extra\n[includeIf \"gitdir:~/w/\"]\n\tpath = "
                  "~/more\n"),
            (std::vector<std::string>{"/ws/cfg/extra", "/home/ada/more"}));
}

TEST(GitConfig, SyntaxEdgesAreSkippedOrRead) {
  // continued lines, escapes, comments, a value-less boolean key, junk
  EXPECT_EQ(paths("# c\n; c\n[core]\n\tbare\n\tfsmonitor = ./a\\\nb\n garbage line\n[broken\n"),
            (std::vector<std::string>{"/ws/ab"}));
  EXPECT_EQ(paths("hooksPath = x\n"), std::vector<std::string>{});  // no section
  EXPECT_EQ(paths(""), std::vector<std::string>{});
}

// Red team round 11: one table of every key whose value git runs, checked
// against git-config(1) of git 2.39; each is found in a config file.
TEST(GitConfig, EveryKeyGitRunsIsInTheTable) {
  const char* const keys[][2] = {
      {"core", "fsmonitor"},
      {"core", "sshCommand"},
      {"core", "editor"},
      {"core", "pager"},
      {"core", "askPass"},
      {"core", "gitProxy"},
      {"core", "alternateRefsCommand"},
      {"sequence", "editor"},
      {"interactive", "diffFilter"},
      {"pager", "log"},
      {"diff", "external"},
      {"credential", "helper"},
      {"gpg", "program"},
      {"web", "browser"},
      {"help", "browser"},
      {"instaweb", "browser"},
      {"instaweb", "httpd"},
      {"man", "viewer"},
      {"imap", "tunnel"},
      {"uploadpack", "packObjectsHook"},
      {"sendemail", "sendmailCmd"},
      {"sendemail", "smtpServer"},
      {"sendemail", "toCmd"},
      {"sendemail", "ccCmd"},
      {"sendemail", "headerCmd"},
  };
  for (const auto& k : keys) {
    const std::string text = std::string("[") + k[0] + "]\n\t" + k[1] + " = tools/x.sh\n";
    EXPECT_EQ(paths(text.c_str()), (std::vector<std::string>{"/ws/tools/x.sh"})) << text;
  }
  const char* const sub[][2] = {
      {"diff", "textconv"},
      {"diff", "command"},
      {"difftool", "cmd"},
      {"difftool", "path"},
      {"mergetool", "cmd"},
      {"mergetool", "path"},
      {"merge", "driver"},
      {"filter", "clean"},
      {"filter", "smudge"},
      {"filter", "process"},
      {"credential", "helper"},
      {"gpg", "program"},
      {"gpg", "defaultKeyCommand"},
      {"guitool", "cmd"},
      {"browser", "cmd"},
      {"browser", "path"},
      {"man", "cmd"},
      {"man", "path"},
      {"remote", "uploadpack"},
      {"remote", "receivepack"},
      {"trailer", "command"},
      {"trailer", "cmd"},
      {"tar", "command"},
      {"sendemail", "sendmailCmd"},
      {"sendemail", "toCmd"},
      {"sendemail", "ccCmd"},
      {"sendemail", "smtpServer"},
      {"hook", "command"},
  };
  for (const auto& k : sub) {
    const std::string text =
        std::string("[") + k[0] + " \"Sub\"]\n\t" + k[1] + " = tools/x.sh --a\n";
    EXPECT_EQ(paths(text.c_str()), (std::vector<std::string>{"/ws/tools/x.sh"})) << text;
  }
  EXPECT_EQ(paths("[init]\n\ttemplateDir = tpl\n"), (std::vector<std::string>{"/ws/tpl"}));
  EXPECT_EQ(paths("[remote \"o\"]\n\turl = ext::tools/x.sh %S\n\tpushurl = https://h/x/y\n"),
            (std::vector<std::string>{"/ws/tools/x.sh"}));
  // only the "!" forms run a program
  EXPECT_EQ(paths("[alias]\n\tx = log -- a/b\n[submodule \"s\"]\n\tupdate = rebase\n"),
            std::vector<std::string>{});
  EXPECT_EQ(cap::git_executed_keys().size(), 63u);  // a key added here is added above too
}

TEST(GitConfig, ExpansionsResolvedOrRefused) {
  std::vector<std::string> bad;
  auto p = [&bad](const char* text) {
    bad.clear();
    return cap::git_config_paths(cap::git_config_refs(text), "/ws", "/ws/.git", "/home/ada", &bad);
  };
  EXPECT_EQ(p("[core]\n\tfsmonitor = \"$(git rev-parse --show-toplevel)/tools/x.sh\"\n"),
            (std::vector<std::string>{"/ws/tools/x.sh"}));
  EXPECT_EQ(p("[core]\n\tfsmonitor = `git rev-parse --show-toplevel`/t/y.sh\n"),
            (std::vector<std::string>{"/ws/t/y.sh"}));
  EXPECT_EQ(p("[core]\n\tpager = $PWD/p.sh ${HOME}/bin/q\n"),
            (std::vector<std::string>{"/ws/p.sh", "/home/ada/bin/q"}));
  EXPECT_TRUE(bad.empty());
  EXPECT_EQ(p("[core]\n\tfsmonitor = $PWDX/tools/x.sh\n"), std::vector<std::string>{});
  EXPECT_EQ(bad, (std::vector<std::string>{"core.fsmonitor"}));
  EXPECT_EQ(p("[core]\n\tfsmonitor = \"$(dirname $GIT_DIR)/x.sh\"\n"), std::vector<std::string>{});
  EXPECT_EQ(bad, (std::vector<std::string>{"core.fsmonitor"}));
  // an expansion that builds no path is no path
  EXPECT_EQ(p("[credential]\n\thelper = \"!f() { echo password=$PASS; }; f\"\n"),
            std::vector<std::string>{});
  EXPECT_TRUE(bad.empty());
}
