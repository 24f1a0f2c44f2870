"""The one packaging fact pyproject.toml cannot state: three top-level folders of the repository
travel inside the package, so that an installed wheel has what the documented commands need.

    configs/      -> jaxcc/configs      every experiment config (``--config=NAME``)
    checkpoints/  -> jaxcc/checkpoints  the shipped policies and their READMEs (``policy:checkpoints/...``)
    datapath/     -> jaxcc/datapath     the C++ sources that ``jaxcc build_datapath`` compiles

The folders stay where the project keeps them (the source of truth); ``package_dir`` maps them
to package names, and pyproject.toml's ``[tool.setuptools.package-data]`` picks their files.
pyproject.toml's own package discovery only finds folders under their own names, hence this file.
Everything else about the package is in pyproject.toml; ``jaxcc.shipped`` finds the folders in
either place (a wheel's package, a clone's top level).
"""

from setuptools import find_namespace_packages, setup

SHIPPED = {"jaxcc.configs": "configs", "jaxcc.checkpoints": "checkpoints", "jaxcc.datapath": "datapath"}

setup(
    packages=find_namespace_packages(include=["jaxcc", "jaxcc.*"], exclude=["*.__pycache__"]) + list(SHIPPED),
    package_dir=SHIPPED,
)
