// Brace expansion ({a,b} -> a b) and the ${X:-word} reading of a word, on words the reader made.
#include "parser.hpp"

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace execmcp::plugins::shell_syntax::detail {
namespace {

// Brace expansion reads words up to this size; a longer word with an unquoted `{a,b}` makes the
// line too large to judge (real words with braces are short).
constexpr std::size_t kMaxBraceWordBytes = 4096;

// The leftmost brace group `{a,b}` (plain braces, a plain comma at its top level), in one pass.
struct BraceGroup {
  std::size_t open = 0;
  std::size_t close = 0;
  std::vector<std::size_t> commas;
};

std::optional<BraceGroup> find_brace_group(const std::string& value, const std::string& kinds) {
  std::vector<BraceGroup> open;
  std::optional<BraceGroup> best;
  for (std::size_t i = 0; i < value.size(); ++i) {
    if (kinds[i] != kPlainChar) continue;
    if (value[i] == '{') {
      open.push_back({i, 0, {}});
    } else if (value[i] == ',' && !open.empty()) {
      open.back().commas.push_back(i);
    } else if (value[i] == '}' && !open.empty()) {
      BraceGroup group = std::move(open.back());
      open.pop_back();
      group.close = i;
      if (!group.commas.empty() && (!best || group.open < best->open)) best = std::move(group);
    }
  }
  return best;
}

// Brace expansion as bash does it (comma lists only; {a..z} stays as written). False when the
// word would expand to more than kMaxBraceWords words.
bool expand_braces(const std::string& value, const std::string& kinds, std::vector<Word>& out,
                   const Word& original) {
  if (out.size() > kMaxBraceWords) return false;
  std::optional<BraceGroup> group = find_brace_group(value, kinds);
  if (!group) {
    bool empty_unquoted = value.empty() && !original.quoted;
    if (!empty_unquoted) {
      Word w = original;
      w.value = value;
      w.kinds = kinds;
      out.push_back(std::move(w));
    }
    return out.size() <= kMaxBraceWords;
  }
  std::vector<std::size_t> cuts{group->open};
  cuts.insert(cuts.end(), group->commas.begin(), group->commas.end());
  cuts.push_back(group->close);
  for (std::size_t k = 0; k + 1 < cuts.size(); ++k) {
    std::size_t from = cuts[k] + 1;
    std::size_t to = cuts[k + 1];
    std::string v = value.substr(0, group->open) + value.substr(from, to - from) +
                    value.substr(group->close + 1);
    std::string kd = kinds.substr(0, group->open) + kinds.substr(from, to - from) +
                     kinds.substr(group->close + 1);
    if (!expand_braces(v, kd, out, original)) return false;
  }
  return true;
}

}  // namespace

// The word's value with every ${X:-word} / ${X-word} / ${X:=word} / ${X=word} / ${X:+word} /
// ${X+word} replaced by its word (quotes removed) and ${HOME%...} by $HOME/.., or nullopt when
// there is none.
std::optional<Word> default_reading(const Word& w) {
  if (w.value.find("${") == std::string::npos) return std::nullopt;
  Word out = w;
  out.value.clear();
  out.kinds.clear();
  bool replaced = false;
  std::size_t i = 0;
  while (i < w.value.size()) {
    if (!(w.value[i] == '$' && w.kinds[i] == kExpansionChar && i + 1 < w.value.size() &&
          w.value[i + 1] == '{')) {
      out.add(w.value[i], w.kinds[i]);
      ++i;
      continue;
    }
    std::size_t close = find_close_brace(w.value, i + 2);
    std::string_view inner =
        std::string_view(w.value).substr(i + 2, std::min(close, w.value.size()) - (i + 2));
    std::size_t j = 0;
    if (!inner.empty() && is_name_start(inner[0])) {
      while (j < inner.size() && is_name_char(inner[j])) ++j;
    } else {
      while (j < inner.size() && is_digit(inner[j])) ++j;
      if (j == 0 && !inner.empty() &&
          std::string_view("@*#?-$!").find(inner[0]) != std::string_view::npos)
        j = 1;
    }
    if (j < inner.size() && inner[j] == '[') {
      auto bracket = inner.find(']', j);
      j = bracket == std::string_view::npos ? inner.size() : bracket + 1;
    }
    std::size_t next = close < w.value.size() ? close + 1 : w.value.size();
    if (inner.substr(0, j) == "HOME" && j < inner.size() && inner[j] == '%') {
      out.add("$HOME/..", kQuotedChar);  // ${HOME%/*} trims to HOME's parent
      replaced = true;
      i = next;
      continue;
    }
    if (j < inner.size() && inner[j] == ':') ++j;
    bool has_word =
        j > 0 && j < inner.size() && (inner[j] == '-' || inner[j] == '=' || inner[j] == '+');
    if (!has_word) {
      out.add(std::string_view(w.value).substr(i, next - i), kExpansionChar);
      i = next;
      continue;
    }
    std::string word;
    for (char c : inner.substr(j + 1)) {
      if (c != '\'' && c != '"' && c != '\\') word += c;
    }
    out.add(word, kQuotedChar);
    replaced = true;
    i = next;
  }
  if (!replaced) return std::nullopt;
  return out;
}

// Brace-expands words[first..] in place. False when a word expands to too many words.
bool Parser::expand_words(std::vector<Word>& words, std::size_t first) {
  bool any = false;
  for (std::size_t i = first; i < words.size() && !any; ++i)
    any = words[i].kinds.find(kPlainChar) != std::string::npos &&
          words[i].value.find('{') != std::string::npos;
  if (!any) return true;
  std::vector<Word> out(words.begin(), words.begin() + static_cast<std::ptrdiff_t>(first));
  for (std::size_t i = first; i < words.size(); ++i) {
    const Word& w = words[i];
    if (w.value.find('{') == std::string::npos) {
      out.push_back(w);
      continue;
    }
    if (w.value.size() > kMaxBraceWordBytes && find_brace_group(w.value, w.kinds)) return false;
    std::vector<Word> expanded;
    if (!expand_braces(w.value, w.kinds, expanded, w)) return false;
    for (auto& e : expanded) out.push_back(std::move(e));
    if (out.size() > words.size() + kMaxBraceWords) return false;
  }
  words = std::move(out);
  return true;
}

}  // namespace execmcp::plugins::shell_syntax::detail
