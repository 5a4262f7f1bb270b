# cmake -DDIR=dir -DOUTPUT=file.cc -DFUNCTION=Name [-DPATTERNS="*.js;*.css"] -P embed_texts.cmake
# Writes a C++ source defining spmdsim::analyzer::FUNCTION(), the list of {stem, text} of every
# file in DIR matching PATTERNS (default *.json; sorted by name), so data files ship inside the
# binary.
if(NOT PATTERNS)
  set(PATTERNS "*.json")
endif()
set(inputs "")
foreach(pattern ${PATTERNS})
  file(GLOB matched ${DIR}/${pattern})
  list(APPEND inputs ${matched})
endforeach()
list(SORT inputs)
set(entries "")
set(arrays "")
set(index 0)
foreach(input ${inputs})
  file(READ ${input} hex HEX)
  string(LENGTH "${hex}" hex_length)
  math(EXPR size "${hex_length} / 2")
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
  get_filename_component(stem ${input} NAME_WE)
  string(APPEND arrays "const unsigned char kText${index}[] = {${bytes}};\n")
  string(APPEND entries
         "      {\"${stem}\", std::string_view(reinterpret_cast<const char*>(kText${index}), ${size})},\n")
  math(EXPR index "${index} + 1")
endforeach()
file(WRITE ${OUTPUT}
"// Generated from ${DIR} by tools/embed_texts.cmake; do not edit.\n"
"#include <string_view>\n"
"#include <utility>\n"
"#include <vector>\n"
"namespace spmdsim::analyzer {\n"
"namespace {\n${arrays}}  // namespace\n"
"const std::vector<std::pair<std::string_view, std::string_view>>& ${FUNCTION}() {\n"
"  static const std::vector<std::pair<std::string_view, std::string_view>> kTexts = {\n"
"${entries}  };\n"
"  return kTexts;\n"
"}\n"
"}  // namespace spmdsim::analyzer\n")
