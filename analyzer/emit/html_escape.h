// The one escaping function of the HTML report: every string that comes from a dump (names,
// op_names, source paths, shapes, file paths) goes through HtmlEscape before it is written into
// the page, in text and in attribute values alike. The five characters that can end a text run,
// an element or a quoted attribute are replaced by character references:
//   &  ->  &amp;    <  ->  &lt;    >  ->  &gt;    "  ->  &quot;    '  ->  &#39;
// Bytes that are not UTF-8 become U+FFFD (utf8.h), control characters visible text
// (control_chars.h: "\x1b"); everything else passes through unchanged. Safe
// for element text and for attribute values quoted with either quote; not for unquoted attributes,
// URLs, <script> or <style> contents (the report writes none from dump data).
#pragma once

#include <string>
#include <string_view>

namespace spmdsim::analyzer {

std::string HtmlEscape(std::string_view text);

}  // namespace spmdsim::analyzer
