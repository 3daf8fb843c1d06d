# The dependency rule between modules, enforced by the build (docs/ARCHITECTURE.md, "Modules").
#
# A module is a folder with one library target, hotrow_<folder>. Its files may include the headers
# of the modules its target links (directly or through them), and no others: a wrong-way include
# ("cluster/... includes http/...") fails the build before anything compiles, naming the file, the
# include and what that module may include. The allowed modules are read from the targets
# themselves, so target_link_libraries in each module's CMakeLists.txt is the one place the rule is
# written. Third-party headers that only an adapter module may include are listed in
# scripts/check_module_includes.cmake.

# hotrow_check_module_includes(MODULES m...): checks every .h/.cc under each module's folder
# whenever one of them (or a module's links) changes; every module library waits for the check.
function(hotrow_check_module_includes)
  cmake_parse_arguments(M "" "" "MODULES" ${ARGN})
  set(rules "")
  set(sources "")
  foreach(module ${M_MODULES})
    # The closure of the hotrow_* libraries the module's target links.
    set(allowed ${module})
    set(pending hotrow_${module})
    set(seen "")
    while(pending)
      list(POP_FRONT pending target)
      if(target IN_LIST seen)
        continue()
      endif()
      list(APPEND seen ${target})
      get_target_property(links ${target} LINK_LIBRARIES)
      foreach(link ${links})
        if(link MATCHES "^hotrow_([a-z_]+)$" AND TARGET ${link})
          list(APPEND allowed ${CMAKE_MATCH_1})
          list(APPEND pending ${link})
        endif()
      endforeach()
    endwhile()
    list(REMOVE_DUPLICATES allowed)
    list(SORT allowed)
    list(JOIN allowed " " allowed)
    string(APPEND rules "${module}: ${allowed}\n")
    file(GLOB_RECURSE files CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${module}/*.h
         ${PROJECT_SOURCE_DIR}/${module}/*.cc)
    list(APPEND sources ${files})
  endforeach()
  set(rules_file ${CMAKE_BINARY_DIR}/module_rules.txt)
  file(WRITE ${rules_file} "${rules}")
  set(stamp ${CMAKE_BINARY_DIR}/module_includes.stamp)
  set(script ${PROJECT_SOURCE_DIR}/scripts/check_module_includes.cmake)
  add_custom_command(
    OUTPUT ${stamp}
    COMMAND ${CMAKE_COMMAND} -DROOT=${PROJECT_SOURCE_DIR} -DRULES=${rules_file} -P ${script}
    COMMAND ${CMAKE_COMMAND} -E touch ${stamp}
    DEPENDS ${sources} ${rules_file} ${script}
    COMMENT "Checking the includes between modules (cmake/module_includes.cmake)"
    VERBATIM)
  add_custom_target(module_includes DEPENDS ${stamp})
  foreach(module ${M_MODULES})
    add_dependencies(hotrow_${module} module_includes)
  endforeach()
endfunction()
