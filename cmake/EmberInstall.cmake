# `cmake --install` puts headers, libraries and a package config, so that applications can
# `find_package(ember)` and link `ember::ember_module` (or the core `ember::ember_runtime`) and the
# runtime halves of the backends: `ember::ember_backend_loopback` always, and
# `ember::ember_backend_cpu_runtime` (component `cpu`) when this build has the cpu backend.
include(CMakePackageConfigHelpers)
install(EXPORT ember-targets NAMESPACE ember:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ember)
# The cpu backend's targets, and where the config looks for oneDNN first (this build's libdnnl).
set(EMBER_PACKAGE_CPU OFF)
set(EMBER_PACKAGE_DNNL_DIR "")
if(TARGET ember_backend_cpu_runtime)
  set(EMBER_PACKAGE_CPU ON)
  get_filename_component(EMBER_PACKAGE_DNNL_DIR "${DNNL_LIBRARY}" DIRECTORY)
  install(EXPORT ember-cpu-targets NAMESPACE ember::
    DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ember)
endif()
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/emberConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/emberConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ember)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/emberConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/emberConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/emberConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ember)
