# Checks the includes of every module against the rule of cmake/module_includes.cmake.
#   cmake -DROOT=<source dir> -DRULES=<file of "module: allowed modules..." lines> -P this
# Exits non-zero (FATAL_ERROR) listing every wrong-way include.

# Third-party headers that belong to one adapter module (STYLE.md, "Adapters stay at the edges"):
# "<prefix>|modules that may include it".
cmake_minimum_required(VERSION 3.22)

set(adapter_headers
  "rocksdb/|store"
  "librdkafka/|ingest"
  "httplib.h|access http cli ingest"
  "boost/|http"
  "avro.h|ingest"
  "avro/|ingest"
  "google/protobuf/|ingest"
  "yaml-cpp/|config"
  "CLI/|cli"
  "prometheus/|http"
  "systemd/|service")

file(STRINGS ${RULES} rule_lines)
set(modules "")
foreach(line ${rule_lines})
  string(REGEX MATCH "^([a-z_]+): (.*)$" _ "${line}")
  list(APPEND modules ${CMAKE_MATCH_1})
  string(REPLACE " " ";" allowed_${CMAKE_MATCH_1} "${CMAKE_MATCH_2}")
endforeach()

set(errors "")
foreach(module ${modules})
  file(GLOB_RECURSE files RELATIVE ${ROOT} ${ROOT}/${module}/*.h ${ROOT}/${module}/*.cc)
  foreach(file ${files})
    file(STRINGS ${ROOT}/${file} includes REGEX "^[ \t]*#[ \t]*include[ \t]*[<\"]")
    foreach(include ${includes})
      string(REGEX MATCH "[<\"]([^>\"]+)[>\"]" _ "${include}")
      set(header ${CMAKE_MATCH_1})
      if(header MATCHES "^([a-z_]+)/" AND CMAKE_MATCH_1 IN_LIST modules)
        if(NOT CMAKE_MATCH_1 IN_LIST allowed_${module})
          list(JOIN allowed_${module} ", " may)
          string(APPEND errors "  ${file} includes \"${header}\": ${module}/ may include only "
                               "${may} (its target's links)\n")
        endif()
        continue()
      endif()
      foreach(rule ${adapter_headers})
        string(REPLACE "|" ";" rule "${rule}")
        list(GET rule 0 prefix)
        list(GET rule 1 owners)
        string(REPLACE " " ";" owners "${owners}")
        string(FIND "${header}" "${prefix}" at)
        if(at EQUAL 0 AND NOT module IN_LIST owners)
          list(JOIN owners ", " owners)
          string(APPEND errors "  ${file} includes <${header}>: only ${owners} may include it\n")
        endif()
      endforeach()
    endforeach()
  endforeach()
endforeach()

if(errors)
  message(FATAL_ERROR "wrong-way includes between modules (cmake/module_includes.cmake):\n"
                      "${errors}")
endif()
