// Sub-parsers for shapes and the structured attributes of HLO text. Each is usable alone (tests,
// other tools) through the string overloads, and by the module parser through the TokenReader
// overloads, which throw ParseError.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/hlo.h"
#include "ir/token_reader.h"

namespace spmdsim::ir {

// shape ::= '(' [shape (',' shape)*] ')' | type '[' [dim (',' dim)*] ']' [layout]
// dim   ::= int | '<=' int | '?'
Shape ParseShape(TokenReader& reader, int depth = 0);

// sharding ::= '{' single_body '}' | '{' [sharding (',' sharding)*] '}'
Sharding ParseSharding(TokenReader& reader, int depth = 0);

// replica_groups ::= '{' [ '{' ints '}' (',' '{' ints '}')* ] '}'
//                  | '[' int ',' int ']' '<=' '[' ints ']' ['T' '(' ints ')']
//                  | 'mesh' '[' axes ']' [', device_ids=(...)'] '{' axis_refs '}'
ReplicaGroups ParseReplicaGroups(TokenReader& reader);

// source_target_pairs ::= '{' [ '{' int ',' int '}' (',' ...)* ] '}'
SourceTargetPairs ParseSourceTargetPairs(TokenReader& reader);

// metadata ::= '{' (name '=' (string | int | name | '{'...'}') [','])* '}'
// `raw` is the attribute's whole text, kept on the result.
Metadata ParseMetadata(TokenReader& reader, std::string_view raw);

// input_output_alias ::= '{' [ '{' ints '}' ':' '(' int ',' '{' ints '}' [',' kind] ')' ... ] '}'
std::vector<InputOutputAlias> ParseInputOutputAlias(TokenReader& reader);

// Computation references: '%name' | 'name' | '{' '%a' (',' '%b')* '}'.
std::vector<Token> ParseComputationList(TokenReader& reader);

// String conveniences for tests and tools: nullopt on failure, with the message in *error.
std::optional<Shape> ParseShape(std::string_view text, std::string* error = nullptr);
std::optional<Sharding> ParseSharding(std::string_view text, std::string* error = nullptr);
std::optional<ReplicaGroups> ParseReplicaGroups(std::string_view text,
                                                std::string* error = nullptr);

}  // namespace spmdsim::ir
