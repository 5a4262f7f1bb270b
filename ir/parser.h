// Parses HLO text as XLA writes it (dumps, compile().as_text(), lower().as_text("hlo")) into
// HloModules. A file may hold several modules.
//
// Errors stop the parse and come back as one Diagnostic ("file:line:col: error: expected X, got
// Y"); nothing here aborts or exits. Unknown opcodes and attributes are kept verbatim with a
// warning.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "ir/hlo.h"
#include "ir/source.h"

namespace spmdsim::ir {

struct ParseOptions {
  // Warnings kept per module (the rest are only counted), so a module of 100k unknown opcodes
  // does not produce 100k diagnostics.
  int max_warnings = 20;
};

struct ParseResult {
  std::vector<std::unique_ptr<HloModule>> modules;
  std::optional<Diagnostic> error;
  bool ok() const { return !error.has_value(); }
};

ParseResult ParseHloText(std::shared_ptr<const SourceBuffer> source,
                         const ParseOptions& options = {});

// True when the text looks like HLO module text (its first token is "HloModule").
bool LooksLikeHloText(std::string_view text);

}  // namespace spmdsim::ir
