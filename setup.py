"""The wheel of nisa (pyproject.toml): CMake builds the targets the wheel holds, setuptools
packs them. `pip install --no-build-isolation .` or `python3 -m build --no-isolation --wheel`.

What the wheel holds (paths after installing into a prefix P, a venv or ~/.local):
  P/lib/pythonX/site-packages/nisa/    __init__.py and the extension _nisa
  P/bin/nisa                           the command line (the binary itself: no Python start)
  P/lib/nisa/libnisa_mpi.so            the MPI module (where P/bin/nisa looks for it)
  P/share/nisa/kernels_asm/            the kernels and their .include library lib/ (where
                                       P/bin/nisa and nisa.kernels_dir() look for them)
  P/share/man/man1/nisa.1.gz, P/share/bash-completion/completions/nisa

The CMake build directory: $NISA_BUILD_DIR if set (an existing, configured build tree: its
targets are brought up to date and packed, as CTest's Packaging.wheel does), else build/wheel
in the source tree, configured Release (-O2) without tests and benchmarks and built for the Python
that runs this (only the targets above: not the tests or benchmarks). Debug information is
stripped from the copies; the version is the top CMakeLists.txt's project(VERSION).
"""
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from setuptools import Command, setup
from setuptools.command.build import build
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution
from distutils.command.build_scripts import build_scripts  # after setuptools: its distutils
from distutils.command.install_data import install_data

SRC = Path(__file__).resolve().parent
BUILD_DIR = Path(os.environ.get("NISA_BUILD_DIR") or SRC / "build" / "wheel").resolve()
# Targets of the wheel: required ones, then those a configuration may lack (no MPI, no help2man).
TARGETS = ["nisa", "_nisa"]
OPTIONAL_TARGETS = ["nisa_mpi", "man", "completion"]


def project_version():
    text = (SRC / "CMakeLists.txt").read_text()
    m = re.search(r"project\(\s*nisa\s+VERSION\s+([0-9][0-9.]*)", text)
    if not m:
        sys.exit("setup.py: no `project(nisa VERSION x.y.z)` in CMakeLists.txt")
    return m.group(1)


def run(cmd):
    print("setup.py:", " ".join(map(str, cmd)), flush=True)
    subprocess.run([str(c) for c in cmd], check=True)


def strip_debug(path):
    """Drops a binary's debug information (the build tree keeps it), where strip exists."""
    strip = shutil.which("strip")
    if strip:
        run([strip, "--strip-debug", path])


def strip_copy(src, dst):
    """Copies a built binary without its debug information."""
    Path(dst).parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)
    os.chmod(dst, 0o755)
    strip_debug(dst)


class build_cmake(Command):
    """Configures (once) and builds the wheel's CMake targets in BUILD_DIR."""

    description = "build nisa, its Python module and its MPI module with CMake"
    user_options = []

    def initialize_options(self):
        pass

    def finalize_options(self):
        pass

    def run(self):
        cmake = shutil.which("cmake")
        if not cmake:
            sys.exit("setup.py: cmake is missing (scripts/bootstrap.sh installs it)")
        if not (BUILD_DIR / "CMakeCache.txt").exists():
            if "NISA_BUILD_DIR" in os.environ:
                sys.exit(f"setup.py: NISA_BUILD_DIR={BUILD_DIR} is not a configured build tree")
            # -O2 as the tested default build (RelWithDebInfo) without -g; warnings are no
            # errors here (another compiler's new warning must not stop an install).
            cfg = [cmake, "-S", SRC, "-B", BUILD_DIR, "-DCMAKE_BUILD_TYPE=Release",
                   "-DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG", "-DNISA_WERROR=OFF",
                   "-DNISA_TESTS=OFF", "-DNISA_BENCH=OFF", f"-DPython_EXECUTABLE={sys.executable}"]
            if shutil.which("ccache"):
                cfg.append("-DCMAKE_CXX_COMPILER_LAUNCHER=ccache")
            run(cfg)
        known = subprocess.run([cmake, "--build", BUILD_DIR, "--target", "help"],
                               capture_output=True, text=True).stdout
        names = set(re.findall(r"^\.\.\. (\S+)", known, re.M)) | set(
            re.findall(r"^(\S+):", known, re.M))
        targets = TARGETS + [t for t in OPTIONAL_TARGETS if t in names]
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 1)
        run([cmake, "--build", BUILD_DIR, "-j", jobs, "--target", *targets])


def built(rel):
    return BUILD_DIR / rel


def extension_module():
    """The built _nisa, which must be for the Python that builds the wheel."""
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    found = sorted((BUILD_DIR / "python" / "nisa").glob("_nisa*.so"))
    for f in found:
        if f.name == "_nisa" + suffix:
            return f
    sys.exit(f"setup.py: {BUILD_DIR}/python/nisa has no _nisa{suffix} (found: "
             f"{', '.join(f.name for f in found) or 'none'}): that build tree was configured "
             f"for another Python than {sys.executable}")


class nisa_build(build):
    sub_commands = [("build_cmake", None)] + build.sub_commands


class nisa_build_py(build_py):
    """nisa/__init__.py from python/, and the built extension beside it."""

    def run(self):
        self.run_command("build_cmake")
        super().run()
        ext = extension_module()
        strip_copy(ext, Path(self.build_lib) / "nisa" / ext.name)


class nisa_build_scripts(build_scripts):
    """The nisa binary as the package's script (copied as is: it is no Python script)."""

    def run(self):
        self.run_command("build_cmake")
        strip_copy(built("cli/nisa"), Path(self.build_dir) / "nisa")


class nisa_install_data(install_data):
    """The kernels (listed at setup()), and what CMake built: the MPI module, the man page, the
    completion, where they exist in this configuration."""

    def run(self):
        for dest, rel in [("lib/nisa", "interp/libnisa_mpi.so"),
                          ("share/man/man1", "packaging/nisa.1.gz"),
                          ("share/bash-completion/completions", "packaging/nisa.bash-completion")]:
            if built(rel).exists():
                self.data_files.append((dest, [str(built(rel))]))
        super().run()
        # The completion's name is the command's; the MPI module keeps no debug information.
        comp = Path(self.install_dir) / "share/bash-completion/completions"
        if (comp / "nisa.bash-completion").exists():
            os.replace(comp / "nisa.bash-completion", comp / "nisa")
            self.outfiles = [str(comp / "nisa") if f.endswith("nisa.bash-completion") else f
                             for f in self.outfiles]
        mpi = Path(self.install_dir) / "lib/nisa/libnisa_mpi.so"
        if mpi.exists():
            strip_debug(mpi)


class BinaryDistribution(Distribution):
    """A platform wheel (cp3X-cp3X-linux_x86_64), the module in platlib: it is native code."""

    def has_ext_modules(self):
        return True


def kernel_files():
    """(install dir, [files]) for kernels_asm/ and its subfolders, relative to the source."""
    out = []
    for d in sorted([SRC / "kernels_asm"] + [p for p in (SRC / "kernels_asm").rglob("*")
                                              if p.is_dir()]):
        files = sorted(str(f.relative_to(SRC)) for f in d.iterdir() if f.is_file())
        if files:
            out.append((str(Path("share/nisa") / d.relative_to(SRC)), files))
    return out


BUILD_DIR.mkdir(parents=True, exist_ok=True)
setup(
    version=project_version(),
    distclass=BinaryDistribution,
    scripts=["nisa"],  # nisa_build_scripts makes it from the CMake build
    data_files=kernel_files(),
    cmdclass={"build_cmake": build_cmake, "build": nisa_build, "build_py": nisa_build_py,
              "build_scripts": nisa_build_scripts, "install_data": nisa_install_data},
    # setuptools' own files stay out of the source tree.
    options={"build": {"build_base": str(BUILD_DIR / "setuptools")},
             "egg_info": {"egg_base": str(BUILD_DIR)}},
)
