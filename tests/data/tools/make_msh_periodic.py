#!/usr/bin/python3
"""Writes periodic MSH files (gmsh 4.8, tests/data/tools/periodic.geo) into tests/data/gmsh:

    /usr/bin/python3 tests/data/tools/make_msh_periodic.py   # from the repository root

  periodic.v41.msh / .v41b.msh   $Periodic in 4.1 ascii / binary ("numAffine values")
  periodic.v22.msh / .v22b.msh   $Periodic in 2.2 (an "Affine" line; text in the binary file
                                 too, as gmsh writes it); -save_all, as gmsh 4.8 writes no
                                 $Periodic in 2.2 when it saves physical groups only
  periodic.v30.msh / .v30b.msh   $Periodic in 3.0 (-format msh3 -save_all, for the same reason):
                                 2.x's layout, text in the binary file too
  periodic.v40.msh               $Periodic in 4.0 ascii: 2.x's "Affine" line form, not 4.1's
                                 count; without -save_all (meshio's 4.0 reader fails on the
                                 -save_all file: "Incompatible cell data"; its $Periodic is the same)
  periodic.v40b.msh              the same in binary 4.0 (gmsh 4.8 writes 4.0 only in ascii),
                                 converted here in gmsh 4.0's layout: link count and entity tags
                                 int, then a long -1 and 16 doubles where there is a transform,
                                 a long pair count, and the node tag pairs as int

tests/python/test_read_reference.py compares what meshdock reads with meshio's gmsh_periodic
(4.0: meshio.gmsh._gmsh40; 3.0, which meshio does not read: the 2.2 file of the same mesh).
"""
import pathlib
import struct
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
OUT = HERE.parents[0] / "gmsh"
sys.path.insert(0, str(HERE))
from make_msh_versions import binary40, section  # noqa: E402  (the 4.0 ascii -> binary converter)


def gmsh(fmt, binary, out, save_all):
    subprocess.run(["gmsh", "-nt", "1", "-v", "1", "-2", HERE / "periodic.geo", "-format", fmt,
                    *(["-bin"] if binary else []), *(["-save_all"] if save_all else []),
                    "-o", out], check=True, capture_output=True)


def periodic40(text):
    """The $Periodic section of an ascii 4.0 file in binary 4.0 (gmsh 4.0's writer)."""
    lines = [l.split() for l in section(text, "Periodic")]
    out = [b"$Periodic\n", struct.pack("<i", int(lines[0][0]))]
    i = 1
    while i < len(lines):
        out.append(struct.pack("<3i", *(int(x) for x in lines[i])))
        i += 1
        if lines[i][0] == "Affine":
            out.append(struct.pack("<q16d", -1, *(float(x) for x in lines[i][1:])))
            i += 1
        n = int(lines[i][0])
        out.append(struct.pack("<q", n))
        for pair in lines[i + 1:i + 1 + n]:
            out.append(struct.pack("<2i", *(int(x) for x in pair)))
        i += 1 + n
    out.append(b"\n$EndPeriodic\n")
    return b"".join(out)


for fmt, suffix in (("msh41", "v41"), ("msh22", "v22"), ("msh3", "v30")):
    for binary in (False, True):
        gmsh(fmt, binary, OUT / f"periodic.{suffix}{'b' if binary else ''}.msh", fmt != "msh41")
gmsh("msh40", False, OUT / "periodic.v40.msh", False)
v40 = (OUT / "periodic.v40.msh").read_text()
assert v40.startswith("$MeshFormat\n4 0 8\n") and "Affine" in v40
(OUT / "periodic.v40b.msh").write_bytes(binary40(v40) + periodic40(v40))
