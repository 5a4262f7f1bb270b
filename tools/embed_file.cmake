# cmake -DINPUT=file -DOUTPUT=file.cc -P embed_file.cmake
# Writes a C++ source defining spmdsim::analyzer::EmbeddedDump() over the bytes of INPUT.
file(READ ${INPUT} hex HEX)
string(LENGTH "${hex}" hex_length)
math(EXPR size "${hex_length} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
get_filename_component(name ${INPUT} NAME)
file(WRITE ${OUTPUT}
"// Generated from ${name} by tools/embed_file.cmake; do not edit.\n"
"#include <string_view>\n"
"namespace spmdsim::analyzer {\n"
"namespace { const unsigned char kBytes[] = {${bytes}}; }\n"
"std::string_view EmbeddedDumpName() { return \"${name}\"; }\n"
"std::string_view EmbeddedDump() {\n"
"  return std::string_view(reinterpret_cast<const char*>(kBytes), ${size});\n"
"}\n"
"}  // namespace spmdsim::analyzer\n")
