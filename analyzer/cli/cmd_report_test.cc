// Runs the built `spmdsim report` (SPMDSIM_BINARY) on real dumps: the page carries the figures
// `analyze --format json` and XLA's memory_analysis.json give, stays small on the seed dump,
// escapes whatever a dump holds, and the --trace file is well-formed trace-event JSON whose
// collective slices and memory counter come from the same analyses.
#include <stdlib.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "analyzer/test_support.h"
#include "dump/file_reader.h"

namespace spmdsim::analyzer {
namespace {

namespace fs = std::filesystem;

using test::RunOutput;

// spmdsim's stdout and exit code for `args` (analyzer/test_support.h).
RunOutput Run(const std::string& args) { return test::RunSpmdsim(args); }

std::string ReadText(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A fresh directory under the system temp dir, removed with the object.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "spmdsim_report_XXXXXX").string();
    REQUIRE(mkdtemp(pattern.data()) != nullptr);
    path = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

const std::string kDumps = std::string(SPMDSIM_TESTDATA_DIR) + "/dumps/";
const std::string kDp8 = kDumps + "dp8_partitionable_remat";
const std::string kSeed = kDumps + "seed_dp8_partitionable_remat";

// A number cell of the page's tables (sortable: the exact value in data-sort).
std::string NumCell(int64_t value) {
  return "<td class=\"num\" data-sort=\"" + std::to_string(value) + "\">" + std::to_string(value) +
         "</td>";
}

size_t Count(const std::string& text, const std::string& part) {
  size_t count = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++count;
  return count;
}

// The page's scripts are its own: one inline script and one JSON data block per memory view,
// every one closed by its own end tag (no dump text opens or closes a script element).
void CheckOwnScriptsOnly(const std::string& html) {
  const size_t data = Count(html, "<script type=\"application/json\" class=\"memview-data\">");
  CHECK(Count(html, "<script>") == 1);
  CHECK(Count(html, "<script") == data + 1);
  CHECK(Count(html, "</script>") == data + 1);
  CHECK(data == Count(html, "<div class=\"memview\""));
}

TEST_CASE("report: the peak of analyze and XLA's memory_analysis.json figures") {
  TempDir dir;
  const fs::path html_path = dir.path / "dp8.html";
  REQUIRE(Run("report " + kDp8 + " -o " + html_path.string()).exit_code == 0);
  const std::string html = ReadText(html_path);
  REQUIRE(!html.empty());

  const RunOutput analyze = Run("analyze " + kDp8 + " --format json");
  REQUIRE(analyze.exit_code == 0);
  const nlohmann::json modules = nlohmann::json::parse(analyze.out).at("modules");
  REQUIRE(modules.size() == 2);
  for (const auto& module : modules) {
    const int64_t peak = module.at("memory").at("peak_bytes");
    INFO(module.at("stage").get<std::string>() << " peak " << peak);
    CHECK(Contains(html, "<td class=\"peak\" data-bytes=\"" + std::to_string(peak) + "\">"));
    CHECK(Contains(html, std::to_string(peak) + " bytes</span> = argument"));
  }

  // XLA's own figures, read here from the file the tools saved beside the dump.
  const nlohmann::json xla = nlohmann::json::parse(ReadText(kDp8 + "/memory_analysis.json"));
  const int64_t argument = xla.at("argument_size_in_bytes");
  const int64_t output = xla.at("output_size_in_bytes");
  const int64_t alias = xla.at("alias_size_in_bytes");
  const int64_t temp = xla.at("temp_size_in_bytes");
  const int64_t xla_peak = argument + output - alias + temp;
  CHECK(Contains(html, "<td class=\"xla-peak\" data-bytes=\"" + std::to_string(xla_peak) + "\">"));
  for (const int64_t bytes : {argument, output, alias, temp}) {
    INFO(bytes);
    CHECK(Contains(html, NumCell(bytes)));
  }
  // memory_analysis() as saved, every field (peak_memory_in_bytes included).
  CHECK(Contains(html, "peak_memory_in_bytes"));
  CHECK(Contains(html, NumCell(xla.at("peak_memory_in_bytes").get<int64_t>())));

  // The collective count of `spmdsim collectives` for the after_optimizations module.
  const RunOutput collectives = Run("collectives " + kDp8 + " --format json");
  REQUIRE(collectives.exit_code == 0);
  // A directory lists the after_optimizations module first, as XLA wrote it beside its input.
  const nlohmann::json after = nlohmann::json::parse(collectives.out).at("modules").at(0);
  REQUIRE(after.at("stage") == "after_optimizations");
  const size_t ops = after.at("collectives").at("ops").size();
  REQUIRE(ops > 0);
  CHECK(Contains(html, "<span class=\"collective-count\">" + std::to_string(ops) + "</span>"));

  // Self-contained: only the page's own script and data, nothing fetched from anywhere.
  CheckOwnScriptsOnly(html);
  CHECK(!Contains(html, "http://"));
  CHECK(!Contains(html, "https://"));
  CHECK(!Contains(html, "src="));
  CHECK(Contains(html, "<svg class=\"curve\""));

  // Deterministic: the same page twice.
  const fs::path again = dir.path / "again.html";
  REQUIRE(Run("report " + kDp8 + " -o " + again.string()).exit_code == 0);
  CHECK(ReadText(again) == html);
}

TEST_CASE("report on the seed dump: small, with the u32[128,1024,768] buffers grouped") {
  TempDir dir;
  const fs::path html_path = dir.path / "seed.html";
  REQUIRE(Run("report " + kSeed + " -o " + html_path.string()).exit_code == 0);
  const std::string html = ReadText(html_path);
  CHECK(html.size() < 3u * 1024 * 1024);

  // The buffers of that shape live at the peak, counted from analyze's JSON.
  const RunOutput analyze = Run("analyze " + kSeed + " --format json --module jit_train_step");
  REQUIRE(analyze.exit_code == 0);
  const nlohmann::json modules = nlohmann::json::parse(analyze.out).at("modules");
  const nlohmann::json* after = nullptr;
  for (const auto& module : modules) {
    if (module.at("stage") == "after_optimizations") after = &module;
  }
  REQUIRE(after != nullptr);
  const auto& live = after->at("memory").at("live_at_peak");
  CHECK(after->at("memory").at("live_at_peak_count").get<size_t>() == live.size());
  CHECK(live.size() > 800);
  int64_t count = 0;
  int64_t size = 0;
  for (const auto& buffer : live) {
    if (buffer.at("shape") == "u32[128,1024,768]") {
      ++count;
      size = buffer.at("size_bytes");
    }
  }
  REQUIRE(count > 0);
  // The group row: count, then the size of each with its exact bytes, then the shape.
  const std::string row = "<tr>" + NumCell(count) + "<td class=\"num\" data-sort=\"" +
                          std::to_string(size) + "\" title=\"" + std::to_string(size) + " bytes\">";
  CHECK(Contains(html, row));
  CHECK(Contains(html, "u32[128,1024,768]"));
  // The listing is capped: row 200 is there, row 201 is summarised.
  CHECK(Contains(html, "<tr>" + NumCell(200)));
  CHECK(Contains(html, "... " + std::to_string(live.size() - 200) + " more buffers"));
}

// The HLO text with the op_name of the first instruction matching `needle` replaced.
std::string ReplaceOpName(std::string text, const std::string& needle, const std::string& value) {
  const size_t line = text.find(needle);
  REQUIRE(line != std::string::npos);
  const size_t begin = text.find("op_name=\"", line);
  REQUIRE(begin < text.find('\n', line));
  const size_t start = begin + 9;
  size_t end = start;
  while (end < text.size() && text[end] != '"') end += text[end] == '\\' ? 2 : 1;
  return text.replace(start, end - start, value);
}

TEST_CASE("report escapes what the dump holds: op_names and file paths") {
  TempDir dir;
  // A directory whose name is markup too: the path is printed in the page.
  const fs::path dump_dir = dir.path / "dump<b>&'x'";
  fs::create_directories(dump_dir);
  const std::string source = kDp8 + "/module_0000.jit_train_step.cpu_after_optimizations.txt.gz";
  const dump::DumpResult<std::string> text = dump::ReadFileContents(source);
  REQUIRE(text);
  // The all-reduce (collectives table) and the largest buffer at the peak (live table).
  const RunOutput analyze = Run("analyze " + source + " --format json");
  REQUIRE(analyze.exit_code == 0);
  const nlohmann::json memory = nlohmann::json::parse(analyze.out).at("modules").at(0).at("memory");
  std::string largest;
  for (const auto& buffer : memory.at("live_at_peak")) {
    if (buffer.at("kind") == "temp" && !buffer.at("op_name").get<std::string>().empty()) {
      largest = buffer.at("instruction");
      break;
    }
  }
  REQUIRE(!largest.empty());
  std::string hlo = ReplaceOpName(*text, " all-reduce(", "<script>alert(1)</script>");
  hlo = ReplaceOpName(hlo, "%" + largest + " = ", "\\\"><img src=x onerror=alert(1)>");
  const fs::path module = dump_dir / "module_0000.jit_train_step.cpu_after_optimizations.txt";
  std::ofstream(module) << hlo;

  const fs::path html_path = dir.path / "payload.html";
  REQUIRE(Run("report \"" + module.string() + "\" -o " + html_path.string()).exit_code == 0);
  const std::string html = ReadText(html_path);
  CheckOwnScriptsOnly(html);
  CHECK(!Contains(html, "<img"));
  CHECK(!Contains(html, "<b>&"));
  CHECK(Contains(html, "&lt;script&gt;alert(1)&lt;/script&gt;"));
  CHECK(Contains(html, "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;"));
  CHECK(Contains(html, "dump&lt;b&gt;&amp;&#39;x&#39;"));
}

// ---- trace ----

struct Slice {
  double ts = 0;
  double dur = 0;
  std::string name;
};

TEST_CASE("report --trace: trace events of the simulated step") {
  TempDir dir;
  const fs::path trace_path = dir.path / "trace.json";
  REQUIRE(Run("report " + kDp8 + " -o " + (dir.path / "r.html").string() + " --trace " +
              trace_path.string())
              .exit_code == 0);
  const nlohmann::json trace = nlohmann::json::parse(ReadText(trace_path));
  CHECK(trace.at("displayTimeUnit") == "ms");
  CHECK(trace.at("otherData").at("stage") == "after_optimizations");
  CHECK(trace.at("otherData").at("timing_model").get<std::string>().size() > 100);

  std::vector<std::string> thread_names;                     // of the device's process
  std::map<std::pair<int, int>, std::vector<Slice>> slices;  // by (pid, tid)
  std::vector<std::pair<double, int64_t>> counter;
  std::vector<std::map<std::string, int64_t>> by_category;  // per curve point
  int64_t memory_slices = 0;
  for (const auto& event : trace.at("traceEvents")) {
    const std::string ph = event.at("ph");
    CHECK(event.at("pid").is_number_integer());
    CHECK(event.at("tid").is_number_integer());
    const int pid = event.at("pid");
    if (ph == "M") {
      if (event.at("name") == "thread_name" && pid == 1) {
        thread_names.push_back(event.at("args").at("name"));
      }
    } else if (ph == "X") {
      const double ts = event.at("ts");
      const double dur = event.at("dur");
      CHECK(ts >= 0);
      CHECK(dur >= 0);
      slices[{pid, event.at("tid").get<int>()}].push_back({ts, dur, event.at("name")});
      memory_slices += pid == 2 && event.at("args").contains("first_position") ? 1 : 0;
    } else if (ph == "C") {
      const std::string name = event.at("name");
      if (name == "live memory") {
        counter.push_back({event.at("ts"), event.at("args").at("bytes")});
      } else {
        REQUIRE(name.starts_with("memory: "));
        if (by_category.empty() || by_category.back().count(name.substr(8)) > 0) {
          by_category.emplace_back();
        }
        by_category.back()[name.substr(8)] = event.at("args").at("bytes");
      }
    } else {
      FAIL("unexpected ph " << ph);
    }
  }
  CHECK(thread_names == std::vector<std::string>{"compute", "collectives", "rng sites"});
  CHECK(memory_slices == trace.at("otherData").at("memory_slices").get<int64_t>());
  CHECK(memory_slices > 500);

  // The collectives track holds each collective once, lasting its estimated time.
  const RunOutput collectives = Run("collectives " + kDp8 + " --format json");
  REQUIRE(collectives.exit_code == 0);
  const nlohmann::json ops =
      nlohmann::json::parse(collectives.out).at("modules").at(0).at("collectives").at("ops");
  const std::vector<Slice>& collective_track = slices[{1, 2}];
  REQUIRE(collective_track.size() == ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    CHECK(collective_track[i].name == ops[i].at("instruction"));
    CHECK(collective_track[i].dur == Approx(ops[i].at("est_time_us").get<double>()).margin(0.001));
  }

  // Slices on one track nest or follow each other; none overlaps another partly.
  for (auto& [track_id, track] : slices) {
    INFO("pid " << track_id.first << " tid " << track_id.second);
    std::stable_sort(track.begin(), track.end(), [](const Slice& a, const Slice& b) {
      return a.ts != b.ts ? a.ts < b.ts : a.dur > b.dur;
    });
    std::vector<double> open_ends;
    for (const Slice& s : track) {
      while (!open_ends.empty() && open_ends.back() <= s.ts + 1e-9) open_ends.pop_back();
      if (!open_ends.empty()) CHECK(s.ts + s.dur <= open_ends.back() + 1e-6);
      open_ends.push_back(s.ts + s.dur);
    }
  }

  // The memory counter is the memory analysis's curve of the same module, every point placed;
  // the category counters add up to it.
  const RunOutput analyze = Run("analyze " + kDp8 + " --format json");
  REQUIRE(analyze.exit_code == 0);
  const nlohmann::json memory = nlohmann::json::parse(analyze.out).at("modules").at(0).at("memory");
  const nlohmann::json& timeline = memory.at("timeline");
  REQUIRE(counter.size() == timeline.size());
  REQUIRE(by_category.size() == timeline.size());
  int64_t highest = 0;
  for (size_t i = 0; i < timeline.size(); ++i) {
    CHECK(counter[i].second == timeline[i].at("live_bytes").get<int64_t>());
    int64_t sum = 0;
    for (const auto& [category, bytes] : by_category[i]) sum += bytes;
    CHECK(sum == counter[i].second);
    highest = std::max(highest, counter[i].second);
    if (i > 0) CHECK(counter[i].first >= counter[i - 1].first);
  }
  CHECK(highest <= trace.at("otherData").at("peak_bytes").get<int64_t>());

  // At the peak, each category's counter is what analyze --at lists of that category (tuple
  // tables, listed under no buffer, count as other temp).
  const int64_t peak = memory.at("peak_time");
  const RunOutput at =
      Run("analyze " + kDp8 + " --stage after --format json --at " + std::to_string(peak));
  REQUIRE(at.exit_code == 0);
  std::map<std::string, int64_t> listed;
  const nlohmann::json at_json = nlohmann::json::parse(at.out);
  for (const auto& b : at_json.at("modules").at(0).at("memory").at("live_at").at("buffers")) {
    listed[b.at("category")] += b.at("size_bytes").get<int64_t>();
  }
  listed["other temp"] += memory.at("temp").at("tuple_table_bytes").get<int64_t>();
  bool found = false;
  for (size_t i = 0; i < timeline.size(); ++i) {
    if (timeline[i].at("time") != peak) continue;
    found = true;
    for (const auto& [category, bytes] : by_category[i]) {
      INFO(category);
      CHECK(bytes == listed[category]);
    }
  }
  CHECK(found);
}

TEST_CASE("report: usage and I/O errors exit 2") {
  TempDir dir;
  CHECK(Run("report " + kDp8).exit_code == 2);  // no -o
  CHECK(Run("report " + kDp8 + " -o " + (dir.path / "missing" / "r.html").string()).exit_code == 2);
  CHECK(Run("report " + kDp8 + " -o " + (dir.path / "r.html").string() + " --topology nope")
            .exit_code == 2);
  CHECK(Run("report " + kDp8 + " -o " + (dir.path / "r.html").string() + " --trace " +
            (dir.path / "missing" / "t.json").string())
            .exit_code == 2);
}

// The module sections of a report, in order.
std::vector<std::string> Sections(const std::string& html) {
  std::vector<std::string> sections;
  const std::string open = "<section class=\"module\"";
  for (size_t at = html.find(open); at != std::string::npos;) {
    const size_t end = html.find("</section>", at);
    REQUIRE(end != std::string::npos);
    sections.push_back(html.substr(at, end - at));
    at = html.find(open, end);
  }
  return sections;
}

TEST_CASE("report on the seed dump: the remat what-if, random-bit rows marked, each kind once") {
  const RunOutput report = Run("report " + kSeed + " -o - --stage after");
  REQUIRE(report.exit_code == 0);
  const std::vector<std::string> sections = Sections(report.out);
  REQUIRE(sections.size() == 1);
  const std::string& html = sections[0];
  const RunOutput sites = Run("rng sites --format json --stage after " + kSeed);
  REQUIRE(sites.exit_code == 0);
  const nlohmann::json rng = nlohmann::json::parse(sites.out).at("modules").at(0).at("rng");
  const nlohmann::json& remat = rng.at("remat_whatif");
  REQUIRE(remat.at("buffers").get<int64_t>() > 0);
  // The what-if of `rng sites` (313.91 GiB -> 295.91 GiB on this dump), in the same words.
  CHECK(Contains(html, "remat what-if: recomputing the " +
                           std::to_string(remat.at("buffers").get<int64_t>()) +
                           " random-bit buffers"));
  CHECK(Contains(html, "peak 313.91 GiB -&gt; 295.91 GiB (saves 18.00 GiB)"));

  // One explanation per finding kind, not one per finding.
  std::map<std::string, int> kinds;
  for (const auto& f : rng.at("findings")) ++kinds[f.at("kind").get<std::string>()];
  REQUIRE(rng.at("findings").size() > kinds.size());
  CHECK(Count(html, "<p class=\"finding-kind\">") == kinds.size());
  // Each finding names its dropout: 24 findings, 24 different scopes (12 blocks x 2 dropouts).
  CHECK(Count(html, "_transformer/block_") >= rng.at("findings").size());

  // Rows marked "random bits" are exactly the listed live buffers that are RNG site buffers.
  std::set<std::string> random_values;
  for (const auto& site : rng.at("sites")) {
    for (const auto& buffer : site.at("buffers")) {
      // JSON writes a whole instruction's value without "{}".
      const auto with_index = [](std::string v) { return v.ends_with('}') ? v : v + "{}"; };
      random_values.insert(with_index(buffer.at("value").get<std::string>()));
      for (const auto& v : buffer.at("values")) random_values.insert(with_index(v));
    }
  }
  const RunOutput analyze = Run("analyze " + kSeed + " --format json --stage after");
  const nlohmann::json analyzed = nlohmann::json::parse(analyze.out);
  const nlohmann::json& live = analyzed.at("modules").at(0).at("memory").at("live_at_peak");
  size_t marked = 0;
  size_t listed = 0;
  for (const auto& buffer : live) {
    const std::string index = buffer.at("index");
    const bool random =
        random_values.count(buffer.at("instruction").get<std::string>() + index) > 0;
    if (listed++ < 200) marked += random ? 1 : 0;  // the listing shows 200 rows
  }
  REQUIRE(marked > 0);
  CHECK(Count(html, "<tr class=\"rng\">") == marked);
}

TEST_CASE(
    "report: the noise paragraph names the module's device count, only where bits are drawn") {
  for (const std::string cell :
       {"jax012_tpu4_flax_dp_partitionable_remat", "jax012_gpu16_flax_dp_partitionable_remat",
        "jax012_cpu8_flax_process_init_train_eval"}) {
    INFO(cell);
    const RunOutput report = Run("report " + kDumps + cell + " -o - --stage after");
    REQUIRE(report.exit_code == 0);
    const RunOutput sites = Run("rng sites --format json --stage after " + kDumps + cell);
    const nlohmann::json modules = nlohmann::json::parse(sites.out).at("modules");
    const RunOutput stats = Run("stats --format json --stage after " + kDumps + cell);
    const nlohmann::json stats_modules = nlohmann::json::parse(stats.out).at("modules");
    REQUIRE(stats_modules.size() == modules.size());
    const std::vector<std::string> sections = Sections(report.out);
    REQUIRE(sections.size() == modules.size());
    for (size_t i = 0; i < sections.size(); ++i) {
      int64_t bits_sites = 0;
      for (const auto& site : modules[i].at("rng").at("sites")) {
        bits_sites += site.at("purpose").get<std::string>() == "bits" ? 1 : 0;
      }
      const nlohmann::json& counts = stats_modules[i].at("stats");
      const int64_t devices =
          counts.at("num_partitions").get<int64_t>() * counts.at("replica_count").get<int64_t>();
      INFO(modules[i].at("name") << " devices " << devices << " bits sites " << bits_sites);
      CHECK(Contains(sections[i], "Tied or independent noise") == (bits_sites > 0));
      CHECK_FALSE(Contains(sections[i], "so 8 devices draw"));
      if (bits_sites > 0) {
        CHECK(Contains(sections[i], "the " + std::to_string(devices) + " devices of this module"));
      }
    }
  }
}

}  // namespace
}  // namespace spmdsim::analyzer

namespace spmdsim::analyzer {
namespace {

// A dump folder of one process (init, train step, eval): the trace is of the module a user asks
// about, the after-optimizations one with the largest peak, not the first one written.
TEST_CASE("report --trace: a dump folder's trace is of the module with the largest peak") {
  const std::string dir =
      std::string(SPMDSIM_TESTDATA_DIR) + "/dumps/jax012_cpu8_flax_process_init_train_eval";
  TempDir out;
  const fs::path trace_path = out.path / "trace.json";
  REQUIRE(Run("report " + dir + " -o " + (out.path / "r.html").string() + " --trace " +
              trace_path.string())
              .exit_code == 0);
  const nlohmann::json trace = nlohmann::json::parse(ReadText(trace_path));
  const nlohmann::json modules =
      nlohmann::json::parse(Run("analyze " + dir + " --format json --timeline-points 1").out)
          .at("modules");
  std::string largest;
  int64_t peak = -1;
  std::string first;
  for (const nlohmann::json& m : modules) {
    if (m.at("stage") != "after_optimizations") continue;
    if (first.empty()) first = m.at("name");
    if (m.at("memory").at("peak_bytes").get<int64_t>() > peak) {
      peak = m.at("memory").at("peak_bytes");
      largest = m.at("name");
    }
  }
  REQUIRE(largest != first);  // the case this is for
  CHECK(trace.at("otherData").at("module") == largest);
  CHECK(trace.at("otherData").at("peak_bytes") == peak);
}

}  // namespace
}  // namespace spmdsim::analyzer
