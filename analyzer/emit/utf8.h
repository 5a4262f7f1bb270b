// Strings taken from a dump (op_names, source paths, names, custom-call targets) are bytes, not
// necessarily UTF-8: one stray byte in metadata is legal HLO text. Every output format needs
// valid UTF-8 (JSON, SARIF, JUnit XML, HTML), so writers pass such strings through here.
#pragma once

#include <string>
#include <string_view>

namespace spmdsim::analyzer {

// `text` with every byte that does not begin a well-formed UTF-8 sequence (RFC 3629: no
// overlong forms, no surrogates, nothing past U+10FFFF) replaced by U+FFFD.
std::string ValidUtf8(std::string_view text);

// Whether `text` is well-formed UTF-8 already.
bool IsValidUtf8(std::string_view text);

// The longest prefix of `text` of at most `max_bytes` bytes that does not end inside a UTF-8
// sequence (a long op_name cut for a table cell or a trace event): `text` itself when it fits.
std::string_view Utf8Prefix(std::string_view text, size_t max_bytes);

}  // namespace spmdsim::analyzer
