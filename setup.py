"""Only the compiled extension lives here; everything else is in pyproject.toml.

engines/zapformat/_zfcore.cpp is ZapFormat's compiled core (plain CPython C API, C++17: no build dependency
beyond setuptools and a C++ compiler). It is optional: where it cannot be built, `pip install` still succeeds
and the engine falls back to the Python reference with a logged warning (engines/zapformat/compiled.py).
"""
from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "engines.zapformat._zfcore",
            sources=["engines/zapformat/_zfcore.cpp"],
            language="c++",
            extra_compile_args=["-std=c++17", "-O2"],
            optional=True,
        )
    ]
)
