// The shell reader of the permission layer (auto_allow.hpp): a small
// POSIX-shell parser, enough to see the commands a script runs. It reads
// `sh -c SCRIPT` text into pipelines of simple commands (words with their
// command substitutions kept as inner scripts) and redirections; what it
// cannot read (a heredoc, `case`, an unbalanced quote, a ${x@P} prompt
// expansion) is a ParseError, and
// the caller asks: fail-closed. No expansion happens: a word keeps $VAR,
// $(..) and globs verbatim, flagged.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace comet::capability::shell {

inline constexpr int kMaxDepth = 8;  // nested sh -c / $( ) levels before we give up (ask)

struct Word {
  std::string text;               // quotes removed; expansions kept verbatim
  bool expansion = false;         // contains $VAR, ${..}, $(..), `..`, <(..) or $((..))
  bool tilde = false;             // starts with an unquoted ~
  bool quoted = false;            // some part was quoted
  std::vector<std::string> subs;  // inner scripts of $(..), `..`, <(..), >(..)
  bool process_sub = false;       // the word is a <(..) / >(..)
  bool glob = false;              // holds an unquoted * ? or [ (a pathname pattern)
  bool brace = false;             // holds an unquoted { (brace expansion, maybe)
  // Texts bash evaluates as arithmetic when it expands the word: $(( )),
  // $[ ], a ${name[SUBSCRIPT]}, a ${name:OFFSET:LENGTH}, a ${!name}
  // (red team round 12: an array subscript in arithmetic runs the $( ) in
  // it, and a variable's value is evaluated as an expression, recursively).
  std::vector<std::string> arith;
};

struct Redirect {
  std::string op;
  Word target;
};

struct Script;

struct Simple {
  std::vector<Word> words;
  std::vector<Redirect> redirects;
};

struct Stage {
  std::vector<Simple> simples;  // one simple command, or a group's
  std::vector<Script> groups;   // ( ... ) and { ...; } bodies
};

struct Pipeline {
  std::vector<Stage> stages;
};

struct Script {
  std::vector<Pipeline> pipelines;
};

struct ParseError {
  std::string why;
};

// Reads `text`, `depth` levels of sh -c / $( ) deep; throws ParseError.
Script parse_script(std::string_view text, int depth);

}  // namespace comet::capability::shell
