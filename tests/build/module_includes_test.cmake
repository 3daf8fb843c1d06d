# The module rule's checker (scripts/check_module_includes.cmake) on small trees of its own: it
# must refuse a wrong-way include and an adapter's header outside its adapter, and accept the rest.
#   cmake -DSCRIPT=<checker> -DWORK=<scratch dir> -P this
cmake_minimum_required(VERSION 3.22)
file(REMOVE_RECURSE ${WORK})

# Runs the checker on a tree of two modules, `low` and `high` (high may include low), with one
# extra file; sets `rc` and `out`.
function(check_tree name extra_file extra_text)
  set(root ${WORK}/${name})
  file(WRITE ${root}/low/low.h "#pragma once\n#include \"low/other.h\"\n")
  file(WRITE ${root}/high/high.cc "#include \"high/high.h\"\n#include \"low/low.h\"\n")
  file(WRITE ${root}/${extra_file} "${extra_text}")
  file(WRITE ${root}/rules.txt "low: low\nhigh: high low\nstore: low store\n")
  execute_process(COMMAND ${CMAKE_COMMAND} -DROOT=${root} -DRULES=${root}/rules.txt -P ${SCRIPT}
                  RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE output)
  set(rc ${result} PARENT_SCOPE)
  set(out "${output}" PARENT_SCOPE)
endfunction()

check_tree(fine low/low.cc "#include <vector>\n#include \"low/low.h\"\n")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "a tree that keeps the rule was refused:\n${out}")
endif()

check_tree(upward low/low.cc "#include \"high/high.h\"\n")
if(rc EQUAL 0 OR NOT out MATCHES "low/low.cc includes \"high/high.h\": low/ may include only low")
  message(FATAL_ERROR "an include from low/ up into high/ was not refused (rc ${rc}):\n${out}")
endif()

check_tree(adapter high/db.cc "#include <rocksdb/db.h>\n")
if(rc EQUAL 0 OR NOT out MATCHES "high/db.cc includes <rocksdb/db.h>: only store may include it")
  message(FATAL_ERROR "RocksDB included outside store/ was not refused (rc ${rc}):\n${out}")
endif()

check_tree(adapter_home store/db.cc "#include <rocksdb/db.h>\n#include \"low/low.h\"\n")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "RocksDB included by store/ itself was refused:\n${out}")
endif()
message(STATUS "module_includes: the checker refuses wrong-way and adapter includes")
