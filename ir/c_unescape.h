// XLA prints string attributes and metadata fields (op_name="...", source_file="...") with C
// escapes: an op_name `params['head']` appears as `params[\'head\']`. The IR keeps the text as
// written (the printer reproduces it byte for byte); analyses that show a name to a person, or
// compare it with names from elsewhere, unescape it first.
#pragma once

#include <string>
#include <string_view>

namespace spmdsim::ir {

// Decodes \\ \' \" \? \a \b \f \n \r \t \v, octal \ooo and hex \xHH escapes; anything else
// (a lone trailing backslash, an unknown escape) is kept as written. Text without a backslash is
// returned unchanged.
std::string CUnescape(std::string_view text);

}  // namespace spmdsim::ir
