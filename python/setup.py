"""Build the shardkit Python package: the pure-Python modules and the
extension shardkit._native, linked with the static libshardkit-read.a.

    make python                                  # into build/python (the usual way)
    pip install --no-build-isolation ./python    # into an environment, offline
    python3 -m build --no-isolation python       # an sdist, and a wheel built from it

The static library is built first by the project's Makefile (its objects are
compiled with -fPIC), in $SHARDKIT_BUILD (default: the checkout's build/).
A source distribution carries what that needs, the Makefile, lib/ and
include/, in its folder csrc/ (see SDist), and builds the library in the
wheel's temporary build folder: it builds and installs away from any
checkout, with the reader's Debian -dev packages (docs/guide/pytorch.md).
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
from setuptools.command.sdist import sdist

HERE = os.path.dirname(os.path.abspath(__file__))
# The C sources and the Makefile: a source distribution's csrc/, else the
# checkout this folder is in.
BUNDLED = os.path.join(HERE, "csrc")
IN_SDIST = os.path.isfile(os.path.join(BUNDLED, "Makefile"))
TOP = BUNDLED if IN_SDIST else os.path.dirname(HERE)
# What of TOP a source distribution carries in csrc/: the reader's archive
# is built from these by the Makefile's rules.
C_TREE = [("Makefile",), ("include", ".h"), ("lib", ".c", ".h")]


def version():
    with open(os.path.join(TOP, "include", "shardkit", "api.h")) as f:
        return re.search(r'#define SHARDKIT_VERSION "([^"]+)"', f.read()).group(1)


def c_files(top):
    """The files of C_TREE under top, relative to it, sorted."""
    found = []
    for entry in C_TREE:
        path = os.path.join(top, entry[0])
        if len(entry) == 1:
            found.append(entry[0])
            continue
        for folder, dirs, files in os.walk(path):
            dirs.sort()
            found += [os.path.relpath(os.path.join(folder, f), top) for f in sorted(files)
                      if f.endswith(entry[1:])]
    return found


class SDist(sdist):
    """A source distribution that builds on its own: the package's files, and
    the C library's sources with the Makefile in csrc/ (setup.py builds the
    reader's archive from there when it finds them)."""

    def make_release_tree(self, base_dir, files):
        super().make_release_tree(base_dir, files)
        for rel in c_files(TOP):
            dest = os.path.join(base_dir, "csrc", rel)
            self.mkpath(os.path.dirname(dest))
            self.copy_file(os.path.join(TOP, rel), dest)
        licence = os.path.join(os.path.dirname(TOP) if IN_SDIST else TOP, "LICENSE")
        self.copy_file(licence, os.path.join(base_dir, "LICENSE"))


class BuildExt(build_ext):
    """Build libshardkit-read.a with the Makefile, then link the extension with it."""

    def run(self):
        # the library: where make python put it, else the checkout's build/,
        # or for a source distribution, this build's temporary folder
        build = os.environ.get("SHARDKIT_BUILD") or (
            os.path.join(self.build_temp, "shardkit") if IN_SDIST else os.path.join(TOP, "build"))
        build = os.path.abspath(build)
        library = os.path.join(build, "libshardkit-read.a")
        ldlibs = os.environ.get("SHARDKIT_LDLIBS")
        if ldlibs is None:  # not run by make: let it build the library and say what it links
            jobs = f"-j{len(os.sched_getaffinity(0))}"
            subprocess.check_call(["make", "-C", TOP, "--no-print-directory", jobs,
                                   f"BUILD={build}", library])
            ldlibs = subprocess.check_output(
                ["make", "-s", "-C", TOP, "--no-print-directory", f"BUILD={build}",
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
        sources=["src/native.c", "src/native_dataset.c", "src/native_transforms.c",
                 "src/native_loader.c", "src/native_fields.c", "src/native_mixture.c"],
        depends=["src/native.h"],
        # the programs' own helpers (lib/shardx: shardx_redact_urls for the
        # locations in its messages) are not exported by the shared library;
        # the reader's archive the extension links statically holds them
        include_dirs=[os.path.join(TOP, "include"), os.path.join(TOP, "lib", "shardx")],
        # it wraps the experimental tier too (mixtures, the manifest's hash)
        define_macros=[("SHARDKIT_EXPERIMENTAL", None)],
    )],
    cmdclass={"build_ext": BuildExt, "sdist": SDist},
    zip_safe=False,
)
