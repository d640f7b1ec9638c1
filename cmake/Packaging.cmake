# A Debian package of Kopf++ (cpack -G DEB in the build tree): the kopf command, libkopf, the
# public headers, the CMake package and kopf.pc, installed under /usr. The runtime libraries
# come from dpkg-shlibdeps; what compiling an operator needs is listed by hand.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME kopfpp)
set(CPACK_PACKAGE_VERSION ${kopfpp_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Kopf++: Kubernetes operators in C++20")
string(CONCAT CPACK_PACKAGE_DESCRIPTION
  "Kopf, the Kubernetes operator framework, rebuilt in C++20: handlers for resource changes, "
  "daemons, timers, indices and admission webhooks, with the kopf command (run, rbac, "
  "freeze, resume, apiserver).")
set(CPACK_PACKAGE_HOMEPAGE_URL "https://kopf.readthedocs.io/")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "Kopf++ developers <kopfpp@localhost>")
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_STRIP_FILES ON)
# The public headers include nlohmann/json.hpp; `kopf run FILE.cpp` compiles with a C++20
# compiler; pkg-config reads kopf.pc.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "nlohmann-json3-dev (>= 3.11), g++ (>= 4:12) | clang-16, pkg-config")
include(CPack)
