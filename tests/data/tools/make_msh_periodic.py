#!/usr/bin/python3
"""Writes periodic MSH files (gmsh 4.8, tests/data/tools/periodic.geo) into tests/data/gmsh:

    /usr/bin/python3 tests/data/tools/make_msh_periodic.py   # from the repository root

  periodic.v41.msh / .v41b.msh   $Periodic in 4.1 ascii / binary ("numAffine values")
  periodic.v22.msh / .v22b.msh   $Periodic in 2.2 (an "Affine" line; text in the binary file
                                 too, as gmsh writes it); -save_all, as gmsh 4.8 writes no
                                 $Periodic in 2.2 when it saves physical groups only

tests/python/test_read_reference.py compares what meshdock reads with meshio's gmsh_periodic.
"""
import pathlib
import subprocess

HERE = pathlib.Path(__file__).resolve().parent
OUT = HERE.parents[0] / "gmsh"

for fmt, suffix in (("msh41", "v41"), ("msh22", "v22")):
    for binary in (False, True):
        out = OUT / f"periodic.{suffix}{'b' if binary else ''}.msh"
        subprocess.run(["gmsh", "-nt", "1", "-v", "1", "-2", HERE / "periodic.geo", "-format", fmt,
                        *(["-bin"] if binary else []), *(["-save_all"] if fmt == "msh22" else []),
                        "-o", out], check=True, capture_output=True)
