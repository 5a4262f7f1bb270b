// The one way spmdsim turns a JSON document into text. Strings from a dump may hold bytes that
// are not UTF-8 (see utf8.h); nlohmann::json would throw type_error.316 on them, so each
// invalid byte is written as U+FFFD instead, and stdout JSON is always valid JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace spmdsim::analyzer {

template <class Json>
std::string JsonText(const Json& document, int indent = 2) {
  return document.dump(indent, ' ', false, Json::error_handler_t::replace);
}

}  // namespace spmdsim::analyzer
