"""Build the shardkit Python package: the pure-Python modules and the
extension shardkit._native, linked with the static libshardkit-read.a.

    make python                                  # into build/python (the usual way)
    pip install --no-build-isolation ./python    # into an environment, offline

The static library is built first by the project's Makefile (its objects are
compiled with -fPIC), in $SHARDKIT_BUILD (default: the checkout's build/).
It is the reader's archive: the read path, the loader and payload decoding
(raw, JPEG, PNG), without the converter and its libvips decoder, so a
training process that imports shardkit maps neither libvips nor glib.
Linking it statically makes the extension self-contained: nothing to find at
run time (no rpath, no LD_LIBRARY_PATH, no installed libshardkit.so), and
the library's internals stay hidden inside it.  The system libraries it uses
(libjpeg, libpng, libcurl, ...) are linked as shared libraries and zstd
statically: the list `make print-read-ldlibs` gives.
"""
import os
import re
import shlex
import subprocess

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
BUILD = os.path.abspath(os.environ.get("SHARDKIT_BUILD") or os.path.join(TOP, "build"))


def version():
    with open(os.path.join(TOP, "include", "shardkit", "api.h")) as f:
        return re.search(r'#define SHARDKIT_VERSION "([^"]+)"', f.read()).group(1)


class BuildExt(build_ext):
    """Build libshardkit-read.a with the Makefile, then link the extension with it."""

    def run(self):
        library = os.path.join(BUILD, "libshardkit-read.a")
        ldlibs = os.environ.get("SHARDKIT_LDLIBS")
        if ldlibs is None:  # not run by make: let it build the library and say what it links
            subprocess.check_call(["make", "-C", TOP, "--no-print-directory", f"BUILD={BUILD}",
                                   library])
            ldlibs = subprocess.check_output(
                ["make", "-s", "-C", TOP, "--no-print-directory", f"BUILD={BUILD}",
                 "print-read-ldlibs"], text=True)
        extra = shlex.split(os.environ.get("SHARDKIT_CFLAGS", ""))
        for ext in self.extensions:
            ext.extra_objects = [library]
            # only PyInit__native is exported: the library's functions and the
            # static zstd inside stay private to the extension, so they can
            # neither clash with nor bind to another copy in the process
            # (torch loads its dependencies RTLD_GLOBAL)
            ext.extra_compile_args = ["-std=gnu11", "-fvisibility=hidden", "-Wall", "-Wextra",
                                      "-Wno-unused-parameter",
                                      "-Wno-missing-field-initializers"] + extra
            ext.extra_link_args = (["-Wl,--exclude-libs,ALL"] + shlex.split(ldlibs) + extra)
        super().run()


setup(
    version=version(),  # the rest of the metadata is pyproject.toml's
    packages=["shardkit"],
    # PEP 561: the package is typed (inline annotations), and the extension's
    # types are in its stub
    package_data={"shardkit": ["py.typed", "_native.pyi"]},
    ext_modules=[Extension(
        "shardkit._native",
        sources=["src/native.c", "src/native_dataset.c", "src/native_augment.c",
                 "src/native_loader.c", "src/native_fields.c"],
        depends=["src/native.h"],
        include_dirs=[os.path.join(TOP, "include")],
    )],
    cmdclass={"build_ext": BuildExt},
    zip_safe=False,
)
