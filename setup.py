"""Builds gwr's Python package with CMake, for `pip install --no-build-isolation .`.

The project's metadata is in pyproject.toml. The one extension, gwr._gwr,
is the CMake target gwr_python (the same one `make` builds into
build/python/gwr/); this build_ext configures a private CMake build under
setuptools' build_temp, builds that target only, and copies the module to
where setuptools expects it. The extension links libgwr statically, so the
installed package needs nothing else of gwr's.

Environment: GWR_CMAKE_ARGS (extra -D options, split on blanks),
GWR_BUILD_JOBS (parallel build jobs; default: the CPU count), and
GWR_CMAKE_BUILD_DIR (an already configured build folder to build the target
in instead of a private one, e.g. `make`'s build/: the test of this route
uses it so as not to compile the library twice).
"""
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))


class CMakeExtension(Extension):
    """An extension whose sources CMake knows; setuptools compiles nothing."""

    def __init__(self, name, target):
        super().__init__(name, sources=[])
        self.target = target


class CMakeBuild(build_ext):
    """build_ext that builds each CMakeExtension's target with CMake."""

    def build_extension(self, ext):
        if not isinstance(ext, CMakeExtension):
            return super().build_extension(ext)
        if shutil.which("cmake") is None:
            raise RuntimeError("building gwr needs cmake (Debian: apt-get install cmake; see scripts/setup.sh)")
        build_dir = os.environ.get("GWR_CMAKE_BUILD_DIR")
        if build_dir:
            build_dir = os.path.abspath(build_dir)
            if not os.path.isfile(os.path.join(build_dir, "CMakeCache.txt")):
                raise RuntimeError("GWR_CMAKE_BUILD_DIR=%s is not a configured CMake build" % build_dir)
        else:
            build_dir = os.path.abspath(os.path.join(self.build_temp, "cmake"))
            os.makedirs(build_dir, exist_ok=True)
            config = "Debug" if self.debug else "RelWithDebInfo"
            # The extension must match the interpreter running this build.
            args = [
                "cmake", "-S", HERE, "-B", build_dir,
                "-DCMAKE_BUILD_TYPE=" + config,
                "-DPython3_EXECUTABLE=" + sys.executable,
            ]
            args += shlex.split(os.environ.get("GWR_CMAKE_ARGS", ""))
            subprocess.check_call(args)
        jobs = os.environ.get("GWR_BUILD_JOBS") or str(os.cpu_count() or 2)
        subprocess.check_call(["cmake", "--build", build_dir, "--target", ext.target, "-j", jobs])
        suffix = sysconfig.get_config_var("EXT_SUFFIX")
        built = os.path.join(build_dir, "python", *ext.name.split(".")[:-1], ext.name.split(".")[-1] + suffix)
        if not os.path.isfile(built):
            raise RuntimeError("CMake built target %s but %s is missing" % (ext.target, built))
        dest = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copyfile(built, dest)
        shutil.copymode(built, dest)


# Not setuptools' default "build/": that is the CMake build of `make`; the
# egg-info goes there too rather than into the source tree.
os.makedirs(os.path.join(HERE, "build-pip"), exist_ok=True)
setup(
    options={"build": {"build_base": "build-pip"}, "egg_info": {"egg_base": "build-pip"}},
    ext_modules=[CMakeExtension("gwr._gwr", target="gwr_python")],
    cmdclass={"build_ext": CMakeBuild},
)
