#!/usr/bin/python3
"""Writes tests/data/surface/sphere_neuroglancer with meshio 5.0's neuroglancer writer (the
legacy precomputed mesh: uint32 vertex count, float32 vertices, uint32 triangles; such files
have no extension), from gmsh's sphere (tests/data/meshes/sphere.obj), and copies it as a seed of
fuzz_surface_readers:

    /usr/bin/python3 tests/data/tools/make_neuroglancer.py
"""
import os
import shutil

import meshio

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "surface", "sphere_neuroglancer")

m = meshio.read(os.path.join(HERE, "..", "meshes", "sphere.obj"))
meshio.write(OUT, meshio.Mesh(m.points, [("triangle", m.get_cells_type("triangle"))]),
             file_format="neuroglancer")
shutil.copy(OUT, os.path.join(HERE, "..", "fuzz", "surface_readers", "sphere_neuroglancer"))
