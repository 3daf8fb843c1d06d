# Every object of the build that includes httplib.h is compiled with CPPHTTPLIB_OPENSSL_SUPPORT.
# httplib.h declares other classes and members with it than without, and Debian's libcpp-httplib is
# built with it (CMakeLists.txt puts it on PkgConfig::HTTPLIB): an object compiled without it is an
# ODR violation that no linker reports. Run by ctest (httplib_openssl_define) after the build:
#
#   cmake -DBUILD_DIR=<build dir> -P scripts/check_httplib_define.cmake
#
# Reads compile_commands.json and each object's depfile (<object>.d, written by the Makefile
# generators). Fails naming each file compiled without the define; prints "skipped" (ctest: skipped)
# when no depfile is there to read (Ninja keeps them in its own log).
cmake_minimum_required(VERSION 3.22)
if(NOT BUILD_DIR)
  message(FATAL_ERROR "usage: cmake -DBUILD_DIR=<build dir> -P scripts/check_httplib_define.cmake")
endif()
file(READ "${BUILD_DIR}/compile_commands.json" commands)
string(JSON count LENGTH "${commands}")
math(EXPR last "${count} - 1")
set(checked 0)
set(including 0)
set(bad "")
foreach(i RANGE ${last})
  string(JSON directory GET "${commands}" ${i} directory)
  string(JSON source GET "${commands}" ${i} file)
  string(JSON command GET "${commands}" ${i} command)
  # The object: "output" where the generator writes it, else the command's "-o <object>".
  string(JSON output ERROR_VARIABLE no_output GET "${commands}" ${i} output)
  if(no_output)
    if(NOT command MATCHES " -o ([^ ]+)")
      continue()
    endif()
    set(output "${CMAKE_MATCH_1}")
  endif()
  if(NOT IS_ABSOLUTE "${output}")
    set(output "${directory}/${output}")
  endif()
  if(NOT EXISTS "${output}.d")
    continue()
  endif()
  math(EXPR checked "${checked} + 1")
  file(READ "${output}.d" depends)
  string(FIND "${depends}" "/httplib.h" at)
  if(at EQUAL -1)
    continue()
  endif()
  math(EXPR including "${including} + 1")
  string(FIND "${command}" "-DCPPHTTPLIB_OPENSSL_SUPPORT" defined)
  if(defined EQUAL -1)
    list(APPEND bad "${source}")
  endif()
endforeach()
if(checked EQUAL 0)
  message("httplib_openssl_define: skipped: no depfile in ${BUILD_DIR} to read")
  return()
endif()
if(bad)
  list(JOIN bad "\n  " bad)
  message(FATAL_ERROR "httplib_openssl_define: compiled without -DCPPHTTPLIB_OPENSSL_SUPPORT "
                      "although they include httplib.h (link PkgConfig::HTTPLIB):\n  ${bad}")
endif()
message("httplib_openssl_define: ${including} of ${checked} objects include httplib.h, all with "
        "CPPHTTPLIB_OPENSSL_SUPPORT")
