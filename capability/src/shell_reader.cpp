// The shell reader (shell_reader.hpp): a recursive-descent tokenizer and
// parser over the text, one character at a time.
#include "shell_reader.hpp"

#include <algorithm>
#include <cctype>

namespace comet::capability::shell {

namespace {

class Reader {
 public:
  explicit Reader(std::string_view s) : s_(s) {}

  // A list of pipelines up to `end` (0: the end of input).
  Script list(char end) {
    Script sc;
    Pipeline pl;
    Stage st;
    Simple cmd;
    bool expect_target = false;
    std::string redir_op;
    auto end_simple = [&] {
      if (expect_target) throw ParseError{"a redirection without a target"};
      if (!cmd.words.empty() || !cmd.redirects.empty()) st.simples.push_back(std::move(cmd));
      cmd = Simple{};
    };
    auto end_stage = [&] {
      end_simple();
      if (!st.simples.empty() || !st.groups.empty()) pl.stages.push_back(std::move(st));
      st = Stage{};
    };
    auto end_pipeline = [&] {
      end_stage();
      if (!pl.stages.empty()) sc.pipelines.push_back(std::move(pl));
      pl = Pipeline{};
    };
    while (true) {
      skip_blanks();
      if (at_end()) {
        if (end) throw ParseError{std::string("missing \"") + end + "\""};
        break;
      }
      char c = s_[i_];
      if (end && c == end) {
        ++i_;
        break;
      }
      if (c == '#') {  // a comment (only where a word could start)
        while (!at_end() && s_[i_] != '\n') ++i_;
        continue;
      }
      if (c == '\n' || c == ';') {
        ++i_;
        if (c == ';' && peek(0) == ';') throw ParseError{"case statements are not analysed"};
        end_pipeline();
        continue;
      }
      if (c == '&') {
        if (peek(1) == '&') {
          i_ += 2;
          end_pipeline();
          continue;
        }
        if (peek(1) == '>') {  // &> and &>>
          i_ += peek(2) == '>' ? 3 : 2;
          redir_op = "&>";
          expect_target = true;
          continue;
        }
        ++i_;
        end_pipeline();
        continue;
      }
      if (c == '|') {
        if (peek(1) == '|') {
          i_ += 2;
          end_pipeline();
          continue;
        }
        i_ += peek(1) == '&' ? 2 : 1;
        if (cmd.words.empty() && cmd.redirects.empty() && st.simples.empty() && st.groups.empty())
          throw ParseError{"a pipe without a command"};
        end_stage();
        continue;
      }
      if (c == '(' && cmd.words.empty() && !expect_target) {
        ++i_;
        if (peek(0) == '(') throw ParseError{"(( arithmetic commands are not analysed"};
        st.groups.push_back(nested_list(')'));
        continue;
      }
      if (c == ')' || c == '(') throw ParseError{std::string("unexpected \"") + c + "\""};
      if (c == '<' || c == '>') {
        if (c == '<' && peek(1) == '(') {  // process substitution: a word
          Word w = word();
          push_word(cmd, std::move(w), expect_target, redir_op);
          continue;
        }
        redir_op = read_redirect_op();
        expect_target = true;
        continue;
      }
      Word w = word();
      // N> and N< : the digits were a file descriptor.
      if (!w.quoted && !w.expansion && !w.text.empty() && !at_end() &&
          (s_[i_] == '<' || s_[i_] == '>') &&
          std::all_of(w.text.begin(), w.text.end(), [](char d) { return d >= '0' && d <= '9'; })) {
        redir_op = read_redirect_op();
        expect_target = true;
        continue;
      }
      // `{ list; }` groups: `{` is a reserved word at the start of a command.
      if (!w.quoted && w.text == "{" && cmd.words.empty() && !expect_target) {
        st.groups.push_back(nested_list('}'));
        continue;
      }
      if (!w.quoted && w.text == "}" && cmd.words.empty()) throw ParseError{"unexpected \"}\""};
      push_word(cmd, std::move(w), expect_target, redir_op);
    }
    end_pipeline();
    return sc;
  }

 private:
  bool at_end() const { return i_ >= s_.size(); }
  char peek(std::size_t k) const { return i_ + k < s_.size() ? s_[i_ + k] : '\0'; }

  void skip_blanks() {
    while (!at_end()) {
      if (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\r') {
        ++i_;
      } else if (s_[i_] == '\\' && peek(1) == '\n') {
        i_ += 2;
      } else {
        break;
      }
    }
  }

  Script nested_list(char end) {
    if (++depth_ > kMaxDepth) throw ParseError{"nested too deeply"};
    Script sc = list(end);
    --depth_;
    return sc;
  }

  static void push_word(Simple& cmd, Word w, bool& expect_target, std::string& op) {
    if (expect_target) {
      cmd.redirects.push_back({op, std::move(w)});
      expect_target = false;
    } else {
      cmd.words.push_back(std::move(w));
    }
  }

  std::string read_redirect_op() {
    std::string op;
    op += s_[i_++];
    if (op == "<" && peek(0) == '<') {
      if (peek(1) == '<') {  // here-string: <<< word
        i_ += 2;
        return "<<<";
      }
      throw ParseError{"heredocs are not analysed"};
    }
    if (!at_end() && (s_[i_] == '>' || s_[i_] == '&' || s_[i_] == '|')) op += s_[i_++];
    return op;
  }

  // The text up to the ) that closes a $( or <( opened just before i_.
  std::string balanced(char open, char close) {
    std::size_t start = i_;
    int level = 1;
    while (!at_end()) {
      char c = s_[i_];
      if (c == '\\') {
        i_ += 2;
        continue;
      }
      if (c == '\'') {
        std::size_t q = s_.find('\'', i_ + 1);
        if (q == std::string_view::npos) throw ParseError{"an unterminated ' quote"};
        i_ = q + 1;
        continue;
      }
      if (c == '"') {
        ++i_;
        while (!at_end() && s_[i_] != '"') i_ += s_[i_] == '\\' ? 2 : 1;
        if (at_end()) throw ParseError{"an unterminated \" quote"};
        ++i_;
        continue;
      }
      if (c == open) ++level;
      if (c == close && --level == 0) {
        std::string inner(s_.substr(start, i_ - start));
        ++i_;
        return inner;
      }
      ++i_;
    }
    throw ParseError{std::string("missing \"") + close + "\""};
  }

  // `...`, after the opening '`': a command substitution.
  void backquote(Word& w) {
    std::string inner;
    while (!at_end() && s_[i_] != '`') {
      if (s_[i_] == '\\' && i_ + 1 < s_.size()) ++i_;
      inner += s_[i_++];
    }
    if (at_end()) throw ParseError{"an unterminated ` quote"};
    ++i_;
    w.subs.push_back(inner);
    w.expansion = true;
    w.text += "`" + inner + "`";
  }

  // $..., after the '$'.
  void dollar(Word& w) {
    w.expansion = true;
    if (peek(0) == '(' && peek(1) == '(') {
      i_ += 2;
      std::string inner = balanced('(', ')');
      if (peek(0) != ')') throw ParseError{"an unterminated $(("};
      ++i_;
      // $(( $(cmd) )) and $(( `cmd` )) run cmd (red team round 9).
      if (inner.find("$(") != std::string::npos || inner.find('`') != std::string::npos)
        throw ParseError{"a command substitution inside $(( )) is not analysed"};
      w.text += "$((" + inner + "))";
      w.arith.push_back(inner);
      return;
    }
    if (peek(0) == '[') {  // $[ expr ]: the old spelling of $(( ))
      ++i_;
      std::string inner = balanced('[', ']');
      if (inner.find("$(") != std::string::npos || inner.find('`') != std::string::npos)
        throw ParseError{"a command substitution inside $[ ] is not analysed"};
      w.text += "$[" + inner + "]";
      w.arith.push_back(inner);
      return;
    }
    if (peek(0) == '(') {
      ++i_;
      std::string inner = balanced('(', ')');
      w.subs.push_back(inner);
      w.text += "$(" + inner + ")";
      return;
    }
    if (peek(0) == '{') {
      ++i_;
      std::string inner = balanced('{', '}');
      w.text += "${" + inner + "}";
      braced(w, inner);
      return;
    }
    w.text += '$';
  }

  // The inside of ${...} (red team round 12). Its operator words expand:
  // the $( ), ` ` and ${ } in them are read (quotes or not: `'` quotes in
  // ${x:-'$(cmd)'} but not in "${x:-'$(cmd)'}", so both are taken as code).
  // The subscript, the offset and length, and an indirection are arithmetic;
  // ${x@P} expands x as a prompt, running the $( ) its value holds: asked.
  void braced(Word& w, const std::string& inner) {
    if (depth_ + 1 > kMaxDepth) throw ParseError{"nested too deeply"};
    std::size_t k = 0;
    const bool indirect = !inner.empty() && inner[0] == '!';
    if (indirect || (!inner.empty() && inner[0] == '#')) ++k;
    const std::size_t name = k;
    while (k < inner.size() &&
           (std::isalnum(static_cast<unsigned char>(inner[k])) || inner[k] == '_'))
      ++k;
    if (k == name && k < inner.size() &&
        std::string_view("@*#?$!-").find(inner[k]) != std::string_view::npos)
      ++k;
    if (indirect) {
      w.arith.push_back(inner.substr(1));
    } else if (k < inner.size() && inner[k] == '[') {
      w.arith.push_back(inner.substr(k));
    } else if (k < inner.size() && inner[k] == ':' &&
               (k + 1 >= inner.size() ||
                std::string_view("-=?+").find(inner[k + 1]) == std::string_view::npos)) {
      w.arith.push_back(inner.substr(k + 1));
    }
    for (std::size_t at = inner.find('@'); at != std::string::npos; at = inner.find('@', at + 1))
      if (at + 1 < inner.size() && inner[at + 1] == 'P')
        throw ParseError{"a prompt expansion (${..@P}) is not analysed"};
    Reader r(inner);
    r.depth_ = depth_ + 1;
    Word scratch;
    while (!r.at_end()) {
      const char c = r.s_[r.i_++];
      if (c == '\\') {
        ++r.i_;
      } else if (c == '$') {
        r.dollar(scratch);
      } else if (c == '`') {
        r.backquote(scratch);
      } else if ((c == '<' || c == '>') && r.peek(0) == '(') {
        ++r.i_;
        scratch.subs.push_back(r.balanced('(', ')'));
      }
    }
    w.subs.insert(w.subs.end(), scratch.subs.begin(), scratch.subs.end());
    w.arith.insert(w.arith.end(), scratch.arith.begin(), scratch.arith.end());
  }

  // "...", after the opening '"': \ escapes only " \ $ ` and a newline;
  // $ and ` expand.
  void double_quoted(Word& w) {
    w.quoted = true;
    while (true) {
      if (at_end()) throw ParseError{"an unterminated \" quote"};
      char d = s_[i_];
      if (d == '"') {
        ++i_;
        break;
      }
      if (d == '\\' && i_ + 1 < s_.size() &&
          (s_[i_ + 1] == '"' || s_[i_ + 1] == '\\' || s_[i_ + 1] == '$' || s_[i_ + 1] == '`' ||
           s_[i_ + 1] == '\n')) {
        if (s_[i_ + 1] != '\n') w.text += s_[i_ + 1];
        i_ += 2;
        continue;
      }
      if (d == '$') {
        ++i_;
        dollar(w);
        continue;
      }
      if (d == '`') {
        ++i_;
        backquote(w);
        continue;
      }
      w.text += d;
      ++i_;
    }
  }

  Word word() {
    Word w;
    if (peek(0) == '~') w.tilde = true;
    if ((peek(0) == '<' || peek(0) == '>') && peek(1) == '(') {
      i_ += 2;
      std::string inner = balanced('(', ')');
      w.subs.push_back(inner);
      w.expansion = w.process_sub = true;
      w.text = "<(" + inner + ")";
      return w;
    }
    while (!at_end()) {
      char c = s_[i_];
      if (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == ';' || c == '&' || c == '|' ||
          c == '<' || c == '>' || c == '(' || c == ')') {
        break;
      }
      if (c == '\\') {
        if (peek(1) == '\n') {
          i_ += 2;
          continue;
        }
        if (i_ + 1 < s_.size()) w.text += s_[i_ + 1];
        w.quoted = true;
        i_ += 2;
        continue;
      }
      if (c == '\'') {
        std::size_t q = s_.find('\'', i_ + 1);
        if (q == std::string_view::npos) throw ParseError{"an unterminated ' quote"};
        w.text += s_.substr(i_ + 1, q - i_ - 1);
        w.quoted = true;
        i_ = q + 1;
        continue;
      }
      if (c == '"') {
        ++i_;
        double_quoted(w);
        continue;
      }
      if (c == '$') {
        ++i_;
        dollar(w);
        continue;
      }
      if (c == '`') {
        ++i_;
        backquote(w);
        continue;
      }
      if (c == '*' || c == '?' || c == '[') w.glob = true;
      if (c == '{') w.brace = true;
      w.text += c;
      ++i_;
    }
    return w;
  }

  std::string_view s_;
  std::size_t i_ = 0;
  int depth_ = 0;
};

}  // namespace

Script parse_script(std::string_view text, int depth) {
  if (depth > kMaxDepth) throw ParseError{"nested too deeply"};
  Reader r(text);
  return r.list(0);
}

}  // namespace comet::capability::shell
