#include "analyzer/views/ci_formats.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <sstream>

#include "analyzer/emit/control_chars.h"
#include "analyzer/emit/html_escape.h"
#include "analyzer/emit/utf8.h"
#include "analyzer/views/check_view.h"

namespace spmdsim::analyzer {
namespace {

std::string ModuleLabel(const ModuleFigures& m) { return fmt::format("{} ({})", m.name, m.stage); }

// One `::<level> <properties>::<message>` line. `line` 0 = no line property.
void Annotation(std::ostream& out, const char* level, const std::string& file, int64_t line,
                const std::string& title, const std::string& message) {
  std::string properties = "file=" + GithubEscapeProperty(file);
  if (line > 0) properties += fmt::format(",line={}", line);
  properties += ",title=" + GithubEscapeProperty(title);
  out << "::" << level << " " << properties << "::" << GithubEscapeData(message) << "\n";
}

// "jit_train_step.after_optimizations": dots separate package levels in JUnit class names.
std::string JunitClassName(const ModuleFigures& m) {
  std::string name = "spmdsim.check." + m.name + "." + m.stage;
  for (char& c : name) {
    if (std::isspace(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

}  // namespace

// Text from a dump in Markdown (a table cell or a list item): every ASCII punctuation character
// backslash-escaped (CommonMark: always literal), so no `|` ends a cell, no backtick opens a
// code span, no `<` starts HTML, no `*`, `_`, `[` or `&` forms emphasis, links or entities; a
// newline would end the row, controls are made visible (control_chars.h).
std::string MarkdownCell(std::string_view raw) {
  const std::string text = EscapeControls(ValidUtf8(raw), /*keep_newlines=*/false);
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    if (std::ispunct(static_cast<unsigned char>(c))) out += '\\';
    out += c;
  }
  return out;
}

// `text` as a Markdown code span: delimited by one backtick more than its longest run of them,
// with a space inside each delimiter when it starts or ends with a backtick (CommonMark 6.1).
std::string MarkdownCode(std::string_view raw) {
  const std::string text = EscapeControls(ValidUtf8(raw), /*keep_newlines=*/false);
  size_t longest = 0;
  size_t run = 0;
  for (const char c : text) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  const std::string fence(longest + 1, '`');
  const bool pad = !text.empty() && (text.front() == '`' || text.back() == '`');
  return fence + (pad ? " " : "") + text + (pad ? " " : "") + fence;
}

SourceLocation SplitSource(std::string_view source) {
  const size_t colon = source.rfind(':');
  if (colon == std::string_view::npos || colon + 1 == source.size() || colon == 0) {
    return {std::string(source), 0};
  }
  int64_t line = 0;
  for (size_t i = colon + 1; i < source.size(); ++i) {
    const char c = source[i];
    if (!std::isdigit(static_cast<unsigned char>(c)) || line > 100000000) {
      return {std::string(source), 0};
    }
    line = line * 10 + (c - '0');
  }
  return {std::string(source.substr(0, colon)), line};
}

std::string RelativeTo(std::string_view path, std::string_view root) {
  while (root.size() > 1 && root.back() == '/') root.remove_suffix(1);
  if (root.empty() || path.size() <= root.size() + 1 || path.substr(0, root.size()) != root ||
      path[root.size()] != '/') {
    return std::string(path);
  }
  return std::string(path.substr(root.size() + 1));
}

std::string GithubEscapeData(std::string_view text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '%':
        out += "%25";
        break;
      case '\r':
        out += "%0D";
        break;
      case '\n':
        out += "%0A";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string GithubEscapeProperty(std::string_view text) {
  std::string out;
  for (const char c : GithubEscapeData(text)) {
    if (c == ':') {
      out += "%3A";
    } else if (c == ',') {
      out += "%2C";
    } else {
      out += c;
    }
  }
  return out;
}

std::string XmlEscape(std::string_view text) {
  // XML 1.0 has no representation for most control characters, escaped or not, nor for U+FFFE
  // and U+FFFF: HtmlEscape makes them visible text (control_chars.h), tab and newline kept.
  return HtmlEscape(text);  // the same five entities
}

void PrintGithubAnnotations(const CheckRun& run, const CiOutputOptions& options,
                            std::ostream& out) {
  if (!run.nothing_compared.empty()) {
    Annotation(out, "error", RelativeTo(run.NothingComparedFile(), options.source_root), 0,
               "spmdsim check compared nothing", run.nothing_compared);
  }
  for (const CheckRun::UnreadInput& u : run.unread_inputs) {
    Annotation(out, "error", RelativeTo(u.file, options.source_root), 0,
               "spmdsim could not read this file; its modules were not checked", u.message);
  }
  for (const ModuleCheck& m : run.modules) {
    const std::string module_file = RelativeTo(m.figures.file, options.source_root);
    if (m.match == BaselineMatch::kMissing || m.match == BaselineMatch::kNewModule) {
      Annotation(out, "warning", module_file, 0, "spmdsim module on one side only",
                 fmt::format("{}: {}", ModuleLabel(m.figures), OneSideText(m.match)));
    }
    for (const CheckRow& row : m.rows) {
      if (row.status == CheckStatus::kOk || row.metric == CheckMetric::kFindings) continue;
      // At the user's source line of the largest growth when known (the dump is not in the pull
      // request), else at the module's file.
      const SourceLocation where = SplitSource(row.source);
      Annotation(out, "error",
                 row.source.empty() ? module_file : RelativeTo(where.file, options.source_root),
                 row.source.empty() ? 0 : where.line,
                 fmt::format("spmdsim {} {}", row.MetricName(), CheckStatusName(row.status)),
                 row.message);
    }
    for (const CheckedFinding& checked : m.findings) {
      const CheckFinding& f = checked.finding;
      if (!checked.is_new && f.source.empty()) continue;
      const SourceLocation where = SplitSource(f.source);
      const bool located = !f.source.empty();
      Annotation(out, checked.is_new ? "error" : "warning",
                 located ? RelativeTo(where.file, options.source_root) : module_file,
                 located ? where.line : 0,
                 fmt::format("spmdsim {}{}", checked.is_new ? "new " : "", f.kind),
                 fmt::format("{}: {}", ModuleLabel(m.figures), f.message));
    }
  }
}

std::string GithubStepSummary(const CheckRun& run) {
  std::ostringstream out;
  out << "### spmdsim check\n\n" << MarkdownCell(CheckVerdict(run)) << "\n\n";
  out << "| module | stage | metric | baseline | now | change | limit | status |\n"
      << "|---|---|---|---:|---:|---:|---:|---|\n";
  for (const ModuleCheck& m : run.modules) {
    const std::string name = MarkdownCell(m.figures.name);
    const std::string stage = MarkdownCell(m.figures.stage);
    if (m.match == BaselineMatch::kMissing || m.match == BaselineMatch::kNewModule) {
      out << fmt::format("| {} | {} | baseline | | | | | {} |\n", name, stage,
                         OneSideText(m.match));
    }
    for (const CheckRow& row : m.rows) {
      const std::string status = CheckCellStatus(row);
      out << fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} |\n", name, stage,
                         MarkdownCell(row.MetricName()),
                         row.baseline ? CheckCellValue(row, *row.baseline) : "",
                         CheckCellValue(row, row.now), CheckCellChange(row), CheckCellLimit(row),
                         row.status == CheckStatus::kOk ? status : "**" + status + "**");
    }
  }
  for (const ModuleCheck& m : run.modules) {
    if (m.grew.empty()) continue;
    out << fmt::format("\nWhat grew at the peak of {} ({}):\n\n", MarkdownCell(m.figures.name),
                       MarkdownCell(m.figures.stage));
    for (const PeakGrowth& g : m.grew) out << "- " << MarkdownCell(g.Text()) << "\n";
  }
  bool any_new = false;
  for (const ModuleCheck& m : run.modules) {
    for (const CheckedFinding& checked : m.findings) {
      if (!checked.is_new) continue;
      if (!any_new) out << "\nNew findings:\n\n";
      any_new = true;
      const CheckFinding& f = checked.finding;
      out << fmt::format("- {} in {} ({}){}: {}\n", MarkdownCode(f.kind),
                         MarkdownCell(m.figures.name), MarkdownCell(m.figures.stage),
                         f.source.empty() ? "" : " at " + MarkdownCode(f.source),
                         MarkdownCell(f.message));
    }
  }
  return out.str();
}

std::string JunitXml(const CheckRun& run) {
  std::ostringstream suites;
  int64_t tests = 0;
  int64_t failures = 0;
  int64_t skipped = 0;
  for (const ModuleCheck& m : run.modules) {
    std::ostringstream cases;
    int64_t suite_tests = 0;
    int64_t suite_failures = 0;
    int64_t suite_skipped = 0;
    const std::string class_name = XmlEscape(JunitClassName(m.figures));
    if (m.match == BaselineMatch::kMissing || m.match == BaselineMatch::kNewModule) {
      ++suite_tests;
      ++suite_skipped;
      cases << fmt::format(
          "    <testcase classname=\"{}\" name=\"baseline\">\n"
          "      <skipped message=\"{}\"/>\n    </testcase>\n",
          class_name, OneSideText(m.match));
    }
    for (const CheckRow& row : m.rows) {
      ++suite_tests;
      cases << fmt::format("    <testcase classname=\"{}\" name=\"{}\">", class_name,
                           XmlEscape(row.MetricName()));
      if (row.status == CheckStatus::kOk) {
        cases << "</testcase>\n";
        continue;
      }
      ++suite_failures;
      std::string detail = fmt::format("now {}, limit {}", row.now, row.limit);
      if (row.baseline) detail = fmt::format("baseline {}, ", *row.baseline) + detail;
      if (row.metric == CheckMetric::kFindings) {
        for (const CheckedFinding& f : m.findings) {
          if (f.is_new) {
            detail += fmt::format("\nnew {} at {}: {}", f.finding.kind, f.finding.source,
                                  f.finding.message);
          }
        }
      }
      cases << fmt::format("\n      <failure type=\"{}\" message=\"{}\">{}</failure>\n",
                           CheckStatusName(row.status), XmlEscape(row.message), XmlEscape(detail))
            << "    </testcase>\n";
    }
    suites << fmt::format(
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\">\n",
        XmlEscape(ModuleLabel(m.figures)), suite_tests, suite_failures, suite_skipped);
    suites << "    <properties>\n"
           << fmt::format("      <property name=\"file\" value=\"{}\"/>\n",
                          XmlEscape(m.figures.file))
           << "    </properties>\n"
           << cases.str() << "  </testsuite>\n";
    tests += suite_tests;
    failures += suite_failures;
    skipped += suite_skipped;
  }
  if (!run.nothing_compared.empty()) {
    // Its own suite: a CI dashboard that shows only failures must show this one.
    ++tests;
    ++failures;
    suites << fmt::format(
        "  <testsuite name=\"spmdsim check\" tests=\"1\" failures=\"1\" errors=\"0\" "
        "skipped=\"0\">\n"
        "    <testcase classname=\"spmdsim.check\" name=\"compared-anything\">\n"
        "      <failure type=\"nothing-compared\" message=\"{}\"/>\n"
        "    </testcase>\n  </testsuite>\n",
        XmlEscape(run.nothing_compared));
  }
  if (!run.unread_inputs.empty()) {
    const size_t n = run.unread_inputs.size();
    tests += static_cast<int64_t>(n);
    failures += static_cast<int64_t>(n);
    suites << fmt::format(
        "  <testsuite name=\"spmdsim inputs\" tests=\"{0}\" failures=\"{0}\" errors=\"0\" "
        "skipped=\"0\">\n",
        n);
    for (const CheckRun::UnreadInput& u : run.unread_inputs) {
      suites << fmt::format(
          "    <testcase classname=\"spmdsim.inputs\" name=\"{}\">\n"
          "      <failure type=\"unreadable-input\" message=\"{}\"/>\n"
          "    </testcase>\n",
          XmlEscape(u.file), XmlEscape(u.message));
    }
    suites << "  </testsuite>\n";
  }
  return fmt::format(
             "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
             "<testsuites name=\"spmdsim check\" tests=\"{}\" failures=\"{}\" errors=\"0\" "
             "skipped=\"{}\">\n",
             tests, failures, skipped) +
         suites.str() + "</testsuites>\n";
}

}  // namespace spmdsim::analyzer
