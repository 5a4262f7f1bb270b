#include "dump/oom_log.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <tuple>

#include "dump/size_text.h"
#include "ir/checked_math.h"

namespace spmdsim::dump {
namespace {

// A status line broken by the terminal is joined over at most this many lines.
constexpr int64_t kMaxStatusLines = 3;

// An Operator line that a terminal wrapped is joined again, up to this many lines.
constexpr int kMaxOperatorContinuation = 64;
// Log lines kept in OomMessage::header.
constexpr size_t kMaxHeaderLines = 16;
// What is kept of one field or header line: XLA's op_names and shapes are far shorter; a longer
// one (a 1 GiB op_name) is cut, so that a listing costs memory per buffer, not per input byte.
constexpr size_t kMaxFieldBytes = 8192;

// `text`, cut to kMaxFieldBytes with the count of what was cut.
std::string Capped(std::string_view text) {
  if (text.size() <= kMaxFieldBytes) return std::string(text);
  return std::string(text.substr(0, kMaxFieldBytes)) + "... (" +
         std::to_string(text.size() - kMaxFieldBytes) + " more bytes not kept)";
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

// A glog/absl line prefix, "I0309 12:51:51.361715 140505975940928 run_docker.py:247] " (AlphaFold's
// docker runner relays XLA's message with one on every line): the severity letter and date, the
// time, the thread id, then "file:line] ". The line without it; the line itself when it has none.
std::string_view WithoutLogPrefix(std::string_view line) {
  if (line.size() < 8 || std::string_view("IWEF").find(line[0]) == std::string_view::npos) {
    return line;
  }
  for (size_t i = 1; i <= 4; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(line[i]))) return line;
  }
  if (line[5] != ' ') return line;
  const size_t bracket = line.find("] ");
  // The rest of the prefix is time, thread and file:line: no space-free gap longer than a path.
  if (bracket == std::string_view::npos || bracket > 160) return line;
  const std::string_view prefix = line.substr(0, bracket);
  if (prefix.find(':') == std::string_view::npos || prefix.find('.') == std::string_view::npos) {
    return line;
  }
  return Trim(line.substr(bracket + 2));
}

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

// The text after `prefix` when `s` starts with it.
std::optional<std::string_view> After(std::string_view s, std::string_view prefix) {
  if (!StartsWith(s, prefix)) return std::nullopt;
  return Trim(s.substr(prefix.size()));
}

// A whole non-negative decimal number; nullopt for anything else or on overflow.
std::optional<int64_t> Integer(std::string_view s) {
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size() || value < 0) return std::nullopt;
  return value;
}

// The first whitespace-separated word of `s`, without a trailing '.', ',' or ':'.
std::string_view FirstWord(std::string_view s) {
  s = Trim(s);
  std::string_view word = s.substr(0, s.find_first_of(" \t"));
  while (!word.empty() &&
         (word.back() == '.' || word.back() == ',' || word.back() == ':' || word.back() == ';')) {
    word.remove_suffix(1);
  }
  return word;
}

// key="value" or key=value inside an Operator line (xla::OpMetadataToString).
std::string Field(std::string_view line, std::string_view key) {
  const std::string pattern = std::string(key) + "=";
  size_t at = 0;
  while ((at = line.find(pattern, at)) != std::string_view::npos) {
    if (at == 0 || line[at - 1] == ' ') break;
    at += pattern.size();
  }
  if (at == std::string_view::npos) return {};
  std::string_view rest = line.substr(at + pattern.size());
  if (!rest.empty() && rest.front() == '"') {
    rest.remove_prefix(1);
    return std::string(rest.substr(0, rest.find('"')));
  }
  return std::string(rest.substr(0, rest.find(' ')));
}

// What one copy of the message says besides its listing.
struct MessageFigures {
  std::string format;
  std::string message;
  int message_rank = 0;
  std::optional<int64_t> failed_bytes;
  bool failed_exact = false;
  int failed_rank = 0;  // which line gave failed_bytes: 3 XLA's, 2 the device's, 1 the allocator's
  std::string failed_text;
  OomCapacity capacity;
  std::vector<OomFigure> stats;
};

struct Listing {
  int64_t line = 0;
  std::vector<OomLogBuffer> entries;
  MessageFigures figures;
};

// Fills what `into` lacks from `from` (a repeated copy of the same message).
void Complete(MessageFigures& into, const MessageFigures& from) {
  if (into.format.empty()) into.format = from.format;
  if (from.message_rank > into.message_rank) {
    into.message = from.message;
    into.message_rank = from.message_rank;
  }
  if (from.failed_rank > into.failed_rank) {
    into.failed_bytes = from.failed_bytes;
    into.failed_exact = from.failed_exact;
    into.failed_rank = from.failed_rank;
    into.failed_text = from.failed_text;
  }
  if (into.capacity.memory_space.empty()) into.capacity = from.capacity;
  if (into.stats.empty()) into.stats = from.stats;
}

bool SameEntry(const OomLogBuffer& a, const OomLogBuffer& b) {
  return a.number == b.number && a.size_text == b.size_text && a.operator_text == b.operator_text &&
         a.label == b.label && a.shape == b.shape && a.entry_parameter == b.entry_parameter &&
         a.allocation_type == b.allocation_type && a.unpadded_size_text == b.unpadded_size_text;
}

// One listing is a copy of the other when every entry they both have is the same (a copy cut
// short by the user still counts).
bool SameListing(const Listing& a, const Listing& b) {
  const size_t n = std::min(a.entries.size(), b.entries.size());
  for (size_t i = 0; i < n; ++i) {
    if (!SameEntry(a.entries[i], b.entries[i])) return false;
  }
  return true;
}

class OomLogParser {
 public:
  explicit OomLogParser(std::string_view text) : text_(text) {}

  void Run() {
    while (!text_.empty()) {
      const size_t newline = text_.find('\n');
      const std::string_view line = WithoutLogPrefix(Trim(text_.substr(0, newline)));
      text_.remove_prefix(newline == std::string_view::npos ? text_.size() : newline + 1);
      ++line_number_;
      Line(line);
    }
    CloseListing();
    // Figures printed after the last listing belong to it.
    if (!listings_.empty()) {
      Complete(listings_.back().figures, pending_);
      pending_ = {};
    }
  }

  std::vector<Listing>& Listings() { return listings_; }
  // The figures of a message with no listing at all (libtpu's E1000 before its listing).
  const MessageFigures& Unlisted() const { return pending_; }
  std::vector<std::string>& Header() { return header_; }

 private:
  void Line(std::string_view line) {
    if (continuing_ > 0 && current_ != nullptr) {
      if (!IsFieldLine(line) && !StartsWith(line, "Buffer ") &&
          line.find(". Size:") == std::string_view::npos) {
        // A wrapped Operator line: the terminal broke it mid-word, so join without a space.
        current_->operator_text = Capped(current_->operator_text + std::string(line));
        --continuing_;
        if (std::count(current_->operator_text.begin(), current_->operator_text.end(), '"') % 2 ==
            0) {
          continuing_ = 0;
        }
        ParseOperator();
        return;
      }
      continuing_ = 0;
    }
    if (listings_.empty() && open_.entries.empty() && !line.empty() && line != "..." &&
        header_.size() < kMaxHeaderLines && !StartsWith(line, "Buffer ") &&
        line.find(". Size:") == std::string_view::npos) {
      header_.push_back(Capped(line));
    }
    if (EntryStart(line)) return;
    if (current_ != nullptr && EntryField(line)) return;
    if (MessageLine(line)) return;
    if (!block_.empty() && StatsLine(line)) return;
    block_.clear();
  }

  static bool IsFieldLine(std::string_view line) {
    for (std::string_view prefix :
         {"Size:", "Operator:", "Entry Parameter Subshape:", "XLA Label:", "XLA label:", "Shape:",
          "Unpadded size:", "Extra memory due to padding:", "Allocation type:", "===="}) {
      if (StartsWith(line, prefix)) return true;
    }
    return false;
  }

  // "Buffer N:" (GPU/CPU) or "N. Size: X" (TPU).
  bool EntryStart(std::string_view line) {
    std::optional<int64_t> number;
    std::string size_text;
    if (StartsWith(line, "Buffer ") && line.back() == ':') {
      number = Integer(line.substr(7, line.size() - 8));
    } else {
      const size_t dot = line.find(". Size:");
      if (dot != std::string_view::npos && dot > 0) {
        number = Integer(line.substr(0, dot));
        size_text = std::string(Trim(line.substr(dot + 7)));
        if (pending_.format.empty() && open_.figures.format.empty()) pending_.format = "tpu-hbm";
      }
    }
    if (!number) return false;
    // A new listing starts at a listing header, after message lines, or where the numbering
    // starts again.
    if (!open_.entries.empty() && (listing_closed_ || *number <= open_.entries.back().number)) {
      CloseListing();
    }
    if (open_.entries.empty()) {
      open_.line = line_number_;
      Complete(open_.figures, pending_);
      pending_ = {};
    }
    listing_closed_ = false;
    block_.clear();
    OomLogBuffer entry;
    entry.number = *number;
    entry.line = line_number_;
    entry.size_text = size_text;
    open_.entries.push_back(std::move(entry));
    current_ = &open_.entries.back();
    return true;
  }

  bool EntryField(std::string_view line) {
    OomLogBuffer& b = *current_;
    if (auto v = After(line, "Size:")) {
      b.size_text = Capped(*v);
    } else if (auto op = After(line, "Operator:")) {
      b.operator_text = Capped(*op);
      // An odd number of quotes: the terminal wrapped the line.
      if (std::count(b.operator_text.begin(), b.operator_text.end(), '"') % 2 == 1) {
        continuing_ = kMaxOperatorContinuation;
      }
      ParseOperator();
    } else if (auto p = After(line, "Entry Parameter Subshape:")) {
      b.entry_parameter = Capped(*p);
      b.shape = b.entry_parameter;
    } else if (auto l = After(line, "XLA Label:")) {
      b.label = Capped(*l);
    } else if (auto tl = After(line, "XLA label:")) {
      // TPU: "fusion.12 = fusion(param.3), kind=kLoop, ..." (older: "%iota.2 = s32[...] iota()").
      b.label = Capped(*tl);
      std::string_view name = *tl;
      const size_t eq = name.find(" = ");
      if (eq != std::string_view::npos) {
        name = name.substr(0, eq);
        if (!name.empty() && name.front() == '%') name.remove_prefix(1);
        b.instruction = std::string(name);
      }
    } else if (auto s = After(line, "Shape:")) {
      b.shape = Capped(*s);
    } else if (auto u = After(line, "Unpadded size:")) {
      b.unpadded_size_text = Capped(*u);
      b.unpadded_size_bytes = ParseSize(b.unpadded_size_text);
    } else if (auto x = After(line, "Extra memory due to padding:")) {
      b.padding_text = Capped(*x);
    } else if (auto a = After(line, "Allocation type:")) {
      b.allocation_type = Capped(*a);
    } else if (StartsWith(line, "====")) {
      current_ = nullptr;
    } else {
      return false;
    }
    return true;
  }

  void ParseOperator() {
    OomLogBuffer& b = *current_;
    b.op_type = Field(b.operator_text, "op_type");
    b.op_name = Field(b.operator_text, "op_name");
    b.source_file = Field(b.operator_text, "source_file");
    b.source_line = Integer(Field(b.operator_text, "source_line")).value_or(0);
    b.source.clear();
    if (!b.source_file.empty()) {
      const size_t slash = b.source_file.rfind('/');
      b.source = (slash == std::string::npos ? b.source_file : b.source_file.substr(slash + 1)) +
                 (b.source_line > 0 ? ":" + std::to_string(b.source_line) : "");
    }
  }

  // The error line and the figures around the listing; true when the line was one of them.
  bool MessageLine(std::string_view line) {
    bool message = false;
    MessageFigures& m = pending_;
    auto set_failed = [&](int rank, std::optional<int64_t> bytes, bool exact,
                          std::string_view text) {
      if (!bytes || rank <= m.failed_rank) return;
      m.failed_rank = rank;
      m.failed_bytes = bytes;
      m.failed_exact = exact;
      m.failed_text = std::string(text);
    };
    // XLA: "Out of memory while trying to allocate 2110783616 bytes."
    if (const size_t at = line.find("while trying to allocate "); at != std::string_view::npos) {
      const std::string_view rest = line.substr(at + 25);
      const size_t space = rest.find(' ');
      set_failed(3, Integer(rest.substr(0, space)), true, rest.substr(0, rest.find('.')));
      message = true;
    }
    // The device: "Failed to allocate request for 154.06GiB (165425291480B) on device ordinal 0".
    if (const size_t at = line.find("Failed to allocate request for ");
        at != std::string_view::npos) {
      const std::string_view rest = line.substr(at + 31);
      const size_t open = rest.find('(');
      const size_t close = rest.find(')');
      std::optional<int64_t> bytes;
      if (open != std::string_view::npos && close != std::string_view::npos && close > open) {
        bytes = ParseSize(rest.substr(open + 1, close - open - 1));
      }
      set_failed(2, bytes, true, Trim(rest.substr(0, open)));
      message = true;
    }
    // The allocator: "ran out of memory trying to allocate 1.97GiB (rounded to 2110783744)".
    if (const size_t at = line.find("ran out of memory trying to allocate ");
        at != std::string_view::npos) {
      const std::string_view rest = line.substr(at + 37);
      const std::string_view text = FirstWord(rest);
      set_failed(1, ParseSize(text), false, text);
      message = true;
    }
    // TPU: "Ran out of memory in memory space hbm. Used 20.54G of 15.48G hbm. Exceeded hbm
    // capacity by 5.06G." (sometimes broken over two lines).
    // The terminal may break it after "memory space": the space is then the next line's first
    // word ("hbm. Used 126.45G of 94.75G hbm. ...").
    if (space_on_next_line_) {
      space_on_next_line_ = false;
      std::string_view space = FirstWord(line);
      if (!space.empty() && space.back() == '.') space.remove_suffix(1);
      if (!space.empty()) m.capacity.memory_space = std::string(space);
    }
    if (const size_t at = line.find("Ran out of memory in memory space");
        at != std::string_view::npos) {
      const std::string_view rest = Trim(line.substr(at + 33));
      std::string_view space = FirstWord(rest);
      if (!space.empty() && space.back() == '.') space.remove_suffix(1);
      m.capacity.memory_space = std::string(space);
      space_on_next_line_ = space.empty();
      m.format = "tpu-hbm";
      message = true;
    }
    // libtpu's E1000: "Ran out of memory on HBM, the total memory required for HLO temporaries
    // (26.68G) exceeds available HBM (15.75G)".
    if (const size_t at = line.find("exceeds available ");
        at != std::string_view::npos && line.find("Ran out of memory") != std::string_view::npos) {
      const auto parenthesized = [](std::string_view text) {
        const size_t open = text.find('(');
        const size_t close = text.find(')', open);
        return open == std::string_view::npos || close == std::string_view::npos
                   ? std::string_view()
                   : text.substr(open + 1, close - open - 1);
      };
      const std::string_view used = parenthesized(line.substr(0, at));
      const std::string_view available = parenthesized(line.substr(at));
      m.capacity.memory_space = "hbm";
      m.capacity.used_text = std::string(used);
      m.capacity.used_bytes = ParseSize(used);
      m.capacity.capacity_text = std::string(available);
      m.capacity.capacity_bytes = ParseSize(available);
      if (m.capacity.used_bytes && m.capacity.capacity_bytes &&
          *m.capacity.used_bytes >= *m.capacity.capacity_bytes) {
        m.capacity.exceeded_bytes = *m.capacity.used_bytes - *m.capacity.capacity_bytes;
        // In libtpu's own words (two decimals of GiB), as its other message prints it.
        m.capacity.exceeded_text =
            fmt::format("{:.2f}G", static_cast<double>(*m.capacity.exceeded_bytes) / (1 << 30));
      }
      m.format = "tpu-hbm";
      message = true;
    }
    // "Used X of Y <space>" and "Exceeded <space> capacity by Z", after the line above.
    if (const size_t at = line.find("Used ");
        at != std::string_view::npos && !m.capacity.memory_space.empty()) {
      const std::string_view rest = line.substr(at + 5);
      const size_t of = rest.find(" of ");
      const std::optional<int64_t> used = ParseSize(FirstWord(rest));
      if (of != std::string_view::npos && used) {
        const std::string_view capacity = FirstWord(rest.substr(of + 4));
        m.capacity.used_text = std::string(FirstWord(rest));
        m.capacity.used_bytes = used;
        m.capacity.capacity_text = std::string(capacity);
        m.capacity.capacity_bytes = ParseSize(capacity);
        message = true;
      }
    }
    if (const size_t by = line.find(" capacity by ");
        by != std::string_view::npos && line.find("Exceeded ") < by) {
      const std::string_view exceeded = FirstWord(line.substr(by + 13));
      m.capacity.exceeded_text = std::string(exceeded);
      m.capacity.exceeded_bytes = ParseSize(exceeded);
      message = true;
    }
    // The message is the line that says most: XLA's own, over the device's and the allocator's.
    const int rank = m.capacity.memory_space.empty() ? m.failed_rank : 3;
    const size_t status = line.find("RESOURCE_EXHAUSTED");
    if (message && rank > m.message_rank) {
      m.message = std::string(status == std::string_view::npos ? line : line.substr(status));
      // A status line the terminal broke: the lines since "RESOURCE_EXHAUSTED", joined.
      if (status == std::string_view::npos && !wrapped_status_.empty() &&
          line_number_ - wrapped_status_line_ <= kMaxStatusLines) {
        m.message = wrapped_status_ + " " + m.message;
      }
      m.message_rank = rank;
    }
    if (status != std::string_view::npos) {
      wrapped_status_ = std::string(line.substr(status));
      wrapped_status_line_ = line_number_;
    } else if (!wrapped_status_.empty() && line_number_ - wrapped_status_line_ < kMaxStatusLines) {
      wrapped_status_ += " " + std::string(line);
    }
    if (line == "BufferAssignment OOM Debugging.") {
      m.format = "buffer-assignment";
      message = true;
    } else if (line == "BufferAssignment stats:") {
      m.format = "buffer-assignment";
      block_ = "BufferAssignment stats";
      message = true;
    } else if (auto total = After(line, "Total hbm usage >=")) {
      AddBlockTotal("Total hbm usage", *total);
      message = true;
    } else if (auto program = After(line, "Program hbm requirement")) {
      AddBlockTotal("Program hbm requirement", *program);
      message = true;
    } else if (auto output = After(line, "Output size ")) {
      // "Output size 0B; shares 0B with arguments."
      const std::string_view size = FirstWord(*output);
      if (const auto bytes = ParseSize(size)) {
        m.stats.push_back({"Output", "output size", std::string(size), *bytes, ""});
      }
      const size_t shares = output->find("shares ");
      if (shares != std::string_view::npos) {
        const std::string_view shared = FirstWord(output->substr(shares + 7));
        if (const auto bytes = ParseSize(shared)) {
          m.stats.push_back({"Output", "shares with arguments", std::string(shared), *bytes, ""});
        }
      }
      message = true;
    } else if (line == "Peak buffers:" || StartsWith(line, "Largest program allocations in ")) {
      if (StartsWith(line, "Largest")) m.format = "tpu-hbm";
      block_.clear();
      message = true;
    }
    if (message) {
      listing_closed_ = true;
      current_ = nullptr;
    }
    return message;
  }

  void AddBlockTotal(std::string_view block, std::string_view rest) {
    std::string_view figure = rest;
    if (!figure.empty() && figure.back() == ':') figure.remove_suffix(1);
    figure = Trim(figure);
    pending_.format = "tpu-hbm";
    block_ = std::string(block);
    if (const auto bytes = ParseSize(figure)) {
      pending_.stats.push_back({block_, "total", std::string(figure), *bytes, ""});
    }
  }

  // "parameter allocation:    1.02GiB" (GPU/CPU) or "HLO temp   20.54G (33.9% ...)" (TPU).
  bool StatsLine(std::string_view line) {
    std::string name;
    std::string_view rest;
    const size_t colon = line.find(':');
    if (block_ == "BufferAssignment stats") {
      if (colon == std::string_view::npos) return false;
      name = std::string(Trim(line.substr(0, colon)));
      rest = Trim(line.substr(colon + 1));
    } else {
      // The name is the words before the first one that reads as a size.
      size_t at = 0;
      while (at < line.size()) {
        const size_t end = std::min(line.find_first_of(" \t", at), line.size());
        const std::string_view word = line.substr(at, end - at);
        if (at > 0 && ParseSize(word)) {
          rest = line.substr(at);
          break;
        }
        at = end;
        while (at < line.size() && (line[at] == ' ' || line[at] == '\t')) ++at;
      }
      if (rest.empty()) return false;
      name = std::string(Trim(line.substr(0, line.size() - rest.size())));
    }
    const size_t space = rest.find_first_of(" \t");
    const std::string_view figure = rest.substr(0, space);
    const std::optional<int64_t> bytes = ParseSize(figure);
    if (!bytes || name.empty()) return false;
    const std::string_view detail =
        space == std::string_view::npos ? std::string_view() : Trim(rest.substr(space));
    pending_.stats.push_back({block_, name, std::string(figure), *bytes, std::string(detail)});
    return true;
  }

  void CloseListing() {
    current_ = nullptr;
    continuing_ = 0;
    std::vector<OomLogBuffer> sized;
    for (OomLogBuffer& b : open_.entries) {
      if (!b.size_text.empty()) sized.push_back(std::move(b));
    }
    open_.entries = std::move(sized);
    if (!open_.entries.empty()) listings_.push_back(std::move(open_));
    open_ = {};
  }

  std::string_view text_;
  int64_t line_number_ = 0;
  std::vector<Listing> listings_;
  Listing open_;                     // the listing being read
  MessageFigures pending_;           // figures seen since the last listing started
  OomLogBuffer* current_ = nullptr;  // the entry being read, in open_
  int continuing_ = 0;               // lines an unterminated Operator may still take
  bool listing_closed_ = false;
  bool space_on_next_line_ = false;  // "Ran out of memory in memory space" ended its line
  std::string wrapped_status_;       // the last RESOURCE_EXHAUSTED line and what followed it
  int64_t wrapped_status_line_ = 0;
  std::string block_;  // the block of figures being read
  std::vector<std::string> header_;
};

}  // namespace

namespace {

// A message is complete when it has its error line and its figures (the stats block, or TPU's
// capacity line): what a user pastes whole, where a listing alone was cut from it.
bool IsComplete(const MessageFigures& figures) {
  return figures.message_rank > 0 &&
         (!figures.stats.empty() || !figures.capacity.memory_space.empty());
}

int64_t ListedBytes(const Listing& listing) {
  int64_t bytes = 0;
  for (const OomLogBuffer& b : listing.entries) {
    const std::optional<int64_t> size = ParseSizeSaturating(b.size_text);
    if (size) bytes = ir::SaturatingAdd(bytes, *size);
  }
  return bytes;
}

// The copies of each distinct listing merged (JAX repeats the message in its traceback; a copy
// cut short still counts), in the order they first appear.
struct ListingGroup {
  Listing merged;
  std::vector<int64_t> repeat_lines;
};

std::vector<ListingGroup> GroupCopies(std::vector<Listing>& listings) {
  std::vector<ListingGroup> groups;
  for (Listing& listing : listings) {
    ListingGroup* group = nullptr;
    for (ListingGroup& g : groups)
      group = group == nullptr && SameListing(g.merged, listing) ? &g : group;
    if (group == nullptr) {
      groups.push_back({std::move(listing), {}});
      continue;
    }
    group->repeat_lines.push_back(listing.line);
    if (listing.entries.size() > group->merged.entries.size()) {
      group->merged.entries = std::move(listing.entries);
    }
    Complete(group->merged.figures, listing.figures);
  }
  return groups;
}

// The listing to read: a complete message's first, else the one with most buffers, then most
// bytes, then the first. `why` says which rule chose it, for the notes.
size_t ChooseListing(const std::vector<ListingGroup>& groups, std::string& why) {
  size_t best = 0;
  const auto key = [&](size_t i) {
    const Listing& l = groups[i].merged;
    return std::make_tuple(IsComplete(l.figures), l.entries.size(), ListedBytes(l));
  };
  for (size_t i = 1; i < groups.size(); ++i) best = key(i) > key(best) ? i : best;
  const bool complete = IsComplete(groups[best].merged.figures);
  size_t complete_count = 0;
  for (const ListingGroup& g : groups) complete_count += IsComplete(g.merged.figures) ? 1 : 0;
  why = complete && complete_count == 1 ? "the complete message: its error line and figures"
        : complete                      ? "the complete message with the most buffers"
                   : "no listing comes with its error line and figures: the largest (most "
                     "buffers, then most bytes)";
  return best;
}

}  // namespace

DumpResult<OomLog> ReadOomLog(std::string_view text) {
  OomLogParser parser(text);
  parser.Run();
  std::vector<Listing>& listings = parser.Listings();
  OomLog log;
  log.header = std::move(parser.Header());
  if (listings.empty()) {
    // A message with no listing (libtpu's compile-time OOM, E1000): its figures alone.
    if (!IsComplete(parser.Unlisted()) && parser.Unlisted().message_rank == 0) {
      return DumpError{
          DumpErrorKind::kParse, "",
          "no out-of-memory message found: no peak-buffer entries with a size (XLA:GPU/CPU "
          "\"Buffer N:\" with \"Size:\", or XLA:TPU \"N. Size:\") and no error line (\"Out of "
          "memory while trying to allocate\", \"Ran out of memory in memory space\", libtpu's "
          "\"exceeds available HBM\"); paste XLA's whole out-of-memory message"};
    }
    Listing none;
    none.figures = parser.Unlisted();
    listings.push_back(std::move(none));
    log.notes.push_back(
        "the message lists no buffers; with --dump DIR (the module XLA dumped) the buffers live "
        "at spmdsim's peak are listed instead");
  }
  std::vector<ListingGroup> groups = GroupCopies(listings);
  std::string why;
  const size_t chosen = ChooseListing(groups, why);
  for (size_t i = 0; i < groups.size(); ++i) {
    const Listing& l = groups[i].merged;
    if (i == chosen) continue;
    log.notes.push_back(fmt::format(
        "a listing of {} buffers {} at line {} was not read; the one at line {} was: {}",
        l.entries.size(), IsComplete(l.figures) ? "with its message" : "without its message",
        l.line, groups[chosen].merged.line, why));
  }
  Listing& primary = groups[chosen].merged;
  log.repeats_skipped = static_cast<int64_t>(groups[chosen].repeat_lines.size());
  log.repeat_lines = groups[chosen].repeat_lines;
  MessageFigures& figures = primary.figures;
  log.format = figures.format.empty() ? "buffer-assignment" : figures.format;
  log.message = figures.message;
  log.failed_allocation_bytes = figures.failed_bytes;
  log.failed_allocation_exact = figures.failed_exact;
  log.failed_allocation_text = figures.failed_text;
  log.capacity = figures.capacity;
  log.stats = std::move(figures.stats);
  log.buffers = std::move(primary.entries);
  return log;
}

}  // namespace spmdsim::dump
