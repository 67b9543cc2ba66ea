# Helpers that give every iosfarm target the same flags.

# iosfarm_library(NAME SOURCES ... [DEPS ...])
function(iosfarm_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_compile_options(${name} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${IOSFARM_WARNINGS}>)
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
endfunction()

# iosfarm_test(NAME SOURCES ... [DEPS ...]): a GoogleTest binary under CTest.
function(iosfarm_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_compile_options(${name} PRIVATE ${IOSFARM_WARNINGS})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gmock GTest::gtest_main)
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60
    PROPERTIES ENVIRONMENT "IOSFARM_SOURCE_DIR=${PROJECT_SOURCE_DIR}\\;IOSFARM_BINARY_DIR=${PROJECT_BINARY_DIR}")
endfunction()

# The python3 that script tests run under: Debian's own (/usr/bin/python3,
# where its onnx, numpy, torch and torchvision packages are), as on a fresh
# machine, else the first python3 on PATH.
if(EXISTS /usr/bin/python3)
  set(IOSFARM_SYSTEM_PYTHON /usr/bin/python3)
else()
  set(IOSFARM_SYSTEM_PYTHON python3)
endif()
