// The report page's interactive memory view of one module (docs/REPORT_PAGE.md): the element the
// page's script draws into, and the data it draws, inline as JSON. The data is every listed
// buffer's stay over the schedule (passes/memory/memory_analysis.h's BufferLifetime, recorded
// with record_lifetimes) with its category (peak_groups.h), and the instruction at each position;
// the script stacks the categories into the curve and lists what is live at a pointed position,
// the same list `spmdsim analyze --at POSITION` prints.
//
// Strings repeat (one op_name for thousands of buffers): they are kept once, in a table the
// buffers index. Every "<" in the JSON is written \u003c, so no dump text can end the script
// element or open another.
#pragma once

#include <cstddef>
#include <string>

#include "analyzer/model/module_report.h"
#include "analyzer/model/random_bit_values.h"

namespace spmdsim::analyzer {

// "" when the module has no schedule (nothing to draw).
std::string MemoryViewHtml(const ModuleReport& report, size_t module_number,
                           const RandomBitValues& random);

// The JSON inside it (for tests): {"positions", "peak_position", "peak_bytes", "base_bytes",
// "tuple_table_bytes", "usable_bytes", "device", "categories", "instructions" (the instruction at
// each position), "opcodes", "opcode_at" (each position's, an index into "opcodes"), "buffers":
// [[first, last, bytes, category, instruction, index, opcode, kind, shape, op_name, source], ...],
// "strings"}, a buffer's last seven as indices into "strings". Written directly (a seed-size
// module has millions of numbers here), each string through nlohmann::json.
std::string MemoryViewData(const ModuleReport& report, const RandomBitValues& random);

}  // namespace spmdsim::analyzer
