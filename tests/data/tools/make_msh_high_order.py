#!/usr/bin/python3
"""Writes second-order MSH files with prisms and hexahedra (gmsh 4.8, prism2.geo) and gmsh's own
legacy VTK export of the same meshes, which tests/python/test_read_reference.py reads with VTK
9.1: gmsh writes its cells there in VTK's node order, so VTK's connectivity is the reference for
meshdock's Gmsh -> VTK permutations (meshio 5.0 cannot be: it leaves wedge18 in Gmsh's order).

    /usr/bin/python3 tests/data/tools/make_msh_high_order.py   # from the repository root

Into tests/data/gmsh:

  prism2.o2.v41.msh / .o2.vtk    -order 2: wedge18, hexahedron27, quad9, triangle6, line3
  prism2.o2i.v41.msh / .o2i.vtk  -order 2 with Mesh.SecondOrderIncomplete: wedge15,
                                 hexahedron20, quad8
"""
import pathlib
import subprocess

HERE = pathlib.Path(__file__).resolve().parent
# tests/data/gmsh, not meshes/: the files there go through every writer round trip, and
# their count is fixed there; these are about the Gmsh reader only.
MESHES = HERE.parents[0] / "gmsh"


def gmsh(*args):
    subprocess.run(["gmsh", "-nt", "1", "-v", "1", *map(str, args)], check=True,
                   capture_output=True)


for stem, incomplete in (("prism2.o2", 0), ("prism2.o2i", 1)):
    msh = MESHES / f"{stem}.v41.msh"
    gmsh("-3", HERE / "prism2.geo", "-order", 2, "-setnumber", "Mesh.SecondOrderIncomplete",
         incomplete, "-format", "msh41", "-o", msh)
    gmsh(msh, "-0", "-format", "vtk", "-o", MESHES / f"{stem}.vtk")
