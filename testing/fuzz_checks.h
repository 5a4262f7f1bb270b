// Checks shared by the libFuzzer targets of analyzer/ and dump/: a failure prints what broke, with
// the output, and aborts so that libFuzzer records the input.
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace spmdsim::testing {

[[noreturn]] inline void FuzzFailure(std::string_view fuzzer, std::string_view what,
                                     std::string_view detail, std::string_view text) {
  std::fprintf(stderr, "%.*s: %.*s: %.*s\n--- output ---\n%.*s\n", static_cast<int>(fuzzer.size()),
               fuzzer.data(), static_cast<int>(what.size()), what.data(),
               static_cast<int>(detail.size()), detail.data(), static_cast<int>(text.size()),
               text.data());
  std::abort();
}

// A JSON output as a command writes it must parse back.
inline void CheckJsonParses(std::string_view fuzzer, std::string_view what,
                            const std::string& text) {
  try {
    (void)nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    FuzzFailure(fuzzer, what, e.what(), text);
  }
}

// A text output that a terminal, a browser or an XML reader takes (HTML, JUnit XML, Markdown,
// JSON) must be valid UTF-8 with no control character but tab and newline, no C1 control and no
// U+FFFE/U+FFFF: what a dump holds of those is written as visible text (control_chars.h).
inline void CheckPrintable(std::string_view fuzzer, std::string_view what, std::string_view text) {
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    const auto next = [&](size_t k) {
      return i + k < text.size() ? static_cast<unsigned char>(text[i + k]) : 0;
    };
    const bool control = (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f ||
                         (c == 0xc2 && next(1) >= 0x80 && next(1) <= 0x9f) ||
                         (c == 0xef && next(1) == 0xbf && (next(2) == 0xbe || next(2) == 0xbf));
    if (control) {
      FuzzFailure(fuzzer, what, "a control character or non-character at byte " + std::to_string(i),
                  text);
    }
  }
}

// XML as spmdsim writes it (JUnit): every element closed in order, attribute values quoted, no
// '<' or '&' in text or values but as markup and entities.
inline void CheckXml(std::string_view fuzzer, std::string_view what, std::string_view text) {
  CheckPrintable(fuzzer, what, text);
  std::vector<std::string> open;
  size_t i = 0;
  const auto fail = [&](const std::string& why) {
    FuzzFailure(fuzzer, what, why + " at byte " + std::to_string(i), text);
  };
  while (i < text.size()) {
    if (text[i] == '&') {
      const size_t semi = text.find(';', i);
      const std::string_view entity =
          text.substr(i, semi == std::string_view::npos ? 0 : semi - i + 1);
      if (entity != "&amp;" && entity != "&lt;" && entity != "&gt;" && entity != "&quot;" &&
          entity != "&#39;") {
        fail("a bare '&'");
      }
      i = semi + 1;
      continue;
    }
    if (text[i] != '<') {
      if (text[i] == '>') fail("a bare '>'");
      ++i;
      continue;
    }
    const size_t close = text.find('>', i);
    if (close == std::string_view::npos) fail("an unclosed tag");
    std::string_view tag = text.substr(i + 1, close - i - 1);
    if (tag.size() >= 2 && tag.front() == '?' && tag.back() == '?') {
      i = close + 1;
      continue;
    }
    const bool closing = !tag.empty() && tag.front() == '/';
    const bool empty = !tag.empty() && tag.back() == '/';
    if (closing) tag.remove_prefix(1);
    if (empty) tag.remove_suffix(1);
    const std::string name(tag.substr(0, tag.find_first_of(" \t\n")));
    if (name.empty()) fail("a tag without a name");
    // Attribute values: name="..." with no '<' inside (the '>' search above stops at none).
    size_t quotes = 0;
    for (const char c : tag) quotes += c == '"';
    if (quotes % 2 != 0 || tag.find('<') != std::string_view::npos) fail("a broken attribute");
    if (closing) {
      if (open.empty() || open.back() != name) fail("</" + name + "> closes nothing open");
      open.pop_back();
    } else if (!empty) {
      open.push_back(name);
    }
    i = close + 1;
  }
  if (!open.empty()) FuzzFailure(fuzzer, what, "<" + open.back() + "> not closed", text);
}

// Markdown tables as spmdsim writes them: every row has the header's number of cells (a '|' in
// a cell is escaped), and the text is printable.
inline void CheckMarkdownTables(std::string_view fuzzer, std::string_view what,
                                std::string_view text) {
  CheckPrintable(fuzzer, what, text);
  size_t cells = 0;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = std::min(text.find('\n', start), text.size());
    const std::string_view line = text.substr(start, end - start);
    start = end + 1;
    if (line.empty() || line.front() != '|') {
      cells = 0;
      continue;
    }
    size_t bars = 0;
    for (size_t k = 0; k < line.size(); ++k) {
      if (line[k] == '\\') {
        ++k;
      } else if (line[k] == '|') {
        ++bars;
      }
    }
    if (cells == 0) cells = bars;
    if (bars != cells) FuzzFailure(fuzzer, what, "a table row with another number of cells", text);
  }
}

}  // namespace spmdsim::testing
