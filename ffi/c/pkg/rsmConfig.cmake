# CMake package config of librsm: `find_package(rsm)` with PREFIX in CMAKE_PREFIX_PATH (tools/c-install.sh
# installs it as PREFIX/lib/cmake/rsm/rsmConfig.cmake). Relocatable: the prefix is found from where this file
# lies. Targets:
#   rsm::rsm         librsm.so
#   rsm::rsm_static  librsm.a, with the system libraries the Rust code needs
get_filename_component(_rsm_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
include("${CMAKE_CURRENT_LIST_DIR}/rsmNativeLibs.cmake")
if(NOT TARGET rsm::rsm)
  add_library(rsm::rsm SHARED IMPORTED)
  set_target_properties(rsm::rsm PROPERTIES
    IMPORTED_LOCATION "${_rsm_prefix}/lib/librsm.so"
    IMPORTED_SONAME "librsm.so"
    INTERFACE_INCLUDE_DIRECTORIES "${_rsm_prefix}/include")
endif()
if(NOT TARGET rsm::rsm_static)
  add_library(rsm::rsm_static STATIC IMPORTED)
  set_target_properties(rsm::rsm_static PROPERTIES
    IMPORTED_LOCATION "${_rsm_prefix}/lib/librsm.a"
    INTERFACE_INCLUDE_DIRECTORIES "${_rsm_prefix}/include"
    INTERFACE_LINK_LIBRARIES "${RSM_NATIVE_LIBS}")
endif()
set(rsm_INCLUDE_DIRS "${_rsm_prefix}/include")
set(rsm_LIBRARIES rsm::rsm)
unset(_rsm_prefix)
