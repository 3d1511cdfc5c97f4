"""Build the optional C extensions; all other metadata lives in pyproject.toml.

``optional=True``: without a C compiler the extensions are skipped with a warning
and deteval uses its pure-Python/numpy code (same results, slower).
``-ffp-contract=off``: no fused multiply-add, so the kernels' IoUs are the same
doubles as numpy's (GCC fuses by default on targets with FMA, e.g. aarch64).
"""
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class BuildExt(build_ext):
    def build_extensions(self):
        if self.compiler.compiler_type in ("unix", "mingw32", "cygwin"):
            for ext in self.extensions:
                ext.extra_compile_args = list(ext.extra_compile_args or []) + [
                    "-ffp-contract=off"]
        super().build_extensions()


setup(
    ext_modules=[
        # one translation unit: deteval/_textscan.c includes its parts from
        # deteval/_textscan_src/ (one grammar per file)
        Extension("deteval._textscan", ["deteval/_textscan.c"],
                  depends=[f"deteval/_textscan_src/{n}" for n in (
                      "common.h", "numbers.h", "id_table.h", "detections.h", "voc_xml.h",
                      "voc_files.h", "detection_files.h", "coco_results.h")]
                  + ["deteval/_rle_count.h"],
                  optional=True),
        Extension("deteval._kernels", ["deteval/_kernels.c"],
                  depends=["deteval/_kernels_src/bootstrap.h", "deteval/_rle_count.h"],
                  optional=True),
    ],
    cmdclass={"build_ext": BuildExt},
)
