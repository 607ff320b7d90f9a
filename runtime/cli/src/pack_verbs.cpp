// The SoyaPack verbs (verbs.hpp): `pack validate|lint|bundle|explain|annotation|run|
// flags` (pack_cli.hpp, violations.hpp for flags), and `rootfs
// --from-host` (hostroot.hpp), the default rootfs of `pack run`.
#include <iostream>

#include "comet/host/log.hpp"
#include "comet/pack/hostroot.hpp"
#include "comet/pack/pack_cli.hpp"
#include "comet/reporting/violations.hpp"
#include "verbs.hpp"

namespace comet::runtime::cli {
namespace {

void add_pack_run(CLI::App* pack, Options& o) {
  PackRunOptions& pro = o.pack_run;
  auto* prun = pack->add_subcommand(
      "run", "bundle the pack, run the agent confined, collect /workdir/out, clean up");
  prun->add_option("pack", pro.pack, "pack directory or soyapack.yaml")->required();
  prun->add_option("--rootfs", pro.rootfs,
                   "the rootfs to run on (default: the interpreter and its libraries from the "
                   "host, cached under /var/lib/comet-runtime/rootfs)");
  prun->add_option("--input", pro.input, "host dir served read-only at /workdir/inputs");
  prun->add_option("--output", pro.output, "host dir that receives /workdir/out after the run");
  prun->add_option("--id", pro.id, "container id (default: pack-<random>)");
  prun->add_option("--events", o.events_target, "deliver violation events to FILE or unix:PATH");
  prun->add_option("--dns-upstream", o.dns_upstream,
                   "DNS servers the egress resolver forwards allowed names to (IP, IP:PORT, "
                   "[IPv6]:PORT, comma-separated; default $COMET_DNS_UPSTREAM, else the host's "
                   "/etc/resolv.conf)");
  // The deterministic-tier cache (docs/cache.md).
  prun->add_flag("--no-cache", pro.no_cache,
                 "run the pack even if a cached result exists; record nothing");
  prun->add_option("--cache", o.pack_run_cache,
                   "auto (read-only packs without egress) or allow-upstream (also read-only packs "
                   "with egress: their recorded LLM/API answers are replayed, not asked again)")
      ->check(CLI::IsMember({"auto", "allow-upstream"}))
      ->capture_default_str();
  prun->add_option(
      "--cache-dir", pro.cache_dir,
      "the cache store (default: $COMET_CACHE_DIR, else /var/cache/comet-runtime/packs)");
  o.prun = prun;
}

}  // namespace

CLI::App* add_pack(CLI::App& app, const Verb& v, Options& o) {
  auto* pack = app.add_subcommand(v.name, v.help);
  pack->require_subcommand(1);
  o.pvalidate = pack->add_subcommand("validate", "check the manifest's shape");
  o.pvalidate->add_option("pack", o.pack_path, "pack directory or soyapack.yaml")->required();
  o.plint = pack->add_subcommand("lint", "check capabilities, tools and examples agree");
  o.plint->add_option("pack", o.pack_path, "pack directory or soyapack.yaml")->required();
  o.plint->add_flag("--strict", o.pack_strict, "also fail wildcards, uncovered capabilities");
  o.plint->add_option("--format", o.pack_format, "text or json")
      ->check(CLI::IsMember({"text", "json"}));
  o.plint->add_option("--rootfs", o.pack_rootfs, "check runtime.interpreter exists in this rootfs");
  auto* pbundle = pack->add_subcommand("bundle", "compile the capabilities into an OCI bundle");
  pbundle->add_option("pack", o.pack_path, "pack directory")->required();
  pbundle->add_option("--rootfs", o.pack_rootfs, "the rootfs the pack runs on")->required();
  // --bundle, not -o: beside --output (the results dir) a "-o" reads as
  // either one (issue 26). --output-bundle cannot be misread and stays.
  pbundle->add_option("--bundle,--output-bundle", o.pack_out,
                      "the OCI bundle directory to write (config.json, workdir/)");
  pbundle->add_option("-o", o.pack_out_o)->group("");  // refused with a hint
  pbundle->add_option("--input", o.pack_input, "host dir served read-only at /workdir/inputs");
  pbundle->add_option("--output", o.pack_output,
                      "host dir the agent (uid 65534) writes as /workdir/out; made for it when "
                      "missing (default: BUNDLE/out)");
  o.pbundle = pbundle;
  o.pexplain = pack->add_subcommand(
      "explain", "say what the agent sees at a path (and why), or whether a host is allowed");
  o.pexplain->add_option("pack", o.pack_path, "pack directory or soyapack.yaml")->required();
  o.pexplain->add_option("--path", o.explain_path, "a sandbox path");
  o.pexplain->add_option("--host", o.explain_host, "HOST:PORT[:PROTO]");
  o.pexplain->add_option("--rootfs", o.pack_rootfs,
                         "the rootfs pack run would get (default: its default rootfs)");
  o.pexplain->add_option("--input", o.pack_input, "the dir pack run --input would get");
  o.pexplain->add_option("--format", o.pack_format, "text or json")
      ->check(CLI::IsMember({"text", "json"}));
  o.pannotation = pack->add_subcommand(
      "annotation",
      "print the annotations that confine a container to the pack's capabilities, for an "
      "engine (podman --annotation, a Kubernetes pod's metadata.annotations, or the raw JSON "
      "value of org.soyaos.comet.capabilities)");
  o.pannotation->add_option("pack", o.pack_path, "pack directory or soyapack.yaml")->required();
  o.pannotation
      ->add_option("--format", o.annotation_format,
                   "podman: one --annotation argument (CSV, quotes doubled) carrying both "
                   "annotations; k8s: a YAML `annotations:` block; json: the capabilities JSON "
                   "alone")
      ->check(CLI::IsMember({"podman", "k8s", "json"}))
      ->capture_default_str();
  add_pack_run(pack, o);
  // `pack flags [list|clear NAME@VERSION]` (violations.hpp).
  o.pflags = pack->add_subcommand(
      "flags",
      "list or clear pack versions flagged for violations (per --root and per user; "
      "docs/events.md \"Flags\")");
  o.pflags->add_option("action", o.flags_action, "list or clear")
      ->check(CLI::IsMember({"list", "clear"}));
  o.pflags->add_option("pack-version", o.flags_arg, "NAME@VERSION (for clear)");
  o.prun->add_option("args", o.pack_run_args,
                     "arguments for the agent (after --), replacing runtime.args");
  o.pack = pack;
  return pack;
}

int run_pack(CLI::App&, Options& o) {
  if (*o.pvalidate) return pack_validate(o.pack_path);
  if (*o.plint) return pack_lint(o.pack_path, o.pack_strict, o.pack_format, o.pack_rootfs);
  if (*o.pbundle) {
    if (o.pbundle->count("-o")) {
      log::error(
          "pack bundle: -o is ambiguous: give the bundle directory as --bundle DIR (--output DIR "
          "is the host dir for /workdir/out)");
      return 2;
    }
    return pack_bundle({o.pack_path, o.pack_rootfs, o.pack_out, o.pack_input, o.pack_output});
  }
  if (*o.pexplain)
    return pack_explain(
        {o.pack_path, o.explain_path, o.explain_host, o.pack_rootfs, o.pack_input, o.pack_format});
  if (*o.pannotation) return pack_annotation(o.pack_path, o.annotation_format);
  if (*o.pflags) return violations::flags_cli(o.g.root, o.flags_action, o.flags_arg);
  if (*o.prun) {
    // after "--", cli.cpp took the words as they are
    if (!o.pack_run_args_verbatim && o.prun->count("args")) o.pack_run.args = o.pack_run_args;
    o.pack_run.allow_upstream = o.pack_run_cache == "allow-upstream";
    return pack_run(o.g, o.pack_run);
  }
  return 1;
}

CLI::App* add_rootfs(CLI::App& app, const Verb& v, Options& o) {
  HostRootfsOptions& ro = o.rootfs;
  auto* rootfs = app.add_subcommand(v.name, v.help);
  rootfs
      ->add_option("--from-host", ro.binaries,
                   "host programs (a name looked up in PATH, or a path), each with its ELF "
                   "interpreter and libraries; a pythonX.Y also brings /usr/lib/pythonX.Y "
                   "without its tests, IDLE, tkinter and dist-packages")
      ->type_name("BIN")
      ->required();
  rootfs->add_option("-o,--output", ro.output, "rootfs directory to create (absent or empty)")
      ->type_name("DIR")
      ->required();
  rootfs
      ->add_option("--tree", ro.trees,
                   "also add this host directory tree verbatim, on one filesystem (repeatable)")
      ->type_name("PATH")
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  rootfs->add_flag("--copy", ro.copy,
                   "copy every file (default: hard links where DIR is on the same filesystem, "
                   "so a container that can write its rootfs writes the host's files)");
  rootfs->add_flag("--force", ro.force, "replace DIR when it exists and is not empty");
  rootfs->add_flag("--verbose", o.rootfs_verbose, "print every path added");
  return rootfs;
}

int run_rootfs(CLI::App&, Options& o) {
  auto r = rootfs_from_host(o.rootfs);
  if (!r.ok()) return fail(r.error());
  if (o.rootfs_verbose)
    for (const auto& line : *r) std::cout << line << "\n";
  return 0;
}

}  // namespace comet::runtime::cli
