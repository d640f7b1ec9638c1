# Install rules for Kopf++ (included from the top-level CMakeLists.txt after src/ is added):
#   <prefix>/include/kopf/...                  public headers
#   <prefix>/lib/libkopf.so                    the framework library
#   <prefix>/bin/kopf                          the command line
#   <prefix>/lib/libkopf_apiserver*.so         its API server, in sanitizer builds only
#   <prefix>/lib/cmake/kopf/kopfConfig.cmake   find_package(kopf) -> kopf::kopf
#   <prefix>/lib/pkgconfig/kopf.pc             pkg-config --cflags --libs kopf
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

get_filename_component(KOPF_ROOT_DIR ${CMAKE_CURRENT_LIST_DIR} DIRECTORY)
set(KOPF_PACKAGE_VERSION ${kopfpp_VERSION})

set(KOPF_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/kopf)

install(DIRECTORY ${KOPF_ROOT_DIR}/include/kopf
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.hpp" PATTERN "*.h")

# The installed binary finds the installed library next to it.
set_target_properties(kopf kopf_cli PROPERTIES
  INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
set_target_properties(kopf PROPERTIES VERSION ${KOPF_PACKAGE_VERSION} SOVERSION ${kopfpp_VERSION_MAJOR}
                      EXPORT_NAME kopf)

install(TARGETS kopf EXPORT kopfTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS kopf_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(KOPF_APISERVER_SHARED)
  # The command's embedded API server, when it is built as shared libraries (sanitizer builds).
  set(KOPF_APISERVER_TARGETS kopf_apiserver kopf_apiserver_core kopf_apiserver_util)
  set_target_properties(${KOPF_APISERVER_TARGETS} PROPERTIES INSTALL_RPATH "$ORIGIN")
  install(TARGETS ${KOPF_APISERVER_TARGETS} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()

install(EXPORT kopfTargets NAMESPACE kopf:: DESTINATION ${KOPF_INSTALL_CMAKEDIR})
configure_package_config_file(${KOPF_ROOT_DIR}/cmake/kopfConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/kopfConfig.cmake INSTALL_DESTINATION ${KOPF_INSTALL_CMAKEDIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/kopfConfigVersion.cmake
  VERSION ${KOPF_PACKAGE_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/kopfConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/kopfConfigVersion.cmake
        DESTINATION ${KOPF_INSTALL_CMAKEDIR})

# pkg-config: relocatable through ${pcfiledir}.
file(RELATIVE_PATH KOPF_PC_PREFIX_FROM_PCDIR
  /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
string(REGEX REPLACE "/$" "" KOPF_PC_PREFIX_FROM_PCDIR "${KOPF_PC_PREFIX_FROM_PCDIR}")
# A sanitizer build of libkopf needs the sanitizer runtime linked first into every program.
set(KOPF_PC_SANITIZER_LIBS "${KOPF_SANITIZER_FLAGS}")
configure_file(${KOPF_ROOT_DIR}/cmake/kopf.pc.in ${CMAKE_CURRENT_BINARY_DIR}/kopf.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/kopf.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
