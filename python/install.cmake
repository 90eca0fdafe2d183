# python/install.cmake - where `make install` (cmake --install) puts the gwr
# Python package: the extension gwr._gwr (target gwr_python) and the pure
# Python modules of python/gwr/, under the site directory of /usr/bin/python3
# for the install prefix. Included by python/CMakeLists.txt after the
# gwr_python target is defined.
#
# The directory is relative to the prefix, so `cmake --install build --prefix
# /elsewhere` moves it along (then PYTHONPATH=/elsewhere/<dir> finds it).
# What Debian's python3 reads:
#   prefix /usr/local -> lib/python3.X/dist-packages  (scheme posix_local,
#                        on sys.path out of the box: `import gwr` just works)
#   prefix /usr       -> lib/python3/dist-packages    (scheme deb_system)
# Elsewhere (a non-Debian Python) the standard posix_prefix scheme:
#   lib/python3.X/site-packages.
# -DGWR_PYTHON_INSTALL_DIR=... overrides (relative to the prefix, or absolute).

# The interpreter python/CMakeLists.txt built the extension for.
if(Python3_EXECUTABLE)
  set(GWR_PYTHON_EXECUTABLE ${Python3_EXECUTABLE})
else()
  set(GWR_PYTHON_EXECUTABLE /usr/bin/python3)
endif()

set(GWR_PYTHON_INSTALL_DIR "" CACHE STRING
    "Where `make install` puts the gwr Python package (relative to the install prefix, or absolute); empty: ask Python")
if(GWR_PYTHON_INSTALL_DIR)
  set(_gwr_py_site ${GWR_PYTHON_INSTALL_DIR})
else()
  # The scheme's platlib with a stand-in prefix, made relative to it; asked
  # at every configure, so that a new CMAKE_INSTALL_PREFIX is followed.
  execute_process(
    COMMAND ${GWR_PYTHON_EXECUTABLE} -c [=[
import sys, sysconfig
prefix = sys.argv[1].rstrip("/") or "/"
names = sysconfig.get_scheme_names()
v = {"base": "/P", "platbase": "/P", "installed_base": "/P", "installed_platbase": "/P"}
if "deb_system" in names and prefix == "/usr":
    p = sysconfig.get_path("platlib", "deb_system", vars=v)
elif "posix_local" in names:
    # posix_local puts "local" under the base (it expects base=/usr).
    p = sysconfig.get_path("platlib", "posix_local", vars=v).replace("/P/local/", "/P/", 1)
else:
    p = sysconfig.get_path("platlib", "posix_prefix", vars=v)
print(p[len("/P/"):] if p.startswith("/P/") else p, end="")
]=] ${CMAKE_INSTALL_PREFIX}
    OUTPUT_VARIABLE _gwr_py_site
    RESULT_VARIABLE _gwr_py_rc
    ERROR_VARIABLE _gwr_py_err)
  if(NOT _gwr_py_rc EQUAL 0 OR _gwr_py_site STREQUAL "")
    message(FATAL_ERROR "python/install.cmake: cannot ask ${GWR_PYTHON_EXECUTABLE} for its site directory: "
                        "${_gwr_py_err}; set -DGWR_PYTHON_INSTALL_DIR=...")
  endif()
endif()
message(STATUS "gwr Python package installs into ${_gwr_py_site}/gwr (relative: under the install prefix)")

# The extension. It links libgwr statically today; were it to link
# libgwr.so, an $ORIGIN-relative RPATH finds the installed library.
get_target_property(_gwr_py_libs gwr_python LINK_LIBRARIES)
if("gwr_shared" IN_LIST _gwr_py_libs)
  if(IS_ABSOLUTE "${_gwr_py_site}")
    set(_gwr_py_abs "${_gwr_py_site}/gwr")
  else()
    set(_gwr_py_abs "${CMAKE_INSTALL_PREFIX}/${_gwr_py_site}/gwr")
  endif()
  file(RELATIVE_PATH _gwr_py_to_lib "${_gwr_py_abs}" "${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}")
  set_target_properties(gwr_python PROPERTIES INSTALL_RPATH "$ORIGIN/${_gwr_py_to_lib}")
endif()
install(TARGETS gwr_python
  LIBRARY DESTINATION ${_gwr_py_site}/gwr
  RUNTIME DESTINATION ${_gwr_py_site}/gwr)
# The pure Python modules, from the source tree (the build tree holds copies).
file(GLOB GWR_PYTHON_MODULES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/python/gwr/*.py)
install(FILES ${GWR_PYTHON_MODULES} DESTINATION ${_gwr_py_site}/gwr)
