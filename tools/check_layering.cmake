# The layers include only downwards: ir -> passes -> analyzer, and dump/ (reading XLA's files)
# between ir and analyzer, beside passes. Inside analyzer/: emit (units, escaping, JSON text,
# progress) -> model (what the commands collect per module) -> views (text, JSON, HTML, SARIF of
# a model) -> cli (the subcommands). Run by CTest (test `layering`):
#   cmake -DROOT=<repo> -P tools/check_layering.cmake
# Each layer lists the top folders its files may include from. testing/ (corpus and fuzz support,
# over dump/) is allowed in a layer's tests and fuzzers only. analyzer/'s tests and fuzzers may
# include every layer (they drive the commands).
if(NOT ROOT)
  message(FATAL_ERROR "usage: cmake -DROOT=<repo> -P check_layering.cmake")
endif()
set(allowed_ir ir)
set(allowed_passes ir passes)
set(allowed_dump ir dump)
set(allowed_testing ir dump testing)
set(allowed_cuda_validate ir passes cuda_validate)
set(allowed_analyzer/emit ir passes dump analyzer/emit)
set(allowed_analyzer/model ${allowed_analyzer/emit} analyzer/model)
set(allowed_analyzer/views ${allowed_analyzer/model} analyzer/views)
set(allowed_analyzer/cli ${allowed_analyzer/views} analyzer/cli)
# Inside passes/, the subject folders include one way: sharding -> memory, collectives ->
# timeline, rng (each may include itself, those listed, and the shared files at the top of
# passes/: the analysis context, module facts, finding kinds, loop trip counts). The context's
# header declares the analyses it keeps without including them; only its .cc builds them.
set(allowed_passes/sharding ir passes)
set(allowed_passes/memory ir passes passes/sharding)
set(allowed_passes/collectives ir passes passes/sharding)
set(allowed_passes/timeline ir passes passes/sharding passes/collectives)
set(allowed_passes/rng ir passes passes/sharding passes/memory passes/collectives)
set(allowed_passes/context ir passes passes/memory passes/rng)  # passes/module_analyses.cc
set(checked 0)
set(violations "")
foreach(layer ir passes dump testing cuda_validate analyzer/emit analyzer/model analyzer/views
              analyzer/cli)
  file(GLOB_RECURSE files ${ROOT}/${layer}/*.h ${ROOT}/${layer}/*.cc ${ROOT}/${layer}/*.cu)
  foreach(file ${files})
    set(allowed ${allowed_${layer}})
    set(split_passes OFF)  # passes/ files are checked by subject folder
    if(layer STREQUAL "passes")
      file(RELATIVE_PATH in_passes ${ROOT}/passes ${file})
      set(split_passes ON)
      if(in_passes MATCHES "^([a-z_]+)/")
        set(subject passes/${CMAKE_MATCH_1})
        set(allowed ${allowed_${subject}})
        list(APPEND allowed ${subject})
        if(NOT allowed_${subject})
          string(APPEND violations "  passes/${in_passes}: a subject folder without a rule "
                                   "(tools/check_layering.cmake)\n")
        endif()
      elseif(in_passes STREQUAL "module_analyses.cc")
        set(allowed ${allowed_passes/context})
      else()
        set(allowed ir passes)
      endif()
    endif()
    if(file MATCHES "_(test|testdata_test|fuzzer)\\.cc$")
      if(layer MATCHES "^analyzer/")
        continue()
      endif()
      list(APPEND allowed testing)
      if(split_passes)
        # Tests drive the subjects they test with others' helpers (modules, the context).
        set(split_passes OFF)
        set(allowed ir passes testing)
      endif()
    endif()
    file(STRINGS ${file} includes REGEX "^#include \"[a-z_]+/")
    foreach(line ${includes})
      string(REGEX REPLACE "^#include \"([a-z_]+)/.*" "\\1" top "${line}")
      if(top STREQUAL "analyzer")
        string(REGEX REPLACE "^#include \"(analyzer/[a-z_]+)/.*" "\\1" top "${line}")
      endif()
      if(split_passes AND line MATCHES "^#include \"passes/[a-z_]+/")
        string(REGEX REPLACE "^#include \"(passes/[a-z_]+)/.*" "\\1" top "${line}")
      endif()
      math(EXPR checked "${checked} + 1")
      list(FIND allowed ${top} found)
      if(found EQUAL -1)
        file(RELATIVE_PATH rel ${ROOT} ${file})
        string(APPEND violations "  ${rel}: ${line} (${layer}/ may include ${allowed})\n")
      endif()
    endforeach()
  endforeach()
endforeach()
if(violations)
  message(FATAL_ERROR "includes against the layering:\n${violations}")
endif()
message(STATUS "layering: ${checked} project includes of ir/, passes/ (by subject folder), dump/, "
               "testing/, cuda_validate/ and analyzer/'s emit, model, views and cli follow the "
               "layers")
