#include "dump/oom_log.h"

#include <algorithm>
#include <charconv>

#include "dump/size_text.h"

namespace spmdsim::dump {
namespace {

// An Operator line that a terminal wrapped is joined again, up to this many lines.
constexpr int kMaxOperatorContinuation = 64;
// Log lines kept in OomMessage::header.
constexpr size_t kMaxHeaderLines = 16;

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
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
      const std::string_view line = Trim(text_.substr(0, newline));
      text_.remove_prefix(newline == std::string_view::npos ? text_.size() : newline + 1);
      ++line_number_;
      Line(line);
    }
    CloseListing();
    // Figures printed after the last listing belong to it.
    if (!listings_.empty()) Complete(listings_.back().figures, pending_);
  }

  std::vector<Listing>& Listings() { return listings_; }
  std::vector<std::string>& Header() { return header_; }

 private:
  void Line(std::string_view line) {
    if (continuing_ > 0 && current_ != nullptr) {
      if (!IsFieldLine(line) && !StartsWith(line, "Buffer ") &&
          line.find(". Size:") == std::string_view::npos) {
        // A wrapped Operator line: the terminal broke it mid-word, so join without a space.
        current_->operator_text += std::string(line);
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
      header_.emplace_back(line);
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
      b.size_text = std::string(*v);
    } else if (auto op = After(line, "Operator:")) {
      b.operator_text = std::string(*op);
      // An odd number of quotes: the terminal wrapped the line.
      if (std::count(b.operator_text.begin(), b.operator_text.end(), '"') % 2 == 1) {
        continuing_ = kMaxOperatorContinuation;
      }
      ParseOperator();
    } else if (auto p = After(line, "Entry Parameter Subshape:")) {
      b.entry_parameter = std::string(*p);
      b.shape = b.entry_parameter;
    } else if (auto l = After(line, "XLA Label:")) {
      b.label = std::string(*l);
    } else if (auto tl = After(line, "XLA label:")) {
      // TPU: "fusion.12 = fusion(param.3), kind=kLoop, ..." (older: "%iota.2 = s32[...] iota()").
      b.label = std::string(*tl);
      std::string_view name = *tl;
      const size_t eq = name.find(" = ");
      if (eq != std::string_view::npos) {
        name = name.substr(0, eq);
        if (!name.empty() && name.front() == '%') name.remove_prefix(1);
        b.instruction = std::string(name);
      }
    } else if (auto s = After(line, "Shape:")) {
      b.shape = std::string(*s);
    } else if (auto u = After(line, "Unpadded size:")) {
      b.unpadded_size_text = std::string(*u);
      b.unpadded_size_bytes = ParseSize(b.unpadded_size_text);
    } else if (auto x = After(line, "Extra memory due to padding:")) {
      b.padding_text = std::string(*x);
    } else if (auto a = After(line, "Allocation type:")) {
      b.allocation_type = std::string(*a);
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
    if (const size_t at = line.find("Ran out of memory in memory space ");
        at != std::string_view::npos) {
      m.capacity.memory_space = std::string(FirstWord(line.substr(at + 34)));
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
    if (message && rank > m.message_rank) {
      const size_t status = line.find("RESOURCE_EXHAUSTED");
      m.message = std::string(status == std::string_view::npos ? line : line.substr(status));
      m.message_rank = rank;
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
  std::string block_;  // the block of figures being read
  std::vector<std::string> header_;
};

}  // namespace

DumpResult<OomLog> ReadOomLog(std::string_view text) {
  OomLogParser parser(text);
  parser.Run();
  std::vector<Listing>& listings = parser.Listings();
  if (listings.empty()) {
    return DumpError{
        DumpErrorKind::kParse, "",
        "no peak-buffer entries with a size found (XLA:GPU/CPU \"Buffer N:\" with \"Size:\", or "
        "XLA:TPU \"N. Size:\"); paste the part of XLA's out-of-memory message that lists the "
        "peak buffers (\"BufferAssignment OOM Debugging\" or \"Largest program allocations\")"};
  }
  OomLog log;
  log.header = std::move(parser.Header());
  Listing primary = std::move(listings.front());
  for (size_t i = 1; i < listings.size(); ++i) {
    Listing& later = listings[i];
    if (SameListing(primary, later)) {
      ++log.repeats_skipped;
      log.repeat_lines.push_back(later.line);
      if (later.entries.size() > primary.entries.size()) primary.entries = later.entries;
      Complete(primary.figures, later.figures);
    } else {
      log.notes.push_back("a different listing of " + std::to_string(later.entries.size()) +
                          " buffers starts at line " + std::to_string(later.line) +
                          "; only the first listing of a log is read (paste the other alone "
                          "to read it)");
    }
  }
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
