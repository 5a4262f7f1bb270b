// Table cells and spans of the HTML report (html_report.h, report_rng.h): every dump string
// escaped (html_escape.h), sizes in human units with the exact count in the title and in
// data-sort (what the page's sortable tables order by).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace spmdsim::analyzer::html {

std::string E(std::string_view text);
// "2.84 MiB" with the exact count in a tooltip.
std::string Bytes(int64_t bytes);
std::string BytesTd(int64_t bytes);
std::string NumTd(int64_t value);
std::string Td(std::string_view text, std::string_view css = {});
// A cell of dump text cut to 240 characters (at a UTF-8 character boundary), the whole text in
// its title. `attributes` is markup of ours (colspan="13"), never dump text.
std::string LongTd(std::string_view text, std::string_view css, std::string_view attributes = {});
std::string TimeTd(double us, bool estimated);

}  // namespace spmdsim::analyzer::html
