# Helpers shared by the component CMakeLists.

# kopf_configure_test_target(TARGET LIBS...): what every test executable and test-support
# library is compiled and linked with.
function(kopf_configure_test_target target)
  target_link_libraries(${target} PUBLIC ${ARGN} GTest::gtest GTest::gmock GTest::gtest_main)
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR}/tests ${PROJECT_SOURCE_DIR}/src
                             ${PROJECT_SOURCE_DIR}/apiserver/src ${PROJECT_SOURCE_DIR}/apiserver/include)
  # A precompiled header that cannot be used (different flags) is said so, not silently parsed.
  if(KOPF_TEST_PCH)
    target_compile_options(${target} PRIVATE -Winvalid-pch)
  endif()
  target_compile_definitions(${target} PRIVATE
    KOPF_SOURCE_DIR="${PROJECT_SOURCE_DIR}" KOPF_BINARY_DIR="${PROJECT_BINARY_DIR}"
    KOPF_CXX_COMPILER="${CMAKE_CXX_COMPILER}")
  if(KOPF_TEST_CXX_FLAGS)
    separate_arguments(test_flags UNIX_COMMAND "${KOPF_TEST_CXX_FLAGS}")
    target_compile_options(${target} PRIVATE ${test_flags})
  endif()
endfunction()

# One precompiled header that every test target reuses (GoogleTest, nlohmann/json and the
# standard headers most tests include): parsing them was paid by every one of the 120-odd test
# executables in each build tree (with the header, the ASan tree's tests build in ~15% less
# time). The headers' macros do not depend on the libraries a test links, so one header serves
# tests of every layer.
option(KOPF_TEST_PCH "Compile the tests with one shared precompiled header" ON)
function(kopf_use_test_pch target)
  if(NOT KOPF_TEST_PCH)
    return()
  endif()
  if(NOT TARGET kopf_test_pch)
    add_library(kopf_test_pch OBJECT ${PROJECT_SOURCE_DIR}/cmake/empty.cpp)
    kopf_configure_test_target(kopf_test_pch)
    # Made as the executables are compiled (-fPIE, not a library's -fPIC): g++ refuses a
    # precompiled header made with other code-model flags.
    set_target_properties(kopf_test_pch PROPERTIES POSITION_INDEPENDENT_CODE OFF)
    target_compile_options(kopf_test_pch PRIVATE -fPIE)
    target_precompile_headers(kopf_test_pch PRIVATE
      <gtest/gtest.h> <nlohmann/json.hpp> <algorithm> <atomic> <chrono> <filesystem> <fstream>
      <functional> <map> <memory> <mutex> <optional> <regex> <set> <sstream> <string> <thread>
      <vector>)
  endif()
  target_precompile_headers(${target} REUSE_FROM kopf_test_pch)  # executables only
endfunction()

# kopf_add_test_dir(DIR LIBS...): every DIR/*_test.cpp becomes its own test executable
# (so one broken file cannot hide the others), registered with ctest per GoogleTest case.
include(GoogleTest)
function(kopf_add_test_dir dir)
  file(GLOB test_sources CONFIGURE_DEPENDS ${dir}/*_test.cpp)
  file(RELATIVE_PATH rel ${PROJECT_SOURCE_DIR}/tests ${dir})
  string(REPLACE "/" "_" prefix ${rel})
  # The directory's support/*.cpp is compiled once, into a library every test of it links,
  # rather than into each test executable (that cost minutes per build tree).
  file(GLOB support_sources CONFIGURE_DEPENDS ${dir}/support/*.cpp)
  if(KOPF_TESTS_ONLY)
    set(selected "")
    foreach(src ${test_sources})
      get_filename_component(name ${src} NAME_WE)
      if("${rel}/${name}" IN_LIST KOPF_TESTS_ONLY)
        list(APPEND selected ${src})
      endif()
    endforeach()
    set(test_sources ${selected})
  endif()
  set(support_library "")
  if(support_sources AND test_sources)
    set(support_library ${prefix}_support)
    add_library(${support_library} STATIC ${support_sources})
    kopf_configure_test_target(${support_library} ${ARGN})
  endif()
  foreach(src ${test_sources})
    get_filename_component(name ${src} NAME_WE)
    set(target ${prefix}_${name})
    add_executable(${target} ${src})
    target_link_libraries(${target} PRIVATE ${support_library})
    kopf_configure_test_target(${target} ${ARGN})
    kopf_use_test_pch(${target})
    # KOPF_TEST_TIMEOUT, when the caller sets it, for tests that build images and the like.
    set(timeout 300)
    if(KOPF_TEST_TIMEOUT)
      set(timeout ${KOPF_TEST_TIMEOUT})
    endif()
    gtest_discover_tests(${target} TEST_PREFIX "${rel}/" DISCOVERY_MODE PRE_TEST
                         PROPERTIES LABELS "${rel}" TIMEOUT ${timeout})
  endforeach()
endfunction()
